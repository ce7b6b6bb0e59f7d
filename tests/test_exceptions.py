"""Tests of the exception hierarchy and of the ErrorResponse/NoticeResponse factories."""

from __future__ import annotations

import importlib.util
import inspect
import pathlib
import pickle
import sys

import pytest

import mypgdriver.exceptions as exc
from mypgdriver.exceptions import (
    ERROR_CLASSES,
    WARNING_CLASSES,
    make_server_error,
    make_server_message,
    pep249,
)

ERRCODES = pathlib.Path('/usr/share/postgresql/15/errcodes.txt')
REPO = pathlib.Path(__file__).resolve().parent.parent

needs_errcodes = pytest.mark.skipif(not ERRCODES.exists(), reason='errcodes.txt not installed')


def errcodes_conditions() -> list[tuple[str, str, str]]:
    """(sqlstate, kind, condition name) for each line of errcodes.txt that names one."""
    rows = []
    for line in ERRCODES.read_text().splitlines():
        fields = line.split()
        if line.startswith(('#', 'Section:')) or len(fields) != 4:
            continue
        rows.append((fields[0], fields[1], fields[3]))
    return rows


def load_generator():
    path = REPO / 'tools' / 'gen_errcodes.py'
    spec = importlib.util.spec_from_file_location('gen_errcodes', path)
    module = importlib.util.module_from_spec(spec)
    # dataclasses looks the defining module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# -- every SQLSTATE has its class ------------------------------------------------------------

@needs_errcodes
def test_every_error_sqlstate_gives_a_class_declaring_that_sqlstate():
    errors = [code for code, kind, _ in errcodes_conditions() if kind == 'E']
    assert len(errors) > 200
    for code in errors:
        error = make_server_error({'C': code, 'M': 'm'})
        assert type(error) is ERROR_CLASSES[code]
        assert type(error).__dict__['sqlstate'] == code
        assert error.sqlstate == code
        assert isinstance(error, exc.PostgresError)


@needs_errcodes
def test_every_warning_sqlstate_gives_a_postgres_warning_subclass():
    warnings = [code for code, kind, _ in errcodes_conditions() if kind == 'W']
    assert sorted(warnings) == sorted(WARNING_CLASSES)
    for code in warnings:
        message = make_server_message({'S': 'WARNING', 'C': code, 'M': 'm'})
        assert type(message) is WARNING_CLASSES[code]
        assert type(message).__dict__['sqlstate'] == code
        assert isinstance(message, exc.PostgresWarning)
        assert isinstance(message, Warning)


@needs_errcodes
def test_successful_completion_has_no_class_and_notices_with_it_are_plain_log_messages():
    assert '00000' not in ERROR_CLASSES
    assert '00000' not in WARNING_CLASSES
    notice = make_server_message({'S': 'NOTICE', 'V': 'NOTICE', 'C': '00000', 'M': 'hello'})
    assert type(notice) is exc.PostgresLogMessage
    assert notice.sqlstate == '00000'


def test_newer_server_codes_have_their_asyncpg_classes():
    assert type(make_server_error({'C': '25P04'})) is exc.TransactionTimeoutError
    assert asyncpg_bases(exc.TransactionTimeoutError) == (exc.InvalidTransactionStateError,)
    assert type(make_server_error({'C': '58P03'})) is exc.FileNameTooLongError
    assert asyncpg_bases(exc.FileNameTooLongError) == (exc.PostgresSystemError,)
    assert type(make_server_error({'C': '10608'})) is exc.InvalidArgumentForXqueryError
    assert asyncpg_bases(exc.InvalidArgumentForXqueryError) == (exc.PostgresError,)


# -- hierarchy -------------------------------------------------------------------------------

PEP249_CLASSES = {value for value in vars(pep249).values() if inspect.isclass(value)}


def asyncpg_bases(cls: type) -> tuple[type, ...]:
    """``cls.__bases__`` as asyncpg has them: without the PEP 249 classes mypgdriver adds.

    A PEP 249 class that stands where asyncpg has ``Exception`` (no other
    base is an exception) reads as ``Exception``.
    """
    others = tuple(b for b in cls.__bases__ if b not in PEP249_CLASSES)
    if len(others) < len(cls.__bases__) and not any(issubclass(b, BaseException)
                                                    for b in others):
        return (*others, Exception)
    return others


def test_unique_violation_hierarchy_is_exact():
    assert asyncpg_bases(exc.UniqueViolationError) == (exc.IntegrityConstraintViolationError,)
    assert asyncpg_bases(exc.IntegrityConstraintViolationError) == (exc.PostgresError,)
    assert asyncpg_bases(exc.PostgresError) == (exc.PostgresMessage, Exception)
    assert exc.UniqueViolationError.sqlstate == '23505'
    assert exc.IntegrityConstraintViolationError.sqlstate == '23000'
    assert exc.PostgresError.sqlstate is None


def test_every_condition_derives_from_its_sqlstate_class():
    for code, cls in ERROR_CLASSES.items():
        class_code = code[:2] + '000'
        if code == class_code or class_code not in ERROR_CLASSES:
            assert asyncpg_bases(cls) == (exc.PostgresError,), code
        else:
            assert asyncpg_bases(cls) == (ERROR_CLASSES[class_code],), code


def test_warning_classes_hierarchy():
    assert asyncpg_bases(exc.PostgresWarning) == (exc.PostgresLogMessage, Warning)
    assert asyncpg_bases(exc.DeprecatedFeature) == (exc.PostgresWarning,)
    assert asyncpg_bases(exc.NoData) == (exc.PostgresWarning,)
    assert asyncpg_bases(exc.NoAdditionalDynamicResultSetsReturned) == (exc.NoData,)
    assert not issubclass(exc.PostgresWarning, exc.PostgresError)


def test_asyncpg_specific_names():
    assert exc.SerializationError.sqlstate == '40001'
    assert exc.InFailedSQLTransactionError.sqlstate == '25P02'
    assert exc.InvalidPasswordError.sqlstate == '28P01'
    assert exc.QueryCanceledError.sqlstate == '57014'
    assert exc.PostgresSyntaxError.sqlstate == '42601'
    assert exc.SyntaxOrAccessError.sqlstate == '42000'
    assert exc.InternalServerError.sqlstate == 'XX000'
    assert exc.ClientCannotConnectError.sqlstate == '08001'
    assert exc.ModifyingSQLDataNotPermittedError.sqlstate == '2F002'
    assert exc.ModifyingExternalRoutineSQLDataNotPermittedError.sqlstate == '38002'
    assert exc.DataError.sqlstate == '22000'
    assert asyncpg_bases(exc.DataError) == (exc.PostgresError,)


# -- class lookup ----------------------------------------------------------------------------

def test_unknown_code_in_known_class_gives_the_class_error():
    error = make_server_error({'C': '23999', 'M': 'new kind of violation'})
    assert type(error) is exc.IntegrityConstraintViolationError
    assert error.sqlstate == '23999'


def test_fully_unknown_code_gives_postgres_error():
    error = make_server_error({'C': 'ZZ999', 'M': 'odd'})
    assert type(error) is exc.PostgresError
    assert error.sqlstate == 'ZZ999'


def test_missing_sqlstate_gives_postgres_error():
    error = make_server_error({'M': 'no code'})
    assert type(error) is exc.PostgresError
    assert error.sqlstate is None
    assert str(error) == 'no code'


def test_warning_code_sent_as_error_gives_postgres_error():
    assert type(make_server_error({'C': '01000'})) is exc.PostgresError


def test_revalidate_cached_query_gives_invalid_cached_statement_error():
    fields = {'C': '0A000', 'M': 'cached plan must not change result type',
              'R': 'RevalidateCachedQuery'}
    error = make_server_error(fields)
    assert type(error) is exc.InvalidCachedStatementError
    assert asyncpg_bases(exc.InvalidCachedStatementError) == (exc.FeatureNotSupportedError,)
    assert error.message == 'cached plan must not change result type'
    assert str(error) == ('cached statement plan is invalid due to a database schema or '
                          'configuration change')


def test_other_feature_not_supported_stays_feature_not_supported():
    error = make_server_error({'C': '0A000', 'M': 'nope', 'R': 'transformSelectStmt'})
    assert type(error) is exc.FeatureNotSupportedError
    assert str(error) == 'nope'


@pytest.mark.parametrize('code', ['26000', '42P05'])
def test_prepared_statement_errors_hint_at_poolers(code):
    error = make_server_error({'C': code, 'M': 'm', 'H': 'server hint'})
    assert error.hint.startswith('server hint\n\nNOTE: a connection pooler such as pgbouncer')
    assert 'statement_cache_size=0' in error.hint
    bare = make_server_error({'C': code, 'M': 'm'})
    assert bare.hint.startswith('NOTE: a connection pooler')


# -- attributes and str() --------------------------------------------------------------------

ALL_FIELDS = {
    'S': 'ERREUR', 'V': 'ERROR', 'C': '23505', 'M': 'duplicate key',
    'D': 'Key (id)=(1) already exists.', 'H': 'try another key', 'P': '8',
    'p': '3', 'q': 'SELECT 1', 'W': 'PL/pgSQL function f() line 3',
    's': 'public', 't': 'items', 'c': 'id', 'd': 'int4', 'n': 'items_pkey',
    'F': 'nbtinsert.c', 'L': '664', 'R': '_bt_check_unique',
}

ALL_ATTRIBUTES = {
    'severity': 'ERREUR', 'severity_en': 'ERROR', 'sqlstate': '23505',
    'message': 'duplicate key', 'detail': 'Key (id)=(1) already exists.',
    'hint': 'try another key', 'position': '8', 'internal_position': '3',
    'internal_query': 'SELECT 1', 'where': 'PL/pgSQL function f() line 3',
    'schema_name': 'public', 'table_name': 'items', 'column_name': 'id',
    'data_type_name': 'int4', 'constraint_name': 'items_pkey',
    'server_source_filename': 'nbtinsert.c', 'server_source_line': '664',
    'server_source_function': '_bt_check_unique',
}

# as_dict() names the W field 'context', as asyncpg does.
ALL_AS_DICT = {('context' if name == 'where' else name): value
               for name, value in ALL_ATTRIBUTES.items()}


def test_every_field_code_fills_its_attribute():
    error = make_server_error(ALL_FIELDS, query='INSERT INTO items VALUES (1)')
    for name, value in ALL_ATTRIBUTES.items():
        assert getattr(error, name) == value, name
    assert error.as_dict() == ALL_AS_DICT
    assert error.query == 'INSERT INTO items VALUES (1)'
    assert error.context == 'PL/pgSQL function f() line 3'


def test_absent_fields_are_none_and_left_out_of_as_dict():
    error = make_server_error({'C': '42601', 'M': 'syntax error at end of input', 'P': '7'})
    assert error.detail is None
    assert error.hint is None
    assert error.constraint_name is None
    assert error.query is None
    assert error.as_dict() == {'sqlstate': '42601', 'message': 'syntax error at end of input',
                               'position': '7'}
    assert exc.PostgresError('bare').as_dict() == {}


def test_unknown_field_codes_are_ignored():
    error = make_server_error({'C': '22012', 'M': 'division by zero', 'Z': 'future field'})
    assert type(error) is exc.DivisionByZeroError
    assert error.as_dict() == {'sqlstate': '22012', 'message': 'division by zero'}
    assert not hasattr(error, 'Z')


def test_fields_of_one_error_do_not_leak_into_its_class():
    make_server_error({'C': '23505', 'M': 'first', 'D': 'detail one'})
    assert exc.UniqueViolationError.detail is None
    assert make_server_error({'C': '23505', 'M': 'second'}).detail is None


@pytest.mark.parametrize('fields, expected', [
    ({'M': 'boom'}, 'boom'),
    ({'M': 'boom', 'D': 'the detail'}, 'boom\nDETAIL:  the detail'),
    ({'M': 'boom', 'H': 'the hint'}, 'boom\nHINT:  the hint'),
    ({'M': 'boom', 'D': 'the detail', 'H': 'the hint'},
     'boom\nDETAIL:  the detail\nHINT:  the hint'),
    ({'M': 'boom', 'D': '', 'H': ''}, 'boom'),
    ({}, ''),
])
def test_str_is_message_then_detail_then_hint(fields, expected):
    assert str(make_server_error({'C': '22000', **fields})) == expected


def test_str_matches_asyncpg():
    asyncpg_exceptions = pytest.importorskip('asyncpg.exceptions')
    theirs = asyncpg_exceptions.PostgresError.new(ALL_FIELDS)
    assert str(make_server_error(ALL_FIELDS)) == str(theirs)
    assert repr(make_server_error(ALL_FIELDS)) == repr(theirs)


def test_as_dict_matches_asyncpg():
    asyncpg_exceptions = pytest.importorskip('asyncpg.exceptions')
    theirs = asyncpg_exceptions.PostgresError.new(ALL_FIELDS)
    assert make_server_error(ALL_FIELDS).as_dict() == theirs.as_dict()
    assert list(make_server_error(ALL_FIELDS).as_dict()) == list(theirs.as_dict())


def test_errors_survive_pickling():
    error = make_server_error(ALL_FIELDS, query='q')
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is exc.UniqueViolationError
    assert copy.as_dict() == ALL_AS_DICT
    assert copy.query == 'q'
    assert str(copy) == str(error)


def test_public_classes_report_the_public_module():
    assert exc.UniqueViolationError.__module__ == 'mypgdriver.exceptions'
    assert exc.PostgresError.__module__ == 'mypgdriver.exceptions'


# -- notices ---------------------------------------------------------------------------------

def test_notice_fields_and_str():
    notice = make_server_message({'S': 'NOTICE', 'V': 'NOTICE', 'C': '00000', 'M': 'hello',
                                  'W': 'PL/pgSQL function inline_code_block line 1 at RAISE'},
                                 query='DO $$ ... $$')
    assert str(notice) == 'PostgresLogMessage: hello'
    assert notice.severity_en == 'NOTICE'
    assert notice.where == 'PL/pgSQL function inline_code_block line 1 at RAISE'
    assert notice.query == 'DO $$ ... $$'
    assert notice.as_dict() == {
        'severity': 'NOTICE', 'severity_en': 'NOTICE', 'sqlstate': '00000', 'message': 'hello',
        'context': 'PL/pgSQL function inline_code_block line 1 at RAISE'}


def test_warning_notice_is_a_python_warning_with_message_args():
    warning = make_server_message({'S': 'WARNING', 'C': '01P01', 'M': 'deprecated'})
    assert type(warning) is exc.DeprecatedFeature
    assert warning.args == ('deprecated',)
    assert str(warning) == 'DeprecatedFeature: deprecated'


def test_unknown_warning_code_falls_back_to_its_class():
    assert type(make_server_message({'C': '01999', 'M': 'm'})) is exc.PostgresWarning
    assert type(make_server_message({'C': '02999', 'M': 'm'})) is exc.NoData


def test_warning_severity_without_warning_code_gives_postgres_warning():
    notice = make_server_message({'S': 'AVERTISSEMENT', 'V': 'WARNING', 'C': '00000', 'M': 'w'})
    assert type(notice) is exc.PostgresWarning


def test_notice_with_error_code_is_a_plain_log_message():
    # CREATE TABLE IF NOT EXISTS on an existing table sends NOTICE 42P07.
    notice = make_server_message({'S': 'NOTICE', 'V': 'NOTICE', 'C': '42P07',
                                  'M': 'relation "t" already exists, skipping'})
    assert type(notice) is exc.PostgresLogMessage
    assert notice.sqlstate == '42P07'


def test_log_messages_are_immutable():
    notice = make_server_message({'C': '00000', 'M': 'hello'})
    with pytest.raises(TypeError):
        notice.message = 'changed'
    warning = make_server_message({'C': '01000', 'M': 'w'})
    with pytest.raises(TypeError):
        warning.detail = 'changed'
    assert notice.message == 'hello'


def test_log_messages_survive_pickling():
    warning = make_server_message({'S': 'WARNING', 'C': '01P01', 'M': 'deprecated'})
    copy = pickle.loads(pickle.dumps(warning))
    assert type(copy) is exc.DeprecatedFeature
    assert copy.as_dict() == {'severity': 'WARNING', 'sqlstate': '01P01', 'message': 'deprecated'}
    notice = pickle.loads(pickle.dumps(make_server_message({'C': '00000', 'M': 'hi'})))
    assert type(notice) is exc.PostgresLogMessage
    assert notice.message == 'hi'


# -- client-side errors ----------------------------------------------------------------------

def test_client_error_bases():
    assert asyncpg_bases(exc.InterfaceError) == (exc.InterfaceMessage, Exception)
    assert asyncpg_bases(exc.InterfaceWarning) == (exc.InterfaceMessage, UserWarning)
    assert asyncpg_bases(exc.ClientConfigurationError) == (exc.InterfaceError, ValueError)
    assert asyncpg_bases(exc.UnsupportedClientFeatureError) == (exc.InterfaceError,)
    assert asyncpg_bases(exc.UnsupportedServerFeatureError) == (exc.InterfaceError,)
    assert asyncpg_bases(exc.InternalClientError) == (Exception,)
    assert asyncpg_bases(exc.ProtocolError) == (exc.InternalClientError,)
    assert asyncpg_bases(exc.TargetServerAttributeNotMatched) == (exc.InternalClientError,)
    assert asyncpg_bases(exc.OutdatedSchemaCacheError) == (exc.InternalClientError,)
    assert asyncpg_bases(exc.FatalPostgresError) == (exc.PostgresError,)
    assert asyncpg_bases(exc.UnknownPostgresError) == (exc.FatalPostgresError,)
    assert asyncpg_bases(exc.ConnectionDoesNotExistError) == (exc.PostgresConnectionError,)
    assert asyncpg_bases(exc.ConnectionFailureError) == (exc.PostgresConnectionError,)


def test_interface_error_str_and_with_msg():
    error = exc.ClientConfigurationError('bad port', detail='port=abc', hint='use a number')
    assert str(error) == 'bad port\nDETAIL:  port=abc\nHINT:  use a number'
    copy = error.with_msg('bad port in DSN')
    assert type(copy) is exc.ClientConfigurationError
    assert str(copy) == 'bad port in DSN\nDETAIL:  port=abc\nHINT:  use a number'
    assert str(exc.InterfaceError('closed')) == 'closed'
    assert str(exc.InterfaceWarning('careful', hint='h')) == 'careful\nHINT:  h'


def test_outdated_schema_cache_error_attributes():
    error = exc.OutdatedSchemaCacheError('type changed', schema='public', data_type='mood',
                                         position=2)
    assert (error.schema_name, error.data_type_name, error.position) == ('public', 'mood', 2)
    assert str(error) == 'type changed'


def test_placeholder_names_still_import():
    from mypgdriver.exceptions import (  # noqa: F401
        ClientConfigurationError,
        DataError,
        InterfaceError,
        InternalClientError,
        ProtocolError,
    )
    with pytest.raises(exc.DataError) as info:
        raise DataError('invalid input for query argument $1')
    assert str(info.value) == 'invalid input for query argument $1'


def test_all_lists_exactly_the_public_classes():
    public = {name for name, value in vars(exc).items()
              if inspect.isclass(value) and not name.startswith('_')}
    assert set(exc.__all__) == public
    assert len(exc.__all__) == len(set(exc.__all__))


# -- asyncpg compatibility -------------------------------------------------------------------

def asyncpg_classes_by_sqlstate() -> dict[str, type]:
    asyncpg_exceptions = pytest.importorskip('asyncpg.exceptions')
    return {value.__dict__['sqlstate']: value for value in vars(asyncpg_exceptions).values()
            if inspect.isclass(value) and 'sqlstate' in value.__dict__}


def test_names_and_bases_equal_asyncpgs_for_every_sqlstate():
    theirs = asyncpg_classes_by_sqlstate()
    ours = {**ERROR_CLASSES, **WARNING_CLASSES}
    assert sorted(ours) == sorted(theirs)
    for code, their_class in theirs.items():
        assert ours[code].__name__ == their_class.__name__, code
        assert ([b.__name__ for b in asyncpg_bases(ours[code])]
                == [b.__name__ for b in their_class.__bases__]), code


def test_every_asyncpg_public_name_exists_here():
    asyncpg_exceptions = pytest.importorskip('asyncpg.exceptions')
    missing = [name for name in asyncpg_exceptions.__all__ if not hasattr(exc, name)]
    assert missing == []
    for name in asyncpg_exceptions.__all__:
        their_class = getattr(asyncpg_exceptions, name)
        ours = getattr(exc, name)
        assert ([b.__name__ for b in asyncpg_bases(ours)]
                == [b.__name__ for b in their_class.__bases__]), name


# -- generator -------------------------------------------------------------------------------

@needs_errcodes
def test_generated_module_is_up_to_date(tmp_path):
    generator = load_generator()
    output = tmp_path / '_generated.py'
    assert generator.main([str(ERRCODES), '-o', str(output)]) == 0
    checked_in = REPO / 'mypgdriver' / 'exceptions' / '_generated.py'
    assert output.read_text() == checked_in.read_text()


def test_generator_derives_asyncpg_style_names():
    generator = load_generator()

    def name(sqlstate: str, kind: str, spec: str) -> str:
        return generator.derive_class_name(generator.Condition(sqlstate, kind, spec, ''))

    assert name('23505', 'E', 'unique_violation') == 'UniqueViolationError'
    assert name('22000', 'E', 'data_exception') == 'DataError'
    assert name('58030', 'E', 'io_error') == 'PostgresIOError'
    assert name('42601', 'E', 'syntax_error') == 'PostgresSyntaxError'
    assert name('01000', 'W', 'warning') == 'PostgresWarning'
    assert name('02000', 'W', 'no_data') == 'NoData'
    assert name('HV000', 'E', 'fdw_error') == 'FDWError'
    assert name('40001', 'E', 'serialization_failure') == 'SerializationError'


# -- PEP 249 classes under the asyncpg hierarchy -----------------------------------------------

@pytest.mark.parametrize('cls, dbapi_class', [
    (exc.UniqueViolationError, pep249.IntegrityError),
    (exc.ForeignKeyViolationError, pep249.IntegrityError),
    (exc.DivisionByZeroError, pep249.DataError),
    (exc.DataError, pep249.DataError),
    (exc.PostgresSyntaxError, pep249.ProgrammingError),
    (exc.UndefinedTableError, pep249.ProgrammingError),
    (exc.InsufficientPrivilegeError, pep249.ProgrammingError),
    (exc.ConnectionDoesNotExistError, pep249.OperationalError),
    (exc.SerializationError, pep249.OperationalError),
    (exc.DeadlockDetectedError, pep249.OperationalError),
    (exc.QueryCanceledError, pep249.OperationalError),
    (exc.InvalidPasswordError, pep249.OperationalError),
    (exc.TooManyConnectionsError, pep249.OperationalError),
    (exc.FeatureNotSupportedError, pep249.NotSupportedError),
    (exc.InvalidCachedStatementError, pep249.NotSupportedError),
    (exc.InFailedSQLTransactionError, pep249.InternalError),
    (exc.InternalServerError, pep249.InternalError),
    (exc.RaiseError, pep249.ProgrammingError),
    (exc.SQLStatementNotYetCompleteError, pep249.DatabaseError),
])
def test_server_errors_are_their_pep249_class(cls, dbapi_class):
    assert issubclass(cls, dbapi_class)
    assert issubclass(cls, pep249.DatabaseError)
    assert issubclass(cls, pep249.Error)
    error = make_server_error({'C': cls.sqlstate, 'M': 'boom'})
    with pytest.raises(dbapi_class):
        raise error


def test_pep249_classes_of_each_sqlstate_class_follow_the_table():
    for code, cls in ERROR_CLASSES.items():
        assert issubclass(cls, pep249.sqlstate_class(code)), code


def test_client_errors_are_pep249_interface_errors():
    for cls in (exc.InterfaceError, exc.ClientConfigurationError, exc.UnsupportedClientFeatureError,
                exc.InternalClientError, exc.ProtocolError, exc.OutdatedSchemaCacheError,
                exc.QueryParameterError):
        assert issubclass(cls, pep249.InterfaceError), cls
    assert issubclass(exc.QueryParameterError, pep249.ProgrammingError)
    # asyncpg's InterfaceError does not start catching InternalClientError
    assert not issubclass(exc.InternalClientError, exc.InterfaceError)
    # nor does the server's PostgresError catch client errors, or the reverse
    assert not issubclass(exc.InterfaceError, pep249.DatabaseError)
    assert not issubclass(exc.PostgresError, pep249.InterfaceError)


def test_pep249_hierarchy_is_the_peps():
    assert pep249.Warning.__bases__ == (Exception,)
    assert pep249.Error.__bases__ == (Exception,)
    assert pep249.InterfaceError.__bases__ == (pep249.Error,)
    assert pep249.DatabaseError.__bases__ == (pep249.Error,)
    for name in ('DataError', 'OperationalError', 'IntegrityError', 'InternalError',
                 'ProgrammingError', 'NotSupportedError'):
        assert getattr(pep249, name).__bases__ == (pep249.DatabaseError,), name


# --- psycopg's names for the fields ----------------------------------------------------

def test_diag_pgcode_and_pgerror_give_the_fields_under_psycopg_names() -> None:
    from mypgdriver.exceptions import UniqueViolationError, make_server_error

    fields = {'S': 'ERROR', 'V': 'ERROR', 'C': '23505',
              'M': 'duplicate key value violates unique constraint "t_pkey"',
              'D': 'Key (id)=(1) already exists.', 's': 'public', 't': 't', 'n': 't_pkey',
              'P': '8', 'W': 'SQL function', 'F': 'nbtinsert.c', 'L': '666',
              'R': '_bt_check_unique'}
    exc = make_server_error(fields, 'INSERT INTO t VALUES (1)')
    assert type(exc) is UniqueViolationError
    assert exc.pgcode == '23505'
    assert exc.pgerror == ('ERROR:  duplicate key value violates unique constraint "t_pkey"\n'
                           'DETAIL:  Key (id)=(1) already exists.')
    diag = exc.diag
    assert (diag.sqlstate, diag.severity, diag.severity_nonlocalized) == ('23505', 'ERROR', 'ERROR')
    assert diag.message_primary == 'duplicate key value violates unique constraint "t_pkey"'
    assert diag.message_detail == 'Key (id)=(1) already exists.'
    assert diag.message_hint is None
    assert (diag.schema_name, diag.table_name, diag.constraint_name) == ('public', 't', 't_pkey')
    assert (diag.column_name, diag.datatype_name) == (None, None)
    assert (diag.statement_position, diag.context) == ('8', 'SQL function')
    assert (diag.source_file, diag.source_line, diag.source_function) == (
        'nbtinsert.c', '666', '_bt_check_unique')
    with pytest.raises(AttributeError):
        diag.not_a_field  # noqa: B018

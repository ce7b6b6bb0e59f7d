"""mypgdriver.dbapi: module globals, connect, the client-side cursor (execute, fetch*,
description, rowcount, callproc, nextset, scroll) against a real server."""
from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

import mypgdriver
import mypgdriver.dbapi as dbapi
import mypgdriver.dbapi.cursor
import mypgdriver.exceptions
import mypgdriver.rows
import mypgdriver.sync
from mypgdriver.dbapi import Connection


@pytest.fixture
def table(dbapi_conn: Connection) -> str:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('DROP TABLE IF EXISTS dbapi_t')
    cur.execute('CREATE TABLE dbapi_t (id int PRIMARY KEY, name text, amount numeric)')
    dbapi_conn.autocommit = False
    return 'dbapi_t'


# --- module -------------------------------------------------------------------------------

def test_module_globals():
    assert dbapi.apilevel == '2.0'
    assert dbapi.threadsafety == 2
    assert dbapi.paramstyle == 'pyformat'
    for name in ('Warning', 'Error', 'InterfaceError', 'DatabaseError', 'DataError',
                 'OperationalError', 'IntegrityError', 'InternalError', 'ProgrammingError',
                 'NotSupportedError'):
        assert issubclass(getattr(dbapi, name), Exception)
        assert getattr(Connection, name) is getattr(dbapi, name)


def test_version_is_the_drivers():
    assert dbapi.__version__ == mypgdriver.__version__
    assert '__version__' in dbapi.__all__


def test_reload_schema_state_after_another_connection_changes_a_column(dbapi_conn: Connection,
                                                                         dsn: str):
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP TABLE IF EXISTS dbapi_rs')
    dbapi_conn.execute('CREATE TABLE dbapi_rs (v int)')
    dbapi_conn.execute('INSERT INTO dbapi_rs VALUES (1)')
    cur = dbapi_conn.execute('SELECT * FROM dbapi_rs WHERE %s', (True,))
    assert cur.fetchall() == [(1,)]
    # The statement is prepared in the connection's one statement cache (the Session's).
    assert dbapi_conn.link.statements.is_cached('SELECT * FROM dbapi_rs WHERE $1')
    with dbapi.connect(dsn, autocommit=True) as other:
        other.execute('ALTER TABLE dbapi_rs ALTER COLUMN v TYPE text')
    dbapi_conn.reload_schema_state()
    assert not dbapi_conn.link.statements.is_cached('SELECT * FROM dbapi_rs WHERE $1')
    cur = dbapi_conn.execute('SELECT * FROM dbapi_rs WHERE %s', (True,))
    assert cur.fetchall() == [('1',)]
    assert cur.description is not None and cur.description[0].type_code == 25
    dbapi_conn.execute('DROP TABLE dbapi_rs')
    dbapi_conn.close()
    with pytest.raises(dbapi.InterfaceError):
        dbapi_conn.reload_schema_state()


def test_connect_failure_is_operational_error(no_event_loop):
    with pytest.raises(dbapi.OperationalError):
        dbapi.connect(host='127.0.0.1', port=1, user='x', database='x', timeout=5)


def test_connect_with_wrong_password_is_operational_error(pg_cluster: Any, no_event_loop):
    if not getattr(pg_cluster, 'requires_password', True):
        pytest.skip('the cluster trusts every user')
    with pytest.raises(dbapi.OperationalError):
        dbapi.connect(pg_cluster.dsn(), password='definitely-wrong-password', user='nobody_x')


# --- execute and fetch --------------------------------------------------------------------

def test_execute_returns_the_cursor_and_fetches(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    assert cur.execute('SELECT %s::int AS a, %s::text AS b', (1, 'x')) is cur
    assert cur.fetchone() == (1, 'x')
    assert cur.fetchone() is None
    assert cur.rowcount == 1
    assert cur.statusmessage == 'SELECT 1'
    assert cur.query == 'SELECT $1::int AS a, $2::text AS b'
    assert cur.lastrowid is None


def test_fetchmany_arraysize_fetchall_and_iteration(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute('SELECT g FROM generate_series(1, 10) g')
    assert cur.rowcount == 10
    assert cur.arraysize == 1
    assert cur.fetchmany() == [(1,)]
    cur.arraysize = 3
    assert cur.fetchmany() == [(2,), (3,), (4,)]
    assert cur.fetchmany(2) == [(5,), (6,)]
    assert cur.rownumber == 6
    assert [row for row in cur][:2] == [(7,), (8,)]
    assert cur.fetchall() == []
    assert cur.fetchmany(5) == []
    cur.execute('SELECT g FROM generate_series(1, 3) g')
    assert cur.fetchall() == [(1,), (2,), (3,)]


def test_named_parameters_and_percent(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute("SELECT %(a)s::int + %(a)s::int, 'x' || %(b)s || '%%', 7 %% 4",
                {'a': 2, 'b': 'y', 'unused': 0})
    assert cur.fetchall() == [(4, 'xy%', 3)]
    # without parameters the text is sent as it is: no %% needed
    cur.execute("SELECT '100%'")
    assert cur.fetchone() == ('100%',)


def test_values_are_bound_not_interpolated(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    hostile = "'); DROP TABLE x; --"
    cur.execute('SELECT %s::text', (hostile,))
    assert cur.fetchone() == (hostile,)


def test_description_names_and_type_codes(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    assert cur.description is None
    cur.execute("SELECT 1::int4 AS i, 'a'::text AS t, 1.5::numeric AS n, now() AS ts, "
                "'\\x00'::bytea AS b, 2::int8 AS big, 'c'::varchar AS v")
    description = cur.description
    assert description is not None
    assert [c.name for c in description] == ['i', 't', 'n', 'ts', 'b', 'big', 'v']
    assert [c[0] for c in description] == ['i', 't', 'n', 'ts', 'b', 'big', 'v']
    assert [c.type_code for c in description] == [23, 25, 1700, 1184, 17, 20, 1043]
    assert all(len(c) == 7 for c in description)
    assert description[0] == ('i', 23, None, 4, None, None, None)
    assert description[0].type_code == dbapi.NUMBER
    assert description[2].type_code == dbapi.NUMBER
    assert description[5][1] == dbapi.NUMBER
    assert description[1].type_code == dbapi.STRING
    assert description[6].type_code == dbapi.STRING
    assert description[3].type_code == dbapi.DATETIME
    assert description[4].type_code == dbapi.BINARY
    assert description[1].type_code != dbapi.NUMBER
    assert dbapi.ROWID == 26


def test_description_is_none_for_commands(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    cur.execute('INSERT INTO dbapi_t VALUES (%s, %s, %s)', (1, 'a', 1))
    assert cur.description is None
    assert cur.rowcount == 1
    assert cur.statusmessage == 'INSERT 0 1'
    with pytest.raises(dbapi.ProgrammingError, match='did not return rows'):
        cur.fetchone()


def test_rowcount_of_each_command(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    assert cur.rowcount == -1
    cur.execute('INSERT INTO dbapi_t SELECT g, %s, g FROM generate_series(1, 5) g', ('n',))
    assert cur.rowcount == 5
    cur.execute('UPDATE dbapi_t SET name = %s WHERE id > %s', ('m', 2))
    assert (cur.rowcount, cur.statusmessage) == (3, 'UPDATE 3')
    cur.execute('DELETE FROM dbapi_t WHERE id = %s', (1,))
    assert cur.rowcount == 1
    cur.execute('SELECT * FROM dbapi_t WHERE id > %s', (100,))
    assert cur.rowcount == 0
    assert cur.fetchall() == []
    cur.execute('CREATE TEMP TABLE dbapi_tmp (a int)')
    assert cur.rowcount == -1
    assert cur.statusmessage == 'CREATE TABLE'
    if dbapi_conn.server_version >= 150000:
        cur.execute('MERGE INTO dbapi_t t USING (SELECT 2 AS id) s ON t.id = s.id '
                    'WHEN MATCHED THEN UPDATE SET name = %s', ('merged',))
        assert cur.rowcount == 1


def test_values_of_common_types_round_trip(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    values = (None, True, 42, 2**40, 1.5, decimal.Decimal('1.25'), 'text', b'\x00\x01',
              datetime.date(2024, 1, 31), datetime.datetime(2024, 1, 31, 12, 0),
              [1, 2, 3])
    cur.execute('SELECT %s::int, %s::bool, %s::int4, %s::int8, %s::float8, %s::numeric, '
                '%s::text, %s::bytea, %s::date, %s::timestamp, %s::int[]', values)
    assert cur.fetchone() == values


def test_any_with_a_list(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute('SELECT g FROM generate_series(1, 5) g WHERE g = ANY(%s) ORDER BY g', ([2, 4],))
    assert cur.fetchall() == [(2,), (4,)]


def test_type_constructors():
    assert dbapi.Date(2024, 1, 31) == datetime.date(2024, 1, 31)
    assert dbapi.Time(12, 30) == datetime.time(12, 30)
    assert dbapi.Timestamp(2024, 1, 31, 12) == datetime.datetime(2024, 1, 31, 12)
    assert dbapi.Binary(b'ab') == b'ab'
    assert dbapi.DateFromTicks(0) == datetime.date.fromtimestamp(0)
    assert dbapi.TimestampFromTicks(86400) == datetime.datetime.fromtimestamp(86400)
    assert dbapi.TimeFromTicks(3600) == datetime.datetime.fromtimestamp(3600).time()


def test_constructed_values_are_accepted(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute('SELECT %s::date, %s::bytea', (dbapi.Date(2024, 2, 29), dbapi.Binary(b'x')))
    assert cur.fetchone() == (datetime.date(2024, 2, 29), b'x')


# --- several statements, nextset, callproc, scroll ----------------------------------------

def test_several_statements_without_parameters(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    cur.execute("INSERT INTO dbapi_t VALUES (1, 'a', 1); INSERT INTO dbapi_t VALUES (2, 'b', 2);"
                "UPDATE dbapi_t SET amount = 5")
    # Every statement's result, the first shown first (psycopg 3).
    assert (cur.statusmessage, cur.rowcount, cur.description) == ('INSERT 0 1', 1, None)
    assert cur.nextset() is True
    assert cur.statusmessage == 'INSERT 0 1'
    assert cur.nextset() is True
    assert (cur.statusmessage, cur.rowcount, cur.description) == ('UPDATE 2', 2, None)
    assert cur.nextset() is None
    cur.execute('SELECT count(*) FROM dbapi_t')
    assert cur.fetchone() == (2,)


def test_every_result_of_several_statements_with_typed_rows(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    cur.execute("SELECT 1::int4 AS a, 2.5::numeric AS b; "
                "/* ; */ INSERT INTO dbapi_t VALUES (1, 'x;y', 3) RETURNING name; ;"
                "CREATE TEMP TABLE dbapi_tmp (v int); "
                "SELECT g, now()::date = current_date AS today FROM generate_series(1, 3) g")
    assert [c.name for c in cur.description] == ['a', 'b']
    assert cur.fetchall() == [(1, decimal.Decimal('2.5'))]
    assert (cur.statusmessage, cur.rowcount) == ('SELECT 1', 1)
    assert cur.nextset() is True
    assert cur.fetchall() == [('x;y',)]
    assert [c.type_code for c in cur.description] == [25]
    assert (cur.statusmessage, cur.rowcount) == ('INSERT 0 1', 1)
    assert cur.nextset() is True
    assert (cur.statusmessage, cur.rowcount, cur.description) == ('CREATE TABLE', -1, None)
    with pytest.raises(dbapi.ProgrammingError):
        cur.fetchall()
    assert cur.nextset() is True
    assert cur.fetchall() == [(1, True), (2, True), (3, True)]
    assert (cur.statusmessage, cur.rowcount) == ('SELECT 3', 3)
    assert cur.nextset() is None
    dbapi_conn.rollback()


def test_several_statements_with_a_dict_row_factory(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(row_factory=mypgdriver.rows.dict_row)
    cur.execute('SELECT 1 AS a; SELECT 2 AS b')
    assert cur.fetchall() == [{'a': 1}]
    assert cur.nextset() is True
    assert cur.fetchall() == [{'b': 2}]


def test_a_failing_statement_undoes_the_ones_before_in_autocommit(dbapi_conn: Connection,
                                                                  table: str):
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    with pytest.raises(dbapi.IntegrityError):
        cur.execute("INSERT INTO dbapi_t VALUES (1, 'a', 1); "
                    "INSERT INTO dbapi_t VALUES (1, 'again', 1); SELECT 3")
    assert dbapi_conn.sync_connection.fetchval('SELECT count(*) FROM dbapi_t') == 0
    assert not dbapi_conn.sync_connection.is_in_transaction()
    # The connection (and the cursor) go on.
    cur.execute("INSERT INTO dbapi_t VALUES (2, 'b', 1); SELECT name FROM dbapi_t")
    assert cur.nextset() is True
    assert cur.fetchall() == [('b',)]
    assert dbapi_conn.sync_connection.fetchval('SELECT count(*) FROM dbapi_t') == 1


def test_a_failing_statement_fails_the_open_transaction(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute("INSERT INTO dbapi_t VALUES (1, 'a', 1); SELECT * FROM no_such_table")
    with pytest.raises(mypgdriver.exceptions.InFailedSQLTransactionError):
        cur.execute('SELECT 1')
    dbapi_conn.rollback()
    cur.execute('SELECT count(*) FROM dbapi_t; SELECT 2')
    assert cur.fetchall() == [(0,)]


def test_vacuum_in_several_statements_fails_as_in_a_simple_query(dbapi_conn: Connection,
                                                                 table: str):
    dbapi_conn.autocommit = True
    with pytest.raises(mypgdriver.exceptions.ActiveSQLTransactionError):
        dbapi_conn.execute("INSERT INTO dbapi_t VALUES (1, 'a', 1); VACUUM dbapi_t")
    assert dbapi_conn.execute('SELECT count(*) FROM dbapi_t').fetchone() == (0,)
    # Alone, it runs.
    assert dbapi_conn.execute('VACUUM dbapi_t').statusmessage == 'VACUUM'


def test_scripts_sent_whole_as_one_simple_query(dbapi_conn: Connection, table: str):
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    # The script's own transaction: one simple Query, the last status, no rows.
    cur.execute("BEGIN; INSERT INTO dbapi_t VALUES (1, 'a', 1); SELECT 1; COMMIT")
    assert (cur.statusmessage, cur.description, cur.nextset()) == ('COMMIT', None, None)
    # A function body whose semicolons are not statement ends.
    cur.execute('CREATE OR REPLACE FUNCTION pg_temp.dbapi_f() RETURNS int LANGUAGE sql '
                'BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT 5')
    assert cur.statusmessage == 'SELECT 1'
    assert cur.description is None
    assert dbapi_conn.execute('SELECT pg_temp.dbapi_f()').fetchone() == (2,)
    assert mypgdriver.dbapi.cursor.split_statements(
        "SELECT 'BEGIN ATOMIC'; SELECT 1") == ["SELECT 'BEGIN ATOMIC'", 'SELECT 1']
    assert mypgdriver.dbapi.cursor.split_statements(' ; -- x\n;SELECT 1;') == ['SELECT 1']


def test_a_semicolon_in_a_string_is_one_statement(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute("SELECT 'a;b' -- ; SELECT 2\n;")
    assert cur.fetchall() == [('a;b',)]


def test_callproc_calls_the_function_and_returns_the_parameters(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    assert cur.callproc('pg_catalog.lower', ('ABC',)) == ('ABC',)
    assert cur.fetchall() == [('abc',)]
    assert cur.callproc('pg_catalog.now') == ()
    assert cur.rowcount == 1


def test_scroll_within_the_result(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute('SELECT g FROM generate_series(0, 9) g')
    cur.scroll(3)
    assert cur.fetchone() == (3,)
    cur.scroll(-2)
    assert cur.fetchone() == (2,)
    cur.scroll(8, mode='absolute')
    assert cur.rownumber == 8
    assert cur.fetchone() == (8,)
    with pytest.raises(IndexError):
        cur.scroll(5)
    assert cur.rownumber == 9
    with pytest.raises(ValueError):
        cur.scroll(0, mode='sideways')


def test_setinputsizes_and_setoutputsize_do_nothing(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.setinputsizes([10, 20])
    cur.setoutputsize(100)
    cur.setoutputsize(100, 0)
    cur.execute('SELECT 1')
    assert cur.fetchall() == [(1,)]


def test_close_and_context_manager(dbapi_conn: Connection):
    with dbapi_conn.cursor() as cur:
        cur.execute('SELECT 1')
        assert not cur.closed
    assert cur.closed
    with pytest.raises(dbapi.InterfaceError):
        cur.execute('SELECT 1')
    with pytest.raises(dbapi.InterfaceError):
        cur.fetchone()
    assert dbapi_conn.execute('SELECT 2').fetchone() == (2,)


def test_connection_execute_shortcut(dbapi_conn: Connection):
    cur = dbapi_conn.execute('SELECT %s::int', (5,))
    assert isinstance(cur, dbapi.Cursor)
    assert cur.fetchall() == [(5,)]
    assert cur.connection is dbapi_conn


def test_fetch_before_execute_is_programming_error(dbapi_conn: Connection):
    with pytest.raises(dbapi.ProgrammingError, match='nothing was executed'):
        dbapi_conn.cursor().fetchall()


def test_row_factory_of_connection_and_cursor(dbapi_conn: Connection):
    def dict_row(cursor: Any) -> Any:
        names = [c.name for c in cursor.description]
        return lambda values: dict(zip(names, values))

    cur = dbapi_conn.cursor(row_factory=dict_row)
    cur.execute('SELECT 1 AS a, 2 AS b')
    assert cur.fetchall() == [{'a': 1, 'b': 2}]
    dbapi_conn.row_factory = dict_row
    assert dbapi_conn.execute('SELECT 3 AS c').fetchone() == {'c': 3}
    cur = dbapi_conn.cursor()
    cur.execute('SELECT 1 AS a UNION ALL SELECT 2')
    assert cur.fetchone() == {'a': 1}
    # Rows are made as they arrive: a factory set now makes the next result's.
    cur.row_factory = dbapi.tuple_row
    assert cur.fetchone() == {'a': 2}
    cur.execute('SELECT 3 AS a')
    assert cur.fetchall() == [(3,)]


# --- errors ---------------------------------------------------------------------------------

def test_errors_are_pep249_classes_and_the_connection_stays_usable(dbapi_conn: Connection,
                                                                   table: str):
    cur = dbapi_conn.cursor()
    cur.execute('INSERT INTO dbapi_t VALUES (%s, %s, %s)', (1, 'a', 1))
    dbapi_conn.commit()
    with pytest.raises(dbapi.IntegrityError) as info:
        cur.execute('INSERT INTO dbapi_t VALUES (%s, %s, %s)', (1, 'a', 1))
    assert type(info.value) is mypgdriver.UniqueViolationError
    # psycopg's names for the fields, for code moving from it
    assert info.value.pgcode == info.value.diag.sqlstate == '23505'
    assert info.value.diag.constraint_name == info.value.constraint_name == 'dbapi_t_pkey'
    assert info.value.diag.message_detail == 'Key (id)=(1) already exists.'
    with pytest.raises(dbapi.InternalError):      # 25P02: the transaction failed
        cur.execute('SELECT 1')
    dbapi_conn.rollback()
    with pytest.raises(dbapi.DataError):
        cur.execute('SELECT 1 / %s::int', (0,))
    dbapi_conn.rollback()
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute('SELECT * FROM no_such_table_x')
    dbapi_conn.rollback()
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute('SELECT %s, %s', (1,))
    assert cur.execute('SELECT 1').fetchone() == (1,)


def test_integrity_error_of_the_asyncio_and_sync_apis(dsn: str):
    import asyncio

    async def insert_twice() -> None:
        aconn = await mypgdriver.connect(dsn)
        try:
            await aconn.execute('CREATE TEMP TABLE dbapi_u (id int PRIMARY KEY)')
            await aconn.execute('INSERT INTO dbapi_u VALUES (1)')
            await aconn.execute('INSERT INTO dbapi_u VALUES (1)')
        finally:
            await aconn.close()

    with pytest.raises(dbapi.IntegrityError):
        asyncio.run(insert_twice())
    sconn = mypgdriver.sync.connect(dsn)
    try:
        sconn.execute('CREATE TEMP TABLE dbapi_u (id int PRIMARY KEY)')
        sconn.execute('INSERT INTO dbapi_u VALUES ($1)', 1)
        with pytest.raises(dbapi.IntegrityError):
            sconn.execute('INSERT INTO dbapi_u VALUES ($1)', 1)
    finally:
        sconn.close()


def test_in_with_a_placeholder_says_any(dbapi_conn: Connection):
    with pytest.raises(dbapi.ProgrammingError, match='right after IN') as info:
        dbapi_conn.execute('SELECT 1 WHERE 1 IN %s', ((1, 2),))
    assert '= ANY(%s)' in str(info.value)
    assert dbapi_conn.execute('SELECT 1').fetchone() == (1,)


def test_parameters_in_set_hint_set_config(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    with pytest.raises(dbapi.ProgrammingError) as info:
        dbapi_conn.execute('SET search_path = %s', ('public',))
    assert type(info.value) is mypgdriver.PostgresSyntaxError
    assert 'set_config' in str(info.value)
    cur = dbapi_conn.execute("SELECT set_config('search_path', %s, false)", ('public',))
    assert cur.fetchone() == ('public',)
    with pytest.raises(dbapi.ProgrammingError) as info:
        dbapi_conn.execute('CREATE TEMP TABLE dbapi_p (a int DEFAULT %s)', (5,))
    assert 'quote_literal' in str(info.value)
    assert dbapi_conn.execute('SELECT 1').fetchone() == (1,)


def test_typed_example_application_runs(dsn: str, no_event_loop: list[str],
                                        capsys: pytest.CaptureFixture[str]):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent / 'typing' / 'dbapi_app.py'
    spec = importlib.util.spec_from_file_location('dbapi_app', path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(dsn)
    out = [line for line in capsys.readouterr().out.splitlines()
           if not line.startswith('DETAIL:')]
    assert out[0].startswith('duplicate: duplicate key value violates unique constraint')
    assert out[1:3] == ["{'id': 1, 'name': 'bolt', 'quantity': 10}",
                        "{'id': 2, 'name': 'nut', 'quantity': 5}"]
    assert out[3] == '2 SELECT 2'
    assert out[4:6] == ["('bolt',)", "('nut',)"]
    assert out[6:] == ['bolt', 'nut']


# --- row factories (mypgdriver.rows) --------------------------------------------------------

def test_one_column_class_with_the_type_modifiers(dbapi_conn: Connection):
    cur = dbapi_conn.execute("SELECT 'x'::varchar(20) AS v, 1.5::numeric(10, 2) AS n, 1::int4 AS i")
    v, n, i = cur.description
    assert type(v) is mypgdriver.rows.Column and dbapi.Column is mypgdriver.rows.Column
    assert tuple(v) == ('v', 1043, 20, None, None, None, None)
    assert tuple(n) == ('n', 1700, None, None, 10, 2, None)
    assert tuple(i) == ('i', 23, None, 4, None, None, None)
    assert dbapi.tuple_row is mypgdriver.rows.tuple_row


def test_built_in_factories_go_down_to_the_decode_loop(dbapi_conn: Connection):
    # dict_row and scalar_row are passed to the core as they are (built in C),
    # never wrapped for a call per row.
    cur = dbapi_conn.cursor(row_factory=mypgdriver.rows.dict_row)
    assert cur._rows_as is mypgdriver.rows.dict_row
    cur.execute('SELECT 1 AS a, %s::text AS b UNION ALL SELECT 2, NULL', ('x',))
    assert cur.fetchall() == [{'a': 1, 'b': 'x'}, {'a': 2, 'b': None}]
    cur.row_factory = mypgdriver.rows.scalar_row
    assert cur._rows_as is mypgdriver.rows.scalar_row
    cur.execute('SELECT g FROM generate_series(1, 3) g')
    assert cur.fetchall() == [1, 2, 3]
    assert dbapi_conn.cursor()._rows_as is mypgdriver.rows.tuple_row
    assert dbapi_conn.execute('SELECT 1, 2').fetchall() == [(1, 2)]


def test_scalar_row_on_a_result_without_columns_is_psycopgs_programming_error(
        dbapi_conn: Connection):
    cur = dbapi_conn.cursor(row_factory=mypgdriver.rows.scalar_row)
    for run in (lambda: cur.execute('SELECT FROM generate_series(1, %s)', (2,)),
                lambda: cur.execute('SELECT FROM generate_series(1, 2)'),
                lambda: cur.executemany('SELECT FROM generate_series(1, %s)', [(1,)],
                                        returning=True)):
        with pytest.raises(dbapi.ProgrammingError) as info:
            run()
        assert type(info.value) is dbapi.ProgrammingError
        assert not isinstance(info.value, dbapi.InterfaceError)
        assert str(info.value) == 'scalar_row needs a result with at least one column'
        # Refused before the statement was sent: the transaction goes on.
        assert cur.execute('SELECT 3').fetchall() == [3]
    dbapi_conn.rollback()
    with dbapi_conn.cursor(name='no_columns', row_factory=mypgdriver.rows.scalar_row) as server:
        with pytest.raises(dbapi.ProgrammingError) as info:
            server.execute('SELECT FROM generate_series(1, 2)')
            server.fetchone()
        assert type(info.value) is dbapi.ProgrammingError


def test_a_user_factory_gets_the_cursor_with_the_new_description(dbapi_conn: Connection):
    seen: list[Any] = []

    def upper_row(cursor: Any) -> Any:
        seen.append((cursor, [c.name for c in cursor.description]))
        names = [c.name.upper() for c in cursor.description]
        return lambda values: dict(zip(names, values))

    cur = dbapi_conn.cursor(row_factory=upper_row)
    cur.execute('SELECT 1 AS a')
    assert cur.fetchall() == [{'A': 1}]
    cur.execute('SELECT 2 AS b, 3 AS c WHERE %s', (True,))
    assert cur.fetchone() == {'B': 2, 'C': 3}
    assert seen == [(cur, ['a']), (cur, ['b', 'c'])]
    # A command without a result does not call the factory.
    cur.execute('SET search_path = public')
    assert len(seen) == 2


def test_namedtuple_row_and_executemany_returning_with_a_factory(dbapi_conn: Connection,
                                                                 table: str):
    cur = dbapi_conn.cursor(row_factory=mypgdriver.rows.namedtuple_row)
    cur.executemany('INSERT INTO dbapi_t (id, name) VALUES (%s, %s) RETURNING id, name',
                    [(1, 'a'), (2, 'b')], returning=True)
    first = cur.fetchone()
    assert (first.id, first.name) == (1, 'a')
    assert cur.nextset() is True
    assert cur.fetchall()[0]._asdict() == {'id': 2, 'name': 'b'}
    cur.row_factory = mypgdriver.rows.dict_row
    cur.executemany('INSERT INTO dbapi_t (id) VALUES (%s) RETURNING id', [(3,)],
                    returning=True)
    assert cur.fetchall() == [{'id': 3}]

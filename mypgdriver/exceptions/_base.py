"""Base classes of the exception hierarchy, written by hand.

The per-SQLSTATE classes in ``_generated.py`` derive from ``PostgresError``
and ``PostgresLogMessage`` defined here; ``__init__.py`` joins both halves and
holds the factories that the protocol code calls.
"""

from __future__ import annotations

from typing import Any

from . import pep249

__all__ = (
    'PostgresMessage',
    'PostgresError',
    'FatalPostgresError',
    'UnknownPostgresError',
    'PostgresLogMessage',
    'InterfaceMessage',
    'InterfaceError',
    'InterfaceWarning',
    'ClientConfigurationError',
    'UnsupportedClientFeatureError',
    'UnsupportedServerFeatureError',
    'InternalClientError',
    'ProtocolError',
    'TargetServerAttributeNotMatched',
    'OutdatedSchemaCacheError',
    'PipelineAborted',
)


# ErrorResponse / NoticeResponse field type codes -> attribute names
# (PostgreSQL docs, "Error and Notice Message Fields").  Codes missing here
# are skipped: the protocol allows new field types to appear at any time.
FIELD_NAMES: dict[str, str] = {
    'S': 'severity',
    'V': 'severity_en',
    'C': 'sqlstate',
    'M': 'message',
    'D': 'detail',
    'H': 'hint',
    'P': 'position',
    'p': 'internal_position',
    'q': 'internal_query',
    'W': 'where',
    's': 'schema_name',
    't': 'table_name',
    'c': 'column_name',
    'd': 'data_type_name',
    'n': 'constraint_name',
    'F': 'server_source_filename',
    'L': 'server_source_line',
    'R': 'server_source_function',
}


# as_dict() keys that differ from the attribute names (asyncpg's names).
_AS_DICT_KEYS = {'where': 'context'}


def _with_detail_and_hint(text: str, detail: str | None, hint: str | None) -> str:
    # Same layout as psql, which is what asyncpg prints too.
    if detail:
        text += '\nDETAIL:  ' + detail
    if hint:
        text += '\nHINT:  ' + hint
    return text


class PostgresMessage:
    """Fields of a message sent by the server (an error, warning or notice).

    Every attribute is a ``str`` as the server sent it, or ``None`` when the
    server left that field out.  Subclasses set ``sqlstate`` as a class
    attribute; an instance built from a server message carries the code the
    server actually sent (which may be more specific than its class's).
    """

    sqlstate: str | None = None
    severity: str | None = None
    severity_en: str | None = None
    message: str | None = None
    detail: str | None = None
    hint: str | None = None
    position: str | None = None
    internal_position: str | None = None
    internal_query: str | None = None
    where: str | None = None
    schema_name: str | None = None
    table_name: str | None = None
    column_name: str | None = None
    data_type_name: str | None = None
    constraint_name: str | None = None
    server_source_filename: str | None = None
    server_source_line: str | None = None
    server_source_function: str | None = None
    #: The query text that was being run, when the client knows it.
    query: str | None = None

    @property
    def context(self) -> str | None:
        """The ``where`` field under the name asyncpg gives it."""
        return self.where

    @property
    def diag(self) -> Diagnostic:
        """The fields under the names psycopg (3 and 2) gives them: ``e.diag.message_primary``.

        For code moving from psycopg; the same values as this object's own
        attributes (``e.diag.constraint_name`` is ``e.constraint_name``).
        """
        return Diagnostic(self)

    @property
    def pgcode(self) -> str | None:
        """The SQLSTATE, under psycopg2's name (``e.pgcode``)."""
        return self.sqlstate

    @property
    def pgerror(self) -> str | None:
        """The message as psql prints it (``ERROR:  text`` and its DETAIL/HINT), as psycopg2's ``e.pgerror``."""
        if self.message is None:
            return None
        return _with_detail_and_hint(f'{self.severity or "ERROR"}:  {self.message}',
                                     self.detail, self.hint)

    def as_dict(self) -> dict[str, str]:
        """Return the server fields that are set, keyed by attribute name.

        The ``W`` field is keyed ``context``, the name asyncpg uses.
        """
        values = {}
        for name in FIELD_NAMES.values():
            value = getattr(self, name)
            if value is not None:
                values[_AS_DICT_KEYS.get(name, name)] = value
        return values

    def _fill(self, fields: dict[str, str], query: str | None) -> None:
        # Write to __dict__ directly: PostgresLogMessage forbids setattr,
        # and this skips per-attribute overhead on a hot path.
        state = self.__dict__
        for code, value in fields.items():
            name = FIELD_NAMES.get(code)
            if name is not None:
                state[name] = value
        if query is not None:
            state['query'] = query


class Diagnostic:
    """A server message's fields under psycopg's names (``e.diag``), read-only.

    psycopg 3's ``Diagnostic`` and psycopg2's ``Diagnostics`` have these
    attributes; each is a ``str`` or ``None`` as the server sent it.
    """

    __slots__ = ('_message',)

    #: psycopg's attribute name -> this driver's attribute name.
    NAMES = {
        'severity': 'severity',
        'severity_nonlocalized': 'severity_en',
        'sqlstate': 'sqlstate',
        'message_primary': 'message',
        'message_detail': 'detail',
        'message_hint': 'hint',
        'statement_position': 'position',
        'internal_position': 'internal_position',
        'internal_query': 'internal_query',
        'context': 'where',
        'schema_name': 'schema_name',
        'table_name': 'table_name',
        'column_name': 'column_name',
        'datatype_name': 'data_type_name',
        'constraint_name': 'constraint_name',
        'source_file': 'server_source_filename',
        'source_line': 'server_source_line',
        'source_function': 'server_source_function',
    }

    def __init__(self, message: PostgresMessage) -> None:
        self._message = message

    def __getattr__(self, name: str) -> str | None:
        own = Diagnostic.NAMES.get(name)
        if own is None:
            raise AttributeError(f'{type(self).__name__!r} object has no attribute {name!r}')
        value: str | None = getattr(self._message, own)
        return value

    def __dir__(self) -> list[str]:
        return sorted(Diagnostic.NAMES)

    def __repr__(self) -> str:
        return f'<Diagnostic sqlstate={self.sqlstate!r} message_primary={self.message_primary!r}>'


class PostgresError(PostgresMessage, pep249.DatabaseError):
    """Base class of every error reported by the PostgreSQL server.

    Also the DB-API's ``DatabaseError`` (see :mod:`mypgdriver.exceptions.pep249`).
    """

    def __str__(self) -> str:
        text = self.args[0] if self.args else (self.message or '')
        return _with_detail_and_hint(str(text), self.detail, self.hint)


class FatalPostgresError(PostgresError):
    """A server error after which the connection cannot be used.

    Kept for asyncpg compatibility; the factories never choose it by SQLSTATE.
    """


class UnknownPostgresError(FatalPostgresError):
    """An error with an SQLSTATE that no class describes.

    Kept for asyncpg compatibility: ``make_server_error`` falls back to the
    SQLSTATE class, then to ``PostgresError``, rather than to this class.
    """


class PostgresLogMessage(PostgresMessage):
    """A server message that is not an error: NOTICE, INFO, WARNING, ...

    Instances are immutable once built; ``str()`` gives ``"ClassName: text"``.
    """

    def __str__(self) -> str:
        return f'{type(self).__name__}: {self.message}'

    def __repr__(self) -> str:
        if isinstance(self, BaseException):
            return BaseException.__repr__(self)
        return f'<{type(self).__name__} sqlstate={self.sqlstate!r} message={self.message!r}>'

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f'instances of {type(self).__name__} are immutable')

    def __setstate__(self, state: dict[str, Any] | None) -> None:
        # Unpickling a PostgresWarning goes through BaseException.__setstate__,
        # which uses setattr and would hit the guard above.
        if state:
            self.__dict__.update(state)


class InterfaceMessage:
    """Mixin giving client-side errors and warnings ``detail`` and ``hint``."""

    detail: str | None
    hint: str | None
    args: tuple[Any, ...]

    def __init__(self, *, detail: str | None = None, hint: str | None = None) -> None:
        self.detail = detail
        self.hint = hint

    def __str__(self) -> str:
        text = self.args[0] if self.args else ''
        return _with_detail_and_hint(str(text), self.detail, self.hint)


class InterfaceError(InterfaceMessage, pep249.InterfaceError):
    """An error caused by improper use of the driver's API.

    Also the DB-API's ``InterfaceError`` (another class, of
    :mod:`mypgdriver.exceptions.pep249`).
    """

    def __init__(self, msg: str, *, detail: str | None = None,
                 hint: str | None = None) -> None:
        InterfaceMessage.__init__(self, detail=detail, hint=hint)
        Exception.__init__(self, msg)

    def with_msg(self, msg: str) -> InterfaceError:
        """Return a copy of this error with another message, same traceback."""
        copy = type(self)(msg, detail=self.detail, hint=self.hint)
        return copy.with_traceback(self.__traceback__)


class InterfaceWarning(InterfaceMessage, UserWarning):
    """A warning about improper use of the driver's API."""

    def __init__(self, msg: str, *, detail: str | None = None,
                 hint: str | None = None) -> None:
        InterfaceMessage.__init__(self, detail=detail, hint=hint)
        UserWarning.__init__(self, msg)


class ClientConfigurationError(InterfaceError, ValueError):
    """An invalid connection or client setting (DSN, option, environment)."""


class UnsupportedClientFeatureError(InterfaceError):
    """The requested feature is not supported by this driver."""


class UnsupportedServerFeatureError(InterfaceError):
    """The requested feature is not supported by the PostgreSQL server."""


class InternalClientError(pep249.InterfaceError):
    """An unexpected client-side failure not classified otherwise.

    A DB-API ``InterfaceError`` (:mod:`mypgdriver.exceptions.pep249`), not
    mypgdriver's (asyncpg's) ``InterfaceError``.
    """


class PipelineAborted(InterfaceMessage, pep249.OperationalError):
    """A pipelined statement that the server did not run: an earlier one of its pipeline failed.

    After an error the server skips every statement up to the pipeline's
    next sync point (PostgreSQL docs, "Pipelining"): each of them raises
    this, and the one that failed raises its own error.  A DB-API
    ``OperationalError``, as psycopg's ``errors.PipelineAborted``; not a
    ``PostgresError`` (the server sent no error for it).
    """

    def __init__(self, msg: str, *, detail: str | None = None,
                 hint: str | None = None) -> None:
        InterfaceMessage.__init__(self, detail=detail, hint=hint)
        Exception.__init__(self, msg)


class ProtocolError(InternalClientError):
    """The server sent something the protocol does not allow at this point."""


class TargetServerAttributeNotMatched(InternalClientError):
    """No host satisfied the requested ``target_session_attrs``."""


class OutdatedSchemaCacheError(InternalClientError):
    """A value could not be decoded because a type changed after preparing.

    ``schema_name``, ``data_type_name`` and ``position`` name the column
    whose type no longer matches the cached description.
    """

    def __init__(self, msg: str, *, schema: str | None = None,
                 data_type: str | None = None,
                 position: int | str | None = None) -> None:
        super().__init__(msg)
        self.schema_name = schema
        self.data_type_name = data_type
        self.position = position

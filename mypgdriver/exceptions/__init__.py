"""Exceptions raised by mypgdriver, named and arranged as asyncpg's.

Server errors are ``PostgresError`` subclasses, one per SQLSTATE, generated
from PostgreSQL's errcodes.txt (see ``tools/gen_errcodes.py``); a condition's
class derives from its SQLSTATE class's class, so ``UniqueViolationError`` is
an ``IntegrityConstraintViolationError`` is a ``PostgresError``.  Each carries
the ErrorResponse fields as attributes (``sqlstate``, ``detail``,
``constraint_name``...).

Notices and warnings from the server are ``PostgresLogMessage`` objects; those
with a warning SQLSTATE (classes 01 and 02) are ``PostgresWarning``
subclasses, which are also Python ``Warning``\\ s.

Errors the driver detects itself derive from ``InterfaceError`` (misuse of the
API, bad configuration) or ``InternalClientError`` (unexpected states).

As in asyncpg, ``DataError`` is the server's SQLSTATE 22000 class: it is also
what the driver raises for query arguments it cannot encode.

``make_server_error`` and ``make_server_message`` turn the fields of an
ErrorResponse or NoticeResponse into these objects; the protocol code calls
them.
"""

from __future__ import annotations

from . import _base, _generated, _hints, pep249

# Each star import comes before the import by name from the same module:
# mypy exports what a star import brings in (it reads no "__all__ +=
# _base.__all__"), but not a name that was imported by name first.
from ._base import *  # noqa: F401,F403
from ._base import (
    InterfaceError,
    PostgresError,
    PostgresLogMessage,
    UnsupportedClientFeatureError,
)
from ._generated import *  # noqa: F401,F403  (one class per SQLSTATE)
from ._generated import (
    ERROR_CLASSES,
    WARNING_CLASSES,
    DataError,
    DuplicatePreparedStatementError,
    FeatureNotSupportedError,
    InvalidPasswordError,
    InvalidSQLStatementNameError,
    PostgresSyntaxError,
    PostgresWarning,
)


class InvalidCachedStatementError(FeatureNotSupportedError):
    """A prepared statement's plan became invalid after a schema change.

    The server reports this as SQLSTATE 0A000 ("cached plan must not change
    result type") when a table or type used by the statement was altered;
    re-preparing the statement fixes it.
    """


class UnsupportedArgumentError(UnsupportedClientFeatureError, DataError):
    """A query argument of a kind the driver cannot send for its type.

    An anonymous record (a tuple for a ``record`` parameter), or a Range for
    a range type whose subtype has no binary codec.  asyncpg raises
    ``UnsupportedClientFeatureError`` for these; it is also a ``DataError``,
    what every other argument that cannot be encoded raises, and its
    message names the argument.
    """


class PasswordRequiredError(InvalidPasswordError, InterfaceError):
    """The server asked for a password and none was given (or the callable returned None).

    Found before anything is sent, but an ``InvalidPasswordError`` like the
    server's refusal that asyncpg reports in this case; also an
    ``InterfaceError``.
    """

    def __init__(self, msg: str, *, detail: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(msg, detail=detail, hint=hint)
        self.message = msg      # where code written for the server's error reads it


class QueryParameterError(InterfaceError, pep249.ProgrammingError):
    """Placeholders and parameters that do not match (%s, %(name)s, :name styles).

    Raised before anything is sent, by the DB-API (:mod:`mypgdriver.dbapi`)
    and :mod:`mypgdriver.paramstyle`: a missing name, a wrong number of
    values, a mapping for ``%s`` or a sequence for ``%(name)s``, a stray
    ``%``.  A DB-API ``ProgrammingError``, and mypgdriver's
    ``InterfaceError`` (misuse of the API).
    """


# The same words as asyncpg's: applications (and SQLAlchemy's asyncpg
# dialect tests) match on them.
_INVALID_CACHED_STATEMENT_TEXT = (
    'cached statement plan is invalid due to a database schema or configuration change'
)

# Appended to the hint of errors about missing or duplicate prepared
# statements, whose usual cause is a pooler that hands each transaction to
# another server connection.
_POOLER_NOTE = (
    'NOTE: a connection pooler such as pgbouncer in "transaction" or '
    '"statement" pool_mode does not keep prepared statements with a client, '
    'unless it tracks them (pgbouncer 1.21+ with max_prepared_statements set). '
    'Enable that, use the pool of this driver instead, or connect with '
    'statement_cache_size=0 if the pooler must stay as it is.'
)


def _error_class(sqlstate: str | None) -> type[PostgresError]:
    if not sqlstate:
        return PostgresError
    cls = ERROR_CLASSES.get(sqlstate)
    if cls is None:
        # A code newer than our table still belongs to a known class.
        cls = ERROR_CLASSES.get(sqlstate[:2] + '000', PostgresError)
    return cls


def make_server_error(fields: dict[str, str], query: str | None = None) -> PostgresError:
    """Build the exception for an ErrorResponse.

    ``fields`` maps the one-letter field codes of the message ('C', 'M',
    'D', ...) to their values.  The class is the one for the exact SQLSTATE,
    else the one for its two-character class, else ``PostgresError``.
    ``query``, when given, is stored as the error's ``query`` attribute.
    """
    cls = _error_class(fields.get('C'))
    text = fields.get('M', '')

    if cls is FeatureNotSupportedError and fields.get('R') == 'RevalidateCachedQuery':
        # Rely on the server function name, not on the message, which is
        # translated according to lc_messages.
        cls = InvalidCachedStatementError
        text = _INVALID_CACHED_STATEMENT_TEXT

    error = cls(text)
    error._fill(fields, query)

    if cls is DuplicatePreparedStatementError or cls is InvalidSQLStatementNameError:
        hint = error.hint
        error.__dict__['hint'] = f'{hint}\n\n{_POOLER_NOTE}' if hint else _POOLER_NOTE
    elif cls is PostgresSyntaxError:
        # %s or IN $1 where the server stopped: code written for another driver.
        _hints.append_hint(error, _hints.syntax_error_hint(query, error.position))
    return error


def make_server_message(fields: dict[str, str], query: str | None = None) -> PostgresLogMessage:
    """Build the message object for a NoticeResponse.

    A warning SQLSTATE (classes 01 and 02) gives its ``PostgresWarning``
    subclass, a WARNING severity with another code gives ``PostgresWarning``,
    anything else a plain ``PostgresLogMessage`` carrying the code it was
    sent with.  (asyncpg returns an error instance for a notice with an
    error SQLSTATE, such as 42P07 from ``CREATE TABLE IF NOT EXISTS``; here
    every notice is a ``PostgresLogMessage``.)
    """
    sqlstate = fields.get('C') or ''
    cls = WARNING_CLASSES.get(sqlstate) or WARNING_CLASSES.get(sqlstate[:2] + '000')
    if cls is None:
        severity = fields.get('V') or fields.get('S') or ''
        cls = PostgresWarning if severity.upper() == 'WARNING' else PostgresLogMessage
    message: PostgresLogMessage
    if issubclass(cls, Warning):
        message = cls(fields.get('M', ''))
    else:
        message = cls()
    message._fill(fields, query)
    return message


# Built only in the forms the typing spec lists for a library's interface
# ("__all__ += submodule.__all__"), so that mypy and pyright see every name
# as exported; a computed tuple hid them all from type checkers.
__all__: list[str] = []
__all__ += _base.__all__
__all__ += _generated.__all__
__all__ += [
    'InvalidCachedStatementError',
    'PasswordRequiredError',
    'QueryParameterError',
    'UnsupportedArgumentError',
]

# Tracebacks and reprs then name the public module, not _base/_generated.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name

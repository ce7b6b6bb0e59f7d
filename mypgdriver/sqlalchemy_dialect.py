"""The asyncio SQLAlchemy dialect of mypgdriver.

Installed with ``pip install mypgdriver[sqlalchemy]`` and found by SQLAlchemy
through the ``sqlalchemy.dialects`` entry points, so an application only
changes its engine URL::

    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("postgresql+mypgdriver://user:pw@host/db")

``create_async_engine()`` with ``postgresql+mypgdriver`` picks this dialect
(the DB-API dialect's ``get_async_dialect_cls()``, in
:mod:`mypgdriver.sqlalchemy_sync`, which ``create_engine()`` uses), and
``postgresql+mypgdriver_async`` names it whichever function is called.

mypgdriver follows asyncpg's API, so the dialect is SQLAlchemy's own asyncpg
dialect (``sqlalchemy.dialects.postgresql.asyncpg``: its SQL compilation,
type adaptation, transactions, statement cache and reflection) with the
driver swapped and these parts replaced:

* **Exceptions.** Driver errors are sorted into the PEP 249 classes by
  SQLSTATE class (22 -> ``DataError``, 08/53/57/40... -> ``OperationalError``,
  0A -> ``NotSupportedError``...), so SQLAlchemy raises
  ``sqlalchemy.exc.DataError``, ``OperationalError``... where the asyncpg
  dialect raises the generic ``sqlalchemy.exc.DBAPIError``.  It never imports
  asyncpg (SQLAlchemy's asyncpg dialect does, to map its errors).
* **Disconnects** are recognised from the error itself (a connection error,
  an administrator's shutdown, a closed connection), not only from the
  connection's state afterwards, so the pool discards the connection.
* **Pool pre-ping** is one round trip (an empty simple query) instead of
  three (BEGIN, a prepared ``;``, ROLLBACK); a simple query needs no named
  statement and is safe through poolers in transaction mode.
* **Server-side cursors** (``stream_results``/``yield_per``) fetch in batches
  that grow from ``arraysize`` to 1000 rows, so a long result costs fewer
  round trips than the asyncpg dialect's fixed 50.

SQLAlchemy is not a dependency of mypgdriver: importing ``mypgdriver`` does
not import this module.  Works with SQLAlchemy 2.0 (2.0.44 or newer) and 2.1;
the differences between their asyncpg adapters are handled here, each where
it arises (see docs/guide/sqlalchemy.rst).
"""
from __future__ import annotations

import re
from typing import Any, Callable, cast

import sqlalchemy
from sqlalchemy import util
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg
from sqlalchemy.util import concurrency as sa_concurrency

import mypgdriver
from mypgdriver import exceptions as pgexc

#: The oldest SQLAlchemy the dialect runs on: 2.0.44 gave the asyncpg
#: adapter the terminate support that the dialect extends.
OLDEST_SQLALCHEMY = (2, 0, 44)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r'\d+', version)[:3])


# Checked before anything below relies on 2.0's adapter classes (SQLAlchemy
# 1.4 has an asyncpg dialect too, with other classes).
if _release(sqlalchemy.__version__) < OLDEST_SQLALCHEMY:
    raise ImportError(
        f'postgresql+mypgdriver needs SQLAlchemy 2.0.44 or newer (2.0 or 2.1), found '
        f'SQLAlchemy {sqlalchemy.__version__}: pip install "mypgdriver[sqlalchemy]"')

__all__ = (
    'MyPgDriverDBAPI', 'PGDialectAsync_mypgdriver', 'PGDialect_mypgdriver', 'dialect',
    'Error', 'Warning', 'InterfaceError', 'DatabaseError', 'InternalError', 'OperationalError',
    'ProgrammingError', 'IntegrityError', 'DataError', 'NotSupportedError',
)

#: SQLAlchemy 2.1 runs a coroutine from synchronous code with ``await_()``;
#: 2.0 calls it ``await_only()`` and also has ``await_fallback()`` for its
#: (deprecated) ``async_fallback`` mode.  2.0 builds an adapted connection
#: with its constructor after awaiting the driver's connect(); 2.1 with the
#: ``create()`` coroutine, which also translates connection errors.
SQLALCHEMY_2_0 = not hasattr(sa_concurrency, 'await_')
_await: Callable[[Any], Any] = getattr(
    sa_concurrency, 'await_only' if SQLALCHEMY_2_0 else 'await_')

#: Server-side cursor batches start at ``arraysize`` (but at least this) ...
_SS_FIRST_BATCH = 50
#: ... and double up to this many rows per round trip.
_SS_MAX_BATCH = 1000

_Adapter = sa_asyncpg.AsyncAdapt_asyncpg_dbapi


def _adapter_class(name: str) -> tuple[type[Exception], ...]:
    """The asyncpg adapter's exception class `name` as a base class, if it has one.

    SQLAlchemy 2.1's adapter has classes for integrity violations
    (``UniqueViolationError``...) that 2.0's lacks, and 2.0.44 lacks
    ``InternalClientError``; ours exist on every release.
    """
    cls = getattr(_Adapter, name, None)
    return () if cls is None else (cls,)


# The PEP 249 exception classes SQLAlchemy wraps (``exc.IntegrityError.orig``
# is one of them).  They are subclasses of the asyncpg adapter's, so that the
# adapter's own code recognises them, but live here: SQLAlchemy names the
# class in every error message ("(mypgdriver.sqlalchemy_dialect.IntegrityError)
# ..."), and users' logs should not name asyncpg's dialect.  The driver's
# error is the ``__cause__`` (and, on SQLAlchemy 2.1, ``orig``).

class Error(_Adapter.Error):
    """Base class of the errors the dialect raises for the driver's."""

    @property
    def driver_exception(self) -> Exception:
        """The driver's exception (SQLAlchemy 2.1's attribute, here on 2.0 too)."""
        # 2.1 passes the driver's error as `orig`; both raise it as the cause
        error = getattr(self, 'orig', None) or self.__cause__
        if not isinstance(error, Exception):
            raise ValueError(f'{type(self).__name__} was not raised for a driver error')
        return error


class Warning(_Adapter.Warning):  # noqa: A001 (PEP 249's name)
    """PEP 249's Warning (never raised by mypgdriver)."""


class InterfaceError(_Adapter.InterfaceError, Error):
    """Misuse of the driver (a closed connection, a bad argument)."""


class DatabaseError(_Adapter.DatabaseError, Error):
    """An error reported by the server."""


class InternalError(_Adapter.InternalError, DatabaseError):
    """Transaction and cursor states, routines (SQLSTATE 24, 25, 2B, 2D, 39, 3B, P0)."""


class OperationalError(_Adapter.OperationalError, DatabaseError):
    """Connections, resources, serialization failures (SQLSTATE 08, 53, 57, 40...)."""


class ProgrammingError(_Adapter.ProgrammingError, DatabaseError):
    """Syntax errors and access rule violations (SQLSTATE 42, 3D, 3F, 26, 34, 44)."""


class IntegrityError(_Adapter.IntegrityError, DatabaseError):
    """Integrity constraint violations (SQLSTATE 23)."""


class RestrictViolationError(*_adapter_class('RestrictViolationError'), IntegrityError):  # type: ignore[misc]
    """23001."""


class NotNullViolationError(*_adapter_class('NotNullViolationError'), IntegrityError):  # type: ignore[misc]
    """23502."""


class ForeignKeyViolationError(*_adapter_class('ForeignKeyViolationError'), IntegrityError):  # type: ignore[misc]
    """23503."""


class UniqueViolationError(*_adapter_class('UniqueViolationError'), IntegrityError):  # type: ignore[misc]
    """23505."""


class CheckViolationError(*_adapter_class('CheckViolationError'), IntegrityError):  # type: ignore[misc]
    """23514."""


class ExclusionViolationError(*_adapter_class('ExclusionViolationError'), IntegrityError):  # type: ignore[misc]
    """23P01."""


class DataError(_Adapter.DataError, DatabaseError):
    """Data exceptions (SQLSTATE 22), and arguments the driver cannot encode."""


class NotSupportedError(_Adapter.NotSupportedError, DatabaseError):
    """Features not supported (SQLSTATE 0A)."""


class InternalServerError(_Adapter.InternalServerError, InternalError):
    """SQLSTATE XX."""


class InternalClientError(*_adapter_class('InternalClientError'), InternalError):  # type: ignore[misc]
    """An internal error of the driver."""


class InvalidCachedStatementError(_Adapter.InvalidCachedStatementError, NotSupportedError):
    """A prepared statement's result types changed: the dialect clears its caches."""

    def __init__(self, message: str, error: Exception | None = None) -> None:
        # The adapter appends its note ("... will now invalidate all prepared
        # caches ...") to the message; on SQLAlchemy 2.0 the message also
        # holds the driver error's DETAIL and HINT lines: the note goes
        # after the first line, where applications (and SQLAlchemy's tests)
        # look for it.
        first, newline, rest = message.partition('\n')
        super().__init__(first)
        if rest:
            self.args = (f'{self.args[0]}{newline}{rest}', *self.args[1:])
        # The adapter's class drops the driver's error (2.0's takes none):
        # keep it, with its detail and SQLSTATE.
        self.orig = error
        self.detail = getattr(error, 'detail', None)
        self.pgcode = self.sqlstate = getattr(error, 'sqlstate', None)


class MyPgDriverDBAPI(_Adapter):
    """The PEP 249 module SQLAlchemy sees: mypgdriver behind asyncpg's adapter.

    The adapter keeps the name ``asyncpg`` for the wrapped module (the asyncpg
    dialect's type adapters read ``dbapi.asyncpg.Range`` and ``BitString``);
    mypgdriver has the same names.
    """

    # this module's classes in place of the adapter's (see above); SQLAlchemy
    # reads them from here (``dbapi.IntegrityError``)
    Error = Error  # type: ignore[misc,assignment]
    Warning = Warning  # type: ignore[misc,assignment]
    InterfaceError = InterfaceError  # type: ignore[misc,assignment]
    DatabaseError = DatabaseError  # type: ignore[misc,assignment]
    InternalError = InternalError  # type: ignore[misc,assignment]
    OperationalError = OperationalError  # type: ignore[misc,assignment]
    ProgrammingError = ProgrammingError  # type: ignore[misc,assignment]
    IntegrityError = IntegrityError  # type: ignore[misc,assignment]
    RestrictViolationError = RestrictViolationError  # type: ignore[misc,assignment]
    NotNullViolationError = NotNullViolationError  # type: ignore[misc,assignment]
    ForeignKeyViolationError = ForeignKeyViolationError  # type: ignore[misc,assignment]
    UniqueViolationError = UniqueViolationError  # type: ignore[misc,assignment]
    CheckViolationError = CheckViolationError  # type: ignore[misc,assignment]
    ExclusionViolationError = ExclusionViolationError  # type: ignore[misc,assignment]
    DataError = DataError  # type: ignore[misc,assignment]
    NotSupportedError = NotSupportedError  # type: ignore[misc,assignment]
    InternalServerError = InternalServerError  # type: ignore[misc,assignment]
    InternalClientError = InternalClientError  # type: ignore[misc,assignment]
    InvalidCachedStatementError = InvalidCachedStatementError  # type: ignore[misc,assignment]

    def __init__(self, driver_module: Any = mypgdriver) -> None:
        super().__init__(driver_module)

    @util.memoized_property
    def _asyncpg_error_translate(self) -> dict:
        # The asyncpg adapter walks an error's MRO and takes the first class
        # found here, so a precise class must be listed as well as its SQLSTATE
        # class. PostgreSQL's SQLSTATE classes (Appendix A, "PostgreSQL Error
        # Codes") are sorted into PEP 249's categories as libpq-based drivers do.
        translate = {
            pgexc.PostgresError: self.DatabaseError,
            pgexc.InterfaceError: self.InterfaceError,
            pgexc.InternalClientError: self.InternalClientError,
            # a type changed under a prepared statement: the dialect clears
            # its statement and type caches on this class
            pgexc.OutdatedSchemaCacheError: self.InvalidCachedStatementError,
            pgexc.InvalidCachedStatementError: self.InvalidCachedStatementError,
            pgexc.InternalServerError: self.InternalServerError,
            # class 08: connection exceptions; 53, 54, 55, 57, 58, F0: the
            # server's resources, limits, state, operator and system; 40:
            # serialization failures and deadlocks (retry the transaction);
            # 28: authorization
            pgexc.PostgresConnectionError: self.OperationalError,
            pgexc.InsufficientResourcesError: self.OperationalError,
            pgexc.ProgramLimitExceededError: self.OperationalError,
            pgexc.ObjectNotInPrerequisiteStateError: self.OperationalError,
            pgexc.OperatorInterventionError: self.OperationalError,
            pgexc.PostgresSystemError: self.OperationalError,
            pgexc.ConfigFileError: self.OperationalError,
            pgexc.TransactionRollbackError: self.OperationalError,
            pgexc.InvalidAuthorizationSpecificationError: self.OperationalError,
            # 22: data exceptions (also what the driver raises for arguments
            # it cannot encode)
            pgexc.DataError: self.DataError,
            # 23: integrity constraint violations
            pgexc.IntegrityConstraintViolationError: self.IntegrityError,
            pgexc.RestrictViolationError: self.RestrictViolationError,
            pgexc.NotNullViolationError: self.NotNullViolationError,
            pgexc.ForeignKeyViolationError: self.ForeignKeyViolationError,
            pgexc.UniqueViolationError: self.UniqueViolationError,
            pgexc.CheckViolationError: self.CheckViolationError,
            pgexc.ExclusionViolationError: self.ExclusionViolationError,
            # 42: syntax errors and access rule violations; 3D, 3F: unknown
            # database or schema; 44: WITH CHECK OPTION; 26, 34: unknown
            # statement or cursor names
            pgexc.SyntaxOrAccessError: self.ProgrammingError,
            pgexc.InvalidCatalogNameError: self.ProgrammingError,
            pgexc.InvalidSchemaNameError: self.ProgrammingError,
            pgexc.WithCheckOptionViolationError: self.ProgrammingError,
            pgexc.InvalidSQLStatementNameError: self.ProgrammingError,
            pgexc.InvalidCursorNameError: self.ProgrammingError,
            # 0A: feature not supported
            pgexc.FeatureNotSupportedError: self.NotSupportedError,
            # 24, 25, 2B, 2D, 39, 3B, P0: cursor and transaction states,
            # routines and PL/pgSQL
            pgexc.InvalidCursorStateError: self.InternalError,
            pgexc.InvalidTransactionStateError: self.InternalError,
            pgexc.DependentPrivilegeDescriptorsStillExistError: self.InternalError,
            pgexc.InvalidTransactionTerminationError: self.InternalError,
            pgexc.ExternalRoutineInvocationError: self.InternalError,
            pgexc.SavepointError: self.InternalError,
            pgexc.PLPGSQLError: self.InternalError,
        }
        return translate


class _MyPgDriverCursor(sa_asyncpg.AsyncAdapt_asyncpg_cursor):
    __slots__ = ()


class _MyPgDriverServerSideCursor(sa_asyncpg.AsyncAdapt_asyncpg_ss_cursor):
    """Rows of a portal, fetched in batches that double up to _SS_MAX_BATCH."""

    __slots__ = ('_batch',)

    def __init__(self, adapt_connection: Any) -> None:
        super().__init__(adapt_connection)
        self._batch = 0

    def _buffer_rows(self) -> None:
        assert self._cursor is not None
        if self._batch == 0:
            self._batch = min(max(self.arraysize, _SS_FIRST_BATCH), _SS_MAX_BATCH)
        else:
            self._batch = min(self._batch * 2, _SS_MAX_BATCH)
        wait = cast(_MyPgDriverConnection, self._adapt_connection).wait_for
        self._rowbuffer.extend(wait(self._cursor.fetch(self._batch)))


class _MyPgDriverConnection(sa_asyncpg.AsyncAdapt_asyncpg_connection):
    _cursor_cls = _MyPgDriverCursor
    _ss_cursor_cls = _MyPgDriverServerSideCursor

    __slots__ = ()

    #: Runs a coroutine from SQLAlchemy's synchronous side (in its greenlet).
    wait_for = staticmethod(_await)

    @classmethod
    def open(cls, dbapi: MyPgDriverDBAPI, connecting: Any,
             **kwargs: Any) -> _MyPgDriverConnection:
        """The adapted connection for the driver's connect() coroutine `connecting`."""
        if SQLALCHEMY_2_0:
            # 2.0's asyncpg dialect lets connection errors through untranslated
            return cls(dbapi, cls.wait_for(connecting), **kwargs)
        return cast(_MyPgDriverConnection, cls.wait_for(cls.create(dbapi, connecting, **kwargs)))

    def cursor(self, server_side: bool = False) -> Any:
        # SQLAlchemy 2.0's adapter names its cursor classes here (2.1 reads
        # _cursor_cls and _ss_cursor_cls)
        return self._ss_cursor_cls(self) if server_side else self._cursor_cls(self)

    async def _async_ping(self) -> None:
        # One simple-protocol Query message: no prepared statement, and it
        # works inside or outside a transaction (an empty query answers
        # EmptyQueryResponse without touching the transaction state).
        # SQLAlchemy types _connection with a protocol of the asyncpg methods
        # its dialect calls, which has no execute(); ours is a Connection.
        await cast(mypgdriver.Connection, self._connection).execute(';')

    def _terminate_handled_exceptions(self) -> tuple:
        # closing a connection that the server already dropped may raise the
        # driver's InterfaceError as well as a PostgresError
        return super()._terminate_handled_exceptions() + (pgexc.InterfaceError,)


if SQLALCHEMY_2_0:
    class _MyPgDriverFallbackConnection(_MyPgDriverConnection):
        """SQLAlchemy 2.0's ``async_fallback=true`` mode (deprecated there, gone in 2.1)."""

        __slots__ = ()

        # (getattr: SQLAlchemy 2.1, which type checkers see, has no await_fallback)
        wait_for = await_ = staticmethod(getattr(sa_concurrency, 'await_fallback'))  # noqa: B009


class _MyPgDriverAdaptedDBAPI(MyPgDriverDBAPI):
    def connect(self, *args: Any, **kwargs: Any) -> _MyPgDriverConnection:
        connection_class = _MyPgDriverConnection
        if SQLALCHEMY_2_0 and util.asbool(kwargs.pop('async_fallback', False)):
            connection_class = _MyPgDriverFallbackConnection
        creator = kwargs.pop('async_creator_fn', self.asyncpg.connect)
        cache_size = kwargs.pop('prepared_statement_cache_size', 100)
        name_func = kwargs.pop('prepared_statement_name_func', None)
        return connection_class.open(
            self,
            creator(*args, **kwargs),
            prepared_statement_cache_size=cache_size,
            prepared_statement_name_func=name_func,
        )


def _is_disconnect_error(error: BaseException | None) -> bool:
    if isinstance(error, (pgexc.PostgresConnectionError, pgexc.CannotConnectNowError,
                          pgexc.AdminShutdownError, pgexc.CrashShutdownError,
                          ConnectionError)):
        return True
    return isinstance(error, pgexc.InterfaceError) and 'connection is closed' in str(error)


class PGDialectAsync_mypgdriver(sa_asyncpg.PGDialect_asyncpg):
    """``postgresql+mypgdriver_async``: SQLAlchemy's asyncpg dialect driving mypgdriver.

    Also what ``create_async_engine("postgresql+mypgdriver://...")`` runs on.
    """

    driver = 'mypgdriver'
    supports_statement_cache = True

    # SQLAlchemy's DBAPIModule protocol declares its exception classes as
    # nested classes of its own, which no adapter class can match
    # structurally (its asyncpg dialect leaves this method unannotated).
    @classmethod
    def import_dbapi(cls) -> MyPgDriverDBAPI:  # type: ignore[override]
        return _MyPgDriverAdaptedDBAPI(mypgdriver)

    @classmethod
    def load_provisioning(cls) -> None:
        # SQLAlchemy's test suite imports "<dialect package>.provision" for
        # its database set-up hooks; ours are PostgreSQL's.
        sa_asyncpg.PGDialect_asyncpg.load_provisioning()

    def is_disconnect(self, e: Exception, connection: Any, cursor: Any) -> bool:
        if connection is not None and connection._connection.is_closed():
            return True
        # the adapted error's .orig (its driver_exception property raises
        # when there is none)
        driver_error = getattr(e, 'orig', None) or e.__cause__
        return _is_disconnect_error(driver_error) or _is_disconnect_error(e)

    def do_ping(self, dbapi_connection: Any) -> bool:
        dbapi_connection.ping()
        return True


#: The class's name before ``postgresql+mypgdriver`` became the DB-API
#: dialect's URL (it is still this asyncio dialect).
PGDialect_mypgdriver = PGDialectAsync_mypgdriver

dialect = PGDialectAsync_mypgdriver

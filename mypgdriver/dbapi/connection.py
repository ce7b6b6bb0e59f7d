"""The DB-API connection: transactions as PEP 249 wants them, over a sync Connection.

PEP 249 connections are not in autocommit mode: the first statement opens a
transaction (BEGIN) that lasts until commit() or rollback().  The
transaction is the connection's, not a thread's: threads sharing the
connection (``threadsafety = 2``) run their statements one at a time, in
the same transaction, as with psycopg.
"""
from __future__ import annotations

import contextlib
import enum
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union, overload

from mypgdriver import exceptions, sync
from mypgdriver.dbapi.cursor import Cursor, Params
from mypgdriver.exceptions import pep249
from mypgdriver.protocol.statement import StrAsTextArguments, refused_argument
from mypgdriver.rows import Column, RowFactory, description_of, tuple_row
from mypgdriver.sql import quote_ident
from mypgdriver.sync.connection import async_connection, call_runner

if TYPE_CHECKING:
    from mypgdriver.dbapi.server_cursor import ServerCursor
    from mypgdriver.prepared import PreparedStatement
    from mypgdriver.protocol.record import Record

__all__ = ('Connection', 'IsolationLevel', 'Transaction')

#: How many prepared statements a connection keeps for execute() (the one
#: prepared longest ago is dropped first; its server statement is closed
#: unless the connection's statement cache still holds it).
STATEMENTS_KEPT = 256


class IsolationLevel(enum.IntEnum):
    """Transaction isolation levels (psycopg 3's values)."""

    READ_UNCOMMITTED = 1
    READ_COMMITTED = 2
    REPEATABLE_READ = 3
    SERIALIZABLE = 4


class _Statement:
    """A prepared statement of the connection's cache and its cursor description."""

    __slots__ = ('statement', 'state', 'description', 'param_count')

    def __init__(self, statement: PreparedStatement[Record]) -> None:
        self.statement = statement
        self.describe()

    def describe(self) -> None:
        """Take the description from the statement as it is prepared now."""
        state = self.statement._state
        self.state = state
        self.param_count = len(state.param_oids)
        self.description: Optional[tuple[Column, ...]] = (
            description_of(state).description if state.has_rows else None)


class Transaction:
    """A ``with conn.transaction():`` block (psycopg 3's meaning).

    The outermost block of a connection with no transaction open sends
    BEGIN and, at its end, COMMIT (ROLLBACK if the block raised); a block
    opened inside a transaction (nested, or after statements that opened
    the DB-API's implicit transaction) is a savepoint, released at its end
    or rolled back to if the block raised.
    """

    __slots__ = ('connection', 'savepoint_name', 'force_rollback')

    def __init__(self, connection: Connection, savepoint_name: Optional[str],
                 force_rollback: bool) -> None:
        self.connection = connection
        #: The savepoint's name when the block is a savepoint, else None.
        self.savepoint_name = savepoint_name
        #: Roll back at the end even without an exception (tests, dry runs).
        self.force_rollback = force_rollback


class Connection:
    """A DB-API connection (PEP 249) to a PostgreSQL server; see :func:`mypgdriver.dbapi.connect`.

    Runs on a :class:`mypgdriver.sync.Connection` (:attr:`sync_connection`).
    ``with connect(...) as conn:`` commits at the end of the block (rolls
    back if it raised) and then closes the connection, as psycopg 3 does
    (psycopg2's ``with conn`` committed but left the connection open).
    """

    Warning = pep249.Warning
    Error = pep249.Error
    InterfaceError = pep249.InterfaceError
    DatabaseError = pep249.DatabaseError
    DataError = pep249.DataError
    OperationalError = pep249.OperationalError
    IntegrityError = pep249.IntegrityError
    InternalError = pep249.InternalError
    ProgrammingError = pep249.ProgrammingError
    NotSupportedError = pep249.NotSupportedError

    def __init__(self, connection: sync.Connection, *, autocommit: bool = False,
                 row_factory: Optional[RowFactory[Any]] = None) -> None:
        """Wrap an open sync connection (use :func:`mypgdriver.dbapi.connect`)."""
        self._conn = connection
        self._aconn = async_connection(connection)
        self._run = call_runner(connection)
        # Serialises the DB-API calls of threads sharing the connection
        # (the sync core serialises each call; this keeps a BEGIN with its
        # statement, and a COPY block, whole).
        self._lock = threading.RLock()
        self._autocommit = bool(autocommit)
        self._isolation_level: Optional[IsolationLevel] = None
        self._read_only: Optional[bool] = None
        self._deferrable: Optional[bool] = None
        self._blocks: list[Transaction] = []
        self._savepoints = 0
        self._statements: dict[str, _Statement] = {}
        #: The row factory of new cursors (tuples by default).
        self.row_factory: RowFactory[Any] = row_factory if row_factory is not None else tuple_row
        #: The number of rows a server-side cursor fetches per round trip when iterated.
        self.itersize = 100

    def __repr__(self) -> str:
        return f'<mypgdriver.dbapi.Connection {"closed" if self.closed else "open"}>'

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self.closed:
            return
        try:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()

    # --- attributes -----------------------------------------------------------------------

    @property
    def sync_connection(self) -> sync.Connection:
        """The :class:`mypgdriver.sync.Connection` under this one (the whole sync API)."""
        return self._conn

    @property
    def closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self._aconn.is_closed()

    @property
    def autocommit(self) -> bool:
        """Whether each statement commits on its own (False by default, as PEP 249 says).

        May be changed only while no transaction is open.
        """
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        self._check_no_transaction('autocommit')
        self._autocommit = bool(value)

    @property
    def isolation_level(self) -> Optional[IsolationLevel]:
        """The isolation level of the next transactions (None: the server's default)."""
        return self._isolation_level

    @isolation_level.setter
    def isolation_level(self, value: Optional[Union[IsolationLevel, int]]) -> None:
        self._check_no_transaction('isolation_level')
        self._isolation_level = None if value is None else IsolationLevel(value)

    @property
    def read_only(self) -> Optional[bool]:
        """Whether the next transactions are READ ONLY (None: the server's default)."""
        return self._read_only

    @read_only.setter
    def read_only(self, value: Optional[bool]) -> None:
        self._check_no_transaction('read_only')
        self._read_only = None if value is None else bool(value)

    @property
    def deferrable(self) -> Optional[bool]:
        """Whether the next transactions are DEFERRABLE (None: the server's default)."""
        return self._deferrable

    @deferrable.setter
    def deferrable(self, value: Optional[bool]) -> None:
        self._check_no_transaction('deferrable')
        self._deferrable = None if value is None else bool(value)

    @property
    def server_version(self) -> int:
        """The server's version as libpq gives it (e.g. 150004 for 15.4)."""
        version = self._conn.get_server_version()
        return version.major * 10000 + (version.micro if version.major < 10 else version.minor)

    # --- cursors --------------------------------------------------------------------------

    @overload
    def cursor(self, name: None = None, *, row_factory: Optional[RowFactory[Any]] = None,
               scrollable: None = None, withhold: bool = False) -> Cursor: ...

    @overload
    def cursor(self, name: str, *, row_factory: Optional[RowFactory[Any]] = None,
               scrollable: Optional[bool] = None, withhold: bool = False) -> ServerCursor: ...

    def cursor(self, name: Optional[str] = None, *, row_factory: Optional[RowFactory[Any]] = None,
               scrollable: Optional[bool] = None, withhold: bool = False) -> Cursor:
        """A new cursor: client-side, or server-side when `name` is given.

        A server-side cursor (:class:`~mypgdriver.dbapi.ServerCursor`)
        DECLAREs a cursor `name` on the server at its execute() and fetches
        its rows in batches; `scrollable` (SCROLL / NO SCROLL, else the
        server's default) and `withhold` (WITH HOLD: usable after commit)
        apply to it only.
        """
        if self.closed:
            raise pep249.InterfaceError('the connection is closed')
        if name is not None:
            from mypgdriver.dbapi.server_cursor import ServerCursor

            return ServerCursor(self, name, row_factory=row_factory, scrollable=scrollable,
                                withhold=withhold)
        if scrollable is not None or withhold:
            raise pep249.ProgrammingError(
                'scrollable and withhold apply to server-side cursors: give a name')
        return Cursor(self, row_factory=row_factory)

    def execute(self, query: str, params: Optional[Params] = None, *,
                prepare: Optional[bool] = None) -> Cursor:
        """Run `query` on a new cursor and return the cursor (psycopg 3's shortcut)."""
        return self.cursor().execute(query, params, prepare=prepare)

    # --- transactions ---------------------------------------------------------------------

    def commit(self) -> None:
        """Commit the open transaction (nothing to do when none is open)."""
        self._end_transaction('COMMIT', 'commit')

    def rollback(self) -> None:
        """Roll back the open transaction (nothing to do when none is open)."""
        self._end_transaction('ROLLBACK', 'rollback')

    @contextlib.contextmanager
    def transaction(self, savepoint_name: Optional[str] = None,
                    force_rollback: bool = False) -> Iterator[Transaction]:
        """A block committed on success and rolled back if it raises (psycopg 3's meaning).

        With no transaction open (autocommit, or nothing run since the last
        commit) it is a transaction: BEGIN with this connection's isolation
        settings, COMMIT at the end.  Inside a transaction (nested blocks, or
        statements run before it outside autocommit) it is a savepoint
        (`savepoint_name`, or a generated one): released at the end, rolled
        back to if the block raised; the outer transaction goes on.
        commit() and rollback() are not allowed inside the block.
        """
        with self._lock:
            if self._in_transaction():
                if savepoint_name is None:
                    self._savepoints += 1
                    savepoint_name = f'_dbapi_sp_{self._savepoints}'
                self._run(self._aconn.execute(f'SAVEPOINT {quote_ident(savepoint_name)}'))
                block = Transaction(self, savepoint_name, force_rollback)
            else:
                self._begin()
                block = Transaction(self, None, force_rollback)
            self._blocks.append(block)
        try:
            yield block
        except BaseException:
            self._finish_block(block, commit=False)
            raise
        else:
            self._finish_block(block, commit=not force_rollback)

    def _finish_block(self, block: Transaction, *, commit: bool) -> None:
        with self._lock:
            if self._blocks and self._blocks[-1] is block:
                self._blocks.pop()
            if self.closed:
                return
            name = block.savepoint_name
            if name is None:
                self._run(self._aconn.execute('COMMIT' if commit else 'ROLLBACK'))
            elif commit:
                self._run(self._aconn.execute(f'RELEASE SAVEPOINT {quote_ident(name)}'))
            else:
                quoted = quote_ident(name)
                self._run(self._aconn.execute(
                    f'ROLLBACK TO SAVEPOINT {quoted}; RELEASE SAVEPOINT {quoted}'))

    # --- closing --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; an open transaction is rolled back by the server."""
        if not self.closed:
            with self._lock:
                self._statements.clear()
                self._conn.close()

    def reload_schema_state(self) -> None:
        """Forget what is known of the schema: prepared statements, their descriptions, types.

        After DDL run by another connection (a column's type changed, a
        type created) or a schema migration: the statements this
        connection prepared for execute() are dropped (prepared again when
        next used) and :meth:`mypgdriver.sync.Connection.reload_schema_state`
        clears the core's statement cache and type codecs.
        """
        with self._lock:
            if self.closed:
                raise pep249.InterfaceError('the connection is closed')
            self._statements.clear()
            self._conn.reload_schema_state()

    def cancel(self) -> None:
        """Cancel the statement running on this connection (from another thread)."""
        self._conn.cancel()

    # --- internals ------------------------------------------------------------------------

    def _in_transaction(self) -> bool:
        return self._aconn.is_in_transaction()

    def _begin(self) -> None:
        """BEGIN with the isolation settings."""
        parts = ['BEGIN']
        if self._isolation_level is not None:
            parts.append('ISOLATION LEVEL ' + self._isolation_level.name.replace('_', ' '))
        if self._read_only is not None:
            parts.append('READ ONLY' if self._read_only else 'READ WRITE')
        if self._deferrable is not None:
            parts.append('DEFERRABLE' if self._deferrable else 'NOT DEFERRABLE')
        self._run(self._aconn.execute(' '.join(parts)))

    def _end_transaction(self, command: str, method: str) -> None:
        if self._blocks:
            raise pep249.ProgrammingError(
                f'{method}() is not allowed inside a transaction() block: the block '
                f'commits or rolls back itself at its end')
        with self._lock:
            if self.closed:
                raise pep249.InterfaceError('the connection is closed')
            if self._in_transaction():
                self._run(self._aconn.execute(command))

    def _check_no_transaction(self, attribute: str) -> None:
        if not self.closed and self._in_transaction():
            raise pep249.ProgrammingError(
                f'cannot change {attribute} while a transaction is open: commit() or '
                f'rollback() first')

    def _fetch_str_as_text(self, statement: PreparedStatement[Any], args: Sequence[Any],
                           rows_as: Any, refusal: exceptions.DataError) -> list[Any]:
        """After `statement`'s codecs refused one of `args`: its rows with the str bound as text.

        Called from the ``except`` of an execute()'s run.  A str that its
        parameter's binary codec refuses (``'42'`` for ``%s::int``) is
        bound as text instead, for the server's input function of the type,
        as psycopg binds every str: ``'42'`` gives 42, ``'abc'`` the
        server's InvalidTextRepresentation (22P02), which then fails an open
        transaction as any server error.  The refusal was raised before
        anything was sent (refused_argument() says so), so the statement
        runs once; a refused value that is not a str raises `refusal`.
        Only this error path pays for it: a run whose values the codecs
        take never gets here.
        """
        refused = refused_argument(refusal)
        if refused is None or not isinstance(args[refused], str):
            raise refusal
        try:
            return self._run(statement._fetch_arguments(StrAsTextArguments(args), rows_as))
        except BaseException as outcome:
            # The server's answer stands on its own: not an error "during
            # handling" of the refusal, which was only the cue to send as text.
            raise outcome from None

    def _prepare(self, query: str) -> _Statement:
        """The cached statement of `query`, prepared now if needed (the oldest dropped)."""
        statements = self._statements
        entry = statements.get(query)
        if entry is not None:
            return entry
        entry = _Statement(self._run(self._aconn.prepare(query)))
        statements[query] = entry
        if len(statements) > STATEMENTS_KEPT:
            del statements[next(iter(statements))]
        return entry

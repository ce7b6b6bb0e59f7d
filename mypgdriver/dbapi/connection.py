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
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Optional, Union, overload

from mypgdriver import sync
from mypgdriver.dbapi.cursor import Cursor, Params
from mypgdriver.dbapi.link import ConnectionLink
from mypgdriver.dbapi.pipeline import Pipeline
from mypgdriver.exceptions import pep249
from mypgdriver.rows import RowFactory, tuple_row
from mypgdriver.sql import quote_ident

if TYPE_CHECKING:
    from mypgdriver.dbapi.server_cursor import ServerCursor

__all__ = ('Connection', 'IsolationLevel', 'Transaction')


class IsolationLevel(enum.IntEnum):
    """Transaction isolation levels (psycopg 3's values)."""

    READ_UNCOMMITTED = 1
    READ_COMMITTED = 2
    REPEATABLE_READ = 3
    SERIALIZABLE = 4


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
        #: What the cursors of this connection run their statements through.
        self.link = ConnectionLink(connection, autocommit)
        self._blocks: list[Transaction] = []
        self._savepoints = 0
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
        return self.link.is_closed()

    @property
    def autocommit(self) -> bool:
        """Whether each statement commits on its own (False by default, as PEP 249 says).

        May be changed only while no transaction is open.
        """
        return self.link.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        self._check_no_transaction('autocommit')
        self.link.autocommit = bool(value)

    @property
    def isolation_level(self) -> Optional[IsolationLevel]:
        """The isolation level of the next transactions (None: the server's default)."""
        return self.link.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: Optional[Union[IsolationLevel, int]]) -> None:
        self._check_no_transaction('isolation_level')
        self.link.isolation_level = None if value is None else IsolationLevel(value)

    @property
    def read_only(self) -> Optional[bool]:
        """Whether the next transactions are READ ONLY (None: the server's default)."""
        return self.link.read_only

    @read_only.setter
    def read_only(self, value: Optional[bool]) -> None:
        self._check_no_transaction('read_only')
        self.link.read_only = None if value is None else bool(value)

    @property
    def deferrable(self) -> Optional[bool]:
        """Whether the next transactions are DEFERRABLE (None: the server's default)."""
        return self.link.deferrable

    @deferrable.setter
    def deferrable(self, value: Optional[bool]) -> None:
        self._check_no_transaction('deferrable')
        self.link.deferrable = None if value is None else bool(value)

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

    def pipeline(self) -> Pipeline:
        """Pipeline mode (psycopg 3's): ``with conn.pipeline():`` queues the cursors' statements.

        Inside the block, a cursor's execute() (and executemany()) sends its
        statement without waiting for the answer; the cursor's fetch*(),
        ``description``, ``rowcount`` and ``statusmessage`` wait for that
        statement's own answer and raise its error.  Leaving the block (or
        ``p.sync()``) is a sync point: every answer is waited for, and the
        first error that no fetch asked for is raised.  After an error the
        server skips the statements behind it up to the sync point (their
        results raise :exc:`~mypgdriver.exceptions.PipelineAborted`).
        Outside autocommit the implicit BEGIN is queued too; commit() and
        rollback() run inside the pipeline.  COPY and server-side cursors
        are refused inside (NotSupportedError).  Blocks nest: an inner
        block's end is a sync point.  See docs/guide/pipeline.rst.
        """
        return Pipeline(self.link)

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
        with self.link.lock:
            if self._in_transaction():
                if savepoint_name is None:
                    self._savepoints += 1
                    savepoint_name = f'_dbapi_sp_{self._savepoints}'
                self.link.simple(f'SAVEPOINT {quote_ident(savepoint_name)}')
                block = Transaction(self, savepoint_name, force_rollback)
            else:
                self.link.begin()
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
        with self.link.lock:
            if self._blocks and self._blocks[-1] is block:
                self._blocks.pop()
            if self.closed:
                return
            name = block.savepoint_name
            if name is None:
                self.link.end_block('COMMIT' if commit else 'ROLLBACK')
            elif commit:
                self.link.simple(f'RELEASE SAVEPOINT {quote_ident(name)}')
            else:
                quoted = quote_ident(name)
                if self.link.pipeline is not None:
                    # (A pipeline takes one statement at a time.)
                    self.link.end_block(f'ROLLBACK TO SAVEPOINT {quoted}')
                    self.link.simple(f'RELEASE SAVEPOINT {quoted}')
                else:
                    self.link.simple(f'ROLLBACK TO SAVEPOINT {quoted}; RELEASE SAVEPOINT {quoted}')

    # --- closing --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; an open transaction is rolled back by the server."""
        if not self.closed:
            with self.link.lock:
                self._conn.close()

    def reload_schema_state(self) -> None:
        """Forget what is known of the schema: prepared statements, their descriptions, types.

        After DDL run by another connection (a column's type changed, a
        type created) or a schema migration:
        :meth:`mypgdriver.sync.Connection.reload_schema_state` clears the
        statement cache (the one execute() prepares its statements in: they
        are prepared again when next used) and the type codecs.
        """
        with self.link.lock:
            if self.closed:
                raise pep249.InterfaceError('the connection is closed')
            self._conn.reload_schema_state()

    def cancel(self) -> None:
        """Cancel the statement running on this connection (from another thread)."""
        self._conn.cancel()

    # --- internals ------------------------------------------------------------------------

    def _in_transaction(self) -> bool:
        return self.link.in_block()

    def _end_transaction(self, command: str, method: str) -> None:
        if self._blocks:
            raise pep249.ProgrammingError(
                f'{method}() is not allowed inside a transaction() block: the block '
                f'commits or rolls back itself at its end')
        with self.link.lock:
            if self.closed:
                raise pep249.InterfaceError('the connection is closed')
            if self._in_transaction():
                self.link.end_block(command)

    def _check_no_transaction(self, attribute: str) -> None:
        if not self.closed and self._in_transaction():
            raise pep249.ProgrammingError(
                f'cannot change {attribute} while a transaction is open: commit() or '
                f'rollback() first')

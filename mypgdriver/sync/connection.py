"""Connection of the sync API: the asyncio Connection, its calls driven without an event loop.

Every method is the asyncio method of the same name run to its end by the
connection's CallRunner (runner.py): the checks, deadlines, cancellation,
statement cache and transaction rules are the asyncio API's own code
(session.py), not a copy.  What is particular to sync code lives in small
modules next to this one: the lock and the refusal of re-entrant calls
(runner.py), cancel() from another thread (cancel.py), notifies()
(notifications.py), callbacks receiving this object (callbacks.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Optional,
    Protocol,
    Sequence,
    TypeVar,
    Union,
    overload,
)

from mypgdriver import exceptions
from mypgdriver._typing import ArgumentRow, RecordT, RowT
from mypgdriver.connection import LoggedQuery, PipelineStats
from mypgdriver.deadlines import check_timeout
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory
from mypgdriver.server_info import ConnectionSettings, ServerVersion
from mypgdriver.sync.callbacks import RelayTable, check_plain_callback
from mypgdriver.sync.cancel import cancel_running_call, shut_down_under_running_call
from mypgdriver.sync.cursor import CursorFactory
from mypgdriver.sync.notifications import Notification, NotificationBacklog
from mypgdriver.sync.prepared import PreparedStatement
from mypgdriver.sync.runner import CallRunner
from mypgdriver.sync.transaction import Transaction

if TYPE_CHECKING:
    from mypgdriver.connection import Connection as AsyncConnection
    from mypgdriver.sync.glue import SyncGlue

__all__ = ('Connection', 'CopySource', 'CopyOutput', 'ReadsBytes', 'WritesBytes')


class ReadsBytes(Protocol):
    """A binary file object read by COPY: ``read(n)`` returns up to `n` bytes, b'' at the end."""

    def read(self, size: int, /) -> bytes: ...


class WritesBytes(Protocol):
    """A binary file object written by COPY: ``write(data)`` is called with each chunk."""

    def write(self, data: bytes, /) -> object: ...


_Path = Union[str, bytes, 'os.PathLike[str]', 'os.PathLike[bytes]']
#: copy_to_table()'s `source`: a path, a binary file object, a bytearray or
#: memoryview holding the data, or an iterable of bytes-like chunks.
CopySource = Union[_Path, ReadsBytes, bytearray, memoryview,
                   Iterable[Union[bytes, bytearray, memoryview]]]
#: copy_from_table()/copy_from_query()'s `output`: a path, a binary file
#: object, or a function called with each chunk.
CopyOutput = Union[_Path, WritesBytes, Callable[[bytes], object]]

NotificationCallback = Callable[['Connection', int, str, str], object]
LogCallback = Callable[['Connection', exceptions.PostgresLogMessage], object]
TerminationCallback = Callable[['Connection'], object]


class Connection:
    """A blocking connection to a PostgreSQL server (see :func:`mypgdriver.sync.connect`).

    The methods are those of :class:`mypgdriver.Connection`, with the same
    arguments, results and exceptions, blocking instead of awaitable.  A
    connection may be shared by threads: their calls are serialized (one
    at a time, in the order a lock grants them); a call made from inside
    a callback that the connection is running raises InterfaceError.
    ``with connect(...) as conn:`` closes it at the end of the block.
    """

    __slots__ = ('_aconn', '_runner', '_run', '_notifications', '_listener_relays',
                 '_log_relays', '_termination_relays', '__weakref__')

    def __init__(self, aconn: AsyncConnection, glue: SyncGlue) -> None:
        """Wrap `aconn`, opened on `glue` (use :func:`mypgdriver.sync.connect`)."""
        self._aconn = aconn
        self._runner = CallRunner(glue)
        self._run = self._runner.run
        self._notifications = NotificationBacklog(glue)
        self._notifications.attach(aconn)
        self._listener_relays: RelayTable[Connection] = RelayTable(self)
        self._log_relays: RelayTable[Connection] = RelayTable(self)
        self._termination_relays: RelayTable[Connection] = RelayTable(self)

    def __repr__(self) -> str:
        state = 'closed' if self.is_closed() else 'open'
        return (f'<mypgdriver.sync.Connection {state} addr={self._aconn._addr!r} '
                f'pid={self.get_server_pid()}>')

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # --- information ---

    def get_server_pid(self) -> int:
        """The process ID of the server backend serving this connection."""
        return self._aconn.get_server_pid()

    def get_server_version(self) -> ServerVersion:
        """The server's version as a named tuple, e.g. ``ServerVersion(15, 0, 4, 'final', 0)``."""
        return self._aconn.get_server_version()

    def get_protocol_version(self) -> tuple[int, int]:
        """The wire protocol version in use as ``(major, minor)``."""
        return self._aconn.get_protocol_version()

    def get_settings(self) -> ConnectionSettings:
        """The settings the server reported (``server_version``, ``TimeZone``, ...)."""
        return self._aconn.get_settings()

    def get_pipeline_stats(self) -> PipelineStats:
        """Operations in flight now, the most ever, and the limit (max_pipeline)."""
        return self._aconn.get_pipeline_stats()

    def is_closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self._aconn.is_closed()

    def is_in_transaction(self) -> bool:
        """True while a transaction (or a failed one) is open on this connection."""
        return self._aconn.is_in_transaction()

    # --- queries ---

    def execute(self, query: str, *args: object, timeout: Optional[float] = None) -> str:
        """Run a command and return its status tag, e.g. ``'INSERT 0 1'``.

        Without arguments several statements separated by semicolons may be
        given (simple query protocol); the tag of the last one is returned.
        """
        return self._run(self._aconn.execute(query, *args, timeout=timeout))

    def executemany(self, command: str, args: Iterable[ArgumentRow], *,
                    timeout: Optional[float] = None) -> None:
        """Run `command` once per argument sequence in `args`, pipelined and atomic."""
        self._run(self._aconn.executemany(command, args, timeout=timeout))

    @overload
    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None, record_class: None = None,
                  row_factory: None = None) -> list[Record]: ...

    @overload
    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None,
                  record_class: type[RecordT], row_factory: None = None) -> list[RecordT]: ...

    @overload
    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None, record_class: None = None,
                  row_factory: RowFactory[RowT]) -> list[RowT]: ...

    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None,
                  record_class: Optional[type[Record]] = None,
                  row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run `query` once per argument sequence and return all result rows, in order.

        `record_class` and `row_factory` as in :meth:`fetch`.
        """
        # (Typed by the overloads above; the asyncio method checks the pair.)
        aconn: Any = self._aconn
        return self._run(aconn.fetchmany(query, args, timeout=timeout,
                                         record_class=record_class, row_factory=row_factory))

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: None = None, row_factory: None = None) -> list[Record]: ...

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: type[RecordT], row_factory: None = None) -> list[RecordT]: ...

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: None = None, row_factory: RowFactory[RowT]) -> list[RowT]: ...

    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: Optional[type[Record]] = None,
              row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run a query and return all result rows, as :class:`Record` unless told otherwise.

        `record_class` makes the rows instances of a Record subclass;
        `row_factory` makes them what a row factory makes
        (:mod:`mypgdriver.rows`: ``dict_row``, ``class_row(MyDataclass)``...).
        Pass one or the other, not both.
        """
        if row_factory is None:
            # The call of before row factories: a keyword argument more
            # costs its matching on every call (callgrind: +3% on SELECT 1+1).
            return self._run(self._aconn.fetch(query, *args, timeout=timeout,
                                               record_class=record_class))
        aconn: Any = self._aconn     # (typed by the overloads above)
        return self._run(aconn.fetch(query, *args, timeout=timeout,
                                     record_class=record_class, row_factory=row_factory))

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: None = None, row_factory: None = None) -> Optional[Record]: ...

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: type[RecordT], row_factory: None = None) -> Optional[RecordT]: ...

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: None = None, row_factory: RowFactory[RowT]) -> Optional[RowT]: ...

    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: Optional[type[Record]] = None,
                 row_factory: Optional[RowFactory[Any]] = None) -> Any:
        """Run a query and return the first row, or None (`record_class`, `row_factory`: fetch())."""
        if row_factory is None:
            return self._run(self._aconn.fetchrow(query, *args, timeout=timeout,
                                                  record_class=record_class))
        aconn: Any = self._aconn     # (typed by the overloads above)
        return self._run(aconn.fetchrow(query, *args, timeout=timeout,
                                        record_class=record_class, row_factory=row_factory))

    def fetchval(self, query: str, *args: object, column: int | str = 0,
                 timeout: Optional[float] = None) -> Any:
        """Run a query and return one value of the first row (None if no rows)."""
        return self._run(self._aconn.fetchval(query, *args, column=column, timeout=timeout))

    # --- prepared statements, cursors, transactions ---

    @overload
    def prepare(self, query: str, *, name: Optional[str] = None,
                timeout: Optional[float] = None, record_class: None = None,
                row_factory: None = None) -> PreparedStatement[Record]: ...

    @overload
    def prepare(self, query: str, *, name: Optional[str] = None,
                timeout: Optional[float] = None, record_class: type[RecordT],
                row_factory: None = None) -> PreparedStatement[RecordT]: ...

    @overload
    def prepare(self, query: str, *, name: Optional[str] = None,
                timeout: Optional[float] = None, record_class: None = None,
                row_factory: RowFactory[RowT]) -> PreparedStatement[RowT]: ...

    def prepare(self, query: str, *, name: Optional[str] = None,
                timeout: Optional[float] = None,
                record_class: Optional[type[Record]] = None,
                row_factory: Optional[RowFactory[Any]] = None) -> PreparedStatement[Any]:
        """Prepare `query` on the server and return a :class:`PreparedStatement`.

        `record_class` or `row_factory` is the statement's default row type.
        """
        aconn: Any = self._aconn     # (typed by the overloads above)
        return PreparedStatement(self._runner, self._run(aconn.prepare(
            query, name=name, timeout=timeout, record_class=record_class,
            row_factory=row_factory)))

    @overload
    def cursor(self, query: str, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None, record_class: None = None,
               row_factory: None = None) -> CursorFactory[Record]: ...

    @overload
    def cursor(self, query: str, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None, record_class: type[RecordT],
               row_factory: None = None) -> CursorFactory[RecordT]: ...

    @overload
    def cursor(self, query: str, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None, record_class: None = None,
               row_factory: RowFactory[RowT]) -> CursorFactory[RowT]: ...

    def cursor(self, query: str, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               record_class: Optional[type[Record]] = None,
               row_factory: Optional[RowFactory[Any]] = None) -> CursorFactory[Any]:
        """A cursor over the rows of `query`: iterate it, or fetch from it as from a :class:`Cursor`.

        ``for row in conn.cursor(q, prefetch=100)`` fetches 100 rows (default
        50) per round trip.  ``cur = conn.cursor(q)`` is ``cur = await
        conn.cursor(q)`` of the asyncio API: cur.fetch(n), cur.fetchrow()
        and cur.forward(n), the first of them binding the portal;
        ``conn.cursor(q).open()`` binds it at once and returns a Cursor.
        Cursors live only inside a transaction.  `record_class` and
        `row_factory` as in :meth:`fetch`.
        """
        aconn: Any = self._aconn     # (typed by the overloads above)
        return CursorFactory(self._runner, aconn.cursor(
            query, *args, prefetch=prefetch, timeout=timeout, record_class=record_class,
            row_factory=row_factory))

    def transaction(self, *, isolation: Optional[str] = None, readonly: bool = False,
                    deferrable: bool = False) -> Transaction:
        """A :class:`Transaction`: use ``with`` or start()/commit()/rollback().

        Inside another transaction block this creates a savepoint.
        """
        return Transaction(self._runner, self._aconn.transaction(
            isolation=isolation, readonly=readonly, deferrable=deferrable))

    # --- COPY ---

    def copy_from_table(self, table_name: str, *, output: CopyOutput,
                        columns: Optional[Iterable[str]] = None,
                        schema_name: Optional[str] = None, timeout: Optional[float] = None,
                        format: Optional[str] = None, oids: Optional[bool] = None,
                        delimiter: Optional[str] = None, null: Optional[str] = None,
                        header: Union[bool, str, None] = None, quote: Optional[str] = None,
                        escape: Optional[str] = None,
                        force_quote: Union[bool, Sequence[str], None] = None,
                        encoding: Optional[str] = None) -> str:
        """Copy a table to `output`; the status, e.g. ``'COPY 100'``.

        `output` is a path (created or truncated), a binary file object
        (its ``write(bytes)`` is called), or a function called with each
        ``bytes`` chunk.  The options are the asyncio method's.
        """
        _check_output(output)
        return self._run(self._aconn.copy_from_table(
            table_name, output=output, columns=columns, schema_name=schema_name,
            timeout=timeout, format=format, oids=oids, delimiter=delimiter, null=null,
            header=header, quote=quote, escape=escape, force_quote=force_quote,
            encoding=encoding))

    def copy_from_query(self, query: str, *args: object, output: CopyOutput,
                        timeout: Optional[float] = None, format: Optional[str] = None,
                        oids: Optional[bool] = None, delimiter: Optional[str] = None,
                        null: Optional[str] = None, header: Union[bool, str, None] = None,
                        quote: Optional[str] = None, escape: Optional[str] = None,
                        force_quote: Union[bool, Sequence[str], None] = None,
                        encoding: Optional[str] = None) -> str:
        """Copy the result of `query` to `output` (as for :meth:`copy_from_table`)."""
        _check_output(output)
        return self._run(self._aconn.copy_from_query(
            query, *args, output=output, timeout=timeout, format=format, oids=oids,
            delimiter=delimiter, null=null, header=header, quote=quote, escape=escape,
            force_quote=force_quote, encoding=encoding))

    def copy_to_table(self, table_name: str, *, source: CopySource,
                      columns: Optional[Iterable[str]] = None,
                      schema_name: Optional[str] = None, timeout: Optional[float] = None,
                      format: Optional[str] = None, oids: Optional[bool] = None,
                      freeze: Optional[bool] = None, delimiter: Optional[str] = None,
                      null: Optional[str] = None, header: Union[bool, str, None] = None,
                      quote: Optional[str] = None, escape: Optional[str] = None,
                      force_quote: Union[bool, Sequence[str], None] = None,
                      force_not_null: Union[bool, Sequence[str], None] = None,
                      force_null: Union[bool, Sequence[str], None] = None,
                      encoding: Optional[str] = None, where: Optional[str] = None) -> str:
        """Copy data from `source` into a table; the status, e.g. ``'COPY 140000'``.

        `source` is a path, a binary file object (``read(n)`` in chunks), a
        bytearray or memoryview holding the data, or an iterable of
        bytes-like chunks (a generator streams: memory stays bounded).  A
        ``bytes`` source is a file name, not data (as in asyncpg): wrap data
        in a list.  If the server rejects a row, or the source raises,
        nothing is copied and the connection stays usable.
        """
        _check_source(source)
        return self._run(self._aconn.copy_to_table(
            table_name, source=source, columns=columns, schema_name=schema_name,
            timeout=timeout, format=format, oids=oids, freeze=freeze, delimiter=delimiter,
            null=null, header=header, quote=quote, escape=escape, force_quote=force_quote,
            force_not_null=force_not_null, force_null=force_null, encoding=encoding,
            where=where))

    def copy_records_to_table(self, table_name: str, *, records: Iterable[ArgumentRow],
                              columns: Optional[Iterable[str]] = None,
                              schema_name: Optional[str] = None,
                              timeout: Optional[float] = None,
                              where: Optional[str] = None) -> str:
        """Copy `records` (sequences of column values) into a table with binary COPY."""
        if hasattr(records, '__aiter__'):
            raise TypeError('mypgdriver.sync takes records as a (sync) iterable, '
                            'not an async iterable')
        return self._run(self._aconn.copy_records_to_table(
            table_name, records=records, columns=columns, schema_name=schema_name,
            timeout=timeout, where=where))

    # --- notifications and callbacks ---

    def notifies(self, timeout: Optional[float] = None) -> Iterator[Notification]:
        """Yield the notifications of the channels this session LISTENs to, as they arrive.

        Blocks reading the connection (no thread, no polling) until one
        arrives; with `timeout`, returns once none came for `timeout`
        seconds.  Notifications received since the connection was opened
        (during other calls, or between iterations) are yielded first, in
        order; at most NOTIFICATION_BACKLOG (10,000) are kept, then the
        oldest are dropped.  Listeners added with add_listener() are still
        called.  While it waits, the generator holds the connection: other
        threads' calls wait for the notification or the timeout.
        """
        check_timeout(timeout)
        backlog = self._notifications
        while True:
            notification = self._run(backlog.next(self._aconn, timeout))
            if notification is None:
                return
            yield notification

    def add_listener(self, channel: str, callback: NotificationCallback) -> None:
        """Call ``callback(connection, pid, channel, payload)`` for each notification on `channel`.

        Sends ``LISTEN`` for the first callback of the channel.  Callbacks
        run inside the call (or notifies() iteration) that received the
        notification, in its thread.
        """
        check_plain_callback(callback, 'notification listener')
        self._run(self._aconn.add_listener(channel, self._listener_relays.relay(channel, callback)))

    def remove_listener(self, channel: str, callback: NotificationCallback) -> None:
        """Stop calling `callback` for `channel`; ``UNLISTEN`` once no callback is left."""
        relay = self._listener_relays.pop(channel, callback)
        if relay is not None:
            self._run(self._aconn.remove_listener(channel, relay))

    def add_log_listener(self, callback: LogCallback) -> None:
        """Call ``callback(connection, message)`` for each message the server logs to this session."""
        check_plain_callback(callback, 'log listener')
        self._aconn.add_log_listener(self._log_relays.relay(None, callback))

    def remove_log_listener(self, callback: LogCallback) -> None:
        """Stop calling `callback` for log messages (no error if it was not added)."""
        relay = self._log_relays.pop(None, callback)
        if relay is not None:
            self._aconn.remove_log_listener(relay)

    def add_termination_listener(self, callback: TerminationCallback) -> None:
        """Call ``callback(connection)`` once, when the connection is closed or lost."""
        check_plain_callback(callback, 'termination listener')
        self._aconn.add_termination_listener(self._termination_relays.relay(None, callback))

    def remove_termination_listener(self, callback: TerminationCallback) -> None:
        """Forget a callback given to :meth:`add_termination_listener`."""
        relay = self._termination_relays.pop(None, callback)
        if relay is not None:
            self._aconn.remove_termination_listener(relay)

    def add_query_logger(self, callback: Callable[[LoggedQuery], object]) -> None:
        """Call ``callback(LoggedQuery)`` after each query, inside the call, in its thread."""
        check_plain_callback(callback, 'query logger')
        self._aconn.add_query_logger(callback)

    def remove_query_logger(self, callback: Callable[[LoggedQuery], object]) -> None:
        """Stop calling `callback` (added with add_query_logger())."""
        self._aconn.remove_query_logger(callback)

    @contextlib.contextmanager
    def query_logger(self, callback: Callable[[LoggedQuery], object]) -> Iterator[None]:
        """Context manager: `callback` logs the queries run inside the ``with`` block."""
        self.add_query_logger(callback)
        try:
            yield
        finally:
            self.remove_query_logger(callback)

    # --- type codecs ---

    def set_type_codec(self, typename: str, *, schema: str = 'public',
                       encoder: Callable[[Any], Any], decoder: Callable[[Any], Any],
                       format: str = 'text') -> None:
        """Use `encoder`/`decoder` for values of the given type (see the asyncio method)."""
        self._run(self._aconn.set_type_codec(typename, schema=schema, encoder=encoder,
                                             decoder=decoder, format=format))

    def reset_type_codec(self, typename: str, *, schema: str = 'public') -> None:
        """Undo set_type_codec()/set_builtin_type_codec() for the type."""
        self._run(self._aconn.reset_type_codec(typename, schema=schema))

    def set_builtin_type_codec(self, typename: str, *, schema: str = 'public',
                               codec_name: str, format: Optional[str] = None) -> None:
        """Exchange values of the type with one of the driver's own codecs."""
        self._run(self._aconn.set_builtin_type_codec(typename, schema=schema,
                                                     codec_name=codec_name, format=format))

    # --- session state ---

    def reload_schema_state(self) -> None:
        """Forget cached type information and prepared statements."""
        self._run(self._aconn.reload_schema_state())

    def reset(self, *, timeout: Optional[float] = None) -> None:
        """Return the session to a clean state (see the asyncio method): one round trip."""
        self._run(self._aconn.reset(timeout=timeout))

    def get_reset_query(self) -> str:
        """The SQL that reset() runs."""
        return self._aconn.get_reset_query()

    # --- cancelling and closing ---

    def cancel(self) -> None:
        """Ask the server to cancel the call running on this connection, from any thread.

        Does not wait for the connection's lock: the CancelRequest goes out
        at once on a connection of its own, and returns once the server has
        received it.  The running call then raises
        :exc:`~mypgdriver.exceptions.QueryCanceledError` and the connection
        stays usable.  Does nothing when no call runs; a cancel never hits a
        later call.  (A thread blocked in notifies() runs no statement: it
        is not woken.)
        """
        cancel_running_call(self._aconn, self._runner)

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the connection gracefully (Terminate, then close the socket).

        Waits for the call another thread is running; termination listeners
        run before this returns.
        """
        self._run(self._aconn.close(timeout=timeout))

    def terminate(self) -> None:
        """Close the connection at once, also while another thread runs a call on it.

        That call raises :exc:`~mypgdriver.exceptions.ConnectionDoesNotExistError`
        (its socket is shut down under it) and the server ends the session,
        rolling back an open transaction.  Termination listeners run before
        this returns.  It may also be called from a listener or query logger
        (inside the call that runs it).
        """
        runner = self._runner
        if runner.in_call():
            # A callback inside a call, in the thread driving the glue.
            self._aconn.terminate()
            return
        shut_down_under_running_call(self._aconn, runner)
        self._run(_terminated(self._aconn))


# --- for mypgdriver.sync's pool (pool.py) and mypgdriver.dbapi, which drive the asyncio
# Connection's policy ---

_T = TypeVar('_T')


def async_connection(conn: Connection) -> AsyncConnection:
    """The asyncio Connection under `conn`: the pool runs the asyncio pool's reset on it."""
    return conn._aconn


def run_async(conn: Connection, coro: Coroutine[Any, Any, _T]) -> _T:
    """Drive `coro` (which uses ``async_connection(conn)``) as a call of `conn`: under its lock."""
    return conn._run(coro)


class CoroutineRunner(Protocol):
    """What call_runner() returns: drives a coroutine as a call of the connection."""

    def __call__(self, coro: Coroutine[Any, Any, _T], /) -> _T: ...


def call_runner(conn: Connection) -> CoroutineRunner:
    """run_async() bound to `conn`, for mypgdriver.dbapi's hot paths (one call less)."""
    return conn._run


def read_pending_input(conn: Connection) -> None:
    """Read and handle what the server sent while `conn` was idle, without waiting.

    Two non-blocking polls of the socket: a server's goodbye (a backend
    terminated, a server shut down: its FATAL message, then the end of the
    stream) is read, and the connection is found closed, before the pool
    hands it out.
    """
    conn._run(_two_turns())


def forget_notifications(conn: Connection) -> None:
    """Drop the notifications that notifies() has not yielded yet (see NotificationBacklog)."""
    conn._notifications.clear()


async def _two_turns() -> None:
    # A bare yield: the glue runs one turn (ready callbacks, a poll of the
    # sockets with no wait) before resuming.  The first turn reads what was
    # sent (the goodbye), the second the end of the stream after it.
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def _terminated(aconn: AsyncConnection) -> None:
    # Inside a call: the termination listeners it schedules run before run() returns.
    aconn.terminate()


def _check_output(output: object) -> None:
    write = getattr(output, 'write', output)
    if inspect.iscoroutinefunction(write):
        raise TypeError('mypgdriver.sync writes COPY data with plain functions and file '
                        'objects, not coroutine functions')


def _check_source(source: object) -> None:
    if hasattr(source, '__aiter__') or inspect.iscoroutinefunction(getattr(source, 'read', None)):
        raise TypeError('mypgdriver.sync reads COPY data from paths, file objects, '
                        'bytes-like objects and (sync) iterables, not async ones')

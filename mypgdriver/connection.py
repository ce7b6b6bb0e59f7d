"""Connection: the public API over one PostgreSQL session.

The state of the session (what runs, what must happen before the next
operation, the transaction, the statement cache) lives in its Session
(session.py); the methods here check their arguments and call it.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Optional, overload

from mypgdriver import tracing
from mypgdriver._typing import ArgumentRows, RecordT, RowT
from mypgdriver.copy import CopyMixin
from mypgdriver.core import deadlines, waits
from mypgdriver.core.deadlines import check_timeout, timeout_error
from mypgdriver.core.session import LoggedQuery, Session, warn_unclosed
from mypgdriver.cursor import CursorFactory, check_prefetch
from mypgdriver.listeners import ListenersMixin
from mypgdriver.pipeline import Pipeline
from mypgdriver.prepared import PreparedStatement
from mypgdriver.protocol.protocol import DEFAULT_MAX_PIPELINE, check_record_class
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows
from mypgdriver.server_info import ConnectionSettings, ServerVersion, parse_server_version
from mypgdriver.tracing import TELEMETRY
from mypgdriver.transaction import Transaction
from mypgdriver.type_codecs import TypeCodecsMixin

if TYPE_CHECKING:
    from mypgdriver.connecting.connect_params import ConnectParams
    from mypgdriver.protocol.protocol import Protocol
    from mypgdriver.types import JsonCodec

__all__ = ('Connection', 'ConnectionConfig', 'LoggedQuery', 'PipelineStats')

_connection_ids = itertools.count(1)

#: How long close() without a timeout waits for the calls in flight to be
#: cancelled on the server before it drops the connection under them.
CLOSE_CANCEL_GRACE = 5.0


class PipelineStats(NamedTuple):
    """How deep a connection's pipeline is (Connection.get_pipeline_stats())."""

    #: Operations sent and not answered yet.
    in_flight: int
    #: The most that were ever in flight at once.
    max_in_flight: int
    #: The connection's max_pipeline.
    limit: int


class ConnectionConfig:
    """Per-connection options from connect() that are not about where to connect."""

    __slots__ = ('command_timeout', 'statement_cache_size', 'max_cached_statement_lifetime',
                 'max_cacheable_statement_size', 'record_class', 'row_factory', 'max_pipeline',
                 'json')

    def __init__(self, *, command_timeout: Optional[float] = None,
                 statement_cache_size: int = 100,
                 max_cached_statement_lifetime: float = 300.0,
                 max_cacheable_statement_size: int = 15 * 1024,
                 record_class: type[Record] = Record,
                 row_factory: Optional[RowFactory[Any]] = None,
                 max_pipeline: int = DEFAULT_MAX_PIPELINE,
                 json: Optional[JsonCodec] = None) -> None:
        self.max_pipeline = max_pipeline
        # connect(json=...): json and jsonb as Python objects (None: as str).
        self.json = json
        self.command_timeout = command_timeout
        self.statement_cache_size = statement_cache_size
        self.max_cached_statement_lifetime = max_cached_statement_lifetime
        self.max_cacheable_statement_size = max_cacheable_statement_size
        self.record_class = record_class
        self.row_factory = row_factory


class _ConnectionMeta(type):
    # A pool hands out proxies; like asyncpg, a proxy is an instance of the
    # pool's connection_class and of its bases (Connection included), so
    # type checks in user code keep working.  Asked of the proxy's type
    # first: a released proxy refuses attribute access, not this question.
    def __instancecheck__(cls, instance: object) -> bool:
        if super().__instancecheck__(instance):
            return True
        proxied_class = getattr(type(instance), '_proxied_class', None)
        return proxied_class is not None and issubclass(proxied_class(instance), cls)


class Connection(TypeCodecsMixin, CopyMixin, ListenersMixin, metaclass=_ConnectionMeta):
    """A connection to a PostgreSQL server.

    Create one with :func:`mypgdriver.connect`.  A connection runs one
    operation at a time; a second concurrent call raises
    :exc:`~mypgdriver.exceptions.InterfaceError`.  A connection that is
    garbage collected while still open is closed (with a ResourceWarning,
    as asyncio does for transports): close it explicitly.
    """

    __slots__ = ('_session', '_protocol', '_transport', '_loop', '_addr', '_params',
                 '_closed', '_id',
                 # listeners.py
                 '_listeners', '_log_listeners', '_termination_listeners',
                 '__weakref__')

    def __init__(self, protocol: Protocol, transport: asyncio.Transport,
                 loop: asyncio.AbstractEventLoop, addr: Any, config: ConnectionConfig,
                 params: ConnectParams) -> None:
        self._protocol = protocol
        self._transport = transport
        self._loop = loop
        self._addr = addr
        self._params = params
        self._id = next(_connection_ids)
        self._closed = False
        # callback -> the object it receives (the connection or a pool proxy)
        self._listeners: dict[str, dict[Callable[..., Any], Any]] = {}
        self._log_listeners: dict[Callable[..., Any], Any] = {}
        self._termination_listeners: dict[Callable[..., Any], Any] = {}
        reported = protocol.get_server_parameters()
        version = parse_server_version(reported.get('server_version'),
                                       reported.get('server_version_num'))
        self._session = Session(protocol, loop, addr, params, config, self._id, version)
        # The protocol outlives us while its transport is open (the event
        # loop holds the transport): it must hold us weakly, or an
        # unreferenced connection could never be collected and closed.
        ref = weakref.ref(self)
        protocol.on_notice = functools.partial(_forward, ref, '_dispatch_notice')
        protocol.on_notification = functools.partial(_forward, ref, '_dispatch_notification')
        protocol.on_connection_lost = functools.partial(
            _forward, ref, '_dispatch_connection_lost')

    def __del__(self) -> None:
        session = getattr(self, '_session', None)
        if session is None or session.is_closed():
            return
        try:
            warn_unclosed(self)
            # Aborting the transport ends the server's session (an open
            # transaction is rolled back there).
            session.terminate()
        except Exception:
            # The event loop may be closed already (interpreter exit): the
            # transport closes its socket when it is collected in turn.
            pass

    def __repr__(self) -> str:
        state = 'closed' if self.is_closed() else 'open'
        return f'<{type(self).__name__} {state} addr={self._addr!r} pid={self.get_server_pid()}>'

    # --- information ---

    def get_server_pid(self) -> int:
        """The process ID of the server backend serving this connection."""
        return self._protocol.get_backend_pid()

    def get_server_version(self) -> ServerVersion:
        """The server's version as a named tuple, e.g. ``ServerVersion(15, 0, 4, 'final', 0)``."""
        return self._session.server_version

    def get_protocol_version(self) -> tuple[int, int]:
        """The wire protocol version in use as ``(major, minor)``.

        ``(3, 0)`` unless ``max_protocol_version`` asked for more and the
        server granted it: ``(3, 2)`` with PostgreSQL 18 and
        ``max_protocol_version='latest'``.  (A mypgdriver addition, like
        libpq's ``PQfullProtocolVersion``.)
        """
        return (3, self._protocol.protocol_minor)

    def get_settings(self) -> ConnectionSettings:
        """The settings the server reported (``server_version``, ``TimeZone``, ...)."""
        return ConnectionSettings(self._protocol.get_server_parameters())

    def is_closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self._session.is_closed()

    def is_in_transaction(self) -> bool:
        """True while a transaction (or a failed one) is open on this connection.

        The answer is the server's, from its last ReadyForQuery.  A call
        that timed out or was cancelled raises once the server answered the
        cancel, so right after it this is the server's status; only while a
        cancelled statement is still unanswered is it not known, and the
        answer is then True (the safe side).
        """
        return self._session.is_in_transaction()

    # --- queries ---

    async def execute(self, query: str, *args: object, timeout: Optional[float] = None) -> str:
        """Run a command and return its status tag, e.g. ``'INSERT 0 1'``.

        Without arguments the simple query protocol is used, so several
        statements separated by semicolons may be given; the tag of the last
        one is returned.
        """
        if not args:
            return await self._session.simple(query, timeout)
        # Record rows (decoded, then dropped): never a row factory's maker.
        return await self._session.execute(query, args, 0, timeout, True, Record)

    async def executemany(self, command: str, args: ArgumentRows, *,
                          timeout: Optional[float] = None) -> None:
        """Run `command` once per argument sequence in `args`, pipelined.

        All rows travel in one pipeline (many Bind/Execute messages per network
        write, one Sync at the end), so this costs one round trip, not one per
        row.  It is atomic: if any row fails (bad input raises DataError naming
        the row index; a server error raises that error), nothing is applied.
        `args` may be any iterable or async iterable of argument sequences
        (tuples, lists, records; a mapping, a string or a set is not one).
        """
        session = self._session
        if session.query_loggers:
            return await session.logged(session.executemany(command, args, timeout),
                                        command, args, timeout)
        await session.executemany(command, args, timeout)

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: None = None, row_factory: None = None) -> list[Record]: ...

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: type[RecordT], row_factory: None = None) -> list[RecordT]: ...

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None, record_class: None = None,
                        row_factory: RowFactory[RowT]) -> list[RowT]: ...

    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: Optional[type[Record]] = None,
                        row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run `query` once per argument sequence and return all result rows.

        Like executemany() (one pipeline, atomic), but the rows every
        execution returns (e.g. ``INSERT ... RETURNING``) come back in order.
        `row_factory` (:mod:`mypgdriver.rows`) or `record_class` choose what
        the rows are; the factory is called once, not per execution.
        """
        session = self._session
        operation = session.executemany(query, args, timeout, return_rows=True,
                                        rows_as=self._rows_as(record_class, row_factory))
        if session.query_loggers:
            return await session.logged(operation, query, args, timeout)
        return await operation

    def _rows_as(self, record_class: Optional[type[Record]],
                 row_factory: Optional[RowFactory[Any]]) -> Any:
        # What the rows of a call are made as: its record_class or
        # row_factory, else the connection's default (Session.rows_default).
        if record_class is None and row_factory is None:
            return self._session.rows_default
        return choose_rows(record_class, row_factory)

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None, row_factory: None = None) -> list[Record]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: type[RecordT], row_factory: None = None) -> list[RecordT]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None, row_factory: RowFactory[RowT]) -> list[RowT]: ...

    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: Optional[type[Record]] = None,
                    row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run a query and return all result rows, as :class:`Record` unless told otherwise.

        `record_class` makes the rows instances of a Record subclass;
        `row_factory` makes them what a row factory makes
        (:mod:`mypgdriver.rows`: ``dict_row``, ``tuple_row``,
        ``class_row(MyDataclass)``...).  Pass one or the other, not both.
        """
        # (None: the connection's default, applied by the Session.)
        return await self._session.execute(
            query, args, 0, timeout, False,
            record_class if row_factory is None else choose_rows(record_class, row_factory))

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None, row_factory: None = None) -> Optional[Record]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: type[RecordT],
                       row_factory: None = None) -> Optional[RecordT]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None,
                       row_factory: RowFactory[RowT]) -> Optional[RowT]: ...

    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: Optional[type[Record]] = None,
                       row_factory: Optional[RowFactory[Any]] = None) -> Any:
        """Run a query and return the first row, or None if there are no rows.

        `record_class` and `row_factory` as in :meth:`fetch`.
        """
        rows = await self._session.execute(
            query, args, 1, timeout, False,
            record_class if row_factory is None else choose_rows(record_class, row_factory))
        return rows[0] if rows else None

    async def fetchval(self, query: str, *args: object, column: int | str = 0,
                       timeout: Optional[float] = None) -> Any:
        """Run a query and return one value of the first row (None if no rows)."""
        # Record rows whatever the connection's row factory: `column` may be a name.
        rows = await self._session.execute(query, args, 1, timeout, False, Record)
        if not rows:
            return None
        return rows[0][column]

    def get_pipeline_stats(self) -> PipelineStats:
        """How many operations are in flight now, the most ever, and the limit (max_pipeline)."""
        proto = self._protocol
        return PipelineStats(proto.depth, proto.max_depth, proto.max_pipeline)

    async def cancel(self) -> None:
        """Ask the server to cancel whatever this connection is running.

        Callable from another task: the running call then raises
        :exc:`~mypgdriver.exceptions.QueryCanceledError` and the connection
        stays usable.  Does nothing when the connection is idle.
        """
        if self.is_closed():
            return
        gate = self._protocol.request_cancel()
        if gate is not None:
            await waits.wait_shielded(self._loop, gate, None)

    # --- prepared statements, cursors, transactions ---

    @overload
    async def prepare(self, query: str, *, name: Optional[str] = None,
                      timeout: Optional[float] = None, record_class: None = None,
                      row_factory: None = None) -> PreparedStatement[Record]: ...

    @overload
    async def prepare(self, query: str, *, name: Optional[str] = None,
                      timeout: Optional[float] = None, record_class: type[RecordT],
                      row_factory: None = None) -> PreparedStatement[RecordT]: ...

    @overload
    async def prepare(self, query: str, *, name: Optional[str] = None,
                      timeout: Optional[float] = None, record_class: None = None,
                      row_factory: RowFactory[RowT]) -> PreparedStatement[RowT]: ...

    async def prepare(self, query: str, *, name: Optional[str] = None,
                      timeout: Optional[float] = None,
                      record_class: Optional[type[Record]] = None,
                      row_factory: Optional[RowFactory[Any]] = None) -> PreparedStatement[Any]:
        """Prepare `query` on the server and return a :class:`PreparedStatement`.

        Without `name`, a statement already in the connection's statement
        cache is reused (no round trip) and a new one is added to it; the
        returned object keeps its statement valid on the server as long as
        it is referenced, even if the cache evicts the entry.  With `name`,
        the server statement gets exactly that name and is closed when the
        PreparedStatement is garbage collected.  With ``statement_cache_size=0``
        and no `name`, the unnamed statement is used and parsed again before
        each run, so no prepared statement stays on the server (what a
        transaction-mode pooler needs).  `record_class` or `row_factory`
        (see :meth:`fetch`) is the statement's default for its fetch,
        fetchrow, fetchmany and cursor.
        """
        rows_as = self._rows_as(record_class, row_factory)
        if isinstance(rows_as, type):
            check_record_class(rows_as)
        if TELEMETRY.live:
            summary = tracing.summarize(query)
            return await tracing.traced(
                self._prepare(query, name, timeout, rows_as),
                self._session.trace_attributes(), query, operation_name='PREPARE',
                summary=f'PREPARE {summary}' if summary else 'PREPARE')
        return await self._prepare(query, name, timeout, rows_as)

    async def _prepare(self, query: str, name: Optional[str], timeout: Optional[float],
                       rows_as: Any) -> PreparedStatement[Any]:
        session = self._session
        session.check_open()
        # One deadline for the wait in line, the Parse and the introspection.
        deadline = session.deadline(session.resolve_timeout(timeout))
        # In the caller's place in line: the Parse, and the introspection of
        # its types, go out before any call made after this one.
        async with session.admission.line(deadline):
            if name is None and session.statements.is_cacheable(query):
                state = session.statements.cache.get(query)
                # A cached statement not created on the server yet (see
                # Session.prepare_state) is replaced by one created now: a
                # PreparedStatement's statement exists from the start, so a
                # schema change later is the server's 0A000, as in asyncpg.
                if state is None or state.parse_pending or state.closed:
                    state = await session.prepare_state(query, deadline, create_now=True)
            else:
                # With the statement cache off (statement_cache_size=0, e.g.
                # behind a transaction-mode pooler) the statement stays unnamed:
                # it is parsed again in front of each run, so nothing is left
                # behind on the server.
                state = await session.prepare_state(
                    query, deadline, name=name, cache=False,
                    named=name is not None or session.statements.cache.max_size > 0, create_now=True)
                session.statements.hold(state)
        return PreparedStatement(self, session, query, state, rows_as, name is not None)

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
        """A cursor over the rows of `query`: iterate it, or await it for a :class:`Cursor`.

        ``async for row in conn.cursor(q)`` fetches `prefetch` rows (default
        50) per round trip, so memory stays bounded however many rows the
        query returns; ``cur = await conn.cursor(q)`` gives a
        :class:`~mypgdriver.cursor.Cursor` with fetch(n), fetchrow() and
        forward(n).  Cursors are server-side portals and live only inside a
        transaction.  `record_class` and `row_factory` as in :meth:`fetch`
        (a row factory is called once per batch fetched).
        """
        self._session.check_open()
        rows_as = self._rows_as(record_class, row_factory)
        if isinstance(rows_as, type):
            check_record_class(rows_as)
        check_timeout(timeout)
        check_prefetch(prefetch)
        return CursorFactory(self, self._session, query, None, args, prefetch, timeout,
                             rows_as)

    def pipeline(self) -> Pipeline:
        """A pipeline: ``async with conn.pipeline() as p:`` sends statements without waiting.

        ``await p.fetchval(...)`` (and execute, fetch, fetchrow: this
        connection's arguments) queues a statement and returns a
        :class:`~mypgdriver.pipeline.PipelineResult`; ``await result``
        waits for its own answer.  Leaving the block is a sync point (it
        raises the first error nobody awaited); ``await p.sync()`` makes
        one inside.  Other tasks' calls wait for the end of the block.
        Rules for errors and transactions: docs/guide/pipeline.rst.
        """
        self._session.check_open()
        return Pipeline(self._session)

    def transaction(self, *, isolation: Optional[str] = None, readonly: bool = False,
                    deferrable: bool = False) -> Transaction:
        """A :class:`Transaction`: use ``async with`` or start()/commit()/rollback().

        `isolation` is one of ``'read_committed'``, ``'read_uncommitted'``,
        ``'repeatable_read'``, ``'serializable'`` (None: the server default).
        Inside another transaction block this creates a savepoint.
        """
        self._session.check_open()
        return Transaction(self, self._session, isolation, readonly, deferrable)

    async def reload_schema_state(self) -> None:
        """Forget cached type information and prepared statements.

        Call this after changing types the connection has already used (for
        example ``ALTER TYPE`` on a composite type) when the change is
        otherwise reported as :exc:`~mypgdriver.exceptions.OutdatedSchemaCacheError`.
        """
        self._session.drop_schema_caches()

    # --- query logging ---

    def add_query_logger(self, callback: Callable[[LoggedQuery], Any]) -> None:
        """Call `callback` with a :class:`LoggedQuery` after each query.

        `callback` may be a plain function (called soon after the query, from
        the event loop) or a coroutine function (run as a task).  Logged are
        execute(), executemany() and the fetch methods, including the
        statements that transactions run; not prepared-statement, cursor or
        COPY operations (as in asyncpg).
        """
        loggers = self._session.query_loggers
        if callback not in loggers:
            loggers.append(callback)

    def remove_query_logger(self, callback: Callable[[LoggedQuery], Any]) -> None:
        """Stop calling `callback` (added with add_query_logger())."""
        with contextlib.suppress(ValueError):
            self._session.query_loggers.remove(callback)

    @contextlib.contextmanager
    def query_logger(self, callback: Callable[[LoggedQuery], Any]) -> Iterator[None]:
        """Context manager: `callback` logs the queries run inside the ``with`` block."""
        self.add_query_logger(callback)
        try:
            yield
        finally:
            self.remove_query_logger(callback)

    # --- session state ---

    async def reset(self, *, timeout: Optional[float] = None) -> None:
        """Return the session to a clean state (what a pool does on release).

        Rolls back an open transaction, closes all cursors, releases session
        advisory locks, stops listening on all channels (and forgets their
        callbacks), drops temporary tables and resets all settings to their
        defaults: one round trip.
        """
        session = self._session
        session.check_open()
        # Alone: the calls in flight finish first, and the transaction
        # status is known only once nothing is in flight.
        deadline = session.deadline(session.resolve_timeout(timeout))
        # hold()/release() written out rather than ``async with
        # admission.held()``: a pool runs this on every release, and the
        # context manager made an asyncio pool checkout +11% (acquire +
        # fetchval + release, callgrind, bench/pool_callgrind.py; written
        # out: -1.1% against the tree before the shared pool core).
        timeout = await session.admission.hold(deadline)
        try:
            query = self.get_reset_query()
            if session.is_in_transaction() or session.blocks.top is not None:
                query = 'ROLLBACK;\n' + query
            session.blocks.end(session.blocks.top)
            self._listeners.clear()
            self._log_listeners.clear()
            await session.logged(session.simple_held(query, timeout), query, (), timeout)
        finally:
            session.admission.release()

    def get_reset_query(self) -> str:
        """The SQL that reset() runs; override it in a connection_class to change the reset."""
        return self._reset_query()

    def _reset_query(self) -> str:
        # DISCARD TEMP: a pool must not let one user see another's temporary
        # tables (asyncpg keeps them; we do not).
        return ('SELECT pg_catalog.pg_advisory_unlock_all();\n'
                'CLOSE ALL;\n'
                'UNLISTEN *;\n'
                'RESET ALL;\n'
                'DISCARD TEMP;')

    # --- closing ---

    async def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the connection gracefully (Terminate, then close the socket).

        As in asyncpg, what runs is cancelled first: a call in flight raises
        the server's :exc:`~mypgdriver.exceptions.QueryCanceledError` (or
        returns, if it finished first), and a call still waiting for its
        turn raises :exc:`~mypgdriver.exceptions.InterfaceError`.  If that
        takes longer than `timeout`, the connection is aborted and
        :exc:`TimeoutError` raised; without a timeout, it is aborted after
        CLOSE_CANCEL_GRACE seconds (a stalled server must not make close()
        hang).  Termination listeners are scheduled before this returns.
        """
        check_timeout(timeout)
        session = self._session
        if session.is_closed():
            session.closed = True
            return
        session.closed = True
        if self._protocol.is_busy():
            grace = CLOSE_CANCEL_GRACE if timeout is None else timeout
            try:
                await deadlines.within(self._loop, self._protocol.cancel_all(), grace,
                                       what='close()')
            except asyncio.TimeoutError:
                self.terminate()
                if timeout is not None:
                    raise timeout_error('close()', timeout, 'the calls in flight were not '
                                        'cancelled in time, so the connection was aborted'
                                        ) from None
                return
            except BaseException:
                self.terminate()
                raise
        self._protocol.terminate()
        self._dispatch_connection_lost(None)

    def terminate(self) -> None:
        """Close the connection at once, without waiting for anything."""
        self._session.terminate()
        self._dispatch_connection_lost(None)


def session_of(conn: Connection) -> Session:
    """The Session behind `conn`: for mypgdriver.core.session_api, the faces' interface to it."""
    return conn._session


def _forward(ref: 'weakref.ref[Connection]', method: str, *args: Any) -> None:
    """Deliver a protocol event to the connection, if it still exists."""
    conn = ref()
    if conn is not None:
        getattr(conn, method)(*args)

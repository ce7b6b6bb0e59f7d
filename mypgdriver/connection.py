"""Connection: the public API over one PostgreSQL session."""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import re
import time
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

from mypgdriver import exceptions
from mypgdriver.codecs import introspection
from mypgdriver.codecs.registry import CodecRegistry
from mypgdriver.cursor import CursorFactory
from mypgdriver.prepared import PreparedStatement
from mypgdriver.protocol.protocol import check_record_class
from mypgdriver.protocol.record import Record
from mypgdriver.protocol.statement import (
    StatementState, missing_statement_types, resolve_statement_codecs)
from mypgdriver.server_info import ConnectionSettings, ServerVersion, parse_server_version
from mypgdriver.statement_cache import StatementCache
from mypgdriver.type_codecs import TypeCodecsMixin
from mypgdriver.copy import CopyMixin, stream_interrupted
from mypgdriver.listeners import ListenersMixin
from mypgdriver.transaction import Transaction

_connection_ids = itertools.count(1)

# Tasks running async query loggers: the loop keeps only weak references.
_logger_tasks: set = set()


class LoggedQuery(NamedTuple):
    """What a query logger receives after each query (asyncpg 0.29+ fields)."""

    query: str
    args: Any
    timeout: Optional[float]
    elapsed: float
    exception: Optional[BaseException]
    conn_addr: Any
    conn_params: Any


class ConnectionConfig:
    """Per-connection options from connect() that are not about where to connect."""

    __slots__ = ('command_timeout', 'statement_cache_size', 'max_cached_statement_lifetime',
                 'max_cacheable_statement_size', 'record_class')

    def __init__(self, *, command_timeout=None, statement_cache_size=100,
                 max_cached_statement_lifetime=300.0, max_cacheable_statement_size=15 * 1024,
                 record_class=Record):
        self.command_timeout = command_timeout
        self.statement_cache_size = statement_cache_size
        self.max_cached_statement_lifetime = max_cached_statement_lifetime
        self.max_cacheable_statement_size = max_cacheable_statement_size
        self.record_class = record_class


class _ConnectionMeta(type):
    # A pool hands out proxies; like asyncpg, isinstance(proxy, Connection)
    # is true for them, so type checks in user code keep working.
    def __instancecheck__(cls, instance) -> bool:
        return super().__instancecheck__(instance) or (
            cls is Connection and getattr(type(instance), '_is_connection_proxy', False))


class Connection(TypeCodecsMixin, CopyMixin, ListenersMixin, metaclass=_ConnectionMeta):
    """A connection to a PostgreSQL server.

    Create one with :func:`mypgdriver.connect`.  A connection runs one
    operation at a time; a second concurrent call raises
    :exc:`~mypgdriver.exceptions.InterfaceError`.
    """

    __slots__ = ('_protocol', '_transport', '_loop', '_addr', '_config', '_params',
                 '_stmt_cache', '_codecs', '_stmt_ids', '_stmts_to_close', '_closed',
                 '_server_version', '_id', '_record_class', '_command_timeout',
                 '_max_cacheable_size', '_introspection_query',
                 # listeners.py
                 '_listeners', '_log_listeners', '_termination_listeners',
                 # query logging, transactions, cursors, prepared statements
                 '_query_loggers', '_top_xact', '_cursor_ids', '_savepoint_ids', '_held_stmts',
                 '__weakref__')

    def __init__(self, protocol, transport, loop, addr, config: ConnectionConfig, params):
        self._protocol = protocol
        self._transport = transport
        self._loop = loop
        self._addr = addr
        self._config = config
        self._params = params
        self._id = next(_connection_ids)
        self._stmt_ids = itertools.count(1)
        self._stmts_to_close: list = []
        self._closed = False
        self._codecs = CodecRegistry()
        self._introspection_query = None
        self._listeners: dict = {}
        self._log_listeners: list = []
        self._termination_listeners: list = []
        self._query_loggers: list = []
        self._top_xact = None
        self._cursor_ids = itertools.count(1)
        self._savepoint_ids = itertools.count(1)
        # Named statements that no cache owns, kept alive by PreparedStatement
        # and cursor references (StatementState.refs); closed when refs drop to 0.
        self._held_stmts: set = set()
        protocol.on_notice = self._dispatch_notice
        protocol.on_notification = self._dispatch_notification
        protocol.on_connection_lost = self._dispatch_connection_lost
        self._record_class = config.record_class
        self._command_timeout = config.command_timeout
        self._max_cacheable_size = config.max_cacheable_statement_size
        self._stmt_cache = StatementCache(
            max_size=config.statement_cache_size,
            max_lifetime=config.max_cached_statement_lifetime,
            on_remove=self._on_statement_removed)
        version = protocol.get_server_parameters().get('server_version')
        self._server_version = parse_server_version(version) if version else None

    def __repr__(self) -> str:
        state = 'closed' if self.is_closed() else 'open'
        return f'<{type(self).__name__} {state} addr={self._addr!r} pid={self.get_server_pid()}>'

    # --- information ---

    def get_server_pid(self) -> int:
        """The process ID of the server backend serving this connection."""
        return self._protocol.get_backend_pid()

    def get_server_version(self) -> ServerVersion:
        """The server's version as a named tuple, e.g. ``ServerVersion(15, 0, 4, 'final', 0)``."""
        return self._server_version

    def get_settings(self) -> ConnectionSettings:
        """The settings the server reported (``server_version``, ``TimeZone``, ...)."""
        return ConnectionSettings(self._protocol.get_server_parameters())

    def is_closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self._closed or self._protocol.is_closed()

    def is_in_transaction(self) -> bool:
        """True while a transaction (or a failed one) is open on this connection."""
        return self._protocol.is_in_transaction()

    # --- queries ---

    async def execute(self, query: str, *args, timeout: Optional[float] = None) -> str:
        """Run a command and return its status tag, e.g. ``'INSERT 0 1'``.

        Without arguments the simple query protocol is used, so several
        statements separated by semicolons may be given; the tag of the last
        one is returned.
        """
        if not args:
            if self._query_loggers:
                return await self._log_query(self._simple_query(query, timeout),
                                             query, args, timeout)
            return await self._simple_query(query, timeout)
        return await self._execute(query, args, 0, timeout, True, None)

    async def executemany(self, command: str, args, *, timeout: Optional[float] = None) -> None:
        """Run `command` once per argument sequence in `args`, pipelined.

        All rows travel in one pipeline (many Bind/Execute messages per network
        write, one Sync at the end), so this costs one round trip, not one per
        row.  It is atomic: if any row fails (bad input raises DataError naming
        the row index; a server error raises that error), nothing is applied.
        `args` may be any iterable or async iterable of argument sequences.
        """
        if self._query_loggers:
            return await self._log_query(self._executemany(command, args, timeout),
                                         command, args, timeout)
        return await self._executemany(command, args, timeout)

    async def _executemany(self, command: str, args, timeout) -> None:
        if timeout is None:
            timeout = self._command_timeout
        await self._ready(timeout)
        deadline = None if timeout is None else self._loop.time() + timeout
        state = self._stmt_cache.get(command)
        if state is None:
            state = await self._prepare_state(command, timeout)
        try:
            await self._executemany_state(state, args, self._time_left(deadline))
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            # Only a sequence can be sent again: an iterator is partly consumed.
            if not isinstance(args, (list, tuple)) or not self._may_retry_after(e, command):
                raise
            state = await self._prepare_state(command, self._time_left(deadline))
            await self._executemany_state(state, args, self._time_left(deadline))

    async def fetchmany(self, query: str, args, *, timeout: Optional[float] = None,
                        record_class=None) -> list:
        """Run `query` once per argument sequence and return all result rows.

        Like executemany() (one pipeline, atomic), but the rows every
        execution returns (e.g. ``INSERT ... RETURNING``) come back in order.
        """
        if self._query_loggers:
            return await self._log_query(
                self._fetchmany(query, args, timeout, record_class), query, args, timeout)
        return await self._fetchmany(query, args, timeout, record_class)

    async def _fetchmany(self, query: str, args, timeout, record_class) -> list:
        self._check_open()
        if timeout is None:
            timeout = self._command_timeout
        if self._stmts_to_close or self._protocol.get_resync_waiter() is not None:
            timeout = await self._wait_in_sync_within(timeout)
        deadline = None if timeout is None else self._loop.time() + timeout
        state = self._stmt_cache.get(query)
        if state is None:
            state = await self._prepare_state(query, timeout)
        return await self._executemany_state(
            state, args, self._time_left(deadline), return_rows=True,
            record_class=record_class if record_class is not None else self._record_class)

    async def _executemany_state(self, state, args, timeout, *, return_rows=False,
                                 record_class=None):
        proto = self._protocol
        batch_size = 1000
        fut = proto.executemany_start(state, timeout, return_rows, record_class)
        proto.begin_stream()
        try:
            base = 0
            if hasattr(args, '__aiter__'):
                batch = []
                async for row in args:
                    batch.append(row)
                    if len(batch) >= batch_size:
                        proto.executemany_write(state, batch, base)
                        base += len(batch)
                        batch = []
                        if proto.executemany_failed():
                            break
                        drain = proto.get_drain_waiter()
                        if drain is not None:
                            await drain
                if batch:
                    proto.executemany_write(state, batch, base)
            else:
                iterator = iter(args)
                while True:
                    batch = list(itertools.islice(iterator, batch_size))
                    if not batch:
                        break
                    proto.executemany_write(state, batch, base)
                    base += len(batch)
                    if proto.executemany_failed():
                        break
                    drain = proto.get_drain_waiter()
                    if drain is not None:
                        await drain
            proto.end_stream()
            proto.executemany_finish(False)
        except asyncio.CancelledError as exc:
            # Our own timeout or cancel() interrupting a stalled async source
            # is a timeout / query cancel for the caller, not a cancellation.
            replacement = stream_interrupted(proto, exc, fut)
            if replacement is not None:
                raise replacement from None
            proto.abandon()
            raise
        except BaseException:
            # Bad input (DataError naming the row) or a failing iterator:
            # make the server roll back what was already sent, then re-raise.
            proto.end_stream()
            proto.executemany_finish(True)
            try:
                await fut
            except Exception:
                pass
            raise
        return await self._await_op(fut)

    async def fetch(self, query: str, *args, timeout: Optional[float] = None,
                    record_class=None) -> list:
        """Run a query and return all result rows as a list of :class:`Record`."""
        return await self._execute(query, args, 0, timeout, False, record_class)

    async def fetchrow(self, query: str, *args, timeout: Optional[float] = None,
                       record_class=None):
        """Run a query and return the first row, or None if there are no rows."""
        rows = await self._execute(query, args, 1, timeout, False, record_class)
        return rows[0] if rows else None

    async def fetchval(self, query: str, *args, column: int | str = 0,
                       timeout: Optional[float] = None) -> Any:
        """Run a query and return one value of the first row (None if no rows)."""
        rows = await self._execute(query, args, 1, timeout, False, None)
        if not rows:
            return None
        return rows[0][column]

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
            await asyncio.shield(gate)

    # --- prepared statements, cursors, transactions ---

    async def prepare(self, query: str, *, name: Optional[str] = None,
                      timeout: Optional[float] = None,
                      record_class: Optional[type] = None) -> PreparedStatement:
        """Prepare `query` on the server and return a :class:`PreparedStatement`.

        Without `name`, a statement already in the connection's statement
        cache is reused (no round trip) and a new one is added to it; the
        returned object keeps its statement valid on the server as long as
        it is referenced, even if the cache evicts the entry.  With `name`,
        the server statement gets exactly that name and is closed when the
        PreparedStatement is garbage collected.
        """
        if record_class is not None:
            check_record_class(record_class)
        if timeout is None:
            timeout = self._command_timeout
        await self._ready(timeout)
        if name is None and self._is_cacheable(query):
            state = self._stmt_cache.get(query)
            if state is None:
                state = await self._prepare_state(query, timeout)
        else:
            state = await self._prepare_state(query, timeout, name=name, cache=False, named=True)
            self._held_stmts.add(state)
        return PreparedStatement(self, query, state, record_class, name is not None)

    def cursor(self, query: str, *args, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               record_class: Optional[type] = None) -> CursorFactory:
        """A cursor over the rows of `query`: iterate it, or await it for a :class:`Cursor`.

        ``async for row in conn.cursor(q)`` fetches `prefetch` rows (default
        50) per round trip, so memory stays bounded however many rows the
        query returns; ``cur = await conn.cursor(q)`` gives a
        :class:`~mypgdriver.cursor.Cursor` with fetch(n), fetchrow() and
        forward(n).  Cursors are server-side portals and live only inside a
        transaction.
        """
        self._check_open()
        if record_class is not None:
            check_record_class(record_class)
        return CursorFactory(self, query, None, args, prefetch, timeout, record_class)

    def transaction(self, *, isolation: Optional[str] = None, readonly: bool = False,
                    deferrable: bool = False) -> Transaction:
        """A :class:`Transaction`: use ``async with`` or start()/commit()/rollback().

        `isolation` is one of ``'read_committed'``, ``'read_uncommitted'``,
        ``'repeatable_read'``, ``'serializable'`` (None: the server default).
        Inside another transaction block this creates a savepoint.
        """
        self._check_open()
        return Transaction(self, isolation, readonly, deferrable)

    async def reload_schema_state(self) -> None:
        """Forget cached type information and prepared statements.

        Call this after changing types the connection has already used (for
        example ``ALTER TYPE`` on a composite type) when the change is
        otherwise reported as :exc:`~mypgdriver.exceptions.OutdatedSchemaCacheError`.
        """
        self._drop_schema_caches()

    # --- query logging ---

    def add_query_logger(self, callback: Callable[[LoggedQuery], Any]) -> None:
        """Call `callback` with a :class:`LoggedQuery` after each query.

        `callback` may be a plain function (called soon after the query, from
        the event loop) or a coroutine function (run as a task).  Logged are
        execute(), executemany() and the fetch methods, including the
        statements that transactions run; not prepared-statement, cursor or
        COPY operations (as in asyncpg).
        """
        if callback not in self._query_loggers:
            self._query_loggers.append(callback)

    def remove_query_logger(self, callback: Callable[[LoggedQuery], Any]) -> None:
        """Stop calling `callback` (added with add_query_logger())."""
        with contextlib.suppress(ValueError):
            self._query_loggers.remove(callback)

    @contextlib.contextmanager
    def query_logger(self, callback: Callable[[LoggedQuery], Any]) -> Iterator[None]:
        """Context manager: `callback` logs the queries run inside the ``with`` block."""
        self.add_query_logger(callback)
        try:
            yield
        finally:
            self.remove_query_logger(callback)

    async def _log_query(self, operation, query: str, args, timeout):
        """Await `operation` and report it to the query loggers, failed or not."""
        if timeout is None:
            timeout = self._command_timeout
        started = time.monotonic()
        error = None
        try:
            return await operation
        except BaseException as e:
            error = e
            raise
        finally:
            record = LoggedQuery(query, args, timeout, time.monotonic() - started, error,
                                 self._addr, self._params)
            for callback in list(self._query_loggers):
                if inspect.iscoroutinefunction(callback):
                    task = self._loop.create_task(callback(record))
                    _logger_tasks.add(task)
                    task.add_done_callback(_logger_tasks.discard)
                else:
                    self._loop.call_soon(callback, record)

    # --- session state ---

    async def reset(self, *, timeout: Optional[float] = None) -> None:
        """Return the session to a clean state (what a pool does on release).

        Rolls back an open transaction, closes all cursors, releases session
        advisory locks, stops listening on all channels (and forgets their
        callbacks), drops temporary tables and resets all settings to their
        defaults: one round trip.
        """
        self._check_open()
        query = self.get_reset_query()
        if self.is_in_transaction() or self._top_xact is not None:
            query = 'ROLLBACK;\n' + query
        self._top_xact = None
        self._listeners.clear()
        self._log_listeners.clear()
        await self.execute(query, timeout=timeout)

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

    def _on_release(self) -> None:
        """Called by a pool when the connection goes back: forget the user's callbacks."""
        self._listeners.clear()
        self._log_listeners.clear()

    # --- closing ---

    async def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the connection gracefully (Terminate, then close the socket)."""
        if self.is_closed():
            self._closed = True
            return
        self._closed = True
        self._protocol.terminate()

    def terminate(self) -> None:
        """Close the connection at once, without waiting for anything."""
        self._closed = True
        self._protocol.abort()

    # --- internals ---

    def _check_open(self) -> None:
        if self._closed:
            raise exceptions.InterfaceError('cannot perform operation: connection is closed')
        if self._protocol.is_closed():
            # Lost (server gone, backend terminated): say so even for calls
            # that need no round trip, such as prepare() of a cached statement.
            raise exceptions.ConnectionDoesNotExistError(
                'cannot perform operation: the connection was lost')

    async def _ready(self, timeout=None) -> None:
        """Check the connection is open and in sync before an operation starts."""
        self._check_open()
        if self._stmts_to_close or self._protocol.get_resync_waiter() is not None:
            await self._wait_in_sync(timeout)

    async def _wait_in_sync(self, timeout=None) -> None:
        """Wait until an abandoned operation has drained (bounded by `timeout`)."""
        resync = self._protocol.get_resync_waiter()
        if resync is not None:
            if timeout is None:
                await asyncio.shield(resync)
            else:
                # A stalled server must not make the next call hang past
                # its own timeout; the drain goes on in the background.
                await asyncio.wait_for(asyncio.shield(resync), timeout)
        if self._stmts_to_close:
            await self._close_removed_statements()

    async def _await_op(self, fut):
        """Await a protocol operation; if our task is cancelled, resync the connection."""
        try:
            return await fut
        except asyncio.CancelledError:
            self._protocol.abandon()
            raise

    async def _wait_in_sync_within(self, timeout):
        """_wait_in_sync() counted against `timeout`; returns the time left."""
        if timeout is None:
            await self._wait_in_sync()
            return None
        deadline = self._loop.time() + timeout
        await self._wait_in_sync(timeout)
        return deadline - self._loop.time()

    def _time_left(self, deadline: Optional[float]) -> Optional[float]:
        # The protocol turns a non-positive timeout into TimeoutError.
        return None if deadline is None else deadline - self._loop.time()

    async def _simple_query(self, query: str, timeout) -> str:
        self._check_open()
        proto = self._protocol
        if timeout is None:
            timeout = self._command_timeout
        if proto.get_resync_waiter() is not None or self._stmts_to_close:
            timeout = await self._wait_in_sync_within(timeout)
        fut = proto.simple_query(query, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise

    async def _execute(self, query: str, args: Sequence, limit: int, timeout,
                       want_status: bool, record_class, log: bool = True):
        # The hot path: a cached statement costs one Bind/Execute/Sync.  Misses,
        # logging and schema-change recovery live in other methods, so this one
        # only pays for a few attribute checks.
        if self._query_loggers and log:
            return await self._log_query(
                self._execute(query, args, limit, timeout, want_status, record_class, False),
                query, args, timeout)
        if self._closed:
            self._check_open()
        proto = self._protocol
        if timeout is None:
            timeout = self._command_timeout
        if self._stmts_to_close or proto.get_resync_waiter() is not None:
            timeout = await self._wait_in_sync_within(timeout)
        state = self._stmt_cache.get(query)
        if state is None:
            return await self._execute_uncached(query, args, limit, timeout, want_status,
                                                record_class)
        deadline = None if timeout is None else self._loop.time() + timeout
        fut = proto.bind_execute(state, args, limit, timeout, want_status,
                                 record_class if record_class is not None else self._record_class)
        try:
            return await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            if not self._may_retry_after(e, query):
                raise
            return await self._execute_again(query, args, limit, deadline, want_status,
                                              record_class)

    async def _execute_uncached(self, query, args, limit, timeout, want_status, record_class):
        deadline = None if timeout is None else self._loop.time() + timeout
        state = await self._prepare_state(query, timeout)
        try:
            return await self._run_state(state, args, limit, self._time_left(deadline),
                                         want_status, record_class)
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            if not self._may_retry_after(e, query):
                raise
            return await self._execute_again(query, args, limit, deadline, want_status,
                                              record_class)

    async def _execute_again(self, query, args, limit, deadline, want_status, record_class):
        """The one retry after a schema change: prepare afresh and run once more."""
        state = await self._prepare_state(query, self._time_left(deadline))
        return await self._run_state(state, args, limit, self._time_left(deadline),
                                     want_status, record_class)

    async def _run_state(self, state, args, limit, timeout, want_status, record_class):
        """Bind and execute a prepared statement (the caller made sure we are in sync)."""
        proto = self._protocol
        if record_class is None:
            record_class = self._record_class
        fut = proto.bind_execute(state, args, limit, timeout, want_status, record_class)
        return await self._await_op(fut)

    async def _bind_portal(self, state, args, portal: str, limit: int, timeout, record_class):
        """Bind `args` to a named portal and fetch its first `limit` rows."""
        proto = self._protocol
        if record_class is None:
            record_class = self._record_class
        fut = proto.bind_execute_portal(state, args, portal, limit, timeout, record_class)
        return await self._await_op(fut)

    def _may_retry_after(self, error: BaseException, query: str) -> bool:
        """React to a statement that no longer matches the schema; True if a retry is safe.

        InvalidCachedStatementError (SQLSTATE 0A000, "cached plan must not
        change result type") comes from the server before the statement ran:
        re-preparing fixes it, but inside a transaction block the error has
        already failed the transaction.  OutdatedSchemaCacheError means our
        knowledge of a type (a composite's fields) is stale; the statement did
        run, so only a plain read is repeated.
        """
        if isinstance(error, exceptions.InvalidCachedStatementError):
            # The schema changed: other cached statements are suspect too.
            self._stmt_cache.clear()
            if self.is_in_transaction():
                _add_hint(error, 'The statement cache was cleared. Inside a transaction '
                          'block the statement cannot be retried: roll back and run the '
                          'transaction again.')
                return False
            return True
        self._drop_schema_caches()
        if self.is_in_transaction():
            return False
        return _is_plain_read(query)

    def _drop_schema_caches(self) -> None:
        self._codecs.clear_introspected()
        self._stmt_cache.clear()

    async def _refresh_codecs(self, state, timeout) -> None:
        """Re-pick the codecs of a held statement after the registry changed."""
        missing = missing_statement_types(state, self._codecs)
        if missing:
            await self._introspect_types(missing, timeout)
        resolve_statement_codecs(state, self._codecs)

    # Workaround until the protocol can re-send Parse itself.  The unnamed
    # statement ('' -- used when the statement cache is off or a query is too
    # big to cache) lives only until the next Parse of '' in the session, and
    # behind pgbouncer in transaction mode the next Sync may even move us to
    # another server connection.  So every Bind of '' is preceded by its Parse
    # in the same Sync batch: the server answers ParseComplete, which the
    # protocol ignores, or an error that fails the operation as usual.
    # Requested protocol change: bind_execute / bind_execute_portal /
    # executemany_start(..., reparse=True) writing Parse(name, query,
    # param_oids) before the Bind.

    def _is_cacheable(self, query: str) -> bool:
        limit = self._max_cacheable_size
        return self._stmt_cache.max_size > 0 and (not limit or len(query) <= limit)

    async def _prepare_state(self, query: str, timeout, *, name: Optional[str] = None,
                             cache: bool = True, named: bool = False) -> StatementState:
        """Parse and describe `query`, learn its types and pick its codecs.

        With `cache` (and no `name`), a cacheable query gets a generated name
        and goes into the statement cache; otherwise the statement is unnamed
        unless `name` is given or `named` asks for a generated one.
        """
        use_cache = cache and name is None and self._is_cacheable(query)
        if name is None:
            name = f'__mypg_{self._id}_{next(self._stmt_ids)}__' if use_cache or named else ''
        state = StatementState(name, query)
        await self._await_op(self._protocol.prepare(state, timeout))
        try:
            missing = missing_statement_types(state, self._codecs)
            if missing:
                await self._introspect_types(missing, timeout)
            resolve_statement_codecs(state, self._codecs)
        except BaseException:
            self._queue_statement_close(state)
            raise
        if use_cache:
            self._stmt_cache.put(query, state)
        return state

    async def _introspect_types(self, oids, timeout) -> None:
        """Teach the codec registry about `oids` (and what they contain)."""
        if self._introspection_query is None:
            version = self._server_version
            num = version.major * 10000 + version.micro if version.major >= 10 else (
                version.major * 10000 + version.minor * 100 + version.micro)
            self._introspection_query = introspection.introspection_query(num)
        oids = sorted(oids)
        rows = []
        # Chunks keep the query's estimated cost under jit_above_cost (see
        # introspection.py); one query covers every realistic statement.
        for start in range(0, len(oids), introspection.MAX_OIDS_PER_QUERY):
            rows.extend(await self._execute(
                self._introspection_query,
                (oids[start:start + introspection.MAX_OIDS_PER_QUERY],), 0, timeout,
                False, Record, False))
        self._codecs.add_types(introspection.rows_to_type_info(rows))

    # Statement ownership.  The cache owns the statements it holds; a
    # PreparedStatement or cursor adds a reference (StatementState.refs).  A
    # statement leaving the cache while referenced moves to _held_stmts and is
    # closed on the server when its last reference goes; one that nobody
    # references is closed before the next operation.

    def _attach_statement(self, state) -> None:
        state.refs += 1

    def _detach_statement(self, state) -> None:
        state.refs -= 1
        if state.refs <= 0 and state in self._held_stmts:
            self._held_stmts.discard(state)
            self._queue_statement_close(state)

    def _on_statement_removed(self, state) -> None:
        if state.refs > 0:
            self._held_stmts.add(state)
        else:
            self._queue_statement_close(state)

    def _queue_statement_close(self, state) -> None:
        if state.name and not state.closed:
            state.closed = True
            self._stmts_to_close.append(state.name)

    async def _close_removed_statements(self) -> None:
        names, self._stmts_to_close = self._stmts_to_close, []
        if not names or self.is_closed():
            return
        fut = self._protocol.close_statements(names, None)
        try:
            await fut
        except asyncio.CancelledError:
            self._protocol.abandon()
            raise


def _add_hint(error: exceptions.PostgresError, text: str) -> None:
    # Server errors are filled through __dict__ (see exceptions._base).
    hint = error.hint
    error.__dict__['hint'] = f'{hint}\n{text}' if hint else text


_READ_KEYWORDS = frozenset(('select', 'values', 'table', 'show'))
_FIRST_WORD = re.compile(r'[A-Za-z]+')


def _is_plain_read(query: str) -> bool:
    """True if `query` starts like a read (SELECT, VALUES, TABLE, SHOW), comments skipped."""
    text = query.lstrip()
    while True:
        if text.startswith('--'):
            newline = text.find('\n')
            text = '' if newline < 0 else text[newline + 1:].lstrip()
        elif text.startswith('/*'):
            end = text.find('*/')
            text = '' if end < 0 else text[end + 2:].lstrip()
        elif text.startswith('('):
            text = text[1:].lstrip()
        else:
            break
    word = _FIRST_WORD.match(text)
    return word is not None and word.group().lower() in _READ_KEYWORDS

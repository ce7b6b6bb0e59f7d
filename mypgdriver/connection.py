"""Connection: the public API over one PostgreSQL session."""
from __future__ import annotations

import asyncio
import itertools
from typing import Any, Optional, Sequence

from mypgdriver import exceptions
from mypgdriver.codecs import introspection
from mypgdriver.codecs.registry import CodecRegistry
from mypgdriver.protocol.record import Record
from mypgdriver.protocol.statement import (
    StatementState, missing_statement_types, resolve_statement_codecs)
from mypgdriver.server_info import ConnectionSettings, ServerVersion, parse_server_version
from mypgdriver.statement_cache import StatementCache
from mypgdriver.type_codecs import TypeCodecsMixin
from mypgdriver.copy import CopyMixin
from mypgdriver.listeners import ListenersMixin

_connection_ids = itertools.count(1)


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


class Connection(TypeCodecsMixin, CopyMixin, ListenersMixin):
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
                 # query logging, transactions, cursors
                 '_query_loggers', '_top_xact', '_cursor_ids',
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
        self._check_open()
        if self._stmts_to_close or self._protocol.get_resync_waiter() is not None:
            await self._wait_in_sync()
        if timeout is None:
            timeout = self._command_timeout
        deadline = None if timeout is None else self._loop.time() + timeout
        state = self._stmt_cache.get(command)
        if state is None:
            state = await self._prepare_state(command, timeout)
        if deadline is not None:
            timeout = deadline - self._loop.time()
        await self._executemany_state(state, args, timeout)

    async def _executemany_state(self, state, args, timeout) -> None:
        proto = self._protocol
        batch_size = 1000
        fut = proto.executemany_start(state, timeout)
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
            proto.executemany_finish(False)
        except asyncio.CancelledError:
            proto.abandon()
            raise
        except BaseException:
            # Bad input (DataError naming the row) or a failing iterator:
            # make the server roll back what was already sent, then re-raise.
            proto.executemany_finish(True)
            try:
                await fut
            except Exception:
                pass
            raise
        await self._await_op(fut)

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
        proto = self._protocol
        if self.is_closed() or not proto.is_busy() or proto.cancel_request is None:
            return
        await proto.cancel_request()

    # --- session state ---

    async def reset(self, *, timeout: Optional[float] = None) -> None:
        """Return the session to a clean state (what a pool does on release).

        Rolls back an open transaction, closes all cursors, releases session
        advisory locks, stops listening on all channels and resets all
        settings to their defaults.
        """
        self._check_open()
        query = self._reset_query()
        if self.is_in_transaction():
            query = 'ROLLBACK;\n' + query
        await self.execute(query, timeout=timeout)

    def _reset_query(self) -> str:
        return ('SELECT pg_catalog.pg_advisory_unlock_all();\n'
                'CLOSE ALL;\n'
                'UNLISTEN *;\n'
                'RESET ALL;')

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

    async def _wait_in_sync(self) -> None:
        resync = self._protocol.get_resync_waiter()
        if resync is not None:
            await asyncio.shield(resync)
        if self._stmts_to_close:
            await self._close_removed_statements()

    async def _await_op(self, fut):
        """Await a protocol operation; if our task is cancelled, resync the connection."""
        try:
            return await fut
        except asyncio.CancelledError:
            self._protocol.abandon()
            raise

    async def _simple_query(self, query: str, timeout) -> str:
        self._check_open()
        proto = self._protocol
        if proto.get_resync_waiter() is not None or self._stmts_to_close:
            await self._wait_in_sync()
        if timeout is None:
            timeout = self._command_timeout
        fut = proto.simple_query(query, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise

    async def _execute(self, query: str, args: Sequence, limit: int, timeout,
                       want_status: bool, record_class):
        if self._closed:
            self._check_open()
        proto = self._protocol
        if self._stmts_to_close or proto.get_resync_waiter() is not None:
            await self._wait_in_sync()
        if timeout is None:
            timeout = self._command_timeout
        state = self._stmt_cache.get(query)
        if state is None:
            if timeout is not None:
                deadline = self._loop.time() + timeout
                state = await self._prepare_state(query, timeout)
                timeout = deadline - self._loop.time()
            else:
                state = await self._prepare_state(query, None)
        fut = proto.bind_execute(state, args, limit, timeout, want_status,
                                 record_class if record_class is not None else self._record_class)
        try:
            return await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise

    async def _prepare_state(self, query: str, timeout, *, name: Optional[str] = None,
                             cache: bool = True) -> StatementState:
        use_cache = cache and self._stmt_cache.max_size > 0 and len(query) <= self._max_cacheable_size
        if name is None:
            name = f'__mypg_{self._id}_{next(self._stmt_ids)}__' if use_cache else ''
        state = StatementState(name, query)
        proto = self._protocol
        fut = proto.prepare(state, timeout)
        try:
            await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise
        missing = missing_statement_types(state, self._codecs)
        if missing:
            await self._introspect_types(missing, timeout)
        resolve_statement_codecs(state, self._codecs)
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
        rows = await self._execute(self._introspection_query, (list(oids),), 0, timeout,
                                   False, Record)
        self._codecs.add_types(introspection.rows_to_type_info(rows))

    def _on_statement_removed(self, state) -> None:
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

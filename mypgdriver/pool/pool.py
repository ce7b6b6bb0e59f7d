"""Pool, create_pool() and PoolAcquireContext: asyncpg's pool API over the slots.

How the pool keeps its promises:

* **Slots.** At most ``max_size`` connections exist or are being opened.  A
  slot is taken before a connection is opened and given up when it is closed;
  a freed slot goes straight to the first waiter, who opens a connection in
  it, so there is never a moment when a slot is free while someone waits.
* **Waiters are served in order**: a released connection (or a freed
  slot) is handed to exactly one of them, so nobody is woken only to find
  nothing there.
* **One core for both pools.**  The slots, the idle list, the line of
  waiters, lifetimes and what becomes of a released connection are decided
  by :class:`~mypgdriver.pool.core.PoolCore`, which does no I/O; this
  module is its asyncio driver (it opens, resets and closes connections,
  waits with futures, and runs the background tasks), and mypgdriver.sync's
  pool is its thread driver.
* **Nothing broken is handed out.**  A connection is reset on release (the
  ``reset`` callback, else :meth:`Connection.reset`).  One that was released
  while an operation was running on it, whose protocol is still busy or
  draining a cancelled query, whose reset failed, or which is closed, is
  terminated and its slot refilled.  One past ``max_queries`` or from before
  :meth:`Pool.expire_connections` is closed gracefully and replaced.
* **Connections that die while idle** (backend terminated, server restarted)
  are found by ``is_closed()`` when they are taken from the idle list, and
  by a look over the idle list every second, and are replaced.  The
  remaining gap, a connection that died a moment before its first query, is
  closed by the proxy: see :class:`~mypgdriver.pool.PoolConnectionProxy`.
* **Recovery.**  When opening a connection fails because the server cannot
  be reached or is starting up, an ``acquire()`` keeps retrying with backoff
  for as long as its timeout allows (``connect_retry_timeout`` when it has
  none), and a background task refills the pool up to ``min_size``.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import logging
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Deque,
    Generator,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Type,
    Union,
    cast,
    overload,
)

from mypgdriver import exceptions, tracing
from mypgdriver._typing import ArgumentRows, RecordT, RowT
from mypgdriver.connecting import connector
from mypgdriver.connection import Connection
from mypgdriver.core import deadlines
from mypgdriver.pool.arguments import check_pool_arguments
from mypgdriver.pool.core import (
    CLOSING,
    IDLE,
    RELEASED_CLOSING,
    RESET_FAILED,
    RETIRED,
    REUSABLE,
    Backoff,
    PoolCore,
)
from mypgdriver.pool.proxy import PoolConnectionProxy
from mypgdriver.pool.reset import (
    close_quietly,
    default_reset,
    end_open_transaction,
    in_unknown_state,
)
from mypgdriver.pool.shortcuts import may_share, overridden_shortcuts, shared_load
from mypgdriver.pool.sizes import PoolSizes
from mypgdriver.pool.slots import NEW_SLOT, Handoff, PooledConnection, wait_in_line
from mypgdriver.pool.stats import PoolCounters, PoolStats
from mypgdriver.pool.timeouts import DEADLINE_SLACK, TRANSIENT_CONNECT_ERRORS, opening_timed_out
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory
from mypgdriver.tracing import TELEMETRY
from mypgdriver.types import JsonCodec

__all__ = ('create_pool', 'Pool', 'PoolAcquireContext')

# Named for the package, as before it was one: the logger users configure.
logger = logging.getLogger('mypgdriver.pool')


# How long close() waits before saying why it is not done yet.
_LONG_CLOSE_WARNING = 60.0

# How often idle connections are looked at for having been closed by the
# server (a look at a flag, no I/O), so that the pool refills by itself after
# a restart instead of on the next acquire.
_IDLE_CHECK_INTERVAL = 1.0



class Pool(PoolSizes[PoolCore]):
    """A pool of connections to one PostgreSQL server.

    Create it with :func:`create_pool`; see there for the arguments.  Take a
    connection with :meth:`acquire` (``async with pool.acquire() as con``) or
    run a single query with the shortcut methods (:meth:`fetch`, ...).
    """

    def __init__(self, dsn: Optional[str] = None, *,
                 init_size: Optional[int] = None,
                 min_size: int,
                 max_size: int,
                 max_queries: int,
                 max_inactive_connection_lifetime: float,
                 connect: Optional[Callable[..., Awaitable[Connection]]] = None,
                 setup: Optional[Callable[['PoolConnectionProxy'], Awaitable[None]]] = None,
                 init: Optional[Callable[[Connection], Awaitable[None]]] = None,
                 reset: Optional[Callable[[Connection], Awaitable[None]]] = None,
                 loop: Optional[asyncio.AbstractEventLoop] = None,
                 connection_class: Type[Connection] = Connection,
                 record_class: Type[Record] = Record,
                 connect_retry_timeout: float = 10.0,
                 row_factory: Optional[RowFactory[Any]] = None,
                 json: Union[bool, JsonCodec] = False,
                 **connect_kwargs: Any) -> None:
        init_size = check_pool_arguments(Connection, 'mypgdriver.Connection', locals())

        self._loop = loop
        self._init_size = init_size
        self._min_size = min_size
        self._max_size = max_size
        self._max_queries = max_queries
        self._max_inactive = max_inactive_connection_lifetime
        self._connect_retry_timeout = connect_retry_timeout
        self._connect_fn = connect
        self._connect_dsn = dsn
        self._connect_kwargs = connect_kwargs
        self._setup = setup
        self._init = init
        self._reset = reset
        self._connection_class = connection_class
        self._record_class = record_class
        # json=: given to every connection the pool opens (unless its
        # connect arguments name one), checked once here.
        self._json = connector.resolve_json_option(json)
        # Shortcut methods that the connection class overrides: they run on
        # a connection of their own (see _shortcut).
        self._overridden_shortcuts = overridden_shortcuts(connection_class)

        self._initialized = False
        self._initializing = False

        self._counters = PoolCounters()
        # Slots, connections, the idle list and the line of waiting acquires,
        # and every decision about them (mypgdriver/pool/core.pyx).
        self._core = PoolCore(self._counters, min_size=min_size, max_size=max_size,
                              max_queries=max_queries,
                              max_inactive=max_inactive_connection_lifetime)
        # Connections lent to shortcut calls, which pipeline onto them.
        self._sharing: List[PooledConnection] = []
        # Shortcut calls waiting until a connection can be lent or shared.
        self._lend_waiters: Deque[asyncio.Future] = collections.deque()
        self._refill_task: Optional[asyncio.Task] = None
        self._expiry_handle: Optional[asyncio.TimerHandle] = None
        self._idle_check_handle: Optional[asyncio.TimerHandle] = None
        self._drained: Optional[asyncio.Future] = None  # set when _slots drops to 0 on close
        self._close_tasks: Set[asyncio.Task] = set()
        # db.client.connection.pool.name (tracing.name_pool(), once tracing is live).
        self._otel_pool_name: Optional[str] = None

    def __repr__(self) -> str:
        state = ('closed' if self._core.closed else 'closing' if self._core.closing
                 else 'open' if self._initialized else 'new')
        return (f'<{type(self).__name__} {state} size={len(self._core.all)} '
                f'idle={len(self._core.idle)} min={self._min_size} max={self._max_size}>')

    # The core's state under the names the tests know.
    @property
    def _slots(self) -> int:
        """Open + being opened + handed to a waiter to open."""
        return self._core.slots

    @property
    def _waiters(self) -> PoolCore:
        """The line of waiting acquires (its len() is how many wait)."""
        return self._core

    # --- start-up ---

    def __await__(self) -> Generator[Any, None, 'Pool']:
        return self._async_init().__await__()

    async def __aenter__(self) -> 'Pool':
        return await self._async_init()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.close()

    async def _async_init(self) -> 'Pool':
        if self._initialized:
            return self
        if self._initializing:
            raise exceptions.InterfaceError('pool is being initialized in another task')
        if self._core.closed:
            raise exceptions.InterfaceError('pool is closed')
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._initializing = True
        try:
            await self._open_initial_connections()
        except BaseException:
            self._core.mark_closed()
            for entry in list(self._core.all):
                self._retire(entry, graceful=False)
            raise
        finally:
            self._initializing = False
        self._initialized = True
        if TELEMETRY.live:
            # Reported in the connection metrics from now on.
            tracing.name_pool(self, self._connect_dsn, self._connect_kwargs)
        self._schedule_refill()
        self._idle_check_handle = self._loop.call_later(_IDLE_CHECK_INTERVAL, self._check_idle)
        return self

    async def _open_initial_connections(self) -> None:
        # All at once: start-up costs one connection's latency, not init_size.
        # No retries here: a pool that cannot connect at start-up is most
        # likely misconfigured, and saying so at once is kinder.
        count = self._init_size
        for _ in range(count):
            self._core.reserve_slot()
        results = await asyncio.gather(
            *(self._open_entry() for _ in range(count)), return_exceptions=True)
        error: Optional[BaseException] = None
        for result in results:
            if isinstance(result, PooledConnection):
                self._register(result)
                self._make_available(result)
            else:
                self._core.slot_freed()  # (nobody waits yet)
                if error is None:
                    error = result
        if error is not None:
            raise error

    # --- information ---

    def get_stats(self) -> PoolStats:
        """A snapshot of the pool's counters (a :class:`PoolStats`)."""
        return self._core.snapshot(tuple(
            (stats.in_flight, stats.max_in_flight)
            for stats in (entry.con.get_pipeline_stats() for entry in self._core.all)))

    # --- configuration ---

    def set_connect_args(self, dsn: Optional[str] = None, **connect_kwargs: Any) -> None:
        """Use these connection arguments for every connection opened from now on.

        Arguments are those of :func:`mypgdriver.connect`.  Open connections
        stay until they are replaced; call :meth:`expire_connections` to
        replace them soon.
        """
        self._connect_dsn = dsn
        self._connect_kwargs = connect_kwargs

    async def expire_connections(self) -> None:
        """Replace every open connection with a new one.

        Idle connections are closed now (and refilled in the background up
        to ``min_size``); connections in use are closed when released.
        """
        for entry in self._core.expire():
            self._discard(entry, graceful=True)

    # --- acquire ---

    def acquire(self, *, timeout: Optional[float] = None) -> 'PoolAcquireContext':
        """Take a connection from the pool.

        Use as ``async with pool.acquire() as con: ...`` (released at the end
        of the block) or as ``con = await pool.acquire()`` followed by
        :meth:`release`.  Waiters are served first come, first served.  If no
        connection is available within `timeout` seconds,
        :exc:`asyncio.TimeoutError` is raised, saying how many connections
        were in use and how many other tasks were waiting.
        """
        return PoolAcquireContext(self, timeout)

    async def _acquire(self, timeout: Optional[float],
                       observed: bool = False) -> PoolConnectionProxy:
        if TELEMETRY.live and not observed:
            # In its span (`observed`: already inside it).
            return await tracing.traced_acquire(
                self._acquire(timeout, True),
                tracing.name_pool(self, self._connect_dsn, self._connect_kwargs))
        self._check_open()
        loop = self._loop
        assert loop is not None
        core = self._core
        try:
            item = core.take()
            if (type(item) is PooledConnection and item.generation == core.generation
                    and not item.con.is_closed()):
                entry = item
                waited = 0.0
                queued = False
            else:
                start = loop.time()
                entry = await self._obtain(item, timeout)
                waited = loop.time() - start
                queued = True
            proxy = PoolConnectionProxy(self, entry, timeout)
            entry.proxy = proxy
            entry.con._session.begin_checkout(proxy)
            if self._setup is not None:
                await self._run_setup(entry, proxy)
        except asyncio.TimeoutError:
            self._counters.timeouts += 1
            raise
        core.count_acquire(waited, queued)
        return proxy

    async def _obtain(self, item: Optional[Handoff],
                      timeout: Optional[float]) -> PooledConnection:
        """An open, fresh connection from what the core's take() gave (None: wait in line)."""
        loop = self._loop
        assert loop is not None
        deadline = deadlines.deadline(loop, timeout)
        if item is None:
            # The waiter times out only at a deadline, which exists only when
            # there is a timeout: the error is never built with None.
            item = await wait_in_line(
                self._core, loop, deadline,
                functools.partial(self._waiting_timed_out, cast(float, timeout)),
                self._give_back)
            if not self._core.shut:
                return await self._ready(item, deadline, timeout)
            # Handed something just before close(): waiting acquires fail.
            self._give_back(item)
            raise exceptions.InterfaceError('pool is closing' if self._core.closing else 'pool is closed')
        return await self._ready(item, deadline, timeout)

    async def _ready(self, item: Handoff, deadline: Optional[float],
                     timeout: Optional[float]) -> PooledConnection:
        """A connection ready to hand out from `item`: checked, or opened in the slot."""
        if item is NEW_SLOT:
            return await self._open_in_slot(deadline, timeout)
        assert isinstance(item, PooledConnection)
        if self._core.fresh(item) and not item.con.is_closed():
            return item
        return await self._replace_in_slot(item, deadline, timeout)

    def _waiting_timed_out(self, timeout: float) -> asyncio.TimeoutError:
        """The error of an acquire that waited in line for `timeout` seconds in vain.

        Built as it times out (and has left the line), so that it says what
        held the connections up at that moment.
        """
        return self._core.timeout_error(timeout, 'task')

    def _give_back(self, item: Handoff) -> None:
        if item is NEW_SLOT:
            self._slot_freed()
        else:
            assert isinstance(item, PooledConnection)
            self._make_available(item)

    async def _replace_in_slot(self, entry: PooledConnection, deadline: Optional[float],
                               timeout: Optional[float]) -> PooledConnection:
        """Close a stale or dead connection and open a new one in its slot."""
        if entry not in self._core.all:
            # Terminated (slot and all) while being handed to us.
            raise exceptions.InterfaceError('pool is closed')
        self._retire(entry, graceful=not entry.con.is_closed())
        return await self._open_in_slot(deadline, timeout)

    async def _open_in_slot(self, deadline: Optional[float] = None,
                            timeout: Optional[float] = None) -> PooledConnection:
        """Open a connection in a slot we hold, retrying while the server is away.

        `deadline` is that of an acquire() given `timeout`; without one, the
        attempts stop after ``connect_retry_timeout``.  The slot is given up
        if this fails.
        """
        loop = self._loop
        assert loop is not None
        if self._core.shut:
            self._slot_freed()
            raise exceptions.InterfaceError('pool is closing')
        retry_until = deadline
        if retry_until is None:
            retry_until = loop.time() + self._connect_retry_timeout
        backoff = Backoff()
        failure: Optional[BaseException] = None  # of the last attempt that failed by itself
        try:
            while True:
                try:
                    # The time left first: once it is gone, no connect is started.
                    left = deadlines.time_left(loop, deadline)
                    entry = await deadlines.within(loop, self._open_entry(), left,
                                                   self._discard_late_entry)
                    break
                except TRANSIENT_CONNECT_ERRORS as e:
                    if self._core.shut:
                        raise
                    wait = min(backoff.delay, retry_until - loop.time())
                    if wait <= 0:
                        if deadline is not None:
                            # The deadline's own TimeoutError (raised by
                            # within() as the time ran out) only repeats what
                            # the message says: an earlier attempt's failure,
                            # or a connect's own error, says more.
                            own_timeout = (isinstance(e, asyncio.TimeoutError)
                                           and deadline - loop.time() < DEADLINE_SLACK)
                            if not own_timeout:
                                failure = e
                            raise opening_timed_out(timeout, failure) from (failure or e)
                        raise
                    failure = e
                    logger.debug('pool: cannot open a connection (%s), retrying', e)
                    await asyncio.sleep(wait)
                    backoff.next()
        except BaseException:
            self._slot_freed()
            raise
        if not self._register(entry):
            self._discard(entry, graceful=True)
            raise exceptions.InterfaceError('pool is closing')
        return entry

    async def _open_entry(self) -> PooledConnection:
        """Open one connection and run ``init`` on it; the caller holds a slot.

        The caller registers the result with :meth:`_register`.
        """
        generation = self._core.generation
        connect = self._connect_fn if self._connect_fn is not None else connector.connect
        try:
            con = await connect(self._connect_dsn, loop=self._loop,
                                connection_class=self._connection_class,
                                record_class=self._record_class,
                                **with_json(self._connect_kwargs, self._json))
            if not isinstance(con, self._connection_class):
                bad = type(con)
                con_close = getattr(con, 'close', None)
                if con_close is not None:
                    await con_close()
                raise exceptions.InterfaceError(
                    f'expected the pool connect callback to return an instance of '
                    f'{self._connection_class.__module__}.{self._connection_class.__qualname__}, '
                    f'got {bad.__module__}.{bad.__qualname__}')
            if type(con) is not self._connection_class:
                # A subclass from the connect callback may override more.
                self._overridden_shortcuts |= overridden_shortcuts(type(con))
            if self._init is not None:
                try:
                    await self._init(con)
                except BaseException:
                    # Whatever init left behind is unknown; do not reuse it.
                    con.terminate()
                    raise
        except asyncio.CancelledError:
            raise
        except BaseException:
            self._counters.failed += 1
            raise
        self._counters.opened += 1
        return PooledConnection(con, generation)

    def _register(self, entry: PooledConnection) -> bool:
        """Count a newly opened connection as the pool's, in the slot of its opener.

        Done by the holder of the slot once it has the connection in hand
        (never inside a task that may be abandoned), so that every
        connection of the core owns exactly one slot.  False if the pool is
        closing (the caller discards it).
        """
        still_open = self._core.register(entry)
        add_listener = getattr(entry.con, 'add_termination_listener', None)
        if add_listener is not None:
            add_listener(functools.partial(self._on_connection_terminated, entry))
        return still_open

    async def _run_setup(self, entry: PooledConnection, proxy: PoolConnectionProxy) -> None:
        assert self._setup is not None
        try:
            await self._setup(proxy)
        except BaseException:
            # The state setup left the connection in is unknown: do not reuse it.
            # The proxy setup holds answers is_closed() from now on (as asyncpg's does).
            proxy._detach()
            proxy._closed_by_setup = True
            entry.proxy = None
            self._discard(entry, graceful=not entry.con.is_closed())
            raise
        # The user's first call gets the retry for connections lost while idle.
        proxy._ops = 0

    async def _replace_lost_connection(self, proxy: PoolConnectionProxy,
                                       error: BaseException) -> Connection:
        """Give `proxy` a new connection after its first call found the old one dead."""
        old = proxy._entry
        old.proxy = None
        if old not in self._core.all:
            proxy._detach()  # terminate() took the connection and its slot
            raise error
        self._retire(old, graceful=False)
        logger.debug('pool: connection lost before its first query (%s), replacing', error)
        if self._core.shut:
            self._slot_freed()
            proxy._detach()
            raise error
        try:
            entry = await self._open_in_slot()
        except BaseException:
            # The slot is gone with the connection; release() has nothing to do.
            proxy._detach()
            raise
        proxy._entry = entry
        proxy._con = entry.con
        entry.proxy = proxy
        entry.con._session.begin_checkout(proxy)
        entry.queries = 1
        if self._setup is not None:
            await self._run_setup(entry, proxy)
        proxy._ops = 1  # the repeated call is the first one; never retry twice
        return entry.con

    # --- release ---

    async def release(self, connection: PoolConnectionProxy, *,
                      timeout: Optional[float] = None) -> None:
        """Give a connection back to the pool.

        The connection is reset (see :func:`create_pool`'s `reset`) before
        anyone else gets it; `timeout` bounds the reset and defaults to the
        timeout given to :meth:`acquire`.  A connection that cannot be reused
        (closed, still running an operation, reset failed) is terminated and
        replaced rather than reported: the caller's work is done either way.
        Releasing an already released connection does nothing.
        """
        if type(connection) is not PoolConnectionProxy or connection._pool is not self:
            raise exceptions.InterfaceError(
                f'Pool.release() received invalid connection: {connection!r} is not a '
                f'member of this pool')
        if connection._con is None:
            return
        entry = connection._entry
        was_active = connection._active
        connection._detach()
        entry.proxy = None
        if timeout is None:
            timeout = connection._timeout
        await self._release_entry(entry, was_active, timeout)

    async def _release_entry(self, entry: PooledConnection, was_active: int,
                             timeout: Optional[float]) -> None:
        con = entry.con
        core = self._core
        verdict = core.release_verdict(entry, bool(was_active) or in_unknown_state(con))
        if verdict != REUSABLE:
            if verdict == RELEASED_CLOSING:
                self._discard(entry, graceful=not con.is_closed())
            else:
                core.count_release(verdict)
                self._discard(entry, graceful=verdict == RETIRED)
            return
        if con.is_in_transaction():
            self._report_open_transaction(con)
        try:
            if self._reset is None:
                await default_reset(con, timeout)
            else:
                # Set when the pool started, before it handed out anything.
                loop = cast(asyncio.AbstractEventLoop, self._loop)
                await deadlines.within(loop, self._custom_reset(con), timeout)
        except asyncio.CancelledError:
            # The reset query was abandoned half-way: the session state is unknown.
            core.count_release(RESET_FAILED)
            self._discard(entry, graceful=False)
            raise
        except Exception as e:
            core.count_release(RESET_FAILED)
            # A connection lost during the reset is routine (server restart);
            # anything else is worth a word, e.g. a failing reset callback.
            log = logger.debug if con.is_closed() else logger.warning
            log('pool: resetting a released connection failed, replacing it: %r', e)
            self._discard(entry, graceful=False)
            return
        if in_unknown_state(con) or con.is_in_transaction():
            core.count_release(RESET_FAILED)
            self._discard(entry, graceful=False)
            return
        core.count_release(REUSABLE)
        if self._core.shut:
            self._discard(entry, graceful=True)
            return
        self._make_available(entry)

    def _report_open_transaction(self, con: Connection) -> None:
        # Through the loop's exception handler, as asyncpg reports it: a
        # connection given back inside a transaction is a bug of its user
        # (a missing COMMIT or ROLLBACK), and its writes are about to be lost.
        loop = self._loop
        assert loop is not None
        loop.call_exception_handler({
            'message': 'pool: a connection was released inside an open transaction, '
                       'which is rolled back',
            'connection': con,
        })

    async def _custom_reset(self, con: Connection) -> None:
        assert self._reset is not None
        await end_open_transaction(con)
        await self._reset(con)

    # --- slots and idle connections ---

    def _make_available(self, entry: PooledConnection) -> None:
        """Hand a ready connection to the first waiter, or put it in the idle list."""
        loop = self._loop
        assert loop is not None
        outcome = self._core.make_available(entry, loop.time())
        if outcome == CLOSING:
            self._discard(entry, graceful=True)
            return
        if outcome != IDLE:
            return  # handed to a waiter, or terminated meanwhile
        if self._lend_waiters:
            self._wake_lend_waiters(entry.con.get_pipeline_stats().limit)
        if self._expiry_handle is None and self._max_inactive:
            expiry = self._core.next_expiry()
            if expiry is not None:
                self._expiry_handle = loop.call_at(expiry, self._expire_idle)

    def _slot_freed(self) -> None:
        """A slot was given up: pass it to the first waiter, or count it free."""
        core = self._core
        if core.slot_freed():
            return
        self._wake_lend_waiters(1)
        if core.shut:
            if core.drained() and self._drained is not None and not self._drained.done():
                self._drained.set_result(None)
            return
        self._schedule_refill()

    def _discard(self, entry: PooledConnection, *, graceful: bool) -> None:
        """Close a connection and give up its slot.

        Does nothing if the pool no longer owns it: terminate() may have
        closed it (and freed its slot) while it was being reset or handed
        over, and a slot must be freed exactly once.
        """
        if entry in self._core.all:
            self._retire(entry, graceful=graceful)
            self._slot_freed()

    def _retire(self, entry: PooledConnection, *, graceful: bool) -> None:
        """Close a connection the pool owns; its slot stays with the caller."""
        if not self._core.retire(entry):
            return
        con = entry.con
        if graceful and not con.is_closed():
            loop = self._loop
            assert loop is not None
            task = loop.create_task(close_quietly(con))
            self._close_tasks.add(task)
            task.add_done_callback(self._close_tasks.discard)
        else:
            con.terminate()

    def _discard_late_entry(self, entry: PooledConnection) -> None:
        # Opened after its acquire gave up (and with it the slot): never
        # registered, so only the connection is left to close.
        self._counters.closed += 1
        entry.con.terminate()

    def _on_connection_terminated(self, entry: PooledConnection, *args: Any) -> None:
        # An idle connection the server dropped: replace it now rather than
        # at the next acquire.  Connections in use are dealt with on release.
        if self._core.remove_idle(entry):
            self._discard(entry, graceful=False)

    def _expire_idle(self) -> None:
        """Close connections above min_size idle for max_inactive_connection_lifetime."""
        self._expiry_handle = None
        if self._core.shut:
            return
        loop = self._loop
        assert loop is not None
        for entry in self._core.take_expired(loop.time()):
            self._discard(entry, graceful=True)
        expiry = self._core.next_expiry()
        if expiry is not None:
            self._expiry_handle = loop.call_at(expiry, self._expire_idle)

    def _check_idle(self) -> None:
        """Replace idle connections that were closed under us (then look again later)."""
        self._idle_check_handle = None
        if self._core.shut:
            return
        dead = [entry for entry in self._core.idle if entry.con.is_closed()]
        for entry in dead:
            if self._core.remove_idle(entry):
                self._discard(entry, graceful=False)
        loop = self._loop
        assert loop is not None
        self._idle_check_handle = loop.call_later(_IDLE_CHECK_INTERVAL, self._check_idle)

    def _schedule_refill(self) -> None:
        if (self._refill_task is None and self._initialized and not self._core.closing
                and not self._core.closed and self._core.slots < self._min_size):
            loop = self._loop
            assert loop is not None
            self._refill_task = loop.create_task(self._refill())

    async def _refill(self) -> None:
        """Open connections in the background until min_size are open or opening."""
        backoff = Backoff()
        try:
            while True:
                count = self._core.reserve_refill(self._min_size)
                if not count:
                    break
                results = await asyncio.gather(
                    *(self._refill_one() for _ in range(count)), return_exceptions=True)
                errors = [r for r in results if isinstance(r, BaseException)]
                if errors:
                    if backoff.first_failure:  # once per outage, not per attempt
                        logger.warning('pool: cannot open connections to keep min_size=%d '
                                       '(%r); retrying in the background',
                                       self._min_size, errors[0])
                    await asyncio.sleep(backoff.next())
                else:
                    backoff.reset()
        finally:
            self._refill_task = None

    async def _refill_one(self) -> None:
        try:
            entry = await self._open_entry()
        except BaseException:
            self._slot_freed()
            raise
        if not self._register(entry):
            self._discard(entry, graceful=True)
            return
        self._make_available(entry)

    # --- closing ---

    async def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the pool gracefully.

        New acquires fail with :exc:`~mypgdriver.exceptions.InterfaceError`
        at once, and so do those waiting.  Idle connections are closed now;
        connections in use are closed as they are released, and ``close()``
        returns when all are.  After `timeout` seconds (if given) the
        connections still out are terminated (and a warning is logged).  If
        ``close()`` itself is cancelled or fails, the pool is terminated.
        """
        if self._core.closed:
            return
        if not self._initialized:
            self._core.mark_closed()
            return
        loop = self._loop
        assert loop is not None
        idle = self._core.begin_close('pool is closing')
        self._stop_background()
        self._wake_all_lend_waiters()
        warning = None
        try:
            for entry in idle:
                self._discard(entry, graceful=True)
            if self._core.slots:
                self._drained = loop.create_future()
                warning = loop.call_later(
                    _LONG_CLOSE_WARNING if timeout is None else timeout + _LONG_CLOSE_WARNING,
                    self._warn_long_close)
                done, _ = await asyncio.wait([self._drained], timeout=timeout)
                if not done:
                    logger.warning('pool: close() timed out after %.1fs with %d connection(s) '
                                   'still in use; terminating them', timeout,
                                   len(self._core.all))
                    self.terminate()
            if self._close_tasks:
                await asyncio.gather(*list(self._close_tasks), return_exceptions=True)
        except BaseException:
            self.terminate()
            raise
        finally:
            if warning is not None:
                warning.cancel()
            self._core.finish_close()

    def _warn_long_close(self) -> None:
        logger.warning('pool: close() is taking long: %d connection(s) not released yet; '
                       'pass close(timeout=...) to terminate them after a while',
                       len(self._core.all) - len(self._core.idle))

    def terminate(self) -> None:
        """Close every connection at once, including those in use, and the pool."""
        if self._core.closed:
            return
        # Every connection and its slot leave the pool at once: a release
        # or a replacement in flight finds them gone.
        entries = self._core.terminate('pool is closed')
        self._stop_background()
        self._wake_all_lend_waiters()
        for entry in entries:
            if entry.proxy is not None:
                entry.proxy._detach()
                entry.proxy = None
            entry.con.terminate()
        if self._drained is not None and not self._drained.done():
            # close() waiting for releases: there is nothing left to wait for.
            self._drained.set_result(None)

    def _stop_background(self) -> None:
        if self._refill_task is not None:
            self._refill_task.cancel()
            self._refill_task = None
        for handle in (self._expiry_handle, self._idle_check_handle):
            if handle is not None:
                handle.cancel()
        self._expiry_handle = self._idle_check_handle = None

    def _wake_all_lend_waiters(self) -> None:
        # Shortcut calls waiting to borrow a connection find the pool closing.
        self._wake_lend_waiters(len(self._lend_waiters))

    def _check_open(self) -> None:
        core = self._core
        if core.shut:
            raise exceptions.InterfaceError('pool is closed' if core.closed else 'pool is closing')
        if not self._initialized:
            if self._initializing:
                raise exceptions.InterfaceError(
                    'pool is being initialized, but not yet ready: likely there is a race '
                    'between creating a pool and using it')
            raise exceptions.InterfaceError('pool is not initialized')

    # --- shortcuts: one statement on a connection from the pool ---
    #
    # Each shortcut runs one statement outside any transaction, so shortcut
    # calls can share connections: a connection taken for a shortcut is lent
    # (not acquired: no proxy, no handle escapes), and when no connection is
    # idle and the pool is full, further shortcut calls are pipelined onto
    # the least loaded lent one.  The last call to finish resets it and gives
    # it back.  Statements that could change the session for the others
    # (BEGIN, SET, LISTEN, temporary tables, advisory locks, ...) take a
    # connection of their own, as acquire() does, and so do the calls that
    # stream with the connection held alone (executemany, COPY): see
    # shortcuts.SHORTCUT_METHODS.

    async def execute(self, query: str, *args: object, timeout: Optional[float] = None) -> str:
        """Run a command on a pooled connection; see :meth:`Connection.execute`."""
        return await self._shortcut('execute', query, *args, timeout=timeout)

    async def executemany(self, command: str, args: ArgumentRows, *,
                          timeout: Optional[float] = None) -> None:
        """Run a command for each argument sequence; see ``Connection.executemany``.

        Streams its rows with the connection held alone, so it takes one of
        its own (as acquire() does) and never shares it with other shortcut
        calls.
        """
        async with self.acquire() as con:
            return await con.executemany(command, args, timeout=timeout)

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None, row_factory: None = None) -> List[Record]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: Type[RecordT], row_factory: None = None) -> List[RecordT]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None, row_factory: RowFactory[RowT]) -> List[RowT]: ...

    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: Optional[Type[Record]] = None,
                    row_factory: Optional[RowFactory[Any]] = None) -> List[Any]:
        """Run a query on a pooled connection and return all rows; see :meth:`Connection.fetch`."""
        if row_factory is None:
            return await self._shortcut('fetch', query, *args, timeout=timeout,
                                        record_class=record_class)
        return await self._shortcut('fetch', query, *args, timeout=timeout,
                                    record_class=record_class, row_factory=row_factory)

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None, row_factory: None = None) -> Optional[Record]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: Type[RecordT],
                       row_factory: None = None) -> Optional[RecordT]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None,
                       row_factory: RowFactory[RowT]) -> Optional[RowT]: ...

    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: Optional[Type[Record]] = None,
                       row_factory: Optional[RowFactory[Any]] = None) -> Any:
        """Run a query on a pooled connection and return its first row (or None)."""
        if row_factory is None:
            return await self._shortcut('fetchrow', query, *args, timeout=timeout,
                                        record_class=record_class)
        return await self._shortcut('fetchrow', query, *args, timeout=timeout,
                                    record_class=record_class, row_factory=row_factory)

    async def fetchval(self, query: str, *args: object, column: Union[int, str] = 0,
                       timeout: Optional[float] = None) -> Any:
        """Run a query on a pooled connection and return one value of its first row."""
        return await self._shortcut('fetchval', query, *args, column=column, timeout=timeout)

    async def _shortcut(self, method: str, query: str, *args: Any, **kwargs: Any) -> Any:
        """Run Connection.`method` on a lent connection (shared), or an acquired one.

        A method the connection class overrides may do anything (open a
        transaction, change settings, run several statements), so it gets a
        connection of its own through acquire(), with `self` the connection as
        in asyncpg, and never shares it.
        """
        if method in self._overridden_shortcuts:
            async with self.acquire() as con:
                return await getattr(con, method)(query, *args, **kwargs)
        entry = self._lend(query)
        if entry is None:
            entry = await self._lend_after_wait(query)
            if entry is None:
                async with self.acquire() as con:
                    return await getattr(con, method)(query, *args, **kwargs)
        try:
            return await getattr(entry.con, method)(query, *args, **kwargs)
        finally:
            await self._return_lent(entry)

    def _lend(self, query: str) -> Optional[PooledConnection]:
        """A connection for a shortcut call without waiting, or None.

        An idle connection if there is one; else, when the pool is full, the
        lent connection with the fewest calls in flight (if it has room).
        Never while acquire() calls wait: they would starve behind a
        connection that never drains.
        """
        self._check_open()
        core = self._core
        if core.line_length() or not may_share(query):
            return None
        idle = core.idle
        if idle:
            entry = idle[-1]
            if entry.generation != core.generation or entry.con.is_closed():
                return None
            idle.pop()
            core.count_acquire(0.0, False)
            entry.shared_calls = 1
            self._sharing.append(entry)
            return entry
        if core.slots < self._max_size or not self._sharing:
            return None
        best = min(self._sharing, key=shared_load)
        stats = best.con.get_pipeline_stats()
        if best.shared_calls >= stats.limit or best.con.is_closed():
            return None
        best.shared_calls += 1
        self._counters.pipelined += 1
        return best

    async def _lend_after_wait(self, query: str) -> Optional[PooledConnection]:
        """A connection for a shortcut call, waiting if needed (None: use acquire())."""
        if not may_share(query):
            return None
        loop = self._loop
        assert loop is not None
        while True:
            entry = self._lend(query)
            if entry is not None:
                return entry
            if self._core.take_slot():
                # Room for one more connection: open it for this call.
                entry = await self._open_in_slot()
                self._counters.acquires += 1
                entry.shared_calls = 1
                self._sharing.append(entry)
                self._wake_lend_waiters(entry.con.get_pipeline_stats().limit - 1)
                return entry
            # Wait until a connection is idle, lent or has room again.
            fut = loop.create_future()
            self._lend_waiters.append(fut)
            try:
                await fut
            except BaseException:
                if fut.done() and not fut.cancelled():
                    self._wake_lend_waiters(1)      # pass the chance on
                raise

    def _wake_lend_waiters(self, n: int) -> None:
        waiters = self._lend_waiters
        while n > 0 and waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                n -= 1

    async def _return_lent(self, entry: PooledConnection) -> None:
        entry.shared_calls -= 1
        entry.queries += 1
        if entry.shared_calls > 0:
            self._wake_lend_waiters(1)
            return
        self._sharing.remove(entry)
        await self._release_entry(entry, 0, None)

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: None = None, row_factory: None = None) -> List[Record]: ...

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: Type[RecordT], row_factory: None = None) -> List[RecordT]: ...

    @overload
    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None, record_class: None = None,
                        row_factory: RowFactory[RowT]) -> List[RowT]: ...

    async def fetchmany(self, query: str, args: ArgumentRows, *,
                        timeout: Optional[float] = None,
                        record_class: Optional[Type[Record]] = None,
                        row_factory: Optional[RowFactory[Any]] = None) -> List[Any]:
        """Run a query for each argument sequence and return all rows; see ``Connection.fetchmany``."""
        async with self.acquire() as con:
            if row_factory is None:
                return await con.fetchmany(query, args, timeout=timeout,
                                           record_class=record_class)
            return await cast(Any, con).fetchmany(query, args, timeout=timeout, record_class=record_class,
                                       row_factory=row_factory)

    # The COPY shortcuts spell out Connection's parameters, rather than
    # taking **kwargs, so that type checkers and IDEs know them (a misspelt
    # option is an error before it runs); every one is passed on by keyword,
    # as the query shortcuts above pass theirs.

    async def copy_from_table(self, table_name: str, *, output: Any,
                              columns: Optional[Iterable[str]] = None,
                              schema_name: Optional[str] = None,
                              timeout: Optional[float] = None, format: Optional[str] = None,
                              oids: Optional[bool] = None, delimiter: Optional[str] = None,
                              null: Optional[str] = None, header: Union[bool, str, None] = None,
                              quote: Optional[str] = None, escape: Optional[str] = None,
                              force_quote: Union[bool, Sequence[str], None] = None,
                              encoding: Optional[str] = None) -> str:
        """Copy a table's contents out; see ``Connection.copy_from_table``."""
        async with self.acquire() as con:
            return await con.copy_from_table(
                table_name, output=output, columns=columns, schema_name=schema_name,
                timeout=timeout, format=format, oids=oids, delimiter=delimiter, null=null,
                header=header, quote=quote, escape=escape, force_quote=force_quote,
                encoding=encoding)

    async def copy_from_query(self, query: str, *args: Any, output: Any,
                              timeout: Optional[float] = None, format: Optional[str] = None,
                              oids: Optional[bool] = None, delimiter: Optional[str] = None,
                              null: Optional[str] = None, header: Union[bool, str, None] = None,
                              quote: Optional[str] = None, escape: Optional[str] = None,
                              force_quote: Union[bool, Sequence[str], None] = None,
                              encoding: Optional[str] = None) -> str:
        """Copy a query's results out; see ``Connection.copy_from_query``."""
        async with self.acquire() as con:
            return await con.copy_from_query(
                query, *args, output=output, timeout=timeout, format=format, oids=oids,
                delimiter=delimiter, null=null, header=header, quote=quote, escape=escape,
                force_quote=force_quote, encoding=encoding)

    async def copy_to_table(self, table_name: str, *, source: Any,
                            columns: Optional[Iterable[str]] = None,
                            schema_name: Optional[str] = None, timeout: Optional[float] = None,
                            format: Optional[str] = None, oids: Optional[bool] = None,
                            freeze: Optional[bool] = None, delimiter: Optional[str] = None,
                            null: Optional[str] = None, header: Union[bool, str, None] = None,
                            quote: Optional[str] = None, escape: Optional[str] = None,
                            force_quote: Union[bool, Sequence[str], None] = None,
                            force_not_null: Union[bool, Sequence[str], None] = None,
                            force_null: Union[bool, Sequence[str], None] = None,
                            encoding: Optional[str] = None,
                            where: Optional[str] = None) -> str:
        """Copy data into a table; see ``Connection.copy_to_table``."""
        async with self.acquire() as con:
            return await con.copy_to_table(
                table_name, source=source, columns=columns, schema_name=schema_name,
                timeout=timeout, format=format, oids=oids, freeze=freeze, delimiter=delimiter,
                null=null, header=header, quote=quote, escape=escape, force_quote=force_quote,
                force_not_null=force_not_null, force_null=force_null, encoding=encoding,
                where=where)

    async def copy_records_to_table(self, table_name: str, *, records: ArgumentRows,
                                    columns: Optional[Iterable[str]] = None,
                                    schema_name: Optional[str] = None,
                                    timeout: Optional[float] = None,
                                    where: Optional[str] = None) -> str:
        """Copy records into a table (binary COPY); see ``Connection.copy_records_to_table``."""
        async with self.acquire() as con:
            return await con.copy_records_to_table(
                table_name, records=records, columns=columns, schema_name=schema_name,
                timeout=timeout, where=where)


class PoolAcquireContext:
    """What :meth:`Pool.acquire` returns: awaitable, and an async context manager."""

    __slots__ = ('pool', 'timeout', 'connection', 'done')

    def __init__(self, pool: Pool, timeout: Optional[float]) -> None:
        self.pool = pool
        self.timeout = timeout
        self.connection: Optional[PoolConnectionProxy] = None
        self.done = False

    async def __aenter__(self) -> PoolConnectionProxy:
        if self.connection is not None or self.done:
            raise exceptions.InterfaceError('a connection is already acquired')
        self.connection = await self.pool._acquire(self.timeout)
        return self.connection

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.done = True
        con, self.connection = self.connection, None
        assert con is not None
        await self.pool.release(con)

    def __await__(self) -> Generator[Any, None, PoolConnectionProxy]:
        self.done = True
        return self.pool._acquire(self.timeout).__await__()


def create_pool(dsn: Optional[str] = None, *,
                init_size: Optional[int] = None,
                min_size: int = 10,
                max_size: int = 10,
                max_queries: int = 50000,
                max_inactive_connection_lifetime: float = 300.0,
                connect: Optional[Callable[..., Awaitable[Connection]]] = None,
                setup: Optional[Callable[[PoolConnectionProxy], Awaitable[None]]] = None,
                init: Optional[Callable[[Connection], Awaitable[None]]] = None,
                reset: Optional[Callable[[Connection], Awaitable[None]]] = None,
                loop: Optional[asyncio.AbstractEventLoop] = None,
                connection_class: Type[Connection] = Connection,
                record_class: Type[Record] = Record,
                connect_retry_timeout: float = 10.0,
                row_factory: Optional[RowFactory[Any]] = None,
                json: Union[bool, JsonCodec] = False,
                **connect_kwargs: Any) -> Pool:
    """Create a connection pool.

    Use as ``async with create_pool(...) as pool:`` (closed at the end of the
    block) or ``pool = await create_pool(...)``.  Arguments, as in asyncpg:

    * `dsn` and `connect_kwargs`: how to connect, as for :func:`mypgdriver.connect`.
    * `init_size`: connections opened (all at once) when the pool starts;
      defaults to `min_size`.
    * `min_size`: connections kept open; a connection that is closed is
      replaced in the background.  The pool may fall below it while the
      server is unavailable.
    * `max_size`: the most connections open at the same time.
    * `max_queries`: after this many queries a connection is replaced (on release).
    * `max_inactive_connection_lifetime`: connections above `min_size` idle
      for this many seconds are closed; ``0`` keeps them.
    * `connect`: a coroutine function called instead of
      :func:`mypgdriver.connect` to open a connection; it must return an
      instance of `connection_class`.
    * `setup`: a coroutine function called with the connection (proxy) at
      every acquire, before it is returned.
    * `init`: a coroutine function called with each new connection, once.
    * `reset`: a coroutine function called with the connection at every
      release instead of :meth:`Connection.reset` (an open transaction is
      rolled back first in any case).
    * `loop`: the event loop of the pool and its connections; by default
      the running one when the pool starts.  Kept for asyncpg
      compatibility: there is no reason to pass it.
    * `connection_class`, `record_class`: passed on to ``connect``.

    mypgdriver only: `row_factory` (:mod:`mypgdriver.rows`) is every
    connection's default row factory, passed on to ``connect`` (not with a
    `record_class`).  `connect_retry_timeout` is how long an ``acquire()``
    without a timeout keeps retrying to open a connection while the server is
    unreachable or starting (an ``acquire()`` with a timeout retries within
    it).  ``0`` gives up after the first failure.  `json` (``True`` or a
    :class:`~mypgdriver.types.JsonCodec`) is passed on to ``connect`` for
    every connection the pool opens, also later ones and those opened after
    :meth:`Pool.set_connect_args` (unless its arguments name a `json` of
    their own): ``json`` and ``jsonb`` values as Python objects (see
    :func:`mypgdriver.connect`).  A pool's reset leaves it in place.
    """
    return Pool(dsn, init_size=init_size, min_size=min_size, max_size=max_size,
                max_queries=max_queries,
                max_inactive_connection_lifetime=max_inactive_connection_lifetime,
                connect=connect, setup=setup, init=init, reset=reset, loop=loop,
                connection_class=connection_class, record_class=record_class,
                connect_retry_timeout=connect_retry_timeout, row_factory=row_factory,
                json=json, **connect_kwargs)


def with_json(connect_kwargs: dict[str, Any], json: Optional[JsonCodec]) -> dict[str, Any]:
    """A pool's connect arguments with its `json` added (unless they name one themselves).

    Added only when set, so that a pool without it calls a `connect`
    callback exactly as before.
    """
    if json is None or 'json' in connect_kwargs:
        return connect_kwargs
    return {**connect_kwargs, 'json': json}

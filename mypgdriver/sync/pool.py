"""The pool of mypgdriver.sync: create_pool() and a thread-safe Pool.

The asyncio pool's promises, kept with threads instead of tasks, and with
its own policy where it needs no event loop: the reset of a released
connection (pool/reset.py), the end of a checkout (pool/proxy.py), the
acquire timeout's message (pool/slots.py), the counters and PoolStats
(pool/stats.py).

* **Slots.**  At most ``max_size`` connections exist or are being opened:
  a slot is taken (under the pool's lock) before a connection is opened
  and given up when it is closed.  A released connection, or a freed slot,
  is handed to the first waiting thread, so nobody is woken to find nothing.
* **Nothing broken is handed out.**  A sync connection reads its socket
  only during calls, so a backend terminated while idle is not noticed by
  itself: acquire() reads what the server sent meanwhile (one non-blocking
  poll) and replaces a connection found closed.  On release the connection
  is reset (an open transaction rolled back first, and notifications not
  yet yielded by notifies() dropped); one whose reset fails,
  or that is closed or not settled, is terminated and its slot refilled.
* **Background work** (opening connections up to ``min_size``, closing those
  idle past ``max_inactive_connection_lifetime``) is done by one daemon
  thread per pool, which close() and terminate() stop.  Acquires never wait
  for it: an acquire that finds no idle connection and a free slot opens
  one itself.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from types import TracebackType
from typing import (
    Any,
    Callable,
    Deque,
    Iterable,
    Optional,
    Sequence,
    Union,
    overload,
)

from mypgdriver import exceptions
from mypgdriver._typing import ArgumentRow, RecordT
from mypgdriver.pool.proxy import begin_checkout
from mypgdriver.pool.reset import default_reset, end_open_transaction, in_unknown_state
from mypgdriver.pool.slots import acquire_timed_out
from mypgdriver.pool.stats import PoolCounters, PoolStats
from mypgdriver.protocol.record import Record
from mypgdriver.sync.connect import connect as sync_connect
from mypgdriver.sync.connection import (
    Connection,
    CopyOutput,
    CopySource,
    async_connection,
    forget_notifications,
    read_pending_input,
    run_async,
)
from mypgdriver.sync.pooled import PoolConnectionProxy

__all__ = ('Pool', 'create_pool', 'PoolConnectionProxy')

logger = logging.getLogger('mypgdriver.pool')

# How often the background thread wakes with nothing to do (it is also woken
# whenever a slot is freed below min_size or a connection goes idle).
_MAINTENANCE_INTERVAL = 1.0
# Backoff of the background thread while the server cannot be reached.
_RETRY_DELAY_FIRST = 0.05
_RETRY_DELAY_MAX = 1.0


class PoolEntry:
    """A connection owned by the pool, with what the pool tracks about it."""

    __slots__ = ('con', 'generation', 'queries', 'idle_since', 'proxy')

    def __init__(self, con: Connection, generation: int) -> None:
        self.con = con
        self.generation = generation
        self.queries = 0
        self.idle_since = 0.0
        self.proxy: Optional[PoolConnectionProxy] = None


class _NewSlot:
    """Handed to a waiter instead of a connection: open one in this slot."""

    __slots__ = ()


_NEW_SLOT = _NewSlot()
_Handoff = Union[PoolEntry, _NewSlot]


class _Waiter:
    """A thread waiting in line in acquire(): handed an item, or failed, by another thread."""

    __slots__ = ('event', 'item', 'error')

    def __init__(self) -> None:
        self.event = threading.Event()
        self.item: Optional[_Handoff] = None
        self.error: Optional[BaseException] = None


class Pool:
    """A thread-safe pool of :class:`mypgdriver.sync.Connection` (see :func:`create_pool`).

    ``with pool.acquire() as conn:`` takes a connection and gives it back at
    the end of the block; ``conn = pool.acquire()`` ... ``pool.release(conn)``
    does the same by hand.  Any thread may acquire and release; a connection
    is used by the thread that holds it (or shared, as any sync connection
    may be).  Waiting threads are served first come, first served.

    Opening connections up to ``min_size`` and closing those idle longer
    than ``max_inactive_connection_lifetime`` is done by a background
    daemon thread of the pool (stopped by :meth:`close` and
    :meth:`terminate`), never in the threads that call the pool.  An
    ``acquire()`` that finds no idle connection and a free slot opens one
    in its own thread, as the asyncio pool does in its task.

    A sync connection reads its socket only during calls: ``acquire()``
    reads what the server sent to an idle connection meanwhile (one
    non-blocking poll), so a backend terminated while idle is found closed
    and replaced before it is handed out.
    """

    def __init__(self, dsn: Optional[str] = None, *,
                 min_size: int,
                 max_size: int,
                 max_queries: int,
                 max_inactive_connection_lifetime: float,
                 connect: Optional[Callable[..., Connection]] = None,
                 setup: Optional[Callable[[Connection], object]] = None,
                 init: Optional[Callable[[Connection], object]] = None,
                 reset: Optional[Callable[[Connection], object]] = None,
                 connection_class: type[Connection] = Connection,
                 record_class: type[Record] = Record,
                 **connect_kwargs: Any) -> None:
        if max_size <= 0:
            raise ValueError('max_size is expected to be greater than zero')
        if min_size < 0:
            raise ValueError('min_size is expected to be greater or equal to zero')
        if min_size > max_size:
            raise ValueError('min_size is greater than max_size')
        if max_queries <= 0:
            raise ValueError('max_queries is expected to be greater than zero')
        if max_inactive_connection_lifetime < 0:
            raise ValueError(
                'max_inactive_connection_lifetime is expected to be greater or equal to zero')
        if not (isinstance(connection_class, type) and issubclass(connection_class, Connection)):
            raise TypeError(f'connection_class is expected to be a subclass of '
                            f'mypgdriver.sync.Connection, got {connection_class!r}')
        if not (isinstance(record_class, type) and issubclass(record_class, Record)):
            raise TypeError(f'record_class is expected to be a subclass of '
                            f'mypgdriver.Record, got {record_class!r}')
        self._min_size = min_size
        self._max_size = max_size
        self._max_queries = max_queries
        self._max_inactive = max_inactive_connection_lifetime
        self._connect_fn = connect
        self._connect_dsn = dsn
        self._connect_kwargs = connect_kwargs
        self._setup = setup
        self._init = init
        self._reset = reset
        self._connection_class = connection_class
        self._record_class = record_class

        # One lock guards everything below; no connection call is made while
        # it is held (a call may take long, and takes the connection's lock).
        self._lock = threading.Lock()
        # Notified when a slot is freed (close() waits for 0) and when the
        # background thread has work.
        self._changed = threading.Condition(self._lock)
        self._closing = False
        self._closed = False
        self._generation = 0
        self._all: set[PoolEntry] = set()
        self._idle: Deque[PoolEntry] = collections.deque()  # most recent at the right
        self._waiters: Deque[_Waiter] = collections.deque()
        self._waiting = 0  # acquires waiting now (including one handed something)
        self._slots = 0  # open + being opened + handed to a waiter to open
        self._counters = PoolCounters()
        self._thread: Optional[threading.Thread] = None
        # Called before each blocking wait of the pool's own (tests interrupt there).
        self._wait_hook: Optional[Callable[[], None]] = None

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'closing' if self._closing else 'open'
        return (f'<mypgdriver.sync.Pool {state} size={len(self._all)} idle={len(self._idle)} '
                f'min={self._min_size} max={self._max_size}>')

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # --- start-up ---

    def _start(self) -> None:
        """Open min_size connections (in the creating thread) and start the background thread."""
        try:
            for _ in range(self._min_size):
                with self._lock:
                    self._slots += 1
                entry = self._open_in_slot()
                self._make_available(entry)
        except BaseException:
            self.terminate()
            raise
        self._thread = threading.Thread(target=self._maintain, daemon=True,
                                        name=f'mypgdriver.sync.Pool-{id(self):#x}')
        self._thread.start()

    # --- information ---

    def get_size(self) -> int:
        """The number of open connections, idle and in use."""
        return len(self._all)

    def get_min_size(self) -> int:
        """The number of connections the pool keeps open, refilling in the background."""
        return self._min_size

    def get_max_size(self) -> int:
        """The most connections the pool opens at the same time."""
        return self._max_size

    def get_idle_size(self) -> int:
        """The number of open connections nobody holds."""
        return len(self._idle)

    def is_closing(self) -> bool:
        """True once :meth:`close` or :meth:`terminate` was called."""
        return self._closing or self._closed

    def get_stats(self) -> PoolStats:
        """A snapshot of the pool's counters (the asyncio pool's :class:`~mypgdriver.pool.PoolStats`).

        ``shortcuts_pipelined`` is always 0: the sync pool does not pipeline
        shortcut calls of several threads onto one connection.
        """
        with self._lock:
            entries = list(self._all)
            return self._counters.snapshot(
                size=len(entries), idle=len(self._idle), min_size=self._min_size,
                max_size=self._max_size, waiters=self._waiting,
                pipeline_depths=tuple((stats.in_flight, stats.max_in_flight) for stats in (
                    entry.con.get_pipeline_stats() for entry in entries)))

    # --- configuration ---

    def set_connect_args(self, dsn: Optional[str] = None, **connect_kwargs: Any) -> None:
        """Use these connection arguments for every connection opened from now on.

        Arguments are those of :func:`mypgdriver.sync.connect`.  Open
        connections stay until they are replaced; call
        :meth:`expire_connections` to replace them soon.
        """
        with self._lock:
            self._connect_dsn = dsn
            self._connect_kwargs = connect_kwargs

    def expire_connections(self) -> None:
        """Replace every open connection with a new one.

        Idle connections are closed now (and refilled in the background up
        to ``min_size``); connections in use are closed when released.
        """
        with self._lock:
            self._generation += 1
            stale = list(self._idle)
            self._idle.clear()
        for entry in stale:
            self._discard(entry, graceful=True)

    # --- acquire ---

    def acquire(self, *, timeout: Optional[float] = None) -> PoolConnectionProxy:
        """Take a connection from the pool, waiting up to `timeout` seconds (None: no limit).

        Use as ``with pool.acquire() as conn:`` (released at the end of the
        block) or as ``conn = pool.acquire()`` followed by
        :meth:`release`.  Waiting threads are served first come, first
        served.  If no connection is available within `timeout` seconds,
        :exc:`TimeoutError` (:exc:`asyncio.TimeoutError`) is raised, saying
        how many connections were in use and how many other threads waited.
        """
        start = time.monotonic()
        with self._lock:
            self._check_open()
            item = self._take()
            waiter = None
            if item is None:
                waiter = _Waiter()
                self._waiters.append(waiter)
                self._waiting += 1
        try:
            if waiter is not None:
                item = self._wait(waiter, timeout)
            assert item is not None
            # From the idle list at once: waited 0.0 (as in the asyncio pool).
            found_idle = waiter is None and isinstance(item, PoolEntry)
            entry = self._ready(item)
        except asyncio.TimeoutError:
            with self._lock:
                self._counters.timeouts += 1
            raise
        waited = 0.0 if found_idle else time.monotonic() - start
        proxy = PoolConnectionProxy(self, entry, timeout)
        self._start_checkout(entry, proxy)
        # The user's first call gets the retry for connections lost while idle.
        proxy._ops = 0
        with self._lock:
            if not found_idle:
                self._counters.waited += 1
            self._counters.count_acquire(waited)
        return proxy

    def _take(self) -> Optional[_Handoff]:
        """Under the lock: an idle connection, or a free slot (taken), or None (wait)."""
        if self._waiters:
            return None
        if self._idle:
            return self._idle.pop()
        if self._slots < self._max_size:
            self._slots += 1
            return _NEW_SLOT
        return None

    def _wait(self, waiter: _Waiter, timeout: Optional[float]) -> _Handoff:
        """Wait in line until handed a connection or a slot, or raise TimeoutError."""
        try:
            if self._wait_hook is not None:
                self._wait_hook()
            waiter.event.wait(timeout)
        except BaseException:
            with self._lock:
                self._waiting -= 1
                item = waiter.item
                if item is None:
                    self._forget(waiter)
            if item is not None:
                self._give_back(item)  # handed something as we were interrupted
            raise
        with self._lock:
            self._waiting -= 1
            item = waiter.item
            if item is None:
                if waiter.error is not None:
                    raise waiter.error
                self._forget(waiter)
                # Built under the lock, as the waiter leaves the line: it says
                # what held the connections up at that moment.
                assert timeout is not None
                raise acquire_timed_out(
                    timeout, in_use=len(self._all) - len(self._idle),
                    opening=self._slots - len(self._all), max_size=self._max_size,
                    others=len(self._waiters), caller='thread')
            if not (self._closing or self._closed):
                return item
        # Handed something just before close(): waiting acquires fail.
        self._give_back(item)
        raise exceptions.InterfaceError('pool is closing')

    def _forget(self, waiter: _Waiter) -> None:
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass

    def _ready(self, item: _Handoff) -> PoolEntry:
        """A connection ready to hand out from `item`: checked, or opened in the slot."""
        if isinstance(item, PoolEntry):
            entry = item
            con = entry.con
            try:
                if entry.generation == self._generation and not con.is_closed():
                    read_pending_input(con)
                    if not con.is_closed():
                        return entry
            except BaseException:
                self._discard(entry, graceful=False)
                raise
            # Stale (expired) or dead (found closed): replace it in its slot.
            self._retire(entry, graceful=not con.is_closed())
        if self._closing or self._closed:
            self._slot_freed()
            raise exceptions.InterfaceError('pool is closing')
        return self._open_in_slot()

    def _open_in_slot(self) -> PoolEntry:
        """Open a connection in a slot the caller holds; the slot is given up if this fails."""
        try:
            with self._lock:
                dsn, kwargs, generation = (self._connect_dsn, self._connect_kwargs,
                                           self._generation)
            con = self._open_connection(dsn, kwargs)
        except BaseException:
            with self._lock:
                self._counters.failed += 1
            self._slot_freed()
            raise
        entry = PoolEntry(con, generation)
        with self._lock:
            self._counters.opened += 1
            if not (self._closing or self._closed):
                self._all.add(entry)
                return entry
        self._slot_freed()
        _close_quietly(con)
        raise exceptions.InterfaceError('pool is closing')

    def _open_connection(self, dsn: Optional[str], kwargs: dict[str, Any]) -> Connection:
        connect = self._connect_fn if self._connect_fn is not None else sync_connect
        con = connect(dsn, connection_class=self._connection_class,
                      record_class=self._record_class, **kwargs)
        if not isinstance(con, self._connection_class):
            bad = type(con)
            con_close = getattr(con, 'close', None)
            if con_close is not None:
                con_close()
            raise exceptions.InterfaceError(
                f'expected the pool connect callback to return an instance of '
                f'{self._connection_class.__module__}.{self._connection_class.__qualname__}, '
                f'got {bad.__module__}.{bad.__qualname__}')
        if self._init is not None:
            try:
                self._init(con)
            except BaseException:
                # Whatever init left behind is unknown; do not reuse it.
                con.terminate()
                raise
        return con

    def _replace_lost_connection(self, proxy: PoolConnectionProxy,
                                 error: BaseException) -> Connection:
        """Give `proxy` a new connection after its first call found the old one dead.

        As in the asyncio pool (mypgdriver/pool/proxy.py): the server may
        have dropped an idle connection just before acquire() checked it
        (its goodbye not yet read); the first call of a checkout is the only
        one safe to repeat, no session state of the user's existing yet.
        """
        old = proxy._entry
        old.proxy = None
        if not self._retire(old, graceful=False):
            proxy._cut_off()  # terminate() took the connection and its slot
            raise error
        logger.debug('pool: connection lost before its first query (%s), replacing', error)
        if self._closing or self._closed:
            self._slot_freed()
            proxy._cut_off()
            raise error
        try:
            entry = self._open_in_slot()
        except BaseException:
            # The slot is gone with the connection; release() has nothing to do.
            proxy._cut_off()
            raise
        proxy._entry = entry
        proxy._con = entry.con
        entry.queries = 1
        self._start_checkout(entry, proxy)
        return entry.con

    def _start_checkout(self, entry: PoolEntry, proxy: PoolConnectionProxy) -> None:
        """Hand `entry` out as `proxy`: handles belong to this checkout; `setup` runs."""
        entry.proxy = proxy
        run_async(entry.con, _begin_checkout(entry.con, proxy))
        if self._setup is not None:
            try:
                self._setup(proxy)
            except BaseException:
                # The state setup left the connection in is unknown: do not reuse it.
                proxy._cut_off()
                entry.proxy = None
                self._discard(entry, graceful=False)
                raise

    # --- release ---

    def release(self, connection: PoolConnectionProxy, *,
                timeout: Optional[float] = None) -> None:
        """Give a connection back to the pool.

        The connection is reset (see :func:`create_pool`'s `reset`) before
        anyone else gets it; `timeout` bounds the default reset and defaults
        to the timeout given to :meth:`acquire`.  A connection that cannot
        be reused (closed, reset failed) is terminated and replaced rather
        than reported.  Releasing an already released connection does
        nothing.
        """
        if type(connection) is not PoolConnectionProxy or connection._pool is not self:
            raise exceptions.InterfaceError(
                f'Pool.release() received invalid connection: {connection!r} is not a '
                f'member of this pool')
        entry = connection._entry
        if connection._con is None:
            return
        if timeout is None:
            timeout = connection._timeout
        try:
            connection._detach()
        except BaseException:
            entry.proxy = None
            self._discard(entry, graceful=False)
            raise
        entry.proxy = None
        self._release_entry(entry, timeout)

    def _release_entry(self, entry: PoolEntry, timeout: Optional[float]) -> None:
        con = entry.con
        aconn = async_connection(con)
        if self._closing or self._closed:
            self._discard(entry, graceful=not con.is_closed())
            return
        if in_unknown_state(aconn):
            with self._lock:
                self._counters.broken += 1
            self._discard(entry, graceful=False)
            return
        if entry.queries >= self._max_queries or entry.generation != self._generation:
            self._discard(entry, graceful=True)
            return
        if con.is_in_transaction():
            logger.warning('pool: a connection was released inside an open transaction, '
                           'which is rolled back: %r', con)
        try:
            if self._reset is None:
                run_async(con, default_reset(aconn, timeout))
            else:
                run_async(con, end_open_transaction(aconn))
                self._reset(con)
        except BaseException as e:
            with self._lock:
                self._counters.reset_failures += 1
            if isinstance(e, Exception):
                log = logger.debug if con.is_closed() else logger.warning
                log('pool: resetting a released connection failed, replacing it: %r', e)
            self._discard(entry, graceful=False)
            if not isinstance(e, Exception):
                raise
            return
        if in_unknown_state(aconn) or con.is_in_transaction():
            with self._lock:
                self._counters.reset_failures += 1
            self._discard(entry, graceful=False)
            return
        # Received before UNLISTEN *: the last user's, never the next one's.
        forget_notifications(con)
        with self._lock:
            self._counters.resets += 1
        self._make_available(entry)

    # --- slots and idle connections ---

    def _make_available(self, entry: PoolEntry) -> None:
        """Hand a ready connection to the first waiter, or put it in the idle list."""
        with self._lock:
            if entry not in self._all:
                return  # terminated meanwhile
            if not (self._closing or self._closed):
                if self._hand_over(entry):
                    return
                entry.idle_since = time.monotonic()
                self._idle.append(entry)
                self._changed.notify_all()
                return
        self._discard(entry, graceful=True)

    def _hand_over(self, item: _Handoff) -> bool:
        """Under the lock: give `item` to the first waiter; False if nobody waits."""
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.item = item
            waiter.event.set()
            return True
        return False

    def _give_back(self, item: _Handoff) -> None:
        if isinstance(item, PoolEntry):
            self._make_available(item)
        else:
            self._slot_freed()

    def _slot_freed(self) -> None:
        """A slot was given up: pass it to the first waiter, or count it free."""
        with self._lock:
            if not (self._closing or self._closed) and self._hand_over(_NEW_SLOT):
                return
            self._slots -= 1
            self._changed.notify_all()

    def _retire(self, entry: PoolEntry, *, graceful: bool) -> bool:
        """Close a connection the pool owns; its slot stays with the caller.

        False if the pool no longer owned it (terminate() took it).
        """
        with self._lock:
            if entry not in self._all:
                return False
            self._all.discard(entry)
            self._counters.closed += 1
        if graceful and not entry.con.is_closed():
            _close_quietly(entry.con)
        else:
            entry.con.terminate()
        return True

    def _discard(self, entry: PoolEntry, *, graceful: bool) -> None:
        """Close a connection and give up its slot (once: nothing if the pool lost it)."""
        if self._retire(entry, graceful=graceful):
            self._slot_freed()

    # --- the background thread ---

    def _maintain(self) -> None:
        """Keep min_size connections open; close those idle past the lifetime."""
        delay = _RETRY_DELAY_FIRST
        while True:
            with self._lock:
                if self._closing or self._closed:
                    return
                expired = self._take_expired()
                refill = not expired and self._slots < self._min_size
                if refill:
                    self._slots += 1
                elif not expired:
                    self._changed.wait(self._next_wake())
                    continue
            for entry in expired:
                self._discard(entry, graceful=True)
            if refill:
                try:
                    entry = self._open_in_slot()
                except Exception as e:
                    if delay == _RETRY_DELAY_FIRST:  # once per outage, not per attempt
                        logger.warning('pool: cannot open connections to keep min_size=%d '
                                       '(%r); retrying in the background', self._min_size, e)
                    with self._lock:
                        if not (self._closing or self._closed):
                            self._changed.wait(delay)
                    delay = min(delay * 2, _RETRY_DELAY_MAX)
                    continue
                delay = _RETRY_DELAY_FIRST
                self._make_available(entry)

    def _take_expired(self) -> list[PoolEntry]:
        """Under the lock: remove and return idle connections above min_size past the lifetime."""
        if not self._max_inactive:
            return []
        expired: list[PoolEntry] = []
        now = time.monotonic()
        idle = self._idle
        # The idle list is ordered by release time: the oldest are at the left.
        while idle and len(self._all) - len(expired) > self._min_size:
            if idle[0].idle_since + self._max_inactive > now:
                break
            expired.append(idle.popleft())
        return expired

    def _next_wake(self) -> float:
        """Under the lock: seconds until the background thread has something to look at."""
        wake = _MAINTENANCE_INTERVAL
        if self._max_inactive and self._idle and len(self._all) > self._min_size:
            wake = min(wake, self._idle[0].idle_since + self._max_inactive - time.monotonic())
        return max(wake, 0.0)

    # --- closing ---

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the pool gracefully.

        New acquires fail with :exc:`~mypgdriver.exceptions.InterfaceError`
        at once, and so do those waiting.  Idle connections are closed now;
        connections in use are closed as they are released, and ``close()``
        returns when all are.  After `timeout` seconds (if given) those still
        out are terminated (and a warning is logged).
        """
        with self._lock:
            if self._closed or self._closing:
                return
            self._closing = True
            self._fail_waiters('pool is closing')
            idle = list(self._idle)
            self._idle.clear()
            self._changed.notify_all()
        try:
            for entry in idle:
                self._discard(entry, graceful=True)
            if self._wait_hook is not None:
                self._wait_hook()
            with self._lock:
                done = self._changed.wait_for(lambda: self._slots == 0, timeout)
            if not done:
                logger.warning('pool: close() timed out after %.1fs with %d connection(s) '
                               'still in use; terminating them', timeout, len(self._all))
                self.terminate()
        except BaseException:
            self.terminate()
            raise
        finally:
            self._join_thread()
            with self._lock:
                self._closed = True
                self._closing = False

    def terminate(self) -> None:
        """Close every connection at once, including those in use, and the pool.

        A call running on a connection in use is cancelled on the server
        first; the threads holding connections get InterfaceError at their
        next use.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._fail_waiters('pool is closed')
            entries = list(self._all)
            self._all.clear()
            self._idle.clear()
            self._counters.closed += len(entries)
            self._slots -= len(entries)
            self._changed.notify_all()
        for entry in entries:
            proxy = entry.proxy
            if proxy is not None:
                proxy._cut_off()
                entry.proxy = None
                entry.con.cancel()
            entry.con.terminate()
        self._join_thread()

    def _join_thread(self) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _fail_waiters(self, message: str) -> None:
        """Under the lock: every waiting acquire raises InterfaceError(`message`)."""
        waiters, self._waiters = self._waiters, collections.deque()
        for waiter in waiters:
            waiter.error = exceptions.InterfaceError(message)
            waiter.event.set()

    def _check_open(self) -> None:
        if self._closed:
            raise exceptions.InterfaceError('pool is closed')
        if self._closing:
            raise exceptions.InterfaceError('pool is closing')

    # --- shortcuts: one call on a connection of its own, acquired and released ---

    def execute(self, query: str, *args: object, timeout: Optional[float] = None) -> str:
        """Run a command on a pooled connection; see :meth:`Connection.execute`."""
        with self.acquire() as con:
            return con.execute(query, *args, timeout=timeout)

    def executemany(self, command: str, args: Iterable[ArgumentRow], *,
                    timeout: Optional[float] = None) -> None:
        """Run a command for each argument sequence; see :meth:`Connection.executemany`."""
        with self.acquire() as con:
            con.executemany(command, args, timeout=timeout)

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: None = None) -> list[Record]: ...

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: type[RecordT]) -> list[RecordT]: ...

    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: Optional[type[Record]] = None) -> list[Any]:
        """Run a query on a pooled connection and return all rows."""
        with self.acquire() as con:
            return con.fetch(query, *args, timeout=timeout, record_class=record_class)

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: None = None) -> Optional[Record]: ...

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: type[RecordT]) -> Optional[RecordT]: ...

    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: Optional[type[Record]] = None) -> Any:
        """Run a query on a pooled connection and return its first row (or None)."""
        with self.acquire() as con:
            return con.fetchrow(query, *args, timeout=timeout, record_class=record_class)

    def fetchval(self, query: str, *args: object, column: Union[int, str] = 0,
                 timeout: Optional[float] = None) -> Any:
        """Run a query on a pooled connection and return one value of its first row."""
        with self.acquire() as con:
            return con.fetchval(query, *args, column=column, timeout=timeout)

    @overload
    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None, record_class: None = None) -> list[Record]: ...

    @overload
    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None,
                  record_class: type[RecordT]) -> list[RecordT]: ...

    def fetchmany(self, query: str, args: Iterable[ArgumentRow], *,
                  timeout: Optional[float] = None,
                  record_class: Optional[type[Record]] = None) -> list[Any]:
        """Run a query for each argument sequence and return all rows; see ``Connection.fetchmany``."""
        with self.acquire() as con:
            return con.fetchmany(query, args, timeout=timeout, record_class=record_class)

    def copy_from_table(self, table_name: str, *, output: CopyOutput,
                        columns: Optional[Iterable[str]] = None,
                        schema_name: Optional[str] = None, timeout: Optional[float] = None,
                        format: Optional[str] = None, oids: Optional[bool] = None,
                        delimiter: Optional[str] = None, null: Optional[str] = None,
                        header: Union[bool, str, None] = None, quote: Optional[str] = None,
                        escape: Optional[str] = None,
                        force_quote: Union[bool, Sequence[str], None] = None,
                        encoding: Optional[str] = None) -> str:
        """Copy a table's contents out; see :meth:`Connection.copy_from_table`."""
        with self.acquire() as con:
            return con.copy_from_table(
                table_name, output=output, columns=columns, schema_name=schema_name,
                timeout=timeout, format=format, oids=oids, delimiter=delimiter, null=null,
                header=header, quote=quote, escape=escape, force_quote=force_quote,
                encoding=encoding)

    def copy_from_query(self, query: str, *args: object, output: CopyOutput,
                        timeout: Optional[float] = None, format: Optional[str] = None,
                        oids: Optional[bool] = None, delimiter: Optional[str] = None,
                        null: Optional[str] = None, header: Union[bool, str, None] = None,
                        quote: Optional[str] = None, escape: Optional[str] = None,
                        force_quote: Union[bool, Sequence[str], None] = None,
                        encoding: Optional[str] = None) -> str:
        """Copy a query's results out; see :meth:`Connection.copy_from_query`."""
        with self.acquire() as con:
            return con.copy_from_query(
                query, *args, output=output, timeout=timeout, format=format, oids=oids,
                delimiter=delimiter, null=null, header=header, quote=quote, escape=escape,
                force_quote=force_quote, encoding=encoding)

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
        """Copy data into a table; see :meth:`Connection.copy_to_table`."""
        with self.acquire() as con:
            return con.copy_to_table(
                table_name, source=source, columns=columns, schema_name=schema_name,
                timeout=timeout, format=format, oids=oids, freeze=freeze, delimiter=delimiter,
                null=null, header=header, quote=quote, escape=escape, force_quote=force_quote,
                force_not_null=force_not_null, force_null=force_null, encoding=encoding,
                where=where)

    def copy_records_to_table(self, table_name: str, *, records: Iterable[ArgumentRow],
                              columns: Optional[Iterable[str]] = None,
                              schema_name: Optional[str] = None,
                              timeout: Optional[float] = None,
                              where: Optional[str] = None) -> str:
        """Copy records into a table (binary COPY); see :meth:`Connection.copy_records_to_table`."""
        with self.acquire() as con:
            return con.copy_records_to_table(
                table_name, records=records, columns=columns, schema_name=schema_name,
                timeout=timeout, where=where)


async def _begin_checkout(con: Connection, proxy: PoolConnectionProxy) -> None:
    begin_checkout(async_connection(con), proxy)


def _close_quietly(con: Connection) -> None:
    """Close `con` gracefully, or terminate it if that fails."""
    try:
        con.close()
    except Exception:
        con.terminate()


def create_pool(dsn: Optional[str] = None, *,
                min_size: int = 10,
                max_size: int = 10,
                max_queries: int = 50000,
                max_inactive_connection_lifetime: float = 300.0,
                connect: Optional[Callable[..., Connection]] = None,
                setup: Optional[Callable[[Connection], object]] = None,
                init: Optional[Callable[[Connection], object]] = None,
                reset: Optional[Callable[[Connection], object]] = None,
                connection_class: type[Connection] = Connection,
                record_class: type[Record] = Record,
                **connect_kwargs: Any) -> Pool:
    """Create a thread-safe connection pool, open it, and return it.

    ``min_size`` connections are opened before this returns (an error
    opening one is raised).  Use as ``with create_pool(...) as pool:``
    (closed at the end of the block) or call :meth:`Pool.close`.  The
    arguments are those of :func:`mypgdriver.create_pool`, with plain
    functions where that takes coroutine functions:

    * `dsn` and `connect_kwargs`: how to connect, as for :func:`mypgdriver.sync.connect`.
    * `min_size`: connections kept open; one that is closed is replaced by
      the pool's background thread.
    * `max_size`: the most connections open at the same time.
    * `max_queries`: after this many queries a connection is replaced (on release).
    * `max_inactive_connection_lifetime`: connections above `min_size` idle
      for this many seconds are closed; ``0`` keeps them.
    * `connect`: a function called instead of :func:`mypgdriver.sync.connect`
      (with `dsn`, `connection_class`, `record_class` and `connect_kwargs`);
      it must return an instance of `connection_class`.
    * `setup`: a function called with the connection (the proxy handed
      out) at every acquire, before it is returned.  If it raises, the
      connection is terminated and the error raised by acquire().
    * `init`: a function called with each new connection, once.
    * `reset`: a function called with the connection at every release
      instead of the default reset (:meth:`Connection.reset` and ``DISCARD
      TEMP``); an open transaction is rolled back first in any case.
    * `connection_class`, `record_class`: passed on to ``connect``.
    """
    pool = Pool(dsn, min_size=min_size, max_size=max_size, max_queries=max_queries,
                max_inactive_connection_lifetime=max_inactive_connection_lifetime,
                connect=connect, setup=setup, init=init, reset=reset,
                connection_class=connection_class, record_class=record_class,
                **connect_kwargs)
    pool._start()
    return pool

# cython: language_level=3
"""The sync pool's core: its slots, idle list and waiting line, and every step that changes them.

Compiled for Ctrl-C (issue 24), as the glue is.  Python raises
KeyboardInterrupt where Python code runs or where a blocking system call
is interrupted.  In Python, one landing between two steps of the pool's
bookkeeping (a slot taken and no connection opened yet, a connection
taken from the idle list and not handed out, a waiter in line that nobody
will serve) leaked it for good: later acquires waited for ever, or
``get_size()`` lied.  Here each step runs as C code, which the signal
cannot interrupt, and the Python code the pool must run (opening,
checking, resetting and closing a connection; the ``setup``, ``init`` and
``reset`` callbacks) is called from it, as hooks of the Pool in pool.py,
inside ``try`` blocks that put back or close whatever the step held if
the hook raises, KeyboardInterrupt included.  Such a repair calls no
Python code before the accounting is right again: a connection is taken
out of the pool's set first, its slot given back in a ``finally``.

The pool's lock is a raw lock taken without checking for signals (a
``threading.Lock`` taken in the main thread raises KeyboardInterrupt if a
SIGINT comes while it waits); it is held only for the bookkeeping, never
across Python code.  A waiting acquire blocks on a lock of its own
(``_thread.lock.acquire``: a SIGINT raises in it, before or after the
waiter was handed something; either way the waiter leaves the line and
passes on what it was handed).

So, after a Ctrl-C anywhere in acquire(), release(), a ``with`` block,
close() or terminate(): every slot is an open connection (idle or checked
out) or one being opened by a live call; the connection an interrupted
acquire had taken is either returned to the caller or closed and its slot
refilled; an interrupted release leaves the connection reset and idle, or
closed; an interrupted close() terminates what is left.

The one window left is outside the pool: between acquire() returning and
the caller storing the connection (or entering the ``with`` block), a
signal can land, as for any call that returns a resource in Python.
"""
import bisect
import collections
import threading
import time

from cpython.pythread cimport (
    PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
    PyThread_acquire_lock, PyThread_release_lock, WAIT_LOCK, NOWAIT_LOCK,
)

from mypgdriver import exceptions
from mypgdriver.pool.proxy import released_error
from mypgdriver.pool.slots import acquire_timed_out
from mypgdriver.pool.stats import WAIT_HISTOGRAM_BOUNDS

__all__ = ('PoolCore', 'PoolEntry', 'REUSABLE', 'BROKEN', 'RESET_FAILED', 'RETIRED',
           'enter_checkout', 'exit_checkout')

cdef object _monotonic = time.monotonic
cdef object _deque = collections.deque
cdef object _allocate_lock = threading._allocate_lock
cdef object _bisect_left = bisect.bisect_left
cdef object _BOUNDS = WAIT_HISTOGRAM_BOUNDS

#: What the pool's ``_reset_released`` hook says of a released connection.
REUSABLE = 0      # reset: back to the idle list
BROKEN = 1        # closed, busy or left mid-operation: terminated
RESET_FAILED = 2  # the reset failed or left a transaction open: terminated
RETIRED = 3       # past max_queries or expired: closed gracefully


cdef class PoolEntry:
    """A connection owned by the pool, with what the pool tracks about it."""

    cdef readonly object con
    cdef readonly object generation
    cdef public object queries
    cdef public double idle_since
    # The proxy of the checkout in progress (None while idle).
    cdef public object proxy

    def __init__(self, con, generation):
        self.con = con
        self.generation = generation
        self.queries = 0
        self.idle_since = 0.0
        self.proxy = None


cdef class _NewSlot:
    """Handed to a waiter instead of a connection: open one in this slot."""


cdef _NewSlot _NEW_SLOT = _NewSlot()


cdef class _Waiter:
    """An acquire waiting in line: handed an item, or a message to fail with, by another thread."""

    # Locked while the waiter waits; the thread that serves it releases it.
    cdef object lock
    cdef object item
    cdef object error

    def __cinit__(self):
        self.lock = _allocate_lock()
        self.lock.acquire()
        self.item = None
        self.error = None


cdef class PoolCore:
    """The sync Pool's slots, idle connections and waiting line (see the module's docstring).

    `pool` is the :class:`mypgdriver.sync.Pool` whose hooks open, check,
    reset and close connections; `proxy_class` is what acquire() hands out.
    """

    cdef PyThread_type_lock _mutex
    cdef object _pool
    cdef object _proxy_class
    cdef readonly int min_size
    cdef readonly int max_size
    cdef readonly object max_queries
    cdef readonly object max_inactive
    cdef readonly bint closing
    cdef readonly bint closed
    cdef readonly object generation
    cdef readonly object connect_dsn
    cdef readonly object connect_kwargs
    cdef readonly object counters
    # Open connections (idle and in use), and the idle ones (most recent at the right).
    cdef set _all
    cdef object _idle
    cdef object _waiters
    # Acquires waiting now (including one handed something that has not resumed).
    cdef readonly int waiting
    # Open + being opened + handed to a waiter to open.
    cdef readonly int slots
    # Released when the last slot is given up after close() began.
    cdef object _drained
    # Released to wake the background thread (it acquires it to sleep).
    cdef object _wake
    #: Called before each of the pool's own blocking waits (tests interrupt there).
    cdef public object wait_hook

    def __cinit__(self):
        self._mutex = PyThread_allocate_lock()
        if self._mutex == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self._mutex != NULL:
            PyThread_free_lock(self._mutex)

    def __init__(self, pool, proxy_class, counters, *, int min_size, int max_size,
                 max_queries, max_inactive, connect_dsn, connect_kwargs):
        self._pool = pool
        self._proxy_class = proxy_class
        self.counters = counters
        self.min_size = min_size
        self.max_size = max_size
        self.max_queries = max_queries
        self.max_inactive = max_inactive
        self.closing = False
        self.closed = False
        self.generation = 0
        self.connect_dsn = connect_dsn
        self.connect_kwargs = connect_kwargs
        self._all = set()
        self._idle = _deque()
        self._waiters = _deque()
        self.waiting = 0
        self.slots = 0
        self._drained = _allocate_lock()
        self._drained.acquire()
        self._wake = _allocate_lock()
        self._wake.acquire()
        self.wait_hook = None

    # --- the lock: no signal check while taking it, never held across Python code ---

    cdef inline void _lock(self):
        if not PyThread_acquire_lock(self._mutex, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self._mutex, WAIT_LOCK)

    cdef inline void _unlock(self):
        PyThread_release_lock(self._mutex)

    # --- information ---

    def sizes(self):
        """(open connections, idle ones) at one instant."""
        self._lock()
        n, idle = len(self._all), len(self._idle)
        self._unlock()
        return n, idle

    def stats(self):
        """(the open connections, a PoolStats without pipeline_depths), at one instant."""
        self._lock()
        try:
            entries = list(self._all)
            return entries, self.counters.snapshot(
                size=len(entries), idle=len(self._idle), min_size=self.min_size,
                max_size=self.max_size, waiters=self.waiting, pipeline_depths=())
        finally:
            self._unlock()

    def set_connect_args(self, dsn, kwargs):
        self._lock()
        self.connect_dsn = dsn
        self.connect_kwargs = kwargs
        self._unlock()

    # --- acquire ---

    def acquire(self, timeout):
        """A proxy of a checked, checked-out connection (see Pool.acquire)."""
        cdef double start = _monotonic()
        cdef object item
        cdef _Waiter waiter = None
        cdef PoolEntry entry
        self._lock()
        if self.closed or self.closing:
            self._unlock()
            raise exceptions.InterfaceError('pool is closed' if self.closed else 'pool is closing')
        item = self._take()
        if item is None:
            waiter = _Waiter()
            self._waiters.append(waiter)
            self.waiting += 1
        self._unlock()
        if waiter is not None:
            item = self._wait(waiter, timeout)
        # From the idle list at once: waited 0.0 (as in the asyncio pool).
        found_idle = waiter is None and type(item) is PoolEntry
        entry = self._ready(item)
        proxy = self._begin_checkout(entry, timeout)
        waited = 0.0 if found_idle else _monotonic() - start
        self._lock()
        if not found_idle:
            self.counters.waited += 1
        _count_acquire(self.counters, waited)
        self._unlock()
        return proxy

    cdef object _take(self):
        """Under the lock: an idle connection, or a free slot (taken), or None (wait)."""
        if self._waiters:
            return None
        if self._idle:
            return self._idle.pop()
        if self.slots < self.max_size:
            self.slots += 1
            return _NEW_SLOT
        return None

    cdef object _wait(self, _Waiter waiter, timeout):
        """Wait in line until handed a connection or a slot, or raise."""
        try:
            if self.wait_hook is not None:
                self.wait_hook()
            waiter.lock.acquire(True, -1 if timeout is None else max(timeout, 0.0))
        except BaseException:
            self._lock()
            self.waiting -= 1
            item = waiter.item
            if item is None:
                _forget(self._waiters, waiter)
            self._unlock()
            if item is not None:
                self._give_back(item)  # handed something as we were interrupted
            raise
        self._lock()
        self.waiting -= 1
        item = waiter.item
        error = waiter.error
        closing = self.closing or self.closed
        in_use = opening = others = 0
        if item is None and error is None:
            _forget(self._waiters, waiter)
            self.counters.timeouts += 1
            # What held the connections up as the waiter left the line.
            in_use = len(self._all) - len(self._idle)
            opening = self.slots - len(self._all)
            others = len(self._waiters)
        self._unlock()
        if error is not None:
            raise exceptions.InterfaceError(error)
        if item is None:
            raise acquire_timed_out(timeout, in_use=in_use, opening=opening,
                                    max_size=self.max_size, others=others, caller='thread')
        if closing:
            # Handed something just before close(): waiting acquires fail.
            self._give_back(item)
            raise exceptions.InterfaceError('pool is closing')
        return item

    cdef PoolEntry _ready(self, item):
        """A connection ready to hand out from `item`: checked, or opened in the slot."""
        cdef PoolEntry entry
        if type(item) is PoolEntry:
            entry = item
            try:
                alive = (entry.generation == self.generation
                         and self._pool._idle_connection_alive(entry.con))
            except BaseException:
                self._discard(entry, False)
                raise
            if alive:
                return entry
            # Stale (expired) or dead (found closed): replace it in its slot.
            if not self._retire(entry):
                raise exceptions.InterfaceError('pool is closed')  # terminate() took it
            try:
                self._close(entry.con, True)
            except BaseException:
                self._slot_freed()
                raise
        if self.closing or self.closed:
            self._slot_freed()
            raise exceptions.InterfaceError('pool is closing')
        return self.open_in_slot()

    def open_in_slot(self):
        """Open a connection in a slot the caller holds; the slot is given up if this fails."""
        cdef PoolEntry entry
        self._lock()
        dsn, kwargs, generation = self.connect_dsn, self.connect_kwargs, self.generation
        self._unlock()
        try:
            con = self._pool._open_connection(dsn, kwargs)
        except BaseException:
            self._lock()
            self.counters.failed += 1
            self._unlock()
            self._slot_freed()
            raise
        entry = PoolEntry(con, generation)
        self._lock()
        self.counters.opened += 1
        if not (self.closing or self.closed):
            self._all.add(entry)
            self._unlock()
            return entry
        self._unlock()
        try:
            self._close(con, True)
        finally:
            self._slot_freed()
        raise exceptions.InterfaceError('pool is closing')

    cdef object _begin_checkout(self, PoolEntry entry, timeout):
        """Hand `entry` out as a new proxy (the pool's `_begin_checkout` hook runs `setup`)."""
        cls = self._proxy_class
        proxy = cls.__new__(cls)
        proxy._pool = self._pool
        proxy._entry = entry
        proxy._con = entry.con
        proxy._timeout = timeout
        proxy._ops = 0
        self._start_checkout(entry, proxy)
        return proxy

    cdef void _start_checkout(self, PoolEntry entry, proxy) except *:
        entry.proxy = proxy
        try:
            self._pool._begin_checkout(entry.con, proxy)
        except BaseException:
            # The state setup left the connection in is unknown: do not reuse it.
            proxy._con = None
            entry.proxy = None
            self._discard(entry, False)
            raise
        # The user's first call gets the retry for connections lost while idle.
        proxy._ops = 0

    def replace_lost_connection(self, proxy, error):
        """Give `proxy` a new connection after its first call found the old one dead."""
        cdef PoolEntry old = proxy._entry
        cdef PoolEntry entry
        old.proxy = None
        if not self._retire(old):
            proxy._con = None  # terminate() took the connection and its slot
            raise error
        try:
            self._close(old.con, False)
        except BaseException:
            proxy._con = None
            self._slot_freed()
            raise
        if self.closing or self.closed:
            proxy._con = None
            self._slot_freed()
            raise error
        try:
            entry = self.open_in_slot()
        except BaseException:
            # The slot is gone with the connection; release() has nothing to do.
            proxy._con = None
            raise
        proxy._entry = entry
        proxy._con = entry.con
        entry.queries = 1
        self._start_checkout(entry, proxy)
        return entry.con

    # --- release ---

    def release(self, connection, timeout):
        """End the checkout of `connection` (a proxy) and reset or replace it (see Pool.release)."""
        cdef PoolEntry entry
        if type(connection) is not self._proxy_class or connection._pool is not self._pool:
            raise exceptions.InterfaceError(
                f'Pool.release() received invalid connection: {connection!r} is not a '
                f'member of this pool')
        con = connection._con
        if con is None:
            return
        entry = connection._entry
        if timeout is None:
            timeout = connection._timeout
        # The checkout ends here: the proxy is refused from now on.
        connection._con = None
        entry.proxy = None
        if self.closing or self.closed:
            self._discard(entry, True)
            return
        try:
            verdict = self._pool._reset_released(entry, timeout)
        except BaseException:
            self._lock()
            self.counters.reset_failures += 1
            self._unlock()
            self._discard(entry, False)
            raise
        if verdict == REUSABLE:
            self._lock()
            self.counters.resets += 1
            self._unlock()
            self.make_available(entry)
            return
        self._lock()
        if verdict == BROKEN:
            self.counters.broken += 1
        elif verdict == RESET_FAILED:
            self.counters.reset_failures += 1
        self._unlock()
        self._discard(entry, verdict == RETIRED)

    # --- slots and idle connections ---

    def reserve_slot(self):
        """Take a slot to open a connection in (create_pool's first min_size connections)."""
        self._lock()
        self.slots += 1
        self._unlock()

    def make_available(self, PoolEntry entry):
        """Hand a ready connection to the first waiter, or put it in the idle list."""
        self._lock()
        if entry not in self._all:
            self._unlock()
            return  # terminated meanwhile
        if not (self.closing or self.closed):
            if not self._hand_over(entry):
                entry.idle_since = _monotonic()
                self._idle.append(entry)
                self._kick()
            self._unlock()
            return
        self._unlock()
        self._discard(entry, True)

    cdef bint _hand_over(self, item):
        """Under the lock: give `item` to the first waiter; False if nobody waits."""
        cdef _Waiter waiter
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.item = item
            waiter.lock.release()
            return True
        return False

    cdef void _give_back(self, item) except *:
        if type(item) is PoolEntry:
            self.make_available(item)
        else:
            self._slot_freed()

    cdef void _slot_freed(self):
        """A slot was given up: pass it to the first waiter, or count it free."""
        self._lock()
        if not (self.closing or self.closed) and self._hand_over(_NEW_SLOT):
            self._unlock()
            return
        self.slots -= 1
        self._kick()
        self._note_drained()
        self._unlock()

    cdef void _note_drained(self):
        """Under the lock: wake close() once no slot is left."""
        if self.slots == 0 and (self.closing or self.closed) and self._drained.locked():
            self._drained.release()

    cdef void _kick(self):
        """Under the lock: wake the background thread (it looks at what changed)."""
        if self._wake.locked():
            self._wake.release()

    def sleep(self, timeout):
        """In the background thread: sleep up to `timeout` seconds, or until kicked."""
        self._wake.acquire(True, max(timeout, 0.0))

    cdef bint _retire(self, PoolEntry entry):
        """Take a connection out of the pool (its slot stays with the caller); False if gone."""
        self._lock()
        if entry not in self._all:
            self._unlock()
            return False
        self._all.discard(entry)
        self.counters.closed += 1
        self._unlock()
        return True

    cdef void _close(self, con, bint graceful) except *:
        """Close `con` through the pool's hook; terminate it if that is interrupted."""
        try:
            self._pool._close_connection(con, graceful)
        except BaseException:
            if graceful:
                try:
                    self._pool._close_connection(con, False)
                except BaseException:
                    pass
            raise

    cdef void _discard(self, PoolEntry entry, bint graceful) except *:
        """Close a connection and give up its slot (once: nothing if the pool lost it)."""
        if self._retire(entry):
            try:
                self._close(entry.con, graceful)
            finally:
                self._slot_freed()

    def discard_all(self, entries, graceful):
        """Close these connections and give up their slots, all of them even if interrupted."""
        error = None
        for entry in entries:
            try:
                self._discard(entry, graceful)
            except BaseException as e:
                if error is None:
                    error = e
        if error is not None:
            raise error

    # --- the background thread ---

    def maintenance(self):
        """(idle connections to close, whether to open one in a new slot), or None once closing.

        Idle connections above min_size idle past `lifetime` are taken out
        of the idle list; the refill's slot is taken.
        """
        self._lock()
        if self.closing or self.closed:
            self._unlock()
            return None
        expired = self._take_expired()
        refill = not expired and self.slots < self.min_size
        if refill:
            self.slots += 1
        self._unlock()
        return expired, refill

    cdef list _take_expired(self):
        cdef list expired = []
        lifetime = self.max_inactive
        if not lifetime:
            return expired
        now = _monotonic()
        idle = self._idle
        # The idle list is ordered by release time: the oldest are at the left.
        while idle and len(self._all) - len(expired) > self.min_size:
            if (<PoolEntry>idle[0]).idle_since + lifetime > now:
                break
            expired.append(idle.popleft())
        return expired

    def next_wake(self, double interval):
        """Seconds until the background thread has something to look at (at most `interval`)."""
        cdef double wake = interval
        lifetime = self.max_inactive
        self._lock()
        if lifetime and self._idle and len(self._all) > self.min_size:
            wake = min(wake, (<PoolEntry>self._idle[0]).idle_since + lifetime - _monotonic())
        self._unlock()
        return max(wake, 0.0)

    # --- expiry, closing ---

    def expire_connections(self):
        """Replace every connection: the idle ones are closed now, those in use on release."""
        self._lock()
        self.generation += 1
        stale = list(self._idle)
        self._idle.clear()
        self._unlock()
        self.discard_all(stale, True)

    def close(self, timeout):
        """Close gracefully (see Pool.close); False if it was closed or closing already."""
        self._lock()
        if self.closed or self.closing:
            self._unlock()
            return False
        self.closing = True
        self._fail_waiters('pool is closing')
        idle = list(self._idle)
        self._idle.clear()
        self._note_drained()
        self._kick()
        self._unlock()
        try:
            self.discard_all(idle, True)
            if self.wait_hook is not None:
                self.wait_hook()
            if not self._drained.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
                self._lock()
                in_use = len(self._all)
                self._unlock()
                self._pool._log_close_timeout(timeout, in_use)
                self.terminate()
        except BaseException:
            self.terminate()
            raise
        finally:
            self._lock()
            self.closed = True
            self.closing = False
            self._unlock()
        return True

    def terminate(self):
        """Close every connection at once, including those in use (see Pool.terminate)."""
        self._lock()
        if self.closed:
            self._unlock()
            return
        self.closed = True
        self._fail_waiters('pool is closed')
        entries = list(self._all)
        self._all.clear()
        self._idle.clear()
        self.counters.closed += len(entries)
        self.slots -= len(entries)
        self._note_drained()
        self._kick()
        self._unlock()
        error = None
        for entry in entries:
            proxy = (<PoolEntry>entry).proxy
            if proxy is not None:
                proxy._con = None
                (<PoolEntry>entry).proxy = None
            try:
                self._pool._terminate_connection((<PoolEntry>entry).con, proxy is not None)
            except BaseException as e:
                if error is None:
                    error = e
        if error is not None:
            raise error

    cdef void _fail_waiters(self, str message):
        """Under the lock: every waiting acquire raises InterfaceError(`message`)."""
        cdef _Waiter waiter
        waiters, self._waiters = self._waiters, type(self._waiters)()
        for waiter in waiters:
            waiter.error = message
            waiter.lock.release()


cdef inline void _forget(waiters, _Waiter waiter):
    try:
        waiters.remove(waiter)
    except ValueError:
        pass


cdef void _count_acquire(counters, double waited):
    # PoolCounters.count_acquire, here as C code (a Python call would be an
    # interruption point after the checkout was made).
    counters.acquires += 1
    if waited:
        counters.wait_total += waited
        if waited > counters.wait_max:
            counters.wait_max = waited
        counters.histogram[_bisect_left(_BOUNDS, waited)] += 1
    else:
        counters.histogram[0] += 1


# --- the proxy's `with` block, compiled: entering it and leaving it cannot be interrupted ---

def enter_checkout(proxy):
    """``with pool.acquire() as conn:``: the proxy itself (refused once released)."""
    if proxy._con is None:
        raise released_error('__enter__')
    return proxy


def exit_checkout(proxy, exc_type, exc, tb):
    """The end of a ``with pool.acquire()`` block: the connection is released."""
    proxy._pool._core.release(proxy, None)

# cython: language_level=3
"""The sync pool's thread driver: the pool core (mypgdriver/pool/core.pyx) run under a lock.

The core decides (slots, idle list, the line of waiting acquires,
lifetimes, what a release does); this driver acts: it holds the pool's
lock around each of the core's steps, makes waiting acquires block on a
lock of their own, and calls the pool's hooks (pool_hooks.py) that open,
check, reset and close connections.

Compiled for Ctrl-C (issue 24), as the glue is.  Python raises
KeyboardInterrupt where Python code runs or where a blocking system call
is interrupted.  In Python, one landing between two steps of the pool's
bookkeeping (a slot taken and no connection opened yet, a connection
taken from the idle list and not handed out, a waiter in line that nobody
will serve) leaked it for good: later acquires waited for ever, or
``get_size()`` lied.  Here each step runs as C code, which the signal
cannot interrupt, and the Python code the pool must run (opening,
checking, resetting and closing a connection; the ``setup``, ``init`` and
``reset`` callbacks) is called from it, as hooks (pool_hooks.py),
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
cimport cython

import functools
import logging
import threading
import time

from cpython.pythread cimport (
    PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
    PyThread_acquire_lock, PyThread_release_lock, WAIT_LOCK, NOWAIT_LOCK,
)

from mypgdriver.pool.core cimport Backoff, PoolCore, Waiter
from mypgdriver.pool.slotaccess cimport read_slot, slot_offset, write_slot

from mypgdriver import exceptions, tracing
from mypgdriver.tracing import TELEMETRY
from mypgdriver.pool.core import (
    CLOSING, IDLE, RELEASED_CLOSING, RESET_FAILED, RETIRED, REUSABLE, PooledConnection,
)
from mypgdriver.pool.timeouts import DEADLINE_SLACK, TRANSIENT_CONNECT_ERRORS, opening_timed_out
from mypgdriver.pool.proxy import (
    CONNECTION_LOST_ERRORS, protocol_of, read_idle_input, released_error,
)
from mypgdriver.sync.connection import async_connection, call_runner

__all__ = ('ThreadDriver', 'PoolEntry', 'REUSABLE', 'RESET_FAILED', 'enter_checkout',
           'exit_checkout', 'COUNTED_METHODS', 'proxy_getattr', 'proxy_repr', 'proxy_is_closed',
           'proxy_execute', 'proxy_fetch', 'proxy_fetchrow', 'proxy_fetchval')

cdef object _monotonic = time.monotonic
cdef object _sleep = time.sleep
cdef object _logger = logging.getLogger('mypgdriver.pool')
cdef object _allocate_lock = threading._allocate_lock

#: The sync pool's name for the core's PooledConnection.
PoolEntry = PooledConnection
# As C statics: compared at every checkout, without a module dict look-up.
cdef type _PooledConnection = PooledConnection
# The entry's slots read and set at every checkout, at their offsets
# (mypgdriver/pool/slotaccess.pxd): no attribute look-up from C.
cdef Py_ssize_t _CON = slot_offset(PooledConnection, 'con')
cdef Py_ssize_t _PROXY = slot_offset(PooledConnection, 'proxy')


cdef inline object _con(object entry):
    return read_slot(entry, _PooledConnection, _CON, 'con')


cdef inline int _set_proxy(object entry, object proxy) except -1:
    return write_slot(entry, _PooledConnection, _PROXY, 'proxy', proxy)


cdef class _ThreadWaiter(Waiter):
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

    cpdef bint deliver(self, object item) except -1:
        self.item = item
        self.lock.release()
        return True

    cpdef fail(self, str message):
        self.error = message
        self.lock.release()


cdef class ThreadDriver:
    """The sync Pool's core under its lock, and the steps that call the pool's hooks.

    `pool` is the :class:`mypgdriver.sync.Pool` the proxies belong to;
    `hooks` (a PoolHooks, pool_hooks.py) open, check, reset and close its
    connections; `proxy_class` is what acquire() hands out.
    """

    cdef PyThread_type_lock _mutex
    cdef object _pool
    cdef object _hooks
    cdef object _proxy_class
    #: The decisions (mypgdriver/pool/core.pyx), taken under the lock.
    cdef readonly PoolCore core
    cdef readonly object connect_dsn
    cdef readonly object connect_kwargs
    #: How long an acquire without a timeout retries opening a connection.
    cdef readonly double connect_retry_timeout
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

    def __init__(self, pool, hooks, proxy_class, counters, *, int min_size, int max_size,
                 max_queries, max_inactive, connect_dsn, connect_kwargs,
                 double connect_retry_timeout=0.0):
        self._pool = pool
        self._hooks = hooks
        self._proxy_class = proxy_class
        self.core = PoolCore(counters, min_size=min_size, max_size=max_size,
                             max_queries=max_queries, max_inactive=max_inactive)
        self.connect_dsn = connect_dsn
        self.connect_kwargs = connect_kwargs
        self.connect_retry_timeout = connect_retry_timeout
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

    # --- start-up ---

    def start(self, int init_size, str thread_name):
        """Open `init_size` connections (in this thread), then start the background thread.

        A failure terminates the pool and is raised (create_pool() raises it).
        """
        try:
            for _ in range(init_size):
                self.reserve_slot()
                self.make_available(self.open_in_slot())
        except BaseException:
            self.terminate()
            raise
        if TELEMETRY.live:
            # Reported in the connection metrics from now on.
            tracing.name_pool(self._pool, self.connect_dsn, self.connect_kwargs)
        self._hooks.start(self, thread_name)

    # --- information ---

    @property
    def closing(self):
        return self.core.closing

    @property
    def closed(self):
        return self.core.closed

    @property
    def shut(self):
        return self.core.shut

    def size(self):
        """The open connections, idle and in use."""
        self._lock()
        n = len(self.core.all)
        self._unlock()
        return n

    def idle_size(self):
        """The open connections nobody holds."""
        self._lock()
        n = len(self.core.idle)
        self._unlock()
        return n

    @property
    def generation(self):
        return self.core.generation

    def sizes(self):
        """(open connections, idle ones) at one instant."""
        self._lock()
        n, idle = len(self.core.all), len(self.core.idle)
        self._unlock()
        return n, idle

    def get_stats(self):
        """The pool's PoolStats (see Pool.get_stats)."""
        self._lock()
        entries = list(self.core.all)
        self._unlock()
        # (the connections' own counters read outside the lock: Python code)
        depths = tuple([(stats.in_flight, stats.max_in_flight)
                        for stats in [_con(entry).get_pipeline_stats() for entry in entries]])
        self._lock()
        try:
            return self.core.snapshot(depths)
        finally:
            self._unlock()

    def set_connect_args(self, dsn=None, **connect_kwargs):
        """Connect with these arguments from now on (see Pool.set_connect_args)."""
        self._lock()
        self.connect_dsn = dsn
        self.connect_kwargs = connect_kwargs
        self._unlock()

    # --- acquire ---

    def acquire(self, timeout=None):
        """A proxy of a checked, checked-out connection (see Pool.acquire)."""
        if TELEMETRY.live:
            return tracing.run_acquire(
                lambda: self._acquire(timeout),
                tracing.name_pool(self._pool, self.connect_dsn, self.connect_kwargs))
        return self._acquire(timeout)

    cdef object _acquire(self, timeout):
        cdef double start = _monotonic()
        cdef object item
        cdef _ThreadWaiter waiter = None
        cdef object entry
        cdef PoolCore core = self.core
        self._lock()
        if core.closed or core.closing:
            self._unlock()
            raise exceptions.InterfaceError('pool is closed' if core.closed else 'pool is closing')
        item = core.take()
        if item is None:
            waiter = _ThreadWaiter()
            core.join_line(waiter)
        self._unlock()
        if waiter is not None:
            item = self._wait(waiter, timeout)
        # From the idle list at once: waited 0.0 (as in the asyncio pool).
        found_idle = waiter is None and type(item) is _PooledConnection
        entry = self._ready(item, None if timeout is None else start + timeout, timeout)
        proxy = self._begin_checkout(entry, timeout)
        waited = 0.0 if found_idle else _monotonic() - start
        self._lock()
        core.count_acquire(waited, not found_idle)
        self._unlock()
        return proxy

    cdef object _wait(self, _ThreadWaiter waiter, timeout):
        """Wait in line until handed a connection or a slot, or raise."""
        cdef PoolCore core = self.core
        try:
            if self.wait_hook is not None:
                self.wait_hook()
            waiter.lock.acquire(True, -1 if timeout is None else max(timeout, 0.0))
        except BaseException:
            self._lock()
            core.resumed()
            item = waiter.item
            if item is None:
                core.forget(waiter)
            self._unlock()
            if item is not None:
                self._give_back(item)  # handed something as we were interrupted
            raise
        self._lock()
        core.resumed()
        item = waiter.item
        error = waiter.error
        closing = core.closing or core.closed
        timed_out = None
        if item is None and error is None:
            core.forget(waiter)
            # What held the connections up as the waiter left the line.
            core.counters.timeouts += 1
            timed_out = core.timeout_error(timeout, 'thread')
        self._unlock()
        if error is not None:
            raise exceptions.InterfaceError(error)
        if timed_out is not None:
            raise timed_out
        if closing:
            # Handed something just before close(): waiting acquires fail.
            self._give_back(item)
            raise exceptions.InterfaceError('pool is closing')
        return item

    cdef object _ready(self, item, deadline, timeout):
        """A connection ready to hand out from `item`: checked, or opened in the slot.

        Opening one retries while the server is away, until `deadline` (the
        acquire's, of `timeout` seconds) or for connect_retry_timeout.
        """
        cdef object entry
        if type(item) is _PooledConnection:
            entry = item
            try:
                alive = (self.core.fresh(entry)
                         and self._hooks.idle_connection_alive(_con(entry)))
            except BaseException:
                self._discard(entry, False)
                raise
            if alive:
                return entry
            # Stale (expired) or dead (found closed): replace it in its slot.
            if not self._retire(entry):
                raise exceptions.InterfaceError('pool is closed')  # terminate() took it
            try:
                self._close(_con(entry), True)
            except BaseException:
                self._slot_freed()
                raise
        if self.core.closing or self.core.closed:
            self._slot_freed()
            raise exceptions.InterfaceError('pool is closing')
        return self.open_in_slot(True, deadline, timeout)

    def open_in_slot(self, bint retry=False, deadline=None, timeout=None):
        """Open a connection in a slot the caller holds; the slot is given up if this fails.

        With `retry` (an acquire's connection), a failure that means the
        server is away (refused, starting, shutting down, full:
        TRANSIENT_CONNECT_ERRORS) is retried with backoff until `deadline`
        (a monotonic time: the acquire's `timeout`, which also bounds each
        attempt), or for connect_retry_timeout seconds without one; the
        time running out raises the asyncio pool's TimeoutError.  Without
        `retry` (create_pool's first connections, the background refill,
        which has its own backoff) the first failure is raised.
        """
        cdef object entry
        cdef bint open_
        self._lock()
        dsn, kwargs, generation = self.connect_dsn, self.connect_kwargs, self.core.generation
        self._unlock()
        try:
            if retry:
                con = self._open_retrying(dsn, kwargs, deadline, timeout)
            else:
                con = self._open_once(dsn, kwargs, None)
        except BaseException:
            self._slot_freed()
            raise
        entry = _PooledConnection(con, generation)
        self._lock()
        self.core.counters.opened += 1
        open_ = self.core.register(entry)
        self._unlock()
        if open_:
            return entry
        self._discard(entry, True)
        raise exceptions.InterfaceError('pool is closing')

    cdef object _open_once(self, dsn, kwargs, time_left):
        try:
            return self._hooks.open_connection(dsn, kwargs, time_left)
        except BaseException:
            self._lock()
            self.core.counters.failed += 1
            self._unlock()
            raise

    cdef object _open_retrying(self, dsn, kwargs, deadline, timeout):
        # The asyncio pool's loop (Pool._open_in_slot), with threads.
        cdef double retry_until
        cdef Backoff backoff = Backoff()
        failure = None  # the last attempt's own failure
        retry_until = (_monotonic() + self.connect_retry_timeout if deadline is None
                       else deadline)
        while True:
            left = None
            if deadline is not None:
                left = deadline - _monotonic()
                if left <= 0:
                    self._count_timeout()
                    raise opening_timed_out(timeout, failure)
            try:
                return self._open_once(dsn, kwargs, left)
            except TRANSIENT_CONNECT_ERRORS as e:
                if self.core.closing or self.core.closed:
                    raise
                wait = min(backoff.delay, retry_until - _monotonic())
                if wait <= 0:
                    if deadline is not None:
                        # A TimeoutError at the deadline is the deadline's
                        # own: the attempt before it says more.
                        if not (isinstance(e, TimeoutError)
                                and deadline - _monotonic() < DEADLINE_SLACK):
                            failure = e
                        self._count_timeout()
                        raise opening_timed_out(timeout, failure) from (failure or e)
                    raise
                failure = e
                _logger.debug('pool: cannot open a connection (%s), retrying', e)
                _sleep(wait)
                backoff.next()

    cdef void _count_timeout(self):
        self._lock()
        self.core.counters.timeouts += 1
        self._unlock()

    cdef object _begin_checkout(self, object entry, timeout):
        """Hand `entry` out as a new proxy (the `begin_checkout` hook runs `setup`)."""
        cls = self._proxy_class
        proxy = cls.__new__(cls)
        proxy._pool = self._pool
        proxy._entry = entry
        proxy._con = _con(entry)
        proxy._timeout = timeout
        proxy._ops = 0
        self._start_checkout(entry, proxy)
        return proxy

    cdef void _start_checkout(self, object entry, proxy) except *:
        _set_proxy(entry, proxy)
        try:
            self._hooks.begin_checkout(_con(entry), proxy)
        except BaseException:
            # The state setup left the connection in is unknown: do not reuse it.
            proxy._con = None
            _set_proxy(entry, None)
            self._discard(entry, False)
            raise
        # The user's first call gets the retry for connections lost while idle.
        proxy._ops = 0

    def replace_lost_connection(self, proxy, error):
        """Give `proxy` a new connection after its first call found the old one dead.

        As in the asyncio pool (mypgdriver/pool/proxy.py): the server may
        have dropped an idle connection just before acquire() checked it
        (its goodbye not yet read); the first call of a checkout is the only
        one safe to repeat, no session state of the user's existing yet.
        """
        cdef object old = proxy._entry
        cdef object entry
        _set_proxy(old, None)
        if not self._retire(old):
            proxy._con = None  # terminate() took the connection and its slot
            raise error
        try:
            self._close(_con(old), False)
        except BaseException:
            proxy._con = None
            self._slot_freed()
            raise
        if self.core.closing or self.core.closed:
            proxy._con = None
            self._slot_freed()
            raise error
        try:
            entry = self.open_in_slot(True)
        except BaseException:
            # The slot is gone with the connection; release() has nothing to do.
            proxy._con = None
            raise
        proxy._entry = entry
        proxy._con = _con(entry)
        entry.queries = 1
        self._start_checkout(entry, proxy)
        return _con(entry)

    # --- release ---

    def release(self, connection, timeout=None):
        """End the checkout of `connection` (a proxy) and reset or replace it (see Pool.release)."""
        cdef object entry
        cdef int verdict
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
        _set_proxy(entry, None)
        if self.core.closing or self.core.closed:
            self._discard(entry, True)
            return
        try:
            # The core's verdict (reads only: no lock needed), then the reset
            # of a reusable connection, in one hook: one call of the connection.
            verdict = self._hooks.end_checkout(con, self.core, entry, timeout)
        except BaseException:
            self._lock()
            self.core.count_release(RESET_FAILED)
            self._unlock()
            self._discard(entry, False)
            raise
        if verdict == REUSABLE:
            self._available(entry, True)
            return
        self._lock()
        self.core.count_release(verdict)
        self._unlock()
        self._discard(entry, verdict == RETIRED or verdict == RELEASED_CLOSING)

    # --- slots and idle connections ---

    def reserve_slot(self):
        """Take a slot to open a connection in (create_pool's first min_size connections)."""
        self._lock()
        self.core.reserve_slot()
        self._unlock()

    def make_available(self, object entry):
        """Hand a ready connection to the first waiter, or put it in the idle list."""
        self._available(entry, False)

    cdef void _available(self, object entry, bint reset_done) except *:
        # One locked step: the reset counted (`reset_done`) and the connection handed on.
        cdef double now = _monotonic()
        self._lock()
        try:
            if reset_done:
                self.core.count_release(REUSABLE)
            outcome = self.core.make_available(entry, now)
            if outcome == IDLE:
                self._kick()
        finally:
            self._unlock()
        if outcome == CLOSING:
            self._discard(entry, True)

    cdef void _give_back(self, item) except *:
        if type(item) is _PooledConnection:
            self._available(item, False)
        else:
            self._slot_freed()

    cdef void _slot_freed(self) except *:
        """A slot was given up: pass it to the first waiter, or count it free."""
        self._lock()
        try:
            if not self.core.slot_freed():
                self._kick()
                self._note_drained()
        finally:
            self._unlock()

    cdef void _note_drained(self):
        """Under the lock: wake close() once no slot is left."""
        if self.core.drained() and self._drained.locked():
            self._drained.release()

    cdef void _kick(self):
        """Under the lock: wake the background thread (it looks at what changed)."""
        if self._wake.locked():
            self._wake.release()

    def sleep(self, timeout):
        """In the background thread: sleep up to `timeout` seconds, or until kicked."""
        self._wake.acquire(True, max(timeout, 0.0))

    cdef bint _retire(self, object entry) except -1:
        """Take a connection out of the pool (its slot stays with the caller); False if gone."""
        self._lock()
        gone = not self.core.retire(entry)
        self._unlock()
        return not gone

    cdef void _close(self, con, bint graceful) except *:
        """Close `con` through the pool's hook; terminate it if that is interrupted."""
        try:
            self._hooks.close_connection(con, graceful)
        except BaseException:
            if graceful:
                try:
                    self._hooks.close_connection(con, False)
                except BaseException:
                    pass
            raise

    cdef void _discard(self, object entry, bint graceful) except *:
        """Close a connection and give up its slot (once: nothing if the pool lost it)."""
        if self._retire(entry):
            try:
                self._close(_con(entry), graceful)
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
        if self.core.closing or self.core.closed:
            self._unlock()
            return None
        expired = self.core.take_expired(_monotonic())
        refill = not expired and self.core.reserve_refill(1) == 1
        self._unlock()
        return expired, refill

    def next_wake(self, double interval):
        """Seconds until the background thread has something to look at (at most `interval`)."""
        cdef double wake = interval
        self._lock()
        expiry = self.core.next_expiry()
        if expiry is not None:
            wake = min(wake, expiry - _monotonic())
        self._unlock()
        return max(wake, 0.0)

    # --- expiry, closing ---

    def expire_connections(self):
        """Replace every connection: the idle ones are closed now, those in use on release."""
        self._lock()
        stale = self.core.expire()
        self._unlock()
        self.discard_all(stale, True)

    def close(self, timeout=None):
        """Close gracefully (see Pool.close); False if it was closed or closing already.

        Returns once the background thread (the hooks') has stopped too.
        """
        try:
            return self._close_pool(timeout)
        finally:
            self._hooks.join()

    cdef bint _close_pool(self, timeout) except -1:
        self._lock()
        if self.core.closed or self.core.closing:
            self._unlock()
            return False
        idle = self.core.begin_close('pool is closing')
        self._note_drained()
        self._kick()
        self._unlock()
        try:
            self.discard_all(idle, True)
            if self.wait_hook is not None:
                self.wait_hook()
            if not self._drained.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
                self._lock()
                in_use = len(self.core.all)
                self._unlock()
                self._hooks.log_close_timeout(timeout, in_use)
                self.terminate()
        except BaseException:
            self.terminate()
            raise
        finally:
            self._lock()
            self.core.finish_close()
            self._unlock()
        return True

    def terminate(self):
        """Close every connection at once, including those in use (see Pool.terminate).

        Returns once the background thread (the hooks') has stopped too.
        """
        try:
            self._terminate()
        finally:
            self._hooks.join()

    cdef int _terminate(self) except -1:
        cdef object entry
        self._lock()
        if self.core.closed:
            self._unlock()
            return 0
        entries = self.core.terminate('pool is closed')
        self._note_drained()
        self._kick()
        self._unlock()
        error = None
        for entry in entries:
            proxy = entry.proxy
            if proxy is not None:
                proxy._con = None
                _set_proxy(entry, None)
            try:
                self._hooks.terminate_connection(_con(entry), proxy is not None)
            except BaseException as e:
                if error is None:
                    error = e
        if error is not None:
            raise error
        return 0


# --- the proxy's `with` block, compiled: entering it and leaving it cannot be interrupted ---

def enter_checkout(proxy):
    """``with pool.acquire() as conn:``: the proxy itself (refused once released)."""
    if proxy._con is None:
        raise released_error('__enter__')
    return proxy


def exit_checkout(proxy, exc_type, exc, tb):
    """The end of a ``with pool.acquire()`` block: the connection is released."""
    proxy._pool._core.release(proxy, None)


# --- the proxy's calls, compiled: sync/pooled.py binds these as its methods ---
# (no signature embedded in their docstrings: it would name proxy_fetch, not
# the method fetch, and the docs would show it as text)

#: The methods whose calls count toward the pool's ``max_queries`` (each
#: sends at least one statement).
COUNTED_METHODS = frozenset((
    'execute', 'executemany', 'fetch', 'fetchrow', 'fetchval', 'fetchmany', 'prepare',
    'cursor', 'copy_from_table', 'copy_from_query', 'copy_to_table', 'copy_records_to_table',
))


cdef inline object _checked_out(proxy, str name):
    """The proxy's connection; InterfaceError once it was released."""
    con = proxy._con
    if con is None:
        raise released_error(name)
    return con


@cython.embedsignature(False)
def proxy_repr(proxy):
    if proxy._con is None:
        return f'<{type(proxy).__name__} [released] {id(proxy):#x}>'
    return f'<{type(proxy).__name__} {proxy._con!r} {id(proxy):#x}>'


@cython.embedsignature(False)
def proxy_is_closed(self) -> 'bool':
    """True if the connection is closed; see :meth:`Connection.is_closed`."""
    return _checked_out(self, 'is_closed').is_closed()


@cython.embedsignature(False)
def proxy_getattr(proxy, str name):
    """``proxy.name`` for what the proxy does not define: the connection's, refused once released.

    A method of the connection comes wrapped: calling it later, after the
    release, is refused too, and a query method is counted.
    """
    con = _checked_out(proxy, name)
    value = getattr(con, name)
    if callable(value) and getattr(value, '__self__', None) is con:
        return _wrapped(proxy, name, value)
    return value


cdef object _wrapped(proxy, str name, method):
    cdef bint counted = name in COUNTED_METHODS

    @functools.wraps(method)
    def call(*args, **kwargs):
        con = _checked_out(proxy, name)
        if counted:
            proxy._entry.queries += 1
        return getattr(con, name)(*args, **kwargs)
    return call


cdef object _query(proxy, str name, tuple args, dict kwargs):
    """A query method called through the proxy: counted, and the first of a checkout retried.

    The first call reads what the server sent the idle connection; if that
    closed it before this call's statement was sent, the statement goes to
    a new connection instead (the asyncio proxy's rule, pool/proxy.py).
    One that was sent is never sent again: it may have run.
    """
    con = _checked_out(proxy, name)
    proxy._entry.queries += 1
    proxy._ops += 1
    if proxy._ops != 1:
        return getattr(con, name)(*args, **kwargs)
    aconn = async_connection(con)
    protocol = protocol_of(aconn)
    if protocol.input_waiting():
        call_runner(con)(read_idle_input(aconn))
    sent = protocol.op_seq
    try:
        return getattr(con, name)(*args, **kwargs)
    except CONNECTION_LOST_ERRORS as e:
        if protocol.op_seq != sent or proxy._con is not con or not con.is_closed():
            raise   # sent (it may have run, so it is not run again), or not ours
        _logger.debug('pool: connection lost before its first query (%s), replacing', e)
        con = proxy._pool._core.replace_lost_connection(proxy, e)
        return getattr(con, name)(*args, **kwargs)


@cython.embedsignature(False)
def proxy_execute(self, query, *args, **kwargs) -> 'str':
    """Run a command; see :meth:`Connection.execute`."""
    return _query(self, 'execute', (query,) + args, kwargs)


@cython.embedsignature(False)
def proxy_fetch(self, query, *args, **kwargs) -> 'list[Any]':
    """Run a query and return all rows; see :meth:`Connection.fetch`."""
    return _query(self, 'fetch', (query,) + args, kwargs)


@cython.embedsignature(False)
def proxy_fetchrow(self, query, *args, **kwargs) -> 'Any':
    """Run a query and return its first row; see :meth:`Connection.fetchrow`."""
    return _query(self, 'fetchrow', (query,) + args, kwargs)


@cython.embedsignature(False)
def proxy_fetchval(self, query, *args, **kwargs) -> 'Any':
    """Run a query and return one value of its first row; see :meth:`Connection.fetchval`."""
    return _query(self, 'fetchval', (query,) + args, kwargs)

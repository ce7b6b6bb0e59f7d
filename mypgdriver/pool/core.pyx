# cython: language_level=3
"""The pool core: what both pools decide, written once and without I/O.

A pool has ``max_size`` slots; a slot is the right to have one connection
open or being opened.  :class:`PoolCore` keeps the slots, the open
connections, the idle list and the line of waiting acquires, and decides
every step that changes them: which connection or free slot an acquire
gets, who is served next (first come, first served), whether a released
connection is reset, retired or thrown away, which idle connections have
outlived ``max_inactive_connection_lifetime``, how many connections to
open to get back to ``min_size``, and what an acquire that timed out
says.  It opens, resets and closes nothing, and never waits: its driver
does (mypgdriver/pool/pool.py with asyncio tasks and futures,
mypgdriver/sync/driver/poolcore.pyx with threads and locks), and tells it what
happened.

Waiting is pluggable: a waiting acquire is a :class:`Waiter` whose
``deliver`` and ``fail`` the core calls when it is served or the pool
closes; the asyncio driver's waiter completes a future, the thread
driver's releases a lock.

When a connection is released or a slot is freed while acquires wait, it
is handed to exactly one of them (the first in line): either the
connection or the empty slot itself (:data:`NEW_SLOT`), in which the
waiter opens a connection.  So a slot is never free while someone waits,
and nobody is woken only to find nothing there.

Compiled, not Python: the sync pool calls it under its lock from C (its
steps cannot be cut by a KeyboardInterrupt, issue 24), and a step costs
a C call instead of a Python frame (see bench/README.md for the numbers).
Not thread-safe by itself: the thread driver holds its lock around each
call; the asyncio driver runs in one thread.
"""
import collections

from mypgdriver.pool.slotaccess cimport read_slot, slot_offset, write_slot

from mypgdriver.pool.stats import WAIT_HISTOGRAM_BOUNDS
from mypgdriver.pool.timeouts import acquire_timed_out

__all__ = ('PoolCore', 'PooledConnection', 'NewSlot', 'NEW_SLOT', 'Waiter', 'Backoff',
           'RETRY_DELAY_FIRST', 'RETRY_DELAY_MAX',
           'GONE', 'HANDED', 'IDLE', 'CLOSING', 'REUSABLE', 'BROKEN', 'RESET_FAILED',
           'RETIRED', 'RELEASED_CLOSING')

cdef object _deque = collections.deque
cdef tuple _BOUNDS = WAIT_HISTOGRAM_BOUNDS

#: What :meth:`PoolCore.make_available` did with a connection.
GONE = 0      # the pool no longer owns it (terminated meanwhile): nothing to do
HANDED = 1    # given to the first waiter
IDLE = 2      # put in the idle list
CLOSING = 3   # the pool is closing: the driver closes it (gracefully) and frees its slot

#: What becomes of a released connection (:meth:`PoolCore.release_verdict`,
#: then :meth:`PoolCore.count_release` with the outcome of the reset).
REUSABLE = 0      # reset it: back to the idle list
BROKEN = 1        # closed, busy or left mid-operation: terminate it
RESET_FAILED = 2  # the reset failed or left a transaction open: terminate it
RETIRED = 3       # past max_queries or expired: close it gracefully
#: (verdict only) the pool is closing: close it, reset nothing.
RELEASED_CLOSING = 4


class PooledConnection:
    """A connection owned by the pool, with what the pool tracks about it.

    A Python class with __slots__, not a cdef class: the asyncio pool reads
    and sets its attributes from Python at every checkout, and the
    interpreter's specialized slot access is cheaper there than a cdef
    class's descriptors (measured with bench/pool_callgrind.py).  The C
    code (this core, the sync pool's thread driver) reads and sets the
    slots at their offsets instead (mypgdriver/pool/slotaccess.pxd), as
    it would a cdef class's fields.
    """

    __slots__ = ('con', 'generation', 'queries', 'idle_since', 'proxy', 'shared_calls',
                 '__weakref__')

    def __init__(self, con, generation):
        self.con = con
        self.generation = generation
        self.queries = 0
        self.idle_since = 0.0
        # The proxy of the checkout in progress (None while idle).
        self.proxy = None
        # Shortcut calls (pool.fetch, ...) running on it; > 0 while the
        # asyncio pool lends it to them rather than hands it out.
        self.shared_calls = 0


# The core's own reads and writes of an entry's slots, at their offsets
# (mypgdriver/pool/slotaccess.pxd): C code pays no attribute look-up.
cdef type _Entry = PooledConnection
cdef Py_ssize_t _GENERATION = slot_offset(PooledConnection, 'generation')
cdef Py_ssize_t _QUERIES = slot_offset(PooledConnection, 'queries')
cdef Py_ssize_t _IDLE_SINCE = slot_offset(PooledConnection, 'idle_since')


cdef class NewSlot:
    """Handed to a waiter instead of a connection: open one in this slot."""

    def __repr__(self):
        return '<new slot>'


#: The one :class:`NewSlot`, compared by identity.
NEW_SLOT = NewSlot()
cdef NewSlot _NEW_SLOT = NEW_SLOT


cdef class Waiter:
    """An acquire waiting in line; its driver says how it is woken.

    The core calls :meth:`deliver` with what the waiter is handed (a
    :class:`PooledConnection` or :data:`NEW_SLOT`) and :meth:`fail` when
    the pool closes, both after taking the waiter out of the line.
    """

    cpdef bint deliver(self, object item) except -1:
        """Wake the waiter with `item`; False if it is gone already (then `item` goes to the next)."""
        raise NotImplementedError

    cpdef fail(self, str message):
        """Wake the waiter to raise InterfaceError(`message`) (the pool is closing)."""
        raise NotImplementedError


#: Backoff's defaults, for both pools: the first delay bridges a server
#: restart quickly, the cap makes a long outage cost one attempt a second
#: per slot.
RETRY_DELAY_FIRST = 0.05
RETRY_DELAY_MAX = 1.0


cdef class Backoff:
    """The delays between attempts to open a connection while the server is away.

    Short at first so that a restart is bridged quickly, doubled after each
    failure and capped so that a long outage costs one attempt per `cap`
    seconds (defaults: :data:`RETRY_DELAY_FIRST`, :data:`RETRY_DELAY_MAX`).
    """

    def __init__(self, double first=RETRY_DELAY_FIRST, double cap=RETRY_DELAY_MAX):
        self.first = first
        self.cap = cap
        self.delay = first

    cpdef double next(self):
        """The delay before the next attempt (and double the one after it)."""
        cdef double delay = self.delay
        self.delay = min(delay * 2, self.cap)
        return delay

    cpdef reset(self):
        """An attempt succeeded: the next outage starts with the first delay."""
        self.delay = self.first

    @property
    def first_failure(self):
        """True until a delay was taken since the last reset (log once per outage)."""
        return self.delay == self.first


cdef class PoolCore:
    """The slots, connections, idle list and waiting line of one pool, and its decisions.

    `counters` is the pool's :class:`~mypgdriver.pool.stats.PoolCounters`;
    the core counts acquires, timeouts, closes and releases in it (the
    driver counts what only it sees: opened and failed connections).
    """

    def __init__(self, counters, *, int min_size, int max_size, max_queries, max_inactive):
        self.counters = counters
        self.min_size = min_size
        self.max_size = max_size
        self.max_queries = max_queries
        self.max_inactive = max_inactive
        self.closing = False
        self.closed = False
        self.shut = False
        self.generation = 0
        # Open connections (idle and in use), and the idle ones: the most
        # recently released at the right, the oldest at the left.
        self.all = set()
        self.idle = _deque()
        # Waiters not served yet; the first is the next to be served.
        self._line = _deque()
        # Acquires waiting now (including one handed something that has not resumed).
        self.waiting = 0
        # Open + being opened + handed to a waiter to open.
        self.slots = 0

    def __len__(self):
        return len(self._line)

    # --- acquire ---

    cpdef object take(self):
        """An idle connection, or a free slot (taken), or None: wait in line.

        Never past waiters.  The idle connection is the most recently
        released one (warm caches); the driver checks it is alive and
        :meth:`fresh`, else replaces it in its slot.
        """
        if self._line:
            return None
        if self.idle:
            return self.idle.pop()
        if self.slots < self.max_size:
            self.slots += 1
            return _NEW_SLOT
        return None

    cpdef bint take_slot(self):
        """Take a free slot if there is one (and nobody waits for it)."""
        if self._line or self.slots >= self.max_size:
            return False
        self.slots += 1
        return True

    cpdef reserve_slot(self):
        """Take a slot unconditionally (the pool's first connections)."""
        self.slots += 1

    cpdef int reserve_refill(self, int most):
        """Take up to `most` slots to open connections in until min_size are: how many."""
        cdef int n
        if self.shut:
            return 0
        n = min(self.min_size - self.slots, most)
        if n <= 0:
            return 0
        self.slots += n
        return n

    cpdef bint fresh(self, object entry):
        """False if `entry` is from before :meth:`expire` (replace it)."""
        return read_slot(entry, _Entry, _GENERATION, 'generation') == self.generation

    cpdef join_line(self, Waiter waiter):
        """Put `waiter` at the end of the line."""
        self._line.append(waiter)
        self.waiting += 1

    cpdef forget(self, Waiter waiter):
        """Take `waiter` out of the line (it timed out or was interrupted unserved)."""
        try:
            self._line.remove(waiter)
        except ValueError:
            pass

    cpdef resumed(self):
        """A waiter stopped waiting (served, failed, timed out or interrupted)."""
        self.waiting -= 1

    cpdef int line_length(self):
        """Waiters not served yet."""
        return len(self._line)

    cpdef bint hand_over(self, object item) except -1:
        """Give `item` to the first waiter still there; False if nobody waits."""
        cdef Waiter waiter
        line = self._line
        while line:
            waiter = line.popleft()
            if waiter.deliver(item):
                return True
        return False

    cpdef fail_waiters(self, str message):
        """Every waiter raises InterfaceError(`message`): the pool is closing."""
        cdef Waiter waiter
        line, self._line = self._line, _deque()
        for waiter in line:
            waiter.fail(message)

    cpdef count_acquire(self, double waited, bint queued):
        """A successful acquire that waited `waited` seconds (`queued`: found nothing idle)."""
        counters = self.counters
        if queued:
            counters.waited += 1
        counters.acquires += 1
        if waited:
            counters.wait_total += waited
            if waited > counters.wait_max:
                counters.wait_max = waited
            counters.histogram[_bucket(waited)] += 1
        else:
            counters.histogram[0] += 1

    cpdef object timeout_error(self, double timeout, str caller):
        """The error of an acquire that waited `timeout` seconds in vain, built as it leaves the line.

        It says what held the connections up at that moment; `caller` is
        what the others waiting are ('task', 'thread').  Not counted here:
        the asyncio pool counts every TimeoutError of an acquire (also one
        while opening a connection), the sync pool only those in line.
        """
        return acquire_timed_out(
            timeout, in_use=len(self.all) - len(self.idle), opening=self.slots - len(self.all),
            max_size=self.max_size, others=len(self._line), caller=caller)

    # --- connections coming and going ---

    cpdef bint register(self, object entry) except -1:
        """Count a newly opened connection as the pool's, in its opener's slot.

        False if the pool is closing: the driver closes it (:meth:`retire`
        then :meth:`slot_freed`, as for any other).
        """
        self.all.add(entry)
        return not (self.shut)

    cpdef int make_available(self, object entry, double now) except -1:
        """A ready connection: hand it to the first waiter or make it idle (see GONE ... CLOSING)."""
        if entry not in self.all:
            return GONE
        if self.hand_over(entry):
            return HANDED
        if self.shut:
            return CLOSING
        write_slot(entry, _Entry, _IDLE_SINCE, 'idle_since', now)
        self.idle.append(entry)
        return IDLE

    cpdef bint slot_freed(self) except -1:
        """A slot was given up: True if handed to the first waiter, else it is free now.

        Once it is free, the driver looks at :meth:`drained` (close()
        waits for it) and :meth:`reserve_refill`.
        """
        if not (self.shut) and self.hand_over(_NEW_SLOT):
            return True
        self.slots -= 1
        return False

    cpdef int size(self):
        """The open connections, idle and in use."""
        return len(self.all)

    cpdef int idle_size(self):
        """The open connections nobody holds."""
        return len(self.idle)

    cpdef bint drained(self):
        """True once the pool is closing and no slot is left."""
        return self.slots == 0 and (self.shut)

    cpdef bint retire(self, object entry) except -1:
        """Take a connection out of the pool (its slot stays with the caller); False if gone.

        False means terminate() took it, slot and all: the caller closes
        nothing and frees no slot.
        """
        if entry not in self.all:
            return False
        self.all.discard(entry)
        self.counters.closed += 1
        return True

    cpdef bint remove_idle(self, object entry) except -1:
        """Take an idle connection found dead out of the idle list; False if not idle."""
        if entry not in self.all:
            return False
        try:
            self.idle.remove(entry)
        except ValueError:
            return False
        return True

    # --- release ---

    cpdef int release_verdict(self, object entry, bint unknown_state):
        """What to do with a released connection, before any reset.

        RELEASED_CLOSING: close it (gracefully unless it is closed);
        BROKEN: it was left mid-operation (`unknown_state`), terminate it;
        RETIRED: past max_queries or expired, close it gracefully;
        REUSABLE: reset it, then :meth:`count_release` with the outcome.
        """
        if self.shut:
            return RELEASED_CLOSING
        if unknown_state:
            return BROKEN
        if (read_slot(entry, _Entry, _QUERIES, 'queries') >= self.max_queries
                or read_slot(entry, _Entry, _GENERATION, 'generation') != self.generation):
            return RETIRED
        return REUSABLE

    cpdef count_release(self, int verdict):
        """Count the outcome of a release: REUSABLE (reset done), BROKEN or RESET_FAILED."""
        if verdict == REUSABLE:
            self.counters.resets += 1
        elif verdict == BROKEN:
            self.counters.broken += 1
        elif verdict == RESET_FAILED:
            self.counters.reset_failures += 1

    # --- lifetimes ---

    cpdef list take_expired(self, double now):
        """The idle connections above min_size idle for max_inactive seconds, out of the idle list.

        The driver closes them (gracefully) and frees their slots.
        """
        cdef list expired = []
        lifetime = self.max_inactive
        if not lifetime:
            return expired
        idle = self.idle
        # The idle list is ordered by release time: the oldest are at the left.
        while idle and len(self.all) - len(expired) > self.min_size:
            if idle[0].idle_since + lifetime > now:
                break
            expired.append(idle.popleft())
        return expired

    cpdef object next_expiry(self):
        """When the oldest idle connection outlives max_inactive (None: nothing to expire)."""
        lifetime = self.max_inactive
        if (lifetime and self.idle and len(self.all) > self.min_size
                and not (self.shut)):
            return self.idle[0].idle_since + lifetime
        return None

    cpdef list take_idle(self):
        """Every idle connection, out of the idle list (to close them)."""
        idle = list(self.idle)
        self.idle.clear()
        return idle

    cpdef list expire(self):
        """Replace every connection: the idle ones are returned (to close), those in use on release."""
        self.generation += 1
        return self.take_idle()

    # --- closing ---

    cpdef list begin_close(self, str message):
        """close(): waiters fail with `message`, the idle connections are returned (to close).

        Connections in use are closed on release; close() waits for
        :meth:`drained`.
        """
        self.closing = True
        self.shut = True
        self.fail_waiters(message)
        return self.take_idle()

    cpdef finish_close(self):
        """close() is done (or gave up and terminated)."""
        self.closed = True
        self.closing = False
        self.shut = True

    cpdef mark_closed(self):
        """The pool is closed (its start failed): nothing is handed out any more."""
        self.closed = True
        self.shut = True

    cpdef list terminate(self, str message):
        """terminate(): every connection is returned (to terminate) with its slot given up.

        Waiters fail with `message`; the connections are no longer the
        pool's, so a release or replacement in flight finds them gone.
        """
        self.closed = True
        self.shut = True
        self.fail_waiters(message)
        entries = list(self.all)
        self.all.clear()
        self.idle.clear()
        self.counters.closed += len(entries)
        self.slots -= len(entries)
        return entries

    def snapshot(self, pipeline_depths=()):
        """The pool's counters with its current sizes, as a PoolStats."""
        return self.counters.snapshot(
            size=len(self.all), idle=len(self.idle), min_size=self.min_size,
            max_size=self.max_size, waiters=self.waiting, pipeline_depths=pipeline_depths)


cdef inline Py_ssize_t _bucket(double waited):
    # bisect_left over the (short) bounds, without a Python call.
    cdef Py_ssize_t i
    for i in range(len(_BOUNDS)):
        if waited <= <double>_BOUNDS[i]:
            return i
    return len(_BOUNDS) - 1

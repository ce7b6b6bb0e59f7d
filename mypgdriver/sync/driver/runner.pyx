# cython: language_level=3
"""CallRunner: the calls of one connection, run on its glue one thread at a time.

A SyncGlue is driven by whichever thread calls ``run()``; two threads must
never drive it at once (its ready queue, timers and the protocol are not
thread-safe).  Every call of the public sync API therefore goes through
one CallRunner, which holds a lock around ``glue.run(coro)``: calls from
several threads are serialized, in the order the lock grants them (not
pipelined).

A callback the driver runs inside a call (a notification listener, a log
listener, a query logger) runs in the thread that holds the lock.  If it
called the connection again it would wait for its own lock forever: such a
call is refused with :exc:`~mypgdriver.exceptions.InterfaceError`.

Compiled, as the glue is: a KeyboardInterrupt cannot land between taking
the lock and noting the owner, nor between the end of a call and giving
them back (the connection would be left locked, or its thread taken for a
re-entrant caller for ever).  The locks are the interpreter's own
(``PyThread_*``, what ``threading.Lock`` wraps), taken without a method
call when free; a thread waiting for one is woken by a signal, whose
handler runs (Ctrl-C raises there), as in ``threading.Lock.acquire()``.
"""
from cpython.exc cimport PyErr_CheckSignals
from cpython.pythread cimport (
    NOWAIT_LOCK,
    PY_LOCK_ACQUIRED,
    PyLockStatus,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_get_thread_ident,
    PyThread_release_lock,
    PyThread_type_lock,
)

from mypgdriver import exceptions

cdef extern from "pythread.h":
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, long long microseconds,
                                             int intr_flag) nogil

__all__ = ('CallRunner',)

_REENTRANT = ('cannot call the connection from inside one of its own calls: a '
              'listener, log listener, termination listener or query logger runs '
              'inside the call that received the event, while that call holds the '
              'connection; do the work after the call returns (e.g. queue it), or '
              'use another connection')


cdef int _acquire(PyThread_type_lock lock) except -1:
    # Take `lock`, waiting (without the GIL) if another thread holds it.
    cdef PyLockStatus status
    if PyThread_acquire_lock(lock, NOWAIT_LOCK):
        return 0
    while True:
        with nogil:
            status = PyThread_acquire_lock_timed(lock, -1, 1)
        if status == PY_LOCK_ACQUIRED:
            return 0
        # Woken by a signal: its handler runs (KeyboardInterrupt raises
        # here, nothing taken), then the wait goes on.
        PyErr_CheckSignals()


cdef class EndLock:
    """The lock a call ends under; ``with runner.end_lock:`` holds it (cancel.py)."""

    cdef PyThread_type_lock lock

    def __cinit__(self):
        self.lock = PyThread_allocate_lock()
        if self.lock == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    def __enter__(self):
        _acquire(self.lock)
        return self

    def __exit__(self, *exc_info):
        PyThread_release_lock(self.lock)
        return False


cdef class CallRunner:
    """Runs coroutines of one asyncio Connection on its SyncGlue, one thread at a time."""

    cdef readonly object _glue
    cdef object _glue_run
    cdef PyThread_type_lock _lock
    # The thread running a call now (`running`: its ident in `owner`).
    # Read without the lock by the same thread (re-entrance) and by
    # cancel() (is a call running?).
    cdef bint _running
    cdef unsigned long _owner
    # Taken to end a call and by a cross-thread cancel() while it sends: a
    # call does not return (and the next one does not start) while a
    # CancelRequest aimed at it is on its way (see cancel.py).
    cdef EndLock _end_lock

    def __cinit__(self, glue):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    def __init__(self, glue):
        self._glue = glue
        self._glue_run = glue.run
        self._running = False
        self._end_lock = EndLock()

    def run(self, coro):
        """Drive `coro` to its end on the glue, holding the connection's lock; its result."""
        cdef unsigned long me = PyThread_get_thread_ident()
        if self._running and self._owner == me:
            coro.close()
            raise exceptions.InterfaceError(_REENTRANT)
        try:
            _acquire(self._lock)
        except BaseException:
            coro.close()    # (interrupted while waiting for another thread's call)
            raise
        self._owner = me
        self._running = True
        try:
            return self._glue_run(coro)
        finally:
            try:
                _acquire(self._end_lock.lock)
            except BaseException:
                # (interrupted while a cancel() was being sent)
                self._running = False
                PyThread_release_lock(self._lock)
                raise
            self._running = False
            PyThread_release_lock(self._end_lock.lock)
            PyThread_release_lock(self._lock)

    def is_running(self):
        """True while some thread runs a call (a snapshot: it may end at once)."""
        return self._running

    def in_call(self):
        """True when the current thread is inside a call (from a callback it runs)."""
        return self._running and self._owner == PyThread_get_thread_ident()

    @property
    def end_lock(self):
        """Held while a call ends; cancel.py holds it while it sends a CancelRequest."""
        return self._end_lock

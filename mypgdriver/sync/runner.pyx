# cython: language_level=3
"""CallRunner: the calls of one connection, run on its glue one thread at a time.

A SyncGlue is driven by whichever thread calls ``run()``; two threads must
never drive it at once (its ready queue, timers and the protocol are not
thread-safe).  Every call of the public sync API therefore goes through
one CallRunner, which holds a ``threading.Lock`` around ``glue.run(coro)``:
calls from several threads are serialized, in the order the lock grants
them (not pipelined).

A callback the driver runs inside a call (a notification listener, a log
listener, a query logger) runs in the thread that holds the lock.  If it
called the connection again it would wait for its own lock forever: such a
call is refused with :exc:`~mypgdriver.exceptions.InterfaceError`.

Compiled, as the glue is: a KeyboardInterrupt cannot land between taking
the lock and noting the owner, nor between the end of a call and giving
them back (the connection would be left locked, or its thread taken for a
re-entrant caller for ever).
"""
import threading

from mypgdriver import exceptions

__all__ = ('CallRunner',)

cdef object _get_ident = threading.get_ident

_REENTRANT = ('cannot call the connection from inside one of its own calls: a '
              'listener, log listener, termination listener or query logger runs '
              'inside the call that received the event, while that call holds the '
              'connection; do the work after the call returns (e.g. queue it), or '
              'use another connection')


cdef class CallRunner:
    """Runs coroutines of one asyncio Connection on its SyncGlue, one thread at a time."""

    cdef readonly object _glue
    cdef object _glue_run
    cdef object _lock
    # The thread running a call now (None: idle).  Read without the lock by
    # the same thread (re-entrance) and by cancel() (is a call running?).
    cdef object _owner
    # Taken to end a call and by a cross-thread cancel() while it sends: a
    # call does not return (and the next one does not start) while a
    # CancelRequest aimed at it is on its way (see cancel.py).
    cdef object _end_lock

    def __init__(self, glue):
        self._glue = glue
        self._glue_run = glue.run
        self._lock = threading.Lock()
        self._owner = None
        self._end_lock = threading.Lock()

    def run(self, coro):
        """Drive `coro` to its end on the glue, holding the connection's lock; its result."""
        me = _get_ident()
        if self._owner == me:
            coro.close()
            raise exceptions.InterfaceError(_REENTRANT)
        lock = self._lock
        lock.acquire()
        self._owner = me
        try:
            return self._glue_run(coro)
        finally:
            end_lock = self._end_lock
            try:
                end_lock.acquire()
            except BaseException:
                # (interrupted while a cancel() was being sent)
                self._owner = None
                lock.release()
                raise
            self._owner = None
            end_lock.release()
            lock.release()

    def is_running(self):
        """True while some thread runs a call (a snapshot: it may end at once)."""
        return self._owner is not None

    def in_call(self):
        """True when the current thread is inside a call (from a callback it runs)."""
        return self._owner == _get_ident()

    @property
    def end_lock(self):
        """Held while a call ends; cancel.py holds it while it sends a CancelRequest."""
        return self._end_lock

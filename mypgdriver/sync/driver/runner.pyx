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

import asyncio

from mypgdriver import exceptions
from mypgdriver.core.deadlines import NO_DEADLINE, Deadline, check_timeout
from mypgdriver.core.session import CACHED_RUN_RETRIES
from mypgdriver.protocol.protocol import WANT_ROWS
from mypgdriver.tracing import TELEMETRY

from mypgdriver.protocol.protocol cimport BaseProtocol
from mypgdriver.protocol.waiter cimport CANCELLED, FINISHED, PENDING, Waiter
from mypgdriver.sync.driver.glue cimport SyncGlue

cdef extern from "pythread.h":
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, long long microseconds,
                                             int intr_flag) nogil

__all__ = ('CallRunner',)

_CancelledError = asyncio.CancelledError
cdef int _WANT_ROWS = WANT_ROWS

# Runners held by one thread across several calls (hold(): a pipeline's
# block), and how many: _enter() and _leave() look at the set only while
# the count is not zero, so holding costs the other calls nothing.
cdef set _held = set()
cdef Py_ssize_t _n_held = 0

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

    def __cinit__(self, glue, session=None):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    def __init__(self, glue, session=None):
        self._glue = glue
        self._sync_glue = glue
        self._glue_run = glue.run
        self._session = session
        self._protocol = None if session is None else session.protocol
        self.compiled = True
        self.compiled_calls = 0
        if session is not None:
            self._loggers = session.query_loggers
            self._cache = session.stmt_cache
            self._blocks = session.blocks
            self._closes = session.closes
            self._admission = session.admission
        self._running = False
        self._end_lock = EndLock()

    cdef int _enter(self) except -1:
        # Take the connection for the current thread (waiting for another
        # thread's call); a call from inside one of its own calls is refused.
        cdef unsigned long me = PyThread_get_thread_ident()
        if self._running and self._owner == me:
            raise exceptions.InterfaceError(_REENTRANT)
        if _n_held and self._owner == me and self in _held:
            # The holding thread's own call (hold()): the lock is its already.
            self._running = True
            return 0
        _acquire(self._lock)
        self._owner = me
        self._running = True
        return 0

    cdef int _leave(self) except -1:
        # Give the connection back, once no cancel() aimed at the call is
        # on its way (the end lock).
        try:
            _acquire(self._end_lock.lock)
        except BaseException:
            # (interrupted while a cancel() was being sent)
            self._running = False
            PyThread_release_lock(self._lock)
            raise
        self._running = False
        PyThread_release_lock(self._end_lock.lock)
        if _n_held and self in _held:
            return 0        # held on until release()
        PyThread_release_lock(self._lock)
        return 0

    def hold(self):
        """Take the connection for the current thread until release(); False if it holds it already.

        Meanwhile the thread's calls run as usual and other threads' calls
        wait for release() (Connection.pipeline(): the block holds the
        connection).  Between the calls is_running() is False.
        """
        global _n_held
        if self in _held and self._owner == PyThread_get_thread_ident():
            return False
        self._enter()
        _held.add(self)
        _n_held = len(_held)
        self._running = False
        return True

    def release(self):
        """End hold(): other threads' calls may take the connection."""
        global _n_held
        if self not in _held or self._owner != PyThread_get_thread_ident():
            return
        _held.discard(self)
        _n_held = len(_held)
        self._running = False
        PyThread_release_lock(self._lock)

    def run(self, coro):
        """Drive `coro` to its end on the glue, holding the connection's lock; its result."""
        try:
            self._enter()
        except BaseException:
            coro.close()    # (refused, or interrupted while waiting for another thread's call)
            raise
        try:
            return self._glue_run(coro)
        finally:
            self._leave()

    cpdef object execute(self, query, args, int limit, timeout, int want, rows_as):
        """``Session.execute(query, args, limit, timeout, want, rows_as)`` run to its end, under the lock.

        A statement of the statement cache on a connection with nothing in
        the way takes the compiled call path (_execute_cached()); any other
        call runs the Session's coroutine, as run() does.
        """
        self._enter()
        try:
            return self._execute_cached(query, args, limit, timeout, want, rows_as)
        finally:
            self._leave()

    cdef object _execute_cached(self, query, args, int limit, timeout, int want, rows_as):
        # The compiled call path.  It is Session.execute()'s hot path when
        # every one of its checks passes, and nothing else: each check that
        # could do anything but let the call through (a query logger or
        # tracing, a closed connection, a transaction block or Close to be
        # synced first, a cache miss, a declined send) hands the whole call
        # to the Session's execute() or to the step of it that takes over
        # at that point (execute_in_line(), execute_declined(),
        # finish_cached()), so those rules have one owner.  What it adds is
        # the wait: the glue's wait_for() on a Waiter instead of a
        # coroutine awaiting a Future.
        cdef SyncGlue glue = self._sync_glue
        cdef BaseProtocol proto = self._protocol
        cdef Waiter waiter
        session = self._session
        if (proto is None or not self.compiled or glue.depth or self._loggers or TELEMETRY.live
                or session.closed):
            return self._glue_run(session.execute(query, args, limit, timeout, want, rows_as))
        if timeout is None:
            timeout = session.command_timeout
        else:
            timeout = check_timeout(timeout)
        if rows_as is None:
            rows_as = session.rows_default
        if (self._blocks.active or self._closes) and self._admission.needs_sync():
            return self._glue_run(session.execute(query, args, limit, timeout, want, rows_as))
        state = self._cache.get(query)
        if state is None:
            return self._glue_run(session.execute(query, args, limit, timeout, want, rows_as))
        deadline = NO_DEADLINE if timeout is None else Deadline(glue, timeout)
        # As run(): a signal that came while the caller's own code ran is
        # raised here, before anything is sent.
        PyErr_CheckSignals()
        waiter = Waiter.__new__(Waiter, glue)
        try:
            sent = proto.send_bind_execute(state, args, limit, timeout, want, rows_as, True,
                                           None, waiter)
        except CACHED_RUN_RETRIES as e:
            return self._glue_run(session.execute_in_line(
                query, args, limit, deadline, want, rows_as, True, failed=(e, state)))
        if sent is None:
            return self._glue_run(session.execute_declined(
                query, state, args, limit, deadline, want, rows_as))
        self.compiled_calls += 1
        interrupt = self._wait(glue, waiter)
        if interrupt is not None:
            # As run() throws CancelledError into the Session's await.
            return glue.run_interrupted(session.finish_cached(
                waiter, _CancelledError(), query, args, limit, deadline, want, rows_as, state),
                interrupt)
        if waiter.state == FINISHED and not waiter.failed:
            return waiter.value
        return self._glue_run(session.finish_cached(
            waiter, self._failure(glue, waiter), query, args, limit, deadline, want, rows_as,
            state))

    cpdef object run_prepared(self, stmt, args, int limit, timeout, method, rows_as=None):
        """``Session.run_prepared(stmt, args, limit, timeout, method, rows_as)`` run to its end, under the lock.

        A PreparedStatement's fetch(), fetchrow() and fetchval(): with
        nothing in the way, the compiled call path (_run_prepared()); any
        other call runs the Session's coroutine, as run() does.
        """
        self._enter()
        try:
            return self._run_prepared(stmt, args, limit, timeout, method, rows_as)
        finally:
            self._leave()

    cdef object _run_prepared(self, stmt, args, int limit, timeout, method, rows_as):
        # Session.run_prepared()'s hot path when every one of its checks
        # passes (as _execute_cached() is execute()'s): anything else hands
        # the call to run_prepared() itself, or to the step of it that takes
        # over (run_prepared_declined(), finish_prepared()).
        cdef SyncGlue glue = self._sync_glue
        cdef BaseProtocol proto = self._protocol
        cdef Waiter waiter
        session = self._session
        if proto is None or not self.compiled or glue.depth or TELEMETRY.live:
            return self._glue_run(session.run_prepared(stmt, args, limit, timeout, method,
                                                       rows_as))
        state = stmt._state
        if timeout is None:
            timeout = session.command_timeout
        else:
            timeout = check_timeout(timeout)
        if rows_as is None:
            rows_as = stmt._rows_as
            if rows_as is None:
                rows_as = session.rows_default
        if (stmt._checkout != session.checkout or session.closed or state.closed
                or ((self._blocks.active or self._closes) and self._admission.needs_sync())
                or state.codecs_generation != session.codecs.generation):
            return self._glue_run(session.run_prepared(stmt, args, limit, timeout, method,
                                                       rows_as))
        deadline = NO_DEADLINE if timeout is None else Deadline(glue, timeout)
        # As run(): a signal that came while the caller's own code ran is
        # raised here, before anything is sent.
        PyErr_CheckSignals()
        waiter = Waiter.__new__(Waiter, glue)
        sink = stmt._status
        sent = proto.send_bind_execute(state, args, limit, timeout, _WANT_ROWS, rows_as, True,
                                       sink, waiter)
        if sent is None:
            return self._glue_run(session.run_prepared_declined(
                stmt, state, args, limit, deadline, rows_as, sink))
        self.compiled_calls += 1
        interrupt = self._wait(glue, waiter)
        if interrupt is not None:
            return glue.run_interrupted(session.finish_prepared(
                waiter, _CancelledError(), stmt, state, args, limit, deadline, rows_as),
                interrupt)
        if waiter.state == FINISHED and not waiter.failed:
            return waiter.value
        return self._glue_run(session.finish_prepared(
            waiter, self._failure(glue, waiter), stmt, state, args, limit, deadline, rows_as))

    cdef object _wait(self, SyncGlue glue, Waiter waiter):
        # The compiled call path's wait for `waiter`: None once it has its
        # answer (or was cancelled), or the KeyboardInterrupt that stopped
        # it (the glue told: on_interrupt()), for the caller to hand over
        # as run() throws CancelledError into the Session's await.
        glue.depth += 1
        try:
            glue.wait_for(waiter)
        except KeyboardInterrupt as exc:
            glue.on_interrupt()
            glue.depth -= 1
            return exc
        except BaseException:
            glue.depth -= 1
            raise
        glue.depth -= 1
        if glue.ready:
            glue.run_ready()
        return None

    cdef object _failure(self, SyncGlue glue, Waiter waiter):
        # What a wait that did not end in a result hands over: the error, or
        # for a cancelled one (the caller interrupted: a stream's feeder
        # only, never this operation) a CancelledError, as under run().
        if waiter.state == FINISHED:
            return waiter.value
        glue.caller.interrupted = False
        return _CancelledError()

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

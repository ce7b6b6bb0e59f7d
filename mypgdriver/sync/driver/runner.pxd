# CallRunner's declaration, for compiled faces (the DB-API cursor's
# execute(), mypgdriver/dbapi/cursorcore.pyx) to call its execute()
# without a method lookup.
from cpython.pythread cimport PyThread_type_lock

from mypgdriver.protocol.protocol cimport BaseProtocol
from mypgdriver.protocol.waiter cimport Waiter
from mypgdriver.sync.driver.glue cimport SyncGlue


cdef class EndLock:
    cdef PyThread_type_lock lock


cdef class CallRunner:
    cdef readonly object _glue
    cdef SyncGlue _sync_glue
    cdef object _glue_run
    # The connection's Session and protocol (execute()'s call path).
    cdef object _session
    cdef BaseProtocol _protocol
    # The Session's parts that never change, read without an attribute lookup.
    cdef list _loggers
    cdef object _cache
    cdef object _blocks
    cdef object _closes
    cdef object _admission
    # False: every call runs the Session's coroutine (tests run the same
    # checks through both paths).
    cdef public bint compiled
    # Calls whose Bind/Execute the compiled call path sent.
    cdef readonly unsigned long long compiled_calls
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

    cdef int _enter(self) except -1
    cdef int _leave(self) except -1
    cpdef object execute(self, query, args, int limit, timeout, int want, rows_as)
    cdef object _execute_cached(self, query, args, int limit, timeout, int want, rows_as)
    cpdef object run_prepared(self, stmt, args, int limit, timeout, method, rows_as=*)
    cdef object _run_prepared(self, stmt, args, int limit, timeout, method, rows_as)
    cdef object _wait(self, SyncGlue glue, Waiter waiter)
    cdef object _failure(self, SyncGlue glue, Waiter waiter)

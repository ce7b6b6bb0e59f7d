# The sync glue's classes, for the compiled call path (runner.pyx) to reach
# their state without a method call.

cdef class Handle:
    cdef readonly double when
    cdef readonly unsigned long long seq
    cdef object callback
    cdef tuple args
    cdef public bint cancelled


cdef class Caller:
    cdef public bint interrupted


cdef class SyncGlue:
    cdef public object time
    cdef public object get_debug
    cdef public object create_future
    cdef object ready           # collections.deque of Handle
    cdef list timers            # heap of Handle
    cdef unsigned long long seq
    cdef public Caller caller
    # The connection's protocol, once open (open_connection()).
    cdef public object protocol
    # The open transports the driver reads: the connection's, and briefly
    # a CancelRequest's or an SSLRequest's.
    cdef public list transports
    # Sockets being connected or shaken hands with: (socket, writable, Future).
    cdef public list io_waiters
    # Set by a transport (or the driver) when a KeyboardInterrupt came out
    # of a blocking wait, with nothing received: a clean interruption.
    cdef public bint interrupted_cleanly
    # Calls of run() in progress (a CancelRequest is driven inside a call).
    cdef int depth
    # Tests: called at each clean interruption point (before each blocking
    # wait); raising KeyboardInterrupt there is a clean interruption.
    cdef public object wait_hook

    cpdef run_ready(self)
    cpdef wait_for(self, fut)
    cdef int _clean_point(self) except -1
    cdef object drive(self, coro, object interrupted)
    cdef int on_interrupt(self) except -1
    cpdef _close_in_doubt(self)

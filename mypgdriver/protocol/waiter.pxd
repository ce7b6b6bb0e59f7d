cdef enum WaiterState:
    PENDING = 0
    FINISHED = 1        # a result or an exception
    CANCELLED = 2


cdef class Waiter:
    cdef:
        readonly object loop
        WaiterState state
        object value            # the result, or the exception (`failed`)
        bint failed
        list callbacks          # done callbacks, each called with the waiter (None: none)
        public bint _asyncio_future_blocking

    cdef int _schedule_callbacks(self) except -1

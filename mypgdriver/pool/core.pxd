# The pool core's declarations, cimported by the sync pool's thread driver
# (mypgdriver/sync/poolcore.pyx) so that its bookkeeping steps are C calls.

cdef class NewSlot:
    pass


cdef class Waiter:
    cpdef bint deliver(self, object item) except -1
    cpdef fail(self, str message)


cdef class Backoff:
    cdef readonly double first
    cdef readonly double cap
    cdef readonly double delay
    cpdef double next(self)
    cpdef reset(self)


cdef class PoolCore:
    cdef readonly int min_size
    cdef readonly int max_size
    cdef readonly object max_queries
    cdef readonly object max_inactive
    cdef readonly bint closing
    cdef readonly bint closed
    # closing or closed: one look for the asyncio driver's hot path.
    cdef readonly bint shut
    cdef readonly object generation
    cdef readonly object counters
    cdef readonly set all
    cdef readonly object idle
    cdef object _line
    cdef readonly int waiting
    cdef readonly int slots

    cpdef object take(self)
    cpdef bint take_slot(self)
    cpdef reserve_slot(self)
    cpdef int reserve_refill(self, int most)
    cpdef bint fresh(self, object entry)
    cpdef join_line(self, Waiter waiter)
    cpdef forget(self, Waiter waiter)
    cpdef resumed(self)
    cpdef int line_length(self)
    cpdef bint hand_over(self, object item) except -1
    cpdef fail_waiters(self, str message)
    cpdef bint register(self, object entry) except -1
    cpdef int make_available(self, object entry, double now) except -1
    cpdef bint slot_freed(self) except -1
    cpdef int size(self)
    cpdef int idle_size(self)
    cpdef bint drained(self)
    cpdef bint retire(self, object entry) except -1
    cpdef bint remove_idle(self, object entry) except -1
    cpdef int release_verdict(self, object entry, bint unknown_state)
    cpdef count_release(self, int verdict)
    cpdef count_acquire(self, double waited, bint queued)
    cpdef list take_expired(self, double now)
    cpdef object next_expiry(self)
    cpdef list take_idle(self)
    cpdef list expire(self)
    cpdef list begin_close(self, str message)
    cpdef finish_close(self)
    cpdef mark_closed(self)
    cpdef list terminate(self, str message)
    cpdef object timeout_error(self, double timeout, str caller)

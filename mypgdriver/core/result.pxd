from mypgdriver.protocol.statement cimport StatementState


cdef class Result:
    cdef public list rows
    cdef public object status
    cdef public object description


cpdef Result result_of(list rows, status, StatementState state)

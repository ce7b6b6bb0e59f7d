cdef class ConvertedQuery:
    cdef readonly str text
    cdef readonly tuple names
    cdef readonly Py_ssize_t count

    cpdef arguments(self, params, bint allow_unused=*)

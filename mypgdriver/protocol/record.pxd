# Record: the immutable result row.  The protocol core builds rows with
# make_record(); everything else is the Python-visible mapping/sequence API.

cdef class RecordDescriptor:
    # Column names in order, and name -> position (last occurrence wins, as in asyncpg).
    cdef readonly tuple names
    cdef dict index


cdef class Record:
    cdef RecordDescriptor _desc
    cdef tuple _values


# Build a row from a filled tuple without any Python-level call.  `cls` is
# Record or a Python subclass of it (connect(record_class=...)).
cdef Record make_record(type cls, RecordDescriptor desc, tuple values)

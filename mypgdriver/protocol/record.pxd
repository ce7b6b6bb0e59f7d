# Record: the immutable result row.  The type itself is written in C
# (record_type.c); this is the API the protocol core builds rows with:
#
#     row = record_new(record_class, desc, n)     # n items, all unset
#     for i in range(n):
#         record_set_item(row, i, value)          # stores a new reference
#     return record_finish(row)
#
# If filling fails half-way, simply drop the row: unset items are allowed
# until record_finish(), which must be called exactly once, after all are set.

cdef class RecordDescriptor:
    # Column names in order, and name -> position (last occurrence wins, as in asyncpg).
    # record_type.h declares this layout too; record.pyx checks that they agree.
    cdef readonly tuple names
    cdef dict index


cdef extern from "mypgdriver/protocol/record_type.h":
    # Inline in the caller's module: no call per value.
    void record_set_item "MpgRecord_SetItem" (object record, Py_ssize_t i, object value)


# A row of `cls` (Record or a Python subclass, see connect(record_class=...))
# with n unset items; `desc` must have n names (ValueError otherwise).
cdef object record_new(type cls, RecordDescriptor desc, Py_ssize_t n)

# Declare `record` complete and return it: decides whether the garbage
# collector needs to track it.  SystemError if an item was left unset.
cdef object record_finish(object record)

# A row holding the items of `values`, for callers that have a tuple already.
cdef object make_record(type cls, RecordDescriptor desc, tuple values)

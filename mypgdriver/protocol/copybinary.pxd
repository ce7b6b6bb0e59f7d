# Binary COPY's data (PostgreSQL docs, COPY, "Binary Format"): a 19-byte
# header, then per row a 16-bit field count and each field as a 32-bit length
# (-1 for NULL) followed by the value in its type's binary form (the same
# bytes a Bind carries), then a trailer, the 16-bit word -1.
#
# Written once, here, for both writers of binary COPY rows:
# copy_records_to_table() (StatementState.encode_copy_records in
# statement.pyx) and the DB-API's Copy.write_row() (mypgdriver/dbapi/copyrows.pyx).
# The functions are inline (a .pxd with no module behind it): the row loop
# of either caller compiles to the same code as if written in place, with no
# call per row.

from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int16_t, int32_t
from mypgdriver.protocol.buffer cimport WriteBuffer
from mypgdriver.codecs.base cimport Codec


cdef inline int write_copy_binary_header(WriteBuffer buf) except -1:
    buf.write_raw(b'PGCOPY\n\xff\r\n\x00', 11)
    buf.write_int32(0)      # flags
    buf.write_int32(0)      # header extension length
    return 0


cdef inline int write_copy_binary_trailer(WriteBuffer buf) except -1:
    return buf.write_int16(-1)


cdef inline int encode_copy_tuple(WriteBuffer buf, tuple codecs, tuple record,
                                  Py_ssize_t *column) except -1:
    # One row: `record` holds exactly one value per codec (the caller checked
    # the count and reports it in its own words).  While a codec runs,
    # column[0] is its index, else -1: so a caller catching an exception
    # tells a value the codec refused (to report with its column) from any
    # other failure (MemoryError), with one try for a whole batch of rows.
    cdef Py_ssize_t ncols = PyTuple_GET_SIZE(codecs)
    cdef Py_ssize_t j, off
    cdef PyObject *value
    cdef Codec codec
    buf.write_int16(<int16_t>ncols)
    for j in range(ncols):
        # Borrowed from the tuple, which the caller holds: no reference
        # counting per value.
        value = PyTuple_GET_ITEM(record, j)
        if value == <PyObject *>None:
            buf.write_int32(-1)
            continue
        codec = <Codec>PyTuple_GET_ITEM(codecs, j)
        off = buf.reserve_length()
        column[0] = j
        codec.c_encode(codec, buf, <object>value)
        column[0] = -1
        buf.patch_length(off, <int32_t>(buf.length - off - 4))
    return 0

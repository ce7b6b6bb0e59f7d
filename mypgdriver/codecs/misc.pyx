# cython: language_level=3
"""System and special-purpose types, mapped as asyncpg maps them.

Binary: tid <-> (block, offset); xid, cid <-> int (uint32); xid8 <-> int
(uint64); pg_lsn <-> int (the 64-bit WAL position); txid_snapshot and
pg_snapshot <-> (xmin, xmax, (xip, ...)).

Text (str both ways): money, whose rendering depends on lc_monetary; the
reg* object-identifier types and refcursor, because their useful form is
the name ('pg_class', 'integer') that only the server can resolve; and
tsvector/tsquery.
"""

from cpython.long cimport PyLong_FromUnsignedLong, PyLong_FromUnsignedLongLong, PyLong_AsUnsignedLongLong
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_int32, unpack_uint16, unpack_uint32, unpack_uint64)
from mypgdriver.codecs.base cimport (
    Codec, register_builtin, raise_encode_error, raise_decode_error, check_length,
    text_fallback_codec, FORMAT_TEXT)

import operator
import re


cdef uint64_t as_unsigned(Codec codec, object outer, object value, uint64_t maximum,
                          str what) except? 0xFFFFFFFFFFFFFFFF:
    """`value` as an integer in [0, maximum]; `outer` is the argument, for the error."""
    cdef uint64_t v
    if isinstance(value, bool):
        raise_encode_error(codec, outer, f'{what} must be an integer, got bool')
    try:
        value = operator.index(value)
    except TypeError:
        raise_encode_error(
            codec, outer, f'{what} must be an integer, got {type(value).__name__}')
    if value < 0 or value > maximum:
        raise_encode_error(codec, outer, f'{what} {value} is out of range [0, {maximum}]')
    return PyLong_AsUnsignedLongLong(value)


# --- xid, cid, xid8 ------------------------------------------------------------

cdef object uint32_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 4)
    return PyLong_FromUnsignedLong(unpack_uint32(frame_read(frame, 4)))


cdef int uint32_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_int32(<int32_t>as_unsigned(codec, value, value, 0xFFFFFFFF, codec.name))


cdef object uint64_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 8)
    return PyLong_FromUnsignedLongLong(unpack_uint64(frame_read(frame, 8)))


cdef int uint64_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_int64(<int64_t>as_unsigned(
        codec, value, value, 0xFFFFFFFFFFFFFFFF, codec.name))


# --- pg_lsn --------------------------------------------------------------------

# The server's own rendering, 'X/Y': two hex numbers of up to 32 bits.
LSN_TEXT = re.compile(r'\s*([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})\s*\Z')


cdef int pg_lsn_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # asyncpg takes an int; 'X/Y' is taken too since that is how LSNs are
    # usually seen (pg_current_wal_lsn()::text, the logs).
    if isinstance(value, str):
        m = LSN_TEXT.match(value)
        if m is None:
            raise_encode_error(codec, value, "expected an int or 'X/Y' hex text")
        value = (int(m.group(1), 16) << 32) | int(m.group(2), 16)
    return uint64_encode(codec, buf, value)


# --- tid -----------------------------------------------------------------------

cdef object tid_decode(Codec codec, Frame *frame):
    check_length(codec, frame, 6)
    cdef const char *p = frame_read(frame, 6)
    return (PyLong_FromUnsignedLong(unpack_uint32(p)),
            PyLong_FromUnsignedLong(unpack_uint16(p + 4)))


cdef int tid_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise_encode_error(codec, value, 'expected a (block, offset) tuple')
    cdef uint64_t block = as_unsigned(codec, value, value[0], 0xFFFFFFFF, 'block number')
    cdef uint64_t offset = as_unsigned(codec, value, value[1], 0xFFFF, 'offset')
    buf.write_int32(<int32_t><uint32_t>block)
    return buf.write_int16(<int16_t><uint16_t>offset)


# --- txid_snapshot, pg_snapshot ---------------------------------------------------

cdef object snapshot_decode(Codec codec, Frame *frame):
    # int32 nxip, int64 xmin, int64 xmax, nxip x int64 (txid_snapshot_send).
    cdef int32_t nxip = frame_read_int32(frame)
    cdef int32_t i
    cdef object xid
    if nxip < 0 or 16 + <Py_ssize_t>nxip * 8 != frame.remaining:
        raise_decode_error(codec, f'{nxip} in-progress ids do not fill {frame.remaining} bytes')
    xmin = PyLong_FromUnsignedLongLong(unpack_uint64(frame_read(frame, 8)))
    xmax = PyLong_FromUnsignedLongLong(unpack_uint64(frame_read(frame, 8)))
    cdef tuple xip = PyTuple_New(nxip)
    for i in range(nxip):
        xid = PyLong_FromUnsignedLongLong(unpack_uint64(frame_read(frame, 8)))
        Py_INCREF(xid)
        PyTuple_SET_ITEM(xip, i, xid)
    return (xmin, xmax, xip)


cdef int snapshot_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef uint64_t MAX = 0xFFFFFFFFFFFFFFFF
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise_encode_error(codec, value, 'expected a (xmin, xmax, [xip, ...]) tuple')
    xip = value[2]
    if isinstance(xip, (str, bytes)) or not hasattr(xip, '__iter__'):
        raise_encode_error(codec, value, 'the in-progress ids must be a sequence of ints')
    xip = list(xip)
    if len(xip) > 0x7FFFFFFF // 8:
        raise_encode_error(codec, value, 'too many in-progress ids')
    # Everything is checked before writing, so an error leaves no partial value.
    cdef uint64_t xmin = as_unsigned(codec, value, value[0], MAX, 'xmin')
    cdef uint64_t xmax = as_unsigned(codec, value, value[1], MAX, 'xmax')
    ids = [as_unsigned(codec, value, x, MAX, 'xip') for x in xip]
    buf.write_int32(<int32_t>len(ids))
    buf.write_int64(<int64_t>xmin)
    buf.write_int64(<int64_t>xmax)
    for x in ids:
        buf.write_int64(<int64_t><uint64_t>x)
    return 0


# --- registration -------------------------------------------------------------

register_builtin(27, 'tid', tid_decode, tid_encode)
register_builtin(28, 'xid', uint32_decode, uint32_encode)
register_builtin(29, 'cid', uint32_decode, uint32_encode)
register_builtin(5069, 'xid8', uint64_decode, uint64_encode)
register_builtin(3220, 'pg_lsn', uint64_decode, pg_lsn_encode)
register_builtin(2970, 'txid_snapshot', snapshot_decode, snapshot_encode)
register_builtin(5038, 'pg_snapshot', snapshot_decode, snapshot_encode)

cdef Codec _as_text = text_fallback_codec(0, 'text')

cdef int register_text(uint32_t oid, str name) except -1:
    register_builtin(oid, name, _as_text.c_decode, _as_text.c_encode, FORMAT_TEXT)
    return 0


register_text(790, 'money')
register_text(3614, 'tsvector')
register_text(3615, 'tsquery')
register_text(3642, 'gtsvector')
register_text(1790, 'refcursor')
register_text(24, 'regproc')
register_text(2202, 'regprocedure')
register_text(2203, 'regoper')
register_text(2204, 'regoperator')
register_text(2205, 'regclass')
register_text(2206, 'regtype')
register_text(3734, 'regconfig')
register_text(3769, 'regdictionary')
register_text(4089, 'regnamespace')
register_text(4096, 'regrole')
register_text(4191, 'regcollation')

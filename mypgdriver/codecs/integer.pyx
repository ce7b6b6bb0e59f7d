# cython: language_level=3
"""bool, int2, int4, int8 and the unsigned 32-bit oid types."""

from cpython.bool cimport PyBool_Check
from cpython.long cimport PyLong_FromLong, PyLong_FromLongLong, PyLong_FromUnsignedLong
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, INT64_MAX, INT64_MIN
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, unpack_int16, unpack_int32, unpack_int64, unpack_uint32
from mypgdriver.codecs.base cimport (
    Codec, register_builtin, raise_encode_error, check_length, FORMAT_BINARY)

import operator


cdef object as_integer(Codec codec, object value):
    """Return `value` as a Python int, refusing anything that would lose data.

    Integral floats and Decimals are accepted (1.0 -> 1), 1.5 is an error:
    silently truncating a user's value is worse than refusing it.
    """
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        pass
    if isinstance(value, (str, bytes, bytearray)) or not hasattr(type(value), '__int__'):
        raise_encode_error(
            codec, value, f'an integer is required (got type {type(value).__name__})')
    try:
        as_int = int(value)
        exact = as_int == value
    except (ValueError, OverflowError, TypeError):
        exact = False
    if not exact:
        raise_encode_error(
            codec, value, f'{value!r} is not an integer (it would be truncated)')
    return as_int


cdef extern from "Python.h":
    long long PyLong_AsLongLongAndOverflow(object value, int *overflow) except? -1


cdef int64_t integer_checked(Codec codec, object value, int64_t lo, int64_t hi,
                             str label) except? -1:
    # integer_in_range's out-of-line part: non-int values, and errors.
    cdef int overflow = 0
    cdef int64_t v = PyLong_AsLongLongAndOverflow(as_integer(codec, value), &overflow)
    if overflow or v < lo or v > hi:
        raise_encode_error(codec, value, f'value out of {label} range')
    return v


cdef inline int64_t integer_in_range(Codec codec, object value, int64_t lo, int64_t hi,
                                     str label) except? -1:
    # Hot for every int parameter and COPY value, so small enough to be
    # inlined: a plain int in range costs one call and no exception (the
    # overflow flag instead of OverflowError).
    cdef int overflow = 0
    cdef int64_t v
    if type(value) is int:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow and lo <= v <= hi:
            return v
    return integer_checked(codec, value, lo, hi, label)


cdef object bool_decode(Codec codec, Frame *frame):
    if frame.remaining != 1:
        check_length(codec, frame, 1)
    cdef char b = frame.ptr[0]
    frame.ptr += 1
    frame.remaining = 0
    return True if b else False


cdef int bool_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if not PyBool_Check(value):
        # numpy.bool_ and friends define __bool__ only; accept real bools and
        # the integers 0/1 is what asyncpg refuses too, so stay strict.
        raise_encode_error(
            codec, value, f'a boolean is required (got type {type(value).__name__})')
    buf.write_byte(1 if value is True else 0)
    return 0


cdef object int2_decode(Codec codec, Frame *frame):
    if frame.remaining != 2:
        check_length(codec, frame, 2)
    cdef const char *p = frame.ptr
    frame.ptr += 2
    frame.remaining = 0
    return PyLong_FromLong(unpack_int16(p))


cdef int int2_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_int16(<int16_t>integer_in_range(codec, value, -32768, 32767, 'int16'))


cdef object int4_decode(Codec codec, Frame *frame):
    # The hottest decoder: length check inline, no call unless it is wrong.
    if frame.remaining != 4:
        check_length(codec, frame, 4)
    cdef const char *p = frame.ptr
    frame.ptr += 4
    frame.remaining = 0
    return PyLong_FromLong(unpack_int32(p))


cdef int int4_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_int32(<int32_t>integer_in_range(
        codec, value, -2147483648, 2147483647, 'int32'))


cdef object int8_decode(Codec codec, Frame *frame):
    if frame.remaining != 8:
        check_length(codec, frame, 8)
    cdef const char *p = frame.ptr
    frame.ptr += 8
    frame.remaining = 0
    return PyLong_FromLongLong(unpack_int64(p))


cdef int int8_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # The C macros, not literals: Cython folds -9223372036854775807 - 1 into
    # one literal whose magnitude does not fit int64_t, which C compilers warn
    # about ("so large that it is unsigned").
    return buf.write_int64(integer_in_range(codec, value, INT64_MIN, INT64_MAX, 'int64'))


cdef object uint4_decode(Codec codec, Frame *frame):
    if frame.remaining != 4:
        check_length(codec, frame, 4)
    cdef const char *p = frame.ptr
    frame.ptr += 4
    frame.remaining = 0
    return PyLong_FromUnsignedLong(unpack_uint32(p))


cdef int uint4_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_int32(<int32_t><uint32_t>integer_in_range(
        codec, value, 0, 4294967295, 'uint32'))


register_builtin(16, 'bool', bool_decode, bool_encode)
register_builtin(21, 'int2', int2_decode, int2_encode)
register_builtin(23, 'int4', int4_decode, int4_encode)
register_builtin(20, 'int8', int8_decode, int8_encode)
# Unsigned 32-bit identifiers share one binary form.
register_builtin(26, 'oid', uint4_decode, uint4_encode)

# cython: language_level=3
"""float4 and float8."""

from cpython.float cimport PyFloat_FromDouble, PyFloat_AsDouble, PyFloat_AS_DOUBLE
from libc.float cimport FLT_MAX
from libc.math cimport isinf
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, unpack_float, unpack_double
from mypgdriver.codecs.base cimport Codec, register_builtin, raise_encode_error, check_length


cdef inline double as_double(Codec codec, object value) except? -1.0:
    if type(value) is float:
        return PyFloat_AS_DOUBLE(value)
    if isinstance(value, (str, bytes, bytearray)):
        raise_encode_error(
            codec, value, f'a float is required (got type {type(value).__name__})')
    try:
        return PyFloat_AsDouble(value)
    except OverflowError:
        raise_encode_error(codec, value, f'value out of {codec.name} range')
    except TypeError:
        raise_encode_error(
            codec, value, f'a float is required (got type {type(value).__name__})')


cdef object float4_decode(Codec codec, Frame *frame):
    if frame.remaining != 4:
        check_length(codec, frame, 4)
    cdef const char *p = frame.ptr
    frame.ptr += 4
    frame.remaining = 0
    return PyFloat_FromDouble(unpack_float(p))


cdef int float4_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef double d = as_double(codec, value)
    if not isinf(d) and (d > FLT_MAX or d < -FLT_MAX):
        raise_encode_error(codec, value, 'value out of float4 range')
    return buf.write_float(<float>d)


cdef object float8_decode(Codec codec, Frame *frame):
    if frame.remaining != 8:
        check_length(codec, frame, 8)
    cdef const char *p = frame.ptr
    frame.ptr += 8
    frame.remaining = 0
    return PyFloat_FromDouble(unpack_double(p))


cdef int float8_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return buf.write_double(as_double(codec, value))


register_builtin(700, 'float4', float4_decode, float4_encode)
register_builtin(701, 'float8', float8_decode, float8_encode)

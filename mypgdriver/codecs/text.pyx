# cython: language_level=3
"""text and its relatives (varchar, bpchar, name, "char", unknown), bytea, void."""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer
from mypgdriver.codecs.base cimport Codec, register_builtin, raise_encode_error, decode_utf8


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


cdef object text_decode(Codec codec, Frame *frame):
    cdef object s = decode_utf8(codec, frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return s


cdef int text_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef Py_ssize_t n
    cdef const char *p
    if not isinstance(value, str):
        raise_encode_error(
            codec, value, f'expected str, got {type(value).__name__}')
    p = PyUnicode_AsUTF8AndSize(value, &n)
    # PostgreSQL text cannot hold NUL; refusing here gives a clear error
    # instead of the server's "invalid byte sequence" after a round trip.
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, value, 'string contains a NUL character (\\x00)')
    return buf.write_raw(p, n)


cdef object bytea_decode(Codec codec, Frame *frame):
    cdef object b = PyBytes_FromStringAndSize(frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return b


cdef int bytea_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if isinstance(value, bytes):
        return buf.write_bytes(value)
    if isinstance(value, str):
        raise_encode_error(codec, value, 'expected bytes-like object, got str')
    try:
        return buf.write_bytelike(value)
    except TypeError:
        raise_encode_error(
            codec, value, f'expected bytes-like object, got {type(value).__name__}')


cdef object char_decode(Codec codec, Frame *frame):
    # "char" is a single byte, not necessarily valid UTF-8 on its own:
    # bytes, as asyncpg returns it.
    return bytea_decode(codec, frame)


cdef int char_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef bytes b
    if isinstance(value, str):
        b = (<str>value).encode('utf-8')
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    else:
        raise_encode_error(
            codec, value, f'expected bytes of length 1, got {type(value).__name__}')
    if len(b) > 1:
        raise_encode_error(codec, value, f'"char" holds one byte, got {len(b)}')
    return buf.write_bytes(b)


cdef object void_decode(Codec codec, Frame *frame):
    frame.ptr += frame.remaining
    frame.remaining = 0
    return None


cdef int void_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # void has no value; whatever was passed is dropped by the server anyway.
    return 0


register_builtin(25, 'text', text_decode, text_encode)
register_builtin(1043, 'varchar', text_decode, text_encode)
register_builtin(1042, 'bpchar', text_decode, text_encode)
register_builtin(19, 'name', text_decode, text_encode)
register_builtin(18, 'char', char_decode, char_encode)
register_builtin(705, 'unknown', text_decode, text_encode)
register_builtin(17, 'bytea', bytea_decode, bytea_encode)
register_builtin(2278, 'void', void_decode, void_encode)

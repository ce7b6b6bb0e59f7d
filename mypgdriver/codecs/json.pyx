# cython: language_level=3
"""json, jsonb, jsonpath and xml <-> str.

The binary forms are the text itself; jsonb and jsonpath put a format
version byte (1) in front of it (jsonb_send/jsonb_recv, jsonpath_send/
jsonpath_recv).  Like asyncpg, json values are str both ways by default:
decoding to Python objects is a user codec (set_type_codec with json.loads).
"""

from libc.stdint cimport uint8_t
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read_byte
from mypgdriver.codecs.base cimport (
    Codec, register_builtin, raise_encode_error, raise_decode_error, decode_utf8)


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


cdef enum:
    # The only format version PostgreSQL has for jsonb and jsonpath.
    FORMAT_VERSION = 1


cdef inline object read_rest_as_str(Codec codec, Frame *frame):
    cdef object s = decode_utf8(codec, frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return s


cdef int write_document(Codec codec, WriteBuffer buf, object value, int version) except -1:
    # version < 0: no version byte (json, xml).
    cdef Py_ssize_t n
    cdef const char *p
    if not isinstance(value, str):
        hint = ''
        if codec.name != 'xml':
            hint = (f' (serialize it first, or use set_type_codec({codec.name!r}, '
                    f'encoder=json.dumps, decoder=json.loads, schema=\'pg_catalog\'))')
        raise_encode_error(codec, value, f'expected str, got {type(value).__name__}{hint}')
    p = PyUnicode_AsUTF8AndSize(value, &n)
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, value, 'string contains a NUL character (\\x00)')
    if version >= 0:
        buf.write_byte(<char>version)
    return buf.write_raw(p, n)


cdef object text_document_decode(Codec codec, Frame *frame):
    return read_rest_as_str(codec, frame)


cdef int text_document_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_document(codec, buf, value, -1)


cdef object versioned_decode(Codec codec, Frame *frame):
    cdef uint8_t version = frame_read_byte(frame)
    if version != FORMAT_VERSION:
        raise_decode_error(codec, f'unsupported {codec.name} format version {version}')
    return read_rest_as_str(codec, frame)


cdef int versioned_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_document(codec, buf, value, FORMAT_VERSION)


register_builtin(114, 'json', text_document_decode, text_document_encode)
register_builtin(3802, 'jsonb', versioned_decode, versioned_encode)
register_builtin(4072, 'jsonpath', versioned_decode, versioned_encode)
register_builtin(142, 'xml', text_document_decode, text_document_encode)

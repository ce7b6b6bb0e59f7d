# cython: language_level=3
"""json, jsonb, jsonpath and xml <-> str; json and jsonb <-> Python objects on request.

The binary forms are the text itself; jsonb and jsonpath put a format
version byte (1) in front of it (jsonb_send/jsonb_recv, jsonpath_send/
jsonpath_recv).  Like asyncpg, json values are str both ways by default.
connect(json=True) (or a JsonCodec) gives the connection's registry the
codecs of make_json_codecs() instead, which call loads and dumps.
"""

from cpython.bytes cimport (
    PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE)
from libc.stdint cimport uint8_t
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read_byte
from mypgdriver.codecs.base cimport (
    Codec, FORMAT_BINARY, make_codec, register_builtin, raise_encode_error, raise_decode_error,
    decode_utf8)


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
        if codec.name == 'json' or codec.name == 'jsonb':
            hint = ' (serialize it first, or connect with json=True to have it serialized)'
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


cdef inline int skip_format_version(Codec codec, Frame *frame) except -1:
    cdef uint8_t version = frame_read_byte(frame)
    if version != FORMAT_VERSION:
        raise_decode_error(codec, f'unsupported {codec.name} format version {version}')
    return 0


cdef object versioned_decode(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return read_rest_as_str(codec, frame)


cdef int versioned_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_document(codec, buf, value, FORMAT_VERSION)




# --- decoding to Python objects (the opt-in: connect(json=...)) -------------
#
# The registry of a connection opened with json=... replaces the json and
# jsonb codecs above with these (make_json_codecs); arrays, composites and
# domains of json/jsonb then use them too.  py_decoder is the loads function,
# py_encoder the dumps function.  Each value is one object built straight
# from the read buffer (bytes or str, as the JsonCodec asks) handed to
# loads, and dumps' result is copied once into the write buffer.

cdef inline object loads_rest(Codec codec, Frame *frame, bint as_bytes):
    cdef object document
    if as_bytes:
        document = PyBytes_FromStringAndSize(frame.ptr, frame.remaining)
    else:
        document = decode_utf8(codec, frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return codec.py_decoder(document)


cdef object json_loads_str(Codec codec, Frame *frame):
    return loads_rest(codec, frame, False)


cdef object json_loads_bytes(Codec codec, Frame *frame):
    return loads_rest(codec, frame, True)


cdef object jsonb_loads_str(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return loads_rest(codec, frame, False)


cdef object jsonb_loads_bytes(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return loads_rest(codec, frame, True)


cdef int write_dumped(Codec codec, WriteBuffer buf, object value, int version) except -1:
    # version < 0: no version byte (json).
    cdef Py_ssize_t n
    cdef const char *p
    cdef object document
    if isinstance(value, (str, bytes)):
        # Already JSON text: sent as it is, as without the opt-in (a str
        # is never serialized again: docs/guide/types.rst, "JSON as Python
        # objects", says why).
        document = value
    else:
        document = codec.py_encoder(value)
    if PyBytes_Check(document):
        p = PyBytes_AS_STRING(document)
        n = PyBytes_GET_SIZE(document)
    elif isinstance(document, str):
        p = PyUnicode_AsUTF8AndSize(document, &n)
    else:
        raise_encode_error(
            codec, value,
            f'the json dumps function returned {type(document).__name__}, '
            f'expected str or bytes')
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, value, 'the JSON text contains a NUL character (\\x00)')
    if version >= 0:
        buf.write_byte(<char>version)
    return buf.write_raw(p, n)


cdef int json_dumps_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_dumped(codec, buf, value, -1)


cdef int jsonb_dumps_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_dumped(codec, buf, value, FORMAT_VERSION)


def make_json_codecs(loads, dumps, bint loads_bytes):
    """The json and jsonb codecs that decode with `loads` and encode with `dumps`.

    Returns {oid: Codec} for json (114) and jsonb (3802); `loads` receives
    bytes if `loads_bytes`, else str.
    """
    cdef Codec json_codec = make_codec(
        114, 'json', 'pg_catalog', 'scalar', FORMAT_BINARY,
        json_loads_bytes if loads_bytes else json_loads_str, json_dumps_encode)
    cdef Codec jsonb_codec = make_codec(
        3802, 'jsonb', 'pg_catalog', 'scalar', FORMAT_BINARY,
        jsonb_loads_bytes if loads_bytes else jsonb_loads_str, jsonb_dumps_encode)
    for c in (json_codec, jsonb_codec):
        (<Codec>c).py_decoder = loads
        (<Codec>c).py_encoder = dumps
    return {114: json_codec, 3802: jsonb_codec}


register_builtin(114, 'json', text_document_decode, text_document_encode)
register_builtin(3802, 'jsonb', versioned_decode, versioned_encode)
register_builtin(4072, 'jsonpath', versioned_decode, versioned_encode)
register_builtin(142, 'xml', text_document_decode, text_document_encode)

# cython: language_level=3
"""Codec objects and the table of built-in codecs."""

from cpython.exc cimport PyErr_Clear
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer

from mypgdriver.exceptions import DataError, ProtocolError


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


cdef dict BUILTIN_CODECS = {}


cdef class Codec:

    def __repr__(self):
        fmt = 'binary' if self.format == FORMAT_BINARY else 'text'
        return f'<Codec {self.schema}.{self.name} oid={self.oid} {self.kind} {fmt}>'

    cdef Codec copy(self):
        cdef Codec c = Codec.__new__(Codec)
        c.oid = self.oid
        c.name = self.name
        c.schema = self.schema
        c.kind = self.kind
        c.format = self.format
        c.c_decode = self.c_decode
        c.c_encode = self.c_encode
        c.element_codec = self.element_codec
        c.field_codecs = self.field_codecs
        c.field_oids = self.field_oids
        c.field_desc = self.field_desc
        c.element_delimiter = self.element_delimiter
        c.py_encoder = self.py_encoder
        c.py_decoder = self.py_decoder
        c.extra = self.extra
        return c


cdef Codec make_codec(uint32_t oid, str name, str schema, str kind, int format,
                      decode_fn dec, encode_fn enc):
    cdef Codec c = Codec.__new__(Codec)
    c.oid = oid
    c.name = name
    c.schema = schema
    c.kind = kind
    c.format = format
    c.c_decode = dec
    c.c_encode = enc
    c.element_delimiter = ','
    return c


cdef Codec register_builtin(uint32_t oid, str name, decode_fn dec, encode_fn enc,
                            int format=FORMAT_BINARY, str kind='scalar'):
    cdef Codec c = make_codec(oid, name, 'pg_catalog', kind, format, dec, enc)
    BUILTIN_CODECS[oid] = c
    return c


cdef Codec lookup_builtin(uint32_t oid):
    return BUILTIN_CODECS.get(oid)


def builtin_codecs():
    """A copy of the oid -> Codec table of built-in codecs (for introspection and tests)."""
    return dict(BUILTIN_CODECS)


cdef int raise_encode_error(Codec codec, object value, str reason) except -1:
    raise DataError(f'invalid input for type {codec.name}: {reason}')


cdef int raise_decode_error(Codec codec, str reason) except -1:
    raise ProtocolError(f'cannot decode a value of type {codec.name}: {reason}')


cdef int check_length(Codec codec, Frame *frame, Py_ssize_t expected) except -1:
    if frame.remaining != expected:
        raise_decode_error(
            codec, f'expected {expected} bytes, got {frame.remaining}')
    return 0


cdef int raise_invalid_utf8(Codec codec, const char *p, Py_ssize_t n) except -1:
    # Called with the decoder's UnicodeDecodeError pending: clear it and
    # decode again to get it as an object to chain (errors are rare).
    PyErr_Clear()
    try:
        PyUnicode_DecodeUTF8(p, n, NULL)
    except UnicodeDecodeError as e:
        raise ProtocolError(
            f'cannot decode a value of type {codec.name}: invalid UTF-8 '
            f'({e.reason} at byte {e.start})') from e
    raise ProtocolError(f'cannot decode a value of type {codec.name}: invalid UTF-8')


# --- text fallback: any type the driver has no binary codec for -------------

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
            codec, value,
            f'expected str, got {type(value).__name__} (no binary codec for '
            f'type {codec.name}; pass its text representation)')
    # Not WriteBuffer.write_str_utf8(): its `str` argument is checked for the
    # exact type, and str subclasses (SQLAlchemy's quoted names, enum-like
    # classes) are valid text too.
    p = PyUnicode_AsUTF8AndSize(value, &n)
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, value, 'string contains a NUL character')
    return buf.write_raw(p, n)


cdef Codec text_fallback_codec(uint32_t oid, str name):
    return make_codec(oid, name, None, 'text', FORMAT_TEXT, text_decode, text_encode)


def make_text_fallback(oid, name):
    """A codec that moves values of type `oid` as text (str both ways)."""
    return text_fallback_codec(oid, name)

FORMAT_TEXT_PY = FORMAT_TEXT
FORMAT_BINARY_PY = FORMAT_BINARY


def clone_codec(Codec codec, oid, name, schema, kind):
    """A copy of `codec` that answers for another type (enums, set_builtin_type_codec)."""
    cdef Codec c = codec.copy()
    c.oid = oid
    c.name = name
    c.schema = schema
    c.kind = kind
    return c

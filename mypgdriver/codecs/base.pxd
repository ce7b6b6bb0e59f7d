# The codec contract.
#
# A codec turns one value to/from its wire form.  Decoders get a Frame that
# covers exactly the value's bytes (the caller already handled NULL);
# encoders append the value's bytes to a WriteBuffer (the caller writes and
# back-patches the 4-byte length word, also for array elements and
# composite fields).  Both are plain C function pointers, picked once per
# statement, so decoding a row is a loop of indirect calls with no lookups.

from libc.stdint cimport uint32_t
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer


cdef extern from "Python.h":
    # The same function as cpython.unicode's, declared to return a raw
    # pointer so that decode_utf8() handles the failure itself.
    PyObject *PyUnicode_DecodeUTF8_unchecked "PyUnicode_DecodeUTF8" (
        const char *s, Py_ssize_t size, const char *errors)


ctypedef object (*decode_fn)(Codec codec, Frame *frame)
ctypedef int (*encode_fn)(Codec codec, WriteBuffer buf, object value) except -1


cdef enum WireFormat:
    FORMAT_TEXT = 0
    FORMAT_BINARY = 1


cdef class Codec:
    cdef readonly uint32_t oid
    cdef readonly str name          # type name, e.g. 'int4'
    cdef readonly str schema        # 'pg_catalog' for built-ins
    cdef readonly str kind          # 'scalar', 'array', 'range', 'multirange', 'composite', 'enum', 'domain', 'user'
    cdef readonly int format        # WireFormat used on the wire for this type
    cdef decode_fn c_decode
    cdef encode_fn c_encode

    # Containers: the codecs of what they hold.
    cdef public Codec element_codec         # arrays, ranges, multiranges, domains (base)
    cdef public tuple field_codecs          # composites
    cdef public tuple field_oids
    cdef public object field_desc           # RecordDescriptor of composite field names
    cdef public str element_delimiter       # arrays in text format
    # User codecs (set_type_codec): Python callables around a core codec.
    cdef public object py_encoder
    cdef public object py_decoder
    cdef public object extra                # free slot for codec families

    cdef inline object decode(self, Frame *frame):
        return self.c_decode(self, frame)

    cdef inline int encode(self, WriteBuffer buf, object value) except -1:
        return self.c_encode(self, buf, value)

    cdef Codec copy(self)


# Register a built-in codec (done by each codec module at import).
cdef Codec register_builtin(uint32_t oid, str name, decode_fn dec, encode_fn enc,
                            int format=*, str kind=*)
cdef Codec make_codec(uint32_t oid, str name, str schema, str kind, int format,
                      decode_fn dec, encode_fn enc)

# Raised by encoders for values of the wrong type or out of range; the
# caller adds the argument position.
cdef int raise_encode_error(Codec codec, object value, str reason) except -1
cdef int raise_decode_error(Codec codec, str reason) except -1
cdef int check_length(Codec codec, Frame *frame, Py_ssize_t expected) except -1
# The text fallback's functions (str both ways), for codecs built on it.
cdef object text_decode(Codec codec, Frame *frame)
cdef int text_encode(Codec codec, WriteBuffer buf, object value) except -1
# Out of line: turn the pending UnicodeDecodeError into a ProtocolError.
cdef int raise_invalid_utf8(Codec codec, const char *p, Py_ssize_t n) except -1


cdef inline object decode_utf8(Codec codec, const char *p, Py_ssize_t n):
    # Text from the server: invalid UTF-8 (a broken server, or an SQL_ASCII
    # database) is a malformed value, reported as ProtocolError for the
    # query like any other, not a UnicodeDecodeError from the internals.
    # Costs the same NULL check Cython makes anyway.
    cdef PyObject *decoded = PyUnicode_DecodeUTF8_unchecked(p, n, NULL)
    cdef object s
    if decoded == NULL:
        raise_invalid_utf8(codec, p, n)
    s = <object>decoded         # takes a reference of its own...
    Py_DECREF(s)                # ...so drop the one the call returned
    return s

# Text-format fallback for types without a binary codec (value as str).
cdef Codec text_fallback_codec(uint32_t oid, str name)

# oid -> built-in Codec, or None.
cdef Codec lookup_builtin(uint32_t oid)

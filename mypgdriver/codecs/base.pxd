# The codec contract.
#
# A codec turns one value to/from its wire form.  Decoders get a Frame that
# covers exactly the value's bytes (the caller already handled NULL);
# encoders append the value's bytes to a WriteBuffer (the caller writes and
# back-patches the 4-byte length word, also for array elements and
# composite fields).  Both are plain C function pointers, picked once per
# statement, so decoding a row is a loop of indirect calls with no lookups.

from libc.stdint cimport uint32_t
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer


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

# Text-format fallback for types without a binary codec (value as str).
cdef Codec text_fallback_codec(uint32_t oid, str name)

# oid -> built-in Codec, or None.
cdef Codec lookup_builtin(uint32_t oid)

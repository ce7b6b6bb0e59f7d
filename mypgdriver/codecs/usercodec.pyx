# cython: language_level=3
"""Codecs made of user callables (Connection.set_type_codec).

'text' hands the decoder the value's text form (str), 'binary' its binary
form (bytes), 'tuple' a type-specific tuple (asyncpg's layouts: date,
time, timetz, timestamp, timestamptz, interval, and any composite's fields).
"""

import struct

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer
from mypgdriver.codecs.base cimport (
    Codec, make_codec, raise_encode_error, raise_decode_error, decode_utf8, FORMAT_BINARY,
    FORMAT_TEXT)


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


# Types whose binary wire form is their UTF-8 text: a text-format user codec
# on them can still travel in binary, inside binary arrays and composites.
cdef set BINARY_IS_TEXT = {25, 1043, 1042, 19, 705, 114, 142}
# jsonb and jsonpath: the text form behind a one-byte version header.
cdef dict VERSIONED_TEXT = {3802: b'\x01', 4072: b'\x01'}

# Tuple layouts (wire order) -> how they map to the user's tuple.
TUPLE_LAYOUTS = {
    1082: (struct.Struct('!i'), None),                 # date: (days since 2000-01-01,)
    1083: (struct.Struct('!q'), None),                 # time: (microseconds,)
    1114: (struct.Struct('!q'), None),                 # timestamp
    1184: (struct.Struct('!q'), None),                 # timestamptz
    1266: (struct.Struct('!qi'), None),                # timetz: (microseconds, zone offset)
    1186: (struct.Struct('!qii'), (2, 1, 0)),          # interval: (months, days, microseconds)
}


# --- text ---

cdef object text_decode(Codec codec, Frame *frame):
    cdef bytes prefix = codec.extra
    if prefix:
        if frame.remaining < 1 or frame.ptr[0] != (<char*>prefix)[0]:
            raise_decode_error(codec, 'unsupported format version')
        frame.ptr += 1
        frame.remaining -= 1
    s = decode_utf8(codec, frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return codec.py_decoder(s)


cdef int text_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef Py_ssize_t n
    cdef const char *p
    datum = codec.py_encoder(value)
    if not isinstance(datum, str):
        raise_encode_error(
            codec, value,
            f'the encoder of the text-format codec returned {type(datum).__name__}, expected str')
    p = PyUnicode_AsUTF8AndSize(datum, &n)
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, value, 'encoded text contains a NUL character')
    if codec.extra:
        buf.write_bytes(codec.extra)
    return buf.write_raw(p, n)


# --- binary ---

cdef object binary_decode(Codec codec, Frame *frame):
    b = PyBytes_FromStringAndSize(frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    return codec.py_decoder(b)


cdef int binary_encode(Codec codec, WriteBuffer buf, object value) except -1:
    datum = codec.py_encoder(value)
    try:
        return buf.write_bytelike(datum)
    except TypeError:
        raise_encode_error(
            codec, value,
            f'the encoder of the binary-format codec returned {type(datum).__name__}, '
            f'expected bytes')


# --- tuple: fixed layouts ---

cdef object layout_decode(Codec codec, Frame *frame):
    layout, order = codec.extra
    b = PyBytes_FromStringAndSize(frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    values = layout.unpack(b)
    if order is not None:
        values = tuple([values[i] for i in order])
    return codec.py_decoder(values)


cdef int layout_encode(Codec codec, WriteBuffer buf, object value) except -1:
    layout, order = codec.extra
    datum = codec.py_encoder(value)
    try:
        datum = tuple(datum)
        if order is not None:
            wire = [None] * len(order)
            for user_pos, wire_pos in enumerate(order):
                wire[wire_pos] = datum[user_pos]
            datum = wire
        return buf.write_bytes(layout.pack(*datum))
    except (TypeError, IndexError, struct.error) as e:
        raise_encode_error(
            codec, value, f'the encoder returned {datum!r}, which does not fit the '
            f'tuple layout of {codec.name}: {e}')


# --- tuple: composites (through the composite codec) ---

cdef object composite_tuple_decode(Codec codec, Frame *frame):
    cdef Codec core = codec.element_codec
    record = core.c_decode(core, frame)
    return codec.py_decoder(tuple(record))


cdef int composite_tuple_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef Codec core = codec.element_codec
    return core.c_encode(core, buf, codec.py_encoder(value))


def make_user_codec(oid, str name, str schema, str format, encoder, decoder, Codec core=None):
    """Build a codec from user callables; raise ValueError if `format` does not fit the type."""
    cdef Codec c
    if format == 'text':
        binary = oid in BINARY_IS_TEXT or oid in VERSIONED_TEXT or (
            core is not None and core.kind == 'enum')
        c = make_codec(oid, name, schema, 'user', FORMAT_BINARY if binary else FORMAT_TEXT,
                       text_decode, text_encode)
        c.extra = VERSIONED_TEXT.get(oid, b'')
    elif format == 'binary':
        c = make_codec(oid, name, schema, 'user', FORMAT_BINARY, binary_decode, binary_encode)
    elif format == 'tuple':
        if core is not None and core.kind == 'composite':
            c = make_codec(oid, name, schema, 'user', FORMAT_BINARY,
                           composite_tuple_decode, composite_tuple_encode)
            c.element_codec = core
        elif oid in TUPLE_LAYOUTS:
            c = make_codec(oid, name, schema, 'user', FORMAT_BINARY, layout_decode, layout_encode)
            c.extra = TUPLE_LAYOUTS[oid]
        else:
            raise ValueError(
                f"type {schema}.{name} does not support the 'tuple' exchange format "
                f"(supported: date, time, timetz, timestamp, timestamptz, interval, composites)")
    else:
        raise ValueError(f"invalid format {format!r}: expected 'text', 'binary' or 'tuple'")
    c.py_encoder = encoder
    c.py_decoder = decoder
    return c

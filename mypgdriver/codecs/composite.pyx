# cython: language_level=3
"""Composite types (named composites, table row types) and anonymous records.

Wire format (record_send): int32 field count, then per field the field's
declared type OID (uint32), int32 length (-1 = NULL) and the field's bytes.
Dropped columns are not sent.  Values decode to Record, with the field
names as keys; anonymous records (``SELECT row(1, 'a')``) get PostgreSQL's
own names for unnamed fields, f1, f2, ...

A named composite is moved in binary only if every field type has a binary
codec; otherwise the registry moves the whole value as text.
"""

from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcmp
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_int32, unpack_uint32, pack_uint32)
from mypgdriver.protocol.record cimport (
    RecordDescriptor, make_record, record_new, record_set_item, record_finish)
from mypgdriver.codecs.base cimport (
    Codec, make_codec, raise_encode_error, raise_decode_error, FORMAT_BINARY)

from collections.abc import Mapping as _Mapping, Sequence as _Sequence

from mypgdriver.codecs.array import make_array_codec
from mypgdriver.protocol.record import Record
from mypgdriver.exceptions import (
    DataError, OutdatedSchemaCacheError, UnsupportedClientFeatureError)

cdef uint32_t RECORD_OID = 2249
cdef uint32_t RECORD_ARRAY_OID = 2287


# --- named composites ----------------------------------------------------------
#
# codec.field_codecs: the field codecs; codec.field_oids: the declared field
# type OIDs; codec.field_desc: a RecordDescriptor of the field names (shared
# by every decoded value); codec.extra: the field OIDs packed big-endian, as
# they appear on the wire, so a field's OID is checked with one memcmp and
# written with one copy.

cdef object composite_decode(Codec codec, Frame *frame):
    cdef tuple codecs = codec.field_codecs
    cdef Py_ssize_t n = PyTuple_GET_SIZE(codecs)
    cdef const char *wire_oids = <bytes>codec.extra
    cdef int32_t count = frame_read_int32(frame)
    cdef Py_ssize_t i
    cdef int32_t flen
    cdef const char *oid_at
    cdef Frame field
    cdef Codec fcodec
    cdef object item
    cdef object row
    if count != n:
        raise OutdatedSchemaCacheError(
            f'unexpected number of attributes of composite type {codec.name}: '
            f'{count}, expected {n} (the type changed since it was introspected)',
            schema=codec.schema, data_type=codec.name)
    row = record_new(Record, <RecordDescriptor>codec.field_desc, n)
    for i in range(n):
        oid_at = frame_read(frame, 4)
        if memcmp(oid_at, wire_oids + 4 * i, 4) != 0:
            raise OutdatedSchemaCacheError(
                f'unexpected data type of attribute {i + 1} of composite type '
                f'{codec.name}: OID {unpack_uint32(oid_at)}, expected '
                f'{codec.field_oids[i]} (the type changed since it was introspected)',
                schema=codec.schema, data_type=codec.name, position=i)
        flen = frame_read_int32(frame)
        if flen == -1:
            item = None
        else:
            field.ptr = frame_read(frame, flen)
            field.remaining = flen
            fcodec = <Codec>PyTuple_GET_ITEM(codecs, i)
            item = fcodec.c_decode(fcodec, &field)
            if field.remaining != 0:
                raise_decode_error(codec, f'attribute {i + 1} not fully consumed')
        record_set_item(row, i, item)
    return record_finish(row)


cdef tuple composite_fields_from_mapping(Codec codec, object value):
    # Fields missing from the mapping are NULL, as in asyncpg.
    cdef RecordDescriptor desc = <RecordDescriptor>codec.field_desc
    cdef list items = [None] * len(desc.names)
    for key in value:
        pos = desc.index.get(key) if isinstance(key, str) else None
        if pos is None:
            raise_encode_error(
                codec, value,
                f'{key!r} is not a field of composite type {codec.name} '
                f'(its fields are: {", ".join(desc.names)})')
        items[pos] = value[key]
    return tuple(items)


cdef int composite_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef tuple codecs = codec.field_codecs
    cdef Py_ssize_t n = PyTuple_GET_SIZE(codecs)
    cdef const char *wire_oids = <bytes>codec.extra
    cdef tuple items
    cdef Py_ssize_t i, off
    cdef Codec fcodec
    cdef object item
    if type(value) is tuple:
        items = <tuple>value
    elif type(value) is list or isinstance(value, Record):
        items = tuple(value)
    elif isinstance(value, _Mapping):
        items = composite_fields_from_mapping(codec, value)
    elif isinstance(value, _Sequence) and not isinstance(value, (str, bytes, bytearray)):
        items = tuple(value)
    else:
        raise_encode_error(
            codec, value,
            f'expected a tuple, list, Record or mapping, got {type(value).__name__}')
    if PyTuple_GET_SIZE(items) != n:
        raise_encode_error(
            codec, value,
            f'expected {n} field{"s" if n != 1 else ""}, got {PyTuple_GET_SIZE(items)}')
    buf.write_int32(<int32_t>n)
    for i in range(n):
        # The declared OID (a domain's, say), not that of the codec doing the
        # work: record_recv rejects a field whose OID is not the column's.
        buf.write_raw(wire_oids + 4 * i, 4)
        item = <object>PyTuple_GET_ITEM(items, i)
        if item is None:
            buf.write_int32(-1)
            continue
        fcodec = <Codec>PyTuple_GET_ITEM(codecs, i)
        off = buf.reserve_length()
        try:
            fcodec.c_encode(fcodec, buf, item)
        except Exception as e:
            raise DataError(
                f'invalid input for field {codec.field_desc.names[i]!r} of '
                f'composite type {codec.name}: {e}') from e
        buf.patch_length(off, <int32_t>(buf.length - off - 4))
    return 0


cdef bytes pack_oids(tuple oids):
    cdef bytearray packed = bytearray(4 * len(oids))
    cdef char *p = packed
    cdef Py_ssize_t i
    for i in range(len(oids)):
        pack_uint32(p + 4 * i, <uint32_t>oids[i])
    return bytes(packed)


def make_composite_codec(uint32_t oid, str name, str schema, tuple field_names,
                         tuple field_oids, tuple field_codecs):
    """A binary codec for a composite type whose fields use `field_codecs`.

    `field_oids` are the fields' declared types (as in pg_attribute), which
    go on the wire; every field codec must be binary.
    """
    if not (len(field_names) == len(field_oids) == len(field_codecs)):
        raise ValueError('field names, OIDs and codecs must have the same length')
    cdef Codec c = make_codec(oid, name, schema, 'composite', FORMAT_BINARY,
                              composite_decode, composite_encode)
    c.field_codecs = field_codecs
    c.field_oids = field_oids
    c.field_desc = RecordDescriptor(field_names)
    c.extra = pack_oids(field_oids)
    return c


def composite_factory(registry, info, int depth):
    """CONTAINER_KINDS factory for composite types ('c'); None moves the type as text."""
    if not info.field_oids or len(info.field_names) != len(info.field_oids):
        # Built-in catalog row types (pg_type...) come from the generated
        # table without their fields: without names they go as text.
        return None
    codecs = []
    for field_oid in info.field_oids:
        fcodec = registry.child_codec(field_oid, depth)
        if fcodec.format != FORMAT_BINARY:
            return None
        codecs.append(fcodec)
    return make_composite_codec(info.oid, info.name, info.schema, tuple(info.field_names),
                                tuple(info.field_oids), tuple(codecs))


# --- anonymous records ------------------------------------------------------------
#
# The type of ROW(...) expressions and of functions returning `record`.  The
# field types are only known from the value itself, so the codec keeps the
# registry (codec.extra) and asks it for each field's codec.

# PostgreSQL's MaxTupleAttributeNumber: no row value, anonymous or not, has
# more fields.  A larger count from the wire is refused before anything is
# allocated (each field would cost a descriptor name and a tuple slot).
cdef int32_t MAX_RECORD_FIELDS = 1664

cdef dict ANON_DESCRIPTORS = {}


cdef RecordDescriptor anonymous_descriptor(Py_ssize_t n):
    # One descriptor per field count, shared by all anonymous records; built
    # on first use (at most MAX_RECORD_FIELDS + 1 of them can exist).
    cdef RecordDescriptor desc = ANON_DESCRIPTORS.get(n)
    if desc is None:
        desc = RecordDescriptor(tuple([f'f{j + 1}' for j in range(n)]))
        ANON_DESCRIPTORS[n] = desc
    return desc


cdef object record_decode(Codec codec, Frame *frame):
    cdef object registry = codec.extra
    cdef int32_t count = frame_read_int32(frame)
    cdef Py_ssize_t i
    cdef int32_t flen
    cdef uint32_t field_oid
    cdef Frame field
    cdef Codec fcodec
    cdef object item
    cdef tuple values
    # Each field takes at least 8 bytes (type OID and length word): the
    # count is checked against the bytes present before the tuple exists.
    if count < 0 or count > MAX_RECORD_FIELDS or count > frame.remaining // 8:
        raise_decode_error(
            codec, f'invalid number of fields {count} for {frame.remaining} bytes')
    values = PyTuple_New(count)
    for i in range(count):
        field_oid = <uint32_t>frame_read_int32(frame)
        flen = frame_read_int32(frame)
        if flen == -1:
            item = None
        else:
            fcodec = <Codec>registry.get_codec(field_oid)
            if fcodec.format != FORMAT_BINARY:
                # The server sends every field in binary; a text codec would
                # return garbage rather than fail.
                unknown_field_type(registry, i, field_oid)
            field.ptr = frame_read(frame, flen)
            field.remaining = flen
            item = fcodec.c_decode(fcodec, &field)
            if field.remaining != 0:
                raise_decode_error(codec, f'field {i + 1} not fully consumed')
        Py_INCREF(item)
        PyTuple_SET_ITEM(values, i, item)
    return make_record(Record, anonymous_descriptor(count), values)


cdef int unknown_field_type(object registry, Py_ssize_t i, uint32_t field_oid) except -1:
    # Field types of anonymous records are not part of the statement's
    # description, so introspection never saw them.
    info = registry.type_info(field_oid)
    if info is None:
        what = f'its type (OID {field_oid}) is not known to this connection'
    else:
        what = f'there is no binary codec for its type {info.schema}.{info.name} (OID {field_oid})'
    raise UnsupportedClientFeatureError(
        f'cannot decode field {i + 1} of an anonymous record: {what}',
        hint='Cast the field to a built-in type (e.g. text), or the row to a named '
             'composite type, in the query; or run a query that returns the type '
             'itself first.')


cdef int record_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # record_recv needs to know the column types, which an anonymous record
    # does not have (record_in fails the same way for text input).
    raise UnsupportedClientFeatureError(
        'input of anonymous composite types is not supported',
        detail='PostgreSQL does not implement anonymous composite type input.',
        hint='Declare a composite type and cast the argument to it, '
             'e.g. $1::my_type.')


def make_record_codec(registry):
    """The codec of the anonymous `record` type; fields decode with `registry`'s codecs."""
    cdef Codec c = make_codec(RECORD_OID, 'record', 'pg_catalog', 'scalar', FORMAT_BINARY,
                              record_decode, record_encode)
    c.extra = registry
    return c


def pseudo_type_factory(registry, info, int depth):
    """CONTAINER_KINDS factory for pseudo types ('p'): only record and record[]."""
    if info.oid == RECORD_OID:
        return make_record_codec(registry)
    if info.oid == RECORD_ARRAY_OID:
        # _record is a pseudo type too, so the registry's array rule misses it.
        return make_array_codec(RECORD_ARRAY_OID, info.name, info.schema,
                                registry.child_codec(RECORD_OID, depth), RECORD_OID)
    return None


CONTAINER_KINDS = {'c': composite_factory, 'p': pseudo_type_factory}

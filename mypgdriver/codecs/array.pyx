# cython: language_level=3
"""Arrays of any element type and any number of dimensions (binary format).

Wire format (array_send): int32 ndim, int32 has-nulls flag, uint32 element
type OID, ndim x (int32 length, int32 lower bound), then each element as
int32 length (-1 = NULL) + bytes, in row-major order.  Lower bounds are not
kept: arrays decode to nested lists, as in asyncpg.
"""

from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport Py_TYPE
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, uint32_t
from cpython.float cimport PyFloat_FromDouble
from cpython.long cimport PyLong_FromLong, PyLong_FromLongLong
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_int32, unpack_int32, unpack_int64, unpack_double)
from mypgdriver.codecs.base cimport (
    Codec, make_codec, lookup_builtin, raise_encode_error, raise_decode_error, decode_utf8,
    FORMAT_BINARY)

from collections.abc import (
    Iterable as _Iterable, Mapping as _Mapping, Sequence as _Sequence, Set as _Set,
    Sized as _Sized, ValuesView as _ValuesView)

from mypgdriver.protocol.record import Record as _Record
from mypgdriver.types import Path as _Path

# PostgreSQL's MAXDIM.
cdef int MAX_DIMS = 6


cdef enum LeafKind:
    LEAF_GENERIC = 0
    LEAF_INT4 = 1
    LEAF_INT8 = 2
    LEAF_FLOAT8 = 3
    LEAF_TEXT = 4


cdef int leaf_kind(Codec elem):
    # The common element types get a loop without an indirect call per
    # element -- but only when the element codec is the built-in one, so
    # set_type_codec() overrides still apply inside arrays.
    cdef uint32_t oid = elem.oid
    if (oid == 23 or oid == 20 or oid == 701 or oid == 25 or oid == 1043) \
            and lookup_builtin(oid) is elem:
        if oid == 23:
            return LEAF_INT4
        if oid == 20:
            return LEAF_INT8
        if oid == 701:
            return LEAF_FLOAT8
        return LEAF_TEXT
    return LEAF_GENERIC


cdef Py_ssize_t decode_fixed_run(list items, Frame *frame, int32_t n, int kind) except -1:
    # The common case for int4/int8/float8: no NULLs, so every element is
    # its length word followed by a fixed-size value.  One bounds check for
    # the whole run; the loop stops at the first element that is not of that
    # shape (a NULL), and the checked loop takes over from there.
    cdef int32_t size = 4 if kind == LEAF_INT4 else 8
    cdef Py_ssize_t stride = 4 + size
    cdef Py_ssize_t i = 0
    cdef const char *start = frame.ptr
    cdef const char *p = start
    cdef object item
    if frame.remaining < <Py_ssize_t>n * stride:
        return 0
    while i < n and unpack_int32(p) == size:
        if kind == LEAF_INT4:
            item = PyLong_FromLong(unpack_int32(p + 4))
        elif kind == LEAF_INT8:
            item = PyLong_FromLongLong(unpack_int64(p + 4))
        else:
            item = PyFloat_FromDouble(unpack_double(p + 4))
        Py_INCREF(item)
        PyList_SET_ITEM(items, i, item)
        p += stride
        i += 1
    frame.ptr = p
    frame.remaining -= p - start
    return i


cdef object decode_leaf_fast(Codec elem, Frame *frame, int32_t n, int kind):
    cdef int32_t i, flen
    cdef Py_ssize_t first = 0
    cdef const char *p
    cdef list items = PyList_New(n)
    cdef object item
    if kind != LEAF_TEXT:
        first = decode_fixed_run(items, frame, n, kind)
    for i in range(first, n):
        flen = frame_read_int32(frame)
        if flen == -1:
            item = None
        else:
            p = frame_read(frame, flen)
            if kind == LEAF_INT4:
                if flen != 4:
                    raise_decode_error(elem, f'expected 4 bytes, got {flen}')
                item = PyLong_FromLong(unpack_int32(p))
            elif kind == LEAF_INT8:
                if flen != 8:
                    raise_decode_error(elem, f'expected 8 bytes, got {flen}')
                item = PyLong_FromLongLong(unpack_int64(p))
            elif kind == LEAF_FLOAT8:
                if flen != 8:
                    raise_decode_error(elem, f'expected 8 bytes, got {flen}')
                item = PyFloat_FromDouble(unpack_double(p))
            else:
                item = decode_utf8(elem, p, flen)
        Py_INCREF(item)
        PyList_SET_ITEM(items, i, item)
    return items


cdef object decode_level(Codec elem, Frame *frame, int32_t *dims, int ndim, int level,
                         int kind=LEAF_GENERIC):
    cdef int32_t n = dims[level]
    cdef int32_t i, flen
    cdef Frame field
    cdef list items
    cdef object item
    if level + 1 == ndim and kind != LEAF_GENERIC:
        return decode_leaf_fast(elem, frame, n, kind)
    items = PyList_New(n)
    for i in range(n):
        if level + 1 < ndim:
            item = decode_level(elem, frame, dims, ndim, level + 1, kind)
        else:
            flen = frame_read_int32(frame)
            if flen == -1:
                item = None
            else:
                field.ptr = frame_read(frame, flen)
                field.remaining = flen
                item = elem.c_decode(elem, &field)
                if field.remaining != 0:
                    raise_decode_error(elem, 'element not fully consumed')
        Py_INCREF(item)
        PyList_SET_ITEM(items, i, item)
    return items


cdef object array_decode(Codec codec, Frame *frame):
    cdef int32_t ndim = frame_read_int32(frame)
    cdef int32_t dims[6]
    cdef int i
    cdef Py_ssize_t elements = 1
    cdef Py_ssize_t most = 0
    frame_read(frame, 8)        # has-nulls flag, element OID
    if ndim == 0:
        return []
    if ndim < 0 or ndim > MAX_DIMS:
        raise_decode_error(codec, f'invalid number of dimensions {ndim}')
    for i in range(ndim):
        dims[i] = frame_read_int32(frame)
        frame_read(frame, 4)    # lower bound
        if dims[i] < 0:
            raise_decode_error(codec, f'invalid dimension length {dims[i]}')
    # The dimensions are a claim: every element takes at least its 4-byte
    # length word, so more elements than remaining / 4 cannot be there.
    # Checked before any list is allocated (2**31-1 elements would be a
    # 16 GiB list from a 20-byte value); the running product stays below
    # `most`, so it cannot overflow.
    most = frame.remaining // 4
    for i in range(ndim):
        if dims[i] == 0:
            # A zero-length dimension makes the whole value the empty array,
            # as in the server's array_recv(); there is nothing to read.
            return []
    for i in range(ndim):
        if dims[i] > most // elements:
            raise_decode_error(
                codec, f'the dimensions claim more elements than the '
                       f'{frame.remaining} bytes of the value can hold')
        elements *= dims[i]
    return decode_level(codec.element_codec, frame, dims, ndim, 0,
                        leaf_kind(codec.element_codec))


cdef enum ElementFlags:
    # What an element value may look like, so that it is not taken for a
    # dimension: tuples (composites, ranges, geometry, tid) ...
    TUPLES_ARE_ELEMENTS = 1
    # ... or any container (a set_type_codec() encoder takes whatever the
    # application has: a numpy vector for pgvector, say).
    CONTAINERS_ARE_ELEMENTS = 2


cdef extern from "Python.h":
    # The type slots behind __len__ and __iter__ (only these fields are used).
    ctypedef struct PySequenceMethods:
        void *sq_length
    ctypedef struct PyMappingMethods:
        void *mp_length
    ctypedef struct TypeSlots "PyTypeObject":
        void *tp_iter
        PySequenceMethods *tp_as_sequence
        PyMappingMethods *tp_as_mapping


cdef inline bint may_be_sized_iterable(object value):
    # A look at two type slots, so that the elements of an array (ints,
    # floats, Decimals, dates...) are told from containers without the cost
    # of an ABC isinstance() per element.
    cdef TypeSlots *t = <TypeSlots *>Py_TYPE(value)
    if t.tp_iter == NULL:
        return False
    return (t.tp_as_sequence != NULL and t.tp_as_sequence.sq_length != NULL) or (
        t.tp_as_mapping != NULL and t.tp_as_mapping.mp_length != NULL)


cdef inline bint is_sized_iterable(object value):
    # What asyncpg takes for an array: anything with a length that can be
    # iterated (sets, dict views, deques, ranges, custom classes).  Iterators
    # and generators have no length and are refused: the dimensions must be
    # known before the elements are written.
    return (may_be_sized_iterable(value) and isinstance(value, _Sized)
            and isinstance(value, _Iterable))


cdef inline bint is_array_value(object value):
    # The whole argument of an array parameter: lists, tuples (subclasses
    # and Records too) and other sized iterables, but never text, bytes or
    # a mapping (a dict would bind its keys, a str its characters).
    cdef type t = type(value)
    if t is list or t is tuple:
        return True
    if t is str or t is bytes or isinstance(
            value, (str, bytes, bytearray, memoryview, _Mapping)):
        return False
    return is_sized_iterable(value)


cdef inline bint is_subarray(object value, int flags):
    # Inside an array, a value is either a dimension or an element.  Lists
    # are always dimensions; tuples too, unless the element type takes tuples
    # as values.  Text, bytes, mappings and the driver's Path and Polygon
    # (geometry values, though iterable) never are; other sized iterables
    # are, as in asyncpg, unless the element codec is the user's own.
    cdef type t = type(value)
    if t is list:
        return True
    if t is tuple:
        return not (flags & TUPLES_ARE_ELEMENTS)
    if t is str or t is bytes or not may_be_sized_iterable(value):
        return False
    if isinstance(value, (str, bytes, bytearray, memoryview, _Mapping, _Path)):
        return False
    if isinstance(value, (tuple, _Record)):
        return not (flags & TUPLES_ARE_ELEMENTS)
    if flags & CONTAINERS_ARE_ELEMENTS:
        # The rule before sized iterables were taken: sequences and sets.
        return isinstance(value, (_Sequence, _Set, _ValuesView))
    return is_sized_iterable(value)


cdef bint all_subarrays_empty(object value, int flags):
    # True when `value` holds nothing but (nested) empty sub-arrays.
    for item in value:
        if not is_subarray(item, flags):
            return False
        if len(item) and not all_subarrays_empty(item, flags):
            return False
    return True


# Element types whose values are plain tuples: (x, y) points, (block, offset) tids...
cdef set TUPLE_VALUED_ELEMENTS = {600, 601, 603, 628, 718, 27}


cdef inline int element_flags(Codec elem):
    cdef int flags = 0
    if elem.kind == 'composite' or elem.kind == 'range' or elem.oid in TUPLE_VALUED_ELEMENTS:
        flags |= TUPLES_ARE_ELEMENTS
    if elem.py_encoder is not None:
        flags |= CONTAINERS_ARE_ELEMENTS
    return flags


cdef int raise_length_changed(Codec codec, object value, Py_ssize_t expected) except -1:
    # A custom iterable whose __len__ and iteration disagree: the dimension
    # written in the header would not match the elements that follow.
    raise_encode_error(
        codec, value,
        f'{type(value).__name__} yielded a different number of items than its '
        f'len() of {expected}')


cdef int encode_level(Codec codec, Codec elem, WriteBuffer buf, object value, list dims,
                      int level, int flags, bint *has_null) except -1:
    cdef Py_ssize_t off
    cdef int ndim = len(dims)
    cdef Py_ssize_t expected = dims[level], count = 0
    if len(value) != expected:
        raise_encode_error(
            codec, value,
            'multi-dimensional arrays must have sub-arrays of matching length '
            f'(expected {expected} elements at depth {level + 1}, got {len(value)})')
    for item in value:
        count += 1
        if count > expected:
            raise_length_changed(codec, value, expected)
        if level + 1 < ndim:
            if not is_subarray(item, flags):
                raise_encode_error(
                    codec, value,
                    f'expected a sub-array at depth {level + 2}, got {type(item).__name__}')
            encode_level(codec, elem, buf, item, dims, level + 1, flags, has_null)
        elif item is None:
            has_null[0] = True
            buf.write_int32(-1)
        else:
            if is_subarray(item, flags):
                raise_encode_error(
                    codec, value,
                    'multi-dimensional arrays must have sub-arrays of matching depth')
            off = buf.reserve_length()
            elem.c_encode(elem, buf, item)
            buf.patch_length(off, <int32_t>(buf.length - off - 4))
    if count != expected:
        raise_length_changed(codec, value, expected)
    return 0


cdef list array_dimensions(Codec codec, object value, int flags):
    """The length of each dimension, probed along the first elements.

    Whether the rest matches is checked while encoding (ragged arrays).
    """
    cdef list dims = []
    cdef object probe
    if not is_array_value(value):
        raise_encode_error(
            codec, value,
            f'an array must be a list, a tuple or another sized iterable '
            f'(got type {type(value).__name__})')
    probe = value
    while True:
        dims.append(len(probe))
        if len(probe) == 0 or len(dims) > MAX_DIMS:
            break
        probe = next(iter(probe))
        if not is_subarray(probe, flags):
            break
    if len(dims) > MAX_DIMS:
        raise_encode_error(codec, value, f'too many dimensions (PostgreSQL allows {MAX_DIMS})')
    if dims[len(dims) - 1] == 0 and len(dims) > 1 and not all_subarrays_empty(value, flags):
        # [[], [1]]: the probe went down an empty branch; the value is not
        # the empty array, it is ragged.
        raise_encode_error(
            codec, value,
            'multi-dimensional arrays must have sub-arrays of matching length '
            '(an empty sub-array next to a non-empty one)')
    return dims


cdef int array_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef Codec elem = codec.element_codec
    cdef int flags = element_flags(elem)
    cdef bint has_null = False
    cdef Py_ssize_t nulls_at
    cdef list dims = array_dimensions(codec, value, flags)
    if dims[len(dims) - 1] == 0:
        # An empty (sub-)array makes the whole value the empty array.
        buf.write_int32(0)
        buf.write_int32(0)
        buf.write_int32(<int32_t><uint32_t>elem_oid_of(codec))
        return 0
    buf.write_int32(<int32_t>len(dims))
    nulls_at = buf.length
    buf.write_int32(0)
    buf.write_int32(<int32_t><uint32_t>elem_oid_of(codec))
    for d in dims:
        buf.write_int32(<int32_t>d)
        buf.write_int32(1)
    encode_level(codec, elem, buf, value, dims, 0, flags, &has_null)
    if has_null:
        buf.patch_length(nulls_at, 1)
    return 0


cdef inline uint32_t elem_oid_of(Codec codec):
    # The element OID on the wire is the declared element type (a domain's
    # own OID, say), which may differ from the codec doing the work.
    return <uint32_t>codec.extra


def make_array_codec(uint32_t oid, str name, str schema, Codec element, uint32_t element_oid,
                     str delimiter=','):
    """A binary array codec whose elements use `element` (a binary codec)."""
    cdef Codec c = make_codec(oid, name, schema, 'array', FORMAT_BINARY,
                              array_decode, array_encode)
    c.element_codec = element
    c.extra = element_oid
    c.element_delimiter = delimiter
    return c


# --- text format -----------------------------------------------------------
# For element types that only have a text form (money, extension types,
# text-format user codecs).  Array literal syntax: PostgreSQL docs,
# "Array Value Input": {a,"b c",NULL,{nested}}, optionally prefixed by
# dimension decorations like [0:1]=.

from mypgdriver.codecs.base cimport FORMAT_TEXT


cdef object decode_text_element(Codec elem, bytes text):
    cdef Frame f
    f.ptr = text
    f.remaining = len(text)
    return elem.c_decode(elem, &f)


cdef object parse_text_array(Codec codec, const char *p, Py_ssize_t n, Py_ssize_t *pos):
    # p[pos] is '{'; returns the nested list and leaves pos after the '}'.
    cdef Codec elem = codec.element_codec
    cdef char delim = ord(codec.element_delimiter[0]) if codec.element_delimiter else b','
    cdef list items = []
    cdef Py_ssize_t i = pos[0] + 1
    cdef Py_ssize_t start
    cdef bytearray token
    cdef bint quoted
    while i < n:
        while i < n and p[i] in b' \t\n\r':
            i += 1
        if i >= n:
            break
        if p[i] == b'}':
            pos[0] = i + 1
            return items
        if p[i] == b'{':
            pos[0] = i
            items.append(parse_text_array(codec, p, n, pos))
            i = pos[0]
        else:
            token = bytearray()
            quoted = False
            if p[i] == b'"':
                quoted = True
                i += 1
                while i < n and p[i] != b'"':
                    if p[i] == b'\\' and i + 1 < n:
                        i += 1
                    token.append(<unsigned char>p[i])
                    i += 1
                i += 1      # closing quote
            else:
                while i < n and p[i] != delim and p[i] != b'}':
                    if p[i] == b'\\' and i + 1 < n:
                        i += 1
                    token.append(<unsigned char>p[i])
                    i += 1
                while len(token) and token[len(token) - 1] in b' \t\n\r':
                    del token[len(token) - 1]
            if not quoted and token.upper() == b'NULL':
                items.append(None)
            else:
                items.append(decode_text_element(elem, bytes(token)))
        while i < n and p[i] in b' \t\n\r':
            i += 1
        if i < n and p[i] == delim:
            i += 1
    raise_decode_error(codec, 'unterminated array literal')


cdef object text_array_decode(Codec codec, Frame *frame):
    cdef const char *p = frame.ptr
    cdef Py_ssize_t n = frame.remaining
    cdef Py_ssize_t pos = 0
    frame.ptr += n
    frame.remaining = 0
    if n and p[0] == b'[':
        # Dimension decorations ([1:3][0:1]=): lower bounds are dropped.
        while pos < n and p[pos] != b'=':
            pos += 1
        pos += 1
    if pos >= n or p[pos] != b'{':
        raise_decode_error(codec, 'malformed array literal')
    return parse_text_array(codec, p, n, &pos)


cdef int write_text_element(Codec codec, Codec elem, WriteBuffer buf, object item) except -1:
    cdef WriteBuffer tmp
    cdef Py_ssize_t i
    cdef char c
    if item is None:
        return buf.write_raw(b'NULL', 4)
    tmp = WriteBuffer()
    elem.c_encode(elem, tmp, item)
    # Always quoted: then only '"' and '\' need escaping, whatever the text.
    buf.write_byte(b'"')
    for i in range(tmp.length):
        c = tmp.data[i]
        if c == b'"' or c == b'\\':
            buf.write_byte(b'\\')
        buf.write_byte(c)
    return buf.write_byte(b'"')


cdef int encode_text_level(Codec codec, Codec elem, WriteBuffer buf, object value, list dims,
                           int level, int flags) except -1:
    cdef bint first = True
    cdef char delim = ord(codec.element_delimiter[0]) if codec.element_delimiter else b','
    cdef Py_ssize_t expected = dims[level], count = 0
    if len(value) != expected:
        raise_encode_error(
            codec, value,
            'multi-dimensional arrays must have sub-arrays of matching length '
            f'(expected {expected} elements at depth {level + 1}, got {len(value)})')
    buf.write_byte(b'{')
    for item in value:
        count += 1
        if count > expected:
            raise_length_changed(codec, value, expected)
        if not first:
            buf.write_byte(delim)
        first = False
        if level + 1 < len(dims):
            if not is_subarray(item, flags):
                raise_encode_error(
                    codec, value,
                    f'expected a sub-array at depth {level + 2}, got {type(item).__name__}')
            encode_text_level(codec, elem, buf, item, dims, level + 1, flags)
        else:
            if item is not None and is_subarray(item, flags):
                raise_encode_error(
                    codec, value, 'multi-dimensional arrays must have sub-arrays of matching depth')
            write_text_element(codec, elem, buf, item)
    if count != expected:
        raise_length_changed(codec, value, expected)
    return buf.write_byte(b'}')


cdef int text_array_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int flags = element_flags(codec.element_codec)
    cdef list dims = array_dimensions(codec, value, flags)
    if dims[len(dims) - 1] == 0:
        return buf.write_raw(b'{}', 2)
    return encode_text_level(codec, codec.element_codec, buf, value, dims, 0, flags)


def make_text_array_codec(uint32_t oid, str name, str schema, Codec element, str delimiter=','):
    """An array codec in text format, for elements that only have a text codec."""
    cdef Codec c = make_codec(oid, name, schema, 'array', FORMAT_TEXT,
                              text_array_decode, text_array_encode)
    c.element_codec = element
    c.element_delimiter = delimiter or ','
    return c

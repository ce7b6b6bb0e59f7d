# cython: language_level=3
"""hstore (the contrib extension) <-> dict, asyncpg's 'pg_contrib.hstore' codec.

An extension type has no fixed OID, so this codec is not attached to hstore
by default (its values are then str, moved as text); an application turns
it on with ``set_builtin_type_codec('hstore', codec_name='pg_contrib.hstore')``.

Binary format (hstore_send/hstore_recv, contrib/hstore/hstore_io.c): int32
pair count, then for each pair an int32 key length and the key's bytes, an
int32 value length (-1 for NULL) and the value's bytes; text is in the
database encoding, UTF-8 for this driver.  The server sends keys sorted and
unique, and sorts and de-duplicates what it receives.
"""

from libc.stdint cimport int32_t
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, frame_read_int32
from mypgdriver.codecs.base cimport (
    Codec, make_codec, raise_encode_error, raise_decode_error, decode_utf8, FORMAT_BINARY)


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


# --- decoding -------------------------------------------------------------------------------

cdef object read_text(Codec codec, Frame *frame, int32_t n, str what):
    # A length is a claim: checked against the bytes present before reading.
    if n > frame.remaining:
        raise_decode_error(
            codec, f'{what} length {n} exceeds the {frame.remaining} bytes left in the value')
    return decode_utf8(codec, frame_read(frame, n), n)


cdef object hstore_decode(Codec codec, Frame *frame):
    cdef int32_t count = frame_read_int32(frame)
    cdef int32_t i, length
    cdef dict pairs = {}
    cdef object key
    if count < 0:
        raise_decode_error(codec, f'invalid pair count {count}')
    # Each pair takes at least its two 4-byte length words.
    if count > frame.remaining // 8:
        raise_decode_error(
            codec, f'{count} pairs claimed, but only {frame.remaining} bytes follow')
    for i in range(count):
        length = frame_read_int32(frame)
        if length < 0:
            raise_decode_error(codec, f'invalid key length {length} in pair {i + 1}')
        key = read_text(codec, frame, length, 'key')
        length = frame_read_int32(frame)
        if length == -1:
            pairs[key] = None
        elif length < 0:
            raise_decode_error(codec, f'invalid value length {length} in pair {i + 1}')
        else:
            pairs[key] = read_text(codec, frame, length, 'value')
    return pairs


# --- encoding -------------------------------------------------------------------------------

cdef int write_text(Codec codec, WriteBuffer buf, object outer, object s, str what) except -1:
    cdef Py_ssize_t n
    cdef const char *p
    if not isinstance(s, str):
        raise_encode_error(codec, outer, f'hstore {what}s must be str, got {type(s).__name__}')
    p = PyUnicode_AsUTF8AndSize(s, &n)
    if memchr(p, 0, <size_t>n) != NULL:
        raise_encode_error(codec, outer, f'an hstore {what} contains a NUL character (\\x00)')
    if n > 0x7FFFFFFF:
        raise_encode_error(codec, outer, f'an hstore {what} is too long')
    buf.write_int32(<int32_t>n)
    return buf.write_raw(p, n)


cdef int hstore_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # A mapping, or (as asyncpg takes it) an iterable of (key, value) pairs.
    cdef Py_ssize_t count_at, count = 0
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        raise_encode_error(
            codec, value, f'expected a dict of str to str or None, got {type(value).__name__}')
    items = value.items() if hasattr(value, 'items') else value
    try:
        iterator = iter(items)
    except TypeError:
        raise_encode_error(
            codec, value, f'expected a dict of str to str or None, got {type(value).__name__}')
    count_at = buf.reserve_length()
    for pair in iterator:
        try:
            key, item = pair
        except (TypeError, ValueError):
            raise_encode_error(
                codec, value, f'expected (key, value) pairs, got {type(pair).__name__}')
        if key is None:
            raise_encode_error(codec, value, 'hstore keys cannot be None (NULL)')
        write_text(codec, buf, value, key, 'key')
        if item is None:
            buf.write_int32(-1)
        else:
            write_text(codec, buf, value, item, 'value')
        count += 1
        if count > 0x7FFFFFFF:
            raise_encode_error(codec, value, 'too many pairs for one hstore')
    buf.patch_length(count_at, <int32_t>count)
    return 0


# Picked up by the registry: set_builtin_type_codec(codec_name='pg_contrib.hstore').
CONTRIB_CODECS = {
    'hstore': make_codec(0, 'hstore', 'pg_contrib', 'scalar', FORMAT_BINARY,
                         hstore_decode, hstore_encode),
}

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
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport uint8_t
from libc.string cimport memchr
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read_byte
from mypgdriver.codecs.base cimport (
    Codec, FORMAT_BINARY, make_codec, register_builtin, raise_encode_error, raise_decode_error,
    decode_utf8)

import json as _json
from json import decoder as _json_decoder, encoder as _json_encoder, scanner as _json_scanner


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
#
# The standard library's own json.loads and json.dumps (json=True) are not
# called: for the default settings they are Python wrappers (loads ->
# decode -> raw_decode with two regex matches; dumps -> encode -> iterencode,
# which builds a C encoder per call) around the C scanner and encoder of the
# _json module, which these codecs call directly, with the same settings
# and so the same results.  Measured on a 100-byte object: json.loads 2.2 us,
# the scanner 1.1 us; on '[1]', 1.9 us against 0.3 us (the encoder likewise
# for small values).  `extra` holds them: (scanner, encoder, markers).

cdef enum LoadsInput:
    LOADS_STR = 0       # loads(str)
    LOADS_BYTES = 1     # loads(bytes)
    SCAN_STR = 2        # the standard library's C scanner on the str


cdef object STDLIB_LOADS = _json.loads
cdef object STDLIB_DUMPS = _json.dumps


cdef inline bint is_json_space(char c):
    # JSON's insignificant whitespace (RFC 8259, section 2).
    return c == b' ' or c == b'\t' or c == b'\n' or c == b'\r'


cdef object scan_document(Codec codec, str document, bint padded):
    # json.loads(document) for the default decoder is its scanner's value
    # at 0 when that ends the text; text with whitespace around the value
    # (json keeps what it was given) or that the scanner refuses goes
    # through json.loads itself, for its result or its exact error.
    cdef object scanner = <object>PyTuple_GET_ITEM(<tuple>codec.extra, 0)
    cdef object found
    if not padded:
        try:
            found = scanner(document, 0)
        except StopIteration:
            found = None
        if found is not None and <object>PyTuple_GET_ITEM(found, 1) == len(document):
            return <object>PyTuple_GET_ITEM(found, 0)
    return codec.py_decoder(document)


cdef inline object load_rest(Codec codec, Frame *frame, int how):
    cdef object document
    cdef bint padded = False
    if how == LOADS_BYTES:
        document = PyBytes_FromStringAndSize(frame.ptr, frame.remaining)
    else:
        padded = frame.remaining == 0 or is_json_space(frame.ptr[0])
        document = decode_utf8(codec, frame.ptr, frame.remaining)
    frame.ptr += frame.remaining
    frame.remaining = 0
    if how == SCAN_STR:
        return scan_document(codec, document, padded)
    return codec.py_decoder(document)


cdef object json_loads_str(Codec codec, Frame *frame):
    return load_rest(codec, frame, LOADS_STR)


cdef object json_loads_bytes(Codec codec, Frame *frame):
    return load_rest(codec, frame, LOADS_BYTES)


cdef object json_scan_str(Codec codec, Frame *frame):
    return load_rest(codec, frame, SCAN_STR)


cdef object jsonb_loads_str(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return load_rest(codec, frame, LOADS_STR)


cdef object jsonb_loads_bytes(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return load_rest(codec, frame, LOADS_BYTES)


cdef object jsonb_scan_str(Codec codec, Frame *frame):
    skip_format_version(codec, frame)
    return load_rest(codec, frame, SCAN_STR)


cdef object encode_with_stdlib(Codec codec, object value):
    # json.dumps(value) with the default settings: its C encoder's chunks,
    # joined (one chunk from Python 3.12 on, which join returns as it is).
    cdef tuple extra = <tuple>codec.extra
    cdef object encoder = <object>PyTuple_GET_ITEM(extra, 1)
    try:
        chunks = encoder(value, 0)
    except BaseException:
        # The encoder may leave the containers it was in when it failed
        # in its circular-reference markers: json.dumps makes new ones per
        # call, these are reused.
        (<dict>PyTuple_GET_ITEM(extra, 2)).clear()
        raise
    return ''.join(chunks)


cdef int write_dumped(Codec codec, WriteBuffer buf, object value, int version,
                      bint stdlib) except -1:
    # version < 0: no version byte (json).
    cdef Py_ssize_t n
    cdef const char *p
    cdef object document
    if isinstance(value, (str, bytes)):
        # Already JSON text: sent as it is, as without the opt-in (a str
        # is never serialized again: docs/guide/types.rst, "JSON as Python
        # objects", says why).
        document = value
    elif stdlib:
        document = encode_with_stdlib(codec, value)
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
    return write_dumped(codec, buf, value, -1, False)


cdef int jsonb_dumps_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_dumped(codec, buf, value, FORMAT_VERSION, False)


cdef int json_stdlib_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_dumped(codec, buf, value, -1, True)


cdef int jsonb_stdlib_encode(Codec codec, WriteBuffer buf, object value) except -1:
    return write_dumped(codec, buf, value, FORMAT_VERSION, True)


cdef tuple new_stdlib_machinery():
    # (scanner, encoder, markers) with json.loads' and json.dumps' default
    # settings (json.decoder.JSONDecoder(), json.encoder.JSONEncoder()).
    defaults = _json_encoder.JSONEncoder()
    markers = {}
    encoder = _json_encoder.c_make_encoder(
        markers, defaults.default, _json_encoder.encode_basestring_ascii, None,
        defaults.key_separator, defaults.item_separator, False, False, True)
    return (_json_scanner.c_make_scanner(_json_decoder.JSONDecoder()), encoder, markers)


cdef bint stdlib_machinery_works():
    # Checked once: the accelerator can be missing, and its constructors
    # are internal; where they differ, json.loads and json.dumps are called.
    sample = {'a': [1, 2.5, None, True, '\u00e9\n'], 'b': {}}
    text = _json.dumps(sample)
    if _json_scanner.c_make_scanner is None or _json_encoder.c_make_encoder is None:
        return False
    try:
        scanner, encoder, markers = new_stdlib_machinery()
        return scanner(text, 0) == (sample, len(text)) and ''.join(encoder(sample, 0)) == text
    except Exception:
        return False


cdef bint STDLIB_MACHINERY_WORKS = stdlib_machinery_works()


def make_json_codecs(loads, dumps, bint loads_bytes):
    """The json and jsonb codecs that decode with `loads` and encode with `dumps`.

    Returns {oid: Codec} for json (114) and jsonb (3802); `loads` receives
    bytes if `loads_bytes`, else str.  The standard library's json.loads
    and json.dumps are replaced by what they call (see above).
    """
    cdef tuple stdlib = new_stdlib_machinery() if STDLIB_MACHINERY_WORKS else None
    cdef bint scan = stdlib is not None and loads is STDLIB_LOADS
    cdef bint stdlib_dumps = stdlib is not None and dumps is STDLIB_DUMPS
    cdef Codec json_codec = make_codec(
        114, 'json', 'pg_catalog', 'scalar', FORMAT_BINARY,
        json_scan_str if scan else json_loads_bytes if loads_bytes else json_loads_str,
        json_stdlib_encode if stdlib_dumps else json_dumps_encode)
    cdef Codec jsonb_codec = make_codec(
        3802, 'jsonb', 'pg_catalog', 'scalar', FORMAT_BINARY,
        jsonb_scan_str if scan else jsonb_loads_bytes if loads_bytes else jsonb_loads_str,
        jsonb_stdlib_encode if stdlib_dumps else jsonb_dumps_encode)
    for c in (json_codec, jsonb_codec):
        (<Codec>c).py_decoder = loads
        (<Codec>c).py_encoder = dumps
        # Shared by the two codecs: a registry serves one connection, which
        # encodes one value at a time (the encoder's markers are state).
        (<Codec>c).extra = stdlib
    return {114: json_codec, 3802: jsonb_codec}


register_builtin(114, 'json', text_document_decode, text_document_encode)
register_builtin(3802, 'jsonb', versioned_decode, versioned_encode)
register_builtin(4072, 'jsonpath', versioned_decode, versioned_encode)
register_builtin(142, 'xml', text_document_decode, text_document_encode)

# cython: language_level=3
"""Prepared-statement state: types, codecs, Bind encoding and row decoding.

The protocol's hot loop lives here: decode_row() turns one DataRow payload
into a Record with one indirect call per field and no per-row lookups.
"""

from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.dict cimport PyDict_Copy, PyDict_SetItem
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport (
    PyTuple_Check, PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM)
from libc.stdint cimport int16_t, int32_t, uint16_t, uint32_t
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_int16, frame_read_int32, frame_read_cstr,
    unpack_int32, unpack_uint32)
from mypgdriver.protocol.record cimport (
    RecordDescriptor, record_new, record_set_item, record_finish)
from mypgdriver.codecs.base cimport Codec, FORMAT_BINARY, FORMAT_TEXT, text_encode
from mypgdriver.protocol.copybinary cimport (
    encode_copy_tuple, write_copy_binary_header, write_copy_binary_trailer)

from collections.abc import Mapping, Sequence, Set as AbstractSet

from mypgdriver.exceptions import (
    DataError, InterfaceError, ProtocolError, UnsupportedArgumentError,
    UnsupportedClientFeatureError)
from mypgdriver.protocol.record import Record

#: The most parameters a statement can have: Parse, ParameterDescription
#: and Bind carry the count in an unsigned 16-bit field (PostgreSQL docs,
#: "Message Formats").
MAX_QUERY_ARGUMENTS = 65535

# pg_type OIDs of text and unknown (see inferred_again).
cdef uint32_t TEXT_OID = 25
cdef uint32_t UNKNOWN_OID = 705

_ARGUMENT_COUNT_HINT = 'Check the query against the arguments passed.'


def check_argument_count(Py_ssize_t nargs):
    """InterfaceError if `nargs` arguments exceed what the protocol can carry."""
    if nargs > MAX_QUERY_ARGUMENTS:
        raise InterfaceError(
            f'{nargs} query arguments were passed, but the protocol limit is '
            f'{MAX_QUERY_ARGUMENTS:,} parameters per statement',
            hint='Split the statement, or pass the values as arrays (e.g. '
                 '= any($1::int[]) or unnest()).')


cdef bytes encode_format_section(list formats):
    # int16 count + int16 codes; the one-code form (count=1) means "all of them".
    cdef WriteBuffer w = WriteBuffer()
    cdef int f
    cdef Py_ssize_t n = len(formats)
    cdef bint all_binary = n > 0
    cdef bint all_text = True
    for f in formats:
        if f == FORMAT_BINARY:
            all_text = False
        else:
            all_binary = False
    if n == 0 or all_text:
        w.write_int16(0)
    elif all_binary:
        w.write_int16(1)
        w.write_int16(1)
    else:
        w.write_int16(<int16_t>n)
        for f in formats:
            w.write_int16(<int16_t>f)
    return w.to_bytes()


cdef bint inferred_again(uint32_t oid, Codec codec):
    # A parameter the server described as text (what an untyped `$1` becomes),
    # encoded by the built-in text codec (not a user's), whose bytes are the same in both
    # formats: it goes in text format and unspecified in a Parse repeating
    # the description (parse_oids), so the server infers it again.  Given
    # as text explicitly, `$1::unknown` would fail (no conversion from text
    # to unknown); in text format, a parameter inferred as another type (the
    # schema changed meanwhile) is read by that type's input function, never
    # misread as its binary form.  `unknown` itself is left unspecified too.
    if oid == UNKNOWN_OID:
        return True
    return oid == TEXT_OID and codec.kind == 'scalar' and codec.schema == 'pg_catalog'


cdef extern from "Python.h":
    # The public fields of a dict object (Include/cpython/dictobject.h, the
    # same from 3.9 to 3.13): its keys object, and its values when they are
    # kept apart from the keys (a split table; NULL for a combined one).
    ctypedef struct PyDictObject:
        void *ma_keys
        void *ma_values
    bint PyType_IS_GC(PyTypeObject *tp)
    bint PyObject_GC_IsTracked(object op)
    void PyObject_GC_Track(object op)

# probe_dict_slots() gives up (rows are then filled with PyDict_SetItem)
# if a value slot is not found within this many bytes of a keys object
# per column: a combined table holds its values inside the keys object,
# at well under this per entry in every CPython version we know.
cdef Py_ssize_t DICT_PROBE_BYTES_PER_COLUMN = 64


class StrAsTextArguments(tuple):
    """Query arguments whose str values are sent as text where their parameter's codec refuses them.

    psycopg sends every str as text (of type unknown): the server's input
    function of the parameter's type reads it, so ``'42'`` for an int works
    and ``'abc'`` gets the server's error (22P02).  mypgdriver's codecs are
    binary and refuse a str for an int client-side; mypgdriver.dbapi then
    runs the statement again with its arguments in this tuple, for the
    psycopg behaviour.  Only a value its codec refuses changes format (in
    that Bind only); a str with a NUL, which text cannot hold, is still
    refused.  encode_bind() looks for this type only off its plain-tuple
    path, so other calls pay nothing for it.
    """

    __slots__ = ()


cdef tuple row_arguments(object row, Py_ssize_t row_index, str what='row'):
    """One executemany() row (or COPY record) as a tuple; DataError if it is not a sequence.

    tuple(row) would accept anything iterable: a dict would bind its keys,
    a str its characters, a set its elements in arbitrary order.  A row must
    be a sequence: a tuple, a list, a Record, or another
    collections.abc.Sequence that is not a str or bytes.
    """
    if type(row) is list or isinstance(row, (tuple, Record)):
        return tuple(row)
    if not isinstance(row, (str, bytes, bytearray, memoryview, Mapping, AbstractSet)) \
            and isinstance(row, Sequence):
        return tuple(row)
    where = f'{what} {row_index}' if row_index >= 0 else 'the arguments'
    raise DataError(
        f'invalid input: {where} is of type {type(row).__name__}, not a sequence of values '
        f'(a tuple, a list or a Record)')


cdef class StatementState:

    def __cinit__(self, str name, str query):
        self.name = name
        self.query = query
        self.param_oids = ()
        self.parse_oids = ()
        self.column_names = ()
        self.column_oids = ()
        self.column_tables = ()
        self.column_sizes = ()
        self.column_typmods = ()
        self.dict_template = {}
        self.result_description = None
        self.param_codecs = ()
        self.column_codecs = ()
        self.has_rows = False
        self.closed = False
        self.parse_pending = False
        self.schema_epoch = 0
        self.refs = 0
        self.created_at = 0.0

    def __dealloc__(self):
        PyMem_Free(self.col_decoders)
        PyMem_Free(self.col_codecs)
        PyMem_Free(self.dict_offsets)

    def __repr__(self):
        return f'<StatementState {self.name!r} {self.query[:60]!r}>'

    cdef int set_param_description(self, Frame *frame) except -1:
        # The count is an unsigned 16-bit field: up to 65,535 parameters
        # (a query with more gets it modulo 65,536 from the server; see
        # MAX_QUERY_ARGUMENTS).  The reads check it against the frame.
        cdef uint16_t n = <uint16_t>frame_read_int16(frame)
        cdef list oids = []
        for _ in range(n):
            oids.append(<uint32_t>frame_read_int32(frame))
        self.param_oids = tuple(oids)
        return 0

    cdef int set_row_description(self, Frame *frame) except -1:
        cdef int16_t n = frame_read_int16(frame)
        cdef list names = [], oids = [], tables = [], sizes = [], typmods = []
        cdef uint32_t table_oid, type_oid
        cdef int16_t attnum
        if n < 0:
            raise ProtocolError(f'invalid column count {n} in RowDescription')
        for _ in range(n):
            names.append(frame_read_cstr(frame))
            table_oid = <uint32_t>frame_read_int32(frame)
            attnum = frame_read_int16(frame)
            type_oid = <uint32_t>frame_read_int32(frame)
            sizes.append(frame_read_int16(frame))
            typmods.append(frame_read_int32(frame))
            frame_read(frame, 2)            # format code
            oids.append(type_oid)
            tables.append((table_oid, attnum))
        self.column_names = tuple(names)
        self.column_oids = tuple(oids)
        self.column_tables = tuple(tables)
        self.column_sizes = tuple(sizes)
        self.column_typmods = tuple(typmods)
        self.dict_template = dict.fromkeys(self.column_names)
        PyMem_Free(self.dict_offsets)
        self.dict_offsets = NULL
        self.dict_probed = False
        self.result_description = None
        self.desc = RecordDescriptor(self.column_names)
        self.has_rows = True
        return 0

    cdef bint same_column_types(self, Frame *frame) except -1:
        """True if a RowDescription describes columns of this statement's types."""
        cdef int16_t n = frame_read_int16(frame)
        cdef Py_ssize_t i
        if n != len(self.column_oids):
            return False
        for i in range(n):
            frame_read_cstr(frame)
            frame_read(frame, 4 + 2)        # table oid, column number
            if <uint32_t>frame_read_int32(frame) != <uint32_t>self.column_oids[i]:
                return False
            frame_read(frame, 2 + 4 + 2)    # typlen, typmod, format code
        return True

    cdef int set_no_data(self) except -1:
        self.column_names = ()
        self.column_oids = ()
        self.column_tables = ()
        self.column_sizes = ()
        self.column_typmods = ()
        self.dict_template = {}
        PyMem_Free(self.dict_offsets)
        self.dict_offsets = NULL
        self.dict_probed = False
        self.result_description = None
        self.desc = RecordDescriptor(())
        self.has_rows = False
        return 0

    cdef list missing_type_oids(self, object registry):
        """Type OIDs of this statement that the registry cannot encode/decode yet."""
        return registry.missing(self.param_oids + self.column_oids)

    cdef int resolve_codecs(self, object registry) except -1:
        cdef Codec c
        cdef list param_formats = [], parse_oids = []
        self.param_codecs = tuple([registry.get_codec(oid) for oid in self.param_oids])
        self.column_codecs = tuple([registry.get_codec(oid) for oid in self.column_oids])
        self._build_column_arrays()
        for i, (oid, c) in enumerate(zip(self.param_oids, self.param_codecs)):
            param_formats.append(self.param_format(i))
            parse_oids.append(0 if inferred_again(oid, c) else oid)
        self.parse_oids = tuple(parse_oids)
        self.param_formats_msg = encode_format_section(param_formats)
        self.result_formats_msg = encode_format_section([c.format for c in self.column_codecs])
        self.codecs_generation = registry.generation
        return 0

    cdef int _build_column_arrays(self) except -1:
        cdef Py_ssize_t i, n = PyTuple_GET_SIZE(self.column_codecs)
        cdef Codec codec
        PyMem_Free(self.col_decoders)
        PyMem_Free(self.col_codecs)
        self.col_decoders = NULL
        self.col_codecs = NULL
        self.col_decoders = <raw_decode_fn*>PyMem_Malloc((n + 1) * sizeof(raw_decode_fn))
        self.col_codecs = <PyObject**>PyMem_Malloc((n + 1) * sizeof(PyObject*))
        if self.col_decoders == NULL or self.col_codecs == NULL:
            raise MemoryError
        for i in range(n):
            codec = <Codec>PyTuple_GET_ITEM(self.column_codecs, i)
            self.col_decoders[i] = <raw_decode_fn>codec.c_decode
            self.col_codecs[i] = <PyObject*>codec
        return 0

    cdef int encode_bind(self, WriteBuffer buf, str portal, object args,
                         Py_ssize_t row_index=-1) except -1:
        """Append a Bind message for `args` to buf.

        On bad input this raises DataError naming the argument (and the row,
        for executemany); the caller discards the buffer, so nothing
        half-encoded ever reaches the server.
        """
        cdef Py_ssize_t nparams = PyTuple_GET_SIZE(self.param_codecs)
        cdef Py_ssize_t nargs, i, off
        cdef Codec codec
        cdef object arg
        if type(args) is not tuple:
            if PyTuple_Check(args) and type(args) is StrAsTextArguments:
                return self.encode_bind_str_as_text(buf, portal, <tuple>args, row_index)
            args = row_arguments(args, row_index)
        nargs = PyTuple_GET_SIZE(args)
        if nargs != nparams:
            raise_argument_count_error(nparams, nargs, row_index)
        buf.start_message(b'B')
        buf.write_cstr(portal)
        buf.write_cstr(self.name)
        buf.write_bytes(self.param_formats_msg)
        buf.write_int16(<int16_t>nparams)
        # One try for all arguments (see encode_copy_records).
        i = 0
        arg = None
        try:
            for i in range(nparams):
                arg = <object>PyTuple_GET_ITEM(args, i)
                if arg is None:
                    buf.write_int32(-1)
                    continue
                codec = <Codec>PyTuple_GET_ITEM(self.param_codecs, i)
                off = buf.reserve_length()
                codec.encode(buf, arg)
                buf.patch_length(off, <int32_t>(buf.length - off - 4))
        except MemoryError:
            raise
        except Exception as e:
            raise_argument_error(e, i, arg, <Codec>PyTuple_GET_ITEM(self.param_codecs, i),
                                 row_index)
        buf.write_bytes(self.result_formats_msg)
        buf.end_message()
        return 0

    cdef int encode_bind_str_as_text(self, WriteBuffer buf, str portal, tuple args,
                                     Py_ssize_t row_index) except -1:
        """encode_bind() of StrAsTextArguments: a str its codec refuses goes in text format.

        The values are encoded first, apart, since the format codes that
        precede them in the Bind depend on which codecs refused.  Off the
        hot path: only a statement whose codecs refused a str gets here.
        """
        cdef Py_ssize_t nparams = PyTuple_GET_SIZE(self.param_codecs)
        cdef Py_ssize_t nargs = PyTuple_GET_SIZE(args)
        cdef Py_ssize_t i, off
        cdef Codec codec
        cdef object arg
        cdef WriteBuffer values
        cdef list formats
        if nargs != nparams:
            raise_argument_count_error(nparams, nargs, row_index)
        values = WriteBuffer()
        formats = [self.param_format(i) for i in range(nparams)]
        for i in range(nparams):
            arg = <object>PyTuple_GET_ITEM(args, i)
            if arg is None:
                values.write_int32(-1)
                continue
            codec = <Codec>PyTuple_GET_ITEM(self.param_codecs, i)
            off = values.reserve_length()
            try:
                try:
                    codec.encode(values, arg)
                except MemoryError:
                    raise
                except Exception:
                    if not isinstance(arg, str):
                        raise
                    # Its text, for the type's input function (a NUL is
                    # refused: text cannot hold one).
                    values.length = off + 4
                    text_encode(codec, values, arg)
                    formats[i] = FORMAT_TEXT
            except MemoryError:
                raise
            except Exception as e:
                raise_argument_error(e, i, arg, codec, row_index)
            values.patch_length(off, <int32_t>(values.length - off - 4))
        buf.start_message(b'B')
        buf.write_cstr(portal)
        buf.write_cstr(self.name)
        buf.write_bytes(encode_format_section(formats))
        buf.write_int16(<int16_t>nparams)
        buf.write_raw(values.data, values.length)
        buf.write_bytes(self.result_formats_msg)
        buf.end_message()
        return 0

    cdef int param_format(self, Py_ssize_t i) except -1:
        """The format parameter `i` is sent in (see inferred_again)."""
        cdef Codec codec = <Codec>PyTuple_GET_ITEM(self.param_codecs, i)
        if inferred_again(<uint32_t>self.param_oids[i], codec):
            return FORMAT_TEXT
        return codec.format

    cdef object decode_row(self, Frame *frame, type record_class):
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t i
        cdef int32_t flen
        cdef Frame field
        cdef object value
        cdef object row
        cdef raw_decode_fn *decoders = self.col_decoders
        cdef PyObject **codecs = self.col_codecs
        if frame_read_int16(frame) != ncols:
            raise ProtocolError(
                f'DataRow has a different number of columns than RowDescription ({ncols})')
        row = record_new(record_class, self.desc, ncols)
        for i in range(ncols):
            flen = frame_read_int32(frame)
            if flen == -1:
                record_set_item(row, i, None)
                continue
            field.ptr = frame_read(frame, flen)
            field.remaining = flen
            value = decoders[i](codecs[i], &field)
            if field.remaining != 0:
                raise_undecoded(<Codec>codecs[i], field.remaining, i)
            record_set_item(row, i, value)
        return record_finish(row)

    cdef object decode_row_as(self, Frame *frame, int kind, object maker):
        # The rows of a row factory other than Record (see RowKind).
        if kind == ROW_DICT:
            return self.decode_dict(frame)
        if kind == ROW_TUPLE:
            return self.decode_tuple(frame)
        if kind == ROW_SCALAR:
            return self.decode_scalar(frame)
        return maker(self.decode_tuple(frame))

    cdef tuple decode_tuple(self, Frame *frame):
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t i
        cdef int32_t flen
        cdef Frame field
        cdef object value
        cdef tuple row
        cdef raw_decode_fn *decoders = self.col_decoders
        cdef PyObject **codecs = self.col_codecs
        if frame_read_int16(frame) != ncols:
            raise ProtocolError(
                f'DataRow has a different number of columns than RowDescription ({ncols})')
        # Items not set yet are NULL: a tuple dropped half-filled (a field
        # that fails to decode) frees only what it holds.
        row = PyTuple_New(ncols)
        for i in range(ncols):
            flen = frame_read_int32(frame)
            if flen == -1:
                value = None
            else:
                field.ptr = frame_read(frame, flen)
                field.remaining = flen
                value = decoders[i](codecs[i], &field)
                if field.remaining != 0:
                    raise_undecoded(<Codec>codecs[i], field.remaining, i)
            Py_INCREF(value)
            PyTuple_SET_ITEM(row, i, value)
        return row

    cdef dict decode_dict(self, Frame *frame):
        # A copy of {name: None, ...} whose values are then replaced.  A
        # repeated column name keeps the last column's value (as psycopg's
        # dict_row).  The copy of a dict that was never changed is one
        # memcpy of its keys object (CPython's clone of a combined table),
        # so every copy has its values at the same places: stored there
        # directly (dict_offsets), a row costs what a Record does; through
        # PyDict_SetItem (a hash lookup per column) it cost 2.25x a Record
        # on pg_type (callgrind, 3.05M against 1.35M instructions a query).
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t i
        cdef int32_t flen
        cdef Frame field
        cdef object value
        cdef dict row
        cdef char *keys
        cdef PyObject **slot
        cdef PyObject *old
        cdef bint holds_containers = False
        cdef raw_decode_fn *decoders = self.col_decoders
        cdef PyObject **codecs = self.col_codecs
        if not self.dict_probed:
            self.probe_dict_slots()
        if frame_read_int16(frame) != ncols:
            raise ProtocolError(
                f'DataRow has a different number of columns than RowDescription ({ncols})')
        row = PyDict_Copy(self.dict_template)
        keys = <char*>(<PyDictObject*>row).ma_keys
        if self.dict_offsets == NULL or keys == (<PyDictObject*>self.dict_template).ma_keys \
                or (<PyDictObject*>row).ma_values != NULL:
            return self.fill_dict_slowly(row, frame)
        for i in range(ncols):
            flen = frame_read_int32(frame)
            if flen == -1:
                value = None
            else:
                field.ptr = frame_read(frame, flen)
                field.remaining = flen
                value = decoders[i](codecs[i], &field)
                if field.remaining != 0:
                    raise_undecoded(<Codec>codecs[i], field.remaining, i)
                if not holds_containers and PyType_IS_GC(Py_TYPE(value)):
                    holds_containers = True
            slot = <PyObject**>(keys + self.dict_offsets[i])
            old = slot[0]
            Py_INCREF(value)
            slot[0] = <PyObject*>value
            Py_XDECREF(old)
        # As PyDict_SetItem would: a dict that holds a container (a list, a
        # composite's Record) is tracked by the garbage collector; one of
        # atomic values stays untracked, as the template is.
        if holds_containers and not PyObject_GC_IsTracked(row):
            PyObject_GC_Track(row)
        return row

    cdef dict fill_dict_slowly(self, dict row, Frame *frame):
        # decode_dict() where the slots are unknown: PyDict_SetItem per column.
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t i
        cdef int32_t flen
        cdef Frame field
        cdef object value
        cdef tuple names = self.column_names
        for i in range(ncols):
            flen = frame_read_int32(frame)
            if flen == -1:
                value = None
            else:
                field.ptr = frame_read(frame, flen)
                field.remaining = flen
                value = self.col_decoders[i](self.col_codecs[i], &field)
                if field.remaining != 0:
                    raise_undecoded(<Codec>self.col_codecs[i], field.remaining, i)
            PyDict_SetItem(row, <object>PyTuple_GET_ITEM(names, i), value)
        return row

    cdef int probe_dict_slots(self) except -1:
        """Find where each column's value sits in a copy of dict_template (dict_offsets).

        A copy gets a distinct marker object per name, then its keys object
        is scanned, word by word from its start, for the markers: their
        offsets are where decode_dict() stores the values of every later
        copy.  The scan stops at the last marker found, so it reads only
        inside the keys object, and only a combined table (values inside
        the keys object) is scanned.  The offsets are then checked by
        filling another copy through them and reading it back with
        PyDict_GetItem; on any surprise dict_offsets stays NULL and rows
        are filled with PyDict_SetItem.
        """
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_names)
        cdef Py_ssize_t i, found = 0, word, limit
        cdef dict probe, check
        cdef char *keys
        cdef PyObject **slot
        cdef PyObject *old
        cdef Py_ssize_t *offsets
        self.dict_probed = True
        if ncols == 0:
            return 0
        markers = {name: object() for name in self.column_names}
        where = {}
        probe = PyDict_Copy(self.dict_template)
        if (<PyDictObject*>probe).ma_values != NULL or \
                (<PyDictObject*>probe).ma_keys == (<PyDictObject*>self.dict_template).ma_keys:
            return 0
        for name, marker in markers.items():
            probe[name] = marker
        by_address = {id(marker): name for name, marker in markers.items()}
        keys = <char*>(<PyDictObject*>probe).ma_keys
        limit = (ncols + 1) * DICT_PROBE_BYTES_PER_COLUMN // sizeof(PyObject*)
        word = 0
        while found < len(markers) and word < limit:
            name = by_address.get(<Py_ssize_t>(<PyObject**>keys)[word])
            if name is not None and name not in where:
                where[name] = word * <Py_ssize_t>sizeof(PyObject*)
                found += 1
            word += 1
        if found < len(markers):
            return 0
        offsets = <Py_ssize_t*>PyMem_Malloc(ncols * sizeof(Py_ssize_t))
        if offsets == NULL:
            raise MemoryError
        for i in range(ncols):
            offsets[i] = where[self.column_names[i]]
        # The check: a fresh copy filled through the offsets must read back.
        check = PyDict_Copy(self.dict_template)
        keys = <char*>(<PyDictObject*>check).ma_keys
        if (<PyDictObject*>check).ma_values != NULL:
            PyMem_Free(offsets)
            return 0
        for name, marker in markers.items():
            word = where[name]
            slot = <PyObject**>(keys + word)
            old = slot[0]
            if old != <PyObject*>None:
                # Not a value slot of the template's copy: leave it alone.
                PyMem_Free(offsets)
                return 0
            Py_INCREF(marker)
            slot[0] = <PyObject*>marker
            Py_XDECREF(old)
        if len(check) != len(markers) or any(check.get(name) is not marker
                                             for name, marker in markers.items()):
            PyMem_Free(offsets)
            return 0
        self.dict_offsets = offsets
        return 0

    cdef object decode_scalar(self, Frame *frame):
        # The first column's value; the other fields are skipped undecoded
        # (their lengths are still checked against the message).
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t i
        cdef int32_t flen
        cdef Frame field
        cdef object value = None
        if frame_read_int16(frame) != ncols:
            raise ProtocolError(
                f'DataRow has a different number of columns than RowDescription ({ncols})')
        for i in range(ncols):
            flen = frame_read_int32(frame)
            if flen == -1:
                continue
            if i == 0:
                field.ptr = frame_read(frame, flen)
                field.remaining = flen
                value = self.col_decoders[0](self.col_codecs[0], &field)
                if field.remaining != 0:
                    raise_undecoded(<Codec>self.col_codecs[0], field.remaining, 0)
            else:
                frame_read(frame, flen)
        return value

    cpdef int encode_copy_records(self, WriteBuffer buf, object records, bint header,
                                  bint trailer, Py_ssize_t base_index=0) except -1:
        """Append `records` as binary COPY tuples using this statement's column codecs.

        The statement is a SELECT of the target columns, so its column types
        are exactly what COPY expects.  A bad record raises DataError naming
        its index; the caller then fails the COPY, so nothing is committed.
        """
        cdef Py_ssize_t ncols = PyTuple_GET_SIZE(self.column_codecs)
        cdef Py_ssize_t index = base_index, j
        cdef Codec codec
        if header:
            for j in range(ncols):
                codec = <Codec>PyTuple_GET_ITEM(self.column_codecs, j)
                if codec.format != FORMAT_BINARY:
                    raise DataError(
                        f'column {self.column_names[j]!r} has a type without a binary codec '
                        f'(oid {codec.oid}); use copy_to_table() with a text format instead')
            write_copy_binary_header(buf)
        # One try for the whole batch, not one per value (saving and
        # restoring the exception state per value cost ~40 instructions);
        # `column` (set while a codec runs) tells a codec's error from our
        # own DataErrors.  The row format is mypgdriver/protocol/copybinary.pxd's.
        cdef Py_ssize_t column = -1
        cdef object record = None
        try:
            for record in records:
                if type(record) is not tuple:
                    record = row_arguments(record, index, 'record')
                if PyTuple_GET_SIZE(record) != ncols:
                    raise DataError(
                        f'invalid record {index}: expected {ncols} values, '
                        f'got {PyTuple_GET_SIZE(record)}')
                encode_copy_tuple(buf, self.column_codecs, <tuple>record, &column)
                index += 1
        except Exception as e:
            if column < 0:
                raise
            value = record[column]
            raise argument_error_class(e)(
                f'invalid input in record {index}, column '
                f'{self.column_names[column]!r}: {value!r} ({e})') from e
        if trailer:
            write_copy_binary_trailer(buf)
        return 0

    # Introspection helpers used by the Python API (PreparedStatement).
    def _param_codecs(self):
        return self.param_codecs

    def _column_codecs(self):
        return self.column_codecs


cdef int raise_argument_count_error(Py_ssize_t nparams, Py_ssize_t nargs,
                                    Py_ssize_t row_index) except -1:
    # Past the protocol limit the server's count wrapped around (it says 0
    # for 65,536 parameters): the limit is the error to report.
    check_argument_count(nargs)
    where = f' (row {row_index})' if row_index >= 0 else ''
    raise InterfaceError(
        f'the server expects {nparams} argument{"s" if nparams != 1 else ""} '
        f'for this query, {nargs} {"was" if nargs == 1 else "were"} passed{where}',
        hint=_ARGUMENT_COUNT_HINT)


cdef int raise_undecoded(Codec codec, Py_ssize_t left, Py_ssize_t column) except -1:
    raise ProtocolError(
        f'codec {codec.name} left {left} bytes undecoded in column {column + 1}')


cdef int raise_argument_error(object exc, Py_ssize_t i, object arg, Codec codec,
                              Py_ssize_t row_index) except -1:
    try:
        reason = str(exc)
    except Exception:
        # A user codec's exception whose __str__ fails: the argument error
        # is still the one raised (chained to `exc`).
        reason = type(exc).__name__
    prefix = f'invalid input for query argument ${i + 1}'
    if row_index >= 0:
        prefix += f' in row {row_index}'
    try:
        value_repr = repr(arg)
    except Exception:
        # e.g. an int beyond sys.get_int_max_str_digits(): never let the
        # error message hide the error.
        value_repr = f'<{type(arg).__name__} object>'
    if len(value_repr) > 80:
        value_repr = value_repr[:77] + '...'
    msg = f'{prefix}: {value_repr} ({reason})'
    error = argument_error_class(exc)(msg)
    error._refused_argument = i     # (see refused_argument())
    raise error from exc


def refused_argument(error):
    """The index of the argument a codec refused if `error` is that refusal, else None.

    Such an error is raised while the Bind is encoded, before anything of
    the operation is written: a caller may run the operation again with
    other arguments without running the statement twice (mypgdriver.dbapi,
    with StrAsTextArguments).  Any other DataError (the server's, or one
    raised by a row factory once the statement ran) gives None.
    """
    return getattr(error, '_refused_argument', None)


cdef object argument_error_class(object exc):
    # A value the driver cannot send for its type at all (asyncpg:
    # UnsupportedClientFeatureError) is still a DataError like the others.
    if isinstance(exc, UnsupportedClientFeatureError):
        return UnsupportedArgumentError
    return DataError


def resolve_statement_codecs(StatementState st, registry):
    """Pick the codec of every parameter and column of `st` (once, at prepare)."""
    st.resolve_codecs(registry)


def missing_statement_types(StatementState st, registry):
    """Type OIDs of `st` the registry has no codec for yet."""
    return st.missing_type_oids(registry)

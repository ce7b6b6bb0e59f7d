from libc.stdint cimport uint32_t
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer
from cpython.object cimport PyObject
from mypgdriver.protocol.record cimport RecordDescriptor
from mypgdriver.codecs.base cimport decode_fn

# decode_fn with the codec passed as a borrowed raw pointer: the same C ABI,
# but calling through it costs no reference counting on the codec.
ctypedef object (*raw_decode_fn)(PyObject *codec, Frame *frame)

# What a result's rows are made as (see mypgdriver.rows): the row factories
# the decode loop builds itself, and ROW_MAKER for any other factory, whose
# maker gets each row's values as a tuple.
cdef enum RowKind:
    ROW_RECORD = 0      # a Record (or record_class subclass)
    ROW_TUPLE = 1       # rows.tuple_row
    ROW_DICT = 2        # rows.dict_row
    ROW_SCALAR = 3      # rows.scalar_row
    ROW_MAKER = 4       # another factory: maker(tuple of values)


cdef class StatementState:
    # What the driver knows about one prepared statement: its parameter and
    # column types, and the codecs picked for them once, at prepare time.
    cdef:
        readonly str name
        readonly str query
        readonly tuple param_oids       # from ParameterDescription
        tuple parse_oids                # the types a Parse repeating the description gives
        readonly tuple column_names
        readonly tuple column_oids
        readonly tuple column_tables    # (table oid, column number) pairs
        readonly tuple column_sizes     # pg_type.typlen per column (negative: variable)
        readonly tuple column_typmods   # the type modifier per column (-1: none)
        # dict_row's starting point: {name: None} per column, copied per row
        # (a copy of a dict of the same keys is one memcpy, no rehashing).
        dict dict_template
        # Where each column's value lives in a copy of dict_template (byte
        # offsets from its keys object; see probe_dict_slots), or NULL: then
        # rows are filled with PyDict_SetItem.
        Py_ssize_t *dict_offsets
        bint dict_probed
        # The rows.ResultDescription of the columns (what a row factory is
        # called with), made on first use; None after a new RowDescription.
        public object result_description
        tuple param_codecs              # Codec per parameter
        tuple column_codecs             # Codec per column
        bytes param_formats_msg         # Bind's parameter-format section, pre-encoded
        bytes result_formats_msg        # Bind's result-format section, pre-encoded
        readonly RecordDescriptor desc
        readonly bint has_rows
        public bint closed
        # The server statement does not exist yet: it was described as the
        # unnamed statement, and the Parse that creates it goes out in front
        # of its first Bind, in the same Sync (see coreproto's _send_prepare).
        public bint parse_pending
        public int refs                 # in-flight uses (cache eviction waits for 0)
        # The session's schema epoch when the statement was last known to
        # match the schema (see Session.schema_epoch).
        public long schema_epoch
        public double created_at
        public object codecs_generation # registry generation the codecs came from
        # The column codecs again as C arrays (borrowed from column_codecs),
        # so the row loop does no tuple access and no refcounting per field.
        raw_decode_fn *col_decoders
        PyObject **col_codecs

    cdef int set_param_description(self, Frame *frame) except -1
    cdef int set_row_description(self, Frame *frame) except -1
    cdef int set_no_data(self) except -1
    cdef bint same_column_types(self, Frame *frame) except -1
    cdef list missing_type_oids(self, object registry)
    cdef int resolve_codecs(self, object registry) except -1
    cdef int _build_column_arrays(self) except -1
    cdef int probe_dict_slots(self) except -1
    cdef int encode_bind(self, WriteBuffer buf, str portal, object args, Py_ssize_t row_index=*) except -1
    cdef int encode_bind_str_as_text(self, WriteBuffer buf, str portal, tuple args,
                                     Py_ssize_t row_index) except -1
    cdef int param_format(self, Py_ssize_t i) except -1
    cdef object decode_row(self, Frame *frame, type record_class)
    cdef object decode_row_as(self, Frame *frame, int kind, object maker)
    cdef tuple decode_tuple(self, Frame *frame)
    cdef dict decode_dict(self, Frame *frame)
    cdef dict fill_dict_slowly(self, dict row, Frame *frame)
    cdef object decode_scalar(self, Frame *frame)
    cpdef int encode_copy_records(self, WriteBuffer buf, object records, bint header,
                                  bint trailer, Py_ssize_t base_index=*) except -1

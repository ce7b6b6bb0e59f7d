# cython: language_level=3
"""The per-row part of the DB-API's COPY FROM STDIN, in C: CopyRows.write_row().

mypgdriver.dbapi.copy.Copy is a Python class built on CopyRows, so
``copy.write_row(row)`` in the user's loop calls straight into C: the row is
checked and formatted into the pending buffer with no Python frame of ours.
Text COPY formats rows as copytext.pyx does; binary COPY encodes them with
the codecs set by set_types(), with the row format copy_records_to_table()
uses (mypgdriver/protocol/copybinary.pxd).  Once FLUSH_BYTES are pending,
write_row() calls the subclass's send_pending(), which sends them.
"""

cimport cython
from cpython.list cimport PyList_AsTuple
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from mypgdriver.codecs.base cimport Codec
from mypgdriver.dbapi.copytext cimport write_text_row
from mypgdriver.protocol.buffer cimport WriteBuffer
from mypgdriver.protocol.copybinary cimport (
    encode_copy_tuple, write_copy_binary_header, write_copy_binary_trailer)

from collections.abc import Mapping, Sequence, Set as AbstractSet

from mypgdriver.exceptions import pep249

cdef extern from "Python.h":
    int PyBuffer_FillInfo(Py_buffer *view, object exporter, void *buf, Py_ssize_t len,
                          int readonly, int flags) except -1

# encode_copy_tuple's type without its `except -1`: a call through it is
# not followed by Cython's error check (add_binary_row checks it itself).
ctypedef int (*encode_tuple_unchecked)(WriteBuffer buf, tuple codecs, tuple record,
                                       Py_ssize_t *column) noexcept

__all__ = ['CopyRows', 'FLUSH_BYTES', 'ROWS_CLOSED', 'ROWS_TEXT', 'ROWS_BINARY']

#: Pending data is sent once this much is held (write_row() and write()).
#: The size of copy_records_to_table()'s messages (COPY_RECORDS_CHUNK_BYTES):
#: against 128 KiB it measured ~5% less client CPU per binary copy of the
#: bench's copyfrom (the pending data and the protocol's copies of it stay
#: in the CPU's cache).
FLUSH_BYTES = 64 * 1024

# What write_row() does (CopyRows.rows_mode).
cdef enum RowsMode:
    MODE_CLOSED = 0     # not inside the block of a COPY FROM STDIN: write_row() refuses
    MODE_TEXT = 1       # COPY's text format
    MODE_BINARY = 2     # binary COPY

ROWS_CLOSED = MODE_CLOSED
ROWS_TEXT = MODE_TEXT
ROWS_BINARY = MODE_BINARY


cdef class CopyRows:
    """The pending data of a COPY FROM STDIN and its write_row() (see the module docstring)."""

    cdef WriteBuffer pending
    cdef int mode
    cdef Py_ssize_t flush_bytes
    # Binary COPY: the codec of each column (None until set_types()), the
    # type names for error messages, and whether the header went out.
    cdef tuple codecs
    cdef tuple type_names
    cdef bint header_written
    # Rows taken by write_row(), to name a refused one by its index.
    cdef Py_ssize_t rows_written
    # Views of the pending data alive (memoryview(copy_rows), see
    # __getbuffer__): while there are any, nothing may move the data.
    cdef Py_ssize_t exports

    def __cinit__(self, *args, **kwargs):
        self.pending = WriteBuffer()
        self.mode = MODE_CLOSED
        self.flush_bytes = FLUSH_BYTES

    # METH_O: no argument parsing per call (a keyword-capable def measured
    # ~15 ns more per row).
    @cython.always_allow_keywords(False)
    def write_row(self, row):
        """Add one row (a tuple or list of column values, None for NULL) to the COPY.

        Text format (the default): str, int, float, Decimal, bool (t/f),
        bytes (as ``\\x`` hex for bytea), date/time values (ISO) and UUIDs
        are written as their text; lists, tuples and dicts raise
        NotSupportedError (write them with write() in the text form of the
        column's type).  Binary format (``FORMAT BINARY``): each value is
        encoded by the codec of its column's type, given by set_types()
        (ProgrammingError before it), as copy_records_to_table() encodes
        it; a row with another number of values, or a value its codec
        refuses (``'abc'`` for an int4), raises DataError and leaves nothing
        of the row behind.  Rows are formatted in C into a buffer sent once
        64 KiB are pending.
        """
        cdef int mode = self.mode
        if self.exports:
            raise BufferError('write_row() while the pending data is being sent')
        if mode == MODE_BINARY:
            add_binary_row(self, row)
        elif mode == MODE_TEXT:
            write_text_row(self.pending, row)
        else:
            self.refuse_write_row()
            raise pep249.ProgrammingError('write_row() is not allowed here')
        self.rows_written += 1
        if self.pending.length >= self.flush_bytes:
            self.send_pending()

    def refuse_write_row(self):
        """Raise the error of a write_row() outside a COPY FROM STDIN's block (Copy's)."""

    def send_pending(self):
        """Send what is pending (Copy's): called once FLUSH_BYTES are held."""
        raise NotImplementedError

    # --- for Copy (mypgdriver/dbapi/copy.py) ------------------------------------------------

    @property
    def rows_mode(self):
        """ROWS_CLOSED, ROWS_TEXT or ROWS_BINARY: what write_row() does now."""
        return self.mode

    @property
    def pending_size(self):
        """The bytes pending (not sent yet)."""
        return self.pending.length

    @property
    def has_types(self):
        """Whether set_rows_types() gave the codecs of a binary COPY's columns."""
        return self.codecs is not None

    def set_rows_mode(self, int mode):
        """Make write_row() refuse (ROWS_CLOSED), or write text or binary rows."""
        if mode not in (MODE_CLOSED, MODE_TEXT, MODE_BINARY):
            raise ValueError(f'unknown rows mode {mode}')
        self.mode = mode

    def set_rows_types(self, tuple codecs, tuple type_names):
        """The codec of each column for binary rows, and the types' names (for errors)."""
        cdef Py_ssize_t i
        if PyTuple_GET_SIZE(type_names) != PyTuple_GET_SIZE(codecs):
            raise ValueError('one type name per codec')
        for i in range(PyTuple_GET_SIZE(codecs)):
            if not isinstance(<object>PyTuple_GET_ITEM(codecs, i), Codec):
                raise TypeError('set_rows_types() takes codecs')
        self.codecs = codecs
        self.type_names = type_names

    def add_data(self, data):
        """Append `data` (bytes-like) to what is pending, after the rows written before it."""
        self.check_unexported()
        self.pending.write_bytelike(data)

    def end_rows(self, bint complete=False):
        """Close a binary COPY's data with its trailer, if write_row() wrote its header.

        `complete`: also write the header if no row did (an empty binary
        COPY, whose data must still be a valid file).
        """
        self.check_unexported()
        if complete and not self.header_written:
            write_copy_binary_header(self.pending)
            self.header_written = True
        if self.header_written:
            write_copy_binary_trailer(self.pending)
            self.header_written = False

    def take_pending(self):
        """What is pending, as bytes (b'' if nothing); the buffer is then empty."""
        cdef bytes data
        self.check_unexported()
        if self.pending.length == 0:
            return b''
        data = self.pending.to_bytes()
        self.pending.reset()
        return data

    def clear_pending(self):
        """Forget what is pending (once it was sent through a memoryview of this object)."""
        self.check_unexported()
        self.pending.reset()

    def pending_view(self):
        """A read-only memoryview of what is pending (see __getbuffer__); release it after use."""
        return memoryview(self)

    # The pending data as a buffer: Copy sends memoryview(self) and then
    # clears it, instead of copying it into a bytes object first (the
    # protocol copies it into its CopyData message anyway; one copy of
    # every byte fewer measured ~80 instructions a row of the bench's
    # copyfrom under callgrind, whose count of rep movsb is per byte).
    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.pending.data, self.pending.length, 1, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1

    cdef int check_unexported(self) except -1:
        if self.exports:
            raise BufferError('the pending data is being sent')
        return 0


cdef inline int add_binary_row(CopyRows self, object row) except -1:
    cdef WriteBuffer buf = self.pending
    cdef tuple codecs = self.codecs
    cdef tuple record
    cdef Py_ssize_t start, column = -1
    if codecs is None:
        raise pep249.ProgrammingError(
            'a binary COPY needs the types of its columns before write_row(): call '
            "copy.set_types(['int4', 'text', ...]) first, in the statement's column order")
    if type(row) is tuple:
        record = <tuple>row
    elif type(row) is list:
        record = PyList_AsTuple(row)
    else:
        record = row_as_tuple(row, self.rows_written)
    if PyTuple_GET_SIZE(record) != PyTuple_GET_SIZE(codecs):
        raise pep249.DataError(
            f'row {self.rows_written} has {PyTuple_GET_SIZE(record)} values, the COPY '
            f'{PyTuple_GET_SIZE(codecs)} columns (set_types() gave '
            f'{PyTuple_GET_SIZE(codecs)} types)')
    if not self.header_written:
        write_copy_binary_header(buf)
        self.header_written = True
    start = buf.length
    # No try on this path (saving and restoring the exception state for
    # each row cost a few dozen instructions): the encoder is called
    # through a pointer without Cython's error check, and its -1 (an
    # exception set) is handled here, out of line.
    if (<encode_tuple_unchecked>encode_copy_tuple)(buf, codecs, record, &column) < 0:
        buf.length = start      # nothing of the row is left behind
        return refused_row(self, record, column)
    return 0


cdef int refused_row(CopyRows self, tuple record, Py_ssize_t column) except -1:
    # The exception the encoder set is still pending: re-enter it here.
    try:
        pending_error()
    except Exception as e:
        if column < 0:
            raise
        raise_refused_value(e, self.rows_written, column,
                            <object>PyTuple_GET_ITEM(record, column),
                            <object>PyTuple_GET_ITEM(self.type_names, column))
    return 0


cdef int pending_error() except -1:
    # Returns -1 with the exception already set: the caller's error check
    # raises it, so that an except clause can catch it.
    return -1


cdef tuple row_as_tuple(object row, Py_ssize_t index):
    # tuple(row) would take anything iterable: a dict's keys, a str's
    # characters, a set in arbitrary order.  A row must be a sequence.
    if isinstance(row, tuple) or (
            isinstance(row, Sequence)
            and not isinstance(row, (str, bytes, bytearray, memoryview, Mapping, AbstractSet))):
        return tuple(row)
    raise pep249.DataError(
        f'row {index} is of type {type(row).__name__}, not a sequence of column values '
        f'(a tuple or a list)')


cdef int raise_refused_value(object exc, Py_ssize_t index, Py_ssize_t column, object value,
                             object type_name) except -1:
    try:
        reason = str(exc)
    except Exception:
        reason = type(exc).__name__
    try:
        shown = repr(value)
    except Exception:
        shown = f'<{type(value).__name__} object>'
    if len(shown) > 80:
        shown = shown[:77] + '...'
    raise pep249.DataError(
        f'row {index}, column {column + 1} ({type_name}): {shown} cannot be sent '
        f'({reason})') from exc

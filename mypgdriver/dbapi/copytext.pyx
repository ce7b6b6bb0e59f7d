# cython: language_level=3
"""Rows to COPY's text format, in C: what Copy.write_row() sends.

One line per row, fields separated by a tab, NULL as ``\\N``, and in the
text of each value the four characters COPY's text format escapes
(backslash, tab, newline, carriage return) written as ``\\\\``, ``\\t``,
``\\n``, ``\\r`` (PostgreSQL docs, COPY, "Text Format").  The lines are
appended to a WriteBuffer (the COPY's pending data, see copyrows.pyx),
taken as bytes when a block is sent:
no per-field Python object for None, bool, str and bytes values; an int
or float costs one str (its repr, what PostgreSQL's input functions read).
"""

from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from mypgdriver.protocol.buffer cimport WriteBuffer

from mypgdriver.exceptions import pep249

__all__ = ['TextRows']

cdef extern from "Python.h":
    int PyObject_GetBuffer(object obj, Py_buffer *view, int flags) except -1
    void PyBuffer_Release(Py_buffer *view)
    int PyBUF_SIMPLE

cdef const char *HEX = b'0123456789abcdef'


cdef class TextRows:
    """A buffer of rows in COPY's text format (see the module's docstring)."""

    cdef WriteBuffer buf

    def __cinit__(self):
        self.buf = WriteBuffer()

    @property
    def size(self):
        """The bytes held (rows added since the last take())."""
        return self.buf.length

    def add(self, row):
        """Append `row` (a sequence of values) as one line; NotSupportedError for containers."""
        write_text_row(self.buf, row)

    def take(self):
        """The bytes held, as bytes; the buffer is then empty."""
        cdef bytes data = self.buf.to_bytes()
        self.buf.reset()
        return data


cdef int write_text_row(WriteBuffer buf, object row) except -1:
    # One line for `row`; on any error nothing of it is left in `buf`.
    cdef Py_ssize_t start = buf.length
    cdef bint first = True
    try:
        for value in row:
            if not first:
                buf.write_byte(b'\t')
            first = False
            add_value(buf, value)
        buf.write_byte(b'\n')
    except BaseException:
        buf.length = start
        raise
    return 0


cdef int add_value(WriteBuffer buf, object value) except -1:
    cdef type kind = type(value)
    if value is None:
        return buf.write_raw(b'\\N', 2)
    if kind is str:
        return add_text(buf, value)
    if kind is bool:
        return buf.write_byte(b't' if value else b'f')
    if kind is int:
        return add_int(buf, value)
    if kind is float:
        # Its repr (the shortest that reads back the same) needs no escape.
        return add_ascii(buf, repr(value))
    if isinstance(value, bool):
        return buf.write_byte(b't' if value else b'f')
    if isinstance(value, (bytes, bytearray)):
        return add_bytea(buf, value)
    if isinstance(value, memoryview):
        return add_bytea(buf, bytes(value))      # any layout, as bytes() reads it
    if isinstance(value, (list, tuple, dict, set)):
        raise pep249.NotSupportedError(
            f'write_row() writes scalar values; a {type(value).__name__} must be written '
            f'with write() in the text form of its column type')
    return add_text(buf, str(value))


cdef int add_int(WriteBuffer buf, object value) except -1:
    cdef int overflow = 0
    cdef long long n = PyLong_AsLongLongAndOverflow(value, &overflow)
    cdef unsigned long long u
    cdef char digits[24]
    cdef int i = 24
    if overflow:
        return add_ascii(buf, repr(value))
    u = <unsigned long long>(-(n + 1)) + 1 if n < 0 else <unsigned long long>n
    while True:
        i -= 1
        digits[i] = <char>(48 + u % 10)    # '0' + digit
        u //= 10
        if u == 0:
            break
    if n < 0:
        i -= 1
        digits[i] = 45     # '-'
    return buf.write_raw(digits + i, 24 - i)


cdef int add_ascii(WriteBuffer buf, str text) except -1:
    cdef Py_ssize_t n
    cdef const char *p = PyUnicode_AsUTF8AndSize(text, &n)
    return buf.write_raw(p, n)


cdef int add_text(WriteBuffer buf, str text) except -1:
    cdef Py_ssize_t n, i
    cdef const char *p = PyUnicode_AsUTF8AndSize(text, &n)
    cdef char c
    cdef char *out
    # At most two bytes per byte once escaped.
    buf.ensure(2 * n)
    out = buf.data + buf.length
    for i in range(n):
        c = p[i]
        if c == b'\\':
            out[0] = b'\\'
            out[1] = b'\\'
            out += 2
        elif c == b'\t':
            out[0] = b'\\'
            out[1] = b't'
            out += 2
        elif c == b'\n':
            out[0] = b'\\'
            out[1] = b'n'
            out += 2
        elif c == b'\r':
            out[0] = b'\\'
            out[1] = b'r'
            out += 2
        else:
            out[0] = c
            out += 1
    buf.length = out - buf.data
    return 0


cdef int add_bytea(WriteBuffer buf, object value) except -1:
    # bytea's hex form, its backslash escaped for the text format: \\x0a1b...
    cdef Py_buffer view
    cdef const unsigned char *p
    cdef Py_ssize_t i
    cdef char *out
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        buf.ensure(3 + 2 * view.len)
        out = buf.data + buf.length
        out[0] = b'\\'
        out[1] = b'\\'
        out[2] = b'x'
        out += 3
        p = <const unsigned char *>view.buf
        for i in range(view.len):
            out[0] = HEX[p[i] >> 4]
            out[1] = HEX[p[i] & 15]
            out += 2
        buf.length = out - buf.data
    finally:
        PyBuffer_Release(&view)
    return 0

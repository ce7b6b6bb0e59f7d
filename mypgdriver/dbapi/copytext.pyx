# cython: language_level=3
"""Rows to COPY's text format, in C: what Copy.write_row() sends.

One line per row, fields separated by a tab, NULL as ``\\N``, and in the
text of each value the four characters COPY's text format escapes
(backslash, tab, newline, carriage return) written as ``\\\\``, ``\\t``,
``\\n``, ``\\r`` (PostgreSQL docs, COPY, "Text Format").  The lines are
appended to one growing C buffer, taken as bytes when a block is sent:
no per-field Python object for None, bool, str and bytes values; an int
or float costs one str (its repr, what PostgreSQL's input functions read).
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.string cimport memcpy

from mypgdriver.exceptions import pep249

__all__ = ['TextRows']

cdef extern from "Python.h":
    int PyObject_GetBuffer(object obj, Py_buffer *view, int flags) except -1
    void PyBuffer_Release(Py_buffer *view)
    int PyBUF_SIMPLE

cdef const char *HEX = b'0123456789abcdef'


cdef class TextRows:
    """A buffer of rows in COPY's text format (see the module's docstring)."""

    cdef char *data
    cdef Py_ssize_t length
    cdef Py_ssize_t capacity

    def __dealloc__(self):
        PyMem_Free(self.data)

    @property
    def size(self):
        """The bytes held (rows added since the last take())."""
        return self.length

    def add(self, row):
        """Append `row` (a sequence of values) as one line; NotSupportedError for containers."""
        cdef Py_ssize_t start = self.length
        cdef bint first = True
        try:
            for value in row:
                if not first:
                    self._put(b'\t', 1)
                first = False
                self._add_value(value)
            self._put(b'\n', 1)
        except BaseException:
            self.length = start         # no half row left behind
            raise

    def take(self):
        """The bytes held, as bytes; the buffer is then empty."""
        cdef bytes data = PyBytes_FromStringAndSize(self.data, self.length)
        self.length = 0
        return data

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self.length + extra
        cdef Py_ssize_t capacity
        cdef char *grown
        if need <= self.capacity:
            return 0
        capacity = max(need, self.capacity * 2, 4096)
        grown = <char *>PyMem_Realloc(self.data, <size_t>capacity)
        if grown == NULL:
            raise MemoryError()
        self.data = grown
        self.capacity = capacity
        return 0

    cdef inline int _put(self, const char *text, Py_ssize_t n) except -1:
        self._reserve(n)
        memcpy(self.data + self.length, text, <size_t>n)
        self.length += n
        return 0

    cdef int _add_value(self, object value) except -1:
        cdef type kind = type(value)
        if value is None:
            return self._put(b'\\N', 2)
        if kind is str:
            return self._add_text(value)
        if kind is bool:
            return self._put(b't' if value else b'f', 1)
        if kind is int:
            return self._add_int(value)
        if kind is float:
            # Its repr (the shortest that reads back the same) needs no escape.
            return self._add_ascii(repr(value))
        if isinstance(value, bool):
            return self._put(b't' if value else b'f', 1)
        if isinstance(value, (bytes, bytearray)):
            return self._add_bytea(value)
        if isinstance(value, memoryview):
            return self._add_bytea(bytes(value))      # any layout, as bytes() reads it
        if isinstance(value, (list, tuple, dict, set)):
            raise pep249.NotSupportedError(
                f'write_row() writes scalar values; a {type(value).__name__} must be written '
                f'with write() in the text form of its column type')
        return self._add_text(str(value))

    cdef int _add_int(self, object value) except -1:
        cdef int overflow = 0
        cdef long long n = PyLong_AsLongLongAndOverflow(value, &overflow)
        cdef unsigned long long u
        cdef char digits[24]
        cdef int i = 24
        if overflow:
            return self._add_ascii(repr(value))
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
        return self._put(digits + i, 24 - i)

    cdef int _add_ascii(self, str text) except -1:
        cdef Py_ssize_t n
        cdef const char *p = PyUnicode_AsUTF8AndSize(text, &n)
        return self._put(p, n)

    cdef int _add_text(self, str text) except -1:
        cdef Py_ssize_t n, i
        cdef const char *p = PyUnicode_AsUTF8AndSize(text, &n)
        cdef char c
        cdef char *out
        # At most two bytes per byte once escaped.
        self._reserve(2 * n)
        out = self.data + self.length
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
        self.length = out - self.data
        return 0

    cdef int _add_bytea(self, object value) except -1:
        # bytea's hex form, its backslash escaped for the text format: \\x0a1b...
        cdef Py_buffer view
        cdef const unsigned char *p
        cdef Py_ssize_t i
        cdef char *out
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            self._reserve(3 + 2 * view.len)
            out = self.data + self.length
            out[0] = b'\\'
            out[1] = b'\\'
            out[2] = b'x'
            out += 3
            p = <const unsigned char *>view.buf
            for i in range(view.len):
                out[0] = HEX[p[i] >> 4]
                out[1] = HEX[p[i] & 15]
                out += 2
            self.length = out - self.data
        finally:
            PyBuffer_Release(&view)
        return 0

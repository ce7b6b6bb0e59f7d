"""Async iteration over rows that arrive in batches, without a coroutine per row.

`async for row in conn.cursor(...)` asks for the next row 100,000 times in a
100,000-row query, and nearly every answer is already in memory. A Python
``async def __anext__`` builds and runs a coroutine for each of them: about
1,100 instructions, more than decoding the row. Here ``__anext__`` hands out
a buffered row as an already-completed awaitable, and only an empty buffer
costs a coroutine (one per batch, to fetch the next one).
"""
cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF

cdef extern from *:
    # am_send (Python 3.10+) lets the interpreter take an awaitable's result
    # without raising StopIteration; older versions use __next__ below.
    """
    #if PY_VERSION_HEX >= 0x030A0000
    #define MPG_HAVE_AM_SEND 1
    typedef PySendResult mpg_send_result;
    #else
    #define MPG_HAVE_AM_SEND 0
    typedef int mpg_send_result;
    #define PYGEN_RETURN 0
    #endif
    static void mpg_set_am_send(PyTypeObject *tp, void *fn) {
    #if MPG_HAVE_AM_SEND
        if (tp->tp_as_async != NULL) tp->tp_as_async->am_send = (sendfunc)fn;
    #endif
    }
    """
    ctypedef int mpg_send_result
    int PYGEN_RETURN
    void mpg_set_am_send(PyTypeObject *tp, void *fn)


@cython.final
@cython.no_gc
@cython.freelist(8)
cdef class _Ready:
    """An awaitable whose result is already known: awaiting it never suspends."""

    cdef object value

    def __await__(self):
        return self

    def __iter__(self):
        # `yield from` (asyncio.ensure_future's wrapper) needs an iterator.
        return self

    def __next__(self):
        # Only when the interpreter cannot use am_send (Python 3.9, tracing).
        value, self.value = self.value, None
        raise StopIteration(value)


cdef mpg_send_result _ready_send(PyObject *awaitable, PyObject *arg,
                                 PyObject **result) noexcept:
    cdef _Ready ready = <_Ready>awaitable
    cdef object value = ready.value
    ready.value = None
    Py_INCREF(value)
    result[0] = <PyObject *>value
    return PYGEN_RETURN


mpg_set_am_send(<PyTypeObject *>_Ready, <void *>_ready_send)


@cython.final
cdef class RowStream:
    """Async iterator over the rows of a source that fetches them in batches.

    `source` has ``async def next_batch() -> list``: the next rows, or an
    empty list at the end.
    """

    cdef readonly object source
    cdef list _rows
    cdef Py_ssize_t _pos

    def __cinit__(self, source):
        self.source = source
        self._rows = []
        self._pos = 0

    def __repr__(self):
        return f'<RowStream of {self.source!r}>'

    def __aiter__(self):
        return self

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __anext__(self):
        cdef Py_ssize_t pos = self._pos
        cdef list rows = self._rows
        cdef _Ready ready
        if pos < len(rows):
            ready = _Ready.__new__(_Ready)
            ready.value = rows[pos]
            # Let go of the row: the caller decides how long it lives.
            rows[pos] = None
            self._pos = pos + 1
            return ready
        return self._refill()

    async def _refill(self):
        cdef list rows = await self.source.next_batch()
        if not rows:
            raise StopAsyncIteration
        self._rows = rows
        self._pos = 1
        row = rows[0]
        rows[0] = None
        return row

# cython: language_level=3
"""Receive and send buffers for the PostgreSQL v3 protocol."""

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcpy, memmove, memchr

from mypgdriver.exceptions import ProtocolError


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


# The receive buffer's own storage holds only messages split across reads
# (data_received parses each read in place, see ReadBuffer.borrow), so it is
# allocated at the first split message, not per connection, and starts small:
# it doubles to fit a large message.  It used to be 256 KiB per connection,
# from when the transport read into it (recv_into): above glibc's initial
# mmap threshold, so the first free raised that threshold and every later
# 256 KiB buffer came from the heap, which connect/close loops fragmented.
cdef Py_ssize_t READ_BUFFER_INITIAL = 16 * 1024
cdef Py_ssize_t WRITE_BUFFER_INITIAL = 4096
# Leftovers up to this size are moved to the front of the receive buffer
# before each read (cheap next to a read() call).
cdef Py_ssize_t READ_BUFFER_CHEAP_MOVE = 16 * 1024
# READ_BUFFER_KEEP (buffer.pxd): storage grown beyond it for one huge message
# (a 100 MB row) is given back once the message is parsed, so that a pooled
# connection does not hold it for the rest of its life.


cdef int frame_underrun(Py_ssize_t wanted, Py_ssize_t remaining) except -1:
    if wanted < 0:
        raise ProtocolError(f'malformed message from server: invalid length {wanted}')
    raise ProtocolError(
        f'malformed message from server: needed {wanted} more bytes, '
        f'only {remaining} left in the message')


cdef str frame_read_cstr(Frame *f):
    cdef const char *end = <const char*>memchr(f.ptr, 0, <size_t>f.remaining)
    if end == NULL:
        raise ProtocolError('malformed message from server: unterminated string')
    cdef Py_ssize_t n = end - f.ptr
    cdef str s = PyUnicode_DecodeUTF8(f.ptr, n, 'replace')
    f.ptr += n + 1
    f.remaining -= n + 1
    return s


cdef bytes frame_read_cstr_bytes(Frame *f):
    cdef const char *end = <const char*>memchr(f.ptr, 0, <size_t>f.remaining)
    if end == NULL:
        raise ProtocolError('malformed message from server: unterminated string')
    cdef Py_ssize_t n = end - f.ptr
    cdef bytes s = PyBytes_FromStringAndSize(f.ptr, n)
    f.ptr += n + 1
    f.remaining -= n + 1
    return s


cdef class ReadBuffer:

    def __cinit__(self):
        # No storage until a message is split across reads (reserve()).
        self.data = NULL
        self.capacity = 0
        self.start = 0
        self.end = 0
        self.needed = 0
        self.own_data = NULL
        self.own_capacity = 0
        self.borrowed = False

    def __dealloc__(self):
        if self.borrowed:
            PyMem_Free(self.own_data)
        else:
            PyMem_Free(self.data)
        self.data = NULL
        self.own_data = NULL

    cdef int release(self) except -1:
        """Free the storage and forget unparsed bytes: the connection is closed.

        A closed connection lives on until the cyclic garbage collector
        reaches it (the protocol, session and connection refer to each
        other), so its buffers are freed here, not when it is deallocated.
        Later use allocates again, as a new buffer does.
        """
        if self.borrowed:
            # Inside data_received: unborrow() will find empty own storage.
            PyMem_Free(self.own_data)
            self.own_data = NULL
            self.own_capacity = 0
            return 0
        PyMem_Free(self.data)
        self.data = NULL
        self.capacity = 0
        self.start = 0
        self.end = 0
        self.needed = 0
        return 0

    cdef int reserve(self, Py_ssize_t sizehint) except -1:
        """Make room for at least `sizehint` more bytes after `end` (moving or growing the storage).

        `sizehint` is what the caller is about to copy in, i.e. bytes that
        have arrived.  The storage is never sized from `needed`: that comes
        from a length word, which is only the server's claim (2**31-1 would
        reserve 2 GiB before a byte of the body arrived).  Doubling as the
        bytes come keeps a big message's copies amortised linear.
        """
        cdef Py_ssize_t unparsed = self.end - self.start
        cdef Py_ssize_t want = sizehint
        cdef Py_ssize_t new_capacity
        cdef char *new_data
        if self.start > 0 and unparsed <= READ_BUFFER_CHEAP_MOVE:
            # Move a small leftover (part of one message) to the front, so
            # the storage does not grow while a stream of small messages
            # leaves a partial one at the end of every read.
            if unparsed:
                memmove(self.data, self.data + self.start, <size_t>unparsed)
            self.start = 0
            self.end = unparsed
        if self.capacity - self.end < want:
            if self.start > 0:
                if unparsed:
                    memmove(self.data, self.data + self.start, <size_t>unparsed)
                self.start = 0
                self.end = unparsed
            if self.capacity - self.end < want:
                new_capacity = self.capacity * 2
                if new_capacity < READ_BUFFER_INITIAL:
                    new_capacity = READ_BUFFER_INITIAL
                while new_capacity - self.end < want:
                    new_capacity *= 2
                new_data = <char*>PyMem_Realloc(self.data, <size_t>new_capacity)
                if new_data == NULL:
                    raise MemoryError
                self.data = new_data
                self.capacity = new_capacity
        return 0

    cdef int shrink(self) except -1:
        """Give back storage grown beyond READ_BUFFER_KEEP, keeping the unparsed bytes.

        Called when data_received is done with a read, only if the capacity
        is above READ_BUFFER_KEEP (one comparison on the hot path).
        """
        cdef Py_ssize_t unparsed = self.end - self.start
        cdef char *new_data
        if self.borrowed or unparsed > READ_BUFFER_KEEP // 2:
            # still receiving a big message: it needs the room
            return 0
        if unparsed == 0:
            PyMem_Free(self.data)
            self.data = NULL
            self.capacity = 0
            self.start = 0
            self.end = 0
            return 0
        memmove(self.data, self.data + self.start, <size_t>unparsed)
        self.start = 0
        self.end = unparsed
        new_data = <char*>PyMem_Realloc(self.data, <size_t>READ_BUFFER_KEEP)
        if new_data != NULL:     # else the larger storage stays: still valid
            self.data = new_data
            self.capacity = READ_BUFFER_KEEP
        return 0

    def _capacity(self):
        """The size of the storage (for tests)."""
        return self.capacity if not self.borrowed else self.own_capacity

    cdef int borrow(self, bytes chunk, Py_ssize_t offset) except -1:
        """Parse `chunk[offset:]` in place (our buffer is empty): no copy into our storage.

        The caller keeps `chunk` alive and calls unborrow() when done, which
        keeps only an unparsed tail (part of one message).
        """
        self.own_data = self.data
        self.own_capacity = self.capacity
        self.borrowed = True
        self.data = PyBytes_AS_STRING(chunk)
        self.capacity = PyBytes_GET_SIZE(chunk)
        self.start = offset
        self.end = self.capacity
        return 0

    cdef Py_ssize_t fill_pending(self, bytes chunk, Py_ssize_t offset) except -1:
        """Copy from `chunk[offset:]` what the partial message in the buffer still needs.

        Copies all that is left when that is not enough, or when the
        message's size is not known yet.  Returns the offset after the copied
        bytes: once the message is parsed, the rest can be borrowed instead
        of copied (a stream of rows leaves a partial message after nearly
        every read, and copying whole reads doubled the bytes moved).
        """
        cdef Py_ssize_t left = PyBytes_GET_SIZE(chunk) - offset
        cdef Py_ssize_t take = self.needed - (self.end - self.start)
        if take <= 0 or take > left:
            take = left
        self.reserve(take)
        memcpy(self.data + self.end, PyBytes_AS_STRING(chunk) + offset, <size_t>take)
        self.end += take
        return offset + take

    cdef int unborrow(self) except -1:
        cdef const char *borrowed = self.data
        cdef Py_ssize_t tail = self.end - self.start
        cdef Py_ssize_t first = self.start
        self.data = self.own_data
        self.capacity = self.own_capacity
        self.own_data = NULL
        self.own_capacity = 0
        self.borrowed = False
        self.start = 0
        self.end = 0
        if tail > 0:
            self.reserve(tail)   # room for the tail (grows if needed)
            memcpy(self.data + self.end, borrowed + first, <size_t>tail)
            self.end += tail
        return 0

    def _feed(self, data):
        """Append bytes (for tests and for transports without get_buffer)."""
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len:
                self.reserve(view.len)
                memcpy(self.data + self.end, view.buf, <size_t>view.len)
                self.end += view.len
        finally:
            PyBuffer_Release(&view)


cdef class WriteBuffer:

    def __cinit__(self):
        # No storage until the first write (grow()): a connection's COPY OUT
        # buffer, for one, is never written to by most connections.
        self.data = NULL
        self.capacity = 0
        self.length = 0
        self.msg_start = -1

    def __dealloc__(self):
        PyMem_Free(self.data)
        self.data = NULL

    cdef int release(self) except -1:
        """Free the storage and drop what was written (the connection is closed)."""
        PyMem_Free(self.data)
        self.data = NULL
        self.capacity = 0
        self.length = 0
        self.msg_start = -1
        return 0

    cdef int grow(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t new_capacity
        cdef char *new_data
        new_capacity = self.capacity * 2
        if new_capacity < WRITE_BUFFER_INITIAL:
            new_capacity = WRITE_BUFFER_INITIAL
        while new_capacity < self.length + extra:
            new_capacity *= 2
        new_data = <char*>PyMem_Realloc(self.data, <size_t>new_capacity)
        if new_data == NULL:
            raise MemoryError
        self.data = new_data
        self.capacity = new_capacity
        return 0

    cdef int reset(self) except -1:
        self.length = 0
        self.msg_start = -1
        # A buffer that once held a huge COPY chunk or Bind should not pin
        # that memory for the life of the connection.
        if self.capacity > 1024 * 1024:
            self.release()
        return 0

    cdef int start_message(self, char mtype) except -1:
        self.ensure(5)
        self.data[self.length] = mtype
        self.msg_start = self.length + 1
        self.length += 5
        return 0

    cdef int end_message(self) except -1:
        cdef Py_ssize_t size = self.length - self.msg_start
        if self.msg_start < 0:
            raise ProtocolError('end_message() without start_message()')
        if size > 0x7fffffff:
            raise ProtocolError('message too large for the protocol (over 2 GB)')
        pack_uint32(self.data + self.msg_start, <uint32_t>size)
        self.msg_start = -1
        return 0

    cdef int write_bytes(self, bytes b) except -1:
        return self.write_raw(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))

    cdef int write_bytelike(self, object b) except -1:
        cdef Py_buffer view
        PyObject_GetBuffer(b, &view, PyBUF_SIMPLE)
        try:
            self.write_raw(<const char*>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return 0

    cdef int write_cstr(self, str s) except -1:
        cdef Py_ssize_t n
        cdef const char *p = PyUnicode_AsUTF8AndSize(s, &n)
        if memchr(p, 0, <size_t>n) != NULL:
            raise ValueError('string contains a NUL character')
        self.write_raw(p, n)
        return self.write_byte(0)

    cdef int write_cstr_bytes(self, bytes s) except -1:
        self.write_bytes(s)
        return self.write_byte(0)

    cdef int write_str_utf8(self, str s) except -1:
        cdef Py_ssize_t n
        cdef const char *p = PyUnicode_AsUTF8AndSize(s, &n)
        return self.write_raw(p, n)

    cdef bytes to_bytes(self):
        return PyBytes_FromStringAndSize(self.data, self.length)

    def getvalue(self):
        """The bytes written so far (for tests)."""
        return self.to_bytes()

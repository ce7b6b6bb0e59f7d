# Read and write buffers for the v3 protocol.
#
# Everything on the wire is big-endian.  The inline readers below work on a
# (pointer, remaining) cursor into the receive buffer, so codecs decode
# straight from the bytes the socket delivered, without slicing.

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef struct Frame:
    # A bounded view into received bytes: a message payload or one value.
    const char *ptr
    Py_ssize_t remaining


cdef inline uint16_t unpack_uint16(const char *p) noexcept nogil:
    return <uint16_t>((<uint8_t>p[0]) << 8 | (<uint8_t>p[1]))

cdef inline int16_t unpack_int16(const char *p) noexcept nogil:
    return <int16_t>unpack_uint16(p)

cdef inline uint32_t unpack_uint32(const char *p) noexcept nogil:
    return ((<uint32_t><uint8_t>p[0]) << 24 | (<uint32_t><uint8_t>p[1]) << 16 |
            (<uint32_t><uint8_t>p[2]) << 8 | (<uint32_t><uint8_t>p[3]))

cdef inline int32_t unpack_int32(const char *p) noexcept nogil:
    return <int32_t>unpack_uint32(p)

cdef inline uint64_t unpack_uint64(const char *p) noexcept nogil:
    return (<uint64_t>unpack_uint32(p) << 32) | <uint64_t>unpack_uint32(p + 4)

cdef inline int64_t unpack_int64(const char *p) noexcept nogil:
    return <int64_t>unpack_uint64(p)

cdef inline double unpack_double(const char *p) noexcept nogil:
    cdef uint64_t bits = unpack_uint64(p)
    cdef double v
    memcpy(&v, &bits, 8)
    return v

cdef inline float unpack_float(const char *p) noexcept nogil:
    cdef uint32_t bits = unpack_uint32(p)
    cdef float v
    memcpy(&v, &bits, 4)
    return v

cdef inline void pack_uint16(char *p, uint16_t v) noexcept nogil:
    p[0] = <char>(v >> 8)
    p[1] = <char>v

cdef inline void pack_uint32(char *p, uint32_t v) noexcept nogil:
    p[0] = <char>(v >> 24)
    p[1] = <char>(v >> 16)
    p[2] = <char>(v >> 8)
    p[3] = <char>v

cdef inline void pack_uint64(char *p, uint64_t v) noexcept nogil:
    pack_uint32(p, <uint32_t>(v >> 32))
    pack_uint32(p + 4, <uint32_t>v)


# Frame readers raise ProtocolError (via frame_underrun) instead of reading
# past the end: a malformed or hostile message must never crash the process.
cdef int frame_underrun(Py_ssize_t wanted, Py_ssize_t remaining) except -1

cdef inline const char* frame_read(Frame *f, Py_ssize_t n) except NULL:
    cdef const char *p = f.ptr
    # Compared as unsigned: a negative n (a length word of -2 or -2**31 read
    # from the wire) becomes huge and fails the same single check, instead
    # of moving the cursor backwards.  Callers handle -1 (NULL) first.
    if <size_t>n > <size_t>f.remaining:
        frame_underrun(n, f.remaining)
    f.ptr += n
    f.remaining -= n
    return p

cdef inline int16_t frame_read_int16(Frame *f) except? -1:
    return unpack_int16(frame_read(f, 2))

cdef inline int32_t frame_read_int32(Frame *f) except? -1:
    return unpack_int32(frame_read(f, 4))

cdef inline int64_t frame_read_int64(Frame *f) except? -1:
    return unpack_int64(frame_read(f, 8))

cdef inline uint8_t frame_read_byte(Frame *f) except? 255:
    return <uint8_t>frame_read(f, 1)[0]

# A NUL-terminated string inside the frame, decoded as UTF-8.
cdef str frame_read_cstr(Frame *f)
# Same, as bytes.
cdef bytes frame_read_cstr_bytes(Frame *f)


cdef enum:
    # ReadBuffer.shrink(): storage above this is given back after a huge message
    READ_BUFFER_KEEP = 1024 * 1024


cdef class ReadBuffer:
    # The receive buffer: bytes data_received could not parse yet are copied in,
    # or borrow() points it at a received bytes object; messages are parsed in place.
    cdef:
        char *data
        Py_ssize_t capacity
        Py_ssize_t start      # first unparsed byte
        Py_ssize_t end        # one past the last received byte
        Py_ssize_t needed     # bytes the next incomplete message needs in total: the
                              # length word's claim, so it decides how much of a read
                              # to copy, never how much storage to allocate

        char *own_data       # our storage while `data` points at borrowed bytes
        Py_ssize_t own_capacity
        bint borrowed        # between borrow() and unborrow()

    cdef int reserve(self, Py_ssize_t sizehint) except -1
    cdef int borrow(self, bytes chunk, Py_ssize_t offset) except -1
    cdef Py_ssize_t fill_pending(self, bytes chunk, Py_ssize_t offset) except -1
    cdef int unborrow(self) except -1
    cdef int release(self) except -1
    cdef int shrink(self) except -1
    cdef inline void advance_end(self, Py_ssize_t n) noexcept:
        self.end += n


cdef class WriteBuffer:
    # Growable output buffer; messages are framed with start_message() /
    # end_message(), which back-patches the length word.
    cdef:
        char *data
        Py_ssize_t capacity
        Py_ssize_t length
        Py_ssize_t msg_start

    cdef int reset(self) except -1
    cdef int release(self) except -1
    cdef int start_message(self, char mtype) except -1
    cdef int end_message(self) except -1
    cdef int write_bytes(self, bytes b) except -1
    cdef int write_bytelike(self, object b) except -1
    cdef int write_cstr(self, str s) except -1
    cdef int write_cstr_bytes(self, bytes s) except -1
    cdef int write_str_utf8(self, str s) except -1
    # Out of line: reallocate for `extra` more bytes.
    cdef int grow(self, Py_ssize_t extra) except -1

    # The per-value writers are inline: encoding a COPY record or a Bind
    # calls several per column, and a call each through the vtable measured
    # about a third of copy_records_to_table()'s instructions.
    cdef inline int ensure(self, Py_ssize_t extra) except -1:
        if self.length + extra <= self.capacity:
            return 0
        return self.grow(extra)

    cdef inline int write_byte(self, char b) except -1:
        self.ensure(1)
        self.data[self.length] = b
        self.length += 1
        return 0

    cdef inline int write_int16(self, int16_t v) except -1:
        self.ensure(2)
        pack_uint16(self.data + self.length, <uint16_t>v)
        self.length += 2
        return 0

    cdef inline int write_int32(self, int32_t v) except -1:
        self.ensure(4)
        pack_uint32(self.data + self.length, <uint32_t>v)
        self.length += 4
        return 0

    cdef inline int write_int64(self, int64_t v) except -1:
        self.ensure(8)
        pack_uint64(self.data + self.length, <uint64_t>v)
        self.length += 8
        return 0

    cdef inline int write_float(self, float v) except -1:
        cdef uint32_t bits
        memcpy(&bits, &v, 4)
        self.ensure(4)
        pack_uint32(self.data + self.length, bits)
        self.length += 4
        return 0

    cdef inline int write_double(self, double v) except -1:
        cdef uint64_t bits
        memcpy(&bits, &v, 8)
        self.ensure(8)
        pack_uint64(self.data + self.length, bits)
        self.length += 8
        return 0

    cdef inline int write_raw(self, const char *p, Py_ssize_t n) except -1:
        self.ensure(n)
        memcpy(self.data + self.length, p, <size_t>n)
        self.length += n
        return 0

    # Reserve a 4-byte length word; returns its offset for patch_length().
    cdef inline Py_ssize_t reserve_length(self) except -1:
        cdef Py_ssize_t offset = self.length
        self.ensure(4)
        self.length += 4
        return offset

    cdef inline void patch_length(self, Py_ssize_t offset, int32_t value) noexcept:
        pack_uint32(self.data + offset, <uint32_t>value)

    cdef bytes to_bytes(self)

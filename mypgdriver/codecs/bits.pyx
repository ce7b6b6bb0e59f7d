# cython: language_level=3
"""bit, varbit <-> mypgdriver.types.BitString.

Binary form (bit_send/bit_recv): int32 number of bits, then the bits packed
into ceil(bits / 8) bytes, first bit in the most significant position, the
unused low bits of the last byte zero.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, frame_read_int32
from mypgdriver.codecs.base cimport Codec, register_builtin, raise_encode_error, raise_decode_error

from mypgdriver.types import BitString


cdef object bits_decode(Codec codec, Frame *frame):
    cdef int32_t nbits = frame_read_int32(frame)
    cdef Py_ssize_t nbytes = frame.remaining
    if nbits < 0 or (<Py_ssize_t>nbits + 7) // 8 != nbytes:
        raise_decode_error(codec, f'{nbits} bits do not fill {nbytes} bytes')
    cdef object value = BitString.__new__(BitString)
    # The server zeroes the padding bits, so the bytes can be taken as they are.
    value._bytes = PyBytes_FromStringAndSize(frame_read(frame, nbytes), nbytes)
    value._bitlength = nbits
    return value


cdef int bits_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef object data
    cdef Py_ssize_t nbits = 0
    if isinstance(value, BitString):
        data = value.bytes
        nbits = len(value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        # Whole bytes, as asyncpg takes them: 8 bits each.
        data = bytes(value)
        nbits = PyBytes_GET_SIZE(data) * 8
    else:
        raise_encode_error(
            codec, value, f'expected BitString or bytes, got {type(value).__name__}')
    if nbits > 0x7FFFFFFF or (nbits + 7) // 8 != PyBytes_GET_SIZE(data):
        raise_encode_error(codec, value, 'bit string too long or malformed')
    buf.write_int32(<int32_t>nbits)
    return buf.write_raw(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


register_builtin(1560, 'bit', bits_decode, bits_encode)
register_builtin(1562, 'varbit', bits_decode, bits_encode)

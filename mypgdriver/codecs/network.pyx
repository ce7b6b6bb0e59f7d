# cython: language_level=3
"""inet, cidr <-> ipaddress objects; macaddr, macaddr8 <-> str.

Binary inet/cidr (network_send/network_recv in PostgreSQL's
utils/adt/network.c): family byte (2 = IPv4, 3 = IPv6: PostgreSQL's own
numbering, not the OS's AF_INET6), prefix length in bits, is_cidr flag,
address length in bytes, then the address in network byte order.

As asyncpg does: inet decodes to IPv4Address/IPv6Address when the prefix
covers the whole address (a plain host) and to IPv4Interface/IPv6Interface
otherwise; cidr decodes to IPv4Network/IPv6Network.

macaddr and macaddr8 travel as text, like asyncpg: the server's rendering
is already the canonical '08:00:2b:01:02:03', and sending text lets the
server accept every input spelling it knows.
"""

from cpython.long cimport PyLong_FromUnsignedLong, PyLong_AsUnsignedLongLongMask
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from mypgdriver.protocol.buffer cimport (
    Frame, WriteBuffer, frame_read, frame_read_byte, unpack_uint32, pack_uint32, pack_uint64)
from mypgdriver.codecs.base cimport (
    Codec, register_builtin, raise_encode_error, raise_decode_error, text_fallback_codec,
    FORMAT_TEXT)

import ipaddress


cdef extern from "Python.h":
    object _PyLong_FromByteArray(const unsigned char *data, size_t n,
                                 int little_endian, int is_signed)


cdef enum:
    PGSQL_AF_INET = 2
    PGSQL_AF_INET6 = 3


cdef object IPv4Address = ipaddress.IPv4Address
cdef object IPv6Address = ipaddress.IPv6Address
cdef object IPv4Interface = ipaddress.IPv4Interface
cdef object IPv6Interface = ipaddress.IPv6Interface
cdef object IPv4Network = ipaddress.IPv4Network
cdef object IPv6Network = ipaddress.IPv6Network
cdef object ip_address = ipaddress.ip_address
cdef object ip_interface = ipaddress.ip_interface
cdef object ip_network = ipaddress.ip_network
cdef tuple ADDRESS_TYPES = (IPv4Address, IPv6Address)
cdef tuple INTERFACE_TYPES = (IPv4Interface, IPv6Interface)
cdef tuple NETWORK_TYPES = (IPv4Network, IPv6Network)


cdef object net_decode(Codec codec, Frame *frame, bint as_cidr):
    cdef uint8_t family = frame_read_byte(frame)
    cdef uint8_t bits = frame_read_byte(frame)
    frame_read_byte(frame)      # is_cidr: the type already says which
    cdef uint8_t nbytes = frame_read_byte(frame)
    cdef const char *p
    cdef object addr
    if family == PGSQL_AF_INET and nbytes == 4 and bits <= 32:
        addr = PyLong_FromUnsignedLong(unpack_uint32(frame_read(frame, 4)))
        if as_cidr:
            return IPv4Network((addr, bits))
        if bits == 32:
            return IPv4Address(addr)
        return IPv4Interface((addr, bits))
    if family == PGSQL_AF_INET6 and nbytes == 16 and bits <= 128:
        addr = _PyLong_FromByteArray(<const unsigned char *>frame_read(frame, 16), 16, 0, 0)
        if as_cidr:
            return IPv6Network((addr, bits))
        if bits == 128:
            return IPv6Address(addr)
        return IPv6Interface((addr, bits))
    raise_decode_error(
        codec, f'bad address: family {family}, {bits} bits, {nbytes} bytes')


cdef int write_net(WriteBuffer buf, object address, int prefixlen, bint is_cidr) except -1:
    # `address` is an IPv4Address/IPv6Address (or an interface, its subclass).
    cdef char data[20]
    cdef object as_int = int(address)
    data[2] = <char>is_cidr
    data[1] = <char>prefixlen
    if address.version == 4:
        data[0] = PGSQL_AF_INET
        data[3] = 4
        pack_uint32(data + 4, <uint32_t>PyLong_AsUnsignedLongLongMask(as_int))
        return buf.write_raw(data, 8)
    data[0] = PGSQL_AF_INET6
    data[3] = 16
    pack_uint64(data + 4, <uint64_t>PyLong_AsUnsignedLongLongMask(as_int >> 64))
    pack_uint64(data + 12, <uint64_t>PyLong_AsUnsignedLongLongMask(as_int))
    return buf.write_raw(data, 20)


cdef object inet_decode(Codec codec, Frame *frame):
    return net_decode(codec, frame, False)


cdef int inet_encode(Codec codec, WriteBuffer buf, object value) except -1:
    # Interfaces are addresses too (a subclass), so test them first.
    if isinstance(value, INTERFACE_TYPES):
        return write_net(buf, value, value.network.prefixlen, False)
    if isinstance(value, ADDRESS_TYPES):
        return write_net(buf, value, value.max_prefixlen, False)
    if isinstance(value, NETWORK_TYPES):
        return write_net(buf, value.network_address, value.prefixlen, False)
    if isinstance(value, bool) or not isinstance(value, (str, int, bytes)):
        raise_encode_error(
            codec, value,
            f'expected an ipaddress address, interface or network, or str, '
            f'got {type(value).__name__}')
    # What asyncpg takes: anything ip_address() accepts is a host, anything
    # else ip_interface() accepts is an address with a prefix.
    try:
        address = ip_address(value)
    except ValueError:
        try:
            address = ip_interface(value)
        except ValueError as e:
            raise_encode_error(codec, value, str(e))
        return write_net(buf, address, address.network.prefixlen, False)
    return write_net(buf, address, address.max_prefixlen, False)


cdef object cidr_decode(Codec codec, Frame *frame):
    return net_decode(codec, frame, True)


cdef int cidr_encode(Codec codec, WriteBuffer buf, object value) except -1:
    if not isinstance(value, NETWORK_TYPES):
        if isinstance(value, bool) or not isinstance(value, (str, int, bytes) + ADDRESS_TYPES):
            raise_encode_error(
                codec, value,
                f'expected an ipaddress network or str, got {type(value).__name__}')
        try:
            # strict: a cidr value cannot have bits set right of the prefix,
            # which the server would refuse anyway.
            value = ip_network(value)
        except (ValueError, TypeError) as e:
            raise_encode_error(codec, value, str(e))
    return write_net(buf, value.network_address, value.prefixlen, True)


register_builtin(869, 'inet', inet_decode, inet_encode)
register_builtin(650, 'cidr', cidr_decode, cidr_encode)

cdef Codec _as_text = text_fallback_codec(0, 'text')
register_builtin(829, 'macaddr', _as_text.c_decode, _as_text.c_encode, FORMAT_TEXT)
register_builtin(774, 'macaddr8', _as_text.c_decode, _as_text.c_encode, FORMAT_TEXT)

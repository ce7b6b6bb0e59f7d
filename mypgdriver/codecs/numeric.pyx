# cython: language_level=3, cdivision=True
"""numeric <-> decimal.Decimal, exact at any precision and scale.

Wire format (PostgreSQL's numeric_send/numeric_recv): four 16-bit words
ndigits, weight, sign, dscale, then ndigits base-10000 digits, most
significant first.  The value is sum(digit[i] * 10000 ** (weight - i)) and
dscale is the number of decimal digits shown after the point, which is what
keeps '1.500' distinct from '1.5'.

A decoded Decimal always has exponent -dscale, so it prints exactly like the
server's own text rendering: numeric 10000 becomes Decimal('10000'), not
Decimal('1E+4') (asyncpg returns the latter; the two compare equal).

Arguments may be Decimal, int, float or, as asyncpg takes them, str: text
is read by decimal.Decimal, so '0.001' keeps its scale.
"""

from cpython.long cimport PyLong_AsLong
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport int16_t, int64_t, uint16_t, uint64_t
from libc.stdio cimport snprintf
from mypgdriver.protocol.buffer cimport Frame, WriteBuffer, frame_read, unpack_uint16, unpack_int16
from mypgdriver.codecs.base cimport Codec, register_builtin, raise_encode_error, raise_decode_error

from decimal import Context, Decimal, InvalidOperation


cdef enum:
    # Sign words.  The three special values carry no digits.
    NUMERIC_POS = 0x0000
    NUMERIC_NEG = 0x4000
    NUMERIC_NAN = 0xC000
    NUMERIC_PINF = 0xD000   # PostgreSQL 14+
    NUMERIC_NINF = 0xF000   # PostgreSQL 14+
    # Limits of the on-disk format: dscale has 14 bits; weight is an int16,
    # so at most 4 * 32768 = 131072 digits before the point.
    NUMERIC_MAX_DSCALE = 0x3FFF
    NUMERIC_MAX_WEIGHT = 32767
    # Stack buffers cover values of up to ~60 decimal digits; longer ones
    # (rare) use the heap.
    SMALL_DIGIT_GROUPS = 16
    SMALL_TEXT = 128
    ASCII_ZERO = 48


cdef object DECIMAL_NAN = Decimal('NaN')
cdef object DECIMAL_INF = Decimal('Infinity')
cdef object DECIMAL_NEG_INF = Decimal('-Infinity')


cdef inline int64_t floor_div4(int64_t v) noexcept:
    """v // 4 rounded down (C division truncates toward zero)."""
    return v // 4 - (1 if v % 4 < 0 else 0)


# --- decoding -----------------------------------------------------------------

cdef object numeric_decode(Codec codec, Frame *frame):
    cdef const char *head = frame_read(frame, 8)
    cdef Py_ssize_t ndigits = unpack_uint16(head)
    cdef int64_t weight = unpack_int16(head + 2)
    cdef uint16_t sign = unpack_uint16(head + 4)
    cdef int64_t dscale = unpack_uint16(head + 6)
    cdef const char *digits
    cdef int64_t last_exp, exponent, pad, drop
    cdef Py_ssize_t size, i, n
    cdef int digit
    cdef char small[SMALL_TEXT]
    cdef char *text
    cdef char *p

    if frame.remaining != ndigits * 2:
        raise_decode_error(
            codec, f'{ndigits} digits announced, {frame.remaining} bytes follow')
    digits = frame_read(frame, ndigits * 2)
    if sign == NUMERIC_NAN:
        return DECIMAL_NAN
    if sign == NUMERIC_PINF:
        return DECIMAL_INF
    if sign == NUMERIC_NINF:
        return DECIMAL_NEG_INF
    if sign != NUMERIC_POS and sign != NUMERIC_NEG:
        raise_decode_error(codec, f'invalid sign word 0x{sign:04X}')

    # Render '[-]<digits>E<exponent>' with exponent == -dscale, and let
    # Decimal's C parser build the value: one string and one Decimal per value.
    # The digit string's last character stands for 10 ** last_exp.
    last_exp = 4 * (weight + 1 - ndigits) if ndigits else -dscale
    pad = 0
    if last_exp > -dscale:
        pad = last_exp + dscale         # zeros the base-10000 digits leave implicit
    size = 1 + 4 * ndigits + pad + 1 + 24
    if size <= SMALL_TEXT:
        text = small
    else:
        text = <char *>PyMem_Malloc(size)
        if text == NULL:
            raise MemoryError()
    try:
        p = text
        if sign == NUMERIC_NEG:
            p[0] = b'-'
            p += 1
        if ndigits == 0:
            p[0] = b'0'
            p += 1
        for i in range(ndigits):
            digit = unpack_int16(digits + 2 * i)
            if digit < 0 or digit > 9999:
                raise_decode_error(codec, f'digit {digit} out of range')
            p[0] = <char>(ASCII_ZERO + digit // 1000)
            p[1] = <char>(ASCII_ZERO + digit // 100 % 10)
            p[2] = <char>(ASCII_ZERO + digit // 10 % 10)
            p[3] = <char>(ASCII_ZERO + digit % 10)
            p += 4
        exponent = last_exp
        if pad:
            for i in range(pad):
                p[i] = b'0'
            p += pad
            exponent = -dscale
        elif last_exp < -dscale:
            # The server sends whole base-10000 digits, so a value with
            # dscale 3 arrives with four fraction digits: drop the surplus
            # zeros (only zeros: never lose a digit of a malformed value).
            drop = -dscale - last_exp
            n = 0
            while n < drop and n < 4 * ndigits - 1 and p[-1 - n] == b'0':
                n += 1
            p -= n
            exponent += n
        n = p - text
        n += snprintf(p, 24, 'E%lld', <long long>exponent)
        return Decimal(PyUnicode_DecodeASCII(text, n, NULL))
    finally:
        if text != small:
            PyMem_Free(text)


# --- encoding -----------------------------------------------------------------

cdef int write_numeric(WriteBuffer buf, const int16_t *groups, Py_ssize_t ngroups,
                       int64_t weight, uint16_t sign, int64_t dscale) except -1:
    cdef Py_ssize_t i
    # The server strips trailing zero digits itself; sending them trimmed
    # keeps the message short (e.g. Decimal('1.0000000000') is one digit).
    while ngroups > 0 and groups[ngroups - 1] == 0:
        ngroups -= 1
    if ngroups == 0:
        # Zero has no digits and is positive (PostgreSQL has no -0).
        weight = 0
        sign = NUMERIC_POS
    buf.write_int16(<int16_t>ngroups)
    buf.write_int16(<int16_t>weight)
    buf.write_int16(<int16_t>sign)
    buf.write_int16(<int16_t>dscale)
    for i in range(ngroups):
        buf.write_int16(groups[i])
    return 0


cdef int write_special(WriteBuffer buf, uint16_t sign) except -1:
    buf.write_int16(0)
    buf.write_int16(0)
    buf.write_int16(<int16_t>sign)
    buf.write_int16(0)
    return 0


cdef int encode_int64(WriteBuffer buf, int64_t v) except -1:
    # Integers are the common non-Decimal argument: split them into base-10000
    # digits directly instead of going through Decimal.
    cdef int16_t rev[5]
    cdef int16_t groups[5]
    cdef Py_ssize_t n = 0, i
    cdef uint16_t sign = NUMERIC_POS
    cdef uint64_t u
    if v < 0:
        sign = NUMERIC_NEG
        u = <uint64_t>(-(v + 1)) + 1    # |INT64_MIN| without overflow
    else:
        u = <uint64_t>v
    while u:
        rev[n] = <int16_t>(u % 10000)
        u //= 10000
        n += 1
    for i in range(n):
        groups[i] = rev[n - 1 - i]
    return write_numeric(buf, groups, n, n - 1, sign, 0)


cdef int encode_decimal(Codec codec, WriteBuffer buf, object value) except -1:
    cdef object t = value.as_tuple()
    cdef object exp_obj = t[2]
    cdef tuple digits
    cdef Py_ssize_t ndec, first, i, ngroups, capacity
    cdef int64_t exponent, p_hi, weight, dscale
    cdef int pos
    cdef long d
    cdef int16_t acc
    cdef int16_t small[SMALL_DIGIT_GROUPS]
    cdef int16_t *groups

    if type(exp_obj) is str:
        if exp_obj == 'n':
            return write_special(buf, NUMERIC_NAN)
        if exp_obj == 'N':
            raise_encode_error(
                codec, value, 'a signaling NaN (sNaN) cannot be stored; use Decimal("NaN")')
        # Infinity exists in numeric since PostgreSQL 14; older servers
        # reject it with their own error.
        return write_special(buf, NUMERIC_NINF if t[0] else NUMERIC_PINF)

    exponent = exp_obj
    digits = t[1]
    ndec = PyTuple_GET_SIZE(digits)
    dscale = -exponent if exponent < 0 else 0
    if dscale > NUMERIC_MAX_DSCALE:
        raise_encode_error(
            codec, value,
            f'{dscale} digits after the decimal point, numeric allows at most '
            f'{NUMERIC_MAX_DSCALE}')
    first = 0
    while first < ndec - 1 and PyLong_AsLong(<object>PyTuple_GET_ITEM(digits, first)) == 0:
        first += 1
    if PyLong_AsLong(<object>PyTuple_GET_ITEM(digits, first)) == 0:
        # Zero, whatever its exponent (Decimal('0E+1000000') is still 0).
        return write_numeric(buf, NULL, 0, 0, NUMERIC_POS, dscale)
    # p_hi: the power of ten of the most significant decimal digit.
    p_hi = exponent + (ndec - first) - 1
    weight = floor_div4(p_hi)
    if weight > NUMERIC_MAX_WEIGHT:
        raise_encode_error(
            codec, value, 'value too large for numeric (at most 131072 digits '
            'before the decimal point)')

    capacity = (ndec - first) // 4 + 2
    if capacity <= SMALL_DIGIT_GROUPS:
        groups = small
    else:
        groups = <int16_t *>PyMem_Malloc(capacity * sizeof(int16_t))
        if groups == NULL:
            raise MemoryError()
    try:
        # Pack the decimal digits four at a time, aligned so that group k
        # covers powers 4k..4k+3; pos is the power of ten of the next digit
        # inside its group.
        ngroups = 0
        acc = 0
        pos = <int>(p_hi - 4 * weight)
        for i in range(first, ndec):
            d = PyLong_AsLong(<object>PyTuple_GET_ITEM(digits, i))
            acc = <int16_t>(acc * 10 + d)
            pos -= 1
            if pos < 0:
                groups[ngroups] = acc
                ngroups += 1
                acc = 0
                pos = 3
        if pos != 3:
            while pos >= 0:     # the group's lower powers are implicit zeros
                acc *= 10
                pos -= 1
            groups[ngroups] = acc
            ngroups += 1
        return write_numeric(buf, groups, ngroups, weight,
                             NUMERIC_NEG if t[0] else NUMERIC_POS, dscale)
    finally:
        if groups != small:
            PyMem_Free(groups)


# Parsing strings must raise on bad input whatever the caller's decimal
# context says: with InvalidOperation untrapped, Decimal('abc') would be NaN.
# The context is only consulted for that signal; the value is never rounded.
_STRICT_CONTEXT = Context(traps=[InvalidOperation])


cdef object parse_decimal_str(Codec codec, object value):
    """A numeric argument given as text ('0.001', 'NaN', '-Infinity'), scale kept.

    What decimal.Decimal() reads, as in asyncpg: surrounding whitespace,
    exponents, underscores between digits and 'inf'/'nan' in any case.
    """
    try:
        return Decimal(value, _STRICT_CONTEXT)
    except InvalidOperation:
        pass
    raise_encode_error(
        codec, value, 'not a valid number (expected text such as "1.50", "-2e-3", '
        '"NaN" or "Infinity")')


cdef int numeric_encode(Codec codec, WriteBuffer buf, object value) except -1:
    cdef int64_t small_int
    if isinstance(value, Decimal):
        return encode_decimal(codec, buf, value)
    if isinstance(value, int):
        try:
            small_int = value
        except OverflowError:
            return encode_decimal(codec, buf, Decimal(value))
        return encode_int64(buf, small_int)
    if isinstance(value, float):
        # The float's exact binary value, as asyncpg sends it:
        # 0.1 -> 0.1000000000000000055511151231257827021181583404541015625.
        # Pass Decimal(repr(f)) for the shortest decimal that reads back as f.
        return encode_decimal(codec, buf, Decimal(value))
    if isinstance(value, str):
        return encode_decimal(codec, buf, parse_decimal_str(codec, value))
    if isinstance(value, (bytes, bytearray)):
        raise_encode_error(
            codec, value,
            f'expected Decimal, int, float or str, got {type(value).__name__}')
    if hasattr(type(value), '__index__'):
        # Integer-like objects such as numpy.int64.
        return numeric_encode(codec, buf, value.__index__())
    raise_encode_error(
        codec, value, f'expected Decimal, int, float or str, got {type(value).__name__}')


register_builtin(1700, 'numeric', numeric_decode, numeric_encode)

"""Python types for PostgreSQL values that have no natural standard-library type.

Names, constructor signatures and behaviour follow ``asyncpg.types``, so that
an application moving from asyncpg only changes its import:

* `Range` -- every range type (and the elements of multiranges);
* `BitString` -- ``bit`` and ``varbit``;
* `Point`, `Box`, `Line`, `LineSegment`, `Path`, `Polygon`, `Circle` --
  the geometric types;
* `Type`, `Attribute` -- descriptions of parameters and result columns;
* `ServerVersion` -- what `Connection.get_server_version()` returns;
* `JsonCodec` -- the loads and dumps functions of ``connect(json=...)``
  (a mypgdriver addition).

All values are immutable and hashable.
"""
from __future__ import annotations

import dataclasses
import json as _json
import typing
from typing import Any

from mypgdriver.server_info import ServerVersion

__all__ = (
    'Type', 'Attribute', 'Range', 'BitString', 'Point', 'Path', 'Polygon',
    'Box', 'Line', 'LineSegment', 'Circle', 'ServerVersion', 'JsonCodec',
)


class Type(typing.NamedTuple):
    """A database data type."""

    oid: int
    """OID of the type."""
    name: str
    """Type name, for example ``'int2'``."""
    kind: str
    """``'scalar'``, ``'array'``, ``'composite'``, ``'range'``, ..."""
    schema: str
    """Name of the schema that defines the type."""


class Attribute(typing.NamedTuple):
    """A column of a result (or a field of a composite type)."""

    name: str
    type: Type


# --- Range -------------------------------------------------------------------

_T = typing.TypeVar('_T')


class Range(typing.Generic[_T]):
    """A value of a PostgreSQL range type, e.g. ``int4range`` or ``tstzrange``.

    ``Range(1, 5)`` is ``[1,5)``; a bound of ``None`` is unbounded (and then
    never inclusive, as in PostgreSQL); ``Range(empty=True)`` is the empty range.
    Bounds are kept as given: the server canonicalises discrete ranges, so
    ``Range(1, 5, upper_inc=True)`` comes back as ``Range(1, 6)``.
    """

    __slots__ = ('_lower', '_upper', '_lower_inc', '_upper_inc', '_empty')

    def __init__(self, lower: _T | None = None, upper: _T | None = None, *,
                 lower_inc: bool = True, upper_inc: bool = False,
                 empty: bool = False) -> None:
        self._empty = bool(empty)
        if empty:
            self._lower = self._upper = None
            self._lower_inc = self._upper_inc = False
        else:
            self._lower = lower
            self._upper = upper
            self._lower_inc = lower is not None and bool(lower_inc)
            self._upper_inc = upper is not None and bool(upper_inc)

    @property
    def lower(self) -> _T | None:
        """The lower bound, or None if unbounded (or empty)."""
        return self._lower

    @property
    def upper(self) -> _T | None:
        """The upper bound, or None if unbounded (or empty)."""
        return self._upper

    @property
    def lower_inc(self) -> bool:
        """Whether the lower bound is part of the range."""
        return self._lower_inc

    @property
    def upper_inc(self) -> bool:
        """Whether the upper bound is part of the range."""
        return self._upper_inc

    @property
    def lower_inf(self) -> bool:
        """True when the range has no lower bound."""
        return self._lower is None and not self._empty

    @property
    def upper_inf(self) -> bool:
        """True when the range has no upper bound."""
        return self._upper is None and not self._empty

    @property
    def isempty(self) -> bool:
        """True for the empty range."""
        return self._empty

    def _lower_within(self, other: Range[_T]) -> bool:
        if other._lower is None:
            return True
        if self._lower is None:
            return False
        if self._lower == other._lower:
            return other._lower_inc or not self._lower_inc
        return self._lower > other._lower  # type: ignore[operator]

    def _upper_within(self, other: Range[_T]) -> bool:
        if other._upper is None:
            return True
        if self._upper is None:
            return False
        if self._upper == other._upper:
            return other._upper_inc or not self._upper_inc
        return self._upper < other._upper  # type: ignore[operator]

    def issubset(self, other: Range[_T]) -> bool:
        """True if every value in this range is also in `other`.

        Compares the bounds as given, without the server's canonicalisation
        of discrete ranges.
        """
        if self._empty:
            return True
        if other._empty:
            return False
        return self._lower_within(other) and self._upper_within(other)

    def issuperset(self, other: Range[_T]) -> bool:
        """True if every value in `other` is also in this range."""
        return other.issubset(self)

    def _key(self) -> tuple[Any, ...]:
        return (self._lower, self._upper, self._lower_inc, self._upper_inc, self._empty)

    def __bool__(self) -> bool:
        return not self._empty

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Range):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self._empty:
            return '<Range empty>'
        lower = '' if self._lower is None else repr(self._lower)
        upper = '' if self._upper is None else repr(self._upper)
        return (f'<Range {"[" if self._lower_inc else "("}{lower}, '
                f'{upper}{"]" if self._upper_inc else ")"}>')

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_range, self._key())


def _make_range(lower: Any, upper: Any, lower_inc: bool, upper_inc: bool,
                empty: bool) -> Range[Any]:
    return Range(lower, upper, lower_inc=lower_inc, upper_inc=upper_inc, empty=empty)


# --- BitString ---------------------------------------------------------------

_BitOrder = typing.Literal['big', 'little']


def _reverse_bits(x: int, length: int) -> int:
    return int(format(x, f'0{length}b')[::-1], 2) if length else 0


class BitString:
    """A value of type ``bit(n)`` or ``varbit``: a sequence of bits.

    ``BitString('1010 1')`` (spaces are ignored), or
    ``BitString.frombytes(b'\\xa8', 5)`` from bytes holding the bits from the
    most significant bit of the first byte on.
    """

    __slots__ = ('_bytes', '_bitlength')

    def __init__(self, bitstring: str | None = None) -> None:
        if not bitstring:
            self._bytes = b''
            self._bitlength = 0
            return
        if not isinstance(bitstring, str):
            raise TypeError(f'BitString() expects a str of 0s and 1s, '
                            f'got {type(bitstring).__name__}')
        # Spaces only, as in asyncpg: other whitespace is an invalid bit.
        digits = bitstring.replace(' ', '')
        if digits.strip('01'):
            bad = next(i for i, ch in enumerate(bitstring) if ch not in '01 ')
            raise ValueError(f'invalid bit value at position {bad}')
        n = len(digits)
        if n == 0:
            # Only spaces: no bits (int('', 2) below would refuse it).
            self._bytes = b''
            self._bitlength = 0
            return
        # Left-align the bits in whole bytes: PostgreSQL's layout.
        value = int(digits, 2) << (-n % 8)
        self._bytes = value.to_bytes((n + 7) // 8, 'big')
        self._bitlength = n

    @classmethod
    def frombytes(cls, bytes_: bytes | None = None,
                  bitlength: int | None = None) -> BitString:
        """A BitString of the first `bitlength` bits of `bytes_` (all of them by default).

        `bytes_` must hold exactly ``ceil(bitlength / 8)`` bytes; bits after
        `bitlength` in the last byte are ignored. ``frombytes(None, n)`` is
        n zero bits.
        """
        if bytes_ is None:
            bitlength = bitlength or 0
            data = bytes((bitlength + 7) // 8)
        else:
            data = bytes(bytes_)
            if bitlength is None:
                bitlength = len(data) * 8
            elif bitlength < 0 or (bitlength + 7) // 8 != len(data):
                raise ValueError(
                    f'invalid bit length specified: {bitlength} bits do not fit '
                    f'exactly in {len(data)} bytes')
            pad = -bitlength % 8
            if pad and data[-1] & ((1 << pad) - 1):
                # Clear the padding so equal bit strings compare equal.
                data = data[:-1] + bytes((data[-1] & (0xFF << pad) & 0xFF,))
        self = cls.__new__(cls)
        self._bytes = data
        self._bitlength = bitlength
        return self

    @property
    def bytes(self) -> bytes:
        """The bits packed into bytes, most significant bit first, zero padded."""
        return self._bytes

    def as_string(self) -> str:
        """The bits as '0'/'1' characters in groups of four: ``'1010 1'``."""
        n = self._bitlength
        if n == 0:
            return ''
        bits = format(int.from_bytes(self._bytes, 'big') >> (-n % 8), f'0{n}b')
        return ' '.join(bits[i:i + 4] for i in range(0, n, 4))

    def to_int(self, bitorder: _BitOrder = 'big', *, signed: bool = False) -> int:
        """The bits read as an integer, like PostgreSQL's ``bit::int`` cast.

        With ``bitorder='little'`` the last bit is the most significant one;
        with ``signed=True`` the bits are a two's complement number.
        """
        n = self._bitlength
        x = int.from_bytes(self._bytes, 'big') >> (-n % 8)
        if bitorder == 'little':
            x = _reverse_bits(x, n)
        elif bitorder != 'big':
            raise ValueError("bitorder must be either 'big' or 'little'")
        if signed and n and x >> (n - 1):
            x -= 1 << n
        return x

    @classmethod
    def from_int(cls, x: int, length: int, bitorder: _BitOrder = 'big', *,
                 signed: bool = False) -> BitString:
        """`x` as a BitString of `length` bits (the inverse of `to_int`).

        Raises OverflowError if `x` does not fit, or is negative and not `signed`.
        """
        if length < 0:
            raise ValueError('length argument must be non-negative')
        # As lenient as asyncpg: any x whose magnitude fits in `length` bits.
        if x.bit_length() > length:
            raise OverflowError('int too big to convert')
        if x < 0:
            if not signed:
                raise OverflowError("can't convert negative int to unsigned")
            x &= (1 << length) - 1
        if bitorder == 'little':
            x = _reverse_bits(x, length)
        elif bitorder != 'big':
            raise ValueError("bitorder must be either 'big' or 'little'")
        return cls.frombytes((x << (-length % 8)).to_bytes((length + 7) // 8, 'big'), length)

    def _bit(self, i: int) -> int:
        return (self._bytes[i >> 3] >> (7 - (i & 7))) & 1

    @typing.overload
    def __getitem__(self, i: int) -> int: ...

    @typing.overload
    def __getitem__(self, i: slice) -> BitString: ...

    def __getitem__(self, i: int | slice) -> int | BitString:
        if isinstance(i, slice):
            return BitString(''.join(
                '01'[self._bit(k)] for k in range(*i.indices(self._bitlength))))
        if i < 0:
            i += self._bitlength
        if not 0 <= i < self._bitlength:
            raise IndexError('BitString index out of range')
        return self._bit(i)

    def __len__(self) -> int:
        return self._bitlength

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BitString):
            return NotImplemented
        return self._bitlength == other._bitlength and self._bytes == other._bytes

    def __hash__(self) -> int:
        return hash((self._bytes, self._bitlength))

    def __repr__(self) -> str:
        return f'<BitString {self.as_string()}>'

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (BitString.frombytes, (self._bytes, self._bitlength))


# --- geometry ----------------------------------------------------------------

class Point(tuple[float, float]):
    """A ``point``: ``(x, y)`` as floats."""

    __slots__ = ()

    def __new__(cls, x: typing.SupportsFloat | str, y: typing.SupportsFloat | str) -> Point:
        return tuple.__new__(cls, (float(x), float(y)))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @property
    def x(self) -> float:
        return self[0]

    @property
    def y(self) -> float:
        return self[1]

    def __repr__(self) -> str:
        return f'Point({self[0]!r}, {self[1]!r})'


def _as_point(p: typing.Sequence[float]) -> Point:
    return p if type(p) is Point else Point(*p)


class Box(tuple[Point, Point]):
    """A ``box``: two opposite corners, ``high`` and ``low``.

    The server stores the upper-right corner as `high` and the lower-left one
    as `low` whatever order they were sent in, so a box comes back normalised.
    """

    __slots__ = ()

    def __new__(cls, high: typing.Sequence[float], low: typing.Sequence[float]) -> Box:
        return tuple.__new__(cls, (_as_point(high), _as_point(low)))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @property
    def high(self) -> Point:
        return self[0]

    @property
    def low(self) -> Point:
        return self[1]

    def __repr__(self) -> str:
        return f'Box({self[0]!r}, {self[1]!r})'


class Line(tuple[float, float, float]):
    """A ``line``: the infinite line ``A*x + B*y + C = 0``."""

    __slots__ = ()

    def __new__(cls, A: float, B: float, C: float) -> Line:
        return tuple.__new__(cls, (float(A), float(B), float(C)))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @property
    def A(self) -> float:
        return self[0]

    @property
    def B(self) -> float:
        return self[1]

    @property
    def C(self) -> float:
        return self[2]

    def __repr__(self) -> str:
        return f'Line({self[0]!r}, {self[1]!r}, {self[2]!r})'


class LineSegment(tuple[Point, Point]):
    """An ``lseg``: the segment from `p1` to `p2`."""

    __slots__ = ()

    def __new__(cls, p1: typing.Sequence[float], p2: typing.Sequence[float]) -> LineSegment:
        return tuple.__new__(cls, (_as_point(p1), _as_point(p2)))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @property
    def p1(self) -> Point:
        return self[0]

    @property
    def p2(self) -> Point:
        return self[1]

    def __repr__(self) -> str:
        return f'LineSegment({self[0]!r}, {self[1]!r})'


class Path:
    """A ``path``: points joined by segments, open or closed."""

    __slots__ = ('_points', '_is_closed')

    def __init__(self, *points: typing.Sequence[float], is_closed: bool = False) -> None:
        self._points = tuple([_as_point(p) for p in points])
        self._is_closed = bool(is_closed)

    @property
    def points(self) -> tuple[Point, ...]:
        """The points, in order."""
        return self._points

    @property
    def is_closed(self) -> bool:
        """Whether the last point connects back to the first."""
        return self._is_closed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Path):
            return NotImplemented
        return self._points == other._points and self._is_closed == other._is_closed

    def __hash__(self) -> int:
        return hash((self._points, self._is_closed))

    def __iter__(self) -> typing.Iterator[Point]:
        return iter(self._points)

    def __len__(self) -> int:
        return len(self._points)

    @typing.overload
    def __getitem__(self, i: int) -> Point: ...

    @typing.overload
    def __getitem__(self, i: slice) -> tuple[Point, ...]: ...

    def __getitem__(self, i: int | slice) -> Point | tuple[Point, ...]:
        return self._points[i]

    def __contains__(self, point: object) -> bool:
        return point in self._points

    def __repr__(self) -> str:
        points = ', '.join(map(repr, self._points))
        return f'Path({points}{", " if points else ""}is_closed={self._is_closed})'

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_path, (self._points, self._is_closed))


def _make_path(points: typing.Iterable[typing.Sequence[float]], is_closed: bool) -> Path:
    return Path(*points, is_closed=is_closed)


class Polygon(Path):
    """A ``polygon``: a closed path enclosing an area."""

    __slots__ = ()

    def __init__(self, *points: typing.Sequence[float]) -> None:
        super().__init__(*points, is_closed=True)

    def __repr__(self) -> str:
        return f'Polygon({", ".join(map(repr, self._points))})'

    def __reduce__(self) -> tuple[Any, ...]:
        return (Polygon, self._points)


class Circle(tuple[Point, float]):
    """A ``circle``: `center` point and `radius`."""

    __slots__ = ()

    def __new__(cls, center: typing.Sequence[float], radius: float) -> Circle:
        return tuple.__new__(cls, (_as_point(center), float(radius)))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @property
    def center(self) -> Point:
        return self[0]

    @property
    def radius(self) -> float:
        return self[1]

    def __repr__(self) -> str:
        return f'Circle({self[0]!r}, {self[1]!r})'


# --- JSON ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class JsonCodec:
    """How a connection opened with ``json=`` decodes and encodes ``json`` and ``jsonb``.

    ``connect(json=True)`` is ``connect(json=JsonCodec())``: the standard
    library's :func:`json.loads` and :func:`json.dumps`.  With another
    library::

        import orjson
        conn = await mypgdriver.connect(
            dsn, json=JsonCodec(loads=orjson.loads, dumps=orjson.dumps, loads_bytes=True))

    * `loads` is called with each value's JSON text and returns the Python
      object that the result holds.
    * `dumps` is called with each argument that is not already JSON text (a
      :class:`str` or :class:`bytes` is sent as it is) and returns the JSON
      text, as :class:`str` or as UTF-8 :class:`bytes` (orjson's).
    * `loads_bytes`: hand `loads` the text as :class:`bytes` (UTF-8) instead
      of :class:`str`, which saves decoding it for libraries that parse
      bytes themselves (orjson, msgspec).

    With the standard library's own :func:`json.loads` and
    :func:`json.dumps` (the defaults), the driver calls the C scanner and
    encoder behind them directly (same settings, same results, without
    their Python layers; `loads_bytes` does not matter then).  Wrap them
    (``functools.partial(json.loads, parse_float=Decimal)``) to have them
    called as they are.

    An exception raised by `dumps` fails the call with
    :exc:`~mypgdriver.exceptions.DataError` naming the argument; one raised
    by `loads` is raised by the call as it is, and the connection stays
    usable.
    """

    loads: typing.Callable[[Any], Any] = _json.loads
    dumps: typing.Callable[[Any], typing.Union[str, bytes]] = _json.dumps
    loads_bytes: bool = False

    def __post_init__(self) -> None:
        if not callable(self.loads):
            raise TypeError(f'JsonCodec: loads must be callable, got {self.loads!r}')
        if not callable(self.dumps):
            raise TypeError(f'JsonCodec: dumps must be callable, got {self.dumps!r}')

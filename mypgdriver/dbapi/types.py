"""PEP 249's type objects and constructors.

A type object compares equal to the type OIDs of its family, so
``cursor.description[0].type_code == NUMBER`` holds for an ``int4`` column.
The constructors are the Python types the driver already sends and
returns: ``Date(2024, 1, 31)`` is a :class:`datetime.date`, ``Binary(b'..')``
is :class:`bytes`.
"""
from __future__ import annotations

import datetime
from typing import Final

__all__ = ('DBAPITypeObject', 'STRING', 'BINARY', 'NUMBER', 'DATETIME', 'ROWID',
           'Date', 'Time', 'Timestamp', 'DateFromTicks', 'TimeFromTicks',
           'TimestampFromTicks', 'Binary')


class DBAPITypeObject:
    """A family of PostgreSQL types: equal to the OID of each of them (PEP 249)."""

    __slots__ = ('name', 'values')

    def __init__(self, name: str, oids: tuple[int, ...]) -> None:
        self.name = name
        self.values = frozenset(oids)

    def __repr__(self) -> str:
        return f'<DBAPITypeObject {self.name}>'

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return other in self.values
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.name)


# pg_type OIDs (fixed for the built-in types).
#: char, name, text, bpchar, varchar (and json, xml, citext-like text types are not included).
STRING: Final = DBAPITypeObject('STRING', (18, 19, 25, 1042, 1043))
#: bytea.
BINARY: Final = DBAPITypeObject('BINARY', (17,))
#: int2, int4, int8, oid, float4, float8, money, numeric.
NUMBER: Final = DBAPITypeObject('NUMBER', (20, 21, 23, 26, 700, 701, 790, 1700))
#: date, time, timetz, timestamp, timestamptz, interval.
DATETIME: Final = DBAPITypeObject('DATETIME', (1082, 1083, 1114, 1184, 1186, 1266))
#: oid.
ROWID: Final = DBAPITypeObject('ROWID', (26,))

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802  (PEP 249's name)
    """The local date of `ticks` seconds since the epoch."""
    return datetime.date.fromtimestamp(ticks)


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802
    """The local time of day of `ticks` seconds since the epoch."""
    return datetime.datetime.fromtimestamp(ticks).time()


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802
    """The local date and time of `ticks` seconds since the epoch."""
    return datetime.datetime.fromtimestamp(ticks)

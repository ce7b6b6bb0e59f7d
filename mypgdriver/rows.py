"""Row factories: results as tuples, dicts, named tuples, dataclasses or your own type.

A row factory has psycopg 3's meaning, so code written for psycopg ports by
changing an import: it is called once per result with an object whose
``description`` is the sequence of the result's columns (:class:`Column`),
and returns a *row maker*, a function from the sequence of one row's values
to the row::

    def upper_dict_row(cursor):
        names = [c.name.upper() for c in cursor.description]
        return lambda values: dict(zip(names, values))

    rows = await conn.fetch('SELECT 1 AS a', row_factory=upper_dict_row)   # [{'A': 1}]

Pass one as ``row_factory=`` to ``connect()``, ``create_pool()`` or a call
(fetch, fetchrow, fetchmany, cursor, prepare).  :func:`tuple_row`,
:func:`dict_row` and :func:`scalar_row` are recognised by the driver and
built by its decode loop in C, as fast as the default :class:`~mypgdriver.Record`
rows; any other factory's maker is called once per row with a tuple.
"""
from __future__ import annotations

import functools
import keyword
import re
from collections import namedtuple
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    NamedTuple,
    NoReturn,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from mypgdriver import exceptions
from mypgdriver.exceptions import pep249

__all__ = ('Column', 'DescribesColumns', 'DictRow', 'ResultDescription', 'RowFactory',
           'RowMaker', 'TupleRow', 'args_row', 'class_row', 'dict_row', 'kwargs_row',
           'namedtuple_row', 'scalar_row', 'tuple_row')

T = TypeVar('T')
#: The row type a factory makes (covariant: a factory of a subclass is a
#: factory of its base).
Row = TypeVar('Row', covariant=True)

#: What :func:`tuple_row` makes.
TupleRow = Tuple[Any, ...]
#: What :func:`dict_row` makes.
DictRow = Dict[str, Any]


# --- columns ----------------------------------------------------------------------------------------

# pg_type OIDs whose type modifier means something to Column (psycopg reads
# the same ones): a length, a precision and scale, or a fractional-seconds
# precision; arrays of them carry their element's modifier.
_NUMERIC_OIDS = frozenset((1700, 1231))
_CHAR_OIDS = frozenset((1042, 1043, 1014, 1015))           # bpchar, varchar
_BIT_OIDS = frozenset((1560, 1562, 1561, 1563))            # bit, varbit
_TIME_OIDS = frozenset((1083, 1266, 1114, 1184, 1186,      # time, timetz, timestamp(tz), interval
                        1183, 1270, 1115, 1185, 1187))
# The header PostgreSQL adds to a varchar's and numeric's type modifier (VARHDRSZ).
_VARHDRSZ = 4


class Column(Sequence[Any]):
    """One column of a result, as in psycopg 3 and PEP 249's ``cursor.description``.

    It has the attributes `name` and `type_code` (the type's OID, as in
    ``pg_type.oid``) and is also the 7-item sequence PEP 249 describes:
    ``(name, type_code, display_size, internal_size, precision, scale,
    null_ok)``.  `display_size`, `precision` and `scale` come from the
    column's type modifier (``varchar(20)``, ``numeric(10, 2)``,
    ``timestamp(3)``) and are None when it has none; `null_ok` is always
    None (the protocol does not say).
    """

    __slots__ = ('_name', '_type_code', '_type_size', '_type_modifier')

    def __init__(self, name: str, type_code: int, type_size: int = -1,
                 type_modifier: int = -1) -> None:
        """A column from RowDescription's fields: name, type OID, ``typlen`` and ``atttypmod``."""
        self._name = name
        self._type_code = type_code
        self._type_size = type_size
        self._type_modifier = type_modifier

    @property
    def name(self) -> str:
        """The column's name (its alias, if the query gives one)."""
        return self._name

    @property
    def type_code(self) -> int:
        """The OID of the column's type (``pg_type.oid``)."""
        return self._type_code

    @property
    def display_size(self) -> Optional[int]:
        """The declared length of a ``char(n)``, ``varchar(n)``, ``bit(n)`` or ``varbit(n)`` column."""
        mod = self._type_modifier
        if mod < 0:
            return None
        if self._type_code in _CHAR_OIDS:
            return mod - _VARHDRSZ
        if self._type_code in _BIT_OIDS:
            return mod
        return None

    @property
    def internal_size(self) -> Optional[int]:
        """The size in bytes of a fixed-size type (``pg_type.typlen``), None if variable."""
        return self._type_size if self._type_size >= 0 else None

    @property
    def precision(self) -> Optional[int]:
        """The digits of a ``numeric(p, s)``, or the fractional-seconds digits of a time type."""
        mod = self._type_modifier
        if mod < 0:
            return None
        if self._type_code in _NUMERIC_OIDS:
            return mod >> 16
        if self._type_code in _TIME_OIDS:
            return mod & 0xFFFF
        return None

    @property
    def scale(self) -> Optional[int]:
        """The digits after the decimal point of a ``numeric(p, s)`` column."""
        mod = self._type_modifier
        if mod < 0 or self._type_code not in _NUMERIC_OIDS:
            return None
        scale = (mod - _VARHDRSZ) & 0xFFFF
        # An 11-bit signed field: numeric(p, s) allows s from -1000 to 1000.
        return scale - 0x800 if scale >= 0x400 else scale

    @property
    def null_ok(self) -> Optional[bool]:
        """Always None: the protocol does not say whether a column can be NULL."""
        return None

    def _items(self) -> tuple[Any, ...]:
        return (self.name, self.type_code, self.display_size, self.internal_size,
                self.precision, self.scale, self.null_ok)

    def __len__(self) -> int:
        return 7

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, index: Union[int, slice]) -> Any:
        return self._items()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Column):
            return self._items() == other._items()
        if isinstance(other, tuple):
            return self._items() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return f'<Column {self._name!r}, type oid {self._type_code}>'


class DescribesColumns(Protocol):
    """What a row factory is called with: anything with a ``description``.

    mypgdriver passes a :class:`ResultDescription`; a PEP 249 cursor (whose
    ``description`` is None before a query has run) fits too.
    """

    @property
    def description(self) -> Optional[Sequence[Column]]:
        """The result's columns, in order."""
        ...


@dataclass(frozen=True)
class ResultDescription:
    """The columns of a result, passed to a row factory (psycopg passes its cursor there)."""

    #: One :class:`Column` per result column, in order.
    description: tuple[Column, ...]

    @classmethod
    def from_statement(cls, names: Sequence[str], oids: Sequence[int],
                       sizes: Sequence[int], typmods: Sequence[int]) -> ResultDescription:
        """The description of a statement's result, from its RowDescription's fields."""
        return cls(tuple(Column(name, oid, size, typmod)
                         for name, oid, size, typmod in zip(names, oids, sizes, typmods)))


def description_of(state: Any) -> ResultDescription:
    """The ResultDescription of a prepared statement's result, made once and kept on it.

    `state` is the statement's protocol StatementState; the protocol calls
    row factories with the same object (its ``result_description``).
    """
    description: Optional[ResultDescription] = state.result_description
    if description is None:
        description = ResultDescription.from_statement(
            state.column_names, state.column_oids, state.column_sizes, state.column_typmods)
        state.result_description = description
    return description


# --- the protocols ------------------------------------------------------------------------------------

class RowMaker(Protocol[Row]):
    """Makes one row from the sequence of its values (what a :class:`RowFactory` returns)."""

    def __call__(self, values: Sequence[Any], /) -> Row: ...


class RowFactory(Protocol[Row]):
    """Called once per result with its description; returns the :class:`RowMaker` of its rows."""

    def __call__(self, cursor: Any, /) -> RowMaker[Row]: ...


# --- the factories ------------------------------------------------------------------------------------

def _columns(cursor: DescribesColumns) -> Optional[Sequence[Column]]:
    return cursor.description


def _no_result(values: Sequence[Any]) -> NoReturn:
    raise exceptions.InterfaceError('the row factory was called for a result without columns')


def tuple_row(cursor: DescribesColumns) -> RowMaker[TupleRow]:
    """Rows as plain tuples of values (built by the decode loop itself)."""
    return tuple


def dict_row(cursor: DescribesColumns) -> RowMaker[DictRow]:
    """Rows as dicts from column name to value (built by the decode loop itself).

    When two columns have the same name (``SELECT 1 AS a, 2 AS a``), the
    dict holds the last one's value, as psycopg's ``dict_row`` does.
    """
    columns = _columns(cursor)
    if columns is None:
        return _no_result
    names = [c.name for c in columns]

    def make_dict(values: Sequence[Any]) -> DictRow:
        return dict(zip(names, values))
    return make_dict


def scalar_row(cursor: DescribesColumns) -> RowMaker[Any]:
    """Each row as the value of its first column (``SELECT id FROM ...`` -> a list of ids).

    A result without any column (``SELECT FROM t``) raises the DB-API's
    :exc:`~mypgdriver.dbapi.ProgrammingError`, as psycopg's ``scalar_row`` does.
    """
    columns = _columns(cursor)
    if columns is None:
        return _no_result
    if not columns:
        raise scalar_row_without_columns()

    def first_value(values: Sequence[Any]) -> Any:
        return values[0]
    return first_value


def scalar_row_without_columns() -> pep249.ProgrammingError:
    """The error of scalar_row for a result without columns, wherever it is found.

    psycopg raises its ProgrammingError there (what code moving from it
    catches); the decode loop, which builds scalar_row's rows itself,
    raises this same error before the statement is sent.
    """
    return pep249.ProgrammingError('scalar_row needs a result with at least one column')


def namedtuple_row(cursor: DescribesColumns) -> RowMaker[NamedTuple]:
    """Rows as :func:`~collections.namedtuple` instances, fields named after the columns.

    A column name that is not a valid field name is changed as psycopg
    does: invalid characters become ``_``, and a leading digit or ``_``
    gets an ``f`` in front (``?column?`` -> ``f_column_``; a keyword such as
    ``from`` becomes ``from_``); a repeated name becomes ``_<position>``
    (psycopg refuses it).  The classes are cached per list of names.
    """
    columns = _columns(cursor)
    if columns is None:
        return _no_result
    cls = _namedtuple_class(*(c.name for c in columns))
    return cls._make  # type: ignore[no-any-return]


_NOT_IDENTIFIER = re.compile(r'[^A-Za-z0-9_]')


def _field_name(name: str) -> str:
    # What psycopg's namedtuple_row does to a name, written again.
    if not name.isidentifier():
        if name[:1].isdigit():
            name = 'f' + name
        if not name.isidentifier():
            name = _NOT_IDENTIFIER.sub('_', name)
    if not name or name[0] == '_':
        name = 'f' + name
    if keyword.iskeyword(name):
        name += '_'
    return name


@functools.lru_cache(512)
def _namedtuple_class(*names: str) -> Any:
    return namedtuple('Row', [_field_name(n) for n in names], rename=True)


def class_row(cls: Callable[..., T]) -> RowFactory[T]:
    """A factory of rows as instances of `cls`, made with the columns as keyword arguments.

    ``class_row(Item)`` with a dataclass ``Item(id: int, name: str)`` and
    ``SELECT id, name FROM items`` gives ``Item(id=..., name=...)`` rows.
    """
    def class_row_factory(cursor: Any) -> RowMaker[T]:
        columns = _columns(cursor)
        if columns is None:
            return _no_result
        names = [c.name for c in columns]

        def make_instance(values: Sequence[Any]) -> T:
            return cls(**dict(zip(names, values)))
        return make_instance
    return class_row_factory


def args_row(func: Callable[..., T]) -> RowFactory[T]:
    """A factory of rows made by ``func(*values)``: the values as positional arguments."""
    def args_row_factory(cursor: Any) -> RowMaker[T]:
        def make_from_args(values: Sequence[Any]) -> T:
            return func(*values)
        return make_from_args
    return args_row_factory


def kwargs_row(func: Callable[..., T]) -> RowFactory[T]:
    """A factory of rows made by ``func(**row)``: each column name a keyword argument."""
    def kwargs_row_factory(cursor: Any) -> RowMaker[T]:
        columns = _columns(cursor)
        if columns is None:
            return _no_result
        names = [c.name for c in columns]

        def make_from_kwargs(values: Sequence[Any]) -> T:
            return func(**dict(zip(names, values)))
        return make_from_kwargs
    return kwargs_row_factory


# --- for the connection API ---------------------------------------------------------------------------

class FactoryCall:
    """A row factory that the decode loop does not build itself, as the protocol receives it.

    What travels down from a call to the protocol is a Record class, one
    of tuple_row, dict_row and scalar_row, or this wrapper around any
    other factory: so a function passed as ``record_class`` is still
    refused as a record_class (InterfaceError), and a factory that is a
    class is not taken for one.
    """

    __slots__ = ('factory',)

    def __init__(self, factory: Callable[[Any], Any]) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return f'<FactoryCall {self.factory!r}>'


_BUILT_IN_C = (tuple_row, dict_row, scalar_row)


def choose_rows(record_class: Optional[type[Any]], row_factory: Optional[Any]) -> Any:
    """What a call's rows are made as: its record_class or its row_factory (not both).

    The value travels down to the protocol (row_kind_of in protocol.pyx):
    a Record class, a factory the decode loop builds itself, or a
    :class:`FactoryCall`.
    """
    if row_factory is None:
        return record_class
    if record_class is not None:
        raise TypeError('pass record_class or row_factory, not both')
    if row_factory in _BUILT_IN_C:
        return row_factory
    if isinstance(row_factory, FactoryCall):
        return row_factory
    if not callable(row_factory):
        raise TypeError(f'row_factory must be callable, not {type(row_factory).__name__}')
    return FactoryCall(row_factory)

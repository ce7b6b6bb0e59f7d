"""Row factories (mypgdriver.rows) on the blocking API: the asyncio core's, forwarded.

What the factories make is tested in depth in test_rows.py; here, that every
sync entry point takes them (connect, the pool, each call, prepared
statements, cursors) and that an error in a maker leaves the connection in
sync, with no event loop anywhere.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, Sequence

import pytest

import mypgdriver.sync
from mypgdriver import Record
from mypgdriver.exceptions import InterfaceError
from mypgdriver.exceptions.pep249 import ProgrammingError
from mypgdriver.rows import (
    args_row,
    class_row,
    dict_row,
    kwargs_row,
    namedtuple_row,
    scalar_row,
    tuple_row,
)
from mypgdriver.sync import Connection

QUERY = "SELECT 1 AS id, 'one'::text AS name, NULL::int AS missing"


@dataclasses.dataclass
class Item:
    id: int
    name: str
    missing: Any


def failing_at(at: int) -> Callable[[Any], Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """A factory whose maker raises ZeroDivisionError at row `at` (1-based)."""
    def factory(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        made = [0]

        def make_row(values: Sequence[Any]) -> tuple[Any, ...]:
            made[0] += 1
            if made[0] == at:
                raise ZeroDivisionError(f'row {at}')
            return tuple(values)
        return make_row
    return factory


def assert_usable(conn: Connection) -> None:
    assert conn.fetchval('SELECT 41 + 1') == 42
    assert not conn.is_in_transaction()


def test_each_factory_per_call(sync_conn: Connection) -> None:  # noqa: F811
    assert sync_conn.fetch(QUERY, row_factory=tuple_row) == [(1, 'one', None)]
    assert sync_conn.fetch(QUERY, row_factory=dict_row) == [{'id': 1, 'name': 'one', 'missing': None}]
    assert sync_conn.fetch(QUERY, row_factory=scalar_row) == [1]
    assert sync_conn.fetchrow(QUERY, row_factory=namedtuple_row)._fields == ('id', 'name', 'missing')
    assert sync_conn.fetchrow(QUERY, row_factory=class_row(Item)) == Item(1, 'one', None)
    assert sync_conn.fetch(QUERY, row_factory=args_row(lambda *v: v[::-1])) == [(None, 'one', 1)]
    assert sync_conn.fetch(QUERY, row_factory=kwargs_row(lambda **kw: kw['name'])) == ['one']
    assert sync_conn.fetchmany('SELECT $1::int AS x', [(1,), (2,)], row_factory=dict_row) == [
        {'x': 1}, {'x': 2}]
    assert sync_conn.fetch('SELECT 1 AS a, 2 AS a', row_factory=dict_row) == [{'a': 2}]
    assert sync_conn.fetch('SELECT 1 WHERE false', row_factory=dict_row) == []
    assert sync_conn.fetch('DO $$ BEGIN END $$', row_factory=class_row(Item)) == []
    assert type(sync_conn.fetchrow(QUERY)) is Record


def test_psycopg_style_factory_and_description(sync_conn: Connection) -> None:  # noqa: F811
    def names_and_types(cursor: Any) -> Callable[[Sequence[Any]], list[tuple[str, int]]]:
        pairs = [(c.name, c.type_code) for c in cursor.description]
        return lambda values: pairs
    int4 = sync_conn.fetchval("SELECT oid::int FROM pg_type WHERE typname = 'int4'")
    text = sync_conn.fetchval("SELECT oid::int FROM pg_type WHERE typname = 'text'")
    assert sync_conn.fetchrow(QUERY, row_factory=names_and_types) == [
        ('id', int4), ('name', text), ('missing', int4)]


def test_row_factory_per_connection(dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn, row_factory=dict_row) as conn:
        assert conn.fetch(QUERY) == [{'id': 1, 'name': 'one', 'missing': None}]
        assert conn.fetchrow(QUERY, row_factory=tuple_row) == (1, 'one', None)
        assert conn.fetchval(QUERY, column='name') == 'one'
        stmt = conn.prepare(QUERY)
        assert stmt.fetchrow() == {'id': 1, 'name': 'one', 'missing': None}
        with conn.transaction():
            assert list(conn.cursor('SELECT generate_series(1, 3) AS n')) == [
                {'n': 1}, {'n': 2}, {'n': 3}]
    with pytest.raises(TypeError, match='record_class or row_factory'):
        mypgdriver.sync.connect(dsn, record_class=type('R', (Record,), {}), row_factory=dict_row)


def test_record_class_and_row_factory_together(sync_conn: Connection) -> None:  # noqa: F811
    with pytest.raises(TypeError, match='record_class or row_factory'):
        sync_conn.fetch(QUERY, record_class=Record, row_factory=dict_row)
    with pytest.raises(InterfaceError, match='record_class is expected'):
        sync_conn.fetch(QUERY, record_class=dict)
    assert_usable(sync_conn)


def test_prepared_statement_and_cursor(sync_conn: Connection) -> None:  # noqa: F811
    stmt = sync_conn.prepare(QUERY, row_factory=class_row(Item))
    assert stmt.fetch() == [Item(1, 'one', None)]
    assert stmt.fetchval() == 1
    assert stmt.fetch(row_factory=scalar_row) == [1]
    assert stmt.fetchrow(row_factory=dict_row) == {'id': 1, 'name': 'one', 'missing': None}
    many = sync_conn.prepare('SELECT $1::int AS x', row_factory=tuple_row)
    assert many.fetchmany([(1,), (2,)]) == [(1,), (2,)]
    assert many.fetchmany([(3,)], row_factory=dict_row) == [{'x': 3}]
    with sync_conn.transaction():
        assert list(stmt.cursor()) == [Item(1, 'one', None)]
        assert list(stmt.cursor(row_factory=tuple_row)) == [(1, 'one', None)]
        cur = sync_conn.cursor('SELECT generate_series(1, 10) AS n', row_factory=scalar_row).open()
        assert cur.fetch(3) == [1, 2, 3]
        assert cur.fetchrow() == 4
        rows = list(sync_conn.cursor('SELECT generate_series(1, 120) AS n', prefetch=50,
                                 row_factory=dict_row))
        assert rows == [{'n': n} for n in range(1, 121)]


def test_pool(dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=2, row_factory=dict_row) as pool:
        assert pool.fetch('SELECT 1 AS a') == [{'a': 1}]
        assert pool.fetchrow('SELECT 1 AS a', row_factory=tuple_row) == (1,)
        assert pool.fetchval('SELECT 1 AS a') == 1
        assert pool.fetchmany('SELECT $1::int AS a', [(1,)], row_factory=scalar_row) == [1]
        with pool.acquire() as con:
            assert con.fetch('SELECT 2 AS b') == [{'b': 2}]
            assert con.fetchrow('SELECT 2 AS b', row_factory=scalar_row) == 2
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=1) as pool:
        assert type(pool.fetchrow('SELECT 1')) is Record
        assert pool.fetch('SELECT 1 AS a', row_factory=dict_row) == [{'a': 1}]


NO_COLUMNS = 'SELECT FROM generate_series(1, 2)'


def assert_no_columns_error(error: BaseException) -> None:
    """psycopg's class for scalar_row without a column: a DB-API ProgrammingError, not InterfaceError."""
    assert type(error) is ProgrammingError
    assert not isinstance(error, InterfaceError)
    assert str(error) == 'scalar_row needs a result with at least one column'


def test_scalar_row_without_columns_everywhere(sync_conn: Connection) -> None:  # noqa: F811
    stmt = sync_conn.prepare(NO_COLUMNS)
    calls: list[Callable[[], Any]] = [
        lambda: sync_conn.fetch(NO_COLUMNS, row_factory=scalar_row),
        lambda: sync_conn.fetchrow(NO_COLUMNS, row_factory=scalar_row),
        lambda: sync_conn.fetchmany('SELECT FROM generate_series(1, $1::int)', [(1,)],
                                row_factory=scalar_row),
        lambda: stmt.fetch(row_factory=scalar_row),
        lambda: sync_conn.prepare(NO_COLUMNS, row_factory=scalar_row).fetch(),
    ]
    for call in calls:
        with pytest.raises(ProgrammingError) as info:
            call()
        assert_no_columns_error(info.value)
        assert_usable(sync_conn)
    with sync_conn.transaction():
        with pytest.raises(ProgrammingError) as info:
            list(sync_conn.cursor(NO_COLUMNS, row_factory=scalar_row))
        assert_no_columns_error(info.value)
        cur = sync_conn.cursor(NO_COLUMNS, row_factory=scalar_row).open()
        with pytest.raises(ProgrammingError) as info:
            cur.fetch(1)
        assert_no_columns_error(info.value)
        assert sync_conn.fetchval('SELECT 7') == 7


def test_scalar_row_without_columns_on_the_pool(dsn: str,  # noqa: F811
                                                no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=1, row_factory=scalar_row) as pool:
        with pytest.raises(ProgrammingError) as info:
            pool.fetch(NO_COLUMNS)
        assert_no_columns_error(info.value)
        with pool.acquire() as con:
            with pytest.raises(ProgrammingError) as info:
                con.fetchrow(NO_COLUMNS)
            assert_no_columns_error(info.value)
            assert con.fetchval('SELECT 5') == 5


@pytest.mark.parametrize('at', [1, 777])
def test_maker_error_propagates_and_connection_stays_in_sync(
        sync_conn: Connection, at: int) -> None:  # noqa: F811
    with pytest.raises(ZeroDivisionError, match=f'row {at}'):
        sync_conn.fetch('SELECT generate_series(1, 1000)', row_factory=failing_at(at))
    assert_usable(sync_conn)
    with pytest.raises(ZeroDivisionError):
        with sync_conn.transaction():
            sync_conn.fetch('SELECT generate_series(1, 10)', row_factory=failing_at(3))
    assert_usable(sync_conn)


def test_factory_error(sync_conn: Connection) -> None:  # noqa: F811
    def failing_factory(cursor: Any) -> Any:
        raise LookupError('factory')
    with pytest.raises(LookupError, match='factory'):
        sync_conn.fetch('SELECT 1', row_factory=failing_factory)
    assert_usable(sync_conn)


@pytest.fixture
def many_columns_query() -> Iterator[str]:
    yield 'SELECT ' + ', '.join(f'{i} AS c{i}' for i in range(100))


def test_many_columns(sync_conn: Connection, many_columns_query: str) -> None:  # noqa: F811
    assert sync_conn.fetchrow(many_columns_query, row_factory=dict_row) == {
        f'c{i}': i for i in range(100)}
    assert sync_conn.fetchrow(many_columns_query, row_factory=tuple_row) == tuple(range(100))

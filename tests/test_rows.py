"""Row factories (mypgdriver.rows) on the asyncio API: per call, per connection, per pool, per statement.

The factories have psycopg 3's meaning: called once per result with an
object whose ``description`` lists the columns, they return a function from
a row's values to the row.  tuple_row, dict_row and scalar_row are built by
the decode loop itself; the others get a tuple per row.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Callable, NamedTuple, Sequence

import pytest

import mypgdriver
import mypgdriver.prepared
from mypgdriver import Record
from mypgdriver.exceptions import InterfaceError
from mypgdriver.exceptions.pep249 import ProgrammingError
from mypgdriver.rows import (
    Column,
    ResultDescription,
    args_row,
    class_row,
    dict_row,
    kwargs_row,
    namedtuple_row,
    scalar_row,
    tuple_row,
)
from tests.support.fixtures import AsyncConnect

QUERY = "SELECT 1 AS id, 'one'::text AS name, NULL::int AS missing"


@dataclasses.dataclass
class Item:
    id: int
    name: str
    missing: Any


class ItemRecord(Record):
    pass


def upper_dict_row(cursor: Any) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A factory written for psycopg 3: it reads only ``cursor.description``."""
    names = [c.name.upper() for c in cursor.description]

    def make_row(values: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(names, values))
    return make_row


class FailingMaker:
    """A factory whose maker raises at row number `at` (1-based), counting its calls."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.factory_calls = 0
        self.rows_made = 0

    def __call__(self, cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        self.factory_calls += 1

        def make_row(values: Sequence[Any]) -> tuple[Any, ...]:
            self.rows_made += 1
            if self.rows_made == self.at:
                raise ZeroDivisionError(f'row {self.at}')
            return tuple(values)
        return make_row


async def assert_usable(conn: Any) -> None:
    """The connection answers the next call correctly and holds no transaction."""
    assert await conn.fetchval('SELECT 41 + 1') == 42
    assert not conn.is_in_transaction()
    assert await conn.fetchval('SELECT count(*) FROM pg_stat_activity '
                               "WHERE pid = pg_backend_pid() AND state = 'active'") == 1


# --- each factory, per call ---

async def test_each_factory_per_call(conn: Any) -> None:
    assert await conn.fetch(QUERY, row_factory=tuple_row) == [(1, 'one', None)]
    assert type((await conn.fetch(QUERY, row_factory=tuple_row))[0]) is tuple
    assert await conn.fetch(QUERY, row_factory=dict_row) == [
        {'id': 1, 'name': 'one', 'missing': None}]
    assert await conn.fetch(QUERY, row_factory=scalar_row) == [1]
    row = (await conn.fetch(QUERY, row_factory=namedtuple_row))[0]
    assert (row.id, row.name, row.missing) == (1, 'one', None)
    assert row._fields == ('id', 'name', 'missing')
    assert await conn.fetch(QUERY, row_factory=class_row(Item)) == [Item(1, 'one', None)]
    assert await conn.fetch(QUERY, row_factory=args_row(lambda *v: list(v))) == [
        [1, 'one', None]]
    assert await conn.fetch(QUERY, row_factory=kwargs_row(lambda **kw: sorted(kw))) == [
        ['id', 'missing', 'name']]
    assert await conn.fetch(QUERY, row_factory=upper_dict_row) == [
        {'ID': 1, 'NAME': 'one', 'MISSING': None}]


async def test_fetchrow_and_fetchval(conn: Any) -> None:
    assert await conn.fetchrow(QUERY, row_factory=dict_row) == {
        'id': 1, 'name': 'one', 'missing': None}
    assert await conn.fetchrow('SELECT 1 WHERE false', row_factory=dict_row) is None
    assert await conn.fetchrow(QUERY, row_factory=scalar_row) == 1
    assert await conn.fetchval(QUERY, column='name') == 'one'


async def test_many_rows_and_nulls(conn: Any) -> None:
    query = 'SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE i::text END AS t ' \
            'FROM generate_series(1, 2000) AS i'
    expected = [(i, None if i % 3 == 0 else str(i)) for i in range(1, 2001)]
    assert await conn.fetch(query, row_factory=tuple_row) == expected
    assert await conn.fetch(query, row_factory=dict_row) == [
        {'i': i, 't': t} for i, t in expected]
    assert await conn.fetch(query, row_factory=scalar_row) == list(range(1, 2001))
    assert await conn.fetch(query, row_factory=args_row(lambda i, t: (t, i))) == [
        (t, i) for i, t in expected]


async def test_scalar_row_of_a_null_first_column(conn: Any) -> None:
    assert await conn.fetch('SELECT NULL::int, 2 UNION ALL SELECT 3, NULL',
                            row_factory=scalar_row) == [None, 3]


async def test_duplicate_column_names(conn: Any) -> None:
    query = 'SELECT 1 AS a, 2 AS b, 3 AS a'
    # dict_row: the last column of a name wins (psycopg's behaviour).
    assert await conn.fetch(query, row_factory=dict_row) == [{'a': 3, 'b': 2}]
    assert list((await conn.fetchrow(query, row_factory=dict_row)).keys()) == ['a', 'b']
    assert await conn.fetch(query, row_factory=tuple_row) == [(1, 2, 3)]
    assert await conn.fetch(query, row_factory=upper_dict_row) == [{'A': 3, 'B': 2}]


async def test_many_columns(conn: Any) -> None:
    columns = ', '.join(f'{i} AS c{i}' for i in range(300))
    expected = {f'c{i}': i for i in range(300)}
    assert await conn.fetch(f'SELECT {columns}', row_factory=dict_row) == [expected]
    assert await conn.fetch(f'SELECT {columns}', row_factory=tuple_row) == [
        tuple(range(300))]
    row = await conn.fetchrow(f'SELECT {columns}', row_factory=namedtuple_row)
    assert row.c299 == 299


async def test_arrays_and_composites(conn: Any) -> None:
    query = ("SELECT ARRAY[1, NULL, 3] AS arr, ROW(1, 'x')::record AS rec, "
             "ARRAY[ARRAY['a', 'b'], ARRAY['c', NULL]] AS nested")
    row = await conn.fetchrow(query, row_factory=dict_row)
    assert row['arr'] == [1, None, 3]
    assert tuple(row['rec']) == (1, 'x')
    assert row['nested'] == [['a', 'b'], ['c', None]]
    assert (await conn.fetchrow(query, row_factory=tuple_row))[0] == [1, None, 3]
    rows = await conn.fetch('SELECT ARRAY[i, i] FROM generate_series(1, 3) AS i',
                            row_factory=scalar_row)
    assert rows == [[1, 1], [2, 2], [3, 3]]


async def test_namedtuple_row_invalid_names(conn: Any) -> None:
    row = await conn.fetchrow('SELECT 1, 2 AS "1st", 3 AS "from", 4 AS "_x", 5 AS "a b"',
                              row_factory=namedtuple_row)
    assert row._fields == ('f_column_', 'f1st', 'from_', 'f_x', 'a_b')
    assert tuple(row) == (1, 2, 3, 4, 5)


# --- the description ---

async def test_description_of_the_columns(conn: Any) -> None:
    seen: list[tuple[Column, ...]] = []

    def keep_description(cursor: Any) -> Callable[[Sequence[Any]], int]:
        assert isinstance(cursor, ResultDescription)
        seen.append(tuple(cursor.description))
        return len
    await conn.fetch("SELECT 1::int4 AS i, 'a'::varchar(7) AS v, 1.5::numeric(10, 2) AS n, "
                     "now()::timestamp(3) AS t, B'101'::bit(3) AS b, 'x'::text AS x, "
                     "'x'::char(4) AS c", row_factory=keep_description)
    (cols,) = seen
    oids = {r[0]: r[1] for r in await conn.fetch(
        "SELECT typname, oid::int FROM pg_type WHERE typname = ANY($1)",
        ['int4', 'varchar', 'numeric', 'timestamp', 'bit', 'text', 'bpchar'])}
    assert [c.name for c in cols] == ['i', 'v', 'n', 't', 'b', 'x', 'c']
    assert [c.type_code for c in cols] == [oids['int4'], oids['varchar'], oids['numeric'],
                                          oids['timestamp'], oids['bit'], oids['text'],
                                          oids['bpchar']]
    # PEP 249's 7 items: name, type_code, display_size, internal_size,
    # precision, scale, null_ok.
    assert tuple(cols[0]) == ('i', oids['int4'], None, 4, None, None, None)
    assert tuple(cols[1]) == ('v', oids['varchar'], 7, None, None, None, None)
    assert tuple(cols[2]) == ('n', oids['numeric'], None, None, 10, 2, None)
    assert tuple(cols[3]) == ('t', oids['timestamp'], None, 8, 3, None, None)
    assert cols[4].display_size == 3
    assert cols[5][2:] == (None, None, None, None, None)
    assert cols[6].display_size == 4
    assert len(cols[0]) == 7 and cols[0][0] == 'i' and cols[0][-1] is None
    assert cols[0] == ('i', oids['int4'], None, 4, None, None, None)


async def test_factory_called_once_per_result(conn: Any) -> None:
    maker = FailingMaker(at=0)
    rows = await conn.fetch('SELECT generate_series(1, 5)', row_factory=maker)
    assert rows == [(i,) for i in range(1, 6)]
    assert (maker.factory_calls, maker.rows_made) == (1, 5)


async def test_empty_results_and_statements_without_columns(conn: Any) -> None:
    maker = FailingMaker(at=0)
    for factory in (tuple_row, dict_row, scalar_row, namedtuple_row, class_row(Item), maker):
        assert await conn.fetch('SELECT 1 AS id WHERE false', row_factory=factory) == []
        assert await conn.fetch('DO $$ BEGIN END $$', row_factory=factory) == []
    # Called for the empty result (it has columns), not for the DO.
    assert maker.factory_calls == 1


NO_COLUMNS = 'SELECT FROM generate_series(1, 2)'


def assert_no_columns_error(error: BaseException) -> None:
    """psycopg's class for scalar_row without a column: a DB-API ProgrammingError, not InterfaceError."""
    assert type(error) is ProgrammingError
    assert not isinstance(error, InterfaceError)
    assert str(error) == 'scalar_row needs a result with at least one column'


async def test_scalar_row_without_columns(conn: Any) -> None:
    with pytest.raises(ProgrammingError) as info:
        await conn.fetch(NO_COLUMNS, row_factory=scalar_row)
    assert_no_columns_error(info.value)
    await assert_usable(conn)


async def test_scalar_row_without_columns_everywhere(conn: Any) -> None:
    stmt = await conn.prepare(NO_COLUMNS)
    calls = [
        lambda: conn.fetchrow(NO_COLUMNS, row_factory=scalar_row),
        lambda: conn.fetchmany('SELECT FROM generate_series(1, $1::int)', [(1,)],
                               row_factory=scalar_row),
        lambda: stmt.fetch(row_factory=scalar_row),
        lambda: stmt.fetchrow(row_factory=scalar_row),
        lambda: conn.prepare(NO_COLUMNS, row_factory=scalar_row),
    ]
    for call in calls:
        with pytest.raises(ProgrammingError) as info:
            result = await call()
            if isinstance(result, mypgdriver.prepared.PreparedStatement):
                await result.fetch()
        assert_no_columns_error(info.value)
        await assert_usable(conn)
    async with conn.transaction():
        with pytest.raises(ProgrammingError) as info:
            [r async for r in conn.cursor(NO_COLUMNS, row_factory=scalar_row)]
        assert_no_columns_error(info.value)
        cur = await conn.cursor(NO_COLUMNS, row_factory=scalar_row)
        with pytest.raises(ProgrammingError) as info:
            await cur.fetch(1)
        assert_no_columns_error(info.value)
        # Refused before anything was sent: the transaction goes on.
        assert await conn.fetchval('SELECT 7') == 7


async def test_scalar_row_without_columns_on_the_pool(connect_kwargs: dict[str, Any]) -> None:
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1,
                                      row_factory=scalar_row) as pool:
        with pytest.raises(ProgrammingError) as info:
            await pool.fetch(NO_COLUMNS)
        assert_no_columns_error(info.value)
        async with pool.acquire() as con:
            with pytest.raises(ProgrammingError) as info:
                await con.fetchrow(NO_COLUMNS)
            assert_no_columns_error(info.value)
            assert await con.fetchval('SELECT 5') == 5


def test_scalar_row_called_directly_without_columns() -> None:
    with pytest.raises(ProgrammingError) as info:
        scalar_row(ResultDescription(()))
    assert_no_columns_error(info.value)


# --- where the factory is chosen ---

async def test_row_factory_per_connection(open_conn: AsyncConnect) -> None:
    conn = await open_conn(row_factory=dict_row)
    assert await conn.fetch(QUERY) == [{'id': 1, 'name': 'one', 'missing': None}]
    assert await conn.fetchrow(QUERY) == {'id': 1, 'name': 'one', 'missing': None}
    # fetchval and execute do not make rows.
    assert await conn.fetchval(QUERY, column='name') == 'one'
    assert await conn.execute('SELECT 1') == 'SELECT 1'
    # A call's own choice wins.
    assert await conn.fetch(QUERY, row_factory=tuple_row) == [(1, 'one', None)]
    rows = await conn.fetch(QUERY, record_class=ItemRecord)
    assert type(rows[0]) is ItemRecord and rows[0]['name'] == 'one'
    assert await conn.fetchmany('SELECT $1::int AS x', [(1,), (2,)]) == [{'x': 1}, {'x': 2}]
    stmt = await conn.prepare(QUERY)
    assert await stmt.fetch() == [{'id': 1, 'name': 'one', 'missing': None}]
    assert await stmt.fetchval() == 1
    async with conn.transaction():
        assert [r async for r in conn.cursor('SELECT 1 AS x')] == [{'x': 1}]
    # Internal queries (type introspection of a composite) still get Records.
    await conn.execute('CREATE TEMPORARY TABLE rows_pair (a int, b text)')
    assert await conn.fetchval("SELECT ROW(1, 'b')::rows_pair") is not None


async def test_connect_refuses_both(connect_kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match='record_class or row_factory'):
        await mypgdriver.connect(**connect_kwargs, record_class=ItemRecord, row_factory=dict_row)
    with pytest.raises(TypeError, match='callable'):
        await mypgdriver.connect(**connect_kwargs, row_factory=42)


async def test_record_class_and_row_factory_in_one_call(conn: Any) -> None:
    for call in (conn.fetch, conn.fetchrow):
        with pytest.raises(TypeError, match='record_class or row_factory'):
            await call(QUERY, record_class=ItemRecord, row_factory=dict_row)
    with pytest.raises(TypeError, match='record_class or row_factory'):
        await conn.fetchmany('SELECT $1::int', [(1,)], record_class=ItemRecord,
                             row_factory=dict_row)
    with pytest.raises(TypeError, match='record_class or row_factory'):
        conn.cursor(QUERY, record_class=ItemRecord, row_factory=dict_row)
    with pytest.raises(TypeError, match='record_class or row_factory'):
        await conn.prepare(QUERY, record_class=ItemRecord, row_factory=dict_row)
    with pytest.raises(TypeError, match='callable'):
        await conn.fetch(QUERY, row_factory='dict')
    await assert_usable(conn)


async def test_record_class_unchanged(conn: Any) -> None:
    rows = await conn.fetch(QUERY, record_class=ItemRecord)
    assert type(rows[0]) is ItemRecord
    assert type(await conn.fetchrow(QUERY)) is Record
    with pytest.raises(InterfaceError, match='record_class is expected'):
        await conn.fetch(QUERY, record_class=dict)
    with pytest.raises(InterfaceError, match='record_class is expected'):
        await conn.fetch(QUERY, record_class=lambda d: d)
    await assert_usable(conn)


async def test_record_class_of_the_connection_and_row_factory_of_a_call(
        open_conn: AsyncConnect) -> None:
    conn = await open_conn(record_class=ItemRecord)
    assert type(await conn.fetchrow(QUERY)) is ItemRecord
    assert await conn.fetchrow(QUERY, row_factory=tuple_row) == (1, 'one', None)


async def test_a_class_as_row_factory(conn: Any) -> None:
    class Maker:
        def __init__(self, cursor: Any) -> None:
            self.names = [c.name for c in cursor.description]

        def __call__(self, values: Sequence[Any]) -> list[str]:
            return [f'{n}={v}' for n, v in zip(self.names, values)]
    assert await conn.fetch('SELECT 1 AS a', row_factory=Maker) == [['a=1']]


async def test_prepared_statement(conn: Any) -> None:
    stmt = await conn.prepare(QUERY, row_factory=class_row(Item))
    assert await stmt.fetch() == [Item(1, 'one', None)]
    assert await stmt.fetchrow() == Item(1, 'one', None)
    assert await stmt.fetchval(column='name') == 'one'
    assert await stmt.fetch(row_factory=tuple_row) == [(1, 'one', None)]
    assert await stmt.fetchrow(row_factory=dict_row) == {'id': 1, 'name': 'one', 'missing': None}
    async with conn.transaction():
        assert [r async for r in stmt.cursor()] == [Item(1, 'one', None)]
        assert [r async for r in stmt.cursor(row_factory=scalar_row)] == [1]
        cur = await stmt.cursor(row_factory=dict_row)
        assert await cur.fetchrow() == {'id': 1, 'name': 'one', 'missing': None}
    many = await conn.prepare('SELECT $1::int AS x, $2::text AS y', row_factory=dict_row)
    assert await many.fetchmany([(1, 'a'), (2, 'b')]) == [{'x': 1, 'y': 'a'},
                                                          {'x': 2, 'y': 'b'}]
    assert await many.fetchmany([(3, 'c')], row_factory=tuple_row) == [(3, 'c')]
    plain = await conn.prepare(QUERY)
    assert type(await plain.fetchrow()) is Record
    assert await plain.fetch(row_factory=scalar_row) == [1]


async def test_cursor(conn: Any) -> None:
    query = 'SELECT i, i * 2 AS double FROM generate_series(1, 120) AS i'
    maker = FailingMaker(at=0)
    async with conn.transaction():
        rows = [r async for r in conn.cursor(query, row_factory=dict_row, prefetch=50)]
        assert rows == [{'i': i, 'double': 2 * i} for i in range(1, 121)]
        assert [r async for r in conn.cursor(query, row_factory=maker)] == [
            (i, 2 * i) for i in range(1, 121)]
        cur = await conn.cursor(query, row_factory=tuple_row)
        assert await cur.fetch(2) == [(1, 2), (2, 4)]
        await cur.forward(10)
        assert await cur.fetchrow() == (13, 26)
    # Called once per batch fetched (a result each).
    assert maker.factory_calls == 3


async def test_fetchmany(conn: Any) -> None:
    await conn.execute('CREATE TEMPORARY TABLE rows_items (id int, name text)')
    rows = await conn.fetchmany('INSERT INTO rows_items VALUES ($1, $2) RETURNING *, NULL AS missing',
                                [(1, 'a'), (2, 'b')], row_factory=class_row(Item))
    assert rows == [Item(1, 'a', None), Item(2, 'b', None)]
    assert await conn.fetchmany('SELECT $1::int', [(1,), (2,)], row_factory=scalar_row) == [1, 2]


async def test_pool(connect_kwargs: dict[str, Any]) -> None:
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=2,
                                      row_factory=dict_row) as pool:
        assert await pool.fetch('SELECT 1 AS a') == [{'a': 1}]
        assert await pool.fetchrow('SELECT 1 AS a') == {'a': 1}
        assert await pool.fetchval('SELECT 1 AS a') == 1
        assert await pool.fetch('SELECT 1 AS a', row_factory=tuple_row) == [(1,)]
        assert await pool.fetchrow('SELECT 1 AS a', row_factory=scalar_row) == 1
        assert await pool.fetchmany('SELECT $1::int AS a', [(1,)],
                                    row_factory=tuple_row) == [(1,)]
        async with pool.acquire() as con:
            assert await con.fetch('SELECT 2 AS b') == [{'b': 2}]
            assert await con.fetch('SELECT 2 AS b', row_factory=namedtuple_row) == [(2,)]
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1) as pool:
        assert type(await pool.fetchrow('SELECT 1')) is Record
        assert await pool.fetch('SELECT 1 AS a', row_factory=dict_row) == [{'a': 1}]
    with pytest.raises(TypeError, match='record_class or row_factory'):
        mypgdriver.create_pool(**connect_kwargs, record_class=ItemRecord, row_factory=dict_row)


# --- errors in a user's factory or maker ---

@pytest.mark.parametrize('at', [1, 500, 1000])
async def test_maker_error_propagates_and_connection_stays_in_sync(conn: Any, at: int) -> None:
    maker = FailingMaker(at)
    with pytest.raises(ZeroDivisionError, match=f'row {at}'):
        await conn.fetch('SELECT generate_series(1, 1000)', row_factory=maker)
    await assert_usable(conn)
    with pytest.raises(ZeroDivisionError):
        await conn.fetchrow('SELECT 1', row_factory=FailingMaker(1))
    await assert_usable(conn)


async def test_maker_error_inside_a_transaction_block(conn: Any) -> None:
    with pytest.raises(ZeroDivisionError):
        async with conn.transaction():
            await conn.execute('CREATE TEMPORARY TABLE rows_gone (a int)')
            await conn.fetch('SELECT generate_series(1, 10)', row_factory=FailingMaker(5))
    await assert_usable(conn)
    assert await conn.fetchval("SELECT to_regclass('rows_gone')") is None


async def test_factory_error_propagates_before_anything_is_sent(conn: Any) -> None:
    class Boom(Exception):
        pass

    def failing_factory(cursor: Any) -> Any:
        raise Boom('no')
    with pytest.raises(Boom):
        await conn.fetch('SELECT 1', row_factory=failing_factory)
    with pytest.raises(TypeError, match='not a callable'):
        await conn.fetch('SELECT 1', row_factory=lambda cursor: 42)
    with pytest.raises(Boom):
        await (await conn.prepare('SELECT 1')).fetch(row_factory=failing_factory)
    await assert_usable(conn)


async def test_maker_errors_in_a_pipelined_mix(conn: Any) -> None:
    query = 'SELECT generate_series(1, 300) AS n'
    calls = []
    for i in range(12):
        if i % 4 == 1:
            calls.append(conn.fetch(query, row_factory=FailingMaker(1)))
        elif i % 4 == 3:
            calls.append(conn.fetch(query, row_factory=FailingMaker(300)))
        elif i % 4 == 2:
            calls.append(conn.fetch(query, row_factory=dict_row))
        else:
            calls.append(conn.fetch(query))
    results = await asyncio.gather(*calls, return_exceptions=True)
    for i, result in enumerate(results):
        if i % 2 == 1:
            assert isinstance(result, ZeroDivisionError)
        elif i % 4 == 2:
            assert result == [{'n': n} for n in range(1, 301)]
        else:
            assert [r['n'] for r in result] == list(range(1, 301))
    assert conn.get_pipeline_stats().max_in_flight > 1
    await assert_usable(conn)


async def test_class_row_with_a_column_the_class_lacks(conn: Any) -> None:
    with pytest.raises(TypeError, match='unexpected keyword'):
        await conn.fetch('SELECT 1 AS id, 2 AS other', row_factory=class_row(Item))
    await assert_usable(conn)


class Point(NamedTuple):
    x: int
    y: int


async def test_args_row_with_a_namedtuple(conn: Any) -> None:
    assert await conn.fetch('SELECT 1, 2', row_factory=args_row(Point)) == [Point(1, 2)]


async def test_namedtuple_row_with_a_repeated_name(conn: Any) -> None:
    row = await conn.fetchrow('SELECT 1 AS a, 2 AS a', row_factory=namedtuple_row)
    assert row._fields == ('a', '_1')
    assert tuple(row) == (1, 2)


async def test_dict_rows_and_the_garbage_collector(conn: Any) -> None:
    # dict_row's rows are filled in place: one holding a container is
    # tracked by the garbage collector (as a dict filled by item assignment
    # is), one of atomic values is not; each row is its own dict.
    import gc
    rows = await conn.fetch("SELECT i, 'x' || i AS s, ARRAY[i] AS a, NULL::int AS n "
                            'FROM generate_series(1, 3) AS i', row_factory=dict_row)
    assert rows == [{'i': i, 's': f'x{i}', 'a': [i], 'n': None} for i in (1, 2, 3)]
    assert all(gc.is_tracked(row) for row in rows)
    rows[0]['i'] = 100
    rows[0]['extra'] = True
    assert rows[1] == {'i': 2, 's': 'x2', 'a': [2], 'n': None}
    plain = await conn.fetch('SELECT i, i::text AS s FROM generate_series(1, 3) AS i',
                             row_factory=dict_row)
    assert not any(gc.is_tracked(row) for row in plain)
    plain[0].clear()
    assert plain[1:] == [{'i': 2, 's': '2'}, {'i': 3, 's': '3'}]
    again = await conn.fetch('SELECT i, i::text AS s FROM generate_series(1, 2) AS i',
                             row_factory=dict_row)
    assert again == [{'i': 1, 's': '1'}, {'i': 2, 's': '2'}]

"""mypgdriver.sync: cursors (iteration with prefetch, Cursor.fetch/forward/fetchrow) and transactions."""
from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection


def test_iteration_fetches_prefetch_rows_per_round_trip(sync_conn: Connection) -> None:
    fetches: list[int] = []
    with sync_conn.transaction():
        cursor = sync_conn.cursor('SELECT g AS marked FROM generate_series(1, $1) g', 7, prefetch=3)
        rows = []
        for row in cursor:
            rows.append(row['marked'])
            fetches.append(sync_conn.fetchval(
                "SELECT count(*) FROM pg_cursors WHERE strpos(statement, 'mar' || 'ked') > 0"))
        assert rows == [1, 2, 3, 4, 5, 6, 7]
        # the portal is open while rows remain, closed once exhausted
        assert fetches[0] == 1
        assert fetches == [1] * 6 + [0]


def test_cursor_outside_a_transaction_is_refused(sync_conn: Connection) -> None:
    with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
        list(sync_conn.cursor('SELECT 1'))
    with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
        sync_conn.cursor('SELECT 1').open()


def test_open_cursor_fetch_forward_fetchrow(sync_conn: Connection) -> None:
    with sync_conn.transaction():
        cur = sync_conn.cursor('SELECT g FROM generate_series(1, 10) g', record_class=None).open()
        assert isinstance(cur, mypgdriver.sync.Cursor)
        assert [r['g'] for r in cur.fetch(3)] == [1, 2, 3]
        assert cur.forward(4) == 4
        row = cur.fetchrow()
        assert row is not None and row['g'] == 8
        assert [r['g'] for r in cur.fetch(5)] == [9, 10]
        assert cur.fetch(1) == []
        assert cur.fetchrow() is None
        assert cur.forward(3) == 0
    with sync_conn.transaction():
        with pytest.raises(mypgdriver.exceptions.InterfaceError):
            sync_conn.cursor('SELECT 1', prefetch=5).open()


def test_a_bad_cursor_query_fails_at_open(sync_conn: Connection) -> None:
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        with sync_conn.transaction():
            sync_conn.cursor('SELECT 1 / 0').open()
    assert not sync_conn.is_in_transaction()


# --- conn.cursor(q) used as the cursor itself: `await` removed, bound at first use ---

OPEN_PORTALS = "SELECT count(*) FROM pg_cursors WHERE strpos(statement, 'lazy' || '_mark') > 0"


def test_the_factory_fetches_forwards_and_fetchrows_as_an_opened_cursor(
        sync_conn: Connection) -> None:
    with sync_conn.transaction():
        cur = sync_conn.cursor('SELECT g AS lazy_mark FROM generate_series(1, 10) g',
                           record_class=None)
        # Nothing is bound until the first use...
        assert sync_conn.fetchval(OPEN_PORTALS) == 0
        assert [r['lazy_mark'] for r in cur.fetch(3)] == [1, 2, 3]
        # ...then one portal, for every later call.
        assert sync_conn.fetchval(OPEN_PORTALS) == 1
        assert cur.forward(4) == 4
        row = cur.fetchrow()
        assert row is not None and row['lazy_mark'] == 8
        assert [r['lazy_mark'] for r in cur.fetch(5, timeout=10)] == [9, 10]
        assert cur.fetch(1) == []
        assert cur.fetchrow() is None
        assert cur.forward(3) == 0
        assert sync_conn.fetchval(OPEN_PORTALS) == 1


@pytest.mark.parametrize('first', ['fetchrow', 'forward'])
def test_fetchrow_or_forward_first_binds_the_portal(sync_conn: Connection, first: str) -> None:
    with sync_conn.transaction():
        cur = sync_conn.cursor('SELECT g FROM generate_series(1, 5) g', record_class=None)
        if first == 'fetchrow':
            row = cur.fetchrow(timeout=10)
            assert row is not None and row['g'] == 1
        else:
            assert cur.forward(1, timeout=10) == 1
        assert [r['g'] for r in cur.fetch(2)] == [2, 3]


def test_a_prepared_statements_cursor_is_used_without_open(sync_conn: Connection) -> None:
    stmt = sync_conn.prepare('SELECT g FROM generate_series(1, $1::int) g')
    with sync_conn.transaction():
        cur = stmt.cursor(4)
        assert [r['g'] for r in cur.fetch(3)] == [1, 2, 3]
        row = cur.fetchrow()
        assert row is not None and row['g'] == 4
        assert cur.fetchrow() is None


def test_a_factory_used_as_a_cursor_is_not_iterated_again(sync_conn: Connection) -> None:
    with sync_conn.transaction():
        cur = sync_conn.cursor('SELECT g FROM generate_series(1, 5) g')
        assert [r['g'] for r in cur.fetch(2)] == [1, 2]
        # Iterating it would start the query again from its first row.
        with pytest.raises(mypgdriver.exceptions.InterfaceError, match='fetch'):
            iter(cur)
        assert [r['g'] for r in cur.fetch(10)] == [3, 4, 5]
        # A factory not used as a cursor iterates, and open()s, as before.
        unused = sync_conn.cursor('SELECT g FROM generate_series(1, 3) g')
        assert [r['g'] for r in unused] == [1, 2, 3]
        assert [r['g'] for r in unused.open().fetch(5)] == [1, 2, 3]
        # open() on a used factory is a new portal, as `await factory` again is.
        assert [r['g'] for r in cur.open().fetch(1)] == [1]


def test_a_refused_first_use_binds_nothing_and_the_next_one_opens(sync_conn: Connection) -> None:
    cur = sync_conn.cursor('SELECT g FROM generate_series(1, 3) g', record_class=None)
    with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
        cur.fetch(1)
    with sync_conn.transaction():
        assert [r['g'] for r in cur.fetch(5)] == [1, 2, 3]


def test_the_factory_and_its_cursor_show_the_query(sync_conn: Connection) -> None:
    with sync_conn.transaction():
        cur = sync_conn.cursor('SELECT 1')
        assert cur.fetch(1)[0][0] == 1
        assert repr(cur) == repr(sync_conn.cursor('SELECT 1').open()) == "<Cursor 'SELECT 1'>"


class Misuse(NamedTuple):
    """A cursor call of the asyncio API (``cur = await conn.cursor(q)``, then a method)."""

    in_transaction: bool
    query: str
    cursor_kwargs: dict[str, Any]
    method: str
    args: tuple[Any, ...]


MISUSES = {
    'fetch outside a transaction': Misuse(False, 'SELECT 1', {}, 'fetch', (1,)),
    'fetchrow outside a transaction': Misuse(False, 'SELECT 1', {}, 'fetchrow', ()),
    'forward outside a transaction': Misuse(False, 'SELECT 1', {}, 'forward', (1,)),
    'prefetch given': Misuse(True, 'SELECT 1', {'prefetch': 5}, 'fetch', (1,)),
    'n of zero': Misuse(True, 'SELECT 1', {}, 'fetch', (0,)),
    'n not an int': Misuse(True, 'SELECT 1', {}, 'forward', ('2',)),
    'a bad query': Misuse(True, 'SELECT 1 / 0', {}, 'fetchrow', ()),
    'a bad argument': Misuse(True, 'SELECT $1::int', {'args': ('x',)}, 'fetch', (1,)),
    'an unknown table': Misuse(True, 'SELECT * FROM no_such_lazy_t', {}, 'fetch', (1,)),
}


def outcome(error: BaseException, after: object) -> tuple[Any, ...]:
    return (type(error), str(error), getattr(error, 'sqlstate', None), after)


async def async_outcome(dsn: str, misuse: Misuse) -> tuple[Any, ...]:
    """What the asyncio API raises for `misuse`, and what the next query gets after it."""
    conn = await mypgdriver.connect(dsn)
    try:
        kwargs = dict(misuse.cursor_kwargs)
        args = kwargs.pop('args', ())
        xact = conn.transaction()
        if misuse.in_transaction:
            await xact.start()
        try:
            cur = await conn.cursor(misuse.query, *args, **kwargs)
            await getattr(cur, misuse.method)(*misuse.args)
        except Exception as e:
            error = e
        else:
            raise AssertionError('no error')
        try:
            after: object = await conn.fetchval('SELECT 42')
        except Exception as e:
            after = type(e)
        return outcome(error, after)
    finally:
        await conn.close()


@pytest.mark.parametrize('name', list(MISUSES))
def test_the_factory_raises_what_the_asyncio_cursor_raises(dsn: str, name: str) -> None:
    misuse = MISUSES[name]
    expected = asyncio.run(async_outcome(dsn, misuse))
    with mypgdriver.sync.connect(dsn) as conn:
        kwargs = dict(misuse.cursor_kwargs)
        args = kwargs.pop('args', ())
        xact = conn.transaction()
        if misuse.in_transaction:
            xact.start()
        with pytest.raises(Exception) as info:
            getattr(conn.cursor(misuse.query, *args, **kwargs), misuse.method)(*misuse.args)
        try:
            after: object = conn.fetchval('SELECT 42')
        except Exception as e:
            after = type(e)
        assert outcome(info.value, after) == expected
    assert expected[0] is not AssertionError


def test_commit_is_seen_by_another_connection(sync_conn: Connection, sync_observer: Connection) -> None:
    sync_conn.execute('CREATE TABLE sync_xact_c (x int)')
    try:
        with sync_conn.transaction(isolation='serializable'):
            sync_conn.execute('INSERT INTO sync_xact_c VALUES (1)')
            assert sync_conn.is_in_transaction()
            assert sync_conn.fetchval('SHOW transaction_isolation') == 'serializable'
            assert sync_observer.fetchval('SELECT count(*) FROM sync_xact_c') == 0
        assert not sync_conn.is_in_transaction()
        assert sync_observer.fetchval('SELECT count(*) FROM sync_xact_c') == 1
    finally:
        sync_conn.execute('DROP TABLE sync_xact_c')


def test_an_exception_rolls_back_and_propagates(sync_conn: Connection, sync_observer: Connection) -> None:
    sync_conn.execute('CREATE TABLE sync_xact_r (x int)')
    try:
        with pytest.raises(KeyError):
            with sync_conn.transaction():
                sync_conn.execute('INSERT INTO sync_xact_r VALUES (1)')
                raise KeyError('boom')
        assert sync_observer.fetchval('SELECT count(*) FROM sync_xact_r') == 0
        assert not sync_conn.is_in_transaction()
    finally:
        sync_conn.execute('DROP TABLE sync_xact_r')


def test_nested_blocks_are_savepoints(sync_conn: Connection) -> None:
    sync_conn.execute('CREATE TEMP TABLE n (x int)')
    with sync_conn.transaction():
        sync_conn.execute('INSERT INTO n VALUES (1)')
        with pytest.raises(mypgdriver.exceptions.UniqueViolationError):
            with sync_conn.transaction():
                sync_conn.execute('INSERT INTO n VALUES (2)')
                sync_conn.execute('CREATE TEMP TABLE n2 (x int UNIQUE); INSERT INTO n2 VALUES (1), (1)')
        with sync_conn.transaction():
            sync_conn.execute('INSERT INTO n VALUES (3)')
    assert [r['x'] for r in sync_conn.fetch('SELECT x FROM n ORDER BY x')] == [1, 3]


def test_start_commit_rollback_by_hand(sync_conn: Connection) -> None:
    sync_conn.execute('CREATE TEMP TABLE h (x int)')
    tr = sync_conn.transaction(readonly=False)
    tr.start()
    sync_conn.execute('INSERT INTO h VALUES (1)')
    inner = sync_conn.transaction()
    inner.start()
    sync_conn.execute('INSERT INTO h VALUES (2)')
    inner.rollback()
    tr.commit()
    assert [r['x'] for r in sync_conn.fetch('SELECT x FROM h')] == [1]
    tr2 = sync_conn.transaction()
    tr2.start()
    sync_conn.execute('INSERT INTO h VALUES (3)')
    tr2.rollback()
    assert sync_conn.fetchval('SELECT count(*) FROM h') == 1
    with sync_conn.transaction(readonly=True):
        with pytest.raises(mypgdriver.exceptions.ReadOnlySQLTransactionError):
            sync_conn.execute('CREATE TABLE sync_ro (x int)')
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        with sync_conn.transaction() as nothing:
            assert nothing is None
            sync_conn.transaction().commit()

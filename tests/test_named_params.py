"""Named parameters on the asyncpg-style APIs: mypgdriver.named() / named_many().

The opt-in leaves every method's signature and meaning as they are: the
caller unpacks ``named(query, values)`` into the call, which gets ``$n`` text
and positional values.  Tested through the asyncio and the sync API against
the server (the values arrive typed, in the right places), and for the errors
the issue asks to be clear (a missing name, an unused one, mixed styles).
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver import named, named_many, paramstyle
from mypgdriver.exceptions import QueryParameterError

# --- the conversion ----------------------------------------------------------------------

def test_named_gives_dollar_text_and_positional_values() -> None:
    assert named('SELECT :a::int + :b, :a', a=1, b=2) == ('SELECT $1::int + $2, $1', 1, 2)
    assert named('SELECT :a', {'a': None}) == ('SELECT $1', None)
    assert named('SELECT 1') == ('SELECT 1',)
    # not placeholders: casts, slices, string constants, quoted identifiers, comments
    text = ("SELECT x[1:2], y[lo:hi], ':a', \":a\", $$:a$$ -- :a\n"
            "FROM t /* :a */ WHERE z = :z")
    assert named(text, z=3) == (text.replace('= :z', '= $1'), 3)


def test_named_is_converted_once_per_text() -> None:
    query = 'SELECT :only_once_x'
    named(query, only_once_x=1)
    first = paramstyle.convert(query, paramstyle.NAMED)
    named(query, only_once_x=2)
    assert paramstyle.convert(query, paramstyle.NAMED) is first


@pytest.mark.parametrize(('call', 'message'), [
    (lambda: named('SELECT :a, :b', a=1), r"no value for the query parameter 'b'"),
    (lambda: named('SELECT :a', a=1, b=2), r"does not use the parameter 'b'"),
    (lambda: named('SELECT 1', {'a': 1}), r"does not use the parameter 'a'"),
    (lambda: named('SELECT :a, $1', a=1), r'mixes \$n parameters'),
    (lambda: named('SELECT :a', [1]), r'pass the values in a mapping, not a list'),
])
def test_named_errors_are_clear(call: Any, message: str) -> None:
    with pytest.raises(QueryParameterError, match=message):
        call()


def test_named_refuses_a_mapping_and_keywords_together() -> None:
    with pytest.raises(TypeError, match='not both'):
        named('SELECT :a', {'a': 1}, a=2)


def test_named_many_reads_rows_lazily_and_checks_each() -> None:
    read: list[int] = []

    def rows() -> Any:
        for i in range(3):
            read.append(i)
            yield {'id': i}

    text, args = named_many('INSERT INTO t VALUES (:id)', rows())
    assert text == 'INSERT INTO t VALUES ($1)'
    assert read == []
    assert list(args) == [(0,), (1,), (2,)]
    text, args = named_many('SELECT :a', [{'a': 1}, {'b': 1}])
    assert next(args) == (1,)
    with pytest.raises(QueryParameterError, match="no value for the query parameter 'a'"):
        next(args)


def test_conversion_cache_is_safe_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small cache evicts all the time: threads converting different texts
    # at once must never see "dictionary changed size during iteration".
    monkeypatch.setattr(paramstyle, 'CACHE_SIZE', 4)
    # Threads switched as often as possible, so that an unguarded eviction
    # meets another thread's insertion (without the lock, most runs fail).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20000):
                assert named(f'SELECT :v{n}_{i % 50}', {f'v{n}_{i % 50}': i})[1] == i
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


# --- against the server ------------------------------------------------------------------

async def test_named_on_every_asyncio_call(conn: mypgdriver.Connection) -> None:
    await conn.execute('CREATE TEMP TABLE named_t (id int PRIMARY KEY, name text, n numeric)')
    assert await conn.execute(*named('INSERT INTO named_t VALUES (:id, :name, :n)',
                                     id=1, name='a', n=2)) == 'INSERT 0 1'
    await conn.executemany(*named_many('INSERT INTO named_t VALUES (:id, :name, :id * 10)',
                                       ({'id': i, 'name': f'r{i}'} for i in range(2, 5))))
    rows = await conn.fetch(*named('SELECT id, name, n FROM named_t WHERE id >= :lo '
                                   'AND name <> :skip ORDER BY id', lo=2, skip='r3'))
    assert [tuple(r) for r in rows] == [(2, 'r2', 20), (4, 'r4', 40)]
    row = await conn.fetchrow(*named('SELECT name, :x::text AS x FROM named_t WHERE id = :id',
                                     {'id': 1, 'x': 'y'}), timeout=10)
    assert (row['name'], row['x']) == ('a', 'y')
    assert await conn.fetchval(*named('SELECT count(*) FROM named_t WHERE id = ANY(:ids)',
                                      ids=[1, 2, 9])) == 2
    async with conn.transaction():
        seen = [r['id'] async for r in conn.cursor(*named(
            'SELECT id FROM named_t WHERE id > :lo ORDER BY id', lo=1), prefetch=2)]
    assert seen == [2, 3, 4]
    stmt = await conn.prepare(named('SELECT :a::int * :b::int', a=0, b=0)[0])
    assert await stmt.fetchval(*named('SELECT :a::int * :b::int', a=6, b=7)[1:]) == 42
    # a server error about the value keeps the connection usable
    with pytest.raises(mypgdriver.UniqueViolationError):
        await conn.execute(*named('INSERT INTO named_t VALUES (:id, :name, 0)', id=1, name='x'))
    with pytest.raises(QueryParameterError):
        await conn.fetch(*named('SELECT :missing'))
    assert await conn.fetchval('SELECT 1') == 1


def test_named_on_the_sync_api(pg_cluster: Any) -> None:
    with mypgdriver.sync.connect(pg_cluster.dsn()) as sconn:
        assert sconn.fetchval(*mypgdriver.sync.named('SELECT :a::int + :b', a=40, b=2)) == 42
        sconn.execute('CREATE TEMP TABLE named_s (id int, v text)')
        sconn.executemany(*mypgdriver.sync.named_many(
            'INSERT INTO named_s VALUES (:id, :v)', [{'id': 1, 'v': 'x'}, {'id': 2, 'v': 'y'}]))
        assert [tuple(r) for r in sconn.fetch(
            *named('SELECT * FROM named_s WHERE v = :v', v='y'))] == [(2, 'y')]


async def test_named_many_error_in_a_later_row_applies_nothing(conn: mypgdriver.Connection) -> None:
    # named_many()'s promise: the error of row 3 fails the whole executemany()
    await conn.execute('CREATE TEMP TABLE named_atomic (id int, v text)')
    rows = [{'id': 1, 'v': 'a'}, {'id': 2, 'v': 'b'}, {'id': 3}]
    with pytest.raises(QueryParameterError, match="no value for the query parameter 'v'"):
        await conn.executemany(*named_many('INSERT INTO named_atomic VALUES (:id, :v)', rows))
    assert await conn.fetchval('SELECT count(*) FROM named_atomic') == 0
    assert not conn.is_in_transaction()

"""Cursors on a live server: iteration in prefetch batches, explicit fetch /
fetchrow / forward, the transaction requirement, portal cleanup and bounded
memory on a large result."""
from __future__ import annotations

import asyncio
import gc
import os
import sys

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.cursor import Cursor, CursorFactory

SERIES_10 = "SELECT generate_series(1, 10) AS n"


class MyRecord(mypgdriver.Record):
    pass


async def _open_portals(conn) -> list[str]:
    return [r[0] for r in await conn.fetch(
        "SELECT name FROM pg_cursors WHERE name <> '' ORDER BY name")]


# --- the transaction requirement -------------------------------------------------------

async def test_awaiting_a_cursor_outside_a_transaction_raises(conn):
    with pytest.raises(exceptions.NoActiveSQLTransactionError,
                       match=r'^cursor cannot be created outside of a transaction$'):
        await conn.cursor(SERIES_10)
    assert await conn.fetchval("SELECT 1") == 1


async def test_iterating_a_cursor_outside_a_transaction_raises(conn):
    with pytest.raises(exceptions.NoActiveSQLTransactionError,
                       match=r'^cursor cannot be created outside of a transaction$'):
        async for _ in conn.cursor(SERIES_10):
            pass
    assert conn.is_in_transaction() is False


async def test_cursor_used_after_its_transaction_ended_raises(conn):
    async with conn.transaction():
        cur = await conn.cursor(SERIES_10)
        assert [r[0] for r in await cur.fetch(2)] == [1, 2]
    with pytest.raises(exceptions.NoActiveSQLTransactionError):
        await cur.fetch(2)


# --- iteration ----------------------------------------------------------------------------

@pytest.mark.parametrize("prefetch", [None, 1, 3, 10, 11, 1000])
async def test_iteration_returns_every_row_in_order(conn, prefetch):
    async with conn.transaction():
        values = [r['n'] async for r in conn.cursor(SERIES_10, prefetch=prefetch)]
    assert values == list(range(1, 11))


async def test_iteration_fetches_prefetch_rows_per_round_trip(conn):
    proto = conn._protocol
    calls = []
    original = proto.execute_portal

    class Spy:
        # Protocol methods cannot be replaced on the extension type, so the
        # connection's protocol is swapped for a thin proxy.
        def __getattr__(self, name):
            return getattr(proto, name)

        def execute_portal(self, st, portal, limit, *args):
            calls.append(limit)
            return original(st, portal, limit, *args)

    conn._session.protocol = Spy()
    try:
        async with conn.transaction():
            values = [r[0] async for r in conn.cursor("SELECT generate_series(1, 23)",
                                                      prefetch=5)]
    finally:
        conn._session.protocol = proto
    assert values == list(range(1, 24))
    # Bind+Execute gave rows 1-5, then 4 Executes of 5 rows (the last one short).
    assert calls == [5, 5, 5, 5]


async def test_iteration_with_arguments_and_record_class(conn):
    async with conn.transaction():
        rows = [r async for r in conn.cursor(
            "SELECT g, $1::text || g AS label FROM generate_series(1, $2::int) g",
            "x", 3, record_class=MyRecord)]
    assert [tuple(r) for r in rows] == [(1, 'x1'), (2, 'x2'), (3, 'x3')]
    assert all(type(r) is MyRecord for r in rows)


async def test_iterating_an_empty_result(conn):
    async with conn.transaction():
        assert [r async for r in conn.cursor("SELECT 1 WHERE false")] == []
        assert await _open_portals(conn) == []


async def test_cursor_factory_can_be_iterated_twice(conn):
    async with conn.transaction():
        factory = conn.cursor("SELECT generate_series(1, 3)")
        assert isinstance(factory, CursorFactory)
        first = [r[0] async for r in factory]
        second = [r[0] async for r in factory]
    assert first == second == [1, 2, 3]


async def test_open_portals_are_visible_while_iterating(conn):
    async with conn.transaction():
        iterator = conn.cursor(SERIES_10, prefetch=4).__aiter__()
        assert (await iterator.__anext__())[0] == 1
        portals = await _open_portals(conn)
        assert len(portals) == 1 and portals[0].startswith('__mypg_portal_')
        assert [r[0] async for r in iterator] == list(range(2, 11))
        assert await _open_portals(conn) == []


async def test_anext_awaitables_keep_their_own_rows(conn):
    # Buffered rows come back as completed awaitables: each __anext__() call
    # owns its row even when awaited later or out of order.
    async with conn.transaction():
        iterator = conn.cursor(SERIES_10, prefetch=5).__aiter__()
        first = await iterator.__anext__()
        second, third = iterator.__anext__(), iterator.__anext__()
        assert [(await third)[0], (await second)[0], first[0]] == [3, 2, 1]
        assert (await iterator.__anext__())[0] == 4
        # Rows 5 (buffered) and 6 (the next batch) through asyncio's wrappers.
        assert (await asyncio.wait_for(iterator.__anext__(), 10))[0] == 5
        assert [r[0] for r in await asyncio.gather(iterator.__anext__())] == [6]
        assert [r[0] async for r in iterator] == [7, 8, 9, 10]
        with pytest.raises(StopAsyncIteration):
            await iterator.__anext__()


async def test_iteration_under_a_tracer_returns_every_row(conn):
    # With a trace function set (debuggers, coverage) the interpreter resumes
    # awaitables through __next__ rather than the send slot.
    calls = []

    def tracer(frame, event, arg):
        calls.append(event)
        return tracer

    async with conn.transaction():
        sys.settrace(tracer)
        try:
            values = [r[0] async for r in conn.cursor(SERIES_10, prefetch=4)]
        finally:
            sys.settrace(None)
    assert values == list(range(1, 11))
    assert calls


async def test_iteration_lets_go_of_rows_already_returned(conn):
    # A consumed row must not be kept alive by the iterator's batch.
    async with conn.transaction():
        iterator = conn.cursor("SELECT repeat('x', 1000000) FROM generate_series(1, 3)",
                               prefetch=3).__aiter__()
        row = await iterator.__anext__()
        value = row[0]
        before = sys.getrefcount(value)
        del row
        assert sys.getrefcount(value) == before - 1
        assert [len(r[0]) async for r in iterator] == [1000000, 1000000]


async def test_two_cursors_interleaved_have_distinct_portals(conn):
    async with conn.transaction():
        a = await conn.cursor("SELECT generate_series(1, 5)")
        b = await conn.cursor("SELECT generate_series(101, 105)")
        out = []
        for _ in range(5):
            out.append((await a.fetchrow())[0])
            out.append((await b.fetchrow())[0])
        assert a._portal != b._portal
        assert len(await _open_portals(conn)) == 2
    assert out == [1, 101, 2, 102, 3, 103, 4, 104, 5, 105]


async def test_prefetch_must_be_positive(conn):
    async with conn.transaction():
        with pytest.raises(exceptions.InterfaceError,
                           match=r'^prefetch argument must be greater than zero$'):
            async for _ in conn.cursor(SERIES_10, prefetch=0):
                pass


async def test_error_in_a_later_batch_is_raised_while_iterating(conn):
    seen = []
    with pytest.raises(exceptions.DivisionByZeroError):
        async with conn.transaction():
            async for r in conn.cursor("SELECT 10 / (5 - g) FROM generate_series(1, 10) g",
                                       prefetch=2):
                seen.append(r[0])
    # Batches of two: rows 1-2 and 3-4 arrive, the batch holding row 5 fails.
    assert seen == [2, 3, 5, 10]
    assert conn.is_in_transaction() is False
    assert await conn.fetchval("SELECT 1") == 1


async def test_bad_cursor_argument_is_data_error_and_connection_stays_usable(conn):
    async with conn.transaction():
        with pytest.raises(exceptions.DataError, match=r'\$1'):
            await conn.cursor("SELECT $1::int", "not an int")
        assert await conn.fetchval("SELECT 2") == 2


# --- explicit cursors ----------------------------------------------------------------------

async def test_fetch_forward_fetchrow_sequence_matches_asyncpg(conn):
    async with conn.transaction():
        cur = await conn.cursor(SERIES_10)
        assert isinstance(cur, Cursor)
        assert [r[0] for r in await cur.fetch(3)] == [1, 2, 3]
        assert await cur.forward(2) == 2
        assert (await cur.fetchrow())[0] == 6
        assert await cur.forward(100) == 4
        assert await cur.fetch(2) == []
        assert await cur.fetchrow() is None
        assert 'exhausted' in repr(cur)


async def test_forward_first_then_fetch(conn):
    async with conn.transaction():
        cur = await conn.cursor(SERIES_10)
        assert await cur.forward(4) == 4
        assert [r[0] for r in await cur.fetch(3)] == [5, 6, 7]
        assert await cur.forward(1) == 1
        assert [r[0] for r in await cur.fetch(10)] == [9, 10]
        assert await cur.fetch(1) == []


async def test_fetch_more_than_available_returns_the_rest(conn):
    async with conn.transaction():
        cur = await conn.cursor("SELECT generate_series(1, 4)")
        assert [r[0] for r in await cur.fetch(10)] == [1, 2, 3, 4]
        assert await cur.fetch(10) == []
        assert await cur.fetchrow() is None


async def test_fetchrow_walks_every_row(conn):
    async with conn.transaction():
        cur = await conn.cursor("SELECT generate_series(1, 3)")
        rows = [await cur.fetchrow() for _ in range(4)]
    assert [r[0] if r is not None else None for r in rows] == [1, 2, 3, None]


async def test_fetch_and_forward_reject_non_positive_counts(conn):
    async with conn.transaction():
        cur = await conn.cursor(SERIES_10)
        with pytest.raises(exceptions.InterfaceError, match=r'^n must be greater than zero$'):
            await cur.fetch(0)
        with pytest.raises(exceptions.InterfaceError, match=r'^n must be greater than zero$'):
            await cur.forward(-1)
        assert (await cur.fetchrow())[0] == 1


async def test_prefetch_is_only_for_iteration(conn):
    async with conn.transaction():
        with pytest.raises(exceptions.InterfaceError,
                           match=r'^prefetch argument can only be specified for iterable cursor$'):
            await conn.cursor(SERIES_10, prefetch=5)


async def test_error_in_a_later_row_is_raised_by_fetch(conn):
    async with conn.transaction():
        cur = await conn.cursor("SELECT 10 / (5 - g) FROM generate_series(1, 10) g")
        assert [r[0] for r in await cur.fetch(2)] == [2, 3]
        with pytest.raises(exceptions.DivisionByZeroError):
            await cur.fetch(5)
        with pytest.raises(exceptions.InFailedSQLTransactionError):
            await conn.fetchval("SELECT 1")


async def test_cursor_on_a_closed_connection_raises(connect_kwargs):
    other = await mypgdriver.connect(**connect_kwargs)
    await other.close()
    with pytest.raises(exceptions.InterfaceError, match='connection is closed'):
        other.cursor("SELECT 1")


# --- statements behind cursors ---------------------------------------------------------

async def test_cursor_uses_the_statement_cache(conn):
    query = "SELECT generate_series(1, $1::int) AS cached_cursor"
    async with conn.transaction():
        assert [r[0] async for r in conn.cursor(query, 2)] == [1, 2]
        assert [r[0] async for r in conn.cursor(query, 3)] == [1, 2, 3]
    names = await conn.fetch(
        "SELECT name FROM pg_prepared_statements WHERE statement = $1", query)
    assert len(names) == 1


async def test_cursor_without_statement_cache_uses_the_unnamed_statement(connect_kwargs):
    other = await mypgdriver.connect(**connect_kwargs, statement_cache_size=0)
    try:
        async with other.transaction():
            assert [r[0] async for r in other.cursor(
                "SELECT generate_series(1, $1::int)", 4, prefetch=3)] == [1, 2, 3, 4]
            cur = await other.cursor("SELECT generate_series(1, $1::int)", 5)
            assert [r[0] for r in await cur.fetch(2)] == [1, 2]
            assert await other.fetchval("SELECT $1::int * 10", 7) == 70
            assert [r[0] for r in await cur.fetch(5)] == [3, 4, 5]
        assert await other.fetch("SELECT name FROM pg_prepared_statements") == []
    finally:
        await other.close()


async def test_prepared_statement_cursor(conn):
    stmt = await conn.prepare("SELECT generate_series(1, $1::int) AS n")
    async with conn.transaction():
        assert [r['n'] async for r in stmt.cursor(4, prefetch=3)] == [1, 2, 3, 4]
        cur = await stmt.cursor(6)
        assert await cur.forward(5) == 5
        assert (await cur.fetchrow())['n'] == 6


# --- memory ----------------------------------------------------------------------------------

def _rss_bytes() -> int:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


@pytest.mark.skipif(not os.path.exists('/proc/self/statm'), reason='needs /proc (Linux)')
async def test_iterating_a_million_rows_keeps_memory_bounded(conn):
    total = 0
    count = 0
    gc.collect()
    base = peak = _rss_bytes()
    async with conn.transaction():
        async for row in conn.cursor(
                "SELECT g, 'row ' || g FROM generate_series(1, 1000000) g", prefetch=2000):
            total += row[0]
            count += 1
            if count % 10000 == 0:
                peak = max(peak, _rss_bytes())
    assert count == 1_000_000
    assert total == 1_000_000 * 1_000_001 // 2
    # Fetched at once, these rows take over 200 MB here; a batch of 2000
    # rows takes a few hundred KB.
    assert peak - base < 25 * 1024 * 1024, f'resident memory grew by {peak - base} bytes'


async def test_cursor_steps_apply_command_timeout(connect_kwargs):
    # Each cursor round trip (open, fetch, iterate) is bounded by the
    # connection's command_timeout when no timeout is given.
    conn = await mypgdriver.connect(**connect_kwargs, command_timeout=0.3)
    slow = "SELECT g, pg_sleep(CASE WHEN g = 3 THEN 5 ELSE 0 END) FROM generate_series(1, 4) g"
    try:
        with pytest.raises(asyncio.TimeoutError):
            async with conn.transaction():
                async for _ in conn.cursor(slow, prefetch=1):
                    pass
        assert conn.is_in_transaction() is False
        with pytest.raises(asyncio.TimeoutError):
            async with conn.transaction():
                cur = await conn.cursor(slow)
                assert [tuple(r)[0] for r in await cur.fetch(2)] == [1, 2]
                await cur.fetch(1)
        assert conn.is_in_transaction() is False
        assert await conn.fetchval("SELECT 7") == 7
    finally:
        await conn.close()

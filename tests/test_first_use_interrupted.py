"""A cached statement's first use interrupted at every point.

The first use of a query is two round trips: the unnamed statement is
described (Parse/Describe/Sync), then the named statement is created with
its first run (Parse/Describe/Bind/Execute/Sync, see Session.prepare_state).
Cancelled or timed out anywhere in between, or while the server runs it, the
connection must stay in sync, the statement cache must not claim a statement
the server lacks (its next use would fail with SQLSTATE 26000, an error
inside a transaction block), and no statement may be created twice.
"""
from __future__ import annotations

import asyncio
from typing import Any

from tests.support.session_state import run_cancelled, run_timed_out

#: Points tried: event-loop iterations before the cancel, and timeouts (s).
SPINS = range(0, 40)
TIMEOUTS = [0.0001 * 1.4 ** i for i in range(24)]    # 0.1 ms .. about 230 ms

_COUNT = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1"


async def _check_after(conn: Any, query: str, arg: int, expected: int, where: str) -> None:
    """The connection answers, inside a transaction block too, with one statement of `query`."""
    assert not conn.is_closed(), where
    async with conn.transaction():
        # Inside a transaction block a 26000 could not be retried: the
        # cache must hold no statement that the server lacks.
        assert await conn.fetchval(query, arg) == expected, where
    assert await conn.fetchval(_COUNT, query) == 1, where
    assert not conn.is_in_transaction(), where


async def test_first_use_cancelled_after_any_number_of_loop_iterations(conn):
    for spins in SPINS:
        query = f"SELECT $1::int * 2 + {spins}"
        where = f"cancelled after {spins} loop iterations"
        outcome = await run_cancelled(lambda q=query: conn.fetchval(q, 5), spins, where)
        assert outcome == 10 + spins or isinstance(outcome, asyncio.CancelledError), \
            f"{where}: {outcome!r}"
        await _check_after(conn, query, 7, 14 + spins, where)


async def test_first_use_timed_out_at_any_point(conn):
    for n, timeout in enumerate(TIMEOUTS):
        # pg_sleep makes the run itself long enough to be interrupted too.
        query = f"SELECT $1::int + {n} FROM (SELECT pg_sleep($2::float8)) AS s"
        where = f"timeout {timeout:.4f} s"
        outcome = await run_timed_out(lambda q=query: conn.fetchval(q, 1, 0.002), timeout,
                                      where)
        assert outcome == 1 + n or isinstance(outcome, asyncio.TimeoutError), \
            f"{where}: {outcome!r}"
        async with conn.transaction():
            assert await conn.fetchval(query, 2, 0.0) == 2 + n, where
        assert await conn.fetchval(_COUNT, query) == 1, where


async def test_first_use_cancelled_while_other_tasks_share_the_statement(conn):
    # Tasks pipelined on one connection meet the same new query: one of them
    # is cancelled at each point; the others get their results.
    for spins in range(0, 24, 2):
        query = f"SELECT $1::int * 3 + {spins}"
        where = f"one of four cancelled after {spins} loop iterations"
        tasks = [asyncio.ensure_future(conn.fetchval(query, i)) for i in range(4)]
        for _ in range(spins):
            await asyncio.sleep(0)
        tasks[1].cancel()
        done, _ = await asyncio.wait(tasks, timeout=15)
        assert len(done) == 4, f"{where}: hangs"
        for i, task in enumerate(tasks):
            if task.cancelled():
                assert i == 1, where
                continue
            assert task.result() == 3 * i + spins, where
        await _check_after(conn, query, 10, 30 + spins, where)
        assert await conn.fetchval(_COUNT, query) == 1, where


async def test_first_executemany_cancelled_at_any_point(conn):
    await conn.execute("DROP TABLE IF EXISTS first_use_many;"
                       "CREATE TABLE first_use_many (k int, v int)")
    try:
        for spins in range(0, 30):
            query = f"INSERT INTO first_use_many VALUES ($1::int + {spins} * 0, $2::int)"
            where = f"executemany cancelled after {spins} loop iterations"
            outcome = await run_cancelled(
                lambda q=query, s=spins: conn.executemany(q, [(s, 1), (s, 2)]), spins, where)
            assert outcome is None or isinstance(outcome, asyncio.CancelledError), \
                f"{where}: {outcome!r}"
            # Atomic: both rows or none.
            rows = await conn.fetchval("SELECT count(*) FROM first_use_many WHERE k = $1", spins)
            assert rows == (2 if outcome is None else rows) and rows in (0, 2), where
            async with conn.transaction():
                await conn.executemany(query, [(spins, 3)])
            assert await conn.fetchval(_COUNT, query) == 1, where
    finally:
        await conn.execute("DROP TABLE IF EXISTS first_use_many")

"""Pool shortcut calls share connections: pipelined onto lent connections when the pool is full."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mypgdriver import exceptions
from mypgdriver.pool import _may_share, create_pool
from tests.test_pool import app_name, observer, pool_kwargs  # noqa: F401  (fixtures)


async def _backends(observer: Any, app_name: str) -> int:
    return await observer.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app_name)


async def test_1000_tasks_through_a_pool_of_4(pool_kwargs, observer, app_name):
    async with create_pool(min_size=0, max_size=4, **pool_kwargs) as pool:
        peak = 0
        stop = asyncio.Event()

        async def watch() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, await _backends(observer, app_name))
                await asyncio.sleep(0.005)

        watcher = asyncio.ensure_future(watch())

        async def call(i: int) -> None:
            kind = i % 4
            if kind == 0:
                assert await pool.fetchval("SELECT $1::int", i) == i
            elif kind == 1:
                assert tuple(await pool.fetchrow("SELECT $1::int, $1::text", i)) == (i, str(i))
            elif kind == 2:
                assert [tuple(r) for r in await pool.fetch("SELECT $1::int", i)] == [(i,)]
            else:
                assert await pool.execute("SELECT $1::int", i) == "SELECT 1"

        await asyncio.gather(*(call(i) for i in range(1000)))
        stop.set()
        await watcher
        stats = pool.get_stats()
        assert 1 <= peak <= 4
        assert stats.size <= 4
        assert stats.shortcuts_pipelined > 500, stats
        assert max(deepest for _, deepest in stats.pipeline_depths) > 1
        assert stats.idle == stats.size      # every lent connection came back


async def test_errors_stay_with_their_call(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        results = await asyncio.gather(
            *(pool.fetchval("SELECT 1/$1::int", i % 3) for i in range(60)),
            return_exceptions=True)
        for i, result in enumerate(results):
            if i % 3 == 0:
                assert type(result) is exceptions.DivisionByZeroError
            else:
                assert result == 1 // (i % 3)
        assert await pool.fetchval("SELECT 5") == 5


async def test_a_connection_held_through_acquire_is_never_shared(pool_kwargs):
    async with create_pool(min_size=2, max_size=2, **pool_kwargs) as pool:
        async with pool.acquire() as held:
            held_pid = held.get_server_pid()
            pids = await asyncio.gather(*(pool.fetchval("SELECT pg_backend_pid()")
                                          for _ in range(200)))
            assert held_pid not in pids
            # Inside the held connection's transaction nothing foreign runs.
            async with held.transaction():
                assert await held.fetchval("SELECT 1") == 1


async def test_acquire_is_not_starved_by_shortcuts(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        stop = False

        async def hammer() -> None:
            while not stop:
                await pool.fetchval("SELECT 1")

        hammers = [asyncio.ensure_future(hammer()) for _ in range(20)]
        await asyncio.sleep(0.05)
        async with pool.acquire(timeout=10) as con:
            assert await con.fetchval("SELECT 2") == 2
        stop = True
        await asyncio.gather(*hammers)


async def test_session_changing_statements_take_their_own_connection(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        # The SET runs on a connection of its own and is reset on release:
        # concurrent shortcut calls never see it.
        results = await asyncio.gather(
            pool.fetchval("SHOW search_path"),
            pool.execute("SET search_path = pg_catalog"),
            pool.fetchval("SHOW search_path"),
            *(pool.fetchval("SELECT $1::int", i) for i in range(20)))
        assert results[0] == '"$user", public'
        assert results[1] == "SET"
        assert results[2] == '"$user", public'
        assert results[3:] == list(range(20))
        assert await pool.fetchval("SHOW search_path") == '"$user", public'


@pytest.mark.parametrize("query, shareable", [
    ("SELECT 1", True),
    ("SELECT * FROM t WHERE id = $1", True),
    ("UPDATE t SET x = 1 WHERE id = $1", True),
    ("INSERT INTO t VALUES ($1)", True),
    ("BEGIN", False),
    ("begin; insert into t values (1)", False),
    ("SET search_path = x", False),
    ("SELECT set_config('a.b', 'c', false)", False),
    ("LISTEN ch", False),
    ("CREATE TEMP TABLE x (i int)", False),
    ("SELECT pg_advisory_lock(1)", False),
    ("COPY t FROM STDIN", False),
    ("DO $$BEGIN PERFORM 1; END$$", False),
    ("CALL proc()", False),
    ("UPDATE t SET x = 1; SET search_path = y", False),
])
def test_what_may_share_a_connection(query, shareable):
    assert _may_share(query) is shareable


async def test_shortcut_timeout_and_cancel_leave_the_pool_usable(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        for trial in range(60):
            tasks = [asyncio.ensure_future(pool.fetchval("SELECT $1::int", trial * 10 + i))
                     for i in range(5)]
            for _ in range(trial % 5):
                await asyncio.sleep(0)
            tasks[trial % 5].cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for i, result in enumerate(results):
                if i != trial % 5:
                    assert result == trial * 10 + i
        with pytest.raises(asyncio.TimeoutError):
            await pool.fetchval("SELECT pg_sleep(5)", timeout=0.05)
        assert await pool.fetchval("SELECT $1::int", 42) == 42

"""Pipeline mode of the asyncio API: ``async with conn.pipeline() as p:`` (the sync API's core).

The rules are tested at length through the sync API (tests/test_sync_pipeline.py),
which runs the same core; here the asyncio face's own parts: awaiting a
result, the block's exit, other tasks waiting for the block, and a
cancelled task aborting the segment.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mypgdriver import exceptions
from mypgdriver.pipeline import PipelineResult


async def test_results_are_awaited_in_any_order(conn: Any) -> None:
    async with conn.pipeline() as p:
        a = await p.fetchval('SELECT $1::int * 2', 21)
        b = await p.fetchrow('SELECT $1::text AS t', 'x')
        c = await p.execute('SELECT 1')
        assert isinstance(a, PipelineResult)
        assert (await b)['t'] == 'x'
        assert await a == 42
    assert await c.result() == 'SELECT 1'
    assert conn.is_in_transaction() is False
    assert await conn.fetchval('SELECT 1') == 1


async def test_an_unread_error_is_raised_at_exit(conn: Any, monitor: Any) -> None:
    await conn.execute('DROP TABLE IF EXISTS apipe; CREATE TABLE apipe (id int PRIMARY KEY)')
    with pytest.raises(exceptions.UniqueViolationError):
        async with conn.pipeline() as p:
            await p.execute('INSERT INTO apipe VALUES ($1)', 1)
            await p.execute('INSERT INTO apipe VALUES ($1)', 1)
            skipped = await p.fetchval('SELECT 2')
    with pytest.raises(exceptions.PipelineAborted):
        await skipped
    assert await monitor.fetchval('SELECT count(*) FROM apipe') == 0
    assert await conn.fetchval('SELECT 1') == 1


async def test_other_tasks_wait_for_the_block(conn: Any) -> None:
    order: list[str] = []

    async def other() -> None:
        order.append(f'other {await conn.fetchval("SELECT 5")}')

    async with conn.pipeline() as p:
        task = asyncio.ensure_future(other())
        await asyncio.sleep(0.1)
        r = await p.fetchval('SELECT 4')
        assert await r == 4
        assert order == []
        with pytest.raises(exceptions.InterfaceError, match='pipeline is open'):
            await conn.fetchval('SELECT 1')
        order.append('block end')
    await task
    assert order == ['block end', 'other 5']


async def test_a_cancelled_task_aborts_the_segment(conn: Any, monitor: Any) -> None:
    await conn.execute('DROP TABLE IF EXISTS apipe2; CREATE TABLE apipe2 (id int)')
    pid = conn.get_server_pid()

    async def block() -> None:
        async with conn.pipeline() as p:
            await p.execute('INSERT INTO apipe2 VALUES ($1)', 1)
            slow = await p.fetchval('SELECT pg_sleep(10)::text || $1::text', 'x')
            await slow

    task = asyncio.ensure_future(block())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await conn.fetchval('SELECT pg_backend_pid()') == pid
    assert conn.is_in_transaction() is False
    assert await monitor.fetchval('SELECT count(*) FROM apipe2') == 0

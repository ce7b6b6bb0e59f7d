"""Pipelining: concurrent calls on one connection are sent at once, answered in order.

Every call carries its own argument and checks its own exact result, so a
result delivered to the wrong caller cannot pass.  Server-side effects are
checked from a second session (``monitor``).
"""
from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.core import block_owner
from tests.support.session_state import unique_table_name


@pytest.fixture
async def table(conn: Any, monitor: Any) -> Any:  # noqa: F811
    name = unique_table_name("mypg_pipe")
    await monitor.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, v text)")
    try:
        yield name
    finally:
        await monitor.execute(f"DROP TABLE IF EXISTS {name}")


# --- each caller gets its own result ---------------------------------------------------------

async def test_200_tasks_random_mix_each_get_their_own_result(conn, monitor, table):  # noqa: F811
    await conn.execute(f"INSERT INTO {table} VALUES (-1, 'taken')")
    doubled = await conn.prepare("SELECT $1::int * 2")
    rng = random.Random(12)
    kinds = [i % 8 for i in range(200)]
    rng.shuffle(kinds)

    async def one(i: int, kind: int) -> None:
        if kind == 0:
            rows = await conn.fetch("SELECT $1::int AS a, $1::text AS b", i)
            assert [tuple(r) for r in rows] == [(i, str(i))]
        elif kind == 1:
            row = await conn.fetchrow("SELECT $1::int + 1 AS n, 'r' || $1::text AS s", i)
            assert tuple(row) == (i + 1, f"r{i}")
        elif kind == 2:
            assert await conn.fetchval("SELECT repeat('y', $1::int)", i) == "y" * i
        elif kind == 3:
            assert await conn.execute(f"INSERT INTO {table} VALUES ($1, $2)", i, f"v{i}") \
                == "INSERT 0 1"
        elif kind == 4:
            assert await doubled.fetchval(i) == 2 * i
        elif kind == 5:
            with pytest.raises(exceptions.DivisionByZeroError):
                await conn.fetchval("SELECT $1::int / ($1::int - $1::int)", i)
        elif kind == 6:
            with pytest.raises(exceptions.UniqueViolationError):
                await conn.execute(f"INSERT INTO {table} VALUES (-1, $1)", str(i))
        else:
            assert await conn.execute(f"SELECT {i}") == "SELECT 1"

    await asyncio.gather(*(one(i, kind) for i, kind in enumerate(kinds)))
    stats = conn.get_pipeline_stats()
    assert stats.in_flight == 0
    assert stats.max_in_flight > 10, stats       # they really were in flight together
    inserted = sorted(i for i, kind in enumerate(kinds) if kind == 3)
    rows = await monitor.fetch(f"SELECT k, v FROM {table} WHERE k >= 0 ORDER BY k")
    assert [(r["k"], r["v"]) for r in rows] == [(i, f"v{i}") for i in inserted]
    assert await monitor.fetchval(f"SELECT v FROM {table} WHERE k = -1") == "taken"
    assert not conn.is_in_transaction()


async def test_execution_order_is_call_order(conn, table):
    # Each statement sees exactly the rows inserted by the calls made before it.
    async def insert(k: int) -> str:
        return await conn.execute(f"INSERT INTO {table} VALUES ($1, 'x')", k)

    async def count() -> int:
        return await conn.fetchval(f"SELECT count(*) FROM {table}")

    calls = []
    for k in range(30):
        calls.append(insert(k))
        calls.append(count())
    results = await asyncio.gather(*calls)
    assert results[1::2] == list(range(1, 31))


async def test_errors_do_not_leak_into_neighbours_outside_a_transaction(conn):
    results = await asyncio.gather(
        conn.fetchval("SELECT 1"), conn.fetchval("SELECT 1/0"), conn.fetchval("SELECT 3"),
        conn.execute("SELECT * FROM no_such_table_here"), conn.fetchval("SELECT $1::int", 5),
        return_exceptions=True)
    assert results[0] == 1
    assert type(results[1]) is exceptions.DivisionByZeroError
    assert results[2] == 3
    assert type(results[3]) is exceptions.UndefinedTableError
    assert results[4] == 5


async def test_concurrent_first_use_of_a_query(conn):
    # Every task misses the statement cache at once: each prepares, the
    # cache keeps one; the statements it drops are closed on the server.
    results = await asyncio.gather(*(conn.fetchval("SELECT $1::int + 1000", i)
                                     for i in range(100)))
    assert results == [i + 1000 for i in range(100)]
    assert await conn.fetchval("SELECT $1::int", 7) == 7
    left = await conn.fetchval(
        "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1::int + 1000'")
    assert left == 1


# --- max_pipeline ----------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [1, 3])
async def test_max_pipeline_applies_back_pressure(connect_kwargs, limit):
    conn = await mypgdriver.connect(**connect_kwargs, max_pipeline=limit)
    try:
        results = await asyncio.gather(*(conn.fetchval("SELECT $1::int", i) for i in range(60)))
        assert results == list(range(60))
        stats = conn.get_pipeline_stats()
        assert stats == (0, limit, limit)
    finally:
        await conn.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "eight", "0", True, None])
async def test_max_pipeline_must_be_a_positive_int(connect_kwargs, bad):
    with pytest.raises(exceptions.InterfaceError, match="max_pipeline must be a positive integer"):
        await mypgdriver.connect(**connect_kwargs, max_pipeline=bad)


# --- transactions keep their meaning -------------------------------------------------------------

FOREIGN = ("cannot perform operation: the connection is inside a transaction started by "
           "another task; use a pool (mypgdriver.create_pool) to give each task its own "
           "connection and run them concurrently, or await the end of that transaction first")


async def test_foreign_task_inside_a_block_raises_and_sends_nothing(conn, monitor, table):  # noqa: F811
    go = asyncio.Event()

    async def foreign(kind: str) -> Any:
        await go.wait()
        if kind == "execute":
            return await conn.execute(f"INSERT INTO {table} VALUES (99, 'foreign')")
        if kind == "fetch":
            return await conn.fetch("SELECT 1")
        if kind == "prepared":
            return await stmt.fetchval()
        if kind == "simple":
            return await conn.execute(f"INSERT INTO {table} VALUES (98, 'foreign')")
        if kind == "executemany":
            return await conn.executemany(f"INSERT INTO {table} VALUES ($1, 'f')", [(97,)])
        if kind == "transaction":
            async with conn.transaction():
                pass
        raise AssertionError(kind)

    stmt = await conn.prepare("SELECT 2")
    kinds = ["execute", "fetch", "prepared", "simple", "executemany", "transaction"]
    tasks = [asyncio.ensure_future(foreign(kind)) for kind in kinds]
    async with conn.transaction():
        await conn.execute(f"INSERT INTO {table} VALUES (1, 'mine')")
        go.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for kind, result in zip(kinds, results):
            assert type(result) is exceptions.InterfaceError, (kind, result)
            assert str(result) == FOREIGN, kind
        assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 1
    rows = await monitor.fetch(f"SELECT k, v FROM {table} ORDER BY k")
    assert [tuple(r) for r in rows] == [(1, "mine")]
    # After the block, any task may use the connection again.
    assert await asyncio.ensure_future(conn.fetchval("SELECT 5")) == 5


async def test_the_docs_quote_the_foreign_task_error_as_raised(conn):
    # docs/faq.rst quotes the whole message, docs/guide/concurrency.rst all of
    # it after "cannot perform operation: "; reST wraps lines, so whitespace
    # runs count as one space.
    go = asyncio.Event()

    async def foreign() -> Exception:
        await go.wait()
        try:
            await conn.fetchval("SELECT 1")
        except exceptions.InterfaceError as exc:
            return exc
        raise AssertionError("the call from another task was not refused")

    # Started before the block: a task started inside it would belong to it.
    task = asyncio.ensure_future(foreign())
    async with conn.transaction():
        go.set()
        message = str(await task)
    docs = Path(__file__).resolve().parent.parent / "docs"
    faq = " ".join((docs / "faq.rst").read_text().split())
    guide = " ".join((docs / "guide" / "concurrency.rst").read_text().split())
    assert f'("{message}")' in faq
    assert message.removeprefix("cannot perform operation: ") in guide


async def test_tasks_started_inside_the_block_belong_to_it(conn, monitor, table):  # noqa: F811
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with conn.transaction():
            await asyncio.gather(*(conn.execute(f"INSERT INTO {table} VALUES ($1, 'a')", k)
                                   for k in range(50)))
            assert conn.get_pipeline_stats().max_in_flight > 1
            assert await monitor.fetchval(f"SELECT count(*) FROM {table}") == 0
            raise Boom()
    # Rolled back together.
    assert await monitor.fetchval(f"SELECT count(*) FROM {table}") == 0
    assert not conn.is_in_transaction()

    async with conn.transaction():
        await asyncio.gather(*(conn.execute(f"INSERT INTO {table} VALUES ($1, 'b')", k)
                               for k in range(50)))
    assert await monitor.fetchval(f"SELECT count(*) FROM {table} WHERE v = 'b'") == 50


async def test_blocks_ended_in_another_task_leave_no_scope_behind(conn):
    # SQLAlchemy begins a block in the caller's task and, closing its
    # connection, rolls it back in a task of its own (asyncio.shield): the
    # caller's context must not keep the scope of every such block, which
    # each later block and call would scan.
    for _ in range(50):
        xact = conn.transaction()
        await xact.start()
        await asyncio.shield(xact.rollback())
    assert len(block_owner._XACT_SCOPES.get()) <= 1
    # The scope rules hold as before: the next block is this task's, and a
    # task started before it is a stranger to it.
    go = asyncio.Event()

    async def foreign() -> Any:
        await go.wait()
        return await conn.fetchval("SELECT 1")

    stranger = asyncio.ensure_future(foreign())
    async with conn.transaction():
        assert await conn.fetchval("SELECT 2") == 2
        go.set()
        with pytest.raises(exceptions.InterfaceError, match="started by another task"):
            await stranger
    assert len(block_owner._XACT_SCOPES.get()) == 0


async def test_error_inside_a_pipelined_block_fails_the_later_statements(conn, table):
    with pytest.raises(exceptions.DivisionByZeroError):
        async with conn.transaction():
            results = await asyncio.gather(
                conn.execute(f"INSERT INTO {table} VALUES (1, 'a')"),
                conn.fetchval("SELECT 1/0"),
                conn.fetchval("SELECT 3"),
                return_exceptions=True)
            assert results[0] == "INSERT 0 1"
            assert type(results[2]) is exceptions.InFailedSQLTransactionError
            raise results[1]
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0


async def test_block_started_by_a_finished_task_may_be_continued(conn, table):
    # A test fixture's setup task opens the block, the test body uses it.
    tr = conn.transaction()
    await asyncio.ensure_future(tr.start())
    await asyncio.ensure_future(conn.execute(f"INSERT INTO {table} VALUES (1, 'x')"))
    await tr.rollback()
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0


async def test_gathered_savepoints_inside_the_block(conn, table):
    async def nested(k: int) -> None:
        async with conn.transaction():
            await conn.execute(f"INSERT INTO {table} VALUES ($1, 'n')", k)

    async with conn.transaction():
        await nested(1)
        await asyncio.gather(asyncio.ensure_future(nested(2)))
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 2


# --- exclusive operations wait their turn --------------------------------------------------------

async def test_copy_and_executemany_interleaved_with_pipelined_fetches(conn, monitor, table):  # noqa: F811
    async def records():
        for k in range(1000, 1300):
            if k % 50 == 0:
                await asyncio.sleep(0)
            yield (k, "copied")

    async def fetches(base: int) -> None:
        for i in range(20):
            assert await conn.fetchval("SELECT $1::int", base + i) == base + i

    out: list = []

    async def sink(data: bytes) -> None:
        out.append(data)

    results = await asyncio.gather(
        fetches(0),
        conn.copy_records_to_table(table, records=records()),
        fetches(100),
        conn.executemany(f"INSERT INTO {table} VALUES ($1, 'many')", [(k,) for k in range(200)]),
        fetches(200),
        conn.copy_from_query("SELECT generate_series(1, 5)", output=sink),
        fetches(300),
        conn.executemany(f"INSERT INTO {table} VALUES ($1, 'amany')",
                         _aiter([(k,) for k in range(2000, 2100)])),
        fetches(400))
    assert results[1] == "COPY 300"
    assert results[5] == "COPY 5"
    assert b"".join(out) == b"1\n2\n3\n4\n5\n"
    counts = dict((r["v"], r["n"]) for r in await monitor.fetch(
        f"SELECT v, count(*) AS n FROM {table} GROUP BY v"))
    assert counts == {"copied": 300, "many": 200, "amany": 100}


async def _aiter(items):
    for item in items:
        await asyncio.sleep(0)
        yield item


async def test_calls_made_during_a_copy_run_after_it(conn, table):
    started = asyncio.Event()

    async def records():
        yield (1, "a")
        started.set()
        for _ in range(5):
            await asyncio.sleep(0.01)
        yield (2, "b")

    copy = asyncio.ensure_future(conn.copy_records_to_table(table, records=records()))
    await started.wait()
    # Queued behind the COPY: it sees both rows.
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 2
    assert await copy == "COPY 2"


async def test_reset_waits_for_calls_in_flight(conn):
    query = "SELECT current_setting('application_name') FROM pg_sleep(0.05)"
    await conn.fetchval(query)      # cached: one operation from now on
    await conn.execute("SET application_name = 'before_reset'")
    slow = asyncio.ensure_future(conn.fetchval(query))
    await asyncio.sleep(0)
    assert conn.get_pipeline_stats().in_flight == 1
    await conn.reset()
    assert await slow == "before_reset"
    assert await conn.fetchval("SELECT current_setting('application_name')") == ""


# --- timeouts and cancellation of pipelined calls ------------------------------------------------

async def test_timed_out_call_with_others_behind_it_runs_to_completion(conn, monitor, table):  # noqa: F811
    victim = asyncio.ensure_future(conn.execute(
        f"INSERT INTO {table} SELECT 1, 'slow' FROM pg_sleep(0.3)", timeout=0.05))
    behind = asyncio.ensure_future(conn.fetchval("SELECT $1::int", 2))
    with pytest.raises(asyncio.TimeoutError):
        await victim
    assert await behind == 2
    # Not cancelled on the server (the cancel could have hit `behind`): it ran.
    assert await monitor.fetchval(f"SELECT v FROM {table} WHERE k = 1") == "slow"
    assert await conn.fetchval("SELECT $1::int", 3) == 3


async def test_timed_out_call_alone_in_flight_is_cancelled_on_the_server(conn):
    with pytest.raises(asyncio.TimeoutError):
        await conn.fetchval("SELECT pg_sleep(30)", timeout=0.1)
    # Had it not been cancelled, this would wait for the 30 s sleep.
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 4), 10) == 4


async def test_abandoned_call_is_cancelled_once_it_is_the_last_in_flight(conn):
    ahead = asyncio.ensure_future(conn.fetchval("SELECT 1 FROM pg_sleep(0.1)"))
    victim = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)", timeout=0.05))
    with pytest.raises(asyncio.TimeoutError):
        await victim
    assert await ahead == 1
    # Once `ahead` was answered, the victim was the last in flight: cancelled then.
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 5), 10) == 5


@pytest.mark.parametrize("mode", ["cancel", "timeout"])
async def test_pipeline_cancellation_loop(conn, mode):
    """At many event-loop iterations and queue positions: only the victim is affected.

    The victim is at every queue position in turn; when it is the last one
    and slow, the driver cancels it on the server (nothing is behind it),
    elsewhere it runs to completion and its result is dropped.  Every other
    call must get exactly its own result; no QueryCanceledError may reach
    anyone.
    """
    trials = 600
    width = 6
    interrupted = 0
    for trial in range(trials):
        victim = trial % width
        spins = (trial // width) % 9
        slow = victim == width - 1 and (trial // width) % 2 == 0
        tasks = []
        for i in range(width):
            arg = trial * 100 + i
            query = "SELECT $1::int"
            if i == victim and slow:
                query = "SELECT $1::int FROM pg_sleep(0.02)"
            elif i == victim and mode == "timeout":
                query = "SELECT $1::int FROM pg_sleep(0.003)"
            timeout = None
            if mode == "timeout" and i == victim:
                timeout = 0.0005 * (spins % 5 + 1)
            tasks.append(asyncio.ensure_future(conn.fetchval(query, arg, timeout=timeout)))
        if mode == "cancel":
            for _ in range(spins):
                await asyncio.sleep(0)
            tasks[victim].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for i, result in enumerate(results):
            arg = trial * 100 + i
            if i == victim and result != arg:
                assert isinstance(result, (asyncio.CancelledError, asyncio.TimeoutError)), \
                    (trial, result)
                interrupted += 1
            else:
                assert result == arg, (trial, i, result)
        assert await conn.fetchval("SELECT $1::int", -trial) == -trial
    # The points really interrupted calls (not only ones already answered).
    assert interrupted > trials // 4, interrupted
    assert not conn.is_in_transaction()
    assert conn.get_pipeline_stats().in_flight == 0

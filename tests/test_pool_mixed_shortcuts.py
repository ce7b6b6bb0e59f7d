"""Every pool shortcut at once, with cancellations: all calls end, and so does close() (issue 22).

executemany and COPY stream with the connection held alone; they must never
wait for that behind shortcut calls pipelined onto a shared connection, and a
cancelled call must leave neither a turn nor a connection's reset waiting.
Each bound below is far above the time the work takes: a call still waiting
at the bound is a hang, reported as a failure instead of hanging the suite.
"""
from __future__ import annotations

import asyncio
import io
import random
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Set

import pytest

from mypgdriver.pool import Pool, create_pool
from tests.test_pool import app_name, observer, pool_kwargs  # noqa: F401  (fixtures)

#: How long the calls of one test may take before they count as hung.
CALLS_BOUND = 30.0
#: How long close() may take (the issue: it waited for ever).
CLOSE_BOUND = 10.0
#: How long the server may take to end the backends of a closed pool.
BACKENDS_GONE_BOUND = 10.0


@pytest.fixture
async def table(observer: Any, app_name: str) -> AsyncIterator[str]:
    """An unlogged table (task, n) for the rows the calls write, dropped afterwards."""
    name = f"{app_name}_rows"
    await observer.execute(f"CREATE UNLOGGED TABLE {name} (task int NOT NULL, n int NOT NULL)")
    try:
        yield name
    finally:
        await observer.execute(f"DROP TABLE {name}")


async def _all_end(tasks: List["asyncio.Task[Any]"], pool: Pool, what: str) -> None:
    """Wait until every task ended; fail (terminating the pool) if some are still waiting.

    asyncio.wait(), not wait_for(): a cancelled call stuck in a reset would
    make wait_for() wait for ever for the cancellation to finish.
    """
    _, pending = await asyncio.wait(tasks, timeout=CALLS_BOUND)
    if pending:
        for task in pending:
            task.cancel()
        pool.terminate()        # wakes whatever waits on the pool's connections
        await asyncio.wait(pending, timeout=CLOSE_BOUND)
        pytest.fail(f"{len(pending)} of {len(tasks)} {what} still waiting after "
                    f"{CALLS_BOUND:g} s")


async def _close(pool: Pool) -> None:
    """close() within CLOSE_BOUND (if cancelled by wait_for, close() terminates the pool)."""
    try:
        await asyncio.wait_for(pool.close(), CLOSE_BOUND)
    except asyncio.TimeoutError:
        pytest.fail(f"pool.close() still waiting after {CLOSE_BOUND:g} s")


async def _no_backends_left(observer: Any, app_name: str) -> None:
    """The server ends the backends of a closed pool (terminated ones a moment later)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + BACKENDS_GONE_BOUND
    while True:
        left = await observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app_name)
        if left == 0:
            return
        if loop.time() > give_up:
            pytest.fail(f"{left} backends of the closed pool still there")
        await asyncio.sleep(0.05)


async def _rows_per_task(observer: Any, table: str) -> Dict[int, int]:
    return dict(await observer.fetch(f"SELECT task, count(*) FROM {table} GROUP BY task"))


async def test_50_tasks_executemany_through_a_pool_of_10_all_finish(
        pool_kwargs, observer, app_name, table):
    # The report: 50 tasks, max_size=10.  The first round fills the
    # statement caches; from the second on, the calls lent onto shared
    # connections used to wait for ever for their turn to stream.
    rounds, tasks_per_round, rows_per_task = 3, 50, 5
    insert = f"INSERT INTO {table} VALUES ($1, $2)"
    pool = await create_pool(min_size=10, max_size=10, **pool_kwargs)
    try:
        for r in range(rounds):
            tasks = [asyncio.ensure_future(pool.executemany(
                insert, [(r * tasks_per_round + i, n) for n in range(rows_per_task)]))
                for i in range(tasks_per_round)]
            await _all_end(tasks, pool, f"executemany calls of round {r}")
            for task in tasks:
                assert task.result() is None
    finally:
        await _close(pool)
    rows = await _rows_per_task(observer, table)
    assert rows == {task: rows_per_task for task in range(rounds * tasks_per_round)}
    await _no_backends_left(observer, app_name)


# --- every shortcut at once, some of them cancelled ---

#: How many rows each writing call (executemany, COPY in) writes.
ROWS_PER_WRITE = 4


def _shortcut_calls(pool: Pool, table: str) -> List[Callable[[int], Awaitable[Any]]]:
    """One coroutine function per shortcut: call(task number), checking its own result."""
    insert = f"INSERT INTO {table} VALUES ($1, $2)"

    def rows(task: int) -> List[tuple]:
        return [(task, n) for n in range(ROWS_PER_WRITE)]

    async def fetch(task: int) -> None:
        # A little server time, so that cancellations find calls in flight.
        got = await pool.fetch("SELECT $1::int AS t, pg_sleep(0.002)", task)
        assert [r["t"] for r in got] == [task]

    async def fetchrow(task: int) -> None:
        assert tuple(await pool.fetchrow("SELECT $1::int, $1::text", task)) == (task, str(task))

    async def fetchval(task: int) -> None:
        assert await pool.fetchval("SELECT $1::int + 1", task) == task + 1

    async def execute(task: int) -> None:
        assert await pool.execute("SELECT $1::int", task) == "SELECT 1"

    async def executemany(task: int) -> None:
        assert await pool.executemany(insert, rows(task)) is None

    async def copy_records_to_table(task: int) -> None:
        assert await pool.copy_records_to_table(
            table, records=rows(task)) == f"COPY {ROWS_PER_WRITE}"

    async def copy_to_table(task: int) -> None:
        data = "".join(f"{t}\t{n}\n" for t, n in rows(task)).encode()
        assert await pool.copy_to_table(table, source=io.BytesIO(data)) == f"COPY {ROWS_PER_WRITE}"

    async def copy_from_query(task: int) -> None:
        out = io.BytesIO()
        assert await pool.copy_from_query(
            "SELECT $1::int FROM generate_series(1, 3)", task, output=out) == "COPY 3"
        assert out.getvalue() == f"{task}\n".encode() * 3

    return [fetch, fetchrow, fetchval, execute, executemany, copy_records_to_table,
            copy_to_table, copy_from_query]


#: The shortcuts whose calls write ROWS_PER_WRITE rows tagged with their task number.
WRITERS = {"executemany", "copy_records_to_table", "copy_to_table"}


async def _cancel_later(task: "asyncio.Task[Any]", rng: random.Random) -> None:
    """Cancel `task` after a few loop iterations or a short sleep, chosen by `rng`."""
    if rng.random() < 0.5:
        for _ in range(rng.randrange(30)):
            await asyncio.sleep(0)
    else:
        await asyncio.sleep(rng.uniform(0, 0.05))
    task.cancel()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
async def test_300_mixed_shortcut_calls_with_random_cancellations(
        pool_kwargs, observer, app_name, table, seed):
    rng = random.Random(seed)
    n_waves, per_wave = 10, 30
    pool = await create_pool(min_size=2, max_size=4, **pool_kwargs)
    closed = False
    try:
        calls = _shortcut_calls(pool, table)
        # executemany the most frequent: it is the call that streams on shared connections.
        weights = [8 if call.__name__ == "executemany" else 1 for call in calls]
        kinds = rng.choices(calls, weights, k=n_waves * per_wave)
        to_cancel: Set[int] = set(rng.sample(range(len(kinds)), len(kinds) // 4))
        tasks: List["asyncio.Task[Any]"] = []
        # In waves: the calls of a wave meet connections whose statement
        # caches the waves before filled (the hang of issue 22 needed that).
        for wave in range(n_waves):
            numbers = range(wave * per_wave, (wave + 1) * per_wave)
            wave_tasks = [asyncio.ensure_future(kinds[i](i)) for i in numbers]
            cancellers = [asyncio.ensure_future(_cancel_later(wave_tasks[i - numbers[0]], rng))
                          for i in numbers if i in to_cancel]
            await _all_end(wave_tasks, pool, f"shortcut calls of wave {wave}")
            await asyncio.gather(*cancellers)
            tasks.extend(wave_tasks)

        written: Set[int] = set()
        for i, task in enumerate(tasks):
            if task.cancelled():
                assert i in to_cancel
                continue
            # A call nobody cancelled succeeds, whatever happened to the others.
            error = task.exception()
            if error is not None:
                raise AssertionError(f"task {i} ({kinds[i].__name__}) failed") from error
            if kinds[i].__name__ in WRITERS:
                written.add(i)

        # What ran is committed, what was given back is not left in a transaction.
        assert await observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
            "AND (state LIKE 'idle in transaction%' OR xact_start IS NOT NULL "
            "     AND state <> 'active')", app_name) == 0
        assert await asyncio.wait_for(pool.fetchval("SELECT 42"), CALLS_BOUND) == 42
        closed = True
        await _close(pool)
    finally:
        if not closed:
            pool.terminate()
    await _no_backends_left(observer, app_name)

    rows = await _rows_per_task(observer, table)
    for i in written:
        assert rows.get(i) == ROWS_PER_WRITE, (i, kinds[i].__name__)
    # Writes are atomic: a cancelled one left all its rows or none.
    assert set(rows.values()) <= {ROWS_PER_WRITE}, rows
    assert set(rows) <= {i for i, call in enumerate(kinds) if call.__name__ in WRITERS}


# --- a call cancelled while it waits for its turn ---

async def test_executemany_cancelled_while_waiting_for_its_turn_leaves_the_pool_usable(
        pool_kwargs, observer, app_name, table):
    # One connection, fetches in flight and executemany calls queued behind
    # them and behind each other; one of them is cancelled after 0, 1, ... loop iterations, so
    # at every point of its wait (for the connection, for its turn, in the
    # middle of being handed it).
    insert = f"INSERT INTO {table} VALUES ($1, $2)"
    pool = await create_pool(min_size=1, max_size=1, **pool_kwargs)
    closed = False
    try:
        await pool.executemany(insert, [(-1, 0)])      # the statement is cached
        for point in range(40):
            base = 10 * point
            fetches = [asyncio.ensure_future(pool.fetchval("SELECT $1::int", i))
                       for i in range(3)]
            first = [asyncio.ensure_future(pool.executemany(insert, [(base, n), (base, n + 1)]))
                     for n in (0, 2)]
            victim = asyncio.ensure_future(pool.executemany(insert, [(base + 1, 0), (base + 1, 1)]))
            after = asyncio.ensure_future(pool.executemany(insert, [(base + 2, 0), (base + 2, 1)]))
            for _ in range(point):
                await asyncio.sleep(0)
            victim.cancel()
            tasks = [*first, *fetches, victim, after]
            await _all_end(tasks, pool, f"calls (victim cancelled after {point} iterations)")
            for task in [*first, *fetches, after]:
                task.result()
            # The pool goes on: a shortcut call and a stream of its own.
            assert await asyncio.wait_for(pool.fetchval("SELECT $1::int", point),
                                          CALLS_BOUND) == point
            await asyncio.wait_for(pool.executemany(insert, [(base + 3, 0)]), CALLS_BOUND)
            rows = await _rows_per_task(observer, table)
            assert rows[base] == 4 and rows[base + 2] == 2 and rows[base + 3] == 1
            assert rows.get(base + 1, 2) == 2     # the victim: all its rows or none
        closed = True
        await _close(pool)
    finally:
        if not closed:
            pool.terminate()
    await _no_backends_left(observer, app_name)

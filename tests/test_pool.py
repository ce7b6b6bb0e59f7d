"""The connection pool against a real server.

Each test gives its pool's connections their own application_name, so that
pg_stat_activity shows exactly the backends of that pool.
"""
from __future__ import annotations

import asyncio
import itertools
import signal
import time
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import pytest

from mypgdriver import exceptions
from mypgdriver.connection import Connection
from mypgdriver.pool import Pool, PoolConnectionProxy, PoolStats, create_pool
from tests.support.docstrings import undocumented_parameters
from tests.support.waiting import SETTLE

_app_names = itertools.count(1)

#: A test running longer than this fails: a pool bug typically shows up as
#: close() or acquire() waiting forever, which must not hang the suite.  Far
#: above what a test takes on a loaded machine (an initdb alone may take 20 s
#: there), and above SETTLE, so that a wait that never ends says what it waited for.
TEST_TIME_LIMIT = 120.0
#: Upper bound of a call that must end at its (short) timeout: a loaded
#: machine adds a fraction of it, a timeout that is not honoured never ends.
PROMPT = 5.0

# A terminated backend's AdminShutdownError arrives as the cause (asyncpg's way).
LOST = exceptions.ConnectionDoesNotExistError


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"test still running after {TEST_TIME_LIMIT} s: something hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, TEST_TIME_LIMIT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def app_name() -> str:
    return f"mypg_pool_test_{next(_app_names)}"


@pytest.fixture
def pool_kwargs(connect_kwargs: dict[str, Any], app_name: str) -> dict[str, Any]:
    """Arguments for create_pool: connect_kwargs plus this test's application_name."""
    return dict(connect_kwargs, server_settings={"application_name": app_name})


@pytest.fixture
async def observer(connect_kwargs: dict[str, Any]) -> AsyncIterator[Connection]:
    """A connection outside the pool, for looking at pg_stat_activity."""
    import mypgdriver

    con = await mypgdriver.connect(**connect_kwargs)
    try:
        yield con
    finally:
        await con.close()


async def backends(observer: Connection, app_name: str) -> int:
    return await observer.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app_name)


async def wait_until(predicate: Callable[[], Any], timeout: float = SETTLE) -> None:
    """Poll `predicate` (plain or async) until it is true."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.02)


def assert_no_leaked_slots(pool: Pool) -> None:
    """With nothing in use or being opened, every slot is an idle connection."""
    assert not pool._waiters
    assert pool._slots == pool.get_size() == pool.get_idle_size()


async def terminate_backends(observer: Connection, app_name: str) -> int:
    """pg_terminate_backend every backend of the pool; waits until they are gone."""
    # pg_terminate_backend waits (its second argument) from PostgreSQL 14 on;
    # before, it only signals.
    if observer.get_server_version() >= (14,):
        return await observer.fetchval(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
            "WHERE application_name = $1", app_name)
    count = await observer.fetchval(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = $1", app_name)
    deadline = time.monotonic() + SETTLE
    while await observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app_name):
        assert time.monotonic() < deadline, "terminated backends did not exit"
        await asyncio.sleep(0.01)
    return count


# --- creation and sizes ---


async def test_pool_opens_init_size_connections_concurrently(pool_kwargs, observer, app_name):
    in_progress = 0
    most_at_once = 0

    async def counting_connect(*args: Any, **kwargs: Any) -> Connection:
        nonlocal in_progress, most_at_once
        import mypgdriver

        in_progress += 1
        most_at_once = max(most_at_once, in_progress)
        try:
            return await mypgdriver.connect(*args, **kwargs)
        finally:
            in_progress -= 1

    pool = await create_pool(min_size=4, max_size=6, connect=counting_connect, **pool_kwargs)
    try:
        assert most_at_once == 4
        assert (pool.get_size(), pool.get_idle_size()) == (4, 4)
        assert (pool.get_init_size(), pool.get_min_size(), pool.get_max_size()) == (4, 4, 6)
        assert await backends(observer, app_name) == 4
        assert pool.get_stats().connections_opened == 4
    finally:
        await pool.close()
    assert pool.is_closing()
    await wait_until(lambda: _count_is(observer, app_name, 0))


async def test_async_with_closes_the_pool(pool_kwargs):
    async with create_pool(min_size=1, max_size=2, **pool_kwargs) as pool:
        assert isinstance(pool, Pool)
        assert not pool.is_closing()
        assert await pool.fetchval("SELECT 41 + 1") == 42
    assert pool.is_closing()
    assert pool.get_size() == 0
    with pytest.raises(exceptions.InterfaceError, match="pool is closed"):
        await pool.acquire()


async def test_shortcut_methods(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        assert await pool.execute("SELECT 1") == "SELECT 1"
        assert await pool.execute("SELECT $1::int", 5) == "SELECT 1"
        rows = await pool.fetch("SELECT g FROM generate_series(1, 3) g")
        assert [r["g"] for r in rows] == [1, 2, 3]
        row = await pool.fetchrow("SELECT 1 AS a, 'x' AS b")
        assert (row["a"], row["b"]) == (1, "x")
        assert await pool.fetchval("SELECT 1, 2", column=1) == 2
        assert pool.get_stats().acquires == 5


async def test_executemany_copy_and_transactions_through_the_pool(pool_kwargs, app_name):
    import io

    table = f"{app_name}_items"
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        await pool.execute(f"CREATE TABLE {table} (a int)")
        try:
            await pool.executemany(f"INSERT INTO {table} VALUES ($1)", [(1,), (2,)])
            assert await pool.copy_records_to_table(table, records=[(3,), (4,)]) == "COPY 2"
            assert await pool.copy_to_table(table, source=io.BytesIO(b"5\n")) == "COPY 1"
            out = io.BytesIO()
            assert await pool.copy_from_query(
                f"SELECT a FROM {table} ORDER BY a", output=out) == "COPY 5"
            assert out.getvalue() == b"1\n2\n3\n4\n5\n"
            out = io.BytesIO()
            assert await pool.copy_from_table(table, output=out) == "COPY 5"
            async with pool.acquire() as con:
                async with con.transaction():
                    await con.execute(f"INSERT INTO {table} VALUES (6)")
                    rows = [r[0] async for r in con.cursor(f"SELECT a FROM {table} ORDER BY a")]
                assert rows == [1, 2, 3, 4, 5, 6]
                stmt = await con.prepare(f"SELECT count(*) FROM {table}")
                assert await stmt.fetchval() == 6
        finally:
            await pool.execute(f"DROP TABLE {table}")


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_size=0, max_size=0), "max_size is expected to be greater than zero"),
    (dict(min_size=-1, max_size=1), "min_size is expected to be greater or equal to zero"),
    (dict(min_size=3, max_size=2), "min_size is greater than max_size"),
    (dict(min_size=2, max_size=3, init_size=1), "init_size is smaller than min_size"),
    (dict(min_size=1, max_size=3, init_size=4), "init_size is greater than max_size"),
    (dict(max_queries=0), "max_queries is expected to be greater than zero"),
    (dict(max_inactive_connection_lifetime=-1),
     "max_inactive_connection_lifetime is expected to be greater or equal to zero"),
])
def test_invalid_sizes_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        create_pool(**kwargs)


def test_connection_class_must_be_a_connection():
    with pytest.raises(TypeError, match="connection_class"):
        create_pool(connection_class=object)


def test_every_parameter_of_create_pool_is_documented_in_its_docstring():
    # What help(mypgdriver.create_pool) and IDEs show (connect_kwargs too).
    assert undocumented_parameters(create_pool) == []


async def test_acquire_before_init_raises_interface_error(pool_kwargs):
    pool = create_pool(min_size=0, max_size=1, **pool_kwargs)
    with pytest.raises(exceptions.InterfaceError, match="pool is not initialized"):
        await pool.acquire()


# --- many tasks, few connections ---


async def test_200_tasks_through_pool_of_5_never_exceed_5_backends(pool_kwargs, observer, app_name):
    samples: list[int] = []
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            samples.append(await backends(observer, app_name))
            await asyncio.sleep(0.005)

    async def request(i: int) -> int:
        async with pool.acquire() as con:
            await con.execute("SELECT pg_sleep(0.002)")
            assert await con.fetchval("SELECT $1::int * 2", i) == i * 2
            return await con.fetchval("SELECT $1::int", i)

    async with create_pool(min_size=5, max_size=5, **pool_kwargs) as pool:
        sampler = asyncio.ensure_future(sample())
        results = await asyncio.gather(*(request(i) for i in range(200)))
        stop.set()
        await sampler
        assert results == list(range(200))
        assert len(samples) >= 5
        assert max(samples) == 5
        stats = pool.get_stats()
        assert stats.acquires == 200
        assert stats.resets == 200
        assert stats.connections_opened == 5
        assert stats.connections_closed == 0
        assert stats.waiters == 0
        assert stats.timeouts == 0
        assert sum(count for _, count in stats.wait_histogram) == 200
        assert (stats.size, stats.idle) == (5, 5)
        assert_no_leaked_slots(pool)


async def test_waiters_are_served_first_come_first_served(pool_kwargs):
    order: list[int] = []

    async def waiter(i: int) -> None:
        async with pool.acquire() as con:
            order.append(i)
            await con.fetchval("SELECT 1")

    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        held = await pool.acquire()
        tasks = []
        for i in range(6):
            tasks.append(asyncio.ensure_future(waiter(i)))
            await asyncio.sleep(0)  # enqueue in this order
        assert pool.get_stats().waiters == 6
        await pool.release(held)
        await asyncio.gather(*tasks)
        assert order == [0, 1, 2, 3, 4, 5]


# --- timeouts and cancelled waiters ---


async def test_acquire_timeout_raises_and_does_not_leak_a_slot(pool_kwargs):
    async with create_pool(min_size=2, max_size=2, **pool_kwargs) as pool:
        held = [await pool.acquire(), await pool.acquire()]
        for _ in range(5):
            start = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await pool.acquire(timeout=0.02)
            assert time.monotonic() - start < PROMPT
        stats = pool.get_stats()
        assert (stats.timeouts, stats.waiters) == (5, 0)
        for con in held:
            await pool.release(con)
        # Both slots are still there: two acquires succeed at once.
        a = await pool.acquire(timeout=1)
        b = await pool.acquire(timeout=1)
        assert {await a.fetchval("SELECT 1"), await b.fetchval("SELECT 2")} == {1, 2}
        assert pool.get_size() == 2
        await pool.release(a)
        await pool.release(b)
        assert pool.get_stats().connections_opened == 2
        assert_no_leaked_slots(pool)


async def test_cancelled_waiter_does_not_leak_a_slot(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        held = await pool.acquire()
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert pool.get_stats().waiters == 0
        await pool.release(held)
        con = await pool.acquire(timeout=1)
        assert await con.fetchval("SELECT 7") == 7
        await pool.release(con)
        assert_no_leaked_slots(pool)


async def test_waiter_cancelled_just_after_handoff_passes_the_connection_on(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        held = await pool.acquire()
        first = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0)
        second = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0)
        await pool.release(held)
        # The connection was handed to `first`, which has not run yet.
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        con = await asyncio.wait_for(second, 2)
        assert await con.fetchval("SELECT 3") == 3
        await pool.release(con)
        assert_no_leaked_slots(pool)
        assert (pool.get_size(), pool.get_idle_size()) == (1, 1)
        assert pool.get_stats().connections_opened == 1


async def test_waiter_timing_out_with_zero_timeout(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        held = await pool.acquire()
        with pytest.raises(asyncio.TimeoutError):
            await pool.acquire(timeout=0)
        await pool.release(held)
        async with pool.acquire(timeout=0) as con:
            assert await con.fetchval("SELECT 1") == 1


@pytest.mark.parametrize("max_size, others, message", [
    (2, 3, "pool.acquire() timed out after 0.05 s: all 2 connections (max_size=2) are in use "
           "and 3 other tasks are waiting"),
    (2, 1, "pool.acquire() timed out after 0.05 s: all 2 connections (max_size=2) are in use "
           "and 1 other task is waiting"),
    (1, 0, "pool.acquire() timed out after 0.05 s: the only connection (max_size=1) is in use "
           "and no other task is waiting"),
])
async def test_acquire_timeout_says_how_long_and_what_holds_the_connections(
        pool_kwargs, max_size, others, message):
    async with create_pool(min_size=max_size, max_size=max_size, **pool_kwargs) as pool:
        held = [await pool.acquire() for _ in range(max_size)]
        ahead = [asyncio.ensure_future(pool.acquire()) for _ in range(others)]
        await asyncio.sleep(0)  # they wait in line before us
        with pytest.raises(asyncio.TimeoutError) as info:
            await pool.acquire(timeout=0.05)
        assert str(info.value) == message
        for task in ahead:
            task.cancel()
        await asyncio.gather(*ahead, return_exceptions=True)
        for con in held:
            await pool.release(con)
        assert_no_leaked_slots(pool)


async def test_acquire_timeout_while_opening_a_connection_says_so(pool_kwargs):
    async def connect_never(*args: Any, **kwargs: Any) -> Connection:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async with create_pool(min_size=0, max_size=1, connect=connect_never,
                           **pool_kwargs) as pool:
        with pytest.raises(asyncio.TimeoutError) as info:
            await pool.acquire(timeout=0.05)
        assert str(info.value) == (
            "pool.acquire() timed out after 0.05 s while opening a new connection")
        assert pool.get_stats().timeouts == 1
        assert_no_leaked_slots(pool)


# --- reset on release ---


async def test_release_resets_session_state(pool_kwargs, observer):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            await con.execute("SET statement_timeout = '12345'")
            await con.execute("CREATE TEMP TABLE pool_leftover (x int)")
            await con.execute("LISTEN pool_channel")
            await con.execute("SELECT pg_advisory_lock(4242)")
            await con.execute("BEGIN")
            await con.execute("INSERT INTO pool_leftover VALUES (1)")
            assert con.is_in_transaction()
        async with pool.acquire() as con:
            assert con.get_server_pid() == pid  # the same session, cleaned
            assert not con.is_in_transaction()
            assert await con.fetchval("SHOW statement_timeout") == "0"
            assert await con.fetchval("SELECT to_regclass('pg_temp.pool_leftover')") is None
            assert await con.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0
        locks = await observer.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid)
        assert locks == 0
        assert pool.get_stats().resets == 2


async def test_release_drops_the_previous_users_callbacks(pool_kwargs):
    first_user: list[str] = []
    second_user: list[str] = []

    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            await con.add_listener("pool_events", lambda *args: first_user.append(args[3]))
            con.add_log_listener(lambda c, msg: first_user.append(msg.message))
        async with pool.acquire() as con:
            assert con.get_server_pid() == pid
            await con.add_listener("pool_events", lambda *args: second_user.append(args[3]))
            await con.execute("NOTIFY pool_events, 'hello'")
            await con.execute("DO $$ BEGIN RAISE NOTICE 'a notice'; END $$")
            await wait_until(lambda: second_user == ["hello"])
            await asyncio.sleep(0.05)
        assert first_user == []


async def test_transaction_left_open_by_a_user_is_rolled_back(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            await con.execute("CREATE TEMP TABLE x (a int)")  # dropped on release
            tr = con.transaction()
            await tr.start()
            await con.execute("CREATE TABLE pool_uncommitted (a int)")
        async with pool.acquire() as con:
            assert not con.is_in_transaction()
            assert await con.fetchval("SELECT to_regclass('pool_uncommitted')") is None
            async with con.transaction():  # a new transaction starts cleanly
                assert await con.fetchval("SELECT 1") == 1


async def test_custom_reset_callback_replaces_the_default(pool_kwargs):
    calls: list[Connection] = []

    async def reset(con: Connection) -> None:
        calls.append(con)
        await con.execute("RESET ALL")

    async with create_pool(min_size=1, max_size=1, reset=reset, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            await con.execute("SET statement_timeout = '5s'")
            await con.execute("BEGIN")
        assert len(calls) == 1 and isinstance(calls[0], Connection)
        async with pool.acquire() as con:
            assert not con.is_in_transaction()  # rolled back before the callback
            assert await con.fetchval("SHOW statement_timeout") == "0"


async def test_failing_reset_replaces_the_connection(pool_kwargs):
    async def reset(con: Connection) -> None:
        raise RuntimeError("reset broke")

    async with create_pool(min_size=1, max_size=1, reset=reset, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
        async with pool.acquire() as con:
            assert con.get_server_pid() != pid
            assert await con.fetchval("SELECT 1") == 1
        stats = pool.get_stats()
        assert (stats.reset_failures, stats.resets) == (2, 0)
        assert stats.connections_closed == 2


async def test_init_runs_once_per_connection_and_setup_at_every_acquire(pool_kwargs):
    inits: list[int] = []
    setups: list[int] = []

    async def init(con: Connection) -> None:
        inits.append(con.get_server_pid())

    async def setup(con: PoolConnectionProxy) -> None:
        assert isinstance(con, PoolConnectionProxy)
        setups.append(await con.fetchval("SELECT pg_backend_pid()"))

    async with create_pool(min_size=2, max_size=2, init=init, setup=setup, **pool_kwargs) as pool:
        for _ in range(3):
            async with pool.acquire() as con:
                assert await con.fetchval("SELECT 1") == 1
        assert len(inits) == 2
        assert len(setups) == 3
        assert set(setups) <= set(inits)


# --- connections that must not be reused ---


async def test_tasks_cancelled_while_holding_connections(pool_kwargs, observer, app_name):
    started = asyncio.Event()
    holding = 0

    async def slow_request() -> None:
        nonlocal holding
        async with pool.acquire() as con:
            holding += 1
            if holding == 5:
                started.set()
            await con.fetchval("SELECT pg_sleep(30)")

    async with create_pool(min_size=5, max_size=5, **pool_kwargs) as pool:
        tasks = [asyncio.ensure_future(slow_request()) for _ in range(15)]
        await asyncio.wait_for(started.wait(), 5)
        await asyncio.sleep(0.05)  # the queries are running on the server
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        stats = pool.get_stats()
        # A cancelled call raises once the server answered its cancel, so a
        # connection usually comes back in sync and is reused; one whose
        # cancel was not answered in time is replaced, never reused.
        assert stats.broken_on_release <= 5
        assert stats.waiters == 0
        # Full strength again, refilled in the background; the abandoned
        # queries were cancelled on the server.
        await wait_until(lambda: pool.get_size() == 5 and pool.get_idle_size() == 5)
        await wait_until(lambda: _count_is(observer, app_name, 5))
        stats = pool.get_stats()
        assert stats.connections_opened == 5 + stats.broken_on_release

        async def check(i: int) -> None:
            async with pool.acquire() as con:
                assert await con.fetchval("SELECT $1::int", i) == i
                rows = await con.fetch("SELECT g FROM generate_series(1, $1::int) g", i % 7)
                assert [r[0] for r in rows] == list(range(1, i % 7 + 1))

        await asyncio.gather(*(check(i) for i in range(50)))
        assert_no_leaked_slots(pool)


async def test_cancellation_at_many_points_never_desyncs(pool_kwargs):
    async def request(i: int) -> None:
        async with pool.acquire() as con:
            await con.fetchval("SELECT $1::int", i)
            await con.fetch("SELECT g FROM generate_series(1, 200) g")
            await con.fetchval("SELECT $1::text", str(i))

    async with create_pool(min_size=2, max_size=2, **pool_kwargs) as pool:
        for point in range(40):
            task = asyncio.ensure_future(request(point))
            for _ in range(point):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            async with pool.acquire(timeout=5) as con:
                assert await con.fetchval("SELECT $1::int + 1000", point) == point + 1000
                assert await con.fetchval("SELECT $1::text", f"p{point}") == f"p{point}"
        await wait_until(lambda: pool.get_idle_size() == 2)
        assert_no_leaked_slots(pool)


async def test_connection_released_during_an_operation_is_replaced(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        con = await pool.acquire()
        pid = con.get_server_pid()
        running = asyncio.ensure_future(con.fetchval("SELECT pg_sleep(5)"))
        await asyncio.sleep(0.05)
        await pool.release(con)
        with pytest.raises(LOST):
            await asyncio.wait_for(running, 2)
        async with pool.acquire(timeout=5) as con:
            assert con.get_server_pid() != pid
            assert await con.fetchval("SELECT 5") == 5
        assert pool.get_stats().broken_on_release == 1


async def test_closed_connection_is_replaced_on_release(pool_kwargs):
    async with create_pool(min_size=2, max_size=2, **pool_kwargs) as pool:
        con = await pool.acquire()
        pid = con.get_server_pid()
        con.terminate()
        await pool.release(con)
        assert pool.get_stats().broken_on_release == 1
        await wait_until(lambda: pool.get_size() == 2)
        pids = await _pids(pool, 2)
        assert len(pids) == 2
        assert pid not in pids


async def test_max_queries_replaces_the_connection(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, max_queries=3, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            for _ in range(2):
                await con.fetchval("SELECT 1")
        async with pool.acquire() as con:
            assert con.get_server_pid() == pid  # 2 queries: kept
            await con.fetchval("SELECT 1")  # the third
        async with pool.acquire() as con:
            assert con.get_server_pid() != pid
        stats = pool.get_stats()
        assert (stats.connections_opened, stats.connections_closed) == (2, 1)


async def test_idle_connections_above_min_size_expire(pool_kwargs, observer, app_name):
    async with create_pool(min_size=1, max_size=4, max_inactive_connection_lifetime=0.2,
                           **pool_kwargs) as pool:
        held = [await pool.acquire() for _ in range(4)]
        for con in held:
            await pool.release(con)
        assert pool.get_size() == 4
        await wait_until(lambda: pool.get_size() == 1)
        assert pool.get_stats().connections_closed == 3
        await wait_until(lambda: _count_is(observer, app_name, 1))
        await asyncio.sleep(0.4)
        assert pool.get_size() == 1  # min_size is kept


async def _count_is(observer: Connection, app_name: str, n: int) -> bool:
    return await backends(observer, app_name) == n


async def test_expire_connections_replaces_all(pool_kwargs):
    async with create_pool(min_size=2, max_size=2, **pool_kwargs) as pool:
        held = await pool.acquire()
        held_pid = held.get_server_pid()
        async with pool.acquire() as con:
            idle_pid = con.get_server_pid()
        await pool.expire_connections()
        assert await held.fetchval("SELECT 1") == 1  # in use: still works
        await pool.release(held)
        await wait_until(lambda: pool.get_size() == 2 and pool.get_idle_size() == 2)
        pids = await _pids(pool, 2)
        assert len(pids) == 2
        assert not pids & {held_pid, idle_pid}


async def test_set_connect_args_applies_to_new_connections(pool_kwargs, connect_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        pool.set_connect_args(**dict(connect_kwargs,
                                     server_settings={"application_name": "mypg_pool_new"}))
        assert await pool.fetchval("SHOW application_name") == pool_kwargs[
            "server_settings"]["application_name"]
        await pool.expire_connections()
        assert await pool.fetchval("SHOW application_name") == "mypg_pool_new"


# --- connections dropped by the server ---


async def test_idle_connections_terminated_are_replaced_without_errors(
        pool_kwargs, observer, app_name):
    async with create_pool(min_size=3, max_size=3, **pool_kwargs) as pool:
        assert await terminate_backends(observer, app_name) == 3
        # The pool's sockets have seen the EOF (its listeners count each closed).
        await wait_until(lambda: pool.get_stats().connections_closed == 3)
        async with pool.acquire() as con:
            assert not con.is_closed()  # a dead connection is never handed out
            assert pool.get_stats().connections_closed >= 1
        results = await asyncio.gather(*(pool.fetchval("SELECT $1::int", i) for i in range(10)))
        assert results == list(range(10))
        stats = pool.get_stats()
        assert stats.connections_closed == 3
        assert stats.connections_opened == 6
        assert await backends(observer, app_name) == 3


async def test_connection_dropped_just_before_first_query_is_replaced(pool_kwargs, pg_cluster):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
        # psql blocks the event loop: the pool cannot have seen the EOF yet.
        pg_cluster.psql(f"SELECT pg_terminate_backend({pid}, 5000)")
        async with pool.acquire() as con:
            assert not con.is_closed()  # not noticed yet
            assert await con.fetchval("SELECT 11") == 11  # replaced and repeated
            assert con.get_server_pid() != pid
        stats = pool.get_stats()
        assert (stats.connections_opened, stats.connections_closed) == (2, 1)


async def test_connection_dropped_after_first_query_raises(pool_kwargs, pg_cluster):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            await con.fetchval("SELECT 1")
            pg_cluster.psql(f"SELECT pg_terminate_backend({pid}, 5000)")
            with pytest.raises(LOST):
                await con.fetchval("SELECT 2")
        async with pool.acquire() as con:
            assert await con.fetchval("SELECT 3") == 3
            assert con.get_server_pid() != pid


async def test_all_backends_terminated_mid_run(pool_kwargs, observer, app_name):
    ok = 0
    lost = 0
    stop = asyncio.Event()

    async def user(i: int) -> None:
        nonlocal ok, lost
        while not stop.is_set():
            try:
                async with pool.acquire(timeout=10) as con:
                    assert await con.fetchval("SELECT $1::int", i) == i
                    await con.execute("SELECT pg_sleep(0.001)")
                    assert await con.fetchval("SELECT $1::text", str(i)) == str(i)
                ok += 1
            except LOST:
                lost += 1

    async with create_pool(min_size=5, max_size=5, **pool_kwargs) as pool:
        users = [asyncio.ensure_future(user(i)) for i in range(30)]
        for _ in range(2):
            # Work is being done (on connections opened again after the last
            # termination, which a loaded machine may take a while to open).
            before = ok
            await wait_until(lambda before=before: ok > before)
            assert await terminate_backends(observer, app_name) >= 1
        before = ok
        await wait_until(lambda: ok > before)
        stop.set()
        await asyncio.gather(*users)
        assert ok > before  # work continued after the terminations
        assert lost <= 10  # only requests in flight at a termination, at most 5 each
        await wait_until(lambda: pool.get_size() == 5)
        results = await asyncio.gather(*(pool.fetchval("SELECT $1::int", i) for i in range(20)))
        assert results == list(range(20))
        assert await backends(observer, app_name) == 5
        assert pool.get_stats().connections_closed >= 5
        assert_no_leaked_slots(pool)


async def test_server_restart_is_bridged(pg_cluster):
    pg_cluster.require_local()
    from tools.pgcluster import PgCluster

    loop = asyncio.get_running_loop()
    cluster = PgCluster()
    try:
        await loop.run_in_executor(None, cluster.init)
        await loop.run_in_executor(None, cluster.start)
        async with create_pool(host=cluster.host, port=cluster.port, user="postgres",
                               database="postgres", min_size=3, max_size=3) as pool:
            pids_before = await _pids(pool, 3)
            await loop.run_in_executor(None, cluster.stop)
            # Requests arriving while the server is down wait for it.
            requests = [asyncio.ensure_future(pool.fetchval("SELECT $1::int", i))
                        for i in range(10)]
            await asyncio.sleep(0.3)
            assert not any(r.done() for r in requests)
            await loop.run_in_executor(None, cluster.start)
            assert await asyncio.wait_for(asyncio.gather(*requests), 15) == list(range(10))
            await wait_until(lambda: pool.get_idle_size() == 3, timeout=10)
            pids_after = await _pids(pool, 3)
            assert not pids_after & pids_before
            assert pool.get_stats().connections_closed >= 3

            # Restarted again with nobody using the pool: it refills by itself.
            opened = pool.get_stats().connections_opened
            await loop.run_in_executor(None, cluster.restart)
            await wait_until(lambda: pool.get_stats().connections_opened == opened + 3
                             and pool.get_idle_size() == 3, timeout=10)
            assert_no_leaked_slots(pool)
            assert not await _pids(pool, 3) & pids_after
    finally:
        await loop.run_in_executor(None, cluster.destroy)


async def _pids(pool: Pool, n: int) -> set[int]:
    """The server pids of `n` connections acquired at the same time."""
    held = [await pool.acquire(timeout=5) for _ in range(n)]
    pids = {con.get_server_pid() for con in held}
    for con in held:
        await pool.release(con)
    return pids


async def test_acquire_with_timeout_gives_up_while_server_is_down(connect_kwargs):
    # A port where nothing listens: every connection attempt is refused.
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    try:
        pool = await create_pool(min_size=0, max_size=2, host="127.0.0.1", port=port,
                                 user="postgres", database="postgres")
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError) as info:
            await pool.acquire(timeout=0.3)
        assert 0.25 < time.monotonic() - start < 0.3 + PROMPT
        # The refusal's own wording belongs to connect(); the pool says the rest.
        assert str(info.value).startswith(
            "pool.acquire() timed out after 0.3 s while opening a new connection; last error: ")
        stats = pool.get_stats()
        assert stats.timeouts == 1
        assert stats.connections_failed >= 2  # it retried
        assert pool.get_size() == 0
        await pool.close()
        # Without a timeout it retries for connect_retry_timeout, then raises the cause.
        pool = await create_pool(min_size=0, max_size=2, host="127.0.0.1", port=port,
                                 user="postgres", database="postgres", connect_retry_timeout=0.2)
        start = time.monotonic()
        with pytest.raises(OSError):
            await pool.acquire()
        assert 0.15 < time.monotonic() - start < 0.2 + PROMPT
        assert pool.get_stats().timeouts == 0
        await pool.close()
    finally:
        sock.close()


async def test_startup_failure_raises(connect_kwargs):
    with pytest.raises(exceptions.InvalidCatalogNameError):
        await create_pool(min_size=2, max_size=2,
                          **dict(connect_kwargs, database="no_such_database_here"))


# --- closing ---


async def test_graceful_close_waits_for_connections_in_use(pool_kwargs, observer, app_name):
    pool = await create_pool(min_size=3, max_size=3, **pool_kwargs)
    a = await pool.acquire()
    b = await pool.acquire()
    closing = asyncio.ensure_future(pool.close())
    await wait_until(lambda: pool.get_size() == 2)  # the idle one is closed at once
    assert not closing.done()
    assert pool.is_closing()
    with pytest.raises(exceptions.InterfaceError, match="pool is closing"):
        await pool.acquire()
    assert await a.fetchval("SELECT 1") == 1  # connections out keep working
    await pool.release(a)
    await asyncio.sleep(0.05)
    assert not closing.done()
    assert await b.fetchval("SELECT 2") == 2
    await pool.release(b)
    await asyncio.wait_for(closing, 5)
    assert pool.get_size() == 0
    await wait_until(lambda: _count_is(observer, app_name, 0))
    stats = pool.get_stats()
    assert (stats.connections_opened, stats.connections_closed) == (3, 3)


async def test_close_fails_waiters(pool_kwargs):
    pool = await create_pool(min_size=1, max_size=1, **pool_kwargs)
    held = await pool.acquire()
    waiter = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0.01)
    closing = asyncio.ensure_future(pool.close())
    with pytest.raises(exceptions.InterfaceError, match="pool is closing"):
        await waiter
    await pool.release(held)
    await asyncio.wait_for(closing, 5)


async def test_close_with_timeout_terminates_connections_still_out(pool_kwargs):
    pool = await create_pool(min_size=2, max_size=2, **pool_kwargs)
    held = await pool.acquire()
    start = time.monotonic()
    await pool.close(timeout=0.2)
    assert 0.15 < time.monotonic() - start < 0.2 + PROMPT
    assert pool.get_size() == 0
    with pytest.raises(exceptions.InterfaceError, match="released back to the pool"):
        await held.fetchval("SELECT 1")
    await pool.release(held)  # nothing to do, no error


async def test_terminate_closes_everything_at_once(pool_kwargs, observer, app_name):
    pool = await create_pool(min_size=3, max_size=3, **pool_kwargs)
    held = await pool.acquire()
    pool.terminate()
    assert pool.is_closing()
    assert pool.get_size() == 0
    with pytest.raises(exceptions.InterfaceError):
        await held.fetchval("SELECT 1")
    with pytest.raises(exceptions.InterfaceError, match="pool is closed"):
        await pool.acquire()
    await pool.release(held)
    await wait_until(lambda: _count_is(observer, app_name, 0))


async def test_terminate_during_a_release_frees_each_slot_once(pool_kwargs):
    pool = await create_pool(min_size=0, max_size=2, **pool_kwargs)
    con = await pool.acquire()
    releasing = asyncio.ensure_future(pool.release(con))
    await asyncio.sleep(0)  # the reset query is on its way
    pool.terminate()
    await asyncio.wait_for(releasing, 2)
    assert (pool._slots, pool.get_size()) == (0, 0)
    assert pool.get_stats().connections_closed == 1


async def test_terminate_during_a_handoff_frees_each_slot_once(pool_kwargs):
    pool = await create_pool(min_size=1, max_size=1, **pool_kwargs)
    held = await pool.acquire()
    waiter = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0)
    await pool.release(held)  # handed to the waiter, which has not run yet
    pool.terminate()
    with pytest.raises(exceptions.InterfaceError, match="pool is closed"):
        await asyncio.wait_for(waiter, 2)
    assert (pool._slots, pool.get_size()) == (0, 0)


async def test_close_during_a_handoff_fails_the_waiter(pool_kwargs):
    pool = await create_pool(min_size=1, max_size=1, **pool_kwargs)
    held = await pool.acquire()
    waiter = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0)
    await pool.release(held)  # handed to the waiter, which has not run yet
    await pool.close()  # starts before the waiter runs (a task would start after)
    with pytest.raises(exceptions.InterfaceError, match="pool is closing"):
        await waiter
    assert (pool._slots, pool.get_size()) == (0, 0)


# --- the proxy ---


async def test_use_after_release_raises_interface_error(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert isinstance(con, PoolConnectionProxy)
            get_pid = con.get_server_pid  # a method taken while acquired
            pid = get_pid()
            assert con.get_server_pid() == pid
            assert "released" not in repr(con)
        for call in (lambda: con.fetchval("SELECT 1"), lambda: con.execute("SELECT 1"),
                     lambda: con.fetch("SELECT 1"), lambda: con.fetchrow("SELECT 1")):
            with pytest.raises(exceptions.InterfaceError, match="released back to the pool"):
                await call()
        with pytest.raises(exceptions.InterfaceError, match="released back to the pool"):
            con.get_server_pid()
        with pytest.raises(exceptions.InterfaceError, match="released back to the pool"):
            get_pid()
        with pytest.raises(exceptions.InterfaceError, match="released back to the pool"):
            con.is_closed()
        assert "released" in repr(con)
        await pool.release(con)  # twice: nothing happens
        assert pool.get_idle_size() == 1


async def test_release_of_a_foreign_connection_raises(pool_kwargs, conn):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool, \
            create_pool(min_size=1, max_size=1, **pool_kwargs) as other:
        with pytest.raises(exceptions.InterfaceError, match="is not a member of this pool"):
            await pool.release(conn)
        async with other.acquire() as con:
            with pytest.raises(exceptions.InterfaceError, match="is not a member of this pool"):
                await pool.release(con)


async def test_acquire_context_cannot_be_entered_twice(pool_kwargs):
    async with create_pool(min_size=1, max_size=2, **pool_kwargs) as pool:
        ctx = pool.acquire()
        async with ctx:
            with pytest.raises(exceptions.InterfaceError, match="already acquired"):
                await ctx.__aenter__()


# --- statistics ---


async def test_stats_are_exact(pool_kwargs):
    async with create_pool(min_size=2, max_size=2, max_inactive_connection_lifetime=0,
                           **pool_kwargs) as pool:
        stats = pool.get_stats()
        assert stats == PoolStats(
            size=2, idle=2, min_size=2, max_size=2, connections_opened=2, connections_closed=0,
            connections_failed=0, acquires=0, acquires_waited=0, waiters=0,
            wait_time_total=0.0, wait_time_max=0.0, timeouts=0, resets=0, reset_failures=0,
            broken_on_release=0,
            wait_histogram=((0.001, 0), (0.01, 0), (0.1, 0), (1.0, 0), (10.0, 0),
                            (float("inf"), 0)),
            shortcuts_pipelined=0,
            pipeline_depths=((0, 1), (0, 1)))     # each ran its setup query alone
        for _ in range(3):
            async with pool.acquire():
                pass
        a = await pool.acquire()
        b = await pool.acquire()
        # (a timeout that a release delayed on a loaded machine does not reach)
        waiter = asyncio.ensure_future(pool.acquire(timeout=10))
        await asyncio.sleep(0.05)
        assert pool.get_stats().waiters == 1
        await asyncio.sleep(0.1)
        await pool.release(a)
        c = await waiter
        with pytest.raises(asyncio.TimeoutError):
            await pool.acquire(timeout=0.01)
        for con in (b, c):
            await pool.release(con)
        stats = pool.get_stats()
        assert stats.acquires == 6
        assert stats.acquires_waited == 1  # the handed-over one
        assert stats.timeouts == 1
        assert stats.waiters == 0
        assert stats.resets == 6
        assert (stats.connections_opened, stats.connections_closed) == (2, 0)
        hist = dict(stats.wait_histogram)
        assert hist[0.001] == 5  # served from idle connections: no wait
        assert hist[1.0] == 1  # waited about 0.15 s
        assert 0.14 < stats.wait_time_total == stats.wait_time_max < 1.0

"""Timeouts and cancellation: the query really stops on the server, and the
connection is either closed or in sync afterwards, never one result behind.

The last test cancels operations at several hundred different points (after
0..M event-loop iterations, after a small random delay, or by a tiny
timeout) and checks after each that the next query returns its own result.
Set MYPG_CANCEL_SEED to replay a failing run; the seed is in every failure
message.
"""
from __future__ import annotations

import asyncio
import gc
import os
import time
from typing import Any, Awaitable

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_sleeping
from tests.support.cancel_loop import assert_in_sync, check_loop_outcomes, run_cancellation_loop
from tests.support.waiting import apoll

SLEEP_FOREVER = "SELECT pg_sleep(30)"
# How long the server may take to notice a CancelRequest: far less on a
# loaded machine, far more (SLEEP_FOREVER's 30 s) if the cancel was lost.
STOP_BOUND = 10.0
# A timeout must fire about on time; this is the allowed lateness.
TIMEOUT_SLACK = 1.5
# A cancel that must not wait for a slow source (which takes 10 s) ends within this.
PROMPT = 5.0


async def wait_not_running(monitor, pid: int, bound: float = STOP_BOUND) -> None:
    """Fail unless backend `pid` stops running a statement within `bound` seconds."""
    async def activity() -> tuple[Any, Any]:
        # Inside a transaction the activity view is a snapshot: refresh it.
        await monitor.execute("SELECT pg_stat_clear_snapshot()")
        return await monitor.fetchrow(
            "SELECT state, query FROM pg_stat_activity WHERE pid = $1", pid) or (None, None)
    state, query = await apoll(activity, lambda row: row[0] != "active", timeout=bound)
    if state == "active":
        pytest.fail(f"backend {pid} still runs {query!r} {bound}s after the cancel")


async def expect_timeout(call: Awaitable[Any], timeout: float) -> float:
    """Await `call` (which was given `timeout`); it must raise TimeoutError on time."""
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(call, timeout + 10)
    elapsed = time.monotonic() - started
    assert elapsed < timeout + TIMEOUT_SLACK, f"timeout of {timeout}s fired after {elapsed:.2f}s"
    return elapsed


# --- timeout= on each call ------------------------------------------------------------

@pytest.mark.parametrize("method", ["fetch", "fetchrow", "fetchval"])
async def test_timeout_on_fetch_stops_server_query(conn, monitor, method):
    pid = conn.get_server_pid()
    await expect_timeout(getattr(conn, method)(SLEEP_FOREVER, timeout=0.3), 0.3)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 41)


@pytest.mark.parametrize("lost", [1, 2, 3])
async def test_a_cancel_request_the_server_ignored_is_repeated(conn, monitor, lost):
    # The server ignores a CancelRequest that reaches the backend while it is
    # still reading the statement (a timeout just after the send, on a busy
    # machine).  Simulated here by dropping the first `lost` requests: the
    # driver must send another while the statement runs, or the next call on
    # the connection waits for the statement's end (30 s here).
    send = conn._protocol.cancel_request
    calls = 0

    async def lossy_cancel_request() -> None:
        nonlocal calls
        calls += 1
        if calls > lost:
            await send()

    conn._protocol.cancel_request = lossy_cancel_request
    pid = conn.get_server_pid()
    await wait_not_running(monitor, pid)
    await expect_timeout(conn.fetchval("SELECT pg_sleep($1)", 30.0, timeout=0.2), 0.2)
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 44), 5) == 44
    assert calls == lost + 1
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 45)


async def test_timeout_on_fetch_with_arguments(conn, monitor):
    pid = conn.get_server_pid()
    await expect_timeout(conn.fetchval("SELECT pg_sleep($1)", 30.0, timeout=0.3), 0.3)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 42)


async def test_timeout_on_execute_simple_query(conn, monitor):
    pid = conn.get_server_pid()
    await expect_timeout(conn.execute("SELECT 1; SELECT pg_sleep(30); SELECT 2", timeout=0.3),
                         0.3)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 43)
    assert await conn.execute("SELECT 1; SELECT 2") == "SELECT 1"


async def test_timeout_on_execute_with_arguments(conn, monitor):
    pid = conn.get_server_pid()
    await expect_timeout(conn.execute("SELECT pg_sleep($1)", 30.0, timeout=0.3), 0.3)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 44)


async def test_timeout_on_executemany_rolls_back_everything(conn, monitor):
    await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many; CREATE TABLE mypg_cancel_many (i int)")
    try:
        pid = conn.get_server_pid()
        # Each row sleeps 50 ms: the timeout fires in the middle of the batch.
        rows = [(i,) for i in range(200)]
        await expect_timeout(conn.executemany(
            "INSERT INTO mypg_cancel_many SELECT $1 FROM pg_sleep(0.05)", rows, timeout=0.5), 0.5)
        await wait_not_running(monitor, pid)
        await assert_in_sync(conn, 45)
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_many") == 0
        await conn.executemany("INSERT INTO mypg_cancel_many VALUES ($1)", rows[:10])
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_many") == 10
    finally:
        await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many")


async def _slow_source(first, then, pause: float = 2.5):
    yield first
    await asyncio.sleep(pause)
    yield then


@pytest.mark.parametrize("method", ["executemany", "copy_to_table", "copy_records_to_table"])
async def test_timeout_with_stalling_async_source(conn, method):
    await conn.execute("DROP TABLE IF EXISTS mypg_cancel_src; CREATE TABLE mypg_cancel_src (i int)")
    try:
        if method == "executemany":
            call = conn.executemany("INSERT INTO mypg_cancel_src VALUES ($1)",
                                    _slow_source((1,), (2,)), timeout=0.3)
        elif method == "copy_to_table":
            call = conn.copy_to_table("mypg_cancel_src", source=_slow_source(b"1\n", b"2\n"),
                                      timeout=0.3)
        else:
            call = conn.copy_records_to_table("mypg_cancel_src",
                                              records=_slow_source((1,), (2,)), timeout=0.3)
        await expect_timeout(call, 0.3)
        await assert_in_sync(conn, 57)
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_src") == 0
    finally:
        await conn.execute("DROP TABLE IF EXISTS mypg_cancel_src")


async def test_timeout_while_statement_is_being_prepared(conn, monitor):
    # Parse waits for the lock the monitor holds: the timeout hits the prepare step.
    await monitor.execute("DROP TABLE IF EXISTS mypg_cancel_locked; "
                          "CREATE TABLE mypg_cancel_locked (i int)")
    try:
        await monitor.execute("BEGIN; LOCK TABLE mypg_cancel_locked IN ACCESS EXCLUSIVE MODE")
        pid = conn.get_server_pid()
        await expect_timeout(
            conn.fetchval("SELECT count(*) FROM mypg_cancel_locked", timeout=0.3), 0.3)
        await wait_not_running(monitor, pid)
        await monitor.execute("ROLLBACK")
        await assert_in_sync(conn, 46)
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_locked") == 0
    finally:
        if monitor.is_in_transaction():
            await monitor.execute("ROLLBACK")
        await monitor.execute("DROP TABLE IF EXISTS mypg_cancel_locked")


async def test_timeout_on_prepare(conn, monitor):
    if not hasattr(conn, "prepare"):
        pytest.skip("Connection.prepare() not implemented yet")
    await monitor.execute("DROP TABLE IF EXISTS mypg_cancel_locked2; "
                          "CREATE TABLE mypg_cancel_locked2 (i int)")
    try:
        await monitor.execute("BEGIN; LOCK TABLE mypg_cancel_locked2 IN ACCESS EXCLUSIVE MODE")
        pid = conn.get_server_pid()
        await expect_timeout(conn.prepare("SELECT * FROM mypg_cancel_locked2", timeout=0.3), 0.3)
        await wait_not_running(monitor, pid)
        await monitor.execute("ROLLBACK")
        await assert_in_sync(conn, 47)
        stmt = await conn.prepare("SELECT count(*) FROM mypg_cancel_locked2")
        assert await stmt.fetchval() == 0
    finally:
        if monitor.is_in_transaction():
            await monitor.execute("ROLLBACK")
        await monitor.execute("DROP TABLE IF EXISTS mypg_cancel_locked2")


async def test_timeout_inside_transaction_leaves_it_failed(conn, monitor):
    await conn.execute("BEGIN")
    pid = conn.get_server_pid()
    await expect_timeout(conn.fetchval(SLEEP_FOREVER, timeout=0.3), 0.3)
    await wait_not_running(monitor, pid)
    assert conn.is_in_transaction()
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        await conn.fetchval("SELECT 1")
    assert await conn.execute("ROLLBACK") == "ROLLBACK"
    assert not conn.is_in_transaction()
    await assert_in_sync(conn, 48)


async def test_zero_or_negative_timeout_raises_without_sending(conn):
    for timeout in (0, -1):
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetchval("SELECT 1", timeout=timeout)
    await assert_in_sync(conn, 49)


async def test_timeout_not_reached_returns_result(conn):
    assert await conn.fetchval("SELECT $1::int FROM pg_sleep(0.05)", 5, timeout=5) == 5
    # The timer of a finished call must not fire into a later one.
    await asyncio.sleep(0.1)
    assert await conn.fetchval("SELECT $1::int FROM pg_sleep(0.2)", 6, timeout=10) == 6


# --- command_timeout -----------------------------------------------------------------

async def test_command_timeout_applies_to_every_call(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs, command_timeout=0.3)
    try:
        pid = conn.get_server_pid()
        await expect_timeout(conn.fetchval(SLEEP_FOREVER), 0.3)
        await wait_not_running(monitor, pid)
        await expect_timeout(conn.execute(SLEEP_FOREVER), 0.3)
        await wait_not_running(monitor, pid)
        await assert_in_sync(conn, 50)
        # An explicit timeout overrides command_timeout.
        assert await conn.fetchval("SELECT $1::int FROM pg_sleep(0.5)", 3, timeout=5) == 3
    finally:
        await conn.close()


@pytest.mark.parametrize("bad", [0, -1, "0", "soon"])
async def test_command_timeout_must_be_positive(connect_kwargs, bad):
    with pytest.raises(exceptions.InterfaceError):
        await mypgdriver.connect(**connect_kwargs, command_timeout=bad)


# --- cancelling the awaiting task ----------------------------------------------------

async def test_cancelled_task_stops_server_query(conn, monitor):
    pid = conn.get_server_pid()
    task = asyncio.ensure_future(conn.fetchval(SLEEP_FOREVER))
    await wait_sleeping(monitor, pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 51)


async def test_wait_for_timeout_stops_server_query(conn, monitor):
    pid = conn.get_server_pid()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(conn.fetchval(SLEEP_FOREVER), 0.3)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 52)


async def test_call_right_after_cancel_waits_for_resync(conn):
    # The next call is issued at once, while the cancelled query is still
    # draining: it must wait, then get its own result.
    task = asyncio.ensure_future(conn.fetch("SELECT g FROM generate_series(1, 200000) g"))
    # (a fixed pause on purpose: rows are flowing when the cancel comes)
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 53), 10) == 53


async def test_cancelled_connect_leaves_nothing_behind(connect_kwargs):
    # Cancel connect() at every step of opening (TCP, SSLRequest, startup,
    # authentication): no task or future may be left to report an
    # exception nobody retrieved, and no session may stay open.
    loop = asyncio.get_running_loop()
    reports: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    app = "mypg_cancelled_connect"
    try:
        for spins in range(40):
            task = asyncio.ensure_future(mypgdriver.connect(
                **connect_kwargs, server_settings={"application_name": app}))
            for _ in range(spins):
                await asyncio.sleep(0)
            task.cancel()
            (result,) = await asyncio.gather(task, return_exceptions=True)
            if isinstance(result, mypgdriver.Connection):
                await result.close()
            else:
                assert isinstance(result, asyncio.CancelledError), result
        # (time for the cancelled connects' leftovers to reach the loop's exception handler)
        await asyncio.sleep(0.1)
        gc.collect()
        await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(previous)
    monitor = await mypgdriver.connect(**connect_kwargs)
    try:
        # (a backend leaves pg_stat_activity a moment after its client closed)
        assert await apoll(lambda: monitor.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app),
            lambda left: left == 0) == 0
    finally:
        await monitor.close()
    assert [f"{c.get('message')}: {c.get('exception')!r}" for c in reports] == []


# --- Connection.cancel() ---------------------------------------------------------------

async def test_public_cancel_raises_query_canceled(conn, monitor):
    pid = conn.get_server_pid()
    task = asyncio.ensure_future(conn.fetchval(SLEEP_FOREVER))
    await wait_sleeping(monitor, pid)
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await asyncio.wait_for(task, 5)
    await wait_not_running(monitor, pid)
    await assert_in_sync(conn, 54)


async def test_public_cancel_of_executemany(conn, monitor):
    await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many2; CREATE TABLE mypg_cancel_many2 (i int)")
    try:
        pid = conn.get_server_pid()
        task = asyncio.ensure_future(conn.executemany(
            "INSERT INTO mypg_cancel_many2 SELECT $1 FROM pg_sleep(0.05)",
            [(i,) for i in range(200)]))
        await wait_sleeping(monitor, pid)
        await conn.cancel()
        with pytest.raises(exceptions.QueryCanceledError):
            await asyncio.wait_for(task, 5)
        await assert_in_sync(conn, 55)
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_many2") == 0
    finally:
        await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many2")


async def test_public_cancel_racing_completion_does_not_hit_next_query(conn):
    hits = []
    for i in range(60):
        first = asyncio.ensure_future(conn.fetchval("SELECT $1::int", i))
        cancelling = asyncio.ensure_future(conn.cancel())
        try:
            assert await first == i
        except exceptions.QueryCanceledError:
            pass            # the cancel reached the query it was meant for
        try:
            assert await conn.fetchval("SELECT $1::int FROM pg_sleep(0.005)", i) == i
        except exceptions.QueryCanceledError:
            hits.append(i)
        await cancelling
    assert hits == []


async def _trickle(make_item, taken: asyncio.Event, count: int = 50, pause: float = 0.05):
    """`count` items, one every `pause` s; `taken` is set once the driver took the first."""
    for i in range(count):
        yield make_item(i)
        taken.set()
        await asyncio.sleep(pause)


async def test_public_cancel_of_copy_out(conn):
    if not hasattr(conn, "copy_from_query"):
        pytest.skip("COPY not implemented yet")
    received: list[bytes] = []

    async def slow_sink(data: bytes) -> None:
        received.append(data)
        await asyncio.sleep(0.01)

    task = asyncio.ensure_future(conn.copy_from_query(
        "SELECT g, repeat('x', 200), pg_sleep(0.001) FROM generate_series(1, 5000) g",
        output=slow_sink))
    # Cancel once data flows (a fixed sleep is too short on a loaded machine).
    assert await apoll(lambda: received, bool)
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await asyncio.wait_for(task, 5)
    await assert_in_sync(conn, 58)


async def test_public_cancel_of_cursor_fetch(conn, monitor):
    if not hasattr(conn, "cursor"):
        pytest.skip("cursors not implemented yet")
    async def fetch_slowly():
        async with conn.transaction():
            cur = await conn.cursor("SELECT g, pg_sleep(0.5) FROM generate_series(1, 10) g")
            await cur.fetch(5)

    task = asyncio.ensure_future(fetch_slowly())
    await wait_sleeping(monitor, conn.get_server_pid())
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await asyncio.wait_for(task, 5)
    assert not conn.is_in_transaction()
    await assert_in_sync(conn, 59)


@pytest.mark.parametrize("method", ["copy_to_table", "copy_records_to_table"])
async def test_public_cancel_of_copy_in_from_slow_source_is_prompt(conn, method):
    await conn.execute("DROP TABLE IF EXISTS mypg_cancel_copy; CREATE TABLE mypg_cancel_copy (i int)")
    try:
        # The source takes 10 s: a cancel that waits for it is far slower than PROMPT.
        taken = asyncio.Event()
        if method == "copy_to_table":
            call = conn.copy_to_table("mypg_cancel_copy",
                                      source=_trickle(lambda i: f"{i}\n".encode(), taken, 200))
        else:
            call = conn.copy_records_to_table("mypg_cancel_copy",
                                              records=_trickle(lambda i: (i,), taken, 200))
        task = asyncio.ensure_future(call)
        await asyncio.wait_for(taken.wait(), 30)     # the COPY is under way
        start = time.monotonic()
        await conn.cancel()
        with pytest.raises(exceptions.QueryCanceledError):
            await asyncio.wait_for(task, 15)
        assert time.monotonic() - start < PROMPT
        await assert_in_sync(conn, 60)
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_copy") == 0
    finally:
        await conn.execute("DROP TABLE IF EXISTS mypg_cancel_copy")


async def test_public_cancel_of_executemany_from_slow_source(conn):
    await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many3; CREATE TABLE mypg_cancel_many3 (i int)")
    try:
        taken = asyncio.Event()
        task = asyncio.ensure_future(conn.executemany(
            "INSERT INTO mypg_cancel_many3 VALUES ($1)", _trickle(lambda i: (i,), taken)))
        await asyncio.wait_for(taken.wait(), 30)     # the rows are being sent
        await conn.cancel()
        with pytest.raises(exceptions.QueryCanceledError):
            await asyncio.wait_for(task, 5)
        await assert_in_sync(conn, 61)
        assert await conn.fetchval("SELECT count(*) FROM mypg_cancel_many3") == 0
    finally:
        await conn.execute("DROP TABLE IF EXISTS mypg_cancel_many3")


async def test_public_cancel_when_idle_does_not_hit_next_query(conn):
    await conn.cancel()
    # (time for a stray cancel to land: it must not hit the next query)
    await asyncio.sleep(0.05)
    assert await conn.fetchval("SELECT $1::int FROM pg_sleep(0.3)", 56) == 56


async def test_public_cancel_on_closed_connection_is_a_no_op(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs)
    await conn.close()
    await conn.cancel()
    assert conn.is_closed()


# --- the cancellation loop -----------------------------------------------------------

LOOP_ITERATIONS = 1000
UVLOOP_ITERATIONS = 400
LOOP_TABLE = "mypg_cancel_loop"
DEFAULT_SEED = 20261121


def loop_seed() -> int:
    return int(os.environ.get("MYPG_CANCEL_SEED", DEFAULT_SEED))


async def test_cancellation_loop_never_leaves_connection_out_of_sync(connect_kwargs):
    outcomes = await run_cancellation_loop(connect_kwargs, loop_seed(), LOOP_ITERATIONS,
                                           LOOP_TABLE)
    check_loop_outcomes(outcomes, LOOP_ITERATIONS)


async def test_cancellation_loop_under_uvloop(connect_kwargs):
    uvloop = pytest.importorskip("uvloop")
    # uvloop's transports differ from asyncio's (buffering, write paths): run
    # the same loop on a uvloop event loop in a thread of its own.
    outcomes = await asyncio.to_thread(uvloop.run, run_cancellation_loop(
        connect_kwargs, loop_seed() + 1, UVLOOP_ITERATIONS, LOOP_TABLE + "_uv"))
    check_loop_outcomes(outcomes, UVLOOP_ITERATIONS)

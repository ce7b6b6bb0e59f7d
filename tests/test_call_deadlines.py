"""A call's timeout bounds the call: one deadline per public call, and no cleanup holds the caller.

Whatever a public call does inside (wait for its turn, prepare, introspect,
fetch), one timeout value becomes one deadline that every step spends.  When
the network stalls the server's answer, the caller gets its TimeoutError at
its deadline; the cleanup (cancel, drain, rollback, or closing the connection)
goes on in the background and the connection stays in sync or is closed.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.core.deadlines import CANCEL_ANSWER_WAIT, COMMIT_ANSWER_WAIT
from tests.support.backends import wait_sleeping
from tests.support.fixtures import AsyncConnect
from tests.support.session_state import unique_table_name
from tests.support.tcp_proxy import TcpProxy

#: How late a timed-out call may return (loop scheduling on a loaded 2-core machine).
MARGIN = 0.6


@pytest.fixture
async def locked_table(monitor: Any) -> AsyncIterator[str]:
    name = unique_table_name("mypg_deadline")
    await monitor.execute(f"CREATE TABLE {name} (k int)")
    await monitor.execute(f"INSERT INTO {name} SELECT generate_series(1, 3)")
    try:
        yield name
    finally:
        await monitor.execute(f"DROP TABLE IF EXISTS {name}")


async def _lock_for(connect_kwargs: dict[str, Any], table: str, seconds: float) -> Any:
    """Hold an ACCESS EXCLUSIVE lock on `table` for `seconds` (a task): a Parse naming it waits."""
    locker = await mypgdriver.connect(**connect_kwargs)
    await locker.execute("BEGIN")
    await locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")

    async def release() -> None:
        try:
            await asyncio.sleep(seconds)
            await locker.execute("ROLLBACK")
        finally:
            await locker.close()
    return asyncio.ensure_future(release())


async def _elapsed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.monotonic()
    try:
        result: Any = await call()
    except Exception as e:     # noqa: BLE001 - returned for the assertions
        result = e
    return time.monotonic() - started, result


# --- one deadline for every step of a call ---------------------------------------------------

async def test_cursor_iteration_prepare_and_first_fetch_share_one_deadline(
        conn, connect_kwargs, locked_table):
    # The Parse waits 0.6 s for the lock, then the query sleeps 0.8 s: 1.4 s
    # in all, where the cursor was given 1.0 s.
    releaser = await _lock_for(connect_kwargs, locked_table, 0.6)
    query = f"SELECT k, pg_sleep(0.8 / 3) FROM {locked_table} /* {id(conn)} */"

    async def iterate() -> list[Any]:
        async with conn.transaction():
            return [r async for r in conn.cursor(query, timeout=1.0, prefetch=10)]

    elapsed, result = await _elapsed(iterate)
    await releaser
    assert isinstance(result, asyncio.TimeoutError), result
    assert 0.9 <= elapsed < 1.0 + MARGIN, elapsed
    assert await conn.fetchval("SELECT 1") == 1
    assert not conn.is_in_transaction()


async def test_awaited_cursor_prepare_and_bind_share_one_deadline(
        conn, connect_kwargs, locked_table):
    releaser = await _lock_for(connect_kwargs, locked_table, 0.6)
    query = f"SELECT k FROM {locked_table} WHERE pg_sleep(0.8 / 3) IS NOT NULL /* {id(conn)} */"

    async def open_and_fetch() -> Any:
        async with conn.transaction():
            cur = await conn.cursor(query, timeout=1.0)
            return await cur.fetch(10, timeout=5)

    elapsed, result = await _elapsed(open_and_fetch)
    await releaser
    # Binding an awaited cursor runs nothing: the prepare's wait alone is
    # within the deadline, so it opens; the fetch has a deadline of its own.
    assert [r["k"] for r in result] == [1, 2, 3], result
    assert elapsed < 0.6 + 0.8 + MARGIN + 0.5


async def test_prepare_waiting_for_a_lock_ends_at_its_timeout(conn, connect_kwargs, locked_table):
    releaser = await _lock_for(connect_kwargs, locked_table, 2.0)
    elapsed, result = await _elapsed(
        lambda: conn.prepare(f"SELECT k FROM {locked_table} WHERE k > $1", timeout=0.5))
    await releaser
    assert isinstance(result, asyncio.TimeoutError), result
    assert 0.45 <= elapsed < 0.5 + MARGIN, elapsed
    assert await conn.fetchval("SELECT $1::int", 5) == 5


async def test_first_use_prepare_and_run_share_one_deadline(conn, connect_kwargs, locked_table):
    releaser = await _lock_for(connect_kwargs, locked_table, 0.6)
    elapsed, result = await _elapsed(lambda: conn.fetch(
        f"SELECT k, pg_sleep(0.8 / 3) FROM {locked_table} WHERE k > $1", 0, timeout=1.0))
    await releaser
    assert isinstance(result, asyncio.TimeoutError), result
    assert 0.9 <= elapsed < 1.0 + MARGIN, elapsed
    assert await conn.fetchval("SELECT 2") == 2


async def test_transaction_start_spends_one_deadline(open_conn: AsyncConnect, monitor,
                                                     locked_table):
    # start() waits for its turn behind a slow call, then sends BEGIN: all
    # within command_timeout, not a fresh budget per step.
    conn = await open_conn(command_timeout=0.5)
    slow = asyncio.ensure_future(conn.execute("SELECT pg_sleep(0.8)", timeout=5))
    await wait_sleeping(monitor, conn.get_server_pid())
    tr = conn.transaction()
    elapsed, result = await _elapsed(tr.start)
    assert isinstance(result, asyncio.TimeoutError), result
    assert elapsed < 0.5 + MARGIN, elapsed
    await slow
    # (The interrupted BEGIN's block is ended before the next call runs.)
    assert await conn.fetchval("SELECT 3") == 3
    assert not conn.is_in_transaction()


# --- a stalled answer: the caller gets its TimeoutError at its deadline --------------------------

@pytest.fixture
async def proxied(pg_cluster: Any, connect_kwargs: dict[str, Any]) -> AsyncIterator[Any]:
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        kwargs = dict(connect_kwargs, host="127.0.0.1", port=proxy.port)
        conn = await mypgdriver.connect(**kwargs, command_timeout=1.0)
        try:
            yield proxy, conn
        finally:
            proxy.resume()
            conn.terminate()


async def _after_stall(proxy: TcpProxy, conn: Any, monitor: Any) -> None:
    """The connection is in sync (and outside any transaction) or closed, once the network is back."""
    proxy.resume()
    try:
        value = await asyncio.wait_for(conn.fetchval("SELECT 41 + 1"), 15)
    except (exceptions.InterfaceError, exceptions.PostgresConnectionError,
            ConnectionError) as e:
        assert conn.is_closed(), e
        return
    assert value == 42
    assert not conn.is_in_transaction()
    pid = conn.get_server_pid()
    state = await monitor.fetchval(
        "SELECT state FROM pg_stat_activity WHERE pid = $1", pid)
    assert state in ("idle", "active", None), state


async def test_stalled_commit_times_out_at_command_timeout(proxied, monitor):
    proxy, conn = proxied
    tr = conn.transaction()
    await tr.start()
    await conn.execute("SELECT 1")
    proxy.stall()
    elapsed, result = await _elapsed(tr.commit)
    assert isinstance(result, asyncio.TimeoutError), result
    # (After the deadline, the answer to the cancel is waited for a moment.)
    assert elapsed < 1.0 + CANCEL_ANSWER_WAIT + MARGIN, elapsed
    text = str(result)
    assert "not known" in text, text
    await _after_stall(proxy, conn, monitor)


async def test_stalled_async_with_commit_times_out_at_command_timeout(proxied, monitor):
    proxy, conn = proxied

    async def block() -> None:
        async with conn.transaction():
            await conn.execute("SELECT 1")
            proxy.stall()

    elapsed, result = await _elapsed(block)
    assert isinstance(result, asyncio.TimeoutError), result
    assert elapsed < 1.0 + CANCEL_ANSWER_WAIT + MARGIN, elapsed
    await _after_stall(proxy, conn, monitor)


@pytest.mark.parametrize("kind", ["fetch", "execute", "executemany", "copy_out", "copy_in",
                                  "cursor", "prepare"])
async def test_stalled_call_times_out_at_its_timeout(proxied, monitor, kind):
    proxy, conn = proxied
    table = unique_table_name("mypg_stall")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        await conn.fetchval(f"SELECT count(*) FROM {table} WHERE k > $1", 0)   # warm

        async def call() -> Any:
            if kind == "fetch":
                return await conn.fetch(f"SELECT count(*) FROM {table} WHERE k > $1", 0,
                                        timeout=0.5)
            if kind == "execute":
                return await conn.execute(f"INSERT INTO {table} VALUES (1)", timeout=0.5)
            if kind == "executemany":
                return await conn.executemany(f"INSERT INTO {table} VALUES ($1)",
                                              [(i,) for i in range(10)], timeout=0.5)
            if kind == "copy_out":
                return await conn.copy_from_table(table, output=lambda b: None, timeout=0.5)
            if kind == "copy_in":
                return await conn.copy_records_to_table(table, records=[(1,), (2,)],
                                                        timeout=0.5)
            if kind == "cursor":
                async with conn.transaction():
                    cur = await conn.cursor(f"SELECT k FROM {table}", timeout=5)
                    proxy.stall()
                    return await cur.fetch(5, timeout=0.5)
            return await conn.prepare(f"SELECT k FROM {table} WHERE k < $1", timeout=0.5)

        if kind != "cursor":
            proxy.stall()
        elapsed, result = await _elapsed(call)
        assert isinstance(result, asyncio.TimeoutError), result
        # After the deadline, the server's answer to the cancel is waited
        # for a moment; for a stream whose end was sent (it may have
        # committed) a little longer, then the connection is closed.  (The
        # cursor case also rolls its block back: command_timeout, 1 s more.)
        limit = {"cursor": 1.5 + 2 * CANCEL_ANSWER_WAIT,
                 "executemany": 0.5 + COMMIT_ANSWER_WAIT,
                 "copy_in": 0.5 + COMMIT_ANSWER_WAIT}.get(kind, 0.5 + CANCEL_ANSWER_WAIT) + MARGIN
        assert elapsed < limit, elapsed
        await _after_stall(proxy, conn, monitor)
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_stalled_close_ends_at_its_timeout(proxied, monitor):
    proxy, conn = proxied
    busy = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(0.3)", timeout=10))
    await wait_sleeping(monitor, conn.get_server_pid())
    proxy.stall()
    elapsed, result = await _elapsed(lambda: conn.close(timeout=0.5))
    assert isinstance(result, asyncio.TimeoutError), result
    assert elapsed < 0.5 + MARGIN, elapsed
    assert conn.is_closed()
    with pytest.raises((exceptions.InterfaceError, exceptions.PostgresConnectionError,
                        exceptions.QueryCanceledError)):
        await busy


async def test_stalled_executemany_after_its_sync_reports_the_outcome_unknown(
        proxied, monitor):
    # The statement is prepared, so the rows and the Sync go out at once:
    # once the Sync is sent the server may commit, and with no answer to the
    # cancel the caller is told that the outcome is unknown, never that
    # nothing was written; the connection is closed rather than left in doubt.
    proxy, conn = proxied
    table = unique_table_name("mypg_stall_sync")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        query = f"INSERT INTO {table} VALUES ($1)"
        await conn.executemany(query, [(0,)])      # prepared and cached
        proxy.stall()
        elapsed, result = await _elapsed(
            lambda: conn.executemany(query, [(i,) for i in range(10)], timeout=0.5))
        assert isinstance(result, asyncio.TimeoutError), result
        assert "unknown" in str(result) and "nothing was written" not in str(result), result
        assert elapsed < 0.5 + COMMIT_ANSWER_WAIT + MARGIN, elapsed
        assert conn.is_closed()
    finally:
        proxy.resume()
        await monitor.execute(f"DROP TABLE {table}")


# --- one Deadline per public call, by construction ---

@pytest.fixture
def deadlines_made(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The timeout of every Deadline made from now on (the class counts its instances)."""
    from mypgdriver.core import deadlines

    made: list[float] = []
    original = deadlines.Deadline.__init__

    def counting_init(self: Any, loop: Any, timeout: Any) -> None:
        made.append(timeout)
        original(self, loop, timeout)
    monkeypatch.setattr(deadlines.Deadline, "__init__", counting_init)
    return made


CALLS_WITH_A_TIMEOUT: dict[str, Callable[[Any], Awaitable[Any]]] = {
    "fetch": lambda c: c.fetch("SELECT $1::int", 1, timeout=30),
    "fetchval (cache miss)": lambda c: c.fetchval("SELECT $1::int + 7", 1, timeout=30),
    "execute (simple)": lambda c: c.execute("SELECT 1", timeout=30),
    "executemany": lambda c: c.executemany("SELECT $1::int", [(1,), (2,)], timeout=30),
    "copy_records_to_table": lambda c: c.copy_records_to_table(
        "deadline_copy", records=[(1,), (2,)], timeout=30),
    "copy_from_query": lambda c: c.copy_from_query(
        "SELECT 1", output=lambda chunk: None, timeout=30),
    "prepare": lambda c: c.prepare("SELECT $1::int * 3", timeout=30),
    "reset": lambda c: c.reset(timeout=30),
}


@pytest.mark.parametrize("name", list(CALLS_WITH_A_TIMEOUT))
async def test_a_public_call_makes_one_deadline_and_steps_never_make_another(
        conn, deadlines_made, name):
    await conn.execute("CREATE TEMP TABLE IF NOT EXISTS deadline_copy (k int)")
    deadlines_made.clear()
    await CALLS_WITH_A_TIMEOUT[name](conn)
    # Its steps (turn, prepare, introspect, run, drain) asked that one for
    # the time left; none derived a deadline of its own from the timeout.
    assert deadlines_made == [30]
    deadlines_made.clear()
    await conn.fetchval("SELECT 1")            # no timeout: the shared NO_DEADLINE
    assert deadlines_made == []


async def test_a_prepared_statement_call_and_a_transaction_make_one_deadline_each(
        conn, deadlines_made):
    statement = await conn.prepare("SELECT $1::int")
    deadlines_made.clear()
    assert await statement.fetchval(5, timeout=30) == 5
    assert deadlines_made == [30]
    deadlines_made.clear()
    async with conn.transaction():
        assert await conn.fetchval("SELECT 2", timeout=20) == 2
    assert deadlines_made == [20]


def test_a_sync_call_makes_one_deadline(sync_conn, deadlines_made):
    # The sync API runs the asyncio call path: the same single deadline.
    assert sync_conn.fetchval("SELECT $1::int", 4, timeout=30) == 4
    sync_conn.executemany("SELECT $1::int", [(1,), (2,)], timeout=15)
    assert deadlines_made == [30, 15]

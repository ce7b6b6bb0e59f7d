"""Handles obtained through a pool checkout die with the checkout.

A Transaction, PreparedStatement, Cursor or CursorFactory made through the
PoolConnectionProxy that ``pool.acquire()`` returned belongs to that
checkout: once the connection is released, any use of it raises
InterfaceError ('... released back to the pool'), and nothing it would have
sent reaches the session of the next user of the same server connection.

Every pool here has exactly one connection, so the next user provably gets
the same backend (checked by its pid).
"""
from __future__ import annotations

import asyncio
import gc
import inspect
import time
import warnings
from typing import Any, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.session_state import SharedTable, monitor, shared_table  # noqa: F401  (fixtures)

RELEASED = "released back to the pool"
#: Rows the handles of the first user (A) would write, and the next user's (B).
A_BLOCK, B_BLOCK = 1, 2


@pytest.fixture
async def pool(connect_kwargs):
    pool = await mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1)
    try:
        yield pool
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def use(call: Callable[[], Any]) -> Any:
    """Call a handle's method; await the result if it is awaitable."""
    result = call()
    if inspect.isawaitable(result):
        result = await result
    return result


class NextUser:
    """User B: the same server connection, inside its own transaction, writing rows."""

    def __init__(self, pool: Any, table: SharedTable, pid: int) -> None:
        self.pool = pool
        self.table = table
        self.pid = pid

    async def __aenter__(self) -> "NextUser":
        self.con = await self.pool.acquire()
        assert self.con.get_server_pid() == self.pid, "the pool gave B another connection"
        self.tr = self.con.transaction()
        await self.tr.start()
        await self.con.executemany(f"INSERT INTO {self.table.name} (block, i) VALUES ($1, $2)",
                                   [(B_BLOCK, 0), (B_BLOCK, 1)])
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            if exc_info[0] is None:
                # B's transaction is still its own, open and healthy.
                assert self.con.is_in_transaction() is True
                assert await self.con.fetchval("SELECT 41 + 1") == 42
                await self.tr.commit()
        finally:
            await self.pool.release(self.con)
        if exc_info[0] is None:
            assert await self.table.count(B_BLOCK) == 2, "the next user's committed rows are lost"
            assert await self.table.count(A_BLOCK) == 0, "the released handle wrote rows"


# --- the bug report ------------------------------------------------------------------------

async def test_released_transaction_cannot_roll_back_the_next_users_transaction(
        shared_table, pool):
    con = await pool.acquire()
    pid = con.get_server_pid()
    tr = con.transaction()
    await tr.start()
    await con.execute(f"INSERT INTO {shared_table.name} (block, i) VALUES ($1, 0)", A_BLOCK)
    await pool.release(con)                 # without finishing: the pool resets it
    async with NextUser(pool, shared_table, pid):
        with pytest.raises(exceptions.InterfaceError, match=RELEASED):
            await tr.rollback()


# --- Transaction ---------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["start", "commit", "rollback", "async_with"])
async def test_transaction_from_released_checkout_refuses_use(shared_table, pool, method):
    con = await pool.acquire()
    pid = con.get_server_pid()
    tr = con.transaction()
    if method in ("commit", "rollback"):
        await tr.start()
    await pool.release(con)
    async with NextUser(pool, shared_table, pid):
        with pytest.raises(exceptions.InterfaceError, match=RELEASED):
            if method == "async_with":
                async with tr:
                    pass
            else:
                await getattr(tr, method)()


#: What the pool itself reports when a connection is released inside a
#: transaction (as asyncpg does): expected below, and the only report allowed.
RELEASED_IN_TRANSACTION = "released inside an open transaction"


def unexpected_reports(contexts: list) -> list:
    return [context for context in contexts
            if RELEASED_IN_TRANSACTION not in context.get("message", "")]


async def rows_in_a_transaction(con: Any):
    """An async generator that yields rows inside a transaction block."""
    async with con.transaction():
        for i in range(3):
            yield await con.fetchval("SELECT $1::int", i)


async def test_abandoned_generator_in_a_transaction_is_finalized_quietly_after_release(pool):
    # The generator is left at its first row, its connection released; when
    # it is collected, the loop's finalizer hook runs its aclose() in a
    # task, whose transaction __aexit__ must neither raise nor touch the
    # connection (the pool's reset rolled the block back).
    loop = asyncio.get_running_loop()
    reports: list = []
    loop.set_exception_handler(lambda loop, context: reports.append(context))
    try:
        con = await pool.acquire()
        rows = rows_in_a_transaction(con)
        assert await rows.__anext__() == 0
        await pool.release(con)
        del rows
        gc.collect()
        await asyncio.sleep(0.05)      # the finalizer's aclose() task runs
        gc.collect()                   # a failed task would be reported now
        await asyncio.sleep(0)
        async with pool.acquire() as con:
            assert con.is_in_transaction() is False
            assert await con.fetchval("SELECT 1") == 1
    finally:
        loop.set_exception_handler(None)
    assert unexpected_reports(reports) == []
    assert len(reports) == 1           # the pool's report of the release


def test_abandoned_generator_in_a_transaction_is_closed_quietly_at_loop_shutdown(
        connect_kwargs):
    # The generator is still referenced when the loop shuts down:
    # shutdown_asyncgens() closes it, and reports what its aclose() raises.
    loop = asyncio.new_event_loop()
    reports: list = []
    loop.set_exception_handler(lambda loop, context: reports.append(context))
    kept: list = []

    async def abandon() -> Any:
        pool = await mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1)
        con = await pool.acquire()
        rows = rows_in_a_transaction(con)
        kept.append(rows)
        assert await rows.__anext__() == 0
        await pool.release(con)
        return pool

    async def next_user(pool: Any) -> None:
        try:
            async with pool.acquire() as con:
                assert con.is_in_transaction() is False
                assert await con.fetchval("SELECT 1") == 1
        finally:
            await pool.close()

    try:
        pool = loop.run_until_complete(abandon())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(next_user(pool))
    finally:
        loop.close()
    assert unexpected_reports(reports) == []


# --- PreparedStatement ---------------------------------------------------------------------

PREPARED_USES: dict[str, Callable[[Any], Any]] = {
    "fetch": lambda s: s.fetch(A_BLOCK, 10),
    "fetchrow": lambda s: s.fetchrow(A_BLOCK, 11),
    "fetchval": lambda s: s.fetchval(A_BLOCK, 12),
    "executemany": lambda s: s.executemany([(A_BLOCK, 13), (A_BLOCK, 14)]),
    "fetchmany": lambda s: s.fetchmany([(A_BLOCK, 15)]),
    "explain": lambda s: s.explain(A_BLOCK, 16),
    "cursor": lambda s: s.cursor(A_BLOCK, 17),
    "get_query": lambda s: s.get_query(),
    "get_name": lambda s: s.get_name(),
    "get_statusmsg": lambda s: s.get_statusmsg(),
    "get_parameters": lambda s: s.get_parameters(),
    "get_attributes": lambda s: s.get_attributes(),
}


@pytest.mark.parametrize("method", list(PREPARED_USES))
async def test_prepared_statement_from_released_checkout_refuses_use(shared_table, pool, method):
    con = await pool.acquire()
    pid = con.get_server_pid()
    stmt = await con.prepare(
        f"INSERT INTO {shared_table.name} (block, i) VALUES ($1, $2) RETURNING i")
    assert await stmt.fetchval(A_BLOCK, 0) == 0     # usable during the checkout
    await con.execute(f"DELETE FROM {shared_table.name}")
    await pool.release(con)
    async with NextUser(pool, shared_table, pid):
        with pytest.raises(exceptions.InterfaceError, match=RELEASED):
            await use(lambda: PREPARED_USES[method](stmt))


# --- Cursor and CursorFactory --------------------------------------------------------------

CURSOR_QUERY = "SELECT g FROM generate_series(1, 100) g"


async def _iterate(factory: Any) -> list:
    return [row async for row in factory]


CURSOR_USES: dict[str, Callable[[Any, Any], Any]] = {
    "cursor.fetch": lambda cur, factory: cur.fetch(5),
    "cursor.fetchrow": lambda cur, factory: cur.fetchrow(),
    "cursor.forward": lambda cur, factory: cur.forward(5),
    "factory.async_for": lambda cur, factory: _iterate(factory),
    "factory.await": lambda cur, factory: factory,
}


@pytest.mark.parametrize("method", list(CURSOR_USES))
async def test_cursor_from_released_checkout_refuses_use(shared_table, pool, method):
    con = await pool.acquire()
    pid = con.get_server_pid()
    tr = con.transaction()
    await tr.start()
    cur = await con.cursor(CURSOR_QUERY)
    assert [r[0] for r in await cur.fetch(2)] == [1, 2]     # usable during the checkout
    factory = con.cursor(CURSOR_QUERY)
    await pool.release(con)                 # inside the transaction: the pool rolls back
    async with NextUser(pool, shared_table, pid):
        with pytest.raises(exceptions.InterfaceError, match=RELEASED):
            await use(lambda: CURSOR_USES[method](cur, factory))


# --- listeners -----------------------------------------------------------------------------

async def _wait_for(predicate: Callable[[], bool], what: str, limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_listener_added_through_the_proxy_receives_the_proxy(monitor, pool):
    received: list[tuple] = []

    def on_notification(*args: Any) -> None:
        received.append(args)

    async with pool.acquire() as con:
        await con.add_listener("mypg_handles_proxy", on_notification)
        await monitor.execute("NOTIFY mypg_handles_proxy, 'hello'")
        await _wait_for(lambda: received, "the notification")
        assert received[0][0] is con, \
            f"the callback got {received[0][0]!r}, not the proxy {con!r} it was added through"
        assert received[0][2:] == ("mypg_handles_proxy", "hello")
        await con.remove_listener("mypg_handles_proxy", on_notification)


@pytest.mark.parametrize("how", ["pool.release", "leaving async with"])
async def test_listeners_left_at_release_are_removed_with_a_warning(pool, how):
    def on_notification(*args: Any) -> None:
        pass

    def on_log(*args: Any) -> None:
        pass

    if how == "pool.release":
        con = await pool.acquire()
        await con.add_listener("mypg_handles_left", on_notification)
        con.add_log_listener(on_log)
        with pytest.warns(exceptions.InterfaceWarning):
            await pool.release(con)
    else:
        with pytest.warns(exceptions.InterfaceWarning):
            async with pool.acquire() as con:
                await con.add_listener("mypg_handles_left", on_notification)
                con.add_log_listener(on_log)


async def test_listeners_left_at_release_do_not_fire_for_the_next_user(monitor, pool):
    first_user: list[tuple] = []
    next_user: list[tuple] = []
    next_user_log: list[tuple] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the warning itself is the test above
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            await con.add_listener("mypg_handles_next", lambda *a: first_user.append(a))
            con.add_log_listener(lambda *a: first_user.append(a))
        async with pool.acquire() as con:
            assert con.get_server_pid() == pid
            await con.add_listener("mypg_handles_next", lambda *a: next_user.append(a))
            con.add_log_listener(lambda *a: next_user_log.append(a))
            await monitor.execute("NOTIFY mypg_handles_next, 'for B'")
            await con.execute("DO $$ BEGIN RAISE NOTICE 'for B'; END $$")
            await _wait_for(lambda: next_user and next_user_log, "the next user's callbacks")
            await asyncio.sleep(0.05)
            assert first_user == [], \
                "the first user's callbacks fired for the next user's session"

"""A connection nobody references is collected, says so, and frees its backend.

Dropping the last reference to an open connection must not keep it (and
its server backend, with whatever it holds) alive until the process exits:
the object is collected, a ResourceWarning names the unclosed connection,
and the backend disappears from pg_stat_activity.  That holds whatever the
connection was used for first: listeners and loggers registered, a query,
a cancelled query, a prepared statement and a cursor.
"""
from __future__ import annotations

import asyncio
import gc
import warnings
import weakref
from typing import Any, Awaitable, Callable

import pytest

import mypgdriver
from tests.support.waiting import SETTLE, apoll

#: How long the server may take to notice the closed socket and end the backend
#: (a moment; on a loaded machine, seconds).
BACKEND_GONE_LIMIT = SETTLE


@pytest.fixture(autouse=True)
async def no_garbage_from_earlier_tests() -> None:
    """Collect what earlier tests left (e.g. transports of their closed event loops) first,
    so that the warnings recorded here come from this test's connection."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()


async def _nothing(conn: Any) -> None:
    pass


async def _query(conn: Any) -> None:
    assert await conn.fetchval("SELECT $1::int", 5) == 5


async def _callbacks(conn: Any) -> None:
    await conn.add_listener("mypg_gc_channel", lambda *args: None)
    conn.add_log_listener(lambda *args: None)
    conn.add_query_logger(lambda record: None)
    conn.add_termination_listener(lambda *args: None)
    await conn.execute("DO $$ BEGIN RAISE NOTICE 'hello'; END $$")


async def _cancelled_query(conn: Any) -> None:
    task = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(10)"))
    await apoll(lambda: conn.get_pipeline_stats().in_flight, lambda n: n == 1)     # sent
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await conn.fetchval("SELECT 2") == 2


async def _prepared_and_cursor(conn: Any) -> None:
    stmt = await conn.prepare("SELECT g FROM generate_series(1, 10) g")
    assert len(await stmt.fetch()) == 10
    async with conn.transaction():
        cur = await conn.cursor("SELECT g FROM generate_series(1, 10) g")
        assert len(await cur.fetch(3)) == 3
        assert [r[0] async for r in conn.cursor("SELECT 1")] == [1]


USES: dict[str, Callable[[Any], Awaitable[None]]] = {
    "just connected": _nothing,
    "after a query": _query,
    "with listeners, log listeners, query loggers and termination listeners": _callbacks,
    "after a cancelled query": _cancelled_query,
    "after a prepared statement and a cursor": _prepared_and_cursor,
}


async def _open_and_drop(connect_kwargs: dict[str, Any], use: Callable[[Any], Awaitable[None]],
                         *, close: bool = False) -> tuple[weakref.ref, int, str]:
    """Open a connection, use it, and return only a weak reference to it."""
    conn = await mypgdriver.connect(**connect_kwargs)
    await use(conn)
    if close:
        await conn.close()
    return weakref.ref(conn), conn.get_server_pid(), repr(conn)


async def _drop_and_collect(connect_kwargs: dict[str, Any], use: Callable[[Any], Awaitable[None]],
                            *, close: bool = False
                            ) -> tuple[weakref.ref, int, str, list[Any]]:
    """_open_and_drop() then gc.collect(), with all warnings recorded.

    Recording starts before the last reference goes: without a reference
    cycle the connection is collected the moment it is dropped, not at
    gc.collect().  Warnings emitted by loop callbacks are caught too.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref, pid, conn_repr = await _open_and_drop(connect_kwargs, use, close=close)
        gc.collect()
        for _ in range(10):
            await asyncio.sleep(0)
        gc.collect()
    # A recorded warning keeps its `source` (the connection) alive: keep
    # only what the tests read, then let the connection go.
    recorded = [_Recorded(w.category, w.message) for w in caught]
    del caught
    gc.collect()
    return ref, pid, conn_repr, recorded


class _Recorded:
    """The part of a recorded warning the tests look at (without its source)."""

    def __init__(self, category: type, message: Any) -> None:
        self.category = category
        self.message = str(message)


async def _backend_alive(monitor: Any, pid: int) -> bool:
    """Whether backend `pid` is still there after BACKEND_GONE_LIMIT s of waiting for it to go."""
    return bool(await apoll(
        lambda: monitor.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid),
        lambda count: count == 0, timeout=BACKEND_GONE_LIMIT, interval=0.05))


def _names_connection(message: str, conn_repr: str) -> bool:
    text = message.lower()
    return conn_repr in message or ("unclosed" in text and "connection" in text)


@pytest.mark.parametrize("use", list(USES))
async def test_unreferenced_connection_is_collected_with_a_warning_and_its_backend_ends(
        monitor, connect_kwargs, use):
    ref, pid, conn_repr, caught = await _drop_and_collect(connect_kwargs, USES[use])
    assert ref() is None, f"{use}: the unreferenced connection was not collected"
    resource = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert any(_names_connection(m, conn_repr) for m in resource), \
        f"{use}: no ResourceWarning names the unclosed connection; got {resource}"
    assert not await _backend_alive(monitor, pid), \
        f"{use}: backend {pid} still exists {BACKEND_GONE_LIMIT}s after the connection was collected"


@pytest.mark.parametrize("use", ["just connected", "after a query"])
async def test_closed_connection_is_collected_without_a_resource_warning(
        monitor, connect_kwargs, use):
    ref, pid, conn_repr, caught = await _drop_and_collect(connect_kwargs, USES[use], close=True)
    assert ref() is None, f"{use}: the closed, unreferenced connection was not collected"
    # Only warnings about a connection count: asyncio's own "unclosed transport"
    # warnings may come from transports that earlier tests (with the connection
    # leak this file tests for) left behind and that become garbage only now.
    resource = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and "connection" in str(w.message).lower()]
    assert resource == [], f"{use}: a closed connection warned when collected: {resource}"
    assert not await _backend_alive(monitor, pid)

"""Server-side session state, seen from a second connection, and interruption runners.

The data-safety tests assert what the *server* says about a connection
(pg_stat_activity, row visibility from another session), never what the
driver believes about itself.  This module holds the shared pieces:

* a table that the ``monitor`` connection (tests/support/fixtures.py) can
  see (temp tables are per session, so the tables here are ordinary ones
  with a unique name, dropped at the end);
* ``backend_state()``: poll pg_stat_activity for one backend until it is
  idle (the backend reports its state just before ReadyForQuery, but a
  cancelled operation may still be draining when the caller gets control);
* ``assert_session_clean()``: the four-part invariant after a transaction
  block was left by any path;
* ``run_cancelled()`` / ``run_timed_out()``: run a coroutine and interrupt it
  after k event-loop iterations or by asyncio.wait_for;
* ``commit_claim()``: what the exception chain says about the commit.
"""
from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, NamedTuple, Optional

import pytest

import mypgdriver
from tests.support.fixtures import monitor  # noqa: F401  (re-exported: test_pool_handles.py)
from tests.support.waiting import SETTLE, apoll

#: How long a backend may take to report itself idle after the caller got control
#: (a cancelled statement may still be draining: on a loaded machine, seconds).
IDLE_POLL_LIMIT = SETTLE
#: A cancelled operation that has not finished within this is a hang.
HANG_LIMIT = 15.0

_table_ids = itertools.count(1)


def unique_table_name(prefix: str) -> str:
    """A table name no other test (or concurrent run) uses."""
    return f"{prefix}_{os.getpid()}_{next(_table_ids)}"


class SharedTable(NamedTuple):
    """A table with columns (block int, i int), visible to every session."""

    name: str
    monitor: Any

    async def count(self, block: int, *, bulk_only: bool = False) -> int:
        """Rows of `block` visible from the monitor (committed rows only)."""
        where = "block = $1 AND i >= 0" if bulk_only else "block = $1"
        return await self.monitor.fetchval(f"SELECT count(*) FROM {self.name} WHERE {where}",
                                           block)

    async def total(self) -> int:
        return await self.monitor.fetchval(f"SELECT count(*) FROM {self.name}")


@pytest.fixture
async def shared_table(monitor: Any, request: pytest.FixtureRequest) -> AsyncIterator[SharedTable]:
    """A fresh table (block int, i int) named after the test, dropped afterwards."""
    name = unique_table_name(f"t_{request.node.originalname[:30]}")
    await monitor.execute(f"CREATE TABLE {name} (block int NOT NULL, i int NOT NULL)")
    try:
        yield SharedTable(name, monitor)
    finally:
        # A dangling transaction of the connection under test would hold a
        # lock on the table and make DROP wait: give up after a while, the
        # test has failed already in that case.
        await monitor.execute("SET lock_timeout = '2s'")
        try:
            await monitor.execute(f"DROP TABLE IF EXISTS {name}")
        except mypgdriver.exceptions.LockNotAvailableError:
            pass
        await monitor.execute("RESET lock_timeout")


class BackendState(NamedTuple):
    state: Optional[str]        # None: the backend is gone
    backend_xid: Optional[str]  # xid as text, None when no transaction id is assigned
    xact_start: Any


async def backend_state(monitor: Any, pid: int, *, limit: float = IDLE_POLL_LIMIT) -> BackendState:
    """Backend `pid` as pg_stat_activity shows it, once it is idle (or after `limit` s).

    Returns as soon as the backend is 'idle' with no transaction id, or
    gone; otherwise keeps polling until `limit` and returns the last view
    ('active', 'idle in transaction', ...), for the caller to assert on.
    """
    async def probe() -> BackendState:
        row = await monitor.fetchrow(
            "SELECT state, backend_xid::text AS xid, xact_start "
            "FROM pg_stat_activity WHERE pid = $1", pid)
        return BackendState(None, None, None) if row is None else BackendState(*row)

    def settled(seen: BackendState) -> bool:
        return seen.state is None or (seen.state == "idle" and seen.backend_xid is None)
    return await apoll(probe, settled, timeout=limit, interval=0.01)


async def settled_backend_state(monitor: Any, pid: int,
                                *, limit: float = IDLE_POLL_LIMIT) -> Optional[str]:
    """The backend's state once it is no longer 'active' (it may be idle in transaction)."""
    return await apoll(
        lambda: monitor.fetchval("SELECT state FROM pg_stat_activity WHERE pid = $1", pid),
        lambda state: state != "active", timeout=limit, interval=0.01)


async def assert_session_clean(conn: Any, table: SharedTable, marker: int, where: str) -> None:
    """The invariant after a transaction block was left, by whatever path.

    (a) the driver says no transaction is open, (b) the server agrees: the
    backend is 'idle' with no transaction id, (c) an autocommit INSERT is
    visible from the other session at once (not swallowed by a dangling
    transaction), (d) the connection is open and answers.
    `marker` is written as block=marker, i=-1.
    """
    assert not conn.is_closed(), f"{where}: the connection was closed (the server is healthy)"
    assert conn.is_in_transaction() is False, \
        f"{where}: is_in_transaction() is True after the block was left"
    pid = conn.get_server_pid()
    seen = await backend_state(table.monitor, pid)
    assert seen.state == "idle" and seen.backend_xid is None, \
        f"{where}: backend {pid} is {seen.state!r} (xid {seen.backend_xid}), not 'idle'"
    status = await asyncio.wait_for(
        conn.execute(f"INSERT INTO {table.name} (block, i) VALUES ($1, -1)", marker), 10)
    assert status == "INSERT 0 1"
    visible = await table.monitor.fetchval(
        f"SELECT count(*) FROM {table.name} WHERE block = $1 AND i = -1", marker)
    assert visible == 1, \
        f"{where}: an autocommit INSERT after the block is not visible from another session"
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", marker), 10) == marker


def exception_chain(exc: Optional[BaseException]) -> Iterator[BaseException]:
    """`exc` and everything reachable through __cause__ / __context__, each once."""
    seen: set[int] = set()
    todo = [exc] if exc is not None else []
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]


def commit_claim(exc: Optional[BaseException]) -> Optional[str]:
    """'committed' / 'rolled back' if a CancelledError or TimeoutError in the chain says so.

    The driver reports an interrupted COMMIT by the message of the
    CancelledError (or TimeoutError) it raises; asyncio.wait_for chains
    that to its own TimeoutError.  None when nothing in the chain says.
    """
    claims = set()
    for e in exception_chain(exc):
        if not isinstance(e, (asyncio.CancelledError, asyncio.TimeoutError, TimeoutError)):
            continue
        text = str(e).lower()
        if "rolled back" in text:
            claims.add("rolled back")
        elif "committed" in text:
            claims.add("committed")
    assert len(claims) <= 1, f"the exception chain of {exc!r} claims both outcomes"
    return claims.pop() if claims else None


async def settle(task: "asyncio.Future[Any]", where: str) -> Any:
    """The task's result or exception, failing if it hangs.

    The exception is the one the task itself raised, as ``await task`` gives
    it (gather(return_exceptions=True) would replace a CancelledError with a
    new, empty one and lose what the driver said in it).
    """
    done, _ = await asyncio.wait({task}, timeout=HANG_LIMIT)
    if not done:
        raise AssertionError(f"{where}: the interrupted operation hangs")
    try:
        return task.result()
    except BaseException as e:   # noqa: B902 -- the outcome, whatever it is
        return e


async def run_cancelled(make: Callable[[], Awaitable[Any]], spins: int, where: str) -> Any:
    """Start make() as a task, let the loop run `spins` times, cancel it, return the outcome."""
    task = asyncio.ensure_future(make())
    for _ in range(spins):
        await asyncio.sleep(0)
    task.cancel()
    return await settle(task, where)


async def run_timed_out(make: Callable[[], Awaitable[Any]], timeout: float, where: str) -> Any:
    """Run make() under asyncio.wait_for(timeout); return its result or exception."""
    task = asyncio.ensure_future(asyncio.wait_for(make(), timeout))
    return await settle(task, where)

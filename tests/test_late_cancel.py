"""A CancelRequest that arrives late never cancels a later call.

A CancelRequest travels on a connection of its own and cancels whatever
the backend runs when it arrives.  If it is delayed on the network while
the call it aims at finishes on its own and the next call starts, the next
call is killed.  The driver must therefore not let a new call start (and
the sync API not let the cancelled call return) before the server has
closed the cancel connection: by then it has handled the request.

The race is made certain, not likely: a TCP proxy in front of the real
server (tests/support/tcp_proxy.py) holds each CancelRequest back until
pg_stat_activity (read on a direct monitor connection) shows that the
first statement is over and the backend has then stayed idle a while, or
that the backend runs a later statement (it forwards at once then: that is
the defect, and the late cancel hits it).  The proxy only delays bytes.

For each way to cancel (sync cancel() from another thread, sync timeout,
asyncio cancel() from another task, task cancellation, asyncio timeout),
the first call ends as documented, the second call (it inserts a row,
then sleeps) returns its own result and its row is committed, nothing is
sent on the connection while the cancel is held, and the connection is in
sync on the same backend.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from tests.support.tcp_proxy import TcpProxy

TABLE = 'mypg_late_cancel'
# The first call: over (on its own) well before the proxy lets the cancel go.
CALL_1 = 'SELECT $1::int FROM pg_sleep(0.3) /* late cancel: call 1 */'
CALL_1_MARK = 'late cancel: call 1'
# The second call: a row committed only if the statement is not cancelled,
# and a sleep long enough for a late cancel to land in it.
CALL_2 = (f'WITH mark AS (INSERT INTO {TABLE} (name) VALUES ($1) RETURNING name) '
          f'SELECT name FROM mark, pg_sleep(0.5) /* late cancel: call 2 */')
# How long the backend must have stayed idle after the first statement
# before the proxy forwards the cancel (time for a faulty driver to start
# the second call, which the proxy would then see running).
IDLE_HOLD = 0.3
# The proxy gives up holding after this (a safety net: never reached when
# the first statement is seen running).
HOLD_LIMIT = 10.0
POLL = 0.01


class BackendWatch:
    """Reads one backend's pg_stat_activity row on a monitor connection (thread-safe)."""

    def __init__(self, monitor: mypgdriver.sync.Connection) -> None:
        self.monitor = monitor
        self.pid = 0                 # the watched backend: set once it is connected
        self.hold_errors: list[BaseException] = []

    def activity(self) -> tuple[str, str]:
        row = self.monitor.fetchrow(
            'SELECT state, query FROM pg_stat_activity WHERE pid = $1', self.pid)
        assert row is not None, self.pid
        return row['state'], row['query']

    def wait_running_call_1(self) -> None:
        deadline = time.monotonic() + HOLD_LIMIT
        while True:
            state, query = self.activity()
            if state == 'active' and CALL_1_MARK in query:
                return
            assert time.monotonic() < deadline, 'the first statement never ran'
            time.sleep(POLL)

    def hold_cancel(self) -> None:
        """The proxy's hold: return when a CancelRequest can no longer hit the first call."""
        try:
            self._hold_cancel()
        except BaseException as e:      # (the proxy's thread: see assert_late_cancel_hit_nothing)
            self.hold_errors.append(e)

    def _hold_cancel(self) -> None:
        deadline = time.monotonic() + HOLD_LIMIT
        seen_call_1 = False
        idle_since = None
        while time.monotonic() < deadline:
            state, query = self.activity()
            if CALL_1_MARK in query:
                seen_call_1 = True
                if state != 'active':
                    # The first statement is over: hold on a while, so that
                    # a driver that starts the next call too early is caught.
                    if idle_since is None:
                        idle_since = time.monotonic()
                    elif time.monotonic() - idle_since >= IDLE_HOLD:
                        return
            elif seen_call_1:
                return          # a later statement: the late cancel lands in it now
            time.sleep(POLL)


@pytest.fixture
def watch(connect_kwargs: dict[str, Any]) -> Iterator[BackendWatch]:
    monitor = mypgdriver.sync.connect(**connect_kwargs, timeout=10)
    try:
        monitor.execute(f'CREATE TABLE IF NOT EXISTS {TABLE} (name text PRIMARY KEY)')
        yield BackendWatch(monitor)
    finally:
        monitor.close()


@pytest.fixture
def proxy(pg_cluster: Any, watch: BackendWatch) -> Iterator[TcpProxy]:
    with TcpProxy(pg_cluster.host, pg_cluster.port, hold_cancel=watch.hold_cancel) as p:
        yield p


@pytest.fixture
def through_proxy(connect_kwargs: dict[str, Any], proxy: TcpProxy) -> dict[str, Any]:
    """connect() arguments for a plain-text connection through the proxy."""
    return {**connect_kwargs, 'host': '127.0.0.1', 'port': proxy.port, 'ssl': 'disable'}


def fresh_name(watch: BackendWatch, case: str) -> str:
    name = f'{case}-{time.monotonic_ns()}'
    watch.monitor.execute(f'DELETE FROM {TABLE} WHERE name LIKE $1', f'{case}-%')
    return name


def assert_late_cancel_hit_nothing(proxy: TcpProxy, watch: BackendWatch, name: str) -> None:
    """The cancel went through the proxy, and nothing was sent while it was held.

    (Usually one CancelRequest; the driver repeats it if the first one is
    handled before it has read the end of the statement: each is checked.)
    """
    assert not watch.hold_errors, watch.hold_errors
    events = proxy.events
    assert proxy.cancels, events
    for held in proxy.cancels:
        assert held.forwarded.is_set() and held.server_closed.is_set(), events
    # Nothing on the connection from a cancel's sending to its end, and the
    # second call went out after the last one.
    open_cancels = 0
    for event in events:
        if event == 'cancel received':
            open_cancels += 1
        elif event == 'cancel closed by the server':
            open_cancels -= 1
        elif event.startswith('client bytes'):
            assert open_cancels == 0, events
    last_closed = len(events) - events[::-1].index('cancel closed by the server')
    assert any(e.startswith('client bytes') for e in events[last_closed:]), events
    # The second call's row is committed (its statement was not cancelled).
    assert watch.monitor.fetchval(f'SELECT count(*) FROM {TABLE} WHERE name = $1', name) == 1


def assert_in_sync_on(conn: mypgdriver.sync.Connection, pid: int) -> None:
    """The same backend answers the next queries with their own results."""
    assert conn.fetchval('SELECT pg_backend_pid()') == pid
    assert conn.fetchval('SELECT $1::int + 1', 41) == 42


# --- the sync API ---

def run_calls_in_thread(first: Callable[[], Any], second: Callable[[], Any],
                        proxy: TcpProxy) -> tuple[threading.Thread, dict[str, Any]]:
    """first() then second() in a thread; each one's result or exception."""
    outcomes: dict[str, Any] = {}

    def calls() -> None:
        for key, call in (('call 1', first), ('call 2', second)):
            try:
                outcomes[key] = call()
            except BaseException as e:
                outcomes[key] = e
            if key == 'call 1':
                outcomes['cancel closed when call 1 ended'] = (
                    bool(proxy.cancels) and proxy.cancels[0].server_closed.is_set())

    thread = threading.Thread(target=calls, daemon=True)
    thread.start()
    return thread, outcomes


def test_sync_cancel_from_another_thread_never_hits_the_next_call(
        proxy: TcpProxy, watch: BackendWatch, through_proxy: dict[str, Any]) -> None:
    name = fresh_name(watch, 'sync-cancel')
    with mypgdriver.sync.connect(**through_proxy, timeout=10) as conn:
        watch.pid = pid = conn.get_server_pid()
        thread, outcomes = run_calls_in_thread(lambda: conn.fetchval(CALL_1, 1),
                                               lambda: conn.fetchval(CALL_2, name), proxy)
        watch.wait_running_call_1()
        conn.cancel()          # returns once the server has closed the cancel connection
        thread.join(10)
        assert not thread.is_alive()
        # The cancel reached the backend after the statement had finished:
        # the call returns its own result, and only after the cancel ended.
        assert outcomes['call 1'] == 1
        assert outcomes['call 2'] == name
        assert outcomes['cancel closed when call 1 ended'] is True
        assert_late_cancel_hit_nothing(proxy, watch, name)
        assert_in_sync_on(conn, pid)


def test_sync_timeout_cancel_never_hits_the_next_call(
        proxy: TcpProxy, watch: BackendWatch, through_proxy: dict[str, Any]) -> None:
    name = fresh_name(watch, 'sync-timeout')
    with mypgdriver.sync.connect(**through_proxy, timeout=10) as conn:
        watch.pid = pid = conn.get_server_pid()
        with pytest.raises(TimeoutError):
            conn.fetchval(CALL_1, 1, timeout=0.1)
        assert conn.fetchval(CALL_2, name) == name
        assert_late_cancel_hit_nothing(proxy, watch, name)
        assert_in_sync_on(conn, pid)


# --- the asyncio API ---

async def assert_in_sync_on_async(conn: mypgdriver.Connection, pid: int) -> None:
    assert await conn.fetchval('SELECT pg_backend_pid()') == pid
    assert await conn.fetchval('SELECT $1::int + 1', 41) == 42


async def wait_running_call_1(watch: BackendWatch) -> None:
    await asyncio.to_thread(watch.wait_running_call_1)


async def test_asyncio_cancel_from_another_task_never_hits_the_next_call(
        proxy: TcpProxy, watch: BackendWatch, through_proxy: dict[str, Any]) -> None:
    name = fresh_name(watch, 'asyncio-cancel')
    conn = await mypgdriver.connect(**through_proxy)
    try:
        watch.pid = pid = conn.get_server_pid()

        async def calls() -> tuple[Any, Any]:
            first = await conn.fetchval(CALL_1, 1)
            # (the next call waits for the cancel; it is not refused)
            return first, await conn.fetchval(CALL_2, name)

        task = asyncio.create_task(calls())
        await wait_running_call_1(watch)
        await conn.cancel()
        # The cancel reached the backend after the statement had finished:
        # the first call has its own result, the second was not cancelled.
        assert await asyncio.wait_for(task, 10) == (1, name)
        await asyncio.to_thread(assert_late_cancel_hit_nothing, proxy, watch, name)
        await assert_in_sync_on_async(conn, pid)
    finally:
        await conn.close()


async def test_asyncio_task_cancellation_never_hits_the_next_call(
        proxy: TcpProxy, watch: BackendWatch, through_proxy: dict[str, Any]) -> None:
    name = fresh_name(watch, 'asyncio-task')
    conn = await mypgdriver.connect(**through_proxy)
    try:
        watch.pid = pid = conn.get_server_pid()
        task = asyncio.create_task(conn.fetchval(CALL_1, 1))
        await wait_running_call_1(watch)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.wait_for(conn.fetchval(CALL_2, name), 10) == name
        await asyncio.to_thread(assert_late_cancel_hit_nothing, proxy, watch, name)
        await assert_in_sync_on_async(conn, pid)
    finally:
        await conn.close()


async def test_asyncio_timeout_cancel_never_hits_the_next_call(
        proxy: TcpProxy, watch: BackendWatch, through_proxy: dict[str, Any]) -> None:
    name = fresh_name(watch, 'asyncio-timeout')
    conn = await mypgdriver.connect(**through_proxy)
    try:
        watch.pid = pid = conn.get_server_pid()
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetchval(CALL_1, 1, timeout=0.1)
        assert await asyncio.wait_for(conn.fetchval(CALL_2, name), 10) == name
        await asyncio.to_thread(assert_late_cancel_hit_nothing, proxy, watch, name)
        await assert_in_sync_on_async(conn, pid)
    finally:
        await conn.close()

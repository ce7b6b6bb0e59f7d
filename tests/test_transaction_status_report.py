"""is_in_transaction() after a failed or interrupted call says what the server says.

SQLAlchemy, the pools and applications decide on it (roll back or not,
reuse the connection or not).  After each kind of failure (a timeout, a
task cancelled, cancel(), an error on the client's side, a server error,
Ctrl-C in the sync API), outside and inside a transaction block, the
answer given right after the call raised is compared with the backend's
state in pg_stat_activity, read from another session.
"""
from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any, Awaitable, Callable, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver import exceptions
from tests.support.backends import wait_sleeping, wait_sleeping_sync
from tests.support.waiting import poll

# pg_stat_activity's state -> what is_in_transaction() must say.
IN_TRANSACTION = {
    'idle': False,
    'idle in transaction': True,
    'idle in transaction (aborted)': True,
}

SLOW_MANY = 'INSERT INTO status_report_t SELECT $1 FROM pg_sleep(0.2)'


@pytest.fixture(autouse=True)
def status_report_table(sync_observer: mypgdriver.sync.Connection) -> Iterator[None]:
    sync_observer.execute(
        'DROP TABLE IF EXISTS status_report_t; CREATE TABLE status_report_t (v int)')
    yield
    sync_observer.execute('DROP TABLE status_report_t')


def server_in_transaction(sync_observer: mypgdriver.sync.Connection, pid: int) -> bool:
    """The backend's own answer, once it has finished what it was sent."""
    state = poll(lambda: sync_observer.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1', pid),
                 lambda state: state in IN_TRANSACTION, timeout=10, interval=0.005)
    assert state in IN_TRANSACTION, f'the backend stayed {state!r}'
    return IN_TRANSACTION[state]


# --- asyncio ------------------------------------------------------------------------------------

async def _cancel_task(conn: Any, monitor: Any) -> None:
    task = asyncio.ensure_future(conn.fetchval('SELECT pg_sleep(5)'))
    await wait_sleeping(monitor, conn.get_server_pid())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _public_cancel(conn: Any, monitor: Any) -> None:
    task = asyncio.ensure_future(conn.fetchval('SELECT pg_sleep(5)'))
    # (a cancel that reaches the backend before the statement is ignored)
    await wait_sleeping(monitor, conn.get_server_pid())
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await task


async def _raises(call: Awaitable[Any], error: type[BaseException]) -> None:
    with pytest.raises(error):
        await call


ASYNC_FAILURES: dict[str, Callable[[Any, Any], Awaitable[None]]] = {
    'executemany_timeout': lambda conn, monitor: _raises(
        conn.executemany(SLOW_MANY, [(i,) for i in range(30)], timeout=0.8),
        asyncio.TimeoutError),
    'fetch_timeout': lambda conn, monitor: _raises(
        conn.fetchval('SELECT pg_sleep(5)', timeout=0.3), asyncio.TimeoutError),
    'copy_timeout': lambda conn, monitor: _raises(
        conn.copy_records_to_table('status_report_t', records=_slow_records(), timeout=0.3),
        asyncio.TimeoutError),
    'task_cancelled': _cancel_task,
    'public_cancel': _public_cancel,
    'client_error': lambda conn, monitor: _raises(
        conn.executemany('INSERT INTO status_report_t VALUES ($1)',
                         [(1,), (2,), ('three',)]),
        exceptions.DataError),
    'server_error': lambda conn, monitor: _raises(
        conn.fetchval('SELECT 1 / 0'), exceptions.DivisionByZeroError),
}


def _slow_records() -> Iterator[tuple[int]]:
    for i in range(100):
        time.sleep(0.02)
        yield (i,)


@pytest.mark.parametrize('in_block', [False, True], ids=['autocommit', 'in_block'])
@pytest.mark.parametrize('failure', sorted(ASYNC_FAILURES))
async def test_is_in_transaction_after_a_failed_call_is_the_servers(
        dsn: str, sync_observer: mypgdriver.sync.Connection, monitor: Any, failure: str,
        in_block: bool) -> None:
    conn = await mypgdriver.connect(dsn)
    try:
        if in_block:
            await conn.execute('BEGIN')
        await ASYNC_FAILURES[failure](conn, monitor)
        reported = conn.is_in_transaction()
        assert reported is server_in_transaction(sync_observer, conn.get_server_pid())
        assert reported is in_block
        # The next statement behaves as reported: outside a block it
        # commits at once, another session sees it.
        if not in_block:
            await conn.execute('INSERT INTO status_report_t VALUES (-1)')
            assert sync_observer.fetchval('SELECT count(*) FROM status_report_t WHERE v = -1') == 1
    finally:
        await conn.close()


# --- sync ---------------------------------------------------------------------------------------

def _sync_raises(call: Callable[[], Any], error: type[BaseException]) -> None:
    with pytest.raises(error):
        call()


def _once_sleeping(observer: Any, conn: Any, action: Callable[[], object]) -> threading.Thread:
    """A started thread that runs `action` once conn's backend runs pg_sleep()."""
    pid = conn.get_server_pid()

    def run() -> None:
        wait_sleeping_sync(observer, pid)
        action()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _sync_public_cancel(conn: Any, observer: Any) -> None:
    # (a cancel that reaches the backend before the statement is ignored)
    thread = _once_sleeping(observer, conn, conn.cancel)
    try:
        with pytest.raises(exceptions.QueryCanceledError):
            conn.fetchval('SELECT pg_sleep(5)')
    finally:
        thread.join()


def _sync_ctrl_c(conn: Any, observer: Any) -> None:
    # A real SIGINT while the call waits for the server.
    thread = _once_sleeping(observer, conn, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        with pytest.raises(KeyboardInterrupt):
            conn.fetchval('SELECT pg_sleep(5)')
    finally:
        thread.join()


def _sync_ctrl_c_in_executemany(conn: Any, observer: Any) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            conn.executemany(SLOW_MANY, [(i,) for i in range(30)])
    finally:
        timer.join()


SYNC_FAILURES: dict[str, Callable[[Any, Any], None]] = {
    'executemany_timeout': lambda conn, observer: _sync_raises(
        lambda: conn.executemany(SLOW_MANY, [(i,) for i in range(30)], timeout=0.8),
        asyncio.TimeoutError),
    'fetch_timeout': lambda conn, observer: _sync_raises(
        lambda: conn.fetchval('SELECT pg_sleep(5)', timeout=0.3), asyncio.TimeoutError),
    'copy_timeout': lambda conn, observer: _sync_raises(
        lambda: conn.copy_records_to_table('status_report_t', records=_slow_records(),
                                           timeout=0.3),
        asyncio.TimeoutError),
    'public_cancel': _sync_public_cancel,
    'ctrl_c': _sync_ctrl_c,
    'ctrl_c_executemany': _sync_ctrl_c_in_executemany,
    'client_error': lambda conn, observer: _sync_raises(
        lambda: conn.executemany('INSERT INTO status_report_t VALUES ($1)',
                                 [(1,), (2,), ('three',)]),
        exceptions.DataError),
    'server_error': lambda conn, observer: _sync_raises(
        lambda: conn.fetchval('SELECT 1 / 0'), exceptions.DivisionByZeroError),
}


@pytest.mark.parametrize('in_block', [False, True], ids=['autocommit', 'in_block'])
@pytest.mark.parametrize('failure', sorted(SYNC_FAILURES))
def test_sync_is_in_transaction_after_a_failed_call_is_the_servers(
        dsn: str, sync_observer: mypgdriver.sync.Connection, failure: str, in_block: bool,
        default_sigint: None) -> None:
    with mypgdriver.sync.connect(dsn) as conn:
        if in_block:
            conn.execute('BEGIN')
        SYNC_FAILURES[failure](conn, sync_observer)
        if conn.is_closed():
            # Ctrl-C may close a connection it cannot leave in sync: that
            # is reported too (and the server ended the session).
            assert failure.startswith('ctrl_c')
            return
        reported = conn.is_in_transaction()
        assert reported is server_in_transaction(sync_observer, conn.get_server_pid())
        assert reported is in_block
        if not in_block:
            conn.execute('INSERT INTO status_report_t VALUES (-1)')
            assert sync_observer.fetchval('SELECT count(*) FROM status_report_t WHERE v = -1') == 1

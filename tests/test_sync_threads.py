"""mypgdriver.sync: one connection shared by threads, cross-thread cancel(), re-entrant calls."""
from __future__ import annotations

import gc
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection
from tests.support.backends import wait_sleeping_sync
from tests.support.waiting import poll


def test_100_threads_share_one_connection(sync_conn: Connection) -> None:
    def work(i: int) -> list[tuple[int, int]]:
        results = []
        for j in range(20):
            row = sync_conn.fetchrow('SELECT $1::int AS i, $2::int * 2 AS j', i, j)
            assert row is not None
            results.append((row['i'], row['j']))
        return results

    with ThreadPoolExecutor(100) as pool:
        outcomes = list(pool.map(work, range(100)))
    assert outcomes == [[(i, j * 2) for j in range(20)] for i in range(100)]
    assert sync_conn.fetchval('SELECT 1') == 1


def test_cancel_from_another_thread_stops_pg_sleep(sync_conn: Connection, dsn: str) -> None:
    pid = sync_conn.get_server_pid()
    timer = threading.Timer(0.3, sync_conn.cancel)
    started = time.monotonic()
    timer.start()
    with pytest.raises(mypgdriver.exceptions.QueryCanceledError):
        sync_conn.fetchval('SELECT pg_sleep(10)')
    assert time.monotonic() - started < 3
    timer.join()
    assert sync_conn.fetchval('SELECT pg_backend_pid()') == pid
    with mypgdriver.sync.connect(dsn) as observer:
        assert observer.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1',
                                 pid) == 'idle'
    # idle: nothing to cancel, and the next call is not hit
    sync_conn.cancel()
    assert sync_conn.fetchval('SELECT pg_sleep(0.2)::text') == ''


def test_cancel_does_not_wait_for_the_lock(sync_conn: Connection, dsn: str) -> None:
    # while a long call holds the connection, cancel() from a third thread returns at once
    sleeper = ThreadPoolExecutor(1).submit(sync_conn.fetchval, 'SELECT pg_sleep(10)')
    with mypgdriver.sync.connect(dsn) as observer:
        wait_sleeping_sync(observer, sync_conn.get_server_pid())
    started = time.monotonic()
    sync_conn.cancel()
    assert time.monotonic() - started < 5       # not after the call (10 s)
    with pytest.raises(mypgdriver.exceptions.QueryCanceledError):
        sleeper.result(5)


def test_a_call_from_a_listener_is_refused_not_deadlocked(sync_conn: Connection) -> None:
    errors: list[BaseException] = []

    def reenter(conn: Connection, pid: int, channel: str, payload: str) -> None:
        try:
            conn.fetchval('SELECT 1')
        except BaseException as exc:
            errors.append(exc)

    sync_conn.add_listener('re', reenter)
    sync_conn.execute("NOTIFY re, 'x'")
    assert len(errors) == 1
    assert type(errors[0]) is mypgdriver.exceptions.InterfaceError
    assert 'inside one of its own calls' in str(errors[0])
    assert sync_conn.fetchval('SELECT 2') == 2

    def logger(query: Any) -> None:
        try:
            sync_conn.execute('SELECT 3')
        except mypgdriver.exceptions.InterfaceError as exc:
            errors.append(exc)
    with sync_conn.query_logger(logger):
        sync_conn.fetchval('SELECT 4')
    assert len(errors) == 2


def test_other_threads_wait_while_a_cursor_iterates_between_batches(sync_conn: Connection) -> None:
    # A thread iterating a cursor holds the connection only during each fetch;
    # its transaction block keeps other threads' calls out (as other tasks').
    refused: list[BaseException] = []
    with sync_conn.transaction():
        for row in sync_conn.cursor('SELECT g FROM generate_series(1, 4) g', prefetch=2):
            if row['g'] == 2:
                def other() -> None:
                    try:
                        sync_conn.fetchval('SELECT 1')
                    except mypgdriver.exceptions.InterfaceError as exc:
                        refused.append(exc)
                t = threading.Thread(target=other)
                t.start()
                t.join(5)
                assert not t.is_alive()
    assert len(refused) == 1 and 'transaction' in str(refused[0])
    # after the block, other threads go on
    assert ThreadPoolExecutor(1).submit(sync_conn.fetchval, 'SELECT 5').result(5) == 5


def test_memory_is_flat_over_20k_calls(sync_conn: Connection) -> None:
    stmt = sync_conn.prepare('SELECT $1::int + 1')

    def batch(n: int) -> None:
        for i in range(n):
            assert sync_conn.fetchval('SELECT $1::int', i) == i
            assert stmt.fetchval(i) == i + 1

    batch(2000)     # warm: caches, codecs
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        batch(10000)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 256 * 1024, after - before


def _wait_for(check: Any, what: str, limit: float = 10.0) -> None:
    if not poll(check, bool, timeout=limit):
        raise AssertionError(f'timed out waiting for {what}')


@pytest.mark.parametrize('in_block', [False, True], ids=['statement', 'transaction-block'])
def test_terminate_from_another_thread_ends_the_running_call_at_once(
        sync_conn: Connection, dsn: str, in_block: bool) -> None:
    pid = sync_conn.get_server_pid()
    table = f'sync_terminate_{in_block:d}'
    errors: list[BaseException] = []
    results: list[object] = []

    def work() -> None:
        try:
            if in_block:
                with sync_conn.transaction():
                    sync_conn.execute(f'INSERT INTO {table} VALUES (1)')
                    results.append(sync_conn.fetchval('SELECT pg_sleep(8)'))
            else:
                results.append(sync_conn.fetchval('SELECT pg_sleep(8)'))
        except BaseException as e:
            errors.append(e)

    with mypgdriver.sync.connect(dsn) as observer:
        observer.execute(f'DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (v int)')
        try:
            worker = threading.Thread(target=work)
            worker.start()
            _wait_for(lambda: observer.fetchval(
                "SELECT query FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
                pid) == 'SELECT pg_sleep(8)', 'the statement to run')
            started = time.monotonic()
            sync_conn.terminate()
            worker.join(6)
            assert not worker.is_alive()
            # At once, not after the statement (8 s).
            assert time.monotonic() - started < 4
            assert results == []
            assert len(errors) == 1
            assert type(errors[0]) is mypgdriver.exceptions.ConnectionDoesNotExistError
            assert sync_conn.is_closed()
            _wait_for(lambda: observer.fetchval(
                'SELECT count(*) FROM pg_stat_activity WHERE pid = $1', pid) == 0,
                'the backend to end')
            # The block's insert was rolled back with the session.
            assert observer.fetchval(f'SELECT count(*) FROM {table}') == 0
        finally:
            observer.execute(f'DROP TABLE IF EXISTS {table}')
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='connection is closed'):
        sync_conn.fetchval('SELECT 1')


def test_terminate_when_no_call_runs_and_from_a_query_logger(dsn: str) -> None:
    conn = mypgdriver.sync.connect(dsn)
    conn.terminate()
    assert conn.is_closed()
    conn = mypgdriver.sync.connect(dsn)
    pid = conn.get_server_pid()
    conn.add_query_logger(lambda record: conn.terminate())
    # The logger runs after the query's result is in: the call returns it.
    assert conn.fetchval('SELECT 1') == 1
    assert conn.is_closed()
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='connection is closed'):
        conn.fetchval('SELECT 2')
    with mypgdriver.sync.connect(dsn) as observer:
        _wait_for(lambda: observer.fetchval(
            'SELECT count(*) FROM pg_stat_activity WHERE pid = $1', pid) == 0,
            'the backend to end')


@pytest.mark.usefixtures('default_sigint')
def test_ctrl_c_while_waiting_for_another_threads_call(sync_conn: Connection) -> None:
    # The main thread waits for the connection's lock, held by a thread
    # running pg_sleep: a real SIGINT ends the wait with KeyboardInterrupt
    # (as threading.Lock.acquire() does), and the other call goes on.
    import signal

    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(
        sync_conn.fetchval("SELECT 'slept' FROM pg_sleep(4)")))
    worker.start()
    _wait_for(sync_conn._runner.is_running, 'the other call to start')
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        sync_conn.fetchval('SELECT 1')
    assert time.monotonic() - started < 3      # not after the other call (4 s)
    assert worker.is_alive()
    worker.join(10)
    timer.join()
    assert results == ['slept']
    assert sync_conn.fetchval('SELECT 2') == 2

"""The sync API's compiled call path of cached statements, and each case it hands over (issue 34).

A call of a statement in the statement cache, on a connection with nothing
in the way, runs without the Session's coroutine (CallRunner.execute,
mypgdriver/sync/driver/runner.pyx); every other case falls back to the
Session's code, the one owner of its rules.  The sync tests that use the
``sync_conn`` fixture run through both paths (tests/support/fixtures.py);
these check that the compiled path is taken where it should be, and that
each trigger of a fallback behaves as the policy says: the answer, the
exception class, the server's state seen from another session.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import mypgdriver
import mypgdriver.rows
import mypgdriver.sync
from tests.support.backends import wait_sleeping_sync

pytestmark = pytest.mark.usefixtures('no_event_loop')

CACHED = 'SELECT $1::int * 2'
SLEEP = 'SELECT pg_sleep($1)::text'


def compiled_calls(conn: Any) -> int:
    return conn._runner.compiled_calls


def state_of(observer: Any, pid: int) -> tuple[str, str]:
    return observer.fetchrow('SELECT state, query FROM pg_stat_activity WHERE pid = $1', pid)


@pytest.fixture
def conn(open_sync_conn: Any) -> Any:
    return open_sync_conn()


def test_a_cached_statement_takes_the_compiled_path(conn: Any) -> None:
    before = compiled_calls(conn)
    assert conn.fetchval(CACHED, 21) == 42          # first use: prepared by the Session
    assert compiled_calls(conn) == before
    assert conn.fetchval(CACHED, 4) == 8
    assert conn.fetch(CACHED, 5)[0][0] == 10
    assert conn.fetchrow(CACHED, 6)[0] == 12
    assert conn.execute(CACHED, 7) == 'SELECT 1'
    assert compiled_calls(conn) == before + 4


def test_switched_off_every_call_runs_the_policy(conn: Any) -> None:
    conn._runner.compiled = False
    conn.fetchval(CACHED, 1)
    assert conn.fetchval(CACHED, 2) == 4
    assert compiled_calls(conn) == 0


def test_a_query_logger_sends_the_call_through_the_session(conn: Any) -> None:
    conn.fetchval(CACHED, 1)
    logged: list[Any] = []
    conn.add_query_logger(logged.append)
    before = compiled_calls(conn)
    assert conn.fetchval(CACHED, 3) == 6
    assert compiled_calls(conn) == before
    assert [q.query for q in logged] == [CACHED]
    conn.remove_query_logger(logged.append)
    assert conn.fetchval(CACHED, 4) == 8
    assert compiled_calls(conn) == before + 1


def test_inside_a_transaction_block(conn: Any, sync_observer: Any) -> None:
    conn.execute('CREATE TEMP TABLE t_block (v int)')
    insert = 'INSERT INTO t_block VALUES ($1)'
    conn.execute(insert, 0)
    before = compiled_calls(conn)
    with conn.transaction():
        assert conn.execute(insert, 1) == 'INSERT 0 1'
        assert conn.is_in_transaction()
        pid = conn.get_server_pid()
        assert state_of(sync_observer, pid)[0] == 'idle in transaction'
    assert compiled_calls(conn) > before
    assert not conn.is_in_transaction()
    assert conn.fetchval('SELECT count(*) FROM t_block') == 2


def test_a_server_error_fails_the_transaction_and_is_raised(conn: Any) -> None:
    div = 'SELECT 1 / $1::int'
    assert conn.fetchval(div, 1) == 1
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        conn.fetchval(div, 0)
    assert not conn.is_in_transaction()
    tx = conn.transaction()
    tx.start()
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        conn.fetchval(div, 0)
    # The server's state: the block is failed, and says so.
    with pytest.raises(mypgdriver.exceptions.InFailedSQLTransactionError):
        conn.fetchval(div, 1)
    tx.rollback()
    assert conn.fetchval(div, 1) == 1


def test_a_codec_refusal_sends_nothing_and_the_connection_stays_usable(conn: Any) -> None:
    assert conn.fetchval(CACHED, 1) == 2
    with pytest.raises(mypgdriver.exceptions.DataError):
        conn.fetchval(CACHED, 'not a number')
    assert conn.fetchval(CACHED, 2) == 4


def test_a_schema_change_by_another_session_is_retried_in_place(conn: Any,
                                                                sync_observer: Any) -> None:
    conn.execute('CREATE TABLE IF NOT EXISTS compiled_schema (a int)')
    try:
        conn.execute('TRUNCATE compiled_schema')
        conn.execute('INSERT INTO compiled_schema VALUES ($1)', 1)
        query = 'SELECT * FROM compiled_schema WHERE a = $1'
        assert tuple(conn.fetchrow(query, 1)) == (1,)
        sync_observer.execute('ALTER TABLE compiled_schema ADD COLUMN b int DEFAULT 7')
        # Sent by the compiled path, refused by the server (0A000: the
        # result type changed), prepared again and run once more in its place.
        before = compiled_calls(conn)
        assert tuple(conn.fetchrow(query, 1)) == (1, 7)
        assert compiled_calls(conn) == before + 1
        assert conn.fetchval('SELECT count(*) FROM compiled_schema') == 1
    finally:
        conn.execute('DROP TABLE compiled_schema')


def test_a_schema_change_on_this_connection_is_run_in_line(conn: Any) -> None:
    conn.execute('CREATE TEMP TABLE own_schema (a int)')
    conn.execute('INSERT INTO own_schema VALUES ($1)', 1)
    query = 'SELECT * FROM own_schema WHERE a = $1'
    assert tuple(conn.fetchrow(query, 1)) == (1,)
    conn.execute('ALTER TABLE own_schema ADD COLUMN b text DEFAULT $$x$$')
    before = compiled_calls(conn)
    # The statement was stamped before the DDL: declined by the send, run verified.
    assert tuple(conn.fetchrow(query, 1)) == (1, 'x')
    assert compiled_calls(conn) == before
    assert tuple(conn.fetchrow(query, 1)) == (1, 'x')
    assert compiled_calls(conn) == before + 1


@pytest.mark.parametrize('timeout', [0.05, 0.2, 0.5])
def test_a_timeout_bounds_the_call_and_cancels_on_the_server(conn: Any, sync_observer: Any,
                                                             timeout: float) -> None:
    assert conn.fetchval(SLEEP, 0) == ''
    pid = conn.get_server_pid()
    before = compiled_calls(conn)
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        conn.fetchval(SLEEP, 10, timeout=timeout)
    assert time.monotonic() - started < timeout + 2
    assert compiled_calls(conn) == before + 1
    # Answered before the call returned: the backend is idle, in sync.
    assert state_of(sync_observer, pid)[0] == 'idle'
    assert not conn.is_in_transaction()
    assert conn.fetchval(CACHED, 21) == 42
    assert conn.fetchval('SELECT pg_backend_pid()') == pid


def test_command_timeout_bounds_a_cached_call(open_sync_conn: Any, sync_observer: Any) -> None:
    conn = open_sync_conn(command_timeout=0.2)
    assert conn.fetchval(SLEEP, 0) == ''
    with pytest.raises(asyncio.TimeoutError):
        conn.fetchval(SLEEP, 10)
    assert state_of(sync_observer, conn.get_server_pid())[0] == 'idle'
    assert conn.fetchval(SLEEP, 0) == ''


def test_cancel_from_another_thread(conn: Any, sync_observer: Any) -> None:
    assert conn.fetchval(SLEEP, 0) == ''
    pid = conn.get_server_pid()

    def cancel_when_sleeping() -> None:
        wait_sleeping_sync(sync_observer, pid)
        conn.cancel()
    canceller = threading.Thread(target=cancel_when_sleeping)
    canceller.start()
    before = compiled_calls(conn)
    with pytest.raises(mypgdriver.exceptions.QueryCanceledError):
        conn.fetchval(SLEEP, 10)
    canceller.join()
    assert compiled_calls(conn) == before + 1
    assert conn.fetchval(CACHED, 1) == 2
    assert state_of(sync_observer, pid)[0] == 'idle'


def test_a_backend_killed_mid_statement(conn: Any, sync_observer: Any) -> None:
    assert conn.fetchval(SLEEP, 0) == ''
    pid = conn.get_server_pid()

    def kill_when_sleeping() -> None:
        wait_sleeping_sync(sync_observer, pid)
        sync_observer.fetchval('SELECT pg_terminate_backend($1)', pid)
    killer = threading.Thread(target=kill_when_sleeping)
    killer.start()
    with pytest.raises(mypgdriver.exceptions.ConnectionDoesNotExistError):
        conn.fetchval(SLEEP, 10)
    killer.join()
    assert conn.is_closed()
    with pytest.raises(mypgdriver.exceptions.ConnectionDoesNotExistError):
        conn.fetchval(CACHED, 1)


def test_threads_sharing_a_connection_get_their_own_answers(conn: Any) -> None:
    conn.fetchval(CACHED, 0)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(200):
                assert conn.fetchval(CACHED, k * 1000 + i) == 2 * (k * 1000 + i)
        except BaseException as exc:
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert compiled_calls(conn) >= 800


def test_a_closed_connection_says_so(conn: Any) -> None:
    conn.fetchval(CACHED, 1)
    conn.close()
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='closed'):
        conn.fetchval(CACHED, 1)


def test_a_bad_timeout_is_refused_before_anything_is_sent(conn: Any) -> None:
    conn.fetchval(CACHED, 1)
    with pytest.raises(TypeError, match='timeout'):
        conn.fetchval(CACHED, 1, timeout='soon')
    with pytest.raises(ValueError):
        conn.fetchval(CACHED, 1, timeout=float('nan'))
    assert conn.fetchval(CACHED, 3) == 6


def test_an_evicted_statement_is_prepared_again(open_sync_conn: Any) -> None:
    conn = open_sync_conn(statement_cache_size=2)
    queries = [f'SELECT $1::int + {k}' for k in range(3)]
    for q in queries:
        conn.fetchval(q, 1)
    before = compiled_calls(conn)
    assert conn.fetchval(queries[0], 1) == 1    # evicted: a cache miss
    assert compiled_calls(conn) == before
    assert conn.fetchval(queries[0], 2) == 2
    assert compiled_calls(conn) == before + 1


def test_other_threads_run_while_a_cached_call_waits(conn: Any) -> None:
    # docs/guide/sync.rst: the GIL is released while the call waits.
    assert conn.fetchval(SLEEP, 0) == ''
    stop = threading.Event()
    ticks = [0]

    def spin() -> None:
        while not stop.is_set():
            ticks[0] += 1
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.05)
        before = ticks[0]
        calls = compiled_calls(conn)
        assert conn.fetchval(SLEEP, 0.5) == ''
        during = ticks[0] - before
    finally:
        stop.set()
        spinner.join()
    assert compiled_calls(conn) == calls + 1
    # Python code of another thread ran through most of the wait (a spin
    # loop counts millions per second; a held GIL would let it run only at
    # the interpreter's switch interval, and not at all in a blocking recv).
    assert during > 100_000


# --- PreparedStatement (CallRunner.run_prepared) -------------------------------------------

def test_a_prepared_statement_takes_the_compiled_path(conn: Any) -> None:
    stmt = conn.prepare(CACHED)
    before = compiled_calls(conn)
    assert stmt.fetchval(21) == 42
    assert stmt.fetch(5)[0][0] == 10
    assert stmt.get_statusmsg() == 'SELECT 1'     # (fetch's: fetchrow's run stops at a row)
    assert stmt.fetchrow(6)[0] == 12
    assert stmt.fetch(7, row_factory=mypgdriver.rows.tuple_row) == [(14,)]
    assert stmt.fetchrow(8, row_factory=mypgdriver.rows.dict_row) == {'?column?': 16}
    assert compiled_calls(conn) == before + 5
    empty = conn.prepare('SELECT 1 WHERE $1::bool')
    assert empty.fetch(False) == []
    assert empty.get_statusmsg() == 'SELECT 0'
    assert empty.fetchrow(False) is None
    assert empty.fetchval(False) is None


def test_a_prepared_statement_with_the_path_switched_off(conn: Any) -> None:
    conn._runner.compiled = False
    stmt = conn.prepare(CACHED)
    assert stmt.fetchval(2) == 4
    assert stmt.fetch(3)[0][0] == 6
    assert compiled_calls(conn) == 0


def test_a_prepared_statement_dropped_by_discard_all_is_prepared_again(conn: Any) -> None:
    stmt = conn.prepare(CACHED)
    assert stmt.fetchval(1) == 2
    conn.execute('DISCARD ALL')
    assert stmt.fetchval(2) == 4
    before = compiled_calls(conn)
    assert stmt.fetchval(3) == 6
    assert compiled_calls(conn) == before + 1


@pytest.mark.parametrize('compiled', [True, False])
def test_a_prepared_statement_whose_result_types_changed(conn: Any, sync_observer: Any,
                                                         compiled: bool) -> None:
    # asyncpg's rule: a PreparedStatement keeps its types; the server's
    # refusal is raised (not retried), the same on both paths.
    conn._runner.compiled = compiled
    conn.execute('CREATE TABLE IF NOT EXISTS compiled_prepared (a int)')
    try:
        conn.execute('TRUNCATE compiled_prepared')
        conn.execute('INSERT INTO compiled_prepared VALUES ($1)', 1)
        stmt = conn.prepare('SELECT * FROM compiled_prepared WHERE a = $1')
        assert tuple(stmt.fetchrow(1)) == (1,)
        sync_observer.execute('ALTER TABLE compiled_prepared ADD COLUMN b int DEFAULT 7')
        before = compiled_calls(conn)
        with pytest.raises(mypgdriver.exceptions.InvalidCachedStatementError,
                           match='cached statement plan is invalid'):
            stmt.fetchrow(1)
        assert compiled_calls(conn) == before + (1 if compiled else 0)
        assert not conn.is_in_transaction()
        again = conn.prepare('SELECT * FROM compiled_prepared WHERE a = $1')
        assert tuple(again.fetchrow(1)) == (1, 7)
    finally:
        conn.execute('DROP TABLE compiled_prepared')


def test_a_prepared_statement_s_codec_refusal_sends_nothing(conn: Any) -> None:
    stmt = conn.prepare(CACHED)
    with pytest.raises(mypgdriver.exceptions.DataError):
        stmt.fetchval('not a number')
    assert stmt.fetchval(2) == 4


def test_a_prepared_statement_s_server_error_fails_the_transaction(conn: Any) -> None:
    stmt = conn.prepare('SELECT 1 / $1::int')
    tx = conn.transaction()
    tx.start()
    assert stmt.fetchval(1) == 1
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        stmt.fetchval(0)
    with pytest.raises(mypgdriver.exceptions.InFailedSQLTransactionError):
        stmt.fetchval(1)
    assert conn.is_in_transaction()
    tx.rollback()
    assert not conn.is_in_transaction()
    assert stmt.fetchval(1) == 1


@pytest.mark.parametrize('timeout', [0.05, 0.3])
def test_a_timeout_bounds_a_prepared_call(conn: Any, sync_observer: Any,
                                          timeout: float) -> None:
    stmt = conn.prepare(SLEEP)
    assert stmt.fetchval(0) == ''
    pid = conn.get_server_pid()
    before = compiled_calls(conn)
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        stmt.fetchval(10, timeout=timeout)
    assert time.monotonic() - started < timeout + 2
    assert compiled_calls(conn) == before + 1
    assert state_of(sync_observer, pid)[0] == 'idle'
    assert stmt.fetchval(0) == ''


def test_a_prepared_statement_of_a_closed_connection(conn: Any) -> None:
    stmt = conn.prepare(CACHED)
    conn.close()
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        stmt.fetchval(1)

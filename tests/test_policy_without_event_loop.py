"""The protocol and the policy run without an event loop (issue 24's seam).

``mypgdriver.sync`` (issue 24) serves blocking code with the same protocol
and Session as the asyncio API, driving their coroutines by hand: no event
loop exists during its calls (docs/dev/sync-design.md).  These tests run the
public sync API (mypgdriver.sync) in plain functions, with the
event loop policy refusing to hand out a loop, and fail when code on these
paths starts to need a running loop (``asyncio.get_running_loop()``,
``asyncio.sleep``, ``wait_for``, ``shield``, ``current_task()``): such waits go
through mypgdriver/waits.py, which asks only the loop object it is given.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Iterator

import pytest

import mypgdriver.sync as sync


@pytest.fixture
def no_event_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every request for an event loop is recorded and refused."""
    asked: list[str] = []
    policy = asyncio.get_event_loop_policy()

    def refuse(name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            raise AssertionError(f'an event loop was asked for: {name}')
        return method
    for name in ('get_event_loop', 'new_event_loop', 'set_event_loop'):
        monkeypatch.setattr(policy, name, refuse(name))
    assert asyncio._get_running_loop() is None
    yield asked
    assert not asked, asked


@pytest.fixture
def sync_conn(pg_cluster: Any, no_event_loop: list[str]) -> Iterator[Any]:
    # timeout=: the connector's deadlines.within() waits through the glue
    conn = sync.connect(pg_cluster.dsn(), timeout=10)
    try:
        yield conn
    finally:
        conn.close()


def test_queries_and_a_transaction_block(sync_conn: Any) -> None:
    seen: list[Any] = []
    # from inside a call: the glue runs it, and asyncio sees no running loop
    sync_conn._aconn._session.query_loggers.append(
        lambda record: seen.append(asyncio._get_running_loop()))
    assert sync_conn.fetchval('SELECT 1+1') == 2
    assert sync_conn.fetchval('SELECT $1::int + $2', 40, 2) == 42
    rows = sync_conn.fetch('SELECT typname FROM pg_type WHERE oid = ANY($1::oid[])', [16, 23])
    assert sorted(r['typname'] for r in rows) == ['bool', 'int4']
    assert seen and all(loop is None for loop in seen)
    with sync_conn.transaction():
        sync_conn.execute('CREATE TEMP TABLE t (x int)')
        sync_conn.execute('INSERT INTO t VALUES ($1)', 1)
        assert sync_conn._aconn.is_in_transaction()
    assert not sync_conn._aconn.is_in_transaction()
    assert sync_conn.fetchval('SELECT count(*) FROM t') == 1


def test_a_rolled_back_block_leaves_nothing(sync_conn: Any) -> None:
    sync_conn.execute('CREATE TEMP TABLE r (x int)')
    with pytest.raises(ZeroDivisionError):
        with sync_conn.transaction():
            sync_conn.execute('INSERT INTO r VALUES (1)')
            raise ZeroDivisionError
    assert sync_conn.fetchval('SELECT count(*) FROM r') == 0
    assert not sync_conn._aconn.is_in_transaction()


@pytest.mark.parametrize('timeout', [0.05, 0.2])
def test_a_statement_timeout_cancels_on_the_server_and_stays_in_sync(
        sync_conn: Any, timeout: float) -> None:
    pid = sync_conn._aconn.get_server_pid()
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        sync_conn.fetchval('SELECT pg_sleep(30)', timeout=timeout)
    # (a loaded machine adds a fraction of the 5 s allowed)
    assert time.monotonic() - started < timeout + 5.0
    # the next call waits for the drain of the cancelled statement
    assert sync_conn.fetchval('SELECT 1+1') == 2
    assert sync_conn.fetchval('SELECT pg_backend_pid()') == pid
    assert time.monotonic() - started < 10.0      # cancelled: not after the 30 s statement


def test_a_timed_out_transaction_statement_ends_the_block(sync_conn: Any) -> None:
    # the transaction's cleanup (cancel, drain, ROLLBACK) is a background
    # task of the glue, run before the next call
    with pytest.raises(asyncio.TimeoutError):
        with sync_conn.transaction():
            sync_conn.execute('CREATE TEMP TABLE x (a int)')
            sync_conn.fetchval('SELECT pg_sleep(5)', timeout=0.1)
    assert sync_conn.fetchval('SELECT 1') == 1
    assert not sync_conn._aconn.is_in_transaction()
    assert sync_conn.fetchval("SELECT to_regclass('pg_temp.x') IS NULL") is True

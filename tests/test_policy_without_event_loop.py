"""The protocol and the policy run without an event loop (issue 24's seam).

``mypgdriver.sync`` (issue 24) serves blocking code with the same protocol
and Session as the asyncio API, driving their coroutines by hand: no event
loop exists during its calls (docs/dev/sync-design.md).  These tests run the
public sync API (mypgdriver.sync) in plain functions, with the
event loop policy refusing to hand out a loop, and fail when code on these
paths starts to need a running loop (``asyncio.get_running_loop()``,
``asyncio.sleep``, ``wait_for``, ``shield``, ``current_task()``): such waits go
through mypgdriver/core/waits.py, which asks only the loop object it is given.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

# no_event_loop is the plugin's; tests/test_sync_pool*.py still import it from
# here, hence the re-export.
from tests.support.fixtures import SyncConnect, no_event_loop  # noqa: F401


@pytest.fixture
def timed_sync_conn(open_sync_conn: SyncConnect, no_event_loop: list[str]) -> Any:
    """A ``mypgdriver.sync`` connection opened with a connect timeout, no event loop allowed.

    The timeout is the difference from the plugin's ``sync_conn``: the
    connector's deadlines.within() then waits through the glue too.
    """
    return open_sync_conn(timeout=10)


def test_queries_and_a_transaction_block(timed_sync_conn: Any) -> None:
    seen: list[Any] = []
    # from inside a call: the glue runs it, and asyncio sees no running loop
    timed_sync_conn._aconn._session.query_loggers.append(
        lambda record: seen.append(asyncio._get_running_loop()))
    assert timed_sync_conn.fetchval('SELECT 1+1') == 2
    assert timed_sync_conn.fetchval('SELECT $1::int + $2', 40, 2) == 42
    rows = timed_sync_conn.fetch('SELECT typname FROM pg_type WHERE oid = ANY($1::oid[])', [16, 23])
    assert sorted(r['typname'] for r in rows) == ['bool', 'int4']
    assert seen and all(loop is None for loop in seen)
    with timed_sync_conn.transaction():
        timed_sync_conn.execute('CREATE TEMP TABLE t (x int)')
        timed_sync_conn.execute('INSERT INTO t VALUES ($1)', 1)
        assert timed_sync_conn._aconn.is_in_transaction()
    assert not timed_sync_conn._aconn.is_in_transaction()
    assert timed_sync_conn.fetchval('SELECT count(*) FROM t') == 1


def test_a_rolled_back_block_leaves_nothing(timed_sync_conn: Any) -> None:
    timed_sync_conn.execute('CREATE TEMP TABLE r (x int)')
    with pytest.raises(ZeroDivisionError):
        with timed_sync_conn.transaction():
            timed_sync_conn.execute('INSERT INTO r VALUES (1)')
            raise ZeroDivisionError
    assert timed_sync_conn.fetchval('SELECT count(*) FROM r') == 0
    assert not timed_sync_conn._aconn.is_in_transaction()


@pytest.mark.parametrize('timeout', [0.05, 0.2])
def test_a_statement_timeout_cancels_on_the_server_and_stays_in_sync(
        timed_sync_conn: Any, timeout: float) -> None:
    pid = timed_sync_conn._aconn.get_server_pid()
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        timed_sync_conn.fetchval('SELECT pg_sleep(30)', timeout=timeout)
    # (a loaded machine adds a fraction of the 5 s allowed)
    assert time.monotonic() - started < timeout + 5.0
    # the next call waits for the drain of the cancelled statement
    assert timed_sync_conn.fetchval('SELECT 1+1') == 2
    assert timed_sync_conn.fetchval('SELECT pg_backend_pid()') == pid
    assert time.monotonic() - started < 10.0      # cancelled: not after the 30 s statement


def test_a_timed_out_transaction_statement_ends_the_block(timed_sync_conn: Any) -> None:
    # the transaction's cleanup (cancel, drain, ROLLBACK) is a background
    # task of the glue, run before the next call
    with pytest.raises(asyncio.TimeoutError):
        with timed_sync_conn.transaction():
            timed_sync_conn.execute('CREATE TEMP TABLE x (a int)')
            timed_sync_conn.fetchval('SELECT pg_sleep(5)', timeout=0.1)
    assert timed_sync_conn.fetchval('SELECT 1') == 1
    assert not timed_sync_conn._aconn.is_in_transaction()
    assert timed_sync_conn.fetchval("SELECT to_regclass('pg_temp.x') IS NULL") is True

"""mypgdriver behind a real pgbouncer in transaction pooling mode, the statement cache off.

pgbouncer hands each transaction (and each Sync outside a transaction) to
whichever server connection is free, so named prepared statements do not
follow a client.  With ``statement_cache_size=0`` the driver uses only the
unnamed statement and re-sends its Parse with every Bind, which works
through every pgbouncer version: these tests run with the one installed on
the machine (tools/pgbouncer.py; Debian's 1.18 in CI, which ./dev.sh
installs), whatever its version.  So do what docs/guide/poolers.rst
promises of such a pooler besides statements: COPY, cancellation (a timeout
and Connection.cancel()), and LISTEN/NOTIFY (NOTIFY works through it; a
listener must connect to the server itself).

The statement cache on through a pooler: test_pooler_prepared.py.
"""
from __future__ import annotations

import asyncio
import io
import random
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.pgbouncer import installed_pgbouncer
from tests.support.waiting import apoll
from tools.pgbouncer import (
    PGBOUNCER_ENV,
    Pgbouncer,
    PgbouncerNotFound,
    PgbouncerUnavailable,
    find_pgbouncer,
    pgbouncer_version,
)

CLIENTS = 50
SERVER_POOL_SIZE = 10
DURATION = 3.0


# --- which binary (tools/pgbouncer.py) ---------------------------------------------------


def _script(folder: Path, name: str, version_output: str) -> Path:
    """An executable that answers --version like a pgbouncer (it is never run as a pooler)."""
    path = folder / name
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{version_output}'\n")
    path.chmod(0o755)
    return path


def test_the_variable_names_the_binary_before_the_one_on_path(tmp_path, monkeypatch):
    given = _script(tmp_path, 'my-pgbouncer', 'PgBouncer 1.25.2')
    (tmp_path / 'bin').mkdir()
    _script(tmp_path / 'bin', 'pgbouncer', 'PgBouncer 1.18.0')
    monkeypatch.setenv('PATH', str(tmp_path / 'bin'))
    monkeypatch.setenv(PGBOUNCER_ENV, str(given))
    found = find_pgbouncer()
    assert (found.path, found.version, found.banner) == (given, (1, 25, 2), 'PgBouncer 1.25.2')
    assert found.at_least((1, 21)) and not found.at_least((1, 26))
    monkeypatch.delenv(PGBOUNCER_ENV)
    assert find_pgbouncer().version == (1, 18, 0)


def test_a_variable_naming_no_pgbouncer_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv(PGBOUNCER_ENV, str(tmp_path / 'missing'))
    with pytest.raises(PgbouncerUnavailable, match='is not an executable file') as info:
        find_pgbouncer()
    assert not isinstance(info.value, PgbouncerNotFound)
    monkeypatch.setenv(PGBOUNCER_ENV, str(_script(tmp_path, 'psql', 'psql (PostgreSQL) 15.8')))
    with pytest.raises(PgbouncerUnavailable, match='said no pgbouncer version'):
        find_pgbouncer()


def test_the_version_is_read_from_the_first_line(tmp_path):
    # What Debian's 1.18 prints.
    binary = _script(tmp_path, 'pgbouncer', 'PgBouncer 1.18.0\nlibevent 2.1.12-stable')
    assert pgbouncer_version(binary) == ('PgBouncer 1.18.0', (1, 18, 0))


# --- through the pgbouncer found ---------------------------------------------------------


@pytest.fixture(scope='module')
def bouncer(pg_cluster) -> Iterator[Pgbouncer]:
    """The pgbouncer found (pool_mode=transaction) in front of the session's server."""
    pg_cluster.require_local()
    settings = {'pool_mode': 'transaction', 'default_pool_size': SERVER_POOL_SIZE,
                'max_client_conn': CLIENTS * 2}
    with Pgbouncer(installed_pgbouncer(), pg_cluster.host, pg_cluster.port,
                   settings=settings) as running:
        yield running


@pytest.fixture(scope='module')
def pgbouncer_port(bouncer: Pgbouncer) -> int:
    return bouncer.port


async def _connect(port: int, **kwargs: Any) -> Any:
    """A connection through pgbouncer with the statement cache off (what the docs advise)."""
    kwargs.setdefault('statement_cache_size', 0)
    return await mypgdriver.connect(host='127.0.0.1', port=port, user='postgres',
                                    database='postgres', **kwargs)


@pytest.fixture
async def via_bouncer(pgbouncer_port: int) -> AsyncIterator[Any]:
    conn = await _connect(pgbouncer_port)
    try:
        yield conn
    finally:
        await conn.close()


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Wait until `condition()` holds, for at most `seconds`; whether it did."""
    return await apoll(condition, bool, timeout=seconds)


@pytest.fixture
async def bouncer_table(conn):
    await conn.execute("""
        DROP TABLE IF EXISTS bouncer_log; DROP TYPE IF EXISTS bouncer_mood;
        CREATE TYPE bouncer_mood AS ENUM ('calm', 'busy');
        CREATE TABLE bouncer_log (client int, seq int, mood bouncer_mood, note text)""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS bouncer_log; DROP TYPE IF EXISTS bouncer_mood")


async def _client(number: int, port: int, stop_at: float, pids: set[int]) -> int:
    """Mix plain queries with arguments and multi-statement transactions until stop_at."""
    conn = await _connect(port)
    rng = random.Random(number)
    inserted = 0
    seq = 0
    try:
        while time.monotonic() < stop_at:
            seq += 1
            kind = rng.random()
            if kind < 0.35:
                a, b = rng.randint(-1000, 1000), rng.randint(-1000, 1000)
                assert await conn.fetchval("SELECT $1::int + $2::int", a, b) == a + b
                text = f'c{number}-{seq}'
                row = await conn.fetchrow("SELECT upper($1::text) AS u, length($1::text) AS n",
                                          text)
                assert (row['u'], row['n']) == (text.upper(), len(text))
            elif kind < 0.75:
                async with conn.transaction():
                    pid = await conn.fetchval("SELECT pg_backend_pid()")
                    pids.add(pid)
                    mood = 'busy' if seq % 2 else 'calm'
                    await conn.execute(
                        "INSERT INTO bouncer_log VALUES ($1, $2, $3, $4)",
                        number, seq, mood, f'pid {pid}')
                    rows = await conn.fetch(
                        "SELECT seq, mood FROM bouncer_log WHERE client = $1 AND seq = $2",
                        number, seq)
                    assert [tuple(r) for r in rows] == [(seq, mood)]
                    # The whole transaction stays on one server connection.
                    assert await conn.fetchval("SELECT pg_backend_pid()") == pid
                inserted += 1
            elif kind < 0.9:
                await conn.executemany(
                    "INSERT INTO bouncer_log VALUES ($1, $2, 'calm', $3)",
                    [(number, -seq, 'many'), (number, -seq, 'many')])
                inserted += 2
            else:
                async with conn.transaction():
                    values = [r[0] async for r in conn.cursor(
                        "SELECT generate_series(1, $1::int)", 25, prefetch=10)]
                    assert values == list(range(1, 26))
    finally:
        await conn.close()
    return inserted


async def test_fifty_clients_through_pgbouncer_transaction_pooling(pgbouncer_port, bouncer_table):
    conn = bouncer_table
    pids: set[int] = set()
    stop_at = time.monotonic() + DURATION
    inserted = await asyncio.gather(
        *(_client(n, pgbouncer_port, stop_at, pids) for n in range(CLIENTS)))
    # Every statement succeeded with correct results (asserted in _client), and
    # every committed row is there.
    assert await conn.fetchval("SELECT count(*) FROM bouncer_log") == sum(inserted)
    assert sum(inserted) > CLIENTS
    # 50 clients shared at most 10 server connections: transactions really
    # were multiplexed, so statements could not rely on one server session.
    assert 1 < len(pids) <= SERVER_POOL_SIZE


# --- COPY ------------------------------------------------------------------------------------


@pytest.fixture
async def copy_table(conn) -> AsyncIterator[Any]:
    await conn.execute("""
        DROP TABLE IF EXISTS bouncer_copy;
        CREATE TABLE bouncer_copy (client int, seq int, payload text)""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS bouncer_copy")


async def _copy_client(number: int, port: int) -> int:
    """Every COPY method, in and outside transaction blocks; rows copied in."""
    conn = await _connect(port)
    copied = 0
    try:
        for seq in range(3):
            records = [(number, seq, f'r{i}') for i in range(4)]
            assert await conn.copy_records_to_table('bouncer_copy', records=records) == 'COPY 4'
            data = ''.join(f'{number}\t{seq}\tt{i}\n' for i in range(2)).encode()
            async with conn.transaction():
                assert await conn.copy_to_table('bouncer_copy', source=[data]) == 'COPY 2'
                out = io.BytesIO()
                status = await conn.copy_from_query(
                    "SELECT payload FROM bouncer_copy WHERE client = $1 AND seq = $2 "
                    "ORDER BY payload", number, seq, output=out)
                assert status == 'COPY 6'
                assert out.getvalue() == b'r0\nr1\nr2\nr3\nt0\nt1\n'
            copied += 6
            # A query between COPYs: the connection is in sync after each one.
            assert await conn.fetchval("SELECT $1::int * 2", seq) == seq * 2
    finally:
        await conn.close()
    return copied


async def test_copy_in_and_out_through_pgbouncer(pg_cluster, copy_table):
    # Eight clients over two server connections: a COPY that kept its server
    # connection assigned after it ended would make the others wait until
    # the test's timeout.
    pg_cluster.require_local()
    settings = {'pool_mode': 'transaction', 'default_pool_size': 2, 'max_client_conn': 20}
    with Pgbouncer(installed_pgbouncer(), pg_cluster.host, pg_cluster.port,
                   settings=settings) as small:
        copied = await asyncio.wait_for(
            asyncio.gather(*(_copy_client(n, small.port) for n in range(8))), 60)
    conn = copy_table
    assert await conn.fetchval("SELECT count(*) FROM bouncer_copy") == sum(copied) == 8 * 18
    out = io.BytesIO()
    assert await conn.copy_from_table('bouncer_copy', output=out) == f'COPY {sum(copied)}'


async def test_copy_from_table_through_pgbouncer(via_bouncer, copy_table):
    await copy_table.execute("INSERT INTO bouncer_copy VALUES (1, 1, 'a'), (2, 2, 'b')")
    out = io.BytesIO()
    assert await via_bouncer.copy_from_table('bouncer_copy', output=out,
                                             columns=['payload']) == 'COPY 2'
    assert sorted(out.getvalue().split()) == [b'a', b'b']


# --- cancellation --------------------------------------------------------------------------

SLEEP = "SELECT pg_sleep(30)"
STILL_RUNNING = ("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' "
                 "AND state = 'active'")
# Running it for a while, not parsing it (see test_cancellation.RUNNING_QUERY);
# through pgbouncer the client does not know the server process's pid.
SLEEPING = STILL_RUNNING + " AND clock_timestamp() - query_start > interval '20 milliseconds'"


async def test_a_timeout_cancels_the_statement_through_pgbouncer(via_bouncer, monitor):
    # pgbouncer gives the client a cancel key of its own and forwards the
    # CancelRequest to the server process running the client's statement.
    conn = via_bouncer
    with pytest.raises(asyncio.TimeoutError):
        await conn.fetchval(SLEEP, timeout=0.3)
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 7), 5) == 7
    assert await monitor.fetchval(STILL_RUNNING) == 0


async def test_connection_cancel_from_another_task_through_pgbouncer(via_bouncer, monitor):
    conn = via_bouncer
    running = asyncio.ensure_future(conn.fetchval(SLEEP))
    assert await apoll(lambda: monitor.fetchval(SLEEPING),
                       lambda n: n != 0 or running.done(), timeout=10) != 0
    assert not running.done()
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await asyncio.wait_for(running, 10)
    async with conn.transaction():
        assert await conn.fetchval("SELECT $1::int + 1", 1) == 2
    assert await monitor.fetchval(STILL_RUNNING) == 0


# --- LISTEN / NOTIFY -----------------------------------------------------------------------


async def test_notify_works_through_pgbouncer_and_a_listener_must_bypass_it(
        bouncer, via_bouncer, connect_kwargs):
    # docs/guide/poolers.rst: LISTEN callbacks do not work through a
    # transaction-mode pooler, NOTIFY does.  LISTEN runs on the server
    # connection the client had for that one statement; a notification that
    # arrives there while no client holds it is dropped by pgbouncer (1.18
    # logs "got packet 'A' from server when not linked").
    through: list[str] = []
    direct: list[str] = []
    await via_bouncer.add_listener('mypg_bouncer_jobs', lambda *a: through.append(a[-1]))
    listener = await mypgdriver.connect(**connect_kwargs)
    notifier = await _connect(bouncer.port)
    try:
        await listener.add_listener('mypg_bouncer_jobs', lambda *a: direct.append(a[-1]))
        await listener.execute("NOTIFY mypg_bouncer_jobs, 'job 1'")
        assert await _until(lambda: direct == ['job 1'])
        # Given the time pgbouncer needs to see (and drop) it, where it logs that.
        await _until(lambda: "when not linked" in bouncer.log_text(), 2)
        # NOTIFY through the pooler reaches the listener on the server.
        await notifier.execute("SELECT pg_notify('mypg_bouncer_jobs', 'job 2')")
        assert await _until(lambda: direct == ['job 1', 'job 2'])
        assert await via_bouncer.fetchval("SELECT 1") == 1
        assert through == []
        assert not via_bouncer.is_closed()
    finally:
        await listener.close()
        await notifier.close()

"""mypgdriver behind a real pgbouncer in transaction pooling mode.

pgbouncer hands each transaction (and each Sync outside a transaction) to
whichever server connection is free, so named prepared statements do not
follow a client.  With ``statement_cache_size=0`` the driver uses only the
unnamed statement and re-sends its Parse with every Bind, which works.

pgbouncer comes from Debian's package (1.18); the test installs it when
missing and skips, saying why, when that is impossible.  The statement
cache on, through pgbouncer 1.25: test_pooler_prepared.py.
"""
from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import time
from typing import Iterator

import pytest

import mypgdriver
from tools.pgbouncer import Pgbouncer

CLIENTS = 50
SERVER_POOL_SIZE = 10
DURATION = 3.0


def _find_pgbouncer() -> str | None:
    return shutil.which('pgbouncer') or next(
        (p for p in ('/usr/sbin/pgbouncer', '/usr/bin/pgbouncer') if os.access(p, os.X_OK)), None)


def _install_pgbouncer() -> str:
    """Install Debian's pgbouncer, returning why not if that is impossible ('' on success)."""
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        return 'pgbouncer is not installed (apt-get install pgbouncer needs root and apt-get)'
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for cmd in (['apt-get', 'update'], ['apt-get', 'install', '-y', 'pgbouncer']):
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f'pgbouncer could not be installed: {" ".join(cmd)}: {e}'
        if done.returncode != 0:
            return (f'pgbouncer could not be installed: {" ".join(cmd)} failed: '
                    f'{done.stderr.strip()[-300:]}')
    return ''


@pytest.fixture(scope='module')
def pgbouncer_port(pg_cluster) -> Iterator[int]:
    """Port of Debian's pgbouncer (pool_mode=transaction) in front of the session's server."""
    pg_cluster.require_local()
    path = _find_pgbouncer()
    if path is None:
        reason = _install_pgbouncer()
        path = _find_pgbouncer()
        if path is None:
            pytest.skip(reason or 'pgbouncer is not installed')
    settings = {'pool_mode': 'transaction', 'default_pool_size': SERVER_POOL_SIZE,
                'max_client_conn': CLIENTS * 2}
    with Pgbouncer(path, pg_cluster.host, pg_cluster.port, settings=settings) as bouncer:
        yield bouncer.port


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
    conn = await mypgdriver.connect(host='127.0.0.1', port=port, user='postgres',
                                    database='postgres', statement_cache_size=0)
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

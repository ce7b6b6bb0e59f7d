"""The network failing under a sync call: an error, never a hang or a leak (issue 24).

A TCP proxy (tests/support/tcp_proxy.py) cuts the server's stream after N
bytes, for many N across a call's answer (and across the startup), or
stalls it.  Each call fails promptly with the asyncio API's exception
class, the connection is then closed and says so, and no socket is left
open; a stalled call ends at its timeout and the connection recovers (in
sync, same backend) once the network is back.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterator

import pytest

import mypgdriver.sync
from mypgdriver import exceptions
from tests.support.tcp_proxy import TcpProxy
from tests.test_policy_without_event_loop import no_event_loop  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures('no_event_loop')

# Seconds within which a failure must be reported (the cut is immediate).
PROMPT = 5.0
BIG_QUERY = "SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g"
# Offsets into the answer of BIG_QUERY (about 1.1 MB): inside the first
# message header, its body, the first rows, and far into the stream.
OFFSETS = [0, 1, 4, 5, 6, 30, 200, 1000, 4096, 65535, 65536, 100_001, 500_000, 1_000_000]


def open_fds(proxy: TcpProxy) -> int:
    """Descriptors open in this process, the proxy's own sockets not counted.

    The proxy closes its side from its threads: counted until it settles.
    """
    deadline = time.monotonic() + 2
    while True:
        listed = set(map(int, os.listdir('/proc/self/fd')))
        proxy_fds = {proxy._listener.fileno()}
        for c in proxy.connections:
            proxy_fds.update((c.client.fileno(), c.upstream.fileno()))
        count = len(listed - proxy_fds)
        again = set(map(int, os.listdir('/proc/self/fd')))
        if again == listed or time.monotonic() > deadline:
            return count


@pytest.fixture
def proxy(pg_cluster: Any) -> Iterator[TcpProxy]:
    with TcpProxy(pg_cluster.host, pg_cluster.port) as p:
        yield p


def connect(proxy: TcpProxy, **kwargs: Any) -> mypgdriver.sync.Connection:
    return mypgdriver.sync.connect(host='127.0.0.1', port=proxy.port, user='postgres',
                                   database='postgres', ssl='disable', **kwargs)


@pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='counts /proc/self/fd')
@pytest.mark.parametrize('reset', [False, True], ids=['fin', 'rst'])
def test_stream_cut_at_many_offsets_fails_promptly_and_leaks_nothing(
        proxy: TcpProxy, reset: bool) -> None:
    fds = None
    for nbytes in OFFSETS:
        conn = connect(proxy)
        assert conn.fetchval('SELECT 1') == 1
        if fds is None:
            fds = open_fds(proxy)
        proxy.cut_after(nbytes, reset=reset)
        started = time.monotonic()
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            conn.fetch(BIG_QUERY)
        assert time.monotonic() - started < PROMPT, nbytes
        assert conn.is_closed(), nbytes
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            conn.fetchval('SELECT 1')
        conn.close()
        # this connection's socket is gone: as many descriptors as before it
        assert open_fds(proxy) == fds - 1, nbytes
        fds = None


@pytest.mark.parametrize('nbytes', [0, 1, 9, 60, 300])
def test_startup_cut_fails_promptly(pg_cluster: Any, nbytes: int) -> None:
    with TcpProxy(pg_cluster.host, pg_cluster.port, cut_new_after=nbytes) as proxy:
        before = open_fds(proxy)
        started = time.monotonic()
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            connect(proxy, timeout=10)
        assert time.monotonic() - started < PROMPT
        assert open_fds(proxy) == before


def test_cut_during_copy_out_and_executemany(proxy: TcpProxy, pg_cluster: Any) -> None:
    conn = connect(proxy)
    chunks: list[bytes] = []
    proxy.cut_after(100_000)
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        conn.copy_from_query("SELECT g, repeat('x', 100) FROM generate_series(1, 100000) g",
                             output=chunks.append)
    assert 0 < sum(map(len, chunks)) < 100_000
    assert conn.is_closed()

    conn = connect(proxy)
    conn.execute('CREATE TEMP TABLE t (a int, b text)')
    proxy.cut_after(20)
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        conn.executemany('INSERT INTO t VALUES ($1, $2)', [(i, 'x' * 100) for i in range(50_000)])
    assert conn.is_closed()


def test_stalled_network_ends_at_the_timeout_then_recovers(proxy: TcpProxy) -> None:
    conn = connect(proxy)
    pid = conn.get_server_pid()
    for _ in range(3):
        proxy.stall()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            conn.fetchval('SELECT 1', timeout=0.5)
        assert time.monotonic() - started < 0.5 + PROMPT
        proxy.resume()
        # in sync once the network is back: the same backend answers
        assert conn.fetchval('SELECT pg_backend_pid()', timeout=10) == pid
    conn.close()

"""The network failing under a sync call: an error, never a hang or a leak (issue 24).

A TCP proxy (tests/support/tcp_proxy.py) cuts the server's stream after N
bytes, for many N across a call's answer (and across the startup), or
stalls it.  Each call fails promptly with the asyncio API's exception
class, the connection is then closed and says so, and no socket is left
open; a stalled call ends at its timeout and the connection recovers (in
sync, same backend) once the network is back.
"""
from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

import mypgdriver.sync
from mypgdriver import exceptions
from tests.support.descriptors import HAVE_PROC_FDS, open_descriptors, opened_since
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.usefixtures('no_event_loop')

# Seconds within which a failure must be reported (the cut is immediate).
PROMPT = 5.0
BIG_QUERY = "SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g"
# Offsets into the answer of BIG_QUERY (about 1.1 MB): inside the first
# message header, its body, the first rows, and far into the stream.
OFFSETS = [0, 1, 4, 5, 6, 30, 200, 1000, 4096, 65535, 65536, 100_001, 500_000, 1_000_000]


def proxy_sockets(proxy: TcpProxy) -> set[int]:
    """The descriptors of the proxy's own sockets (not the driver's)."""
    fds = {proxy._listener.fileno()}
    for c in proxy.connections:
        fds.update((c.client.fileno(), c.upstream.fileno()))
    return fds


@pytest.fixture
def proxy(pg_cluster: Any) -> Iterator[TcpProxy]:
    with TcpProxy(pg_cluster.host, pg_cluster.port) as p:
        yield p


def connect(proxy: TcpProxy, **kwargs: Any) -> mypgdriver.sync.Connection:
    return mypgdriver.sync.connect(host='127.0.0.1', port=proxy.port, user='postgres',
                                   database='postgres', ssl='disable', **kwargs)


@pytest.mark.skipif(not HAVE_PROC_FDS, reason='reads /proc/self/fd')
@pytest.mark.parametrize('reset', [False, True], ids=['fin', 'rst'])
def test_stream_cut_at_many_offsets_fails_promptly_and_leaks_nothing(
        proxy: TcpProxy, reset: bool) -> None:
    for nbytes in OFFSETS:
        before = open_descriptors()
        conn = connect(proxy)
        assert conn.fetchval('SELECT 1') == 1
        proxy.cut_after(nbytes, reset=reset)
        started = time.monotonic()
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            conn.fetch(BIG_QUERY)
        assert time.monotonic() - started < PROMPT, nbytes
        assert conn.is_closed(), nbytes
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            conn.fetchval('SELECT 1')
        conn.close()
        # this connection's socket is gone, and nothing else it opened is left
        assert opened_since(before, lambda: proxy_sockets(proxy)) == {}, nbytes


@pytest.mark.skipif(not HAVE_PROC_FDS, reason='reads /proc/self/fd')
@pytest.mark.parametrize('nbytes', [0, 1, 9, 60, 300])
def test_startup_cut_fails_promptly(pg_cluster: Any, nbytes: int) -> None:
    with TcpProxy(pg_cluster.host, pg_cluster.port, cut_new_after=nbytes) as proxy:
        before = open_descriptors()
        started = time.monotonic()
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            connect(proxy, timeout=10)
        assert time.monotonic() - started < PROMPT
        assert opened_since(before, lambda: proxy_sockets(proxy)) == {}


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

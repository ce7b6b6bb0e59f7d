"""Lost connections: a killed backend, a server stopped under us, a peer that
closes the socket mid-result, and a peer that stops answering.

In every case pending and later calls fail promptly with the error that
says what happened, is_closed() turns true, termination listeners run, and
nothing hangs (each wait is bounded by asyncio.wait_for).
"""
from __future__ import annotations

import asyncio
import socket
import time
from typing import Any, Iterator

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_sleeping
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import apoll
from tools.pgcluster import PgCluster

#: How soon a loss must be noticed and reported: a loaded machine stalls the
#: test for a fraction of it, a driver that waits for something stays far over it.
PROMPT = 5.0
#: Upper bound for any single wait in this module: beyond it, the driver hangs.
HANG = 15.0
BIG_QUERY = "SELECT g, repeat('x', 100) FROM generate_series(1, 100000) g"


class TerminationRecorder:
    """A termination listener that remembers the connections it was called with."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, conn: Any) -> None:
        self.calls.append(conn)

    async def wait_called(self, conn: Any, bound: float = PROMPT) -> None:
        await apoll(lambda: self.calls, bool, timeout=bound)
        assert self.calls == [conn]


def listen_for_termination(conn: Any) -> TerminationRecorder | None:
    if not hasattr(conn, "add_termination_listener"):
        return None
    recorder = TerminationRecorder()
    conn.add_termination_listener(recorder)
    return recorder


async def wait_closed(conn: Any, bound: float = PROMPT) -> float:
    """Seconds until conn.is_closed() is true, failing after `bound`."""
    start = time.monotonic()
    if not await apoll(conn.is_closed, bool, timeout=bound):
        pytest.fail(f"connection not closed {bound}s after it was lost")
    return time.monotonic() - start


async def fails_promptly(call, exc_class: type[BaseException], bound: float = PROMPT):
    """Await `call`; it must raise exactly `exc_class` within `bound` seconds."""
    start = time.monotonic()
    with pytest.raises(BaseException) as info:
        await asyncio.wait_for(call, HANG)
    elapsed = time.monotonic() - start
    assert type(info.value) is exc_class, repr(info.value)
    assert elapsed < bound, f"took {elapsed:.2f}s to fail"
    return info.value


def assert_ended_by_server(err: BaseException, sqlstate: str = "57P01") -> None:
    """`err` is asyncpg's report of a session the server ended mid-call.

    A ConnectionDoesNotExistError (what retry handlers catch), whose cause is
    the server's FATAL error.
    """
    assert type(err) is exceptions.ConnectionDoesNotExistError, repr(err)
    cause = err.__cause__
    assert type(cause) is exceptions.AdminShutdownError, repr(cause)
    assert cause.sqlstate == sqlstate
    assert str(err) == f"connection was closed in the middle of operation: {cause.message}"


async def later_calls_fail(conn: Any) -> None:
    """Every kind of call on a lost connection fails at once with ConnectionDoesNotExistError."""
    assert conn.is_closed()
    calls = [conn.fetchval("SELECT 1"), conn.fetch("SELECT 1"), conn.execute("SELECT 1"),
             conn.execute("SELECT $1::int", 1), conn.executemany("SELECT $1::int", [(1,)])]
    if hasattr(conn, "prepare"):
        calls.append(conn.prepare("SELECT 'not prepared before'"))
    for call in calls:
        await fails_promptly(call, exceptions.ConnectionDoesNotExistError)


@pytest.fixture(scope="module")
def private_cluster() -> Iterator[PgCluster]:
    """A server of this module's own, to stop and restart."""
    cluster = PgCluster()
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def running_private_cluster(private_cluster) -> PgCluster:
    private_cluster.start()     # a previous test may have stopped it
    return private_cluster


def kwargs_for(cluster: PgCluster, **extra: Any) -> dict[str, Any]:
    return dict(host=cluster.host, port=cluster.port, user="postgres", database="postgres",
                **extra)


# --- pg_terminate_backend ---------------------------------------------------------------

async def test_terminated_idle_connection(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs)
    recorder = listen_for_termination(conn)
    assert await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    # Noticed without any call: the server's FATAL message and EOF arrive by themselves.
    await wait_closed(conn)
    if recorder:
        await recorder.wait_called(conn)
    await later_calls_fail(conn)
    await conn.close()      # closing a lost connection is allowed and quiet
    assert conn.is_closed()


async def test_prepare_of_cached_statement_on_lost_connection_fails(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs)
    assert await conn.fetchval("SELECT 1") == 1
    await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    await wait_closed(conn)
    await fails_promptly(conn.prepare("SELECT 1"), exceptions.ConnectionDoesNotExistError)


async def test_terminated_busy_connection(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs)
    recorder = listen_for_termination(conn)
    pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(monitor, conn.get_server_pid())
    assert await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    err = await fails_promptly(pending, exceptions.ConnectionDoesNotExistError)
    assert_ended_by_server(err)
    assert err.__cause__.message == "terminating connection due to administrator command"
    assert conn.is_closed()
    if recorder:
        await recorder.wait_called(conn)
    await later_calls_fail(conn)


async def test_terminated_connection_inside_transaction(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs)
    await conn.execute("BEGIN")
    pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(monitor, conn.get_server_pid())
    await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    assert_ended_by_server(
        await fails_promptly(pending, exceptions.ConnectionDoesNotExistError))
    await later_calls_fail(conn)


async def test_terminated_during_executemany(connect_kwargs, monitor):
    conn = await mypgdriver.connect(**connect_kwargs)
    pending = asyncio.ensure_future(conn.executemany(
        "SELECT pg_sleep(0.05) WHERE $1::int IS NOT NULL", [(i,) for i in range(200)]))
    await wait_sleeping(monitor, conn.get_server_pid())
    await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    assert_ended_by_server(
        await fails_promptly(pending, exceptions.ConnectionDoesNotExistError))
    await later_calls_fail(conn)


async def test_terminated_while_cancel_resync_is_pending(connect_kwargs, monitor):
    # A query times out, and the backend dies before the drain finishes:
    # the next call must not wait for a ReadyForQuery that will never come.
    conn = await mypgdriver.connect(**connect_kwargs)
    await monitor.execute("DROP TABLE IF EXISTS mypg_lost_lock; CREATE TABLE mypg_lost_lock (i int)")
    try:
        await monitor.execute("BEGIN; LOCK TABLE mypg_lost_lock")
        # The cancel interrupts the lock wait, so the terminate below races it;
        # either way the next call must fail promptly or succeed, never hang.
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetchval("SELECT count(*) FROM mypg_lost_lock", timeout=0.2)
        await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
        await monitor.execute("ROLLBACK")
        await wait_closed(conn)
        await later_calls_fail(conn)
    finally:
        if monitor.is_in_transaction():
            await monitor.execute("ROLLBACK")
        await monitor.execute("DROP TABLE IF EXISTS mypg_lost_lock")


async def test_lost_inside_transaction_block_raises_the_servers_error(connect_kwargs, monitor):
    if not hasattr(mypgdriver.Connection, "transaction"):
        pytest.skip("Connection.transaction() not implemented yet")
    conn = await mypgdriver.connect(**connect_kwargs)
    # What matters is that the block re-raises the connection error.
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        async with conn.transaction():
            pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
            await wait_sleeping(monitor, conn.get_server_pid())
            await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
            await asyncio.wait_for(pending, HANG)
    await later_calls_fail(conn)


async def test_lost_while_idle_inside_transaction_block(connect_kwargs, monitor):
    if not hasattr(mypgdriver.Connection, "transaction"):
        pytest.skip("Connection.transaction() not implemented yet")
    conn = await mypgdriver.connect(**connect_kwargs)
    # The block's own error comes out, not one about the failed rollback.
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        async with conn.transaction():
            await conn.execute("SELECT 1")
            await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
            await wait_closed(conn)
            await asyncio.wait_for(conn.fetchval("SELECT 2"), HANG)
    await later_calls_fail(conn)


async def test_lost_during_cursor_fetch(connect_kwargs, monitor):
    if not hasattr(mypgdriver.Connection, "cursor"):
        pytest.skip("Connection.cursor() not implemented yet")
    conn = await mypgdriver.connect(**connect_kwargs)
    pid = conn.get_server_pid()
    seen = 0

    async def terminate_in_the_sleep() -> None:
        await wait_sleeping(monitor, pid)
        await monitor.fetchval("SELECT pg_terminate_backend($1)", pid)

    with pytest.raises(exceptions.ConnectionDoesNotExistError) as info:
        async with conn.transaction():
            async for _ in conn.cursor("SELECT g, pg_sleep(CASE WHEN g = 150 THEN 30 ELSE 0 END) "
                                       "FROM generate_series(1, 1000) g", prefetch=100):
                seen += 1
                if seen == 100:
                    # The next batch blocks on row 150: terminate meanwhile.
                    terminating = asyncio.ensure_future(terminate_in_the_sleep())
    assert seen == 100
    await asyncio.wait_for(terminating, HANG)
    assert_ended_by_server(info.value)
    await later_calls_fail(conn)


async def test_cursor_on_lost_connection_raises_connection_does_not_exist(connect_kwargs,
                                                                          monitor):
    if not hasattr(mypgdriver.Connection, "cursor"):
        pytest.skip("Connection.cursor() not implemented yet")
    conn = await mypgdriver.connect(**connect_kwargs)
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        async with conn.transaction():
            cur = await conn.cursor("SELECT g FROM generate_series(1, 1000) g")
            assert len(await cur.fetch(10)) == 10
            await monitor.fetchval("SELECT pg_terminate_backend($1)", conn.get_server_pid())
            await wait_closed(conn)
            await asyncio.wait_for(cur.fetch(10), HANG)


# --- closing from our side while a call is pending ---------------------------------------

@pytest.mark.parametrize("how, outcome", [
    # As in asyncpg: close() cancels the running query on the server first,
    # terminate() drops the connection under it.
    ("close", exceptions.QueryCanceledError),
    ("terminate", exceptions.ConnectionDoesNotExistError),
])
async def test_closing_fails_the_pending_call(connect_kwargs, monitor, how, outcome):
    conn = await mypgdriver.connect(**connect_kwargs)
    recorder = listen_for_termination(conn)
    pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(monitor, conn.get_server_pid())
    if how == "close":
        await asyncio.wait_for(conn.close(), PROMPT)
    else:
        conn.terminate()
    err = await fails_promptly(pending, outcome)
    if how == "close":
        assert err.sqlstate == "57014"
        assert str(err) == "canceling statement due to user request"
    assert conn.is_closed()
    if recorder:
        await recorder.wait_called(conn)
    # Closed by us: later calls say so (InterfaceError), as in asyncpg.
    await fails_promptly(conn.fetchval("SELECT 1"), exceptions.InterfaceError)


async def test_close_cancels_each_pipelined_call_and_refuses_queued_ones(connect_kwargs, monitor):
    # Calls in flight are each cancelled on the server, as asyncpg's close()
    # cancels its running query; calls still waiting for their turn (the
    # pipeline is full) were never sent and fail like a call made after close().
    conn = await mypgdriver.connect(**connect_kwargs, max_pipeline=2)
    assert await conn.fetchval("SELECT pg_sleep($1)", 0) is None  # the statement is cached
    order: list[int] = []

    async def sleep(i: int) -> None:
        try:
            await conn.fetchval("SELECT pg_sleep($1)", 30)
        finally:
            order.append(i)

    calls = [asyncio.ensure_future(sleep(i)) for i in range(4)]
    await wait_sleeping(monitor, conn.get_server_pid())
    assert conn.get_pipeline_stats().in_flight == 2
    start = time.monotonic()
    await asyncio.wait_for(conn.close(), PROMPT)
    assert time.monotonic() - start < PROMPT
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert [type(e) for e in outcomes] == [exceptions.QueryCanceledError] * 2 + [
        exceptions.InterfaceError] * 2
    assert [str(e) for e in outcomes[2:]] == [
        "cannot perform operation: connection is closed"] * 2
    assert order == [2, 3, 0, 1]
    assert conn.is_closed()


async def test_close_lets_a_call_that_finishes_first_return(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs)
    assert await conn.fetchval("SELECT $1::int", 1) == 1   # cached: one round trip
    pending = asyncio.ensure_future(conn.fetchval("SELECT $1::int", 42))
    await asyncio.sleep(0)      # sent, not answered yet
    assert conn.get_pipeline_stats().in_flight == 1
    await asyncio.wait_for(conn.close(), PROMPT)
    assert await pending == 42
    await fails_promptly(conn.fetchval("SELECT 1"), exceptions.InterfaceError)


async def test_close_timeout_aborts_and_fails_the_pending_call(connect_kwargs, monitor):
    # A cancel that cannot act within close()'s timeout: the connection is
    # dropped, as asyncpg does, and close() raises TimeoutError.
    conn = await mypgdriver.connect(**connect_kwargs)
    # (the slow cancel request is the point: its sleep stays)
    conn._protocol.cancel_request = lambda: asyncio.sleep(1)
    pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(monitor, conn.get_server_pid())
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(conn.close(timeout=0.2), PROMPT)
    await fails_promptly(pending, exceptions.ConnectionDoesNotExistError)
    assert conn.is_closed()


# --- server shutdown --------------------------------------------------------------------

async def test_server_stopped_immediately(running_private_cluster):
    cluster = running_private_cluster
    busy = await mypgdriver.connect(**kwargs_for(cluster))
    idle = await mypgdriver.connect(**kwargs_for(cluster))
    busy_recorder = listen_for_termination(busy)
    idle_recorder = listen_for_termination(idle)
    pending = asyncio.ensure_future(busy.fetchval("SELECT pg_sleep(30)"))
    # (idle reads pg_stat_activity: it is idle again when the server stops)
    await wait_sleeping(idle, busy.get_server_pid())
    try:
        await asyncio.to_thread(cluster.stop, mode="immediate")
        # Immediate shutdown sends SIGQUIT: the backend exits with (at most)
        # a warning, no ErrorResponse, so the loss itself is the error.
        await fails_promptly(pending, exceptions.ConnectionDoesNotExistError)
        await wait_closed(idle)
        for conn, recorder in ((busy, busy_recorder), (idle, idle_recorder)):
            if recorder:
                await recorder.wait_called(conn)
            await later_calls_fail(conn)
        start = time.monotonic()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.wait_for(mypgdriver.connect(**kwargs_for(cluster), timeout=5), HANG)
        assert time.monotonic() - start < PROMPT
    finally:
        await asyncio.to_thread(cluster.start)
    conn = await mypgdriver.connect(**kwargs_for(cluster))
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()


async def test_server_stopped_fast(running_private_cluster):
    cluster = running_private_cluster
    busy = await mypgdriver.connect(**kwargs_for(cluster))
    idle = await mypgdriver.connect(**kwargs_for(cluster))
    pending = asyncio.ensure_future(busy.fetchval("SELECT pg_sleep(30)"))
    # (`idle` watches.)  A shutdown before the statement arrives would reset
    # the socket under the client's send, losing the server's FATAL message.
    await wait_sleeping(idle, busy.get_server_pid())
    try:
        stopping = asyncio.ensure_future(asyncio.to_thread(cluster.stop, mode="fast"))
        # Fast shutdown terminates sessions with FATAL 57P01 first.
        assert_ended_by_server(
            await fails_promptly(pending, exceptions.ConnectionDoesNotExistError, bound=5))
        await wait_closed(idle, bound=5)
        await later_calls_fail(busy)
        await later_calls_fail(idle)
        await stopping
    finally:
        await asyncio.to_thread(cluster.start)


# --- a peer that closes the socket mid-result -------------------------------------------

@pytest.mark.parametrize("reset", [False, True], ids=["fin", "rst"])
@pytest.mark.parametrize("nbytes", [0, 1, 6, 4096, 65539, 400001])
async def test_peer_closes_mid_result(pg_cluster, nbytes, reset):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        recorder = listen_for_termination(conn)
        assert await conn.fetchval("SELECT 1") == 1
        proxy.cut_after(nbytes, reset=reset)
        await fails_promptly(conn.fetch(BIG_QUERY), exceptions.ConnectionDoesNotExistError)
        assert conn.is_closed()
        if recorder:
            await recorder.wait_called(conn)
        await later_calls_fail(conn)


async def test_peer_closes_while_query_runs(pg_cluster, monitor):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        pending = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
        await wait_sleeping(monitor, conn.get_server_pid())
        proxy.drop()
        await fails_promptly(pending, exceptions.ConnectionDoesNotExistError)
        await later_calls_fail(conn)


async def test_peer_closes_idle_connection(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        recorder = listen_for_termination(conn)
        proxy.drop()
        await wait_closed(conn)
        if recorder:
            await recorder.wait_called(conn)
        await later_calls_fail(conn)


async def test_peer_closes_during_executemany(pg_cluster, monitor):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        pending = asyncio.ensure_future(conn.executemany(
            "SELECT $1::int FROM pg_sleep(0.01)", [(i,) for i in range(1000)]))
        # (its rows sleep 10 ms each: 1000 of them are still to run)
        await wait_sleeping(monitor, conn.get_server_pid())
        proxy.drop()
        await fails_promptly(pending, exceptions.ConnectionDoesNotExistError)
        await later_calls_fail(conn)


async def test_peer_closes_during_copy_out(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        if not hasattr(conn, "copy_from_query"):
            pytest.skip("COPY not implemented yet")
        chunks: list[bytes] = []

        async def sink(data: bytes) -> None:
            chunks.append(data)

        proxy.cut_after(100_000)
        await fails_promptly(conn.copy_from_query(
            "SELECT g, repeat('x', 100) FROM generate_series(1, 100000) g", output=sink),
            exceptions.ConnectionDoesNotExistError)
        assert 0 < sum(map(len, chunks)) < 100_000
        await later_calls_fail(conn)


@pytest.mark.parametrize("nbytes", [0, 1, 9, 60, 300])
async def test_peer_closes_during_startup(pg_cluster, nbytes):
    with TcpProxy(pg_cluster.host, pg_cluster.port, cut_new_after=nbytes) as proxy:
        start = time.monotonic()
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=proxy.port, user="postgres", database="postgres",
                ssl="disable", timeout=10), HANG)
        assert time.monotonic() - start < PROMPT


# --- a peer that stops answering --------------------------------------------------------

async def test_stalled_server_fails_at_timeout_then_recovers(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        try:
            proxy.stall()
            start = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(conn.fetchval("SELECT 1", timeout=0.5), HANG)
            assert 0.45 < time.monotonic() - start < 0.5 + PROMPT
            # The driver keeps the connection (it cannot know the peer is
            # gone for good) and waits for the answer to drain.
            assert not conn.is_closed()
            proxy.resume()
            assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 5), HANG) == 5
            assert not conn.is_closed()
        finally:
            await conn.close()


async def test_call_after_stalled_timeout_honours_its_own_timeout(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        try:
            proxy.stall()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(conn.fetchval("SELECT 1", timeout=0.3), HANG)
            start = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(conn.fetchval("SELECT 2", timeout=0.5), 5)
            assert time.monotonic() - start < 0.5 + PROMPT
        finally:
            proxy.resume()
            await conn.close()


async def test_stalled_server_close_does_not_hang(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        proxy.stall()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(conn.fetchval("SELECT 1", timeout=0.3), HANG)
        start = time.monotonic()
        await asyncio.wait_for(conn.close(), HANG)
        assert time.monotonic() - start < PROMPT
        assert conn.is_closed()
        await fails_promptly(conn.fetchval("SELECT 1"), exceptions.InterfaceError)


async def test_stalled_server_then_lost_fails_pending_resync(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        conn = await mypgdriver.connect(host="127.0.0.1", port=proxy.port, user="postgres",
                                        database="postgres", ssl="disable")
        proxy.stall()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(conn.fetchval("SELECT 1", timeout=0.3), HANG)
        nxt = asyncio.ensure_future(conn.fetchval("SELECT 2"))
        # (a fixed pause on purpose: the next call waits behind the stalled resync)
        await asyncio.sleep(0.1)
        proxy.drop()
        await fails_promptly(nxt, exceptions.ConnectionDoesNotExistError)
        await later_calls_fail(conn)


async def test_connect_to_stalled_server_times_out(pg_cluster):
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        proxy.stall()
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=proxy.port, user="postgres", timeout=0.5), HANG)
        assert time.monotonic() - start < 0.5 + PROMPT


# --- TCP keepalives ---------------------------------------------------------------------

def _socket_of(conn: Any) -> socket.socket:
    sock = conn._transport.get_extra_info("socket")
    assert sock is not None
    return sock


async def test_keepalives_on_by_default(open_conn):
    conn = await open_conn()
    assert _socket_of(conn).getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1


async def test_keepalive_options_reach_the_socket(pg_cluster, open_conn):
    dsn = (f"postgresql://postgres@{pg_cluster.host}:{pg_cluster.port}/postgres"
           "?keepalives=1&keepalives_idle=7&keepalives_interval=3&keepalives_count=4")
    conn = await open_conn(dsn)
    sock = _socket_of(conn)
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 7
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 3
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 4
    assert await conn.fetchval("SELECT 1") == 1


async def test_keepalives_can_be_turned_off(pg_cluster, open_conn):
    dsn = f"postgresql://postgres@{pg_cluster.host}:{pg_cluster.port}/postgres?keepalives=0"
    conn = await open_conn(dsn)
    assert _socket_of(conn).getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0


async def test_keepalive_options_over_tls(pg_cluster):
    # The TLS transport wraps the socket; the options must still be set on it.
    # The session server has TLS off, so this goes through sslmode=prefer's
    # plain fallback, which exercises the SSLRequest path of opening.
    dsn = (f"postgresql://postgres@{pg_cluster.host}:{pg_cluster.port}/postgres"
           "?sslmode=prefer&keepalives_idle=11")
    conn = await mypgdriver.connect(dsn)
    try:
        sock = _socket_of(conn)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 11
    finally:
        await conn.close()

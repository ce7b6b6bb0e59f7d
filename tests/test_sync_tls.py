"""TLS with no event loop: the connector's sslmode policy on the sync glue (issue 24).

The sync API (mypgdriver.sync, over its glue) runs the asyncio
connector unchanged over its blocking transports (mypgdriver/sync/transport.py):
the SSLRequest, ``start_tls``, direct TLS, the allow/prefer fallback,
channel binding and the CancelRequest over TLS.  Each test runs in a plain
function with the event loop policy refusing to hand out a loop, against the
TLS servers of tests/test_tls.py (whose fixtures are reused here).
"""
from __future__ import annotations

import asyncio
import ssl
import struct
import threading
import time
from typing import Any, Iterator

import pytest

import mypgdriver.sync as sync
from mypgdriver import exceptions
from mypgdriver.sync.driver import transport
from tests.support.fake_server import ScriptedSslAnswer
from tests.support.tcp_proxy import TcpProxy
from tests.support.tls_listener import DirectTlsListener
from tests.support.waiting import SETTLE, poll
from tests.test_sync_streams import (
    copy_chunks,
    copy_text,
    count_log_messages,
    deadlock_watchdog,
    noisy_table,
)
from tests.test_tls import (  # noqa: F401 (fixtures)
    CANCEL_REQUEST_PREFIX,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SSL_REQUEST,
    SSL_STATE_QUERY,
    dsn,
    isolated_env,
    pki,
    plain_cluster,
    tls_cluster,
)

pytestmark = pytest.mark.usefixtures('no_event_loop')

STARTUP_VERSION = struct.pack('!i', 196608)     # bytes 4..8 of a StartupMessage (3.0)
#: How late a timed-out call may end: a loaded machine adds a fraction of it,
#: a timeout not honoured never ends (the server stalls, the statement sleeps 30 s).
PROMPT = 5.0


@pytest.fixture
def connections() -> Iterator[list[Any]]:
    """Sync connections opened by the test, closed after it."""
    opened: list[Any] = []
    yield opened
    for conn in opened:
        conn.close()


def sync_connect(opened: list[Any], dsn_: str | None = None, **kwargs: Any) -> Any:
    conn = sync.connect(dsn_, timeout=10, **kwargs)
    opened.append(conn)
    return conn


def uses_tls(conn: Any) -> bool:
    return conn.fetchrow(SSL_STATE_QUERY)[0]


def test_require_connects_over_tls_and_runs_queries(tls_cluster, connections) -> None:
    conn = sync_connect(connections, dsn(tls_cluster, sslmode='require'))
    assert uses_tls(conn) is True
    assert conn.fetchval('SELECT $1::int + 1', 41) == 42
    with conn.transaction():
        conn.execute('CREATE TEMP TABLE t (x text)')
        conn.execute('INSERT INTO t SELECT repeat($1, 100000) FROM generate_series(1, 20)', 'xy')
    # Many TLS records, read with a timer pending (poll(), and the
    # decrypted bytes an SSLSocket may hold back from it).
    rows = conn.fetch('SELECT x FROM t', timeout=10)
    assert [len(r['x']) for r in rows] == [200000] * 20


def test_decrypted_bytes_held_by_the_ssl_socket_are_read_before_select(
        tls_cluster, connections, monkeypatch: pytest.MonkeyPatch) -> None:
    # recv() smaller than a TLS record leaves the rest of it decrypted in
    # the SSLSocket (pending()), where select() does not see it: with a
    # timer pending (timeout=) the driver must read it first, or it waits
    # in select() until the timeout for bytes it already has.
    monkeypatch.setattr(transport, 'READ_SIZE', 1000)
    conn = sync_connect(connections, dsn(tls_cluster, sslmode='require'))
    started = time.monotonic()
    value = conn.fetchval("SELECT repeat('x', 100000)", timeout=10)
    assert len(value) == 100000
    assert time.monotonic() - started < 5     # not at the timeout (10 s)


def test_default_sslmode_prefer_uses_tls(tls_cluster, connections) -> None:
    conn = sync_connect(connections, dsn(tls_cluster))
    assert uses_tls(conn) is True


def test_verify_full_with_the_test_ca(tls_cluster, pki, connections) -> None:
    conn = sync_connect(connections, dsn(tls_cluster, host='localhost', sslmode='verify-full',
                                         sslrootcert=pki.ca.cert_path))
    assert uses_tls(conn) is True


def test_verify_full_rejects_a_wrong_host_name_as_the_asyncio_api_does(tls_cluster, pki) -> None:
    # The certificate names DNS:localhost only (tests/test_tls.py raises the same).
    d = dsn(tls_cluster, host='127.0.0.1', sslmode='verify-full', sslrootcert=pki.ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError, match='mismatch'):
        sync.connect(d, timeout=10)


def test_prefer_falls_back_to_plain_against_a_server_without_tls(plain_cluster,
                                                                  connections) -> None:
    with TcpProxy(plain_cluster.host, plain_cluster.port) as proxy:
        conn = sync_connect(connections,
                            f'postgresql://postgres@127.0.0.1:{proxy.port}/postgres'
                            f'?sslmode=prefer')
        assert uses_tls(conn) is False
        assert conn.fetchval('SELECT 1') == 1
        # The SSLRequest was declined ('N') and the startup went on, on the
        # same connection.
        assert proxy.first_bytes == [SSL_REQUEST]


def test_tls_handshake_that_stalls_times_out() -> None:
    # 'S' and then nothing: the connect deadline covers the handshake.
    with ScriptedSslAnswer(b'S') as server:
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            sync.connect(host='127.0.0.1', port=server.port,
                         user='postgres', ssl='require', timeout=0.5)
        assert time.monotonic() - started < 0.5 + PROMPT
        assert server.requests == [SSL_REQUEST]


def test_channel_binding_uses_scram_sha_256_plus(tls_cluster, connections) -> None:
    conn = sync_connect(connections, dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD,
                                         sslmode='require', channel_binding='require'))
    assert conn.fetchval('SELECT current_user') == SCRAM_USER
    assert conn._aconn._protocol.auth_method == 'SCRAM-SHA-256-PLUS'


# --- direct TLS (sslnegotiation=direct) -----------------------------------------------

def test_direct_tls_sends_client_hello_with_alpn_first() -> None:
    # PostgreSQL 17 accepts direct TLS; this listener stands in for it.
    with DirectTlsListener() as listener:
        d = (f'postgresql://postgres@localhost:{listener.port}/postgres?sslmode=require'
             '&sslnegotiation=direct')
        with pytest.raises(OSError):
            sync.connect(d, timeout=5)
        (client,) = listener.wait_for_clients(1)
    assert client.first_bytes[:8] != SSL_REQUEST
    assert client.is_client_hello
    assert client.alpn == ['postgresql']
    assert client.server_name == 'localhost'


def test_direct_tls_sends_startup_inside_tls(pki) -> None:
    with DirectTlsListener(certfile=str(pki.server.cert_path), keyfile=str(pki.server.key_path),
                           handshake=True) as listener:
        d = (f'postgresql://postgres@localhost:{listener.port}/postgres?sslmode=verify-full'
             f'&sslnegotiation=direct&sslrootcert={pki.ca.cert_path}')
        with pytest.raises((OSError, exceptions.ConnectionDoesNotExistError)):
            sync.connect(d, timeout=5)
        (client,) = listener.wait_for_clients(1)
    assert client.error is None, client.error
    assert client.selected_alpn == 'postgresql'
    message = client.first_message
    assert message is not None
    assert message[4:8] == STARTUP_VERSION
    assert b'user\x00postgres\x00' in message


def test_direct_tls_against_the_server(tls_cluster, pki, connections) -> None:
    if tls_cluster.version < 170000:
        pytest.skip('direct TLS needs PostgreSQL 17 or newer')
    conn = sync_connect(connections, dsn(tls_cluster, host='localhost', sslmode='verify-full',
                                         sslrootcert=pki.ca.cert_path, sslnegotiation='direct'))
    assert uses_tls(conn) is True


# --- the CancelRequest over TLS -------------------------------------------------------

def _wait_not_running(monitor: Any, pid: int) -> None:
    state = poll(lambda: monitor.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1', pid),
                 lambda state: state != 'active')
    assert state != 'active', f'backend {pid} still active {SETTLE}s after the cancel'


@pytest.mark.parametrize('sslmode, cancel_opening', [
    ('require', SSL_REQUEST),
    ('disable', CANCEL_REQUEST_PREFIX),
])
def test_a_statement_timeout_cancels_over_the_connections_transport_kind(
        tls_cluster, connections, sslmode: str, cancel_opening: bytes) -> None:
    monitor = sync_connect(connections, dsn(tls_cluster, sslmode='disable'))
    with TcpProxy(tls_cluster.host, tls_cluster.port) as proxy:
        conn = sync_connect(
            connections, f'postgresql://postgres@127.0.0.1:{proxy.port}/postgres'
                         f'?sslmode={sslmode}')
        assert uses_tls(conn) is (sslmode == 'require')
        pid = conn._aconn.get_server_pid()
        # Prepared first: the timed-out call is one round trip, whose
        # statement the cancel finds running.
        assert conn.fetchval('SELECT pg_sleep($1)', 0) is None
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            conn.fetchval('SELECT pg_sleep($1)', 30, timeout=0.3)
        assert time.monotonic() - started < 0.3 + PROMPT
        # The CancelRequest went out before the call returned (as libpq's
        # PQcancel does), not at the next call: the proxy gets it (its
        # threads record it when they get to it) with no call made since.
        assert len(poll(lambda: proxy.first_bytes[1:], lambda cancels: cancels != []
                        and all(len(c) == 8 for c in cancels))) >= 1
        _wait_not_running(monitor, pid)
        assert conn.fetchval('SELECT $1::int', 7, timeout=5) == 7
        assert conn._aconn.get_server_pid() == pid
        openings = proxy.first_bytes
        if sslmode == 'require':
            assert openings[0] == SSL_REQUEST
        else:
            assert openings[0][4:8] == STARTUP_VERSION
        # Then the cancel connections, each of the connection's kind: one,
        # or more if the server ignored the first (it does so when the
        # backend has not started reading the statement yet, which a
        # loaded machine makes possible; the driver then sends another).
        assert openings[1:] and openings[1:] == [cancel_opening] * len(openings[1:])


@pytest.mark.parametrize('timeout', [None, 30], ids=['blocking reads', 'polled reads'])
def test_a_32_mb_copy_in_over_tls_completes_while_the_server_sends_a_notice_per_row(
        tls_cluster, connections, timeout: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Non-blocking SSL writes (SSLWantWriteError, the same write repeated)
    # while NOTICE records come the other way; with a timeout the reads
    # are polled too, and the SSLSocket's mode switches between them.
    refused: list[int] = []
    send = transport.TLSTransport._send

    def counting_send(self: Any, data: Any) -> int:
        sent = send(self, data)
        if self._retry_size:
            refused.append(self._retry_size)
        return sent
    monkeypatch.setattr(transport.TLSTransport, '_send', counting_send)
    conn = sync_connect(connections, dsn(tls_cluster, sslmode='require'))
    assert uses_tls(conn) is True
    noisy_table(conn, 'tls_target')
    notices = count_log_messages(conn)
    rows = 32 * 1024 * 1024 // 1008
    with deadlock_watchdog(conn, 60):
        status = conn.copy_to_table('tls_target', source=copy_chunks(rows), timeout=timeout)
        assert status == f'COPY {rows}'
        assert conn.fetchval('SELECT count(*) FROM tls_target', timeout=timeout) == rows
        output: list[bytes] = []
        conn.copy_from_query('SELECT id, payload FROM tls_target ORDER BY id',
                             output=output.append, timeout=timeout)
    assert len(notices) == rows
    assert b''.join(output) == copy_text(rows)
    assert refused, 'the SSL socket never refused a write: the test did not fill it'


def test_terminate_from_another_thread_over_tls_ends_the_running_call(tls_cluster) -> None:
    errors: list[BaseException] = []
    with sync.connect(dsn(tls_cluster, sslmode='require'), timeout=10) as conn, \
            sync.connect(dsn(tls_cluster, sslmode='require'), timeout=10) as observer:
        assert uses_tls(conn) is True
        pid = conn.get_server_pid()

        def work() -> None:
            try:
                conn.fetchval('SELECT pg_sleep(8)')
            except BaseException as e:
                errors.append(e)

        worker = threading.Thread(target=work)
        worker.start()
        # The statement is running when the backend reports itself active.
        state = poll(lambda: observer.fetchval("SELECT state FROM pg_stat_activity WHERE pid = $1",
                                               pid),
                     lambda state: state == 'active')
        assert state == 'active', f'backend {pid} never started the statement'
        started = time.monotonic()
        conn.terminate()
        worker.join(6)
        assert not worker.is_alive()
        assert time.monotonic() - started < 4
        assert [type(e) for e in errors] == [exceptions.ConnectionDoesNotExistError]
        assert conn.is_closed()

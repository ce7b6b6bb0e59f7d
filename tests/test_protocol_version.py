"""Protocol 3.2: min/max_protocol_version, NegotiateProtocolVersion, long cancel keys.

PostgreSQL 18 speaks protocol 3.2, whose BackendKeyData carries a cancel key
of 4 to 256 bytes (18 sends 32) that a CancelRequest must send back whole.
A server or pooler that supports only an older minor version answers the
StartupMessage with NegotiateProtocolVersion.  The options follow libpq 18:
the default maximum is 3.0 (many poolers do not negotiate), 'latest' asks
for 3.2, and a minimum above what the server offers fails the connection.

Four kinds of tests: option parsing (no server), a scripted server playing
well-formed and hostile negotiations, the session's real server, whose
version decides what is expected (3.2 granted on 18, negotiated down to 3.0
before), and that server through the pgbouncer installed on the machine
(tools/pgbouncer.py), whose version decides too: 1.23+ answers 3.2 with
NegotiateProtocolVersion 3.0 and its own cancel key, older ones (Debian's
1.18, in CI) close the connection with "bad packet header", which is why
the default maximum is 3.0.
"""
from __future__ import annotations

import asyncio
import struct
import time

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.connecting.connect_params import parse_connect_params
from tests.support.backends import wait_sleeping
from tests.support.pgbouncer import installed_pgbouncer, require_pgbouncer
from tests.support.scripted_server import (
    SSL_REQUEST_CODE,
    ScriptedServer,
    message,
    parameter_status,
    ready_for_query,
)
from tests.support.waiting import apoll
from tools.pgbouncer import NEGOTIATES_PROTOCOL_VERSION, Pgbouncer

STEP_TIMEOUT = 5
PROTOCOL_3_0 = 3 << 16
PROTOCOL_3_2 = (3 << 16) | 2
CANCEL_REQUEST_CODE = 80877102


@pytest.fixture(autouse=True)
def no_protocol_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests here choose the versions; tools/test_versions.sh sets PGMAXPROTOCOLVERSION."""
    monkeypatch.delenv("PGMAXPROTOCOLVERSION", raising=False)
    monkeypatch.delenv("PGMINPROTOCOLVERSION", raising=False)


# --- options --------------------------------------------------------------------------

def versions(**kwargs: object) -> tuple[str, str]:
    params = parse_connect_params(host="h", user="u", environ=kwargs.pop("environ", {}),
                                  **kwargs)  # type: ignore[arg-type]
    return params.min_protocol_version, params.max_protocol_version


def test_default_asks_for_protocol_3_0_as_libpq_does():
    assert versions() == ("3.0", "3.0")


def test_latest_means_3_2():
    assert versions(max_protocol_version="latest") == ("3.0", "3.2")
    assert versions(min_protocol_version="latest") == ("3.2", "3.2")


def test_minimum_above_3_0_raises_the_default_maximum():
    # libpq 18: a minimum that the default maximum could never meet.
    assert versions(min_protocol_version="3.2") == ("3.2", "3.2")


def test_options_from_dsn_and_environment():
    assert versions(dsn="postgresql://h/db?max_protocol_version=3.2") == ("3.0", "3.2")
    assert versions(dsn="host=h min_protocol_version=latest") == ("3.2", "3.2")
    assert versions(environ={"PGMAXPROTOCOLVERSION": "latest"}) == ("3.0", "3.2")
    assert versions(environ={"PGMINPROTOCOLVERSION": "3.2"}) == ("3.2", "3.2")
    # keyword > DSN > environment
    assert versions(dsn="postgresql://h/db?max_protocol_version=3.2",
                    environ={"PGMAXPROTOCOLVERSION": "3.0"}) == ("3.0", "3.2")
    assert versions(max_protocol_version="3.0",
                    dsn="postgresql://h/db?max_protocol_version=3.2") == ("3.0", "3.0")


@pytest.mark.parametrize("value", ["3.1", "3", "3.3", "2.0", "LATEST", " 3.2"])
def test_unknown_protocol_version_is_refused(value):
    with pytest.raises(exceptions.ClientConfigurationError, match="max_protocol_version"):
        versions(max_protocol_version=value)


def test_minimum_above_maximum_is_refused():
    with pytest.raises(exceptions.ClientConfigurationError,
                       match="min_protocol_version 3.2 is greater than max_protocol_version 3.0"):
        versions(min_protocol_version="3.2", max_protocol_version="3.0")


def test_protocol_options_are_not_sent_as_server_settings():
    params = parse_connect_params(
        "postgresql://h/db?min_protocol_version=3.0&max_protocol_version=latest", environ={})
    assert "max_protocol_version" not in params.server_settings
    assert "min_protocol_version" not in params.server_settings


# --- a scripted server ------------------------------------------------------------------

def backend_key(pid: int, secret: bytes) -> bytes:
    return message(b"K", struct.pack("!i", pid) + secret)


def negotiate(version: int, options: list[bytes] | None = None, *, count: int | None = None,
              extra: bytes = b"") -> bytes:
    """NegotiateProtocolVersion; `count` overrides the option count actually present."""
    options = options or []
    body = struct.pack("!ii", version, len(options) if count is None else count)
    return message(b"v", body + b"".join(o + b"\0" for o in options) + extra)


def startup_with(*, key: bytes = b"\x01\x02\x03\x04", before: bytes = b"") -> bytes:
    return (before + message(b"R", struct.pack("!i", 0))
            + parameter_status("server_version", "18.0")
            + parameter_status("client_encoding", "UTF8")
            + backend_key(4242, key) + ready_for_query())


class RecordingServer(ScriptedServer):
    """A scripted server that keeps the StartupMessage and CancelRequest packets it gets."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.startup_versions: list[int] = []
        self.cancel_requests: list[bytes] = []

    async def _startup(self, reader, writer):
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            packet = await reader.readexactly(length - 4)
            (code,) = struct.unpack("!i", packet[:4])
            if code == SSL_REQUEST_CODE:
                writer.write(b"N")
                continue
            if code == CANCEL_REQUEST_CODE:
                self.cancel_requests.append(struct.pack("!i", length) + packet)
                writer.close()
                raise ConnectionResetError   # ends this handler quietly
            break
        self.startup_versions.append(code)
        writer.write(self.startup)
        await writer.drain()


async def connect(fake: ScriptedServer, **kwargs):
    return await asyncio.wait_for(
        mypgdriver.connect(host="127.0.0.1", port=fake.port, user="u", database="d",
                           ssl=False, **kwargs),
        STEP_TIMEOUT)


async def test_default_startup_message_asks_for_3_0():
    async with RecordingServer(startup=startup_with()) as fake:
        conn = await connect(fake)
        assert conn.get_protocol_version() == (3, 0)
        await conn.close()
    assert fake.startup_versions == [PROTOCOL_3_0]


class StallingServer(RecordingServer):
    """Never answers a query, so that a timeout has to cancel it."""

    async def _queries(self, reader, writer):
        await reader.read()


async def test_3_2_granted_keeps_a_32_byte_key_and_sends_it_whole_when_cancelling():
    secret = bytes(range(32))
    async with StallingServer(startup=startup_with(key=secret)) as fake:
        conn = await connect(fake, max_protocol_version="latest")
        assert fake.startup_versions == [PROTOCOL_3_2]
        assert conn.get_protocol_version() == (3, 2)
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetch("SELECT 1", timeout=0.2)
        await apoll(lambda: fake.cancel_requests, bool, timeout=STEP_TIMEOUT)
        conn.terminate()
    # (Repeated while the statement goes unanswered: each one whole.)
    assert fake.cancel_requests
    assert set(fake.cancel_requests) == {
        struct.pack("!iii", 12 + 32, CANCEL_REQUEST_CODE, 4242) + secret}


@pytest.mark.parametrize("length", [4, 256])
async def test_3_2_accepts_cancel_keys_of_4_to_256_bytes(length):
    async with ScriptedServer(startup=startup_with(key=b"k" * length)) as fake:
        conn = await connect(fake, max_protocol_version="3.2")
        assert conn._protocol.backend_secret == b"k" * length
        await conn.close()


@pytest.mark.parametrize(("max_version", "length"), [
    ("3.2", 0), ("3.2", 3), ("3.2", 257), ("3.0", 0), ("3.0", 32), ("3.0", 8),
])
async def test_cancel_key_of_a_wrong_length_fails_connect(max_version, length):
    async with ScriptedServer(startup=startup_with(key=b"k" * length)) as fake:
        with pytest.raises(exceptions.ProtocolError, match=f"a {length}-byte cancel key"):
            await connect(fake, max_protocol_version=max_version)


async def test_server_negotiating_down_to_3_0_is_accepted():
    # What PostgreSQL 13 to 17 (and pgbouncer 1.25) answer to a 3.2 request.
    startup = startup_with(before=negotiate(PROTOCOL_3_0))
    async with RecordingServer(startup=startup) as fake:
        conn = await connect(fake, max_protocol_version="latest")
        assert fake.startup_versions == [PROTOCOL_3_2]
        assert conn.get_protocol_version() == (3, 0)
        assert await conn.fetch("SELECT 1") == []
        await conn.close()


async def test_negotiating_below_the_minimum_fails_with_a_clear_error():
    startup = startup_with(before=negotiate(PROTOCOL_3_0))
    async with ScriptedServer(startup=startup) as fake:
        with pytest.raises(exceptions.UnsupportedServerFeatureError,
                           match=r"only supports protocol version 3\.0, but "
                                 r"min_protocol_version is 3\.2"):
            await connect(fake, min_protocol_version="3.2")


HOSTILE_NEGOTIATIONS = {
    "negative option count": negotiate(PROTOCOL_3_0, count=-1),
    "option count 2**31-1": negotiate(PROTOCOL_3_0, count=2**31 - 1),
    "count above the options present": negotiate(PROTOCOL_3_0, [b"_pq_.x"], count=2),
    "option name without its NUL": negotiate(PROTOCOL_3_0, count=1, extra=b"_pq_.x"),
    "bytes after the options": negotiate(PROTOCOL_3_0, extra=b"\0"),
    "an option never requested": negotiate(PROTOCOL_3_0, [b"_pq_.compression"]),
    "the version asked for": negotiate(PROTOCOL_3_2),
    "a newer version": negotiate((3 << 16) | 3),
    "another major version": negotiate(2 << 16),
    "reserved 3.1": negotiate((3 << 16) | 1),
    "body cut short": message(b"v", struct.pack("!i", PROTOCOL_3_0)),
    "sent twice": negotiate(PROTOCOL_3_0) + negotiate(PROTOCOL_3_0),
}


@pytest.mark.parametrize("reply", HOSTILE_NEGOTIATIONS.values(), ids=HOSTILE_NEGOTIATIONS.keys())
async def test_malformed_negotiation_fails_connect_with_protocol_error(reply):
    started = time.monotonic()
    async with ScriptedServer(startup=startup_with(before=reply)) as fake:
        with pytest.raises(exceptions.ProtocolError):
            await connect(fake, max_protocol_version="latest")
    assert time.monotonic() - started < STEP_TIMEOUT


async def test_negotiation_when_3_0_was_asked_for_is_refused():
    # Nothing lies below 3.0: a server cannot downgrade a 3.0 request.
    async with ScriptedServer(startup=startup_with(before=negotiate(PROTOCOL_3_0))) as fake:
        with pytest.raises(exceptions.ProtocolError, match="NegotiateProtocolVersion"):
            await connect(fake)


async def test_negotiation_after_startup_closes_the_connection():
    class LateNegotiation(ScriptedServer):
        async def _queries(self, reader, writer):
            await reader.readexactly(1)
            writer.write(negotiate(PROTOCOL_3_0))
            await writer.drain()
            await reader.read()

    async with LateNegotiation(startup=startup_with()) as fake:
        conn = await connect(fake)
        with pytest.raises(exceptions.ProtocolError, match="unexpected NegotiateProtocolVersion"):
            await asyncio.wait_for(conn.fetch("SELECT 1"), STEP_TIMEOUT)
        assert conn.is_closed()


# --- the session's real server ------------------------------------------------------------

async def test_default_connection_uses_protocol_3_0(open_conn):
    conn = await open_conn()
    assert conn.get_protocol_version() == (3, 0)
    assert len(conn._protocol.backend_secret) == 4


async def test_environment_asks_for_3_2(open_conn, server_version, monkeypatch):
    monkeypatch.setenv("PGMAXPROTOCOLVERSION", "latest")
    conn = await open_conn()
    assert conn.get_protocol_version() == (3, 2 if server_version >= 180000 else 0)


async def test_latest_gets_3_2_from_18_and_3_0_from_older_servers(open_conn, server_version):
    conn = await open_conn(max_protocol_version="latest")
    if server_version >= 180000:
        assert conn.get_protocol_version() == (3, 2)
        # PostgreSQL 18 sends 32 bytes (it may send up to 256).
        assert len(conn._protocol.backend_secret) == 32
    else:
        assert conn.get_protocol_version() == (3, 0)
        assert len(conn._protocol.backend_secret) == 4
    assert await conn.fetchval("SELECT 1") == 1


async def test_minimum_3_2(open_conn, connect_kwargs, server_version):
    if server_version < 180000:
        with pytest.raises(exceptions.UnsupportedServerFeatureError,
                           match="only supports protocol version 3.0"):
            await mypgdriver.connect(**connect_kwargs, min_protocol_version="3.2")
        return
    conn = await open_conn(min_protocol_version="3.2")
    assert conn.get_protocol_version() == (3, 2)


async def test_cancel_with_the_long_key_stops_pg_sleep(open_conn, monitor, server_version):
    conn = await open_conn(max_protocol_version="latest")
    if server_version >= 180000:
        assert len(conn._protocol.backend_secret) == 32
    pid = conn.get_server_pid()
    task = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(monitor, pid)       # running pg_sleep, not parsing it
    started = time.monotonic()
    await conn.cancel()
    with pytest.raises(exceptions.QueryCanceledError):
        await asyncio.wait_for(task, STEP_TIMEOUT)
    assert time.monotonic() - started < STEP_TIMEOUT
    # A timeout cancels through the same key and leaves the connection usable.
    with pytest.raises(asyncio.TimeoutError):
        await conn.fetchval("SELECT pg_sleep(30)", timeout=0.3)
    assert await conn.fetchval("SELECT 7") == 7


# --- through pgbouncer ------------------------------------------------------------------

# What pg_stat_activity shows while the pooled client's pg_sleep runs (through
# pgbouncer the client does not know the server process's pid).
POOLED_SLEEP = ("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' "
                "AND state = 'active'")


@pytest.fixture(scope="module")
def bouncer(pg_cluster):
    """The pgbouncer found, in transaction mode, in front of the session's server."""
    pg_cluster.require_local()
    with Pgbouncer(installed_pgbouncer(), pg_cluster.host, pg_cluster.port) as running:
        yield running


async def connect_through(bouncer: Pgbouncer, **kwargs):
    return await mypgdriver.connect(host="127.0.0.1", port=bouncer.port, user="postgres",
                                    database="postgres", **kwargs)


async def test_the_default_3_0_works_through_pgbouncer(bouncer):
    conn = await connect_through(bouncer)
    try:
        assert conn.get_protocol_version() == (3, 0)
        assert await conn.fetchval("SELECT $1::int + 1", 1) == 2
    finally:
        await conn.close()


async def test_latest_through_an_old_pgbouncer_fails_with_its_error(bouncer):
    # docs/guide/connecting.rst: older poolers close the connection on a 3.2
    # request (keep the default there).  pgbouncer before 1.23 does not know
    # the version and refuses the startup packet with a FATAL 08P01.
    binary = installed_pgbouncer()
    if binary.at_least(NEGOTIATES_PROTOCOL_VERSION):
        pytest.skip(f"{binary.describe()} negotiates protocol 3.2 down to 3.0 "
                    "(test_latest_through_pgbouncer_is_negotiated_down_and_cancel_works)")
    with pytest.raises(exceptions.ProtocolViolationError, match="bad packet header"):
        await connect_through(bouncer, max_protocol_version="latest")
    # The refusal is about the request only: the default works at once.
    conn = await connect_through(bouncer)
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()


@pytest.fixture
def negotiating_bouncer(request: pytest.FixtureRequest) -> Pgbouncer:
    """`bouncer`, for a test of pgbouncer 1.23+'s negotiation; skips with an older one."""
    require_pgbouncer(NEGOTIATES_PROTOCOL_VERSION,
                      "NegotiateProtocolVersion in answer to a 3.2 startup")
    return request.getfixturevalue("bouncer")


async def test_latest_through_pgbouncer_is_negotiated_down_and_cancel_works(
        negotiating_bouncer, monitor):
    # pgbouncer 1.23+ answers a 3.2 startup with NegotiateProtocolVersion 3.0
    # and gives the client its own cancel key: the connection runs at 3.0 and
    # a timeout's CancelRequest (with pgbouncer's key) stops the statement.
    conn = await connect_through(negotiating_bouncer, max_protocol_version="latest")
    try:
        assert conn.get_protocol_version() == (3, 0)
        assert len(conn._protocol.backend_secret) == 4
        assert await conn.fetchval("SELECT $1::int + 1", 41) == 42
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetchval("SELECT pg_sleep(30)", timeout=0.3)
        assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 7), 5) == 7
        assert await monitor.fetchval(POOLED_SLEEP) == 0
    finally:
        await conn.close()

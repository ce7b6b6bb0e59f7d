"""Several hosts: host lists (DSN and connect() lists), failover to the next
host, one error listing every host, one time budget for all of them,
load_balance_hosts=random, and target_session_attrs against a real primary
and a real streaming standby, including promotion of the standby.
"""
from __future__ import annotations

import asyncio
import collections
import random
import time
from typing import Any, Iterator

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support import tcp_proxy
from tests.support.fake_server import StallingAuthServer
from tests.support.standby import Standby
from tests.support.tcp_proxy import SilentPort
from tests.support.waiting import apoll
from tools.pgcluster import PgCluster

WHERE_QUERY = "SELECT inet_server_port(), pg_is_in_recovery(), current_user"
RO_USER = "mypg_readonly"    # default_transaction_read_only=on, on the primary too
#: How late a connect() may end after its time budget: a loaded machine adds
#: a fraction of it, each bound below is far from what a wrong budget takes.
PROMPT = 5.0


pytestmark = pytest.mark.usefixtures('isolated_libpq_env')


#: A second refusing port, besides the shared `refused_port`.
refused_port2 = pytest.fixture(tcp_proxy.refused_port)


@pytest.fixture(scope="module")
def primary() -> Iterator[PgCluster]:
    cluster = PgCluster()
    try:
        cluster.init()
        cluster.start()
        cluster.psql(f"CREATE ROLE {RO_USER} LOGIN; "
                     f"ALTER ROLE {RO_USER} SET default_transaction_read_only = on")
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="module")
def standby(primary) -> Iterator[Standby]:
    server = Standby(primary)
    try:
        server.start()
        server.wait_replayed()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def running_primary(primary) -> PgCluster:
    primary.start()   # the promotion test stops it for a while
    return primary


async def where(dsn: str | None = None, **kwargs: Any) -> tuple[int, bool, str]:
    """(port, in recovery, user) of a new connection."""
    if dsn is None:
        kwargs.setdefault("user", "postgres")
        kwargs.setdefault("database", "postgres")
    conn = await mypgdriver.connect(dsn, timeout=kwargs.pop("timeout", 20), **kwargs)
    try:
        return tuple(await conn.fetchrow(WHERE_QUERY))
    finally:
        await conn.close()


def uri(*ports: int, query: str = "", user: str = "postgres") -> str:
    hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
    return f"postgresql://{user}@{hosts}/postgres" + (f"?{query}" if query else "")


# --- host lists and failover ------------------------------------------------------------

async def test_uri_host_list_skips_refused_first_host(pg_cluster, refused_port):
    port, _, _ = await where(uri(refused_port, pg_cluster.port))
    assert port == pg_cluster.port


async def test_keyword_value_dsn_host_list(pg_cluster, refused_port):
    dsn = (f"host=127.0.0.1,127.0.0.1 port={refused_port},{pg_cluster.port} "
           "user=postgres dbname=postgres")
    assert (await where(dsn))[0] == pg_cluster.port


async def test_host_and_port_lists_as_arguments(pg_cluster, refused_port):
    port, _, _ = await where(host=["127.0.0.1", "127.0.0.1"], port=[refused_port, pg_cluster.port])
    assert port == pg_cluster.port


async def test_host_list_with_one_port_for_all(pg_cluster):
    port, _, _ = await where(host=["127.0.0.2", "127.0.0.1"], port=pg_cluster.port)
    # 127.0.0.2 is loopback too but the server listens on 127.0.0.1 only.
    assert port == pg_cluster.port


async def test_pghost_and_pgport_lists(pg_cluster, refused_port, monkeypatch):
    monkeypatch.setenv("PGHOST", "127.0.0.1,127.0.0.1")
    monkeypatch.setenv("PGPORT", f"{refused_port},{pg_cluster.port}")
    assert (await where())[0] == pg_cluster.port


async def test_first_host_is_used_when_it_works(pg_cluster, primary):
    assert (await where(uri(primary.port, pg_cluster.port)))[0] == primary.port
    assert (await where(uri(pg_cluster.port, primary.port)))[0] == pg_cluster.port


async def test_all_hosts_down_lists_every_host(refused_port, refused_port2):
    start = time.monotonic()
    with pytest.raises(exceptions.ConnectionFailureError) as info:
        await mypgdriver.connect(uri(refused_port, refused_port2), timeout=10)
    assert time.monotonic() - start < PROMPT     # not retried until the timeout (10 s)
    assert isinstance(info.value, OSError)
    message = str(info.value)
    assert f"127.0.0.1:{refused_port}" in message
    assert f"127.0.0.1:{refused_port2}" in message
    assert "ConnectionRefusedError" in message


async def test_server_error_on_one_host_moves_to_the_next(pg_cluster, primary):
    # The role exists on the primary only: the session server refuses it.
    port, _, user = await where(uri(pg_cluster.port, primary.port, user=RO_USER))
    assert (port, user) == (primary.port, RO_USER)


async def test_mixed_failures_are_all_reported(pg_cluster, refused_port):
    with pytest.raises(exceptions.ConnectionFailureError) as info:
        await mypgdriver.connect(uri(refused_port, pg_cluster.port, user="mypg_no_such_role"),
                                 timeout=10)
    message = str(info.value)
    assert f"127.0.0.1:{refused_port}: ConnectionRefusedError" in message
    assert f"127.0.0.1:{pg_cluster.port}: InvalidAuthorizationSpecificationError" in message
    assert "mypg_no_such_role" in message


async def test_single_host_failure_is_the_original_error(refused_port):
    with pytest.raises(ConnectionRefusedError):
        await mypgdriver.connect(uri(refused_port), timeout=10)


async def test_unresolvable_host_name_moves_to_the_next(pg_cluster):
    port, _, _ = await where(host=["mypg-no-such-host.invalid", "127.0.0.1"],
                             port=[5432, pg_cluster.port])
    assert port == pg_cluster.port


async def test_ipv6_literal_in_host_list(pg_cluster, refused_port):
    if not getattr(pg_cluster, "ipv6", False):
        pytest.skip("the session server does not listen on ::1")
    dsn = f"postgresql://postgres@127.0.0.1:{refused_port},[::1]:{pg_cluster.port}/postgres"
    conn = await mypgdriver.connect(dsn, timeout=10)
    try:
        assert await conn.fetchval("SELECT host(inet_server_addr())") == "::1"
    finally:
        await conn.close()


async def test_server_not_accepting_connections_moves_to_the_next(running_primary):
    # A cold standby answers every startup with FATAL 57P03.
    cold = Standby(running_primary)
    try:
        await asyncio.to_thread(cold.start, "hot_standby=off")
        deadline = time.monotonic() + 30
        while True:
            try:
                await mypgdriver.connect(uri(cold.port), timeout=5)
            except exceptions.CannotConnectNowError:
                break
            except OSError:
                # Not listening yet.
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        port, _, _ = await where(uri(cold.port, running_primary.port))
        assert port == running_primary.port
    finally:
        cold.destroy()


# --- one time budget --------------------------------------------------------------------

async def test_stalling_first_host_consumes_the_whole_budget(pg_cluster, silent_port):
    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await mypgdriver.connect(uri(silent_port, pg_cluster.port), timeout=1)
    elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 1 + PROMPT, elapsed


async def test_stalling_hosts_share_one_budget(silent_port):
    # 10 silent hosts: a budget per host would take 10 s.
    with SilentPort() as second:
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await mypgdriver.connect(uri(*[silent_port, second.port] * 5), timeout=1)
        elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 1 + PROMPT, elapsed


async def test_connect_timeout_is_per_host(pg_cluster, silent_port):
    # libpq's connect_timeout bounds each host; timeout= bounds everything.
    start = time.monotonic()
    port, _, _ = await where(uri(silent_port, pg_cluster.port, query="connect_timeout=3"),
                             timeout=20)
    elapsed = time.monotonic() - start
    assert port == pg_cluster.port
    assert 2.9 < elapsed < 3 + PROMPT, elapsed     # (not the budget of 20 s)


async def test_connect_timeout_shorter_than_budget_lists_timeouts(silent_port):
    with SilentPort() as second:
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError) as info:
            await mypgdriver.connect(uri(silent_port, second.port, query="connect_timeout=2"),
                                     timeout=20)
        elapsed = time.monotonic() - start
    assert 3.9 < elapsed < 4 + PROMPT, elapsed     # (not the budget of 20 s)
    assert f"127.0.0.1:{silent_port}" in str(info.value)
    assert f"127.0.0.1:{second.port}" in str(info.value)


async def test_timeout_covers_authentication():
    with StallingAuthServer() as server:
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await mypgdriver.connect(host="127.0.0.1", port=server.port, user="postgres",
                                     password="secret", timeout=0.7)
        elapsed = time.monotonic() - start
        assert 0.6 < elapsed < 0.7 + PROMPT, elapsed
        assert server.passwords == [b"secret\x00"]   # it did get as far as authentication


async def test_stalled_authentication_consumes_the_shared_budget(pg_cluster):
    with StallingAuthServer() as server:
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await mypgdriver.connect(uri(server.port, pg_cluster.port), password="secret",
                                     timeout=1)
        assert 0.9 < time.monotonic() - start < 1 + PROMPT
        # With a per-host limit the next host gets its turn.
        port, _, _ = await where(uri(server.port, pg_cluster.port, query="connect_timeout=2"),
                                 password="secret", timeout=20)
        assert port == pg_cluster.port


# --- load balancing ---------------------------------------------------------------------

async def test_load_balance_hosts_random_uses_every_host(pg_cluster, primary):
    random.seed(20261121)
    ports = collections.Counter()
    for _ in range(40):
        port, _, _ = await where(uri(pg_cluster.port, primary.port,
                                     query="load_balance_hosts=random"))
        ports[port] += 1
    assert set(ports) == {pg_cluster.port, primary.port}
    assert min(ports.values()) >= 8, ports


async def test_load_balance_hosts_from_environment(pg_cluster, primary, monkeypatch):
    monkeypatch.setenv("PGLOADBALANCEHOSTS", "random")
    random.seed(7)
    seen = {(await where(uri(pg_cluster.port, primary.port)))[0] for _ in range(30)}
    assert seen == {pg_cluster.port, primary.port}


async def test_load_balance_hosts_disable_keeps_order(pg_cluster, primary):
    seen = {(await where(uri(pg_cluster.port, primary.port,
                             query="load_balance_hosts=disable")))[0] for _ in range(10)}
    assert seen == {pg_cluster.port}


async def test_load_balance_hosts_random_with_target_session_attrs(running_primary, standby):
    random.seed(11)
    for _ in range(10):
        port, in_recovery, _ = await where(uri(
            standby.port, running_primary.port,
            query="load_balance_hosts=random&target_session_attrs=read-write"))
        assert (port, in_recovery) == (running_primary.port, False)


async def test_load_balance_hosts_random_still_fails_over(pg_cluster, refused_port):
    random.seed(3)
    for _ in range(10):
        port, _, _ = await where(uri(refused_port, pg_cluster.port,
                                     query="load_balance_hosts=random"))
        assert port == pg_cluster.port


# --- target_session_attrs with a primary and a standby -----------------------------------

@pytest.mark.parametrize("attrs, standby_first, expect_standby", [
    ("any", False, False),
    ("any", True, True),
    ("read-write", False, False),
    ("read-write", True, False),
    ("primary", False, False),
    ("primary", True, False),
    ("read-only", False, True),
    ("read-only", True, True),
    ("standby", False, True),
    ("standby", True, True),
    ("prefer-standby", False, True),
    ("prefer-standby", True, True),
])
async def test_target_session_attrs_picks_the_right_server(
        running_primary, standby, attrs, standby_first, expect_standby):
    ports = [standby.port, running_primary.port] if standby_first else \
        [running_primary.port, standby.port]
    port, in_recovery, _ = await where(uri(*ports, query=f"target_session_attrs={attrs}"))
    assert in_recovery is expect_standby
    assert port == (standby.port if expect_standby else running_primary.port)


async def test_target_session_attrs_keyword_argument(running_primary, standby):
    port, in_recovery, _ = await where(
        host=["127.0.0.1", "127.0.0.1"], port=[running_primary.port, standby.port],
        target_session_attrs="standby")
    assert (port, in_recovery) == (standby.port, True)


async def test_target_session_attrs_from_environment(running_primary, standby, monkeypatch):
    monkeypatch.setenv("PGTARGETSESSIONATTRS", "read-write")
    port, in_recovery, _ = await where(uri(standby.port, running_primary.port))
    assert (port, in_recovery) == (running_primary.port, False)


async def test_prefer_standby_falls_back_to_primary(running_primary, refused_port):
    port, in_recovery, _ = await where(
        uri(running_primary.port, refused_port, query="target_session_attrs=prefer-standby"))
    assert (port, in_recovery) == (running_primary.port, False)


async def test_no_host_matches_lists_every_host(running_primary, pg_cluster):
    with pytest.raises(exceptions.TargetServerAttributeNotMatched) as info:
        await mypgdriver.connect(uri(running_primary.port, pg_cluster.port,
                                     query="target_session_attrs=standby"), timeout=10)
    message = str(info.value)
    assert f"127.0.0.1:{running_primary.port}" in message
    assert f"127.0.0.1:{pg_cluster.port}" in message


async def test_target_session_attrs_skips_down_hosts(running_primary, standby, refused_port):
    port, in_recovery, _ = await where(
        uri(refused_port, standby.port, running_primary.port,
            query="target_session_attrs=read-write"))
    assert (port, in_recovery) == (running_primary.port, False)


async def test_read_only_is_not_the_same_as_standby(running_primary, standby):
    # A primary whose sessions default to read-only is 'read-only' but not
    # 'standby', and it is not 'read-write' either.
    dsn_ro = uri(running_primary.port, standby.port, user=RO_USER,
                 query="target_session_attrs=read-only")
    assert await where(dsn_ro) == (running_primary.port, False, RO_USER)
    dsn_sb = uri(running_primary.port, standby.port, user=RO_USER,
                 query="target_session_attrs=standby")
    assert await where(dsn_sb) == (standby.port, True, RO_USER)
    with pytest.raises(exceptions.TargetServerAttributeNotMatched):
        await mypgdriver.connect(uri(running_primary.port, user=RO_USER,
                                     query="target_session_attrs=read-write"), timeout=10)


async def test_mismatched_connections_are_closed(running_primary, standby):
    # Connections opened only to learn a server's role must not linger.
    monitor = await mypgdriver.connect(host="127.0.0.1", port=standby.port, user="postgres",
                                       database="postgres")
    try:
        app = "mypg_tsa_probe"
        for _ in range(5):
            await where(uri(standby.port, running_primary.port,
                            query=f"target_session_attrs=primary&application_name={app}"))
        assert await apoll(lambda: monitor.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app),
            lambda left: left == 0, timeout=5) == 0
    finally:
        await monitor.close()


async def test_promoted_standby_is_found_as_new_primary(running_primary):
    primary = running_primary
    promoted = Standby(primary)
    try:
        promoted.start()
        promoted.wait_replayed()
        read_write = "target_session_attrs=read-write"
        # Before promotion the standby, though listed first, is skipped.
        assert await where(uri(promoted.port, primary.port, query=read_write)) == (
            primary.port, False, "postgres")
        await asyncio.to_thread(promoted.promote)
        # After promotion it accepts writes and is picked first.
        port, in_recovery, _ = await where(uri(promoted.port, primary.port, query=read_write))
        assert (port, in_recovery) == (promoted.port, False)
        # The old primary goes away (failover): the host list still finds the new one.
        await asyncio.to_thread(primary.stop)
        port, in_recovery, _ = await where(uri(primary.port, promoted.port, query=read_write))
        assert (port, in_recovery) == (promoted.port, False)
        conn = await mypgdriver.connect(uri(primary.port, promoted.port, query=read_write))
        try:
            await conn.execute("CREATE TABLE mypg_after_failover (i int)")
            await conn.execute("INSERT INTO mypg_after_failover VALUES (1)")
            assert await conn.fetchval("SELECT count(*) FROM mypg_after_failover") == 1
        finally:
            await conn.close()
    finally:
        promoted.destroy()
        await asyncio.to_thread(primary.start)


async def test_connection_open_during_promotion_sees_new_role(running_primary):
    primary = running_primary
    server = Standby(primary)
    try:
        server.start()
        server.wait_replayed()
        conn = await mypgdriver.connect(host="127.0.0.1", port=server.port, user="postgres",
                                        database="postgres")
        try:
            assert await conn.fetchval("SELECT pg_is_in_recovery()") is True
            await asyncio.to_thread(server.promote)
            assert await conn.fetchval("SELECT pg_is_in_recovery()") is False
            # The server reports in_hot_standby=off to sessions open at
            # promotion (PostgreSQL 14 and later report it at all).
            if primary.version >= 140000:
                assert conn.get_settings().in_hot_standby == "off"
        finally:
            await conn.close()
    finally:
        server.destroy()

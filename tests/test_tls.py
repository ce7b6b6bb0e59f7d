"""TLS against real servers: every sslmode, certificate checks, client
certificates, the PGSSL* variables, ssl= objects, channel binding, direct TLS
and CancelRequest over TLS.

Two servers: a private one with ``ssl=on`` and a CA of our own (module
scoped), and the session server, which has TLS off.  What a connection ended
up using is read from the server's side (pg_stat_ssl), not from the driver.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import re
import shutil
import ssl
import struct
import tempfile
import time
import types
import urllib.parse
from typing import Any, Iterator

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support import certs
from tests.support.backends import wait_sleeping
from tests.support.cancel_loop import check_loop_outcomes, run_cancellation_loop
from tests.support.fake_server import (
    ASK_PASSWORD,
    HANG_UP,
    RecordingStartupServer,
    ScriptedSslAnswer,
)
from tests.support.scripted_server import authentication_ok, startup_reply
from tests.support.tcp_proxy import TcpProxy
from tests.support.tls_listener import DirectTlsListener
from tests.support.waiting import apoll
from tools.pgcluster import PgCluster, ServerLacksSsl

SSL_REQUEST = struct.pack("!ii", 8, 80877103)
CANCEL_REQUEST_PREFIX = struct.pack("!ii", 16, 80877102)
#: How late a timed-out call may end: a loaded machine adds a fraction of it,
#: a timeout not honoured never ends (the server stalls, the statement sleeps 30 s).
PROMPT = 5.0

# How the server's pg_hba.conf rejection names the transport: "no
# encryption" / "SSL encryption" from PostgreSQL 14, "SSL off" / "SSL on" before.
PLAIN_REJECTED = r"no encryption|SSL off"
TLS_REJECTED = r"SSL encryption|SSL on"
SSL_STATE_QUERY = "SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

SCRAM_USER, SCRAM_PASSWORD = "mypg_tls_scram", "tls-scräm-pw"
MD5_USER, MD5_PASSWORD = "mypg_tls_md5", "tls-md5-pw"
CLEAR_USER, CLEAR_PASSWORD = "mypg_tls_clear", "tls-clear-pw"
CERT_USER = "mypg_cert"            # pg_hba method 'cert'
VFULL_USER = "mypg_vfull"          # trust clientcert=verify-full
NOSSL_USER = "mypg_nossl"          # hostssl ... reject
SSLONLY_USER = "mypg_sslonly"      # hostnossl ... reject
KEY_PASSWORD = "key-pässword"


# --- fixtures -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki() -> Iterator[types.SimpleNamespace]:
    """A CA, a server certificate for 'localhost' (no IP SAN), client
    certificates, an unrelated CA and CRLs, in a directory the server can read."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="mypg-pki-"))
    ca = certs.make_ca(directory, "ca", "mypgdriver test CA")
    other_ca = certs.make_ca(directory, "other_ca", "an unrelated CA")
    server = certs.issue(ca, directory, "server", "localhost", dns_names=["localhost"])
    client = certs.issue(ca, directory, "client", CERT_USER, client=True)
    vfull = certs.issue(ca, directory, "vfull", VFULL_USER, client=True)
    client_encrypted = certs.issue(ca, directory, "client_enc", CERT_USER, client=True,
                                   key_password=KEY_PASSWORD.encode())
    crl_revoking_server = certs.write_crl(ca, directory / "revoked.crl", [server.cert])
    crl_empty = certs.write_crl(ca, directory / "empty.crl", [])
    # The server refuses a key others can read; it runs as 'postgres'.
    try:
        import pwd
        pg = pwd.getpwnam("postgres")
        os.chown(directory, pg.pw_uid, pg.pw_gid)
        for path in directory.iterdir():
            os.chown(path, pg.pw_uid, pg.pw_gid)
    except (KeyError, PermissionError):
        pass
    yield types.SimpleNamespace(
        dir=directory, ca=ca, other_ca=other_ca, server=server, client=client, vfull=vfull,
        client_encrypted=client_encrypted, crl_revoking_server=crl_revoking_server,
        crl_empty=crl_empty)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_cluster(pki) -> Iterator[PgCluster]:
    """A server with ssl=on and pg_hba.conf rules that depend on TLS."""
    hba = [
        f"hostssl all {CERT_USER} all cert",
        f"hostnossl all {CERT_USER} all reject",
        f"hostssl all {VFULL_USER} all trust clientcert=verify-full",
        f"hostnossl all {VFULL_USER} all reject",
        f"hostssl all {NOSSL_USER} all reject",
        f"hostnossl all {SSLONLY_USER} all reject",
    ]
    cluster = PgCluster(
        settings={
            "ssl": True,
            "ssl_cert_file": str(pki.server.cert_path),
            "ssl_key_file": str(pki.server.key_path),
            "ssl_ca_file": str(pki.ca.cert_path),
        },
        hba_lines=hba,
    )
    try:
        cluster.init()
        try:
            cluster.start()
        except ServerLacksSsl as e:
            pytest.skip(f"TLS tests need a server built with SSL: {e}")
        for role in (CERT_USER, VFULL_USER, NOSSL_USER, SSLONLY_USER):
            cluster.create_role(role)
        cluster.create_role(SCRAM_USER, SCRAM_PASSWORD, method="scram-sha-256")
        cluster.create_role(MD5_USER, MD5_PASSWORD, method="md5")
        cluster.create_role(CLEAR_USER, CLEAR_PASSWORD, method="password")
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def plain_cluster(pg_cluster):
    """The session server (TLS off), only when the suite started it itself."""
    pg_cluster.require_local()
    if pg_cluster.psql("SHOW ssl").strip() != "off":
        pytest.skip("the session server has TLS on")
    return pg_cluster


@pytest.fixture(autouse=True)
def isolated_env(isolated_libpq_env: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """No PG*/SSL_CERT_* variables from outside; an empty home (~/.postgresql)."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return isolated_libpq_env


def dsn(cluster, *, user: str = "postgres", host: str | None = None, password: str | None = None,
        **query: Any) -> str:
    """A URI for `cluster` with libpq query parameters (sslmode=..., sslrootcert=...)."""
    userinfo = urllib.parse.quote(user, safe="")
    if password is not None:
        userinfo += ":" + urllib.parse.quote(password, safe="")
    q = urllib.parse.urlencode({k: str(v) for k, v in query.items()})
    return (f"postgresql://{userinfo}@{host or cluster.host}:{cluster.port}/postgres"
            + (f"?{q}" if q else ""))


async def tls_state(dsn_: str | None = None, **kwargs: Any) -> tuple[bool, str | None]:
    """(ssl, client_dn) of a new connection, as the server sees it."""
    conn = await mypgdriver.connect(dsn_, timeout=10, **kwargs)
    try:
        row = await conn.fetchrow(SSL_STATE_QUERY)
        return row[0], row[1]
    finally:
        await conn.close()


async def uses_tls(dsn_: str | None = None, **kwargs: Any) -> bool:
    return (await tls_state(dsn_, **kwargs))[0]


# --- every sslmode against a TLS server and a plain server ----------------------------

@pytest.mark.parametrize("sslmode, expected_tls", [
    ("disable", False),
    ("allow", False),      # plain text first, and the server accepts it
    ("prefer", True),
    ("require", True),
    ("verify-ca", True),
    ("verify-full", True),
])
async def test_sslmode_against_tls_server(tls_cluster, pki, sslmode, expected_tls):
    d = dsn(tls_cluster, host="localhost", sslmode=sslmode, sslrootcert=pki.ca.cert_path)
    assert await uses_tls(d) is expected_tls


async def test_default_sslmode_is_prefer_and_uses_tls(tls_cluster):
    assert await uses_tls(dsn(tls_cluster)) is True


@pytest.mark.parametrize("sslmode", ["disable", "allow", "prefer"])
async def test_sslmode_falls_back_to_plain_against_plain_server(plain_cluster, pki, sslmode):
    d = dsn(plain_cluster, sslmode=sslmode, sslrootcert=pki.ca.cert_path)
    assert await uses_tls(d) is False


@pytest.mark.parametrize("sslmode", ["require", "verify-ca", "verify-full"])
async def test_sslmode_requiring_tls_fails_against_plain_server(plain_cluster, pki, sslmode):
    d = dsn(plain_cluster, sslmode=sslmode, sslrootcert=pki.ca.cert_path)
    with pytest.raises(ConnectionError, match="rejected SSL upgrade") as info:
        await mypgdriver.connect(d, timeout=10)
    assert type(info.value) is ConnectionError


async def test_allow_retries_with_tls_when_plain_text_is_refused(tls_cluster):
    assert await uses_tls(dsn(tls_cluster, user=SSLONLY_USER, sslmode="allow")) is True


async def test_disable_against_hostssl_only_role_is_refused(tls_cluster):
    with pytest.raises(exceptions.InvalidAuthorizationSpecificationError, match=PLAIN_REJECTED):
        await mypgdriver.connect(dsn(tls_cluster, user=SSLONLY_USER, sslmode="disable"))


async def test_prefer_retries_without_tls_when_tls_is_refused(tls_cluster):
    assert await uses_tls(dsn(tls_cluster, user=NOSSL_USER, sslmode="prefer")) is False


#: A TLS version the server refuses (its ssl_min_protocol_version is TLSv1.2):
#: the handshake fails.
TLS_1_1_ONLY = {"ssl_min_protocol_version": "TLSv1.1", "ssl_max_protocol_version": "TLSv1.1"}


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated")
async def test_prefer_retries_without_tls_when_the_handshake_fails(tls_cluster):
    # libpq and asyncpg then connect in plain text.
    d = dsn(tls_cluster, sslmode="prefer", **TLS_1_1_ONLY)
    assert await uses_tls(d) is False
    with pytest.raises(ssl.SSLError):
        await mypgdriver.connect(dsn(tls_cluster, sslmode="require", **TLS_1_1_ONLY), timeout=10)


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated")
async def test_failed_handshake_is_reported_over_the_fallbacks_hba_rejection(tls_cluster):
    d = dsn(tls_cluster, user=SSLONLY_USER, sslmode="prefer", **TLS_1_1_ONLY)
    with pytest.raises(ssl.SSLError) as info:
        await mypgdriver.connect(d, timeout=10)
    hba = info.value.__context__
    assert type(hba) is exceptions.InvalidAuthorizationSpecificationError
    assert re.search(PLAIN_REJECTED, str(hba))


@pytest.mark.parametrize("sslmode", ["prefer", "allow"])
async def test_wrong_password_is_reported_over_the_fallbacks_hba_rejection(tls_cluster, sslmode):
    # SCRAM_USER may log in over TLS only (the hostnossl line rejects it): the
    # TLS attempt says "password authentication failed", the plain-text one
    # "no pg_hba.conf entry ... no encryption".  libpq reports both; the
    # first is the one that tells the user what to fix.
    tls_cluster.add_hba_lines([f"hostnossl all {SCRAM_USER} all reject"])
    try:
        d = dsn(tls_cluster, user=SCRAM_USER, password="wrong", sslmode=sslmode)
        with pytest.raises(exceptions.InvalidPasswordError) as info:
            await mypgdriver.connect(d, timeout=10)
        assert type(info.value) is exceptions.InvalidPasswordError
        assert str(info.value) == f'password authentication failed for user "{SCRAM_USER}"'
        hba = info.value.__context__
        assert type(hba) is exceptions.InvalidAuthorizationSpecificationError
        assert re.search(PLAIN_REJECTED, str(hba))
        assert await uses_tls(dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD,
                                  sslmode=sslmode)) is True
    finally:
        tls_cluster.hba_lines.remove(f"hostnossl all {SCRAM_USER} all reject")
        tls_cluster.add_hba_lines([])


async def test_require_against_hostnossl_only_role_is_refused(tls_cluster):
    with pytest.raises(exceptions.InvalidAuthorizationSpecificationError, match=TLS_REJECTED):
        await mypgdriver.connect(dsn(tls_cluster, user=NOSSL_USER, sslmode="require"))


# --- server certificate checks --------------------------------------------------------

async def test_verify_full_rejects_wrong_host_name(tls_cluster, pki):
    # The certificate names DNS:localhost only; 127.0.0.1 is not in it.
    d = dsn(tls_cluster, host="127.0.0.1", sslmode="verify-full", sslrootcert=pki.ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        await mypgdriver.connect(d, timeout=10)


async def test_verify_ca_accepts_wrong_host_name(tls_cluster, pki):
    d = dsn(tls_cluster, host="127.0.0.1", sslmode="verify-ca", sslrootcert=pki.ca.cert_path)
    assert await uses_tls(d) is True


@pytest.mark.parametrize("sslmode", ["verify-ca", "verify-full"])
async def test_untrusted_ca_is_rejected(tls_cluster, pki, sslmode):
    d = dsn(tls_cluster, host="localhost", sslmode=sslmode, sslrootcert=pki.other_ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        await mypgdriver.connect(d, timeout=10)


async def test_require_with_explicit_root_cert_verifies_the_chain(tls_cluster, pki):
    # libpq: sslmode=require with a root certificate behaves like verify-ca.
    d = dsn(tls_cluster, sslmode="require", sslrootcert=pki.other_ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        await mypgdriver.connect(d, timeout=10)


async def test_require_uses_default_root_cert_file_when_present(tls_cluster, pki, isolated_env):
    dotdir = isolated_env / ".postgresql"
    dotdir.mkdir()
    shutil.copy(pki.other_ca.cert_path, dotdir / "root.crt")
    with pytest.raises(ssl.SSLCertVerificationError):
        await mypgdriver.connect(dsn(tls_cluster, sslmode="require"), timeout=10)
    shutil.copy(pki.ca.cert_path, dotdir / "root.crt")
    assert await uses_tls(dsn(tls_cluster, sslmode="require")) is True


async def test_verify_full_uses_default_root_cert_file(tls_cluster, pki, isolated_env):
    dotdir = isolated_env / ".postgresql"
    dotdir.mkdir()
    shutil.copy(pki.ca.cert_path, dotdir / "root.crt")
    assert await uses_tls(dsn(tls_cluster, host="localhost", sslmode="verify-full")) is True


async def test_verify_ca_without_root_cert_names_the_default_file(tls_cluster, isolated_env):
    expected = str(isolated_env / ".postgresql" / "root.crt")
    with pytest.raises(exceptions.ClientConfigurationError) as info:
        await mypgdriver.connect(dsn(tls_cluster, sslmode="verify-ca"), timeout=10)
    assert expected in str(info.value)


async def test_verify_ca_with_missing_root_cert_names_the_file(tls_cluster, tmp_path):
    missing = tmp_path / "no-such-root.crt"
    with pytest.raises(exceptions.ClientConfigurationError) as info:
        await mypgdriver.connect(
            dsn(tls_cluster, sslmode="verify-ca", sslrootcert=missing), timeout=10)
    assert str(missing) in str(info.value)


async def test_sslrootcert_system_uses_the_system_store(tls_cluster, pki, monkeypatch):
    # OpenSSL's default verify paths honour SSL_CERT_FILE: our CA becomes "the system".
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert_path))
    d = dsn(tls_cluster, host="localhost", sslmode="verify-full", sslrootcert="system")
    assert await uses_tls(d) is True


async def test_sslrootcert_system_defaults_to_verify_full(tls_cluster, pki, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert_path))
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        await mypgdriver.connect(dsn(tls_cluster, host="127.0.0.1", sslrootcert="system"),
                                 timeout=10)


async def test_sslrootcert_system_refuses_weaker_sslmode(tls_cluster, pki, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert_path))
    with pytest.raises(exceptions.ClientConfigurationError, match="verify-full"):
        await mypgdriver.connect(
            dsn(tls_cluster, host="localhost", sslmode="verify-ca", sslrootcert="system"),
            timeout=10)


async def test_crl_revoking_the_server_certificate_fails(tls_cluster, pki):
    d = dsn(tls_cluster, host="localhost", sslmode="verify-full",
            sslrootcert=pki.ca.cert_path, sslcrl=pki.crl_revoking_server)
    with pytest.raises(ssl.SSLCertVerificationError, match="revoked"):
        await mypgdriver.connect(d, timeout=10)


async def test_crl_not_listing_the_server_certificate_passes(tls_cluster, pki):
    d = dsn(tls_cluster, host="localhost", sslmode="verify-full",
            sslrootcert=pki.ca.cert_path, sslcrl=pki.crl_empty)
    assert await uses_tls(d) is True


# --- client certificates --------------------------------------------------------------

async def test_client_certificate_login(tls_cluster, pki):
    d = dsn(tls_cluster, user=CERT_USER, sslmode="verify-full", host="localhost",
            sslrootcert=pki.ca.cert_path, sslcert=pki.client.cert_path,
            sslkey=pki.client.key_path)
    assert await tls_state(d) == (True, f"/CN={CERT_USER}")


async def test_cert_auth_without_client_certificate_is_refused(tls_cluster):
    with pytest.raises(exceptions.InvalidAuthorizationSpecificationError):
        await mypgdriver.connect(dsn(tls_cluster, user=CERT_USER, sslmode="require"), timeout=10)


async def test_clientcert_verify_full_accepts_matching_certificate(tls_cluster, pki):
    d = dsn(tls_cluster, user=VFULL_USER, sslmode="require",
            sslcert=pki.vfull.cert_path, sslkey=pki.vfull.key_path)
    assert await tls_state(d) == (True, f"/CN={VFULL_USER}")


async def test_clientcert_verify_full_refuses_certificate_for_another_user(tls_cluster, pki):
    d = dsn(tls_cluster, user=VFULL_USER, sslmode="require",
            sslcert=pki.client.cert_path, sslkey=pki.client.key_path)
    with pytest.raises(exceptions.InvalidAuthorizationSpecificationError):
        await mypgdriver.connect(d, timeout=10)


async def test_client_certificate_from_default_location(tls_cluster, pki, isolated_env):
    dotdir = isolated_env / ".postgresql"
    dotdir.mkdir()
    shutil.copy(pki.client.cert_path, dotdir / "postgresql.crt")
    shutil.copy(pki.client.key_path, dotdir / "postgresql.key")
    assert await tls_state(dsn(tls_cluster, user=CERT_USER, sslmode="require")) == (
        True, f"/CN={CERT_USER}")


async def test_encrypted_client_key_with_sslpassword(tls_cluster, pki):
    d = dsn(tls_cluster, user=CERT_USER, sslmode="require",
            sslcert=pki.client_encrypted.cert_path, sslkey=pki.client_encrypted.key_path,
            sslpassword=KEY_PASSWORD)
    assert await tls_state(d) == (True, f"/CN={CERT_USER}")


async def test_encrypted_client_key_with_wrong_sslpassword(tls_cluster, pki):
    d = dsn(tls_cluster, user=CERT_USER, sslmode="require",
            sslcert=pki.client_encrypted.cert_path, sslkey=pki.client_encrypted.key_path,
            sslpassword="wrong")
    with pytest.raises(exceptions.ClientConfigurationError) as info:
        await mypgdriver.connect(d, timeout=10)
    assert "wrong" not in str(info.value)


async def test_missing_client_certificate_file_is_a_configuration_error(tls_cluster, tmp_path):
    missing = tmp_path / "nope.crt"
    with pytest.raises(exceptions.ClientConfigurationError, match="nope.crt"):
        await mypgdriver.connect(dsn(tls_cluster, sslmode="require", sslcert=missing),
                                 timeout=10)


# --- environment variables ------------------------------------------------------------

async def test_pgsslmode_and_pgsslrootcert(tls_cluster, pki, monkeypatch):
    monkeypatch.setenv("PGSSLMODE", "verify-full")
    monkeypatch.setenv("PGSSLROOTCERT", str(pki.ca.cert_path))
    assert await uses_tls(dsn(tls_cluster, host="localhost")) is True
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        await mypgdriver.connect(dsn(tls_cluster, host="127.0.0.1"), timeout=10)


async def test_pgsslmode_disable(tls_cluster, monkeypatch):
    monkeypatch.setenv("PGSSLMODE", "disable")
    assert await uses_tls(dsn(tls_cluster)) is False


async def test_pgsslmode_require_against_plain_server(plain_cluster, monkeypatch):
    monkeypatch.setenv("PGSSLMODE", "require")
    with pytest.raises(ConnectionError, match="rejected SSL upgrade"):
        await mypgdriver.connect(dsn(plain_cluster), timeout=10)


async def test_dsn_sslmode_overrides_pgsslmode(tls_cluster, monkeypatch):
    monkeypatch.setenv("PGSSLMODE", "require")
    assert await uses_tls(dsn(tls_cluster, sslmode="disable")) is False


async def test_pgsslcert_and_pgsslkey(tls_cluster, pki, monkeypatch):
    monkeypatch.setenv("PGSSLMODE", "require")
    monkeypatch.setenv("PGSSLCERT", str(pki.client.cert_path))
    monkeypatch.setenv("PGSSLKEY", str(pki.client.key_path))
    assert await tls_state(dsn(tls_cluster, user=CERT_USER)) == (True, f"/CN={CERT_USER}")


async def test_pgsslcrl(tls_cluster, pki, monkeypatch):
    monkeypatch.setenv("PGSSLCRL", str(pki.crl_revoking_server))
    d = dsn(tls_cluster, host="localhost", sslmode="verify-full", sslrootcert=pki.ca.cert_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="revoked"):
        await mypgdriver.connect(d, timeout=10)


# --- ssl= argument --------------------------------------------------------------------

async def test_ssl_context_verifying_our_ca(tls_cluster, pki):
    ctx = ssl.create_default_context(cafile=str(pki.ca.cert_path))
    assert await uses_tls(host="localhost", port=tls_cluster.port, user="postgres",
                          database="postgres", ssl=ctx) is True


async def test_ssl_context_with_client_certificate(tls_cluster, pki):
    ctx = ssl.create_default_context(cafile=str(pki.ca.cert_path))
    ctx.load_cert_chain(str(pki.client.cert_path), str(pki.client.key_path))
    assert await tls_state(host="localhost", port=tls_cluster.port, user=CERT_USER,
                           database="postgres", ssl=ctx) == (True, f"/CN={CERT_USER}")


async def test_ssl_context_decides_verification(tls_cluster, pki):
    ctx = ssl.create_default_context(cafile=str(pki.other_ca.cert_path))
    with pytest.raises(ssl.SSLCertVerificationError):
        await mypgdriver.connect(host="localhost", port=tls_cluster.port, user="postgres",
                                 database="postgres", ssl=ctx, timeout=10)
    lax = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    lax.check_hostname = False
    lax.verify_mode = ssl.CERT_NONE
    assert await uses_tls(host="127.0.0.1", port=tls_cluster.port, user="postgres",
                          database="postgres", ssl=lax) is True


async def test_ssl_context_requires_tls(plain_cluster):
    lax = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    lax.check_hostname = False
    lax.verify_mode = ssl.CERT_NONE
    with pytest.raises(ConnectionError, match="rejected SSL upgrade"):
        await mypgdriver.connect(host=plain_cluster.host, port=plain_cluster.port,
                                 user="postgres", database="postgres", ssl=lax, timeout=10)


async def test_ssl_true_verifies_against_system_cas(tls_cluster, pki, monkeypatch):
    kw = dict(host="localhost", port=tls_cluster.port, user="postgres", database="postgres")
    # An empty "system" store: our private CA is not trusted.
    empty = pki.dir / "empty-bundle.pem"
    empty.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(empty))
    monkeypatch.setenv("SSL_CERT_DIR", str(pki.dir / "no-such-dir"))
    with pytest.raises(ssl.SSLCertVerificationError):
        await mypgdriver.connect(ssl=True, timeout=10, **kw)
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert_path))
    assert await uses_tls(ssl=True, **kw) is True
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        await mypgdriver.connect(ssl=True, timeout=10, **dict(kw, host="127.0.0.1"))


async def test_ssl_true_requires_tls(plain_cluster):
    with pytest.raises(ConnectionError, match="rejected SSL upgrade"):
        await mypgdriver.connect(host=plain_cluster.host, port=plain_cluster.port,
                                 user="postgres", database="postgres", ssl=True, timeout=10)


async def test_ssl_false_disables_tls(tls_cluster):
    assert await uses_tls(host=tls_cluster.host, port=tls_cluster.port, user="postgres",
                          database="postgres", ssl=False) is False


@pytest.mark.parametrize("sslmode, expected_tls", [("disable", False), ("require", True)])
async def test_ssl_keyword_accepts_sslmode_names(tls_cluster, sslmode, expected_tls):
    assert await uses_tls(host=tls_cluster.host, port=tls_cluster.port, user="postgres",
                          database="postgres", ssl=sslmode) is expected_tls


# --- channel binding ------------------------------------------------------------------

async def _auth_method(d: str) -> str:
    conn = await mypgdriver.connect(d, timeout=10)
    try:
        assert await conn.fetchval("SELECT current_user") == SCRAM_USER
        return conn._protocol.auth_method
    finally:
        await conn.close()


@pytest.mark.parametrize("channel_binding", ["require", "prefer"])
async def test_channel_binding_over_tls_uses_scram_plus(tls_cluster, channel_binding):
    d = dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD, sslmode="require",
            channel_binding=channel_binding)
    assert await _auth_method(d) == "SCRAM-SHA-256-PLUS"


async def test_channel_binding_disable_uses_plain_scram_over_tls(tls_cluster):
    d = dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD, sslmode="require",
            channel_binding="disable")
    assert await _auth_method(d) == "SCRAM-SHA-256"


async def test_pgchannelbinding_env(tls_cluster, monkeypatch):
    monkeypatch.setenv("PGCHANNELBINDING", "disable")
    d = dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD, sslmode="require")
    assert await _auth_method(d) == "SCRAM-SHA-256"


async def test_channel_binding_require_without_tls_fails_clearly(plain_cluster):
    d = dsn(plain_cluster, user="mypg_scram", password="scram-pässword",
            channel_binding="require")
    with pytest.raises(exceptions.InterfaceError, match="channel binding is required"):
        await mypgdriver.connect(d, timeout=10)


async def test_channel_binding_require_with_sslmode_disable_fails(tls_cluster):
    d = dsn(tls_cluster, user=SCRAM_USER, password=SCRAM_PASSWORD, sslmode="disable",
            channel_binding="require")
    with pytest.raises(exceptions.InterfaceError, match="channel binding is required"):
        await mypgdriver.connect(d, timeout=10)


async def test_channel_binding_require_refuses_trust_authentication(tls_cluster):
    d = dsn(tls_cluster, user="postgres", sslmode="require", channel_binding="require")
    with pytest.raises(exceptions.InterfaceError, match="channel binding is required"):
        await mypgdriver.connect(d, timeout=10)


@pytest.mark.parametrize("user, password", [(MD5_USER, MD5_PASSWORD),
                                            (CLEAR_USER, CLEAR_PASSWORD)])
async def test_channel_binding_require_refuses_password_methods(tls_cluster, user, password):
    d = dsn(tls_cluster, user=user, password=password, sslmode="require",
            channel_binding="require")
    with pytest.raises(exceptions.InterfaceError, match="channel binding is required"):
        await mypgdriver.connect(d, timeout=10)


# --- direct TLS (sslnegotiation=direct) -----------------------------------------------

async def test_direct_tls_sends_client_hello_with_alpn_first():
    with DirectTlsListener() as listener:
        d = f"postgresql://postgres@localhost:{listener.port}/postgres?sslmode=require" \
            "&sslnegotiation=direct"
        with pytest.raises(OSError):
            await mypgdriver.connect(d, timeout=5)
        (client,) = await asyncio.to_thread(listener.wait_for_clients, 1)
    assert client.error is None
    assert client.first_bytes[:1] == b"\x16"          # a TLS handshake record, no SSLRequest
    assert client.first_bytes[:8] != SSL_REQUEST
    assert client.is_client_hello
    assert client.alpn == ["postgresql"]
    assert client.server_name == "localhost"


async def test_direct_tls_sends_startup_inside_tls(pki):
    with DirectTlsListener(certfile=str(pki.server.cert_path), keyfile=str(pki.server.key_path),
                           handshake=True) as listener:
        d = (f"postgresql://postgres@localhost:{listener.port}/postgres?sslmode=verify-full"
             f"&sslnegotiation=direct&sslrootcert={pki.ca.cert_path}")
        with pytest.raises((OSError, exceptions.ConnectionDoesNotExistError)):
            await mypgdriver.connect(d, timeout=5)
        (client,) = await asyncio.to_thread(listener.wait_for_clients, 1)
    assert client.error is None, client.error
    assert client.alpn == ["postgresql"]
    assert client.selected_alpn == "postgresql"
    message = client.first_message
    assert message is not None
    length, version = struct.unpack_from("!ii", message)
    assert (length, version) == (len(message), 196608)    # StartupMessage, protocol 3.0
    assert b"user\x00postgres\x00" in message


async def test_direct_tls_keyword_argument():
    with DirectTlsListener() as listener:
        with pytest.raises(OSError):
            await mypgdriver.connect(host="127.0.0.1", port=listener.port, user="postgres",
                                     ssl="require", direct_tls=True, timeout=5)
        (client,) = await asyncio.to_thread(listener.wait_for_clients, 1)
    assert client.is_client_hello and client.alpn == ["postgresql"]


async def test_direct_tls_from_environment(monkeypatch):
    monkeypatch.setenv("PGSSLNEGOTIATION", "direct")
    monkeypatch.setenv("PGSSLMODE", "require")
    with DirectTlsListener() as listener:
        with pytest.raises(OSError):
            await mypgdriver.connect(host="127.0.0.1", port=listener.port, user="postgres",
                                     timeout=5)
        (client,) = await asyncio.to_thread(listener.wait_for_clients, 1)
    assert client.is_client_hello and client.alpn == ["postgresql"]


async def test_direct_tls_with_ssl_true_offers_alpn(pki, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert_path))
    with DirectTlsListener(certfile=str(pki.server.cert_path), keyfile=str(pki.server.key_path),
                           handshake=True) as listener:
        with pytest.raises((OSError, exceptions.ConnectionDoesNotExistError)):
            await mypgdriver.connect(host="localhost", port=listener.port, user="postgres",
                                     ssl=True, direct_tls=True, timeout=5)
        (client,) = await asyncio.to_thread(listener.wait_for_clients, 1)
    assert client.alpn == ["postgresql"] and client.selected_alpn == "postgresql"


@pytest.mark.parametrize("sslmode", ["prefer", "allow", "disable"])
async def test_direct_tls_refuses_modes_that_allow_plain_text(sslmode):
    with DirectTlsListener() as listener:
        d = (f"postgresql://postgres@127.0.0.1:{listener.port}/postgres?sslmode={sslmode}"
             "&sslnegotiation=direct")
        with pytest.raises(exceptions.ClientConfigurationError, match="direct"):
            await mypgdriver.connect(d, timeout=5)
        await asyncio.sleep(0.05)
        assert listener.clients == []      # refused before opening any socket


# --- CancelRequest over TLS -----------------------------------------------------------

async def _wait_not_running(monitor, pid: int, bound: float = 10.0) -> float:
    """Seconds until backend `pid` runs no statement; fails after `bound`."""
    start = time.monotonic()
    state = await apoll(lambda: monitor.fetchval(
        "SELECT state FROM pg_stat_activity WHERE pid = $1", pid),
        lambda state: state != "active", timeout=bound)
    if state == "active":
        pytest.fail(f"backend {pid} still active {bound}s after the cancel")
    return time.monotonic() - start


@pytest.mark.parametrize("sslmode, cancel_opening", [
    ("require", SSL_REQUEST),
    ("disable", CANCEL_REQUEST_PREFIX),
])
async def test_timeout_cancels_over_the_connections_transport_kind(
        tls_cluster, sslmode, cancel_opening):
    monitor = await mypgdriver.connect(dsn(tls_cluster, sslmode="disable"))
    with TcpProxy(tls_cluster.host, tls_cluster.port) as proxy:
        conn = await mypgdriver.connect(
            f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres?sslmode={sslmode}",
            timeout=10)
        try:
            assert (await conn.fetchrow(SSL_STATE_QUERY))[0] is (sslmode == "require")
            pid = conn.get_server_pid()
            # Prepared first: the timed-out call is one round trip, whose
            # statement the cancel finds running.
            assert await conn.fetchval("SELECT pg_sleep($1)", 0) is None
            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await conn.fetchval("SELECT pg_sleep($1)", 30, timeout=0.3)
            assert time.monotonic() - started < 0.3 + PROMPT
            await _wait_not_running(monitor, pid)
            assert await conn.fetchval("SELECT $1::int", 7, timeout=5) == 7
            openings = proxy.first_bytes
            if sslmode == "require":
                assert openings[0] == SSL_REQUEST
            else:
                assert openings[0][4:8] == struct.pack("!i", 196608)   # StartupMessage
            # Then the cancel connections, each of the connection's kind: one,
            # or more if the server ignored the first (it does so when the
            # backend has not started reading the statement yet, which a
            # loaded machine makes possible; the driver then sends another).
            assert openings[1:] and openings[1:] == [cancel_opening] * len(openings[1:])
        finally:
            await conn.close()
            await monitor.close()


async def test_public_cancel_over_tls(tls_cluster):
    conn = await mypgdriver.connect(dsn(tls_cluster, sslmode="require"), timeout=10)
    monitor = await mypgdriver.connect(dsn(tls_cluster, sslmode="disable"))
    try:
        task = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(30)"))
        await wait_sleeping(monitor, conn.get_server_pid())
        await conn.cancel()
        with pytest.raises(exceptions.QueryCanceledError):
            await asyncio.wait_for(task, 5)
        assert await conn.fetchval("SELECT $1::int", 11) == 11
        assert (await conn.fetchrow(SSL_STATE_QUERY))[0] is True
    finally:
        await conn.close()
        await monitor.close()


# --- what a server must not do during SSL negotiation -----------------------------------

async def test_tls_handshake_that_stalls_times_out():
    # 'S' and then nothing: the connect timeout covers the TLS handshake.
    with ScriptedSslAnswer(b"S") as server:
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=server.port, user="postgres", ssl="require",
                timeout=0.5), 10)
        assert time.monotonic() - started < 0.5 + PROMPT
        assert server.requests == [SSL_REQUEST]


def _error_response(sqlstate: str, text: str) -> bytes:
    body = b"SFATAL\0VFATAL\0C" + sqlstate.encode() + b"\0M" + text.encode() + b"\0\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


# As in libpq and asyncpg, an answer to the SSLRequest that is neither 'S' nor
# 'N' (or 'S' followed by plain text) is a ConnectionError, with no fallback.
@pytest.mark.parametrize("answer, message", [
    # CVE-2021-23222: bytes after 'S' would be taken as if they came over TLS.
    (b"SR\x00\x00\x00\x08\x00\x00\x00\x00", "sent unencrypted data after accepting SSL"),
    (b"X", "sent an invalid answer b'X' to the SSLRequest (is this a PostgreSQL server?)"),
    # Not shown: the text is unauthenticated (CVE-2024-10977).
    (_error_response("53300", "sorry, too many clients already"),
     "sent an error response to the SSLRequest; check the server log for details"),
], ids=["plaintext-after-S", "X", "E"])
@pytest.mark.parametrize("sslmode", ["prefer", "require"])
async def test_malformed_ssl_answer_is_a_connection_error(answer, message, sslmode):
    with ScriptedSslAnswer(answer) as server:
        with pytest.raises(ConnectionError) as info:
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=server.port, user="postgres", ssl=sslmode,
                timeout=5), 10)
        assert type(info.value) is ConnectionError
        assert str(info.value) == f'PostgreSQL server at "127.0.0.1:{server.port}" {message}'
        assert server.requests == [SSL_REQUEST]


async def test_allow_retries_with_tls_after_a_server_error_before_authentication():
    # The plain-text attempt is refused with 53300 before authentication
    # (any server error then makes libpq and asyncpg try the other
    # transport); the TLS attempt meets an 'E' answer.  The first error is
    # the one that says what is wrong; the ConnectionError is its cause.
    with ScriptedSslAnswer(_error_response("53300", "sorry, too many clients already")) as server:
        with pytest.raises(exceptions.TooManyConnectionsError) as info:
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=server.port, user="postgres", ssl="allow",
                timeout=5), 10)
        assert len(server.requests) == 2
        assert server.requests[1] == SSL_REQUEST
        assert type(info.value.__cause__) is ConnectionError


@pytest.mark.parametrize("sslmode", ["prefer", "require"])
async def test_data_after_ssl_declined_is_a_protocol_error_at_once(sslmode):
    # A server speaks only after the StartupMessage: bytes that came with
    # its 'N' are no answer to anything.  Refused at once, not after the
    # connect timeout spent waiting for an answer to the StartupMessage.
    with ScriptedSslAnswer(b"N" + authentication_ok()) as server:
        started = time.monotonic()
        with pytest.raises(exceptions.ProtocolError) as info:
            await asyncio.wait_for(mypgdriver.connect(
                host="127.0.0.1", port=server.port, user="postgres", ssl=sslmode,
                timeout=60), 10)
        assert time.monotonic() - started < 5
        assert str(info.value) == (f'PostgreSQL server at "127.0.0.1:{server.port}" sent '
                                   f'unexpected data after declining SSL')
        assert server.requests == [SSL_REQUEST]


# --- sslmode allow/prefer: when the other transport is tried ------------------------------
#
# libpq's rule, and asyncpg's: the second attempt is made only for an error
# the first one met before authentication completed (and, under prefer,
# only if TLS was in use, or its handshake failed).  An error after
# AuthenticationOk (no such database, a bad setting, the server starting up)
# would be the same on the other transport -- and under prefer, retrying in
# plain text would send the password unencrypted.

FAKE_USER, FAKE_PASSWORD = "alice", "fake-server-pw"


@pytest.fixture(scope="module")
def fake_server_tls(pki) -> ssl.SSLContext:
    """A server-side context for the recording fake server (clients do not verify it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.server.cert_path, pki.server.key_path)
    return ctx


def _after_authentication(sqlstate: str, text: str) -> list[object]:
    """A reply that authenticates the password, then fails the startup."""
    return [ASK_PASSWORD, authentication_ok(), _error_response(sqlstate, text)]


async def _connect_fake(server: RecordingStartupServer, sslmode: str, **kwargs: Any):
    return await asyncio.wait_for(mypgdriver.connect(
        host="127.0.0.1", port=server.port, user=FAKE_USER, password=FAKE_PASSWORD,
        database="postgres", ssl=sslmode, **kwargs), 10)


def _plain_text_passwords(server: RecordingStartupServer) -> list[bytes]:
    return [p for attempt in server.attempts if not attempt.tls for p in attempt.passwords]


POST_AUTH_ERRORS = [
    ("3D000", 'database "postgres" does not exist', exceptions.InvalidCatalogNameError),
    ("57P03", "the database system is starting up", exceptions.CannotConnectNowError),
    ("22023", 'invalid value for parameter "work_mem": "lots"',
     exceptions.InvalidParameterValueError),
]


@pytest.mark.parametrize("sqlstate, text, error_class", POST_AUTH_ERRORS,
                         ids=[e[0] for e in POST_AUTH_ERRORS])
async def test_prefer_never_retries_in_plain_text_after_authentication(
        fake_server_tls, sqlstate, text, error_class):
    reply = _after_authentication(sqlstate, text)
    with RecordingStartupServer(tls_context=fake_server_tls, tls_reply=reply,
                                plain_reply=reply) as server:
        with pytest.raises(error_class) as info:
            await _connect_fake(server, "prefer")
        assert type(info.value) is error_class
        assert info.value.sqlstate == sqlstate
        assert len(server.attempts) == 1
        assert server.attempts[0].tls
        assert server.attempts[0].passwords == [FAKE_PASSWORD.encode() + b"\0"]
        assert _plain_text_passwords(server) == []


async def test_allow_does_not_retry_with_tls_after_authentication(fake_server_tls):
    reply = _after_authentication("3D000", 'database "postgres" does not exist')
    with RecordingStartupServer(tls_context=fake_server_tls, tls_reply=reply,
                                plain_reply=reply) as server:
        with pytest.raises(exceptions.InvalidCatalogNameError):
            await _connect_fake(server, "allow")
        assert len(server.attempts) == 1
        assert not server.attempts[0].ssl_requested


async def test_prefer_sends_no_plain_text_password_after_a_post_auth_error(tls_cluster):
    # The real server: CLEAR_USER authenticates with a cleartext password
    # over TLS, then the database it asks for does not exist.  The proxy
    # shows every connection the driver opened: one, with an SSLRequest.
    with TcpProxy(tls_cluster.host, tls_cluster.port) as proxy:
        with pytest.raises(exceptions.InvalidCatalogNameError):
            await mypgdriver.connect(
                host="127.0.0.1", port=proxy.port, user=CLEAR_USER, password=CLEAR_PASSWORD,
                database="mypg_no_such_database", ssl="prefer", timeout=10)
        assert proxy.first_bytes == [SSL_REQUEST]


@pytest.mark.parametrize("reply", [
    [_error_response("28000", 'no pg_hba.conf entry for host "127.0.0.1", user "alice", '
                              'database "postgres", no encryption')],
    [ASK_PASSWORD, _error_response("28P01", 'password authentication failed for user "alice"')],
], ids=["hba-reject", "wrong-password"])
async def test_prefer_does_not_retry_when_the_server_declined_tls(reply):
    # 'N': the first attempt was already in plain text; a second one would
    # be the same.
    with RecordingStartupServer(plain_reply=reply) as server:
        with pytest.raises(exceptions.InvalidAuthorizationSpecificationError):
            await _connect_fake(server, "prefer")
        assert len(server.attempts) == 1
        assert server.attempts[0].ssl_requested and not server.attempts[0].tls


@pytest.mark.parametrize("cut", ["eof", "reset"])
async def test_prefer_retries_in_plain_text_when_the_tls_handshake_is_cut(fake_server_tls, cut):
    # libpq goes on in plain text after any failure of the TLS handshake,
    # a dropped connection included, not only after an SSL error.
    with RecordingStartupServer(tls_context=fake_server_tls, tls_handshake=cut,
                                plain_reply=[startup_reply()]) as server:
        conn = await _connect_fake(server, "prefer")
        await conn.close()
        assert len(server.attempts) == 2
        assert server.attempts[0].ssl_requested and not server.attempts[0].tls
        assert not server.attempts[1].ssl_requested
        assert server.attempts[1].startup is not None


HBA_REJECT_TLS = _error_response(
    "28000", 'no pg_hba.conf entry for host "127.0.0.1", user "alice", database "postgres", '
             'SSL encryption')
HBA_REJECT_PLAIN = _error_response(
    "28000", 'no pg_hba.conf entry for host "127.0.0.1", user "alice", database "postgres", '
             'no encryption')


@pytest.mark.parametrize("sslmode", ["prefer", "allow"])
async def test_pre_auth_rejection_tries_the_other_transport_and_chains_the_errors(
        fake_server_tls, sslmode):
    # The first transport is refused by pg_hba.conf before authentication;
    # the second authenticates and then fails: that error is raised, the
    # first is its cause.
    post_auth = _after_authentication("3D000", 'database "postgres" does not exist')
    first_tls = sslmode == "prefer"
    with RecordingStartupServer(
            tls_context=fake_server_tls,
            tls_reply=[HBA_REJECT_TLS] if first_tls else post_auth,
            plain_reply=post_auth if first_tls else [HBA_REJECT_PLAIN]) as server:
        with pytest.raises(exceptions.InvalidCatalogNameError) as info:
            await _connect_fake(server, sslmode)
        cause = info.value.__cause__
        assert type(cause) is exceptions.InvalidAuthorizationSpecificationError
        assert str(cause).endswith("SSL encryption" if first_tls else "no encryption")
        assert [a.tls for a in server.attempts] == [first_tls, not first_tls]


@pytest.mark.parametrize("sslmode", ["prefer", "allow"])
async def test_first_attempts_wrong_password_wins_over_the_second_attempts_disconnect(
        fake_server_tls, sslmode):
    wrong_password = [ASK_PASSWORD,
                      _error_response("28P01", 'password authentication failed for user "alice"')]
    if sslmode == "prefer":
        # TLS: wrong password; plain text: the server closes at once.
        server = RecordingStartupServer(tls_context=fake_server_tls, tls_reply=wrong_password,
                                        plain_reply=[HANG_UP])
    else:
        # Plain text: wrong password; TLS: the handshake is reset.
        server = RecordingStartupServer(tls_context=fake_server_tls, tls_handshake="reset",
                                        plain_reply=wrong_password)
    with server:
        with pytest.raises(exceptions.InvalidPasswordError) as info:
            await _connect_fake(server, sslmode)
        assert type(info.value) is exceptions.InvalidPasswordError
        assert isinstance(info.value.__cause__,
                          (OSError, exceptions.ConnectionDoesNotExistError))
        assert len(server.attempts) == 2


async def test_cancelled_fallback_attempt_keeps_the_first_error_as_its_cause(fake_server_tls):
    # The TLS attempt is refused; the plain-text one gets no answer and is
    # cancelled.  The CancelledError goes on, the first error chained to it.
    with RecordingStartupServer(tls_context=fake_server_tls, tls_reply=[HBA_REJECT_TLS],
                                plain_reply=[]) as server:
        caught: list[BaseException] = []

        async def connect() -> None:
            try:
                await mypgdriver.connect(
                    host="127.0.0.1", port=server.port, user=FAKE_USER,
                    password=FAKE_PASSWORD, database="postgres", ssl="prefer", timeout=None)
            except BaseException as e:
                caught.append(e)
                raise

        task = asyncio.ensure_future(connect())
        await apoll(lambda: server.attempts,
                    lambda attempts: len(attempts) == 2 and attempts[1].startup is not None)
        assert len(server.attempts) == 2 and not server.attempts[1].tls
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert type(caught[0]) is asyncio.CancelledError
        assert type(caught[0].__cause__) is exceptions.InvalidAuthorizationSpecificationError


# --- the cancellation loop over TLS ---------------------------------------------------------

async def test_cancellation_loop_over_tls(tls_cluster):
    kwargs = dict(host=tls_cluster.host, port=tls_cluster.port, user="postgres",
                  database="postgres", ssl="require")
    conn = await mypgdriver.connect(**kwargs)
    try:
        assert (await conn.fetchrow(SSL_STATE_QUERY))[0] is True
    finally:
        await conn.close()
    seed = int(os.environ.get("MYPG_CANCEL_SEED", "20261121")) + 2
    outcomes = await run_cancellation_loop(kwargs, seed, 300, "mypg_cancel_loop_tls")
    check_loop_outcomes(outcomes, 300)


# --- TLS protocol version bounds --------------------------------------------------------

@pytest.mark.parametrize("bounds, expected", [
    ({"ssl_max_protocol_version": "TLSv1.2"}, "TLSv1.2"),
    ({"ssl_min_protocol_version": "TLSv1.3"}, "TLSv1.3"),
])
async def test_ssl_protocol_version_bounds_are_applied(tls_cluster, bounds, expected):
    conn = await mypgdriver.connect(dsn(tls_cluster, sslmode="require", **bounds), timeout=10)
    try:
        assert await conn.fetchval(
            "SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == expected
    finally:
        await conn.close()


async def test_ssl_max_below_min_is_a_configuration_error(tls_cluster):
    with pytest.raises(exceptions.ClientConfigurationError, match="lower than"):
        await mypgdriver.connect(
            dsn(tls_cluster, sslmode="require", ssl_min_protocol_version="TLSv1.3",
                ssl_max_protocol_version="TLSv1.2"), timeout=10)


async def test_invalid_ssl_protocol_version_is_refused(tls_cluster):
    with pytest.raises(exceptions.ClientConfigurationError, match="ssl_min_protocol_version"):
        await mypgdriver.connect(
            dsn(tls_cluster, sslmode="require", ssl_min_protocol_version="SSLv3"), timeout=10)

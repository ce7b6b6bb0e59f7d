"""Tests for mypgdriver.connecting.connect_params: DSN, environment, pgpass -> ConnectParams."""

from __future__ import annotations

import dataclasses
import os
import ssl
import warnings

import pytest

from mypgdriver.connecting import connect_params
from mypgdriver.connecting.connect_params import (
    ConnectParams,
    HostSpec,
    parse_connect_params,
    parse_dsn,
)
from mypgdriver.exceptions import ClientConfigurationError, InterfaceError

SECRET = "Sup3rS3cret"


@pytest.fixture(autouse=True)
def socket_dir(tmp_path, monkeypatch):
    """Make the default socket directory a known temp dir (first one missing)."""
    sockdir = tmp_path / "sock"
    sockdir.mkdir()
    monkeypatch.setattr(connect_params, "DEFAULT_SOCKET_DIRS",
                        (str(tmp_path / "missing"), str(sockdir), "/"))
    return str(sockdir)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def parse(home):
    """parse_connect_params with a hermetic environment (no real ~/.pgpass)."""
    def parse(dsn=None, env=None, **kwargs):
        environ = {"HOME": str(home), "USER": "osuser"}
        environ.update(env or {})
        return parse_connect_params(dsn, environ=environ, **kwargs)
    return parse


def write_pgpass(path, text, mode=0o600):
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def check(params: ConnectParams, expected: dict) -> None:
    """Compare the fields named in `expected`; hosts as (host, port) pairs."""
    for name, want in expected.items():
        if name == "hosts":
            got = tuple((h.host, h.port) for h in params.hosts)
        elif name == "passwords":
            got = tuple(h.password for h in params.hosts)
        elif name == "server_settings":
            got = dict(params.server_settings)
        else:
            got = getattr(params, name)
        assert got == want, f"{name}: {got!r} != {want!r}"


# --------------------------------------------------------------------------
# DSN forms
# --------------------------------------------------------------------------

URI_CASES = [
    pytest.param(
        "postgresql://alice:pw@db.example.com:6543/shop",
        {"hosts": (("db.example.com", 6543),), "user": "alice", "passwords": ("pw",),
         "database": "shop"},
        id="uri-full"),
    pytest.param(
        "postgres://db.example.com/shop",
        {"hosts": (("db.example.com", 5432),), "user": "osuser", "passwords": (None,),
         "database": "shop"},
        id="uri-postgres-scheme-defaults"),
    pytest.param(
        "POSTGRESQL://h/d", {"hosts": (("h", 5432),), "database": "d"},
        id="uri-scheme-case-insensitive"),
    pytest.param(
        "postgresql://al%40ice:p%40ss%3Aw%2Fd@h/my%20db",
        {"user": "al@ice", "passwords": ("p@ss:w/d",), "database": "my db"},
        id="uri-percent-decoding"),
    pytest.param(
        "postgresql://u:a+b@h/d?application_name=x+y",
        {"passwords": ("a+b",), "server_settings": {"application_name": "x+y"}},
        id="uri-plus-is-literal"),
    pytest.param(
        "postgresql://u:p@ss@h/d", {"user": "u", "passwords": ("p@ss",), "hosts": (("h", 5432),)},
        id="uri-unencoded-at-in-password"),
    pytest.param(
        "postgresql://u:@h/d", {"user": "u", "passwords": (None,)},
        id="uri-empty-password-is-none"),
    pytest.param(
        "postgresql://%C3%A9l%C3%A8ve@h/d", {"user": "\u00e9l\u00e8ve"},
        id="uri-utf8-percent"),
    pytest.param(
        "postgresql://h1:5432,h2:5433/d",
        {"hosts": (("h1", 5432), ("h2", 5433))}, id="uri-host-list-with-ports"),
    pytest.param(
        "postgresql://h1,h2/d?port=5432,5433",
        {"hosts": (("h1", 5432), ("h2", 5433))}, id="uri-host-list-query-ports"),
    pytest.param(
        "postgresql://h1,h2/d", {"hosts": (("h1", 5432), ("h2", 5432))},
        id="uri-host-list-default-port"),
    pytest.param(
        "postgresql://h1,h2/d?port=6000", {"hosts": (("h1", 6000), ("h2", 6000))},
        id="uri-host-list-single-port"),
    pytest.param(
        "postgresql://h1:6000,h2/d", {"hosts": (("h1", 6000), ("h2", 5432))},
        id="uri-empty-port-entry-is-default"),
    pytest.param(
        "postgresql://[::1]:5433/d", {"hosts": (("::1", 5433),)}, id="uri-ipv6-port"),
    pytest.param(
        "postgresql://[fe80::1%25eth0]/d", {"hosts": (("fe80::1%eth0", 5432),)},
        id="uri-ipv6-zone"),
    pytest.param(
        "postgresql://u@[2001:db8::1]:7000,h2:7001/d",
        {"hosts": (("2001:db8::1", 7000), ("h2", 7001)), "user": "u"},
        id="uri-ipv6-in-list"),
    pytest.param(
        "postgresql://%2Fvar%2Frun%2Fpostgresql/d",
        {"hosts": (("/var/run/postgresql", 5432),), "database": "d"},
        id="uri-encoded-socket-dir"),
    pytest.param(
        "postgresql:///d?host=/tmp/sockets&port=6000",
        {"hosts": (("/tmp/sockets", 6000),), "database": "d"},
        id="uri-socket-in-query"),
    pytest.param(
        "postgresql://:6000/d", {"hosts": (("<sock>", 6000), ("localhost", 6000))},
        id="uri-port-only-uses-default-hosts"),
    pytest.param(
        "postgresql://,h2/d", {"hosts": (("<sock>", 5432), ("h2", 5432))},
        id="uri-empty-host-entry-is-default-socket"),
    pytest.param(
        "postgresql://", {"hosts": (("<sock>", 5432), ("localhost", 5432)),
                          "user": "osuser", "database": "osuser"},
        id="uri-empty"),
    pytest.param(
        "postgresql://bob@", {"user": "bob", "database": "bob"}, id="uri-database-defaults-to-user"),
    pytest.param(
        "postgresql://h/d?dbname=other&user=bob&password=pw",
        {"database": "other", "user": "bob", "passwords": ("pw",)},
        id="uri-query-overrides-path"),
    pytest.param(
        "postgresql://h?database=db2", {"database": "db2"}, id="uri-database-alias"),
    pytest.param(
        "postgresql://h/d?sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/c.crt"
        "&sslkey=/c.key&sslcrl=/crl.pem&sslpassword=kp&sslnegotiation=direct"
        "&channel_binding=require&target_session_attrs=read-write&load_balance_hosts=random",
        {"sslmode": "verify-full", "sslrootcert": "/ca.pem", "sslcert": "/c.crt",
         "sslkey": "/c.key", "sslcrl": "/crl.pem", "sslpassword": "kp",
         "sslnegotiation": "direct", "channel_binding": "require",
         "target_session_attrs": "read-write", "load_balance_hosts": "random", "ssl": None},
        id="uri-ssl-and-session-options"),
    pytest.param(
        "postgresql://h/d?ssl=true", {"sslmode": "require"}, id="uri-jdbc-ssl-true"),
    pytest.param(
        "postgresql://h/d?application_name=my%20app&options=-c%20search_path%3Dx"
        "&search_path=public&connect_timeout=10",
        {"server_settings": {"application_name": "my app", "options": "-c search_path=x",
                             "search_path": "public"},
         "connect_timeout": 10.0},
        id="uri-startup-params-and-unknown-to-server-settings"),
    pytest.param(
        "postgresql://h/d?fallback_application_name=fb",
        {"server_settings": {"application_name": "fb"}}, id="uri-fallback-application-name"),
    pytest.param(
        "postgresql://h/d?fallback_application_name=fb&application_name=app",
        {"server_settings": {"application_name": "app"}},
        id="uri-application-name-beats-fallback"),
    pytest.param("postgresql://h/d?connect_timeout=1", {"connect_timeout": 2.0},
                 id="uri-timeout-1-means-2"),
    pytest.param("postgresql://h/d?connect_timeout=0", {"connect_timeout": None},
                 id="uri-timeout-0-means-none"),
    pytest.param("postgresql://h/d?connect_timeout=-5", {"connect_timeout": None},
                 id="uri-timeout-negative-means-none"),
    pytest.param(
        "postgresql://h/d?keepalives=0&keepalives_idle=30&keepalives_interval=5&keepalives_count=3",
        {"keepalives": False, "keepalives_idle": 30, "keepalives_interval": 5,
         "keepalives_count": 3},
        id="uri-keepalives"),
    pytest.param(
        "postgresql://h/d?keepalives_idle=0",
        {"keepalives": True, "keepalives_idle": None}, id="uri-keepalives-zero-is-os-default"),
    pytest.param(
        "postgresql://h/d?krbsrvname=postgres&gssencmode=disable",
        {"server_settings": {}}, id="uri-ignored-keywords"),
    pytest.param(
        "postgresql://h/d?passfile=/etc/pgpass", {"passfile": "/etc/pgpass"}, id="uri-passfile"),
    pytest.param(
        "postgresql://h/d?a=1&&b=2&", {"server_settings": {"a": "1", "b": "2"}},
        id="uri-empty-query-pieces"),
]

KEYWORD_VALUE_CASES = [
    pytest.param(
        "host=localhost port=5432 dbname=mydb user=x password='a b\\'c'",
        {"hosts": (("localhost", 5432),), "database": "mydb", "user": "x",
         "passwords": ("a b'c",)},
        id="kv-basic-quoted-password"),
    pytest.param(
        "host = h1,h2   port = 5433,5434 dbname=d",
        {"hosts": (("h1", 5433), ("h2", 5434)), "database": "d"}, id="kv-spaces-and-lists"),
    pytest.param(
        "  host=h\tdbname=d  ", {"hosts": (("h", 5432),), "database": "d"},
        id="kv-surrounding-whitespace"),
    pytest.param(
        "host=/var/run/postgresql dbname=d", {"hosts": (("/var/run/postgresql", 5432),)},
        id="kv-socket-dir"),
    pytest.param(
        "dbname='my db' application_name=app\\ x",
        {"database": "my db", "server_settings": {"application_name": "app x"}},
        id="kv-unquoted-backslash-escape"),
    pytest.param(
        "host=h password='back\\\\slash'", {"passwords": ("back\\slash",)},
        id="kv-escaped-backslash"),
    pytest.param(
        "host=h password=''", {"passwords": (None,)}, id="kv-empty-quoted-value"),
    pytest.param(
        "host=h port=", {"hosts": (("h", 5432),)}, id="kv-empty-port-is-default"),
    pytest.param(
        "host=h sslmode=require target_session_attrs=standby channel_binding=disable",
        {"sslmode": "require", "target_session_attrs": "standby", "channel_binding": "disable"},
        id="kv-session-options"),
    pytest.param(
        "host=h search_path=s options='-c work_mem=64MB'",
        {"server_settings": {"search_path": "s", "options": "-c work_mem=64MB"}},
        id="kv-unknown-to-server-settings"),
    pytest.param(
        "host=[::1] port=5433", {"hosts": (("::1", 5433),)}, id="kv-bracketed-ipv6"),
    pytest.param(
        "host=@abstract dbname=d", {"hosts": (("@abstract", 5432),)}, id="kv-abstract-socket"),
]


@pytest.mark.parametrize("dsn, expected", URI_CASES + KEYWORD_VALUE_CASES)
def test_dsn_fields(parse, socket_dir, dsn, expected):
    if "hosts" in expected:
        expected = dict(expected, hosts=tuple(
            (socket_dir if h == "<sock>" else h, p) for h, p in expected["hosts"]))
    check(parse(dsn), expected)


def test_parse_dsn_returns_host_and_port_lists_for_uris():
    assert parse_dsn("postgresql://u@h1:1,[::1]/d?x=y") == {
        "user": "u", "host": ["h1", "::1"], "port": ["1", ""], "dbname": "d", "x": "y"}


def test_parse_dsn_keyword_value_keeps_strings():
    assert parse_dsn("host=h1,h2 port=1,2 foo='a b'") == {
        "host": "h1,h2", "port": "1,2", "foo": "a b"}


# --------------------------------------------------------------------------
# Precedence: keyword arguments > DSN > environment > defaults
# --------------------------------------------------------------------------

FULL_ENV = {
    "PGHOST": "envhost", "PGPORT": "6000", "PGUSER": "envuser", "PGPASSWORD": "envpw",
    "PGDATABASE": "envdb", "PGAPPNAME": "envapp", "PGOPTIONS": "-c geqo=off",
    "PGCONNECT_TIMEOUT": "7", "PGSSLMODE": "require", "PGSSLROOTCERT": "/env/ca",
    "PGSSLCERT": "/env/crt", "PGSSLKEY": "/env/key", "PGSSLCRL": "/env/crl",
    "PGSSLNEGOTIATION": "direct", "PGCHANNELBINDING": "require",
    "PGTARGETSESSIONATTRS": "primary", "PGLOADBALANCEHOSTS": "random",
    "PGPASSFILE": "/env/pgpass",
}

PRECEDENCE_CASES = [
    pytest.param(
        FULL_ENV, None, {},
        {"hosts": (("envhost", 6000),), "user": "envuser", "passwords": ("envpw",),
         "database": "envdb", "connect_timeout": 7.0, "sslmode": "require",
         "sslrootcert": "/env/ca", "sslcert": "/env/crt", "sslkey": "/env/key",
         "sslcrl": "/env/crl", "sslnegotiation": "direct", "channel_binding": "require",
         "target_session_attrs": "primary", "load_balance_hosts": "random",
         "passfile": "/env/pgpass",
         "server_settings": {"application_name": "envapp", "options": "-c geqo=off"}},
        id="env-only"),
    pytest.param(
        FULL_ENV,
        "postgresql://dsnuser:dsnpw@dsnhost:7000/dsndb?application_name=dsnapp"
        "&sslmode=verify-ca&target_session_attrs=standby&connect_timeout=3&passfile=/dsn/pgpass",
        {},
        {"hosts": (("dsnhost", 7000),), "user": "dsnuser", "passwords": ("dsnpw",),
         "database": "dsndb", "sslmode": "verify-ca", "target_session_attrs": "standby",
         "connect_timeout": 3.0, "passfile": "/dsn/pgpass", "sslrootcert": "/env/ca",
         "server_settings": {"application_name": "dsnapp", "options": "-c geqo=off"}},
        id="dsn-beats-env"),
    pytest.param(
        FULL_ENV,
        "postgresql://dsnuser:dsnpw@dsnhost:7000/dsndb?application_name=dsnapp&sslmode=verify-ca",
        {"host": "kwhost", "port": 8000, "user": "kwuser", "password": "kwpw",
         "database": "kwdb", "ssl": "verify-full", "target_session_attrs": "read-only",
         "connect_timeout": 0.5, "passfile": "/kw/pgpass",
         "server_settings": {"application_name": "kwapp", "jit": "off"}},
        {"hosts": (("kwhost", 8000),), "user": "kwuser", "passwords": ("kwpw",),
         "database": "kwdb", "sslmode": "verify-full", "target_session_attrs": "read-only",
         "connect_timeout": 0.5, "passfile": "/kw/pgpass",
         "server_settings": {"application_name": "kwapp", "options": "-c geqo=off",
                             "jit": "off"}},
        id="kwargs-beat-dsn"),
    pytest.param(
        {"PGSSLMODE": "require"}, "postgresql://h/d?sslmode=disable", {},
        {"sslmode": "disable"}, id="dsn-sslmode-beats-env"),
    pytest.param(
        {"PGSSLNEGOTIATION": "direct", "PGSSLMODE": "require"}, None, {"direct_tls": False},
        {"sslnegotiation": "postgres"}, id="direct-tls-false-beats-env"),
    pytest.param(
        {"PGHOST": "h1,h2", "PGPORT": "5001,5002"}, None, {},
        {"hosts": (("h1", 5001), ("h2", 5002))}, id="env-host-and-port-lists"),
    pytest.param(
        {"PGHOST": "h1,h2", "PGPORT": "5001,5002"}, None, {"port": 9000},
        {"hosts": (("h1", 9000), ("h2", 9000))}, id="kwarg-port-with-env-hosts"),
    pytest.param(
        {"PGPORT": "6000"}, "postgresql://h/d", {}, {"hosts": (("h", 6000),)},
        id="env-port-with-dsn-host"),
    pytest.param(
        {"PGHOST": "", "PGPORT": ""}, None, {},
        {"hosts": (("<sock>", 5432), ("localhost", 5432))}, id="empty-env-is-unset"),
    pytest.param(
        {"PGUSER": "pguser"}, None, {}, {"user": "pguser", "database": "pguser"},
        id="pguser-is-default-database"),
    pytest.param(
        {"USER": "", "LOGNAME": "logname"}, None, {}, {"user": "logname"},
        id="os-user-from-logname"),
    pytest.param(
        {}, None, {}, {"hosts": (("<sock>", 5432), ("localhost", 5432)), "user": "osuser",
                       "database": "osuser", "sslmode": "prefer", "ssl": None,
                       "sslnegotiation": "postgres", "channel_binding": "prefer",
                       "target_session_attrs": "any", "load_balance_hosts": "disable",
                       "keepalives": True, "connect_timeout": None, "server_settings": {},
                       "passwords": (None, None), "sslrootcert": None},
        id="defaults"),
]


@pytest.mark.parametrize("env, dsn, kwargs, expected", PRECEDENCE_CASES)
def test_precedence(parse, socket_dir, env, dsn, kwargs, expected):
    if "hosts" in expected:
        expected = dict(expected, hosts=tuple(
            (socket_dir if h == "<sock>" else h, p) for h, p in expected["hosts"]))
    check(parse(dsn, env=env, **kwargs), expected)


def test_default_passfile_is_in_home(parse, home):
    assert parse("host=h").passfile == str(home / ".pgpass")


def test_default_host_is_first_existing_socket_dir_then_localhost(parse, tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.setattr(connect_params, "DEFAULT_SOCKET_DIRS",
                        (str(tmp_path / "nope"), str(first), str(second)))
    check(parse(), {"hosts": ((str(first), 5432), ("localhost", 5432))})


def test_default_host_is_localhost_without_socket_dirs(parse, tmp_path, monkeypatch):
    monkeypatch.setattr(connect_params, "DEFAULT_SOCKET_DIRS", (str(tmp_path / "nope"),))
    check(parse(), {"hosts": (("localhost", 5432),)})


def test_environ_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("PGHOST", "from-os-environ")
    monkeypatch.setenv("PGPORT", "6001")
    monkeypatch.setenv("PGPASSWORD", "x")
    check(parse_connect_params(), {"hosts": (("from-os-environ", 6001),)})


# --------------------------------------------------------------------------
# host / port keyword forms
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, hosts", [
    pytest.param({"host": "h1,h2"}, (("h1", 5432), ("h2", 5432)), id="comma-str"),
    pytest.param({"host": ["h1", "h2"], "port": [1, 2]}, (("h1", 1), ("h2", 2)), id="lists"),
    pytest.param({"host": ("h1", "h2"), "port": 5433}, (("h1", 5433), ("h2", 5433)),
                 id="tuple-one-int-port"),
    pytest.param({"host": "h", "port": "6000"}, (("h", 6000),), id="str-port"),
    pytest.param({"host": "h1,h2", "port": "1,2"}, (("h1", 1), ("h2", 2)), id="comma-ports"),
    pytest.param({"host": ["h1", "h2"], "port": ["7", 8]}, (("h1", 7), ("h2", 8)),
                 id="mixed-port-list"),
    pytest.param({"host": "[::1]"}, (("::1", 5432),), id="bracketed-ipv6"),
    pytest.param({"host": "::1", "port": 1}, (("::1", 1),), id="bare-ipv6"),
    pytest.param({"host": " h1 , h2 "}, (("h1", 5432), ("h2", 5432)), id="spaces-stripped"),
])
def test_host_and_port_keywords(parse, kwargs, hosts):
    check(parse(**kwargs), {"hosts": hosts})


def test_host_spec_unix_socket_properties():
    assert HostSpec("/run/postgresql", 5433).is_unix_socket
    assert HostSpec("/run/postgresql", 5433).socket_path == "/run/postgresql/.s.PGSQL.5433"
    assert HostSpec("@pg", 5432).is_unix_socket
    assert HostSpec("@pg", 5432).socket_path == "\0pg/.s.PGSQL.5432"
    assert not HostSpec("localhost", 5432).is_unix_socket
    assert not HostSpec("::1", 5432).is_unix_socket


def test_connect_params_is_frozen(parse):
    params = parse("postgresql://h/d?search_path=x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.user = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        params.server_settings["search_path"] = "y"  # type: ignore[index]


# --------------------------------------------------------------------------
# ssl / direct_tls keywords (asyncpg semantics)
# --------------------------------------------------------------------------

def test_ssl_true_is_default_context_with_verify_full(parse):
    params = parse("postgresql://h/d?sslmode=disable", ssl=True)
    assert params.sslmode == "verify-full"
    assert isinstance(params.ssl, ssl.SSLContext)
    assert params.ssl.check_hostname is True
    assert params.ssl.verify_mode == ssl.CERT_REQUIRED


def test_ssl_false_is_disable(parse):
    params = parse(env={"PGSSLMODE": "require"}, ssl=False)
    assert (params.sslmode, params.ssl) == ("disable", None)


def test_ssl_context_is_kept_and_requires_ssl(parse):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    params = parse("postgresql://h/d?sslmode=prefer", ssl=context)
    assert params.ssl is context
    assert params.sslmode == "require"


def test_ssl_str_is_sslmode(parse):
    params = parse("postgresql://h/d?sslmode=disable", ssl="verify-ca")
    assert (params.sslmode, params.ssl) == ("verify-ca", None)


def test_direct_tls_with_required_ssl(parse):
    params = parse(host="h", ssl="require", direct_tls=True)
    assert params.sslnegotiation == "direct"


@pytest.mark.parametrize("direct_tls, alpn", [(True, [["postgresql"]]), (None, [])])
def test_ssl_true_context_gets_alpn_only_for_direct_tls(parse, monkeypatch, direct_tls, alpn):
    calls = []
    real_create = ssl.create_default_context

    def create_default_context(*args, **kwargs):
        context = real_create(*args, **kwargs)
        context.set_alpn_protocols = calls.append
        return context

    monkeypatch.setattr(ssl, "create_default_context", create_default_context)
    params = parse(host="h", ssl=True, direct_tls=direct_tls)
    assert params.sslmode == "verify-full"
    assert calls == alpn


@pytest.mark.parametrize("mode", ["disable", "allow", "prefer"])
def test_direct_tls_rejects_weak_sslmode(parse, mode):
    with pytest.raises(ClientConfigurationError, match=f"direct.*'{mode}'"):
        parse(host="h", ssl=mode, direct_tls=True)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

ERROR_CASES = [
    pytest.param("mysql://h/d", {}, {}, "unsupported DSN scheme 'mysql'", id="scheme"),
    pytest.param("postgresql://h:abc/d", {}, {}, "invalid port in DSN: 'abc'", id="port-abc"),
    pytest.param("postgresql://h:70000/d", {}, {}, "port 70000 is out of range", id="port-70000"),
    pytest.param("postgresql://h:0/d", {}, {}, "port 0 is out of range", id="port-0"),
    pytest.param("postgresql://[::1/d", {}, {}, "closing ']'", id="ipv6-unclosed"),
    pytest.param("postgresql://[::1]x/d", {}, {}, "after a bracketed IPv6", id="ipv6-junk"),
    pytest.param("postgresql://h/%ZZdb", {}, {}, "bad percent-encoding in the database name",
                 id="bad-percent"),
    pytest.param("postgresql://h/d%", {}, {}, "bad percent-encoding", id="truncated-percent"),
    pytest.param("postgresql://h/d%00", {}, {}, "%00 is not allowed", id="percent-nul"),
    pytest.param("postgresql://h/%FF", {}, {}, "not valid UTF-8", id="percent-not-utf8"),
    pytest.param("postgresql://h/d?novalue", {}, {}, "lacks '='", id="query-without-equals"),
    pytest.param("postgresql://h/d?ssl=maybe", {}, {}, "ssl='maybe'", id="query-ssl-not-true"),
    pytest.param("postgresql://h/d?sslmode=bogus", {}, {}, "invalid sslmode in DSN: 'bogus'",
                 id="sslmode"),
    pytest.param("postgresql://h/d?channel_binding=maybe", {}, {},
                 "invalid channel_binding in DSN: 'maybe'", id="channel-binding"),
    pytest.param("postgresql://h/d?load_balance_hosts=roundrobin", {}, {},
                 "'roundrobin' is not one of: disable, random", id="load-balance"),
    pytest.param("postgresql://h/d?sslnegotiation=indirect", {}, {}, "'indirect'",
                 id="sslnegotiation"),
    pytest.param("postgresql://h/d?connect_timeout=ten", {}, {}, "connect_timeout in DSN: 'ten'",
                 id="timeout"),
    pytest.param("postgresql://h/d?keepalives_idle=x", {}, {}, "keepalives_idle", id="keepalive"),
    pytest.param("postgresql://h/d?hostaddr=1.2.3.4", {}, {}, "'hostaddr' is not supported",
                 id="unsupported-keyword"),
    pytest.param("host=h port", {}, {}, "expected keyword=value at character 8",
                 id="kv-missing-equals"),
    pytest.param("host=h =x", {}, {}, "expected keyword=value at character 8", id="kv-empty-key"),
    pytest.param("host=h password='abc", {}, {}, "unterminated quoted value", id="kv-unterminated"),
    pytest.param("just-a-name", {}, {}, "expected a postgresql:// URI", id="not-a-dsn"),
    pytest.param(None, {"target_session_attrs": "sometimes"}, {},
                 "invalid target_session_attrs in keyword argument: 'sometimes'", id="tsa-kwarg"),
    pytest.param(None, {"ssl": "bogus"}, {}, "'bogus'", id="ssl-str"),
    pytest.param(None, {"ssl": 42}, {}, "ssl must be", id="ssl-type"),
    pytest.param(None, {"direct_tls": "yes"}, {}, "direct_tls must be", id="direct-tls-type"),
    pytest.param(None, {"port": True}, {}, "True", id="port-bool"),
    pytest.param(None, {"port": 3.5}, {}, "invalid port in keyword argument", id="port-float"),
    pytest.param(None, {"host": 5}, {}, "invalid host in keyword argument", id="host-int"),
    pytest.param(None, {"host": ["h1", "h2", "h3"], "port": [1, 2]}, {},
                 "could not match 2 port numbers to 3 hosts", id="port-count"),
    pytest.param("postgresql://h1,h2/d?port=1,2,3", {}, {},
                 "could not match 3 port numbers to 2 hosts", id="port-count-dsn"),
    pytest.param(None, {}, {"PGPORT": "abc"}, "invalid port in environment variable PGPORT: 'abc'",
                 id="env-port"),
    pytest.param(None, {}, {"PGSSLMODE": "on"}, "environment variable PGSSLMODE: 'on'",
                 id="env-sslmode"),
    pytest.param(None, {}, {"PGTARGETSESSIONATTRS": "writable"}, "'writable'", id="env-tsa"),
    pytest.param(None, {"server_settings": {"a": 1}}, {}, "server_settings must be",
                 id="server-settings-values"),
    pytest.param(None, {"server_settings": ["a"]}, {}, "server_settings must be",
                 id="server-settings-type"),
    pytest.param(None, {"connect_timeout": "soon"}, {}, "'soon'", id="timeout-kwarg"),
]


@pytest.mark.parametrize("dsn, kwargs, env, message", ERROR_CASES)
def test_errors(parse, dsn, kwargs, env, message):
    with pytest.raises(ClientConfigurationError) as info:
        parse(dsn, env=env, **kwargs)
    assert message in str(info.value)


def test_client_configuration_error_is_interface_and_value_error(parse):
    with pytest.raises(InterfaceError):
        parse("mysql://h")
    with pytest.raises(ValueError):
        parse("mysql://h")


# --------------------------------------------------------------------------
# Passwords never leak
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dsn, kwargs", [
    pytest.param(f"mysql://u:{SECRET}@h/d", {}, id="bad-scheme"),
    pytest.param(f"postgresql://u:{SECRET}@h:abc/d", {}, id="bad-port"),
    pytest.param(f"postgresql://u:{SECRET}%ZZ@h/d", {}, id="bad-percent-in-password"),
    pytest.param(f"postgresql://u:{SECRET}%00@h/d", {}, id="nul-in-password"),
    pytest.param(f"postgresql://u@h/d?password={SECRET}&sslmode=x", {}, id="bad-sslmode"),
    pytest.param(f"host=h password='{SECRET}", {}, id="kv-unterminated"),
    pytest.param(f"host=h password=Sup3r {SECRET}", {}, id="kv-unquoted-space"),
    pytest.param(f"{SECRET}", {}, id="not-a-dsn"),
    pytest.param(None, {"password": 12345}, id="password-type"),
    pytest.param(f"postgresql://h/d?sslpassword={SECRET}&sslmode=x", {}, id="sslpassword"),
])
def test_errors_never_contain_the_password(parse, dsn, kwargs):
    with pytest.raises(ClientConfigurationError) as info:
        parse(dsn, **kwargs)
    assert SECRET not in str(info.value)
    assert "S3cret" not in str(info.value)
    assert "12345" not in str(info.value)


def test_repr_hides_passwords(parse):
    params = parse(f"postgresql://u:{SECRET}@h1,h2/d?sslpassword={SECRET}x")
    assert [h.password for h in params.hosts] == [SECRET, SECRET]
    assert params.sslpassword == SECRET + "x"
    assert SECRET not in repr(params)
    assert SECRET not in str(params)
    assert SECRET not in repr(params.hosts[0])


# --------------------------------------------------------------------------
# Password file
# --------------------------------------------------------------------------

PGPASS_CASES = [
    pytest.param("db.example.com:5432:shop:alice:pw1\n", "db.example.com", 5432, "pw1",
                 id="exact"),
    pytest.param("other:5432:shop:alice:no\n*:*:*:alice:wild\n", "db.example.com", 5432, "wild",
                 id="wildcards"),
    pytest.param("*:5432:shop:alice:first\n*:*:*:*:second\n", "db.example.com", 5432, "first",
                 id="first-match-wins"),
    pytest.param("db.example.com:5433:shop:alice:wrongport\n", "db.example.com", 5432, None,
                 id="port-mismatch"),
    pytest.param("*:*:other:alice:x\n*:*:shop:bob:y\n", "db.example.com", 5432, None,
                 id="db-and-user-mismatch"),
    pytest.param("#h:5432:shop:alice:commented\n\n*:*:*:*:real\n", "#h", 5432, "real",
                 id="comments-and-blank-lines"),
    pytest.param("*:*:*\n*:*:*:*:complete\n", "db.example.com", 5432, "complete",
                 id="short-line-skipped"),
    pytest.param("\\:\\:1:5432:*:*:v6\n", "::1", 5432, "v6", id="escaped-colons-in-host"),
    pytest.param("\\*:*:*:*:literalstar\n", "db.example.com", 5432, None,
                 id="escaped-star-is-literal"),
    pytest.param("*:*:*:*:pa\\:ss\\\\word\n", "h", 5432, "pa:ss\\word", id="password-escapes"),
    pytest.param("*:*:*:*:a:b:c\n", "h", 5432, "a:b:c", id="password-keeps-colons"),
    pytest.param("*:*:*:*:tail\\\n", "h", 5432, "tail", id="password-trailing-backslash"),
    pytest.param("*:*:*:*:crlf\r\n", "h", 5432, "crlf", id="crlf-line-ending"),
    pytest.param("*:*:*:*:\n*:*:*:*:later\n", "h", 5432, None, id="empty-password-match"),
    pytest.param("localhost:5432:shop:alice:sockpw\n", "/var/run/postgresql", 5432, "sockpw",
                 id="socket-matches-localhost"),
    pytest.param("/tmp/pg:5432:shop:alice:pathpw\n", "/tmp/pg", 5432, "pathpw",
                 id="socket-matches-its-path"),
    pytest.param("localhost:5432:shop:alice:tcp\n", "127.0.0.1", 5432, None,
                 id="ip-does-not-match-localhost"),
]


@pytest.mark.parametrize("content, host, port, password", PGPASS_CASES)
def test_pgpass_matching(parse, tmp_path, content, host, port, password):
    passfile = write_pgpass(tmp_path / "pgpass", content)
    params = parse(host=host, port=port, user="alice", database="shop",
                   env={"PGPASSFILE": passfile})
    assert params.hosts[0].password == password


def test_pgpass_resolved_per_host(parse, tmp_path):
    passfile = write_pgpass(tmp_path / "pgpass", "h1:5432:*:*:one\nh2:5433:*:*:two\n")
    params = parse("postgresql://u@h1:5432,h2:5433,h3:5434/d", env={"PGPASSFILE": passfile})
    assert [h.password for h in params.hosts] == ["one", "two", None]


def test_pgpass_default_location_is_home(parse, home):
    write_pgpass(home / ".pgpass", "*:*:*:*:fromhome\n")
    assert parse(host="h").hosts[0].password == "fromhome"


@pytest.mark.parametrize("source", ["kwarg", "dsn"])
def test_pgpass_explicit_passfile_beats_env(parse, tmp_path, source):
    chosen = write_pgpass(tmp_path / "chosen", "*:*:*:*:chosen\n")
    env_file = write_pgpass(tmp_path / "env", "*:*:*:*:env\n")
    if source == "kwarg":
        params = parse(host="h", passfile=chosen, env={"PGPASSFILE": env_file})
    else:
        params = parse(f"host=h passfile={chosen}", env={"PGPASSFILE": env_file})
    assert params.hosts[0].password == "chosen"
    assert params.passfile == chosen


@pytest.mark.parametrize("dsn, kwargs, env, password", [
    pytest.param(None, {"password": "kw"}, {}, "kw", id="kwarg"),
    pytest.param("host=h password=dsn", {}, {}, "dsn", id="dsn"),
    pytest.param(None, {}, {"PGPASSWORD": "env"}, "env", id="pgpassword"),
])
def test_pgpass_not_used_when_password_given(parse, tmp_path, dsn, kwargs, env, password):
    passfile = write_pgpass(tmp_path / "pgpass", "*:*:*:*:frompgpass\n")
    params = parse(dsn, env=dict(env, PGPASSFILE=passfile, PGHOST="h"), **kwargs)
    assert params.hosts[0].password == password


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_pgpass_with_group_or_world_access_is_skipped(parse, tmp_path, mode):
    passfile = write_pgpass(tmp_path / "pgpass", "*:*:*:*:leaky\n", mode=mode)
    with pytest.warns(UserWarning, match="has group or world access"):
        params = parse(host="h", passfile=passfile)
    assert params.hosts[0].password is None


def test_pgpass_private_modes_are_read(parse, tmp_path):
    passfile = write_pgpass(tmp_path / "pgpass", "*:*:*:*:ok\n", mode=0o400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse(host="h", passfile=passfile).hosts[0].password == "ok"


def test_pgpass_that_is_not_a_regular_file_is_skipped(parse, tmp_path):
    directory = tmp_path / "pgpass.d"
    directory.mkdir(mode=0o700)
    with pytest.warns(UserWarning, match="is not a plain file"):
        params = parse(host="h", passfile=str(directory))
    assert params.hosts[0].password is None


def test_missing_pgpass_is_silent(parse, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        params = parse(host="h", passfile=str(tmp_path / "absent"))
    assert params.hosts[0].password is None


def test_pgpass_is_not_read_when_password_given(parse, tmp_path):
    # A leaky file would warn if it were opened at all.
    passfile = write_pgpass(tmp_path / "pgpass", "*:*:*:*:x\n", mode=0o644)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse(host="h", password="given", passfile=passfile)

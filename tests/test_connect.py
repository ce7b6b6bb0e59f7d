"""connect() against a live server: every DSN form, libpq environment variables,
the password file, server_settings, the connect timeout and argument checks.

The parsing rules themselves are unit-tested in test_connect_params.py; here
each form must lead to a session as the right user, on the right database,
over the right kind of socket.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import time
import urllib.parse
from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_backend_gone
from tests.support.docstrings import undocumented_parameters
from tests.support.waiting import apoll

IDENTITY_QUERY = "SELECT current_user, current_database(), inet_server_port()"
APPNAME_QUERY = "SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()"
#: How late a connect() may end after its timeout: a loaded machine adds a
#: fraction of it; a timeout not honoured never ends (the port never answers).
PROMPT = 5.0

SCRAM_USER, SCRAM_PASSWORD = "mypg_scram", "scram-pässword"
MD5_USER, MD5_PASSWORD = "mypg_md5", "md5-pässword"


# The developer's PG* variables and ~/.pgpass are hidden: each test sets what it needs.
pytestmark = pytest.mark.usefixtures('isolated_libpq_env')


@pytest.fixture
def local_cluster(pg_cluster):
    """The session server, for tests that need its roles or its unix socket."""
    pg_cluster.require_local()
    return pg_cluster


def _uri(kw: dict[str, Any], *, netloc_host: str | None = None) -> str:
    """A postgresql:// URI for the superuser of connect_kwargs."""
    userinfo = urllib.parse.quote(kw["user"], safe="")
    if kw.get("password") is not None:
        userinfo += ":" + urllib.parse.quote(kw["password"], safe="")
    host = netloc_host if netloc_host is not None else f"{kw['host']}:{kw['port']}"
    return f"postgresql://{userinfo}@{host}/{urllib.parse.quote(kw['database'], safe='')}"


async def _identity(dsn: str | None = None, **kwargs: Any) -> tuple:
    conn = await mypgdriver.connect(dsn, **kwargs)
    try:
        return tuple(await conn.fetchrow(IDENTITY_QUERY))
    finally:
        await conn.close()


# --- URI form ---------------------------------------------------------------

async def test_uri_dsn_connects_as_given_user_and_database(connect_kwargs):
    kw = connect_kwargs
    assert await _identity(_uri(kw)) == (kw["user"], kw["database"], kw["port"])


async def test_uri_with_postgres_scheme_connects(connect_kwargs):
    kw = connect_kwargs
    dsn = _uri(kw).replace("postgresql://", "postgres://", 1)
    assert await _identity(dsn) == (kw["user"], kw["database"], kw["port"])


async def test_uri_percent_encoded_non_ascii_password_authenticates(local_cluster):
    dsn = (f"postgresql://{MD5_USER}:{urllib.parse.quote(MD5_PASSWORD)}"
           f"@{local_cluster.host}:{local_cluster.port}/postgres")
    assert "%C3%A4" in dsn
    assert await _identity(dsn) == (MD5_USER, "postgres", local_cluster.port)


async def test_uri_query_parameters_set_user_and_database(connect_kwargs, pg_cluster):
    pg_cluster.require_local()
    dsn = (f"postgresql://{connect_kwargs['host']}:{connect_kwargs['port']}/"
           f"?user=postgres&dbname=template1")
    assert await _identity(dsn) == ("postgres", "template1", connect_kwargs["port"])


async def test_keyword_arguments_override_dsn(connect_kwargs, local_cluster):
    dsn = (f"postgresql://nosuchuser@{local_cluster.host}:{local_cluster.port}/nosuchdb")
    assert await _identity(dsn, user="postgres", database="template1") == (
        "postgres", "template1", local_cluster.port)


async def test_ipv6_literal_host_in_uri(local_cluster):
    if not getattr(local_cluster, "ipv6", False):
        pytest.skip("the session server does not listen on ::1")
    conn = await mypgdriver.connect(f"postgresql://postgres@[::1]:{local_cluster.port}/postgres")
    try:
        assert await conn.fetchval("SELECT host(inet_server_addr())") == "::1"
    finally:
        await conn.close()


# --- key/value form ------------------------------------------------------------

async def test_key_value_dsn_connects(connect_kwargs):
    kw = connect_kwargs
    dsn = f"host={kw['host']} port={kw['port']} user={kw['user']} dbname={kw['database']}"
    if kw.get("password") is not None:
        dsn += " password='" + kw["password"].replace("\\", "\\\\").replace("'", "\\'") + "'"
    assert await _identity(dsn) == (kw["user"], kw["database"], kw["port"])


async def test_key_value_dsn_quoted_password_and_escaped_application_name(local_cluster):
    dsn = (f"host={local_cluster.host} port = {local_cluster.port} user={SCRAM_USER} "
           f"password='{SCRAM_PASSWORD}' dbname=postgres "
           r"application_name='it\'s my app'")
    conn = await mypgdriver.connect(dsn)
    try:
        assert tuple(await conn.fetchrow(IDENTITY_QUERY)) == (
            SCRAM_USER, "postgres", local_cluster.port)
        assert await conn.fetchval(APPNAME_QUERY) == "it's my app"
    finally:
        await conn.close()


# --- unix-domain sockets ----------------------------------------------------------

async def test_unix_socket_via_host_query_parameter(local_cluster):
    dsn = f"postgresql:///postgres?host={local_cluster.sockdir}&port={local_cluster.port}&user=postgres"
    # inet_server_port() is NULL on a unix-domain socket.
    assert await _identity(dsn) == ("postgres", "postgres", None)


async def test_unix_socket_via_percent_encoded_path(local_cluster):
    encoded = urllib.parse.quote(local_cluster.sockdir, safe="")
    assert encoded.startswith("%2F")
    dsn = f"postgresql://postgres@{encoded}:{local_cluster.port}/template1"
    assert await _identity(dsn) == ("postgres", "template1", None)


async def test_unix_socket_via_key_value_host(local_cluster):
    dsn = f"host={local_cluster.sockdir} port={local_cluster.port} user=postgres dbname=postgres"
    assert await _identity(dsn) == ("postgres", "postgres", None)


async def test_unix_socket_via_host_keyword_argument(local_cluster):
    assert await _identity(host=local_cluster.sockdir, port=local_cluster.port,
                           user="postgres", database="postgres") == ("postgres", "postgres", None)


async def test_unix_socket_scram_authentication(local_cluster):
    assert await _identity(host=local_cluster.sockdir, port=local_cluster.port, user=SCRAM_USER,
                           password=SCRAM_PASSWORD, database="postgres") == (
        SCRAM_USER, "postgres", None)


# --- host lists ----------------------------------------------------------------

async def test_uri_host_list_skips_dead_first_host(connect_kwargs, refused_port):
    kw = connect_kwargs
    dsn = _uri(kw, netloc_host=f"127.0.0.1:{refused_port},{kw['host']}:{kw['port']}")
    assert await _identity(dsn) == (kw["user"], kw["database"], kw["port"])


async def test_key_value_host_list_skips_dead_first_host(local_cluster, refused_port):
    dsn = (f"host=127.0.0.1,{local_cluster.host} port={refused_port},{local_cluster.port} "
           "user=postgres dbname=postgres")
    assert await _identity(dsn) == ("postgres", "postgres", local_cluster.port)


async def test_keyword_host_and_port_lists_skip_dead_first_host(connect_kwargs, refused_port):
    kw = dict(connect_kwargs)
    kw["host"], kw["port"] = ["127.0.0.1", kw["host"]], [refused_port, kw["port"]]
    assert await _identity(**kw) == (
        connect_kwargs["user"], connect_kwargs["database"], connect_kwargs["port"])


async def test_host_list_dead_unix_socket_then_tcp(local_cluster, tmp_path):
    dsn = (f"host={tmp_path},{local_cluster.host} port={local_cluster.port} "
           "user=postgres dbname=postgres")
    assert await _identity(dsn) == ("postgres", "postgres", local_cluster.port)


async def test_every_host_dead_raises_oserror_naming_each(refused_port):
    dsn = f"postgresql://postgres@127.0.0.1:{refused_port},localhost:{refused_port}/postgres"
    with pytest.raises(OSError) as info:
        await mypgdriver.connect(dsn, timeout=5)
    assert f"127.0.0.1:{refused_port}" in str(info.value)
    assert f"localhost:{refused_port}" in str(info.value)


async def test_single_dead_host_raises_oserror(refused_port):
    with pytest.raises(OSError):
        await mypgdriver.connect(host="127.0.0.1", port=refused_port, user="postgres", timeout=5)


# --- environment variables ------------------------------------------------------------

async def test_libpq_environment_variables_supply_every_parameter(local_cluster, monkeypatch):
    monkeypatch.setenv("PGHOST", local_cluster.host)
    monkeypatch.setenv("PGPORT", str(local_cluster.port))
    monkeypatch.setenv("PGUSER", SCRAM_USER)
    monkeypatch.setenv("PGPASSWORD", SCRAM_PASSWORD)
    monkeypatch.setenv("PGDATABASE", "template1")
    assert await _identity() == (SCRAM_USER, "template1", local_cluster.port)


async def test_pghost_may_name_a_socket_directory(local_cluster, monkeypatch):
    monkeypatch.setenv("PGHOST", local_cluster.sockdir)
    monkeypatch.setenv("PGPORT", str(local_cluster.port))
    monkeypatch.setenv("PGUSER", "postgres")
    monkeypatch.setenv("PGDATABASE", "postgres")
    assert await _identity() == ("postgres", "postgres", None)


async def test_explicit_arguments_win_over_environment(local_cluster, monkeypatch):
    monkeypatch.setenv("PGHOST", local_cluster.host)
    monkeypatch.setenv("PGPORT", str(local_cluster.port))
    monkeypatch.setenv("PGUSER", "nosuchuser")
    monkeypatch.setenv("PGDATABASE", "nosuchdb")
    assert await _identity(user="postgres", database="template1") == (
        "postgres", "template1", local_cluster.port)


async def test_pgappname_is_visible_in_pg_stat_activity(local_cluster, monkeypatch):
    monkeypatch.setenv("PGAPPNAME", "mypg-env-app")
    conn = await mypgdriver.connect(host=local_cluster.host, port=local_cluster.port,
                                    user="postgres", database="postgres")
    try:
        assert await conn.fetchval(APPNAME_QUERY) == "mypg-env-app"
        assert conn.get_settings().application_name == "mypg-env-app"
    finally:
        await conn.close()


async def test_dsn_application_name_wins_over_pgappname(local_cluster, monkeypatch):
    monkeypatch.setenv("PGAPPNAME", "from-env")
    conn = await mypgdriver.connect(
        f"postgresql://postgres@{local_cluster.host}:{local_cluster.port}/postgres"
        "?application_name=from-dsn")
    try:
        assert await conn.fetchval(APPNAME_QUERY) == "from-dsn"
    finally:
        await conn.close()


# --- password file ---------------------------------------------------------------------

def _write_pgpass(path, text: str, mode: int = 0o600) -> str:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return str(path)


def _pgpass_lines(cluster) -> str:
    # Decoys first: a wrong password for another port and for another user
    # must not be picked.
    return (
        f"{cluster.host}:{cluster.port + 1}:*:{SCRAM_USER}:wrong-port-password\n"
        f"*:*:*:{MD5_USER}:wrong-user-password\n"
        f"{cluster.host}:{cluster.port}:*:{SCRAM_USER}:{SCRAM_PASSWORD}\n"
    )


async def test_passfile_argument_supplies_password(local_cluster, tmp_path):
    passfile = _write_pgpass(tmp_path / "pgpass", _pgpass_lines(local_cluster))
    assert await _identity(host=local_cluster.host, port=local_cluster.port, user=SCRAM_USER,
                           database="postgres", passfile=passfile) == (
        SCRAM_USER, "postgres", local_cluster.port)


async def test_pgpassfile_environment_variable_supplies_password(
        local_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("PGPASSFILE", _write_pgpass(tmp_path / "pgpass", _pgpass_lines(local_cluster)))
    assert await _identity(host=local_cluster.host, port=local_cluster.port, user=SCRAM_USER,
                           database="postgres") == (SCRAM_USER, "postgres", local_cluster.port)


async def test_home_pgpass_supplies_password(local_cluster):
    home = os.environ["HOME"]
    _write_pgpass(pathlib.Path(home) / ".pgpass", _pgpass_lines(local_cluster))
    dsn = f"postgresql://{SCRAM_USER}@{local_cluster.host}:{local_cluster.port}/postgres"
    assert await _identity(dsn) == (SCRAM_USER, "postgres", local_cluster.port)


async def test_pgpass_entry_for_second_host_of_list(local_cluster, tmp_path, refused_port):
    passfile = _write_pgpass(
        tmp_path / "pgpass",
        f"127.0.0.1:{refused_port}:*:{SCRAM_USER}:wrong-dead-host-password\n"
        f"localhost:{local_cluster.port}:*:{SCRAM_USER}:{SCRAM_PASSWORD}\n")
    assert local_cluster.host == "127.0.0.1"
    dsn = (f"postgresql://{SCRAM_USER}@127.0.0.1:{refused_port},localhost:{local_cluster.port}"
           f"/postgres?passfile={urllib.parse.quote(passfile)}")
    user, database, _ = await _identity(dsn)
    assert (user, database) == (SCRAM_USER, "postgres")


async def test_explicit_password_wins_over_pgpass(local_cluster, tmp_path):
    passfile = _write_pgpass(
        tmp_path / "pgpass", f"*:*:*:{SCRAM_USER}:wrong-pgpass-password\n")
    assert await _identity(host=local_cluster.host, port=local_cluster.port, user=SCRAM_USER,
                           password=SCRAM_PASSWORD, database="postgres", passfile=passfile) == (
        SCRAM_USER, "postgres", local_cluster.port)


async def test_group_readable_pgpass_is_ignored_with_warning(local_cluster, tmp_path):
    passfile = _write_pgpass(tmp_path / "pgpass", _pgpass_lines(local_cluster), mode=0o644)
    with pytest.warns(UserWarning, match="group or world access"):
        with pytest.raises(exceptions.InterfaceError, match="no password"):
            await mypgdriver.connect(host=local_cluster.host, port=local_cluster.port,
                                     user=SCRAM_USER, database="postgres", passfile=passfile)


# --- server_settings ------------------------------------------------------------------

async def test_server_settings_are_applied_at_startup(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs, server_settings={
        "search_path": "mypg_a, public", "work_mem": "4321kB",
        "application_name": "settings-app", "DateStyle": "SQL, DMY"})
    try:
        assert await conn.fetchval("SHOW search_path") == "mypg_a, public"
        assert await conn.fetchval("SHOW work_mem") == "4321kB"
        assert await conn.fetchval("SHOW application_name") == "settings-app"
        assert await conn.fetchval("SHOW DateStyle") == "SQL, DMY"
        # Settings the server reports back are visible without a query.
        assert conn.get_settings().application_name == "settings-app"
        assert conn.get_settings().DateStyle == "SQL, DMY"
    finally:
        await conn.close()


async def test_server_settings_invalid_value_raises_server_error(connect_kwargs):
    with pytest.raises(exceptions.InvalidParameterValueError,
                       match='invalid value for parameter "work_mem": "zz"'):
        await mypgdriver.connect(**connect_kwargs, server_settings={"work_mem": "zz"})


async def test_server_settings_unknown_name_raises_server_error(connect_kwargs):
    with pytest.raises(exceptions.UndefinedObjectError, match="no_such_setting"):
        await mypgdriver.connect(**connect_kwargs, server_settings={"no_such_setting": "1"})


# --- server refusals ----------------------------------------------------------------

async def test_unknown_database_raises_invalid_catalog_name(connect_kwargs):
    with pytest.raises(exceptions.InvalidCatalogNameError,
                       match='database "mypg_no_such_db" does not exist'):
        await mypgdriver.connect(**{**connect_kwargs, "database": "mypg_no_such_db"})


async def test_unknown_role_raises_invalid_authorization_specification(local_cluster):
    with pytest.raises(exceptions.InvalidAuthorizationSpecificationError,
                       match='role "mypg_no_such_role" does not exist'):
        await mypgdriver.connect(host=local_cluster.host, port=local_cluster.port,
                                 user="mypg_no_such_role", database="postgres")


# --- timeout -----------------------------------------------------------------------

async def test_timeout_none_waits_as_long_as_it_takes(connect_kwargs):
    # documented as `float | None`; None is no limit
    conn = await mypgdriver.connect(**connect_kwargs, timeout=None)
    try:
        assert await conn.fetchval('SELECT 1') == 1
    finally:
        await conn.close()


async def test_timeout_on_server_that_never_answers(silent_port):
    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await mypgdriver.connect(host="127.0.0.1", port=silent_port, user="postgres", timeout=0.5)
    elapsed = time.monotonic() - start
    assert 0.45 <= elapsed < 0.5 + PROMPT


async def test_timeout_bounds_the_whole_host_list(silent_port):
    # 20 silent hosts: a timeout per host would take 10 s.
    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await mypgdriver.connect(host=["127.0.0.1"] * 20, port=[silent_port] * 20,
                                 user="postgres", timeout=0.5)
    assert time.monotonic() - start < 0.5 + PROMPT


async def test_timeout_on_silent_first_host_leaves_no_time_for_second(connect_kwargs, silent_port):
    # `timeout` is one budget for the whole attempt (asyncpg semantics).
    with pytest.raises(asyncio.TimeoutError):
        await mypgdriver.connect(host=["127.0.0.1", connect_kwargs["host"]],
                                 port=[silent_port, connect_kwargs["port"]],
                                 user=connect_kwargs["user"], password=connect_kwargs.get("password"),
                                 database=connect_kwargs["database"], timeout=0.4)


async def test_connect_timeout_moves_on_to_next_host(connect_kwargs, silent_port):
    # libpq's connect_timeout is per host: the silent host is given up after
    # 2 s (the smallest libpq allows) and the live one is then reached.
    kw = connect_kwargs
    start = time.monotonic()
    dsn = _uri(kw, netloc_host=f"127.0.0.1:{silent_port},{kw['host']}:{kw['port']}")
    assert await _identity(dsn + "?connect_timeout=2", timeout=10) == (
        kw["user"], kw["database"], kw["port"])
    assert 1.9 <= time.monotonic() - start < 2 + PROMPT     # (not connect()'s 10 s)


# --- argument checks -------------------------------------------------------------------

class NotAConnection:
    pass


@pytest.mark.parametrize("bad", [NotAConnection, mypgdriver.Record, object(), None])
async def test_bad_connection_class_raises_interface_error(connect_kwargs, bad):
    with pytest.raises(exceptions.InterfaceError,
                       match="connection_class is expected to be a subclass of "
                             "mypgdriver.Connection"):
        await mypgdriver.connect(**connect_kwargs, connection_class=bad)


@pytest.mark.parametrize("bad", [dict, tuple, mypgdriver.Connection, object(), None])
async def test_bad_record_class_raises_interface_error(connect_kwargs, bad):
    with pytest.raises(exceptions.InterfaceError,
                       match="record_class is expected to be a subclass of mypgdriver.Record"):
        await mypgdriver.connect(**connect_kwargs, record_class=bad)


async def test_connection_and_record_subclasses_are_used(connect_kwargs):
    class MyConnection(mypgdriver.Connection):
        __slots__ = ()

    class MyRecord(mypgdriver.Record):
        pass

    conn = await mypgdriver.connect(**connect_kwargs, connection_class=MyConnection,
                                    record_class=MyRecord)
    try:
        assert type(conn) is MyConnection
        row = await conn.fetchrow("SELECT 1 AS one")
        assert type(row) is MyRecord
        assert row["one"] == 1
    finally:
        await conn.close()


@pytest.mark.parametrize("option, value", [
    ("command_timeout", -1), ("command_timeout", 0), ("command_timeout", "abc"),
    ("command_timeout", True),
    ("statement_cache_size", -1), ("statement_cache_size", "abc"),
    ("max_cacheable_statement_size", -1), ("max_cached_statement_lifetime", -1),
])
async def test_bad_cache_size_or_command_timeout_is_a_value_error(connect_kwargs, option, value):
    # asyncpg raises ValueError; ClientConfigurationError is one (and an InterfaceError).
    with pytest.raises(ValueError) as info:
        await mypgdriver.connect(**connect_kwargs, **{option: value})
    assert type(info.value) is exceptions.ClientConfigurationError
    assert isinstance(info.value, exceptions.InterfaceError)
    assert str(info.value).startswith(f"{option} must be a ")


async def test_connection_opened_after_the_timeout_is_terminated(connect_kwargs, monitor,
                                                                  monkeypatch):
    # The open completes, but only after connect()'s timeout fired: the
    # connection nobody will receive must be closed, not leaked.
    from mypgdriver.connecting import connector

    real_connect_host = connector._connect_host
    opened: list[Any] = []

    async def late_connect_host(*args: Any) -> Any:
        conn = await real_connect_host(*args)
        opened.append(conn)
        try:
            await asyncio.sleep(60)         # the timeout fires here
        except asyncio.CancelledError:
            pass                            # ... and the open finishes anyway
        return conn

    monkeypatch.setattr(connector, "_connect_host", late_connect_host)
    with pytest.raises(asyncio.TimeoutError):
        # (long enough for the real open to finish first on a loaded machine)
        await mypgdriver.connect(**{**connect_kwargs, "timeout": 3.0})
    assert len(opened) == 1
    late = opened[0]
    pid = late.get_server_pid()
    # The open finishes after connect() gave up: it is closed as it finishes.
    assert await apoll(late.is_closed, bool)
    await wait_backend_gone(monitor, pid)


async def test_numbers_and_booleans_given_as_strings_are_read_as_asyncpg_reads_them(
        connect_kwargs):
    # A URL's query (SQLAlchemy passes ?command_timeout=30 as a str).
    conn = await mypgdriver.connect(
        **connect_kwargs, command_timeout="30", timeout=" 20 ", statement_cache_size="50",
        max_cached_statement_lifetime="60.5", max_cacheable_statement_size="2048",
        max_pipeline="8", direct_tls="false")
    try:
        session = conn._session
        assert session.command_timeout == 30.0
        assert session.statements.cache.max_size == 50
        assert session.statements.max_cacheable_size == 2048
        assert conn._protocol.max_pipeline == 8
        assert await conn.fetchval("SELECT $1::int", 3) == 3
    finally:
        await conn.close()


@pytest.mark.parametrize("option, value", [
    ("command_timeout", "-1"), ("command_timeout", "0"), ("command_timeout", "soon"),
    ("statement_cache_size", "-5"), ("statement_cache_size", "many"),
    ("max_pipeline", "0"), ("max_pipeline", "1.5"), ("direct_tls", "maybe"),
])
async def test_strings_that_are_not_valid_numbers_are_refused_as_before(connect_kwargs,
                                                                       option, value):
    with pytest.raises(exceptions.InterfaceError, match=f"^{option} must be a "):
        await mypgdriver.connect(**connect_kwargs, **{option: value})


def test_every_parameter_of_connect_is_documented_in_its_docstring():
    # help(mypgdriver.connect) and IDEs show the docstring: a new parameter
    # must be described there, not only in docs/api/connection.rst.
    assert undocumented_parameters(mypgdriver.connect) == []

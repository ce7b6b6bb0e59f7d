"""Authentication against a live server: trust, cleartext, md5 and SCRAM-SHA-256.

The roles come from AUTH_ROLES in tests/support/fixtures.py; their passwords
are not ASCII, so the client's encoding of the password (and SASLprep for
SCRAM) is exercised.  The protocol details are unit-tested in test_auth.py;
here the server is the judge.
"""
from __future__ import annotations

import traceback
import urllib.parse
from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions

#: (role, password, the pg_hba.conf method the session cluster gives the role)
PASSWORD_ROLES = [
    ("mypg_clear", "clear-pässword", "password"),
    ("mypg_md5", "md5-pässword", "md5"),
    ("mypg_scram", "scram-pässword", "scram-sha-256"),
]
ROLE_IDS = [method for _, _, method in PASSWORD_ROLES]

#: How the driver names each method in its "no password" error.
METHOD_NAMES = {"password": "password", "md5": "md5", "scram-sha-256": "SCRAM-SHA-256"}

SASLPREP_ROLE = "authlive_saslprep"
SASLPREP_STORED_PASSWORD = "IX-full-ä"
#: Equal to the stored password after SASLprep: the soft hyphen maps to
#: nothing and the fullwidth letters fold to ASCII under NFKC.
SASLPREP_CLIENT_PASSWORD = "I\u00adX-\uff46\uff55\uff4c\uff4c-ä"


# No PGPASSWORD or ~/.pgpass from the developer may supply a password.
pytestmark = pytest.mark.usefixtures('isolated_libpq_env')


@pytest.fixture
def cluster(pg_cluster):
    """The session server: the roles and their pg_hba.conf lines are ours."""
    pg_cluster.require_local()
    return pg_cluster


@pytest.fixture(params=["tcp", "unix"])
def address(request, cluster) -> dict[str, Any]:
    """host/port keyword arguments for TCP and for the unix-domain socket."""
    host = cluster.host if request.param == "tcp" else cluster.sockdir
    return {"host": host, "port": cluster.port}


@pytest.fixture(scope="module")
def saslprep_role(pg_cluster) -> str:
    pg_cluster.require_local()
    if SASLPREP_ROLE not in pg_cluster.roles:
        pg_cluster.create_role(SASLPREP_ROLE, SASLPREP_STORED_PASSWORD, method="scram-sha-256")
    return SASLPREP_ROLE


GSS_ROLE = "authlive_gss"


@pytest.fixture(scope="module")
def gss_role(pg_cluster) -> str:
    """A role whose pg_hba.conf line asks for GSSAPI, which the driver does not speak."""
    pg_cluster.require_local()
    if GSS_ROLE not in pg_cluster.psql(f"SELECT rolname FROM pg_roles WHERE rolname = '{GSS_ROLE}'"):
        pg_cluster.psql(f"CREATE ROLE {GSS_ROLE} LOGIN")
        pg_cluster.add_hba_lines([f"host all {GSS_ROLE} 127.0.0.1/32 gss"])
    errors = pg_cluster.psql(
        f"SELECT auth_method, error FROM pg_hba_file_rules WHERE '{GSS_ROLE}' = ANY(user_name)")
    if errors.strip() != "gss|":
        # A build without GSSAPI cannot load a pg_hba.conf with a gss line, and
        # would then ignore every later change to the file: take it out again.
        line = f"host all {GSS_ROLE} 127.0.0.1/32 gss"
        if line in pg_cluster.hba_lines:
            pg_cluster.hba_lines.remove(line)
            pg_cluster.add_hba_lines([])
        pytest.skip(f"this server cannot use gss in pg_hba.conf: {errors!r}")
    return GSS_ROLE


async def _current_user(**kwargs: Any) -> str:
    conn = await mypgdriver.connect(database="postgres", **kwargs)
    try:
        return await conn.fetchval("SELECT current_user")
    finally:
        await conn.close()


def _all_text(exc: BaseException) -> str:
    """Everything a user could see of an exception: message, repr, args, causes."""
    parts = ["".join(traceback.format_exception(type(exc), exc, exc.__traceback__))]
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts += [str(exc), repr(exc), repr(exc.args)]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


async def test_roles_use_the_methods_the_tests_claim(conn, cluster):
    # Guards the meaning of every test below: each role must really be
    # authenticated by its method over TCP, not fall through to trust.
    rows = await conn.fetch(
        "SELECT user_name[1] AS role, auth_method FROM pg_hba_file_rules "
        "WHERE type = 'host' AND address = '127.0.0.1' AND user_name[1] LIKE 'mypg_%' "
        "ORDER BY line_number")
    methods = {row["role"]: row["auth_method"] for row in rows}
    assert methods["mypg_trust"] == "trust"
    for role, _, method in PASSWORD_ROLES:
        assert methods[role] == method


# --- success ----------------------------------------------------------------------

async def test_trust_without_password(address):
    assert await _current_user(user="mypg_trust", **address) == "mypg_trust"


async def test_trust_ignores_a_given_password(address):
    assert await _current_user(user="mypg_trust", password="unused", **address) == "mypg_trust"


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_password_method_with_non_ascii_password(address, role, password, method):
    assert await _current_user(user=role, password=password, **address) == role


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_password_in_uri_percent_encoded(cluster, role, password, method):
    dsn = (f"postgresql://{role}:{urllib.parse.quote(password, safe='')}"
           f"@{cluster.host}:{cluster.port}/postgres")
    conn = await mypgdriver.connect(dsn)
    try:
        assert await conn.fetchval("SELECT current_user") == role
    finally:
        await conn.close()


async def test_scram_applies_saslprep_to_the_password(cluster, saslprep_role):
    assert await _current_user(user=saslprep_role, password=SASLPREP_CLIENT_PASSWORD,
                               host=cluster.host, port=cluster.port) == saslprep_role


async def test_scram_saslprep_role_rejects_a_different_password(cluster, saslprep_role):
    # Without this, the test above would also pass if any password worked.
    with pytest.raises(exceptions.InvalidPasswordError):
        await _current_user(user=saslprep_role, password="IX-full-a",
                            host=cluster.host, port=cluster.port)


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_callable_password(cluster, role, password, method):
    calls = []

    def get_password() -> str:
        calls.append(1)
        return password

    assert await _current_user(user=role, password=get_password,
                               host=cluster.host, port=cluster.port) == role
    assert calls == [1]


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_async_callable_password(cluster, role, password, method):
    calls = []

    async def get_password() -> str:
        calls.append(1)
        return password

    assert await _current_user(user=role, password=get_password,
                               host=cluster.host, port=cluster.port) == role
    assert calls == [1]


async def test_callable_returning_wrong_password_is_rejected(cluster):
    with pytest.raises(exceptions.InvalidPasswordError):
        await _current_user(user="mypg_scram", password=lambda: "not-the-password",
                            host=cluster.host, port=cluster.port)


# --- failure ----------------------------------------------------------------------

@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_wrong_password_raises_invalid_password_error(address, role, password, method):
    with pytest.raises(exceptions.InvalidPasswordError) as info:
        await _current_user(user=role, password="wrong-" + password, **address)
    assert info.value.sqlstate == "28P01"
    assert str(info.value) == f'password authentication failed for user "{role}"'


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_wrong_password_differing_only_by_accent(cluster, role, password, method):
    # 'ä' sent as Latin-1 or left unnormalised must not match 'a', and vice versa.
    with pytest.raises(exceptions.InvalidPasswordError):
        await _current_user(user=role, password=password.replace("ä", "a"),
                            host=cluster.host, port=cluster.port)


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_missing_password_raises_clear_error(address, role, password, method):
    with pytest.raises(exceptions.InterfaceError) as info:
        await _current_user(user=role, **address)
    assert str(info.value) == (
        f"the server requested {METHOD_NAMES[method]} authentication for user "
        f"'{role}', but no password was provided")


def _returns_none():
    return None


async def _async_returns_none():
    return None


@pytest.mark.parametrize("password", [None, _returns_none, _async_returns_none],
                         ids=["absent", "callable", "async-callable"])
@pytest.mark.parametrize("role,method", [(r, m) for r, _, m in PASSWORD_ROLES], ids=ROLE_IDS)
async def test_no_password_is_an_invalid_password_error_as_in_asyncpg(cluster, role, method,
                                                                      password):
    # asyncpg reports the server's InvalidPasswordError; ours is found before
    # sending, says why, and is an InterfaceError too.
    with pytest.raises(exceptions.InvalidPasswordError) as info:
        await _current_user(user=role, password=password, host=cluster.host, port=cluster.port)
    assert type(info.value) is exceptions.PasswordRequiredError
    assert isinstance(info.value, exceptions.InterfaceError)
    assert info.value.sqlstate == "28P01"
    assert info.value.message == str(info.value) == (
        f"the server requested {METHOD_NAMES[method]} authentication for user "
        f"'{role}', but no password was provided")


async def test_md5_unavailable_is_an_internal_client_error(cluster, monkeypatch):
    # A FIPS build of OpenSSL makes hashlib.md5() raise ValueError; asyncpg
    # reports that as InternalClientError, and so do we (not a bare ValueError).
    def refuse_md5(*args, **kwargs):
        raise ValueError("[digital envelope routines] unsupported")

    monkeypatch.setattr("hashlib.md5", refuse_md5)
    with pytest.raises(exceptions.InternalClientError) as info:
        await _current_user(user="mypg_md5", password="md5-pässword",
                            host=cluster.host, port=cluster.port)
    assert type(info.value) is exceptions.InternalClientError
    assert type(info.value.__cause__) is ValueError
    assert str(info.value) == (
        "the server requested md5 authentication, but this Python cannot compute MD5 "
        "([digital envelope routines] unsupported); use scram-sha-256 on the server")


async def test_unsupported_method_raises_error_naming_it(cluster, gss_role):
    with pytest.raises(exceptions.InterfaceError, match="GSSAPI") as info:
        await _current_user(user=gss_role, password="unused", host=cluster.host, port=cluster.port)
    assert "does not support" in str(info.value)


# --- the password never shows ------------------------------------------------------------

@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_password_absent_from_connection_repr(cluster, role, password, method):
    dsn = (f"postgresql://{role}:{urllib.parse.quote(password, safe='')}"
           f"@{cluster.host}:{cluster.port}/postgres")
    conn = await mypgdriver.connect(dsn)
    try:
        for text in (repr(conn), str(conn)):
            assert password not in text
            assert urllib.parse.quote(password, safe="") not in text
    finally:
        await conn.close()
    assert password not in repr(conn)


@pytest.mark.parametrize("role,password,method", PASSWORD_ROLES, ids=ROLE_IDS)
async def test_password_absent_from_wrong_password_error(cluster, role, password, method):
    wrong = "wrong-" + password
    with pytest.raises(exceptions.InvalidPasswordError) as info:
        await mypgdriver.connect(host=cluster.host, port=cluster.port, user=role,
                                 password=wrong, database="postgres")
    text = _all_text(info.value)
    assert wrong not in text
    assert password not in text


async def test_password_absent_from_network_error(tmp_path):
    secret = "s3cret-pässword"
    dsn = f"postgresql://u:{urllib.parse.quote(secret)}@/db?host={tmp_path}&port=5432"
    with pytest.raises(OSError) as info:
        await mypgdriver.connect(dsn, timeout=5)
    assert secret not in _all_text(info.value)
    assert urllib.parse.quote(secret) not in _all_text(info.value)


@pytest.mark.parametrize("dsn", [
    "postgresql://u:s3cret-pw@host:notaport/db",
    "host=h port=1,2,3 password=s3cret-pw",
    "host=h password='s3cret-pw",
    "postgresql://u:s3cret-pw@h/db?sslmode=bogus",
])
async def test_password_absent_from_dsn_errors(dsn):
    with pytest.raises(exceptions.ClientConfigurationError) as info:
        await mypgdriver.connect(dsn, timeout=5)
    assert "s3cret-pw" not in _all_text(info.value)

"""Behaviour that differs between PostgreSQL 13 and 18, tested on whichever server runs.

The suite runs against every major from 13 to 18 (tools/test_versions.sh);
each test here states what a given version does and skips, naming the
version, where a feature does not exist yet.  Features covered elsewhere:
multiranges (14+) in test_codec_containers.py and test_codec_arrays.py, the
numeric infinities (14+) in test_codec_numeric.py, protocol 3.2 (18) in
test_protocol_version.py.
"""
from __future__ import annotations

import uuid

import pytest

import mypgdriver


def require(server_version: int, major: int, feature: str) -> None:
    """Skip unless the server is `major` or newer."""
    if server_version < major * 10000:
        pytest.skip(f"{feature} needs PostgreSQL {major}, this is {server_version // 10000}")


# --- ParameterStatus: what the server reports at startup and after SET ---------------------

async def test_reported_settings_follow_the_server_version(conn, server_version):
    reported = set(conn._protocol.get_server_parameters())
    # Reported by every version the driver supports.
    assert {"server_version", "client_encoding", "DateStyle", "TimeZone",
            "integer_datetimes", "standard_conforming_strings", "is_superuser",
            "session_authorization", "application_name"} <= reported
    # 14: what target_session_attrs needs, so no query is needed to check it.
    assert ({"default_transaction_read_only", "in_hot_standby"} <= reported) == (
        server_version >= 140000)
    # 16: the SCRAM iteration count; 18: search_path.
    assert ("scram_iterations" in reported) == (server_version >= 160000)
    assert ("search_path" in reported) == (server_version >= 180000)


async def test_search_path_change_is_reported_from_18(conn, server_version):
    require(server_version, 18, "search_path in ParameterStatus")
    await conn.execute("SET search_path = pg_catalog, public")
    assert conn.get_settings().search_path == "pg_catalog, public"


async def test_hot_standby_state_comes_without_a_query_from_14(conn, server_version):
    require(server_version, 14, "in_hot_standby in ParameterStatus")
    settings = conn.get_settings()
    assert settings.in_hot_standby == "off"
    await conn.execute("SET default_transaction_read_only = on")
    assert settings.default_transaction_read_only == "on"
    await conn.execute("RESET default_transaction_read_only")


# --- authentication defaults ----------------------------------------------------------------

async def test_default_password_hash_decides_the_md5_line_method(pg_cluster, server_version):
    # password_encryption defaults to scram-sha-256 from 14 on (md5 before).
    # A pg_hba.conf "md5" line then runs SCRAM for a role whose password was
    # stored as a SCRAM verifier: the driver must follow what the server asks.
    pg_cluster.require_local()
    role = f"mypg_default_hash_{uuid.uuid4().hex[:8]}"
    password = "défault-hash"
    expected = "md5" if server_version < 140000 else "scram-sha-256"
    assert pg_cluster.psql("SHOW password_encryption").strip() == expected
    pg_cluster.psql(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        pg_cluster.add_hba_lines([f"host all {role} 127.0.0.1/32 md5"])
        stored = pg_cluster.psql(
            f"SELECT rolpassword FROM pg_authid WHERE rolname = '{role}'").strip()
        assert stored.startswith("md5" if expected == "md5" else "SCRAM-SHA-256$")
        conn = await mypgdriver.connect(host=pg_cluster.host, port=pg_cluster.port,
                                        user=role, password=password, database="postgres")
        try:
            if expected == "md5":
                assert conn._protocol.auth_method == "md5"
            else:
                assert conn._protocol.auth_method.startswith("SCRAM-SHA-256")
            assert await conn.fetchval("SELECT current_user") == role
        finally:
            await conn.close()
    finally:
        pg_cluster.psql(f"DROP ROLE {role}")


async def test_scram_iterations_setting_from_16(conn, server_version):
    require(server_version, 16, "scram_iterations")
    assert conn.get_settings().scram_iterations == "4096"


# --- SQL features ----------------------------------------------------------------------------

@pytest.fixture
async def stock(conn):
    await conn.execute("CREATE TEMP TABLE mypg_stock (item text PRIMARY KEY, qty int)")
    await conn.execute("INSERT INTO mypg_stock VALUES ('a', 1), ('b', 2)")
    yield conn
    await conn.execute("DROP TABLE mypg_stock")


MERGE = """
    MERGE INTO mypg_stock s USING (VALUES ('a', 10), ('c', 30)) AS v(item, qty)
    ON s.item = v.item
    WHEN MATCHED THEN UPDATE SET qty = s.qty + v.qty
    WHEN NOT MATCHED THEN INSERT VALUES (v.item, v.qty)
"""


async def test_merge_status_tag_from_15(stock, server_version):
    require(server_version, 15, "MERGE")
    assert await stock.execute(MERGE) == "MERGE 2"
    # The extended protocol (arguments, a prepared statement) gives the same tag.
    statement = await stock.prepare(MERGE.replace("10", "$1::int"))
    assert await statement.fetch(5) == []
    assert statement.get_statusmsg() == "MERGE 2"
    rows = await stock.fetch("SELECT item, qty FROM mypg_stock ORDER BY item")
    assert [tuple(r) for r in rows] == [("a", 16), ("b", 2), ("c", 60)]


async def test_merge_is_a_syntax_error_before_15(stock, server_version):
    if server_version >= 150000:
        pytest.skip("PostgreSQL 15 and later have MERGE")
    with pytest.raises(mypgdriver.PostgresSyntaxError):
        await stock.execute(MERGE)


async def test_merge_returning_rows_from_17(stock, server_version):
    require(server_version, 17, "MERGE ... RETURNING")
    rows = await stock.fetch(MERGE + " RETURNING merge_action(), s.item, s.qty")
    assert sorted(tuple(r) for r in rows) == [("INSERT", "c", 30), ("UPDATE", "a", 11)]


async def test_numeric_power_display_scale(conn, server_version):
    # 16 computes integer powers of numerics exactly, with display scale 0;
    # before, the result carried 16 decimal zeros.  Either way the decoded
    # Decimal keeps the server's scale.
    value, text = await conn.fetchrow("SELECT 2::numeric ^ 70, (2::numeric ^ 70)::text")
    assert value == 2 ** 70
    assert str(value) == text
    if server_version >= 160000:
        assert value.as_tuple().exponent == 0
    else:
        assert value.as_tuple().exponent == -16


# --- pg_stat_activity ----------------------------------------------------------------------------

async def test_pg_stat_activity_shows_the_session(conn, server_version):
    await conn.execute("SET application_name = 'mypg_versions'")
    row = await conn.fetchrow(
        "SELECT application_name, state, backend_type, leader_pid "
        "FROM pg_stat_activity WHERE pid = $1", conn.get_server_pid())
    assert tuple(row) == ("mypg_versions", "active", "client backend", None)


async def test_pg_stat_activity_query_id_from_14(connect_kwargs, server_version):
    require(server_version, 14, "pg_stat_activity.query_id")
    conn = await mypgdriver.connect(**connect_kwargs,
                                    server_settings={"compute_query_id": "on"})
    try:
        # Statements run through the extended protocol get an identifier too.
        query_id = await conn.fetchval(
            "SELECT query_id FROM pg_stat_activity WHERE pid = $1", conn.get_server_pid())
        assert isinstance(query_id, int) and query_id != 0
    finally:
        await conn.close()

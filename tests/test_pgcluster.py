"""The throwaway-server machinery itself, checked with psql (not our driver)."""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.fixtures import AUTH_ROLES
from tools.pgcluster import ClusterNotLocal, ExternalCluster, PgCluster, PsqlError

PASSWORD_ROLES = [name for name, (password, _) in AUTH_ROLES.items() if password is not None]


def test_psql_returns_rows_unaligned(pg_cluster):
    assert pg_cluster.psql("SELECT 1, 'ä'; SELECT 'two'") == "1|ä\ntwo\n"


def test_psql_raises_with_server_message(pg_cluster):
    with pytest.raises(PsqlError) as info:
        pg_cluster.psql("SELECT 1/0")
    assert info.value.returncode == 3  # ON_ERROR_STOP: error in the script
    assert "division by zero" in info.value.stderr


def test_version_is_server_version_num(pg_cluster, server_version):
    assert server_version == int(pg_cluster.psql("SHOW server_version_num"))
    assert server_version >= 90000


def test_fast_settings_applied(pg_cluster):
    pg_cluster.require_local()
    out = pg_cluster.psql(
        "SHOW fsync; SHOW synchronous_commit; SHOW full_page_writes; SHOW max_connections"
    )
    assert out == "off\noff\noff\n300\n"


def test_server_listens_on_tcp_port(pg_cluster):
    out = pg_cluster.psql("SELECT inet_server_addr(), inet_server_port()", host=pg_cluster.host)
    assert out == f"127.0.0.1|{pg_cluster.port}\n"


def test_trust_role_needs_no_password(pg_cluster):
    pg_cluster.require_local()
    for host in (pg_cluster.host, None):
        assert pg_cluster.psql("SELECT current_user", user="mypg_trust", host=host) == "mypg_trust\n"


@pytest.mark.parametrize("role", PASSWORD_ROLES)
@pytest.mark.parametrize("via", ["tcp", "unix"])
def test_password_role_logs_in_with_its_password(pg_cluster, role, via):
    pg_cluster.require_local()
    host = pg_cluster.host if via == "tcp" else None
    password = AUTH_ROLES[role][0]
    assert pg_cluster.psql("SELECT current_user", user=role, password=password, host=host) == f"{role}\n"


@pytest.mark.parametrize("role", PASSWORD_ROLES)
@pytest.mark.parametrize("via", ["tcp", "unix"])
def test_password_role_rejects_wrong_password(pg_cluster, role, via):
    pg_cluster.require_local()
    host = pg_cluster.host if via == "tcp" else None
    with pytest.raises(PsqlError) as info:
        pg_cluster.psql("SELECT 1", user=role, password="wrong-pässword", host=host)
    assert info.value.returncode == 2  # could not connect
    assert f'password authentication failed for user "{role}"' in info.value.stderr


@pytest.mark.parametrize("role", PASSWORD_ROLES)
def test_password_role_rejects_missing_password(pg_cluster, role):
    pg_cluster.require_local()
    with pytest.raises(PsqlError) as info:
        pg_cluster.psql("SELECT 1", user=role, host=pg_cluster.host)
    assert "no password supplied" in info.value.stderr


def test_ipv6_loopback_uses_role_lines(pg_cluster):
    pg_cluster.require_local()
    if not pg_cluster.ipv6:
        pytest.skip("no IPv6 loopback on this machine")
    out = pg_cluster.psql("SELECT current_user", user="mypg_md5", password="md5-pässword", host="::1")
    assert out == "mypg_md5\n"
    with pytest.raises(PsqlError):
        pg_cluster.psql("SELECT 1", user="mypg_md5", password="wrong", host="::1")


def test_roles_use_the_hba_method_and_hash_asked_for(pg_cluster):
    pg_cluster.require_local()
    rules = pg_cluster.psql(
        "SELECT DISTINCT user_name[1], auth_method FROM pg_hba_file_rules"
        " WHERE user_name[1] LIKE 'mypg_%' ORDER BY 1"
    )
    assert rules == "mypg_clear|password\nmypg_md5|md5\nmypg_scram|scram-sha-256\nmypg_trust|trust\n"
    hashes = pg_cluster.psql(
        "SELECT rolname, CASE WHEN rolpassword IS NULL THEN 'none'"
        " WHEN rolpassword ~ '^md5[0-9a-f]{32}$' THEN 'md5'"
        " WHEN rolpassword LIKE 'SCRAM-SHA-256$%' THEN 'scram' END"
        " FROM pg_authid WHERE rolname LIKE 'mypg_%' ORDER BY 1"
    )
    assert hashes == "mypg_clear|scram\nmypg_md5|md5\nmypg_scram|scram\nmypg_trust|none\n"
    assert pg_cluster.roles["mypg_md5"].method == "md5"


def test_dsn_works_with_psql(pg_cluster):
    pg_cluster.require_local()
    dsn = pg_cluster.dsn("mypg_scram", "scram-pässword")
    assert dsn == f"postgresql://mypg_scram:scram-p%C3%A4ssword@127.0.0.1:{pg_cluster.port}/postgres"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    out = subprocess.run(
        [pg_cluster.psql_path, "-X", "-A", "-t", "-w", "-d", dsn, "-c", "SELECT current_user"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout
    assert out == "mypg_scram\n"


def test_external_cluster_parses_dsn_and_runs_psql(pg_cluster):
    pg_cluster.require_local()
    ext = ExternalCluster(pg_cluster.dsn("mypg_md5", "md5-pässword"))
    assert (ext.host, ext.port, ext.user, ext.password, ext.database) == (
        "127.0.0.1", pg_cluster.port, "mypg_md5", "md5-pässword", "postgres"
    )
    assert ext.psql("SELECT current_user") == "mypg_md5\n"
    assert ext.version == pg_cluster.version
    assert ext.dsn() == pg_cluster.dsn("mypg_md5", "md5-pässword")
    with pytest.raises(ClusterNotLocal):
        ext.require_local()


def test_external_cluster_socket_dsn():
    ext = ExternalCluster("postgresql:///mydb?host=/run/pg&port=6543&user=bob&sslmode=disable")
    parsed = (ext.host, ext.port, ext.user, ext.password, ext.database)
    assert parsed == ("/run/pg", 6543, "bob", None, "mydb")
    assert ext.dsn() == "postgresql://bob@/mydb?host=%2Frun%2Fpg&port=6543&sslmode=disable"


def test_private_cluster_lifecycle(pg_cluster):
    pg_cluster.require_local()  # a DSN run usually means no server binaries either
    with PgCluster(settings={"work_mem": "5MB"}) as pg:
        assert pg.running
        assert pg.port != pg_cluster.port
        assert pg.psql("SHOW work_mem") == "5MB\n"
        pg.psql("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)")

        pg.set_settings({"work_mem": "7MB"})  # reload() waits until the server re-read it
        assert pg.psql("SHOW work_mem") == "7MB\n"

        pg.restart()
        assert pg.psql("SELECT x FROM kept") == "42\n"

        pg.stop()
        assert not pg.running
        with pytest.raises(PsqlError):
            pg.psql("SELECT 1")
        basedir, sockdir = pg.basedir, pg.sockdir
    assert not os.path.exists(basedir)
    assert not os.path.exists(sockdir)

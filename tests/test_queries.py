"""The query API on a live server: fetch, fetchrow, fetchval, execute, Record
rows, server information and the statement cache."""
from __future__ import annotations

from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_backend_gone

PREPARED_QUERY = "SELECT name, statement FROM pg_prepared_statements ORDER BY name"


class MyRecord(mypgdriver.Record):
    pass


class OtherRecord(mypgdriver.Record):
    pass


async def _prepared_statements(conn) -> list[tuple[str, str]]:
    return [tuple(row) for row in await conn.fetch(PREPARED_QUERY)]


# --- fetch / fetchrow / fetchval ------------------------------------------------------

async def test_fetch_returns_every_row_with_exact_values(conn):
    rows = await conn.fetch(
        "SELECT g AS n, g * 2 AS double, 'row ' || g AS label, g % 2 = 0 AS even "
        "FROM generate_series(1, 3) g ORDER BY g")
    assert [tuple(r) for r in rows] == [
        (1, 2, "row 1", False), (2, 4, "row 2", True), (3, 6, "row 3", False)]
    assert all(type(r) is mypgdriver.Record for r in rows)


async def test_fetch_with_arguments(conn):
    rows = await conn.fetch(
        "SELECT g, $2::text FROM generate_series(1, $1::int) g ORDER BY g", 2, "tag")
    assert [tuple(r) for r in rows] == [(1, "tag"), (2, "tag")]


async def test_fetch_many_rows(conn):
    rows = await conn.fetch(
        "SELECT g, repeat('x', g % 97) AS pad FROM generate_series(1, 20000) g ORDER BY g")
    assert len(rows) == 20000
    assert sum(r[0] for r in rows) == 20000 * 20001 // 2
    assert all(r["pad"] == "x" * (r[0] % 97) for r in rows)


async def test_fetch_large_text_argument_and_result(conn):
    big = "äbc" * 400_000
    assert await conn.fetchval("SELECT $1::text || 'z'", big) == big + "z"
    assert await conn.fetchval("SELECT length($1::text)", big) == 1_200_000


async def test_fetch_with_many_arguments(conn):
    count = 300
    query = "SELECT " + " + ".join(f"${i}::int" for i in range(1, count + 1))
    assert await conn.fetchval(query, *range(count)) == sum(range(count))


async def test_fetchrow_returns_first_row_only(conn):
    row = await conn.fetchrow("SELECT g, -g AS neg FROM generate_series(5, 7) g ORDER BY g")
    assert tuple(row) == (5, -5)
    assert row["neg"] == -5


async def test_fetchval_default_column_is_first(conn):
    assert await conn.fetchval("SELECT 10 AS a, 20 AS b") == 10


async def test_fetchval_column_by_index(conn):
    assert await conn.fetchval("SELECT 10 AS a, 20 AS b, 30 AS c", column=1) == 20
    assert await conn.fetchval("SELECT 10 AS a, 20 AS b, 30 AS c", column=-1) == 30


async def test_fetchval_column_by_name(conn):
    assert await conn.fetchval("SELECT 10 AS a, $1::text AS b", "named", column="b") == "named"


async def test_fetchval_bad_column_raises(conn):
    with pytest.raises(IndexError):
        await conn.fetchval("SELECT 1 AS a", column=1)
    with pytest.raises(KeyError):
        await conn.fetchval("SELECT 1 AS a", column="nope")
    assert await conn.fetchval("SELECT 2") == 2


async def test_fetchval_null_value(conn):
    assert await conn.fetchval("SELECT NULL::int") is None


async def test_empty_results(conn):
    query = "SELECT g FROM generate_series(1, 3) g WHERE g > $1"
    assert await conn.fetch(query, 5) == []
    assert await conn.fetchrow(query, 5) is None
    assert await conn.fetchval(query, 5) is None
    assert await conn.fetchval(query, 5, column="g") is None
    assert await conn.fetch("SELECT 1 WHERE false") == []


async def test_row_without_columns(conn):
    rows = await conn.fetch("SELECT")
    assert len(rows) == 1
    assert len(rows[0]) == 0
    assert list(rows[0].keys()) == []
    assert repr(rows[0]) == "<Record>"


# --- execute ---------------------------------------------------------------------

async def test_execute_returns_status_tags(conn):
    assert await conn.execute("CREATE TEMP TABLE q_tags (a int)") == "CREATE TABLE"
    assert await conn.execute("INSERT INTO q_tags VALUES ($1), ($2)", 1, 2) == "INSERT 0 2"
    assert await conn.execute("INSERT INTO q_tags SELECT generate_series(3, 5)") == "INSERT 0 3"
    assert await conn.execute("UPDATE q_tags SET a = a + $1", 10) == "UPDATE 5"
    assert await conn.execute("DELETE FROM q_tags WHERE a > $1", 13) == "DELETE 2"
    assert await conn.execute("SELECT * FROM q_tags WHERE a > $1", 0) == "SELECT 3"
    assert await conn.execute("SELECT * FROM q_tags WHERE a > $1", 100) == "SELECT 0"
    assert await conn.execute("SET work_mem = '5MB'") == "SET"
    assert await conn.execute("DO $$ BEGIN RAISE NOTICE 'a notice'; END $$") == "DO"
    assert await conn.fetch("SELECT a FROM q_tags ORDER BY a") == [(11,), (12,), (13,)]


async def test_execute_without_args_runs_several_statements(conn):
    tag = await conn.execute(
        "CREATE TEMP TABLE q_multi (a int); "
        "INSERT INTO q_multi VALUES (1), (2), (3); "
        "UPDATE q_multi SET a = a * 10 WHERE a > 1")
    # The tag is the last statement's; the earlier ones ran too.
    assert tag == "UPDATE 2"
    assert [r[0] for r in await conn.fetch("SELECT a FROM q_multi ORDER BY a")] == [1, 20, 30]


async def test_execute_several_statements_ending_with_select(conn):
    assert await conn.execute("SELECT 1; SELECT g FROM generate_series(1, 4) g;") == "SELECT 4"


async def test_execute_with_returning_clause_gives_tag(conn):
    await conn.execute("CREATE TEMP TABLE q_ret (a int)")
    assert await conn.execute("INSERT INTO q_ret VALUES ($1) RETURNING a", 9) == "INSERT 0 1"
    assert await conn.fetch("INSERT INTO q_ret VALUES ($1) RETURNING a", 10) == [(10,)]


async def test_execute_multi_statement_is_one_implicit_transaction(conn):
    await conn.execute("CREATE TEMP TABLE q_atomic (a int)")
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.execute("INSERT INTO q_atomic VALUES (1); SELECT 1 / 0")
    # A simple Query message is one implicit transaction: the insert is undone.
    assert await conn.fetchval("SELECT count(*) FROM q_atomic") == 0


# --- record_class -------------------------------------------------------------------

async def test_record_class_per_call(conn):
    rows = await conn.fetch("SELECT g FROM generate_series(1, 2) g", record_class=MyRecord)
    assert [type(r) for r in rows] == [MyRecord, MyRecord]
    assert [r["g"] for r in rows] == [1, 2]
    row = await conn.fetchrow("SELECT $1::int AS v", 3, record_class=MyRecord)
    assert type(row) is MyRecord and row["v"] == 3
    # The per-call class does not stick to the connection or the statement.
    assert type(await conn.fetchrow("SELECT $1::int AS v", 3)) is mypgdriver.Record


async def test_record_class_per_connection_and_override(open_conn):
    conn = await open_conn(record_class=MyRecord)
    assert type(await conn.fetchrow("SELECT 1")) is MyRecord
    assert [type(r) for r in await conn.fetch("SELECT $1::int", 1)] == [MyRecord]
    assert type(await conn.fetchrow("SELECT 1", record_class=OtherRecord)) is OtherRecord
    assert type(await conn.fetchrow("SELECT 1")) is MyRecord


async def test_bad_record_class_per_call_raises_interface_error(conn):
    with pytest.raises(exceptions.InterfaceError, match="record_class is expected to be a subclass"):
        await conn.fetchrow("SELECT 1", record_class=dict)
    assert await conn.fetchval("SELECT 2") == 2


async def test_record_class_with_own_constructor_is_refused(conn):
    class WithInit(mypgdriver.Record):
        def __init__(self, *args):
            pass

    with pytest.raises(exceptions.InterfaceError, match="must not redefine __new__ or __init__"):
        await conn.fetchrow("SELECT 1", record_class=WithInit)


async def test_bad_record_class_per_call_leaves_connection_usable(conn):
    with pytest.raises((exceptions.InterfaceError, TypeError)):
        await conn.fetch("SELECT 1", record_class=dict)
    assert await conn.fetchval("SELECT 41 + 1") == 42


# --- Record on live rows ------------------------------------------------------------

@pytest.fixture
async def row(conn) -> Any:
    return await conn.fetchrow(
        "SELECT 1 AS id, $1::text AS name, NULL::int AS missing, true AS flag", "x")


async def test_record_indexing(row):
    assert row[0] == 1
    assert row[1] == "x"
    assert row[2] is None
    assert row[-1] is True
    assert row[-4] == 1
    with pytest.raises(IndexError, match="record index out of range"):
        row[4]
    with pytest.raises(IndexError):
        row[-5]


async def test_record_slicing(row):
    assert row[1:3] == ("x", None)
    assert type(row[1:3]) is tuple
    assert row[::2] == (1, None)
    assert row[:] == (1, "x", None, True)
    assert row[10:] == ()


async def test_record_by_name_and_get(row):
    assert row["id"] == 1
    assert row["name"] == "x"
    assert row["missing"] is None
    assert row.get("name") == "x"
    assert row.get("missing", "default") is None
    assert row.get("nope") is None
    assert row.get("nope", 42) == 42
    with pytest.raises(KeyError, match="nope"):
        row["nope"]


async def test_record_mapping_views(row):
    assert list(row.keys()) == ["id", "name", "missing", "flag"]
    assert list(row.values()) == [1, "x", None, True]
    assert list(row.items()) == [("id", 1), ("name", "x"), ("missing", None), ("flag", True)]
    assert dict(row) == {"id": 1, "name": "x", "missing": None, "flag": True}
    assert "name" in row
    assert "nope" not in row


async def test_record_sequence_protocol(row):
    assert len(row) == 4
    assert list(row) == [1, "x", None, True]
    assert tuple(row) == (1, "x", None, True)
    first, second, *rest = row
    assert (first, second, rest) == (1, "x", [None, True])


async def test_record_equality_and_hash_like_tuple(conn, row):
    same_values = await conn.fetchrow(
        "SELECT 1 AS a, 'x'::text AS b, NULL::int AS c, true AS d")
    assert row == (1, "x", None, True)
    assert row == same_values  # names do not take part, as with asyncpg
    assert row != (1, "x", None, False)
    assert row != [1, "x", None, True]
    assert hash(row) == hash((1, "x", None, True))
    assert len({row, same_values}) == 1


async def test_record_is_immutable(row):
    with pytest.raises(TypeError):
        row[0] = 2
    with pytest.raises(TypeError):
        row["id"] = 2
    with pytest.raises(AttributeError):
        row.id = 2


async def test_record_repr(row, conn):
    assert repr(row) == "<Record id=1 name='x' missing=None flag=True>"
    assert repr(await conn.fetchrow("SELECT 'it''s' AS q, 1.5::float8 AS f")) == (
        "<Record q=\"it's\" f=1.5>")
    assert repr(await conn.fetchrow("SELECT 1 AS v", record_class=MyRecord)) == "<MyRecord v=1>"


async def test_record_duplicate_column_names(conn):
    row = await conn.fetchrow("SELECT 1 AS a, 2 AS a")
    assert tuple(row) == (1, 2)
    assert list(row.keys()) == ["a", "a"]
    assert row["a"] in (1, 2)  # asyncpg gives one of them; which is unspecified
    assert repr(row) == "<Record a=1 a=2>"


async def test_record_column_names_as_the_server_sends_them(conn):
    row = await conn.fetchrow('SELECT 1 AS "Mixed Case", 2 AS "ünï", 3')
    assert list(row.keys()) == ["Mixed Case", "ünï", "?column?"]
    assert row["ünï"] == 2


# --- server information -------------------------------------------------------------

async def test_get_server_version_matches_show_server_version_num(conn):
    num = int(await conn.fetchval("SHOW server_version_num"))
    version = conn.get_server_version()
    assert isinstance(version, mypgdriver.ServerVersion)
    assert num >= 100000  # the tests run on PostgreSQL 10 or later
    assert tuple(version) == (num // 10000, 0, num % 10000, "final", 0)
    assert (version.major, version.minor, version.micro) == (num // 10000, 0, num % 10000)
    assert version >= (num // 10000, 0)
    assert version < (num // 10000 + 1,)


async def test_get_server_version_matches_show_server_version(conn):
    text = await conn.fetchval("SHOW server_version")  # e.g. '15.18 (Debian 15.18-0+deb12u1)'
    major, minor = text.split()[0].split(".")[:2]
    assert conn.get_server_version()[:3] == (int(major), 0, int(minor))


async def test_get_settings_attributes(conn):
    settings = conn.get_settings()
    assert settings.server_version == await conn.fetchval("SHOW server_version")
    assert settings.client_encoding == "UTF8"
    assert settings.server_encoding == await conn.fetchval("SHOW server_encoding")
    assert settings.TimeZone == await conn.fetchval("SHOW TimeZone")
    assert settings.DateStyle == await conn.fetchval("SHOW DateStyle")
    assert settings.integer_datetimes == "on"
    assert settings.standard_conforming_strings == "on"
    assert settings.session_authorization == await conn.fetchval("SELECT session_user")
    with pytest.raises(AttributeError):
        settings.no_such_setting  # noqa: B018 (the attribute access is what raises)


async def test_get_settings_follows_set(conn):
    await conn.execute("SET TimeZone = 'Europe/Paris'")
    assert conn.get_settings().TimeZone == "Europe/Paris"
    await conn.execute("SET application_name = 'renamed'")
    assert conn.get_settings().application_name == "renamed"


async def test_get_server_pid_is_backend_pid(conn):
    assert conn.get_server_pid() == await conn.fetchval("SELECT pg_backend_pid()")


async def test_is_in_transaction(conn):
    assert conn.is_in_transaction() is False
    await conn.execute("BEGIN")
    assert conn.is_in_transaction() is True
    await conn.fetchval("SELECT $1::int", 1)
    assert conn.is_in_transaction() is True
    await conn.execute("COMMIT")
    assert conn.is_in_transaction() is False


# --- closing -----------------------------------------------------------------------

async def test_close_ends_the_server_session(connect_kwargs, conn):
    other = await mypgdriver.connect(**connect_kwargs)
    pid = other.get_server_pid()
    assert other.is_closed() is False
    await other.close()
    assert other.is_closed() is True
    await other.close()  # closing twice is harmless
    await wait_backend_gone(conn, pid)


async def test_terminate_ends_the_server_session(connect_kwargs, conn):
    other = await mypgdriver.connect(**connect_kwargs)
    pid = other.get_server_pid()
    other.terminate()
    assert other.is_closed() is True
    await wait_backend_gone(conn, pid)


# --- statement cache ----------------------------------------------------------------

async def test_repeated_query_reuses_its_prepared_statement(conn):
    query = "SELECT $1::int + 1"
    before = await _prepared_statements(conn)
    assert await conn.fetchval(query, 1) == 2
    after_first = await _prepared_statements(conn)
    added = [s for s in after_first if s not in before]
    assert [statement for _, statement in added] == [query]

    assert await conn.fetchval(query, 2) == 3
    assert await conn.fetch(query, 3) == [(4,)]
    assert await conn.execute(query, 4) == "SELECT 1"
    assert await _prepared_statements(conn) == after_first


async def test_statement_cache_size_zero_leaves_no_prepared_statements(open_conn):
    conn = await open_conn(statement_cache_size=0)
    for i in range(3):
        assert await conn.fetchval("SELECT $1::int * 2", i) == i * 2
        assert await conn.fetchrow("SELECT $1::text AS t", str(i)) == (str(i),)
    assert await conn.fetch(PREPARED_QUERY) == []


async def test_small_statement_cache_deallocates_evicted_statements(open_conn):
    conn = await open_conn(statement_cache_size=2)
    for i in range(10):
        assert await conn.fetchval(f"SELECT $1::int + {i}", 1) == 1 + i
    # At most the cache's entries plus the one being run may exist.
    assert len(await conn.fetch(PREPARED_QUERY)) <= 3

"""fetchmany(), the reset query, and pool proxies passing isinstance checks."""
import pytest

import mypgdriver
from mypgdriver import exceptions


async def test_fetchmany_returns_rows_of_every_execution_in_order(conn):
    await conn.execute("CREATE TEMP TABLE fm (a int PRIMARY KEY)")
    rows = await conn.fetchmany("INSERT INTO fm VALUES ($1) RETURNING a, a * 10 AS b",
                                [(3,), (1,), (2,)])
    assert [tuple(r) for r in rows] == [(3, 30), (1, 10), (2, 20)]
    assert rows[0]["b"] == 30


async def test_fetchmany_is_atomic(conn):
    await conn.execute("CREATE TEMP TABLE fm2 (a int PRIMARY KEY)")
    with pytest.raises(exceptions.UniqueViolationError):
        await conn.fetchmany("INSERT INTO fm2 VALUES ($1) RETURNING a", [(1,), (2,), (1,)])
    assert await conn.fetchval("SELECT count(*) FROM fm2") == 0
    with pytest.raises(exceptions.DataError, match=r"\$1 in row 1"):
        await conn.fetchmany("INSERT INTO fm2 VALUES ($1) RETURNING a", [(1,), ("x",)])
    assert await conn.fetchval("SELECT count(*) FROM fm2") == 0


async def test_prepared_fetchmany_and_record_class(conn):
    class MyRecord(mypgdriver.Record):
        pass

    stmt = await conn.prepare("SELECT $1::int + 1 AS n")
    assert [r["n"] for r in await stmt.fetchmany([(1,), (41,)])] == [2, 42]
    rows = await conn.fetchmany("SELECT $1::int AS n", [(5,)], record_class=MyRecord)
    assert type(rows[0]) is MyRecord and rows[0]["n"] == 5


async def test_executemany_still_returns_none(conn):
    assert await conn.executemany("SELECT $1::int", [(1,), (2,)]) is None


async def test_reset_drops_temp_tables_and_listeners(conn):
    await conn.execute("CREATE TEMP TABLE leftover (a int)")
    await conn.add_listener("chan", lambda *args: None)
    assert "DISCARD TEMP" in conn.get_reset_query()
    await conn.reset()
    assert await conn.fetchval("SELECT to_regclass('pg_temp.leftover')") is None
    assert conn._listeners == {}
    assert await conn.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0


async def test_pool_proxy_is_a_connection(connect_kwargs):
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1) as pool:
        async with pool.acquire() as con:
            assert isinstance(con, mypgdriver.Connection)
            assert type(con) is not mypgdriver.Connection
        assert [r[0] for r in await pool.fetchmany("SELECT $1::int", [(7,), (8,)])] == [7, 8]
    assert not isinstance(object(), mypgdriver.Connection)

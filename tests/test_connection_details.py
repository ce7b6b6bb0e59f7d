"""Smaller Connection behaviours: reset customisation, error context, codec lookup by schema."""
import asyncio

import pytest

import mypgdriver
from mypgdriver import exceptions


async def test_reset_uses_an_overridden_get_reset_query(connect_kwargs):
    class Custom(mypgdriver.Connection):
        def get_reset_query(self):
            return "SET application_name = 'was_reset'"

    conn = await mypgdriver.connect(**connect_kwargs, connection_class=Custom)
    try:
        await conn.execute("CREATE TEMP TABLE kept (a int)")
        await conn.reset()
        assert await conn.fetchval("SHOW application_name") == "was_reset"
        # The custom query replaced the default one: the temp table survives.
        assert await conn.fetchval("SELECT to_regclass('pg_temp.kept')::text") is not None
    finally:
        await conn.close()


async def test_reset_forgets_log_listeners(conn):
    conn.add_log_listener(lambda *args: None)
    await conn.reset()
    assert not conn._log_listeners


async def test_server_error_of_simple_query_carries_the_query(conn):
    with pytest.raises(exceptions.DivisionByZeroError) as info:
        await conn.execute("SELECT 1/0")
    assert info.value.query == "SELECT 1/0"
    with pytest.raises(exceptions.DivisionByZeroError) as info:
        await conn.fetchval("SELECT 1/$1::int", 0)
    assert info.value.query == "SELECT 1/$1::int"


async def test_fetchmany_is_reported_to_query_loggers(conn):
    logged = []
    conn.add_query_logger(logged.append)
    await conn.fetchmany("SELECT $1::int", [(1,), (2,)])
    await asyncio.sleep(0.05)   # loggers run as callbacks after the call
    assert [(q.query, q.args) for q in logged] == [("SELECT $1::int", [(1,), (2,)])]


async def test_set_type_codec_respects_the_schema(conn):
    await conn.execute("DROP SCHEMA IF EXISTS codec_s CASCADE; CREATE SCHEMA codec_s")
    try:
        # jsonb lives in pg_catalog, not in codec_s: refused, not silently found.
        with pytest.raises(ValueError, match="unknown type: codec_s.jsonb"):
            await conn.set_type_codec("jsonb", schema="codec_s", encoder=str, decoder=str)
        # In the default schema a standard SQL name still resolves.
        await conn.set_type_codec("character varying", encoder=str, decoder=lambda s: s.upper())
        assert await conn.fetchval("SELECT 'abc'::varchar") == "ABC"
    finally:
        await conn.reset_type_codec("character varying")
        await conn.execute("DROP SCHEMA codec_s CASCADE")

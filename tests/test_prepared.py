"""Prepared statements on a live server: running them, describing them,
explain(), their names on the server and how long the server keeps them."""
from __future__ import annotations

import gc
import json

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.prepared import PreparedStatement
from mypgdriver.types import Attribute, Type

INT4 = Type(23, 'int4', 'scalar', 'pg_catalog')
TEXT = Type(25, 'text', 'scalar', 'pg_catalog')


class MyRecord(mypgdriver.Record):
    pass


async def _server_names(conn) -> set[str]:
    return {r[0] for r in await conn.fetch(
        "SELECT name FROM pg_prepared_statements WHERE NOT from_sql")}


# --- running ----------------------------------------------------------------------------------

async def test_fetch_fetchrow_fetchval(conn):
    stmt = await conn.prepare("SELECT g AS n, $1::text || g AS label "
                              "FROM generate_series(1, $2::int) g ORDER BY g")
    assert isinstance(stmt, PreparedStatement)
    assert [tuple(r) for r in await stmt.fetch('x', 3)] == [(1, 'x1'), (2, 'x2'), (3, 'x3')]
    assert tuple(await stmt.fetchrow('y', 2)) == (1, 'y1')
    assert await stmt.fetchrow('y', 0) is None
    assert await stmt.fetchval('z', 5) == 1
    assert await stmt.fetchval('z', 5, column=1) == 'z1'
    assert await stmt.fetchval('z', 5, column='label') == 'z1'
    assert await stmt.fetchval('z', 0) is None


async def test_record_class(conn):
    stmt = await conn.prepare("SELECT 1 AS a", record_class=MyRecord)
    row = await stmt.fetchrow()
    assert type(row) is MyRecord and row['a'] == 1
    with pytest.raises(exceptions.InterfaceError, match='record_class'):
        await conn.prepare("SELECT 1", record_class=dict)


async def test_bad_argument_is_data_error(conn):
    stmt = await conn.prepare("SELECT $1::int")
    with pytest.raises(exceptions.DataError, match=r'\$1'):
        await stmt.fetchval('seven')
    with pytest.raises(exceptions.InterfaceError, match='expects 1 argument'):
        await stmt.fetchval(1, 2)
    assert await stmt.fetchval(7) == 7


async def test_get_statusmsg(conn):
    await conn.execute("DROP TABLE IF EXISTS ps_t; CREATE TABLE ps_t (a int)")
    try:
        select = await conn.prepare("SELECT generate_series(1, 5)")
        assert select.get_statusmsg() is None
        await select.fetch()
        assert select.get_statusmsg() == 'SELECT 5'
        insert = await conn.prepare("INSERT INTO ps_t VALUES (1), (2)")
        assert await insert.fetch() == []
        assert insert.get_statusmsg() == 'INSERT 0 2'
        returning = await conn.prepare("INSERT INTO ps_t VALUES (3) RETURNING a")
        assert [tuple(r) for r in await returning.fetch()] == [(3,)]
        assert returning.get_statusmsg() == 'INSERT 0 1'
        update = await conn.prepare("UPDATE ps_t SET a = a + $1::int")
        await update.fetch(10)
        assert update.get_statusmsg() == 'UPDATE 3'
    finally:
        await conn.execute("DROP TABLE IF EXISTS ps_t")


async def test_statusmsg_follows_each_run_when_tags_share_a_prefix(conn):
    # The last tag is reused when the next one is identical: 'SELECT 1' must
    # not be taken for 'SELECT 10' or 'SELECT 1' for 'SELECT 100'.
    stmt = await conn.prepare("SELECT generate_series(1, $1::int)")
    seen = []
    for n in (1, 1, 10, 100, 1, 0, 1):
        await stmt.fetch(n)
        seen.append(stmt.get_statusmsg())
    assert seen == ['SELECT 1', 'SELECT 1', 'SELECT 10', 'SELECT 100', 'SELECT 1',
                    'SELECT 0', 'SELECT 1']


async def test_get_query_and_get_name(conn):
    stmt = await conn.prepare("SELECT 42")
    assert stmt.get_query() == "SELECT 42"
    assert stmt.get_name().startswith('__mypg_')
    assert stmt.get_name() in await _server_names(conn)


# --- description -------------------------------------------------------------------------------

async def test_get_parameters_and_attributes_of_builtin_types(conn):
    stmt = await conn.prepare("SELECT $1::int AS n, $2::text AS t, $3::int[] AS arr, "
                              "$4::int4range AS r")
    assert stmt.get_parameters() == (
        INT4, TEXT, Type(1007, 'int4[]', 'array', 'pg_catalog'),
        Type(3904, 'int4range', 'range', 'pg_catalog'))
    assert stmt.get_attributes() == (
        Attribute('n', INT4), Attribute('t', TEXT),
        Attribute('arr', Type(1007, 'int4[]', 'array', 'pg_catalog')),
        Attribute('r', Type(3904, 'int4range', 'range', 'pg_catalog')))
    assert (await conn.prepare("SELECT 1 WHERE false")).get_parameters() == ()


async def test_get_parameters_and_attributes_of_user_types(conn):
    await conn.execute("""
        DROP TYPE IF EXISTS ps_mood CASCADE; CREATE TYPE ps_mood AS ENUM ('a', 'b');
        DROP DOMAIN IF EXISTS ps_posint CASCADE; CREATE DOMAIN ps_posint AS int CHECK (VALUE > 0);
        DROP TYPE IF EXISTS ps_pair CASCADE; CREATE TYPE ps_pair AS (x int, y text)""")
    try:
        stmt = await conn.prepare(
            "SELECT $1::ps_mood AS m, $2::ps_posint AS d, $3::ps_pair AS p, $4::ps_mood[] AS ms")
        oids = dict(await conn.fetch(
            "SELECT typname, oid FROM pg_type WHERE typname IN "
            "('ps_mood', 'ps_posint', 'ps_pair', '_ps_mood')"))
        mood = Type(oids['ps_mood'], 'ps_mood', 'scalar', 'public')
        moods = Type(oids['_ps_mood'], 'ps_mood[]', 'array', 'public')
        pair = Type(oids['ps_pair'], 'ps_pair', 'composite', 'public')
        # A domain is described by its base type, under the domain's OID
        # (what asyncpg reports); result columns carry the base type's OID.
        assert stmt.get_parameters() == (
            mood, Type(oids['ps_posint'], 'int4', 'scalar', 'pg_catalog'), pair, moods)
        assert stmt.get_attributes() == (
            Attribute('m', mood), Attribute('d', INT4), Attribute('p', pair),
            Attribute('ms', moods))
    finally:
        await conn.execute("DROP TYPE IF EXISTS ps_mood CASCADE; "
                           "DROP DOMAIN IF EXISTS ps_posint CASCADE; "
                           "DROP TYPE IF EXISTS ps_pair CASCADE")


async def test_descriptions_match_asyncpg(conn, connect_kwargs, server_version):
    if server_version < 140000:
        pytest.skip("int4multirange needs PostgreSQL 14")
    asyncpg = pytest.importorskip('asyncpg')
    query = ("SELECT $1::int4multirange AS mr, ROW(1, 2) AS rec, NULL::json AS j, "
             "NULL::varchar(3) AS vc, NULL::text[][] AS tt, $2::numeric AS num")
    other = await asyncpg.connect(**connect_kwargs)
    try:
        theirs = await other.prepare(query)
        expected_params = [tuple(t) for t in theirs.get_parameters()]
        expected_attrs = [(a.name, tuple(a.type)) for a in theirs.get_attributes()]
    finally:
        await other.close()
    ours = await conn.prepare(query)
    assert [tuple(t) for t in ours.get_parameters()] == expected_params
    assert [(a.name, tuple(a.type)) for a in ours.get_attributes()] == expected_attrs


# --- explain ------------------------------------------------------------------------------------

async def test_explain_returns_the_parsed_json_plan(conn):
    stmt = await conn.prepare("SELECT g FROM generate_series(1, $1::int) g")
    plan = await stmt.explain(10)
    assert isinstance(plan, list) and len(plan) == 1
    node = plan[0]['Plan']
    assert node['Node Type'] == 'Function Scan'
    assert node['Function Name'] == 'generate_series'
    assert 'Actual Rows' not in node
    assert node['Output'] == ['g']          # VERBOSE


async def test_explain_analyze_runs_the_statement_without_keeping_its_effects(conn):
    await conn.execute("DROP TABLE IF EXISTS ps_ex; CREATE TABLE ps_ex (a int)")
    try:
        stmt = await conn.prepare("INSERT INTO ps_ex SELECT generate_series(1, $1::int)")
        plan = await stmt.explain(7, analyze=True)
        assert plan[0]['Plan']['Node Type'] == 'ModifyTable'
        assert plan[0]['Plan']['Plans'][0]['Actual Rows'] == 7
        assert await conn.fetchval("SELECT count(*) FROM ps_ex") == 0
        assert conn.is_in_transaction() is False
        # Inside a transaction: rolled back to a savepoint, the rest stays.
        async with conn.transaction():
            await conn.execute("INSERT INTO ps_ex VALUES (100)")
            await stmt.explain(3, analyze=True)
            assert await conn.fetchval("SELECT count(*) FROM ps_ex") == 1
        assert await conn.fetchval("SELECT count(*) FROM ps_ex") == 1
    finally:
        await conn.execute("DROP TABLE IF EXISTS ps_ex")


# --- names and lifetime on the server --------------------------------------------------------------

async def test_named_prepared_statement(conn):
    stmt = await conn.prepare("SELECT $1::int + 100", name='ps_my_name')
    assert stmt.get_name() == 'ps_my_name'
    assert 'ps_my_name' in await _server_names(conn)
    assert await stmt.fetchval(1) == 101
    with pytest.raises(exceptions.DuplicatePreparedStatementError):
        await conn.prepare("SELECT 2", name='ps_my_name')
    assert await stmt.fetchval(2) == 102
    del stmt
    gc.collect()
    assert 'ps_my_name' not in await _server_names(conn)


async def test_prepare_reuses_the_cached_statement(conn):
    query = "SELECT $1::int AS reused"
    await conn.fetchval(query, 1)
    before = await _server_names(conn)
    stmt = await conn.prepare(query)
    assert await stmt.fetchval(5) == 5
    assert await _server_names(conn) == before
    assert stmt.get_name() in before


async def test_statement_survives_cache_eviction_while_referenced(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs, statement_cache_size=2)
    try:
        stmt = await conn.prepare("SELECT $1::int * 11")
        name = stmt.get_name()
        for i in range(6):      # evicts the prepared statement's cache entry
            assert await conn.fetchval(f"SELECT $1::int + {i}", 1) == 1 + i
        assert name in await _server_names(conn)
        assert await stmt.fetchval(3) == 33
        del stmt
        gc.collect()
        assert name not in await _server_names(conn)
    finally:
        await conn.close()


async def test_unreferenced_statement_outside_the_cache_is_closed(connect_kwargs):
    # Too long for the cache: a named statement of its own.
    conn = await mypgdriver.connect(**connect_kwargs, max_cacheable_statement_size=10)
    try:
        stmt = await conn.prepare("SELECT $1::int - 1")
        name = stmt.get_name()
        assert name.startswith('__mypg_')         # named, but not cached
        assert await stmt.fetchval(10) == 9
        assert name in await _server_names(conn)
        del stmt
        gc.collect()
        assert name not in await _server_names(conn)
    finally:
        await conn.close()


async def test_cached_statement_stays_while_only_the_cache_holds_it(conn):
    query = "SELECT $1::int AS held_by_cache"
    stmt = await conn.prepare(query)
    name = stmt.get_name()
    del stmt
    gc.collect()
    assert name in await _server_names(conn)
    assert await conn.fetchval(query, 4) == 4


async def test_methods_on_a_closed_connection_raise(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs)
    stmt = await conn.prepare("SELECT 1")
    await conn.close()
    with pytest.raises(exceptions.InterfaceError,
                       match=r'^cannot call PreparedStatement.fetch\(\): the underlying '
                             r'connection is closed$'):
        await stmt.fetch()
    with pytest.raises(exceptions.InterfaceError, match='connection is closed'):
        stmt.get_parameters()
    with pytest.raises(exceptions.InterfaceError, match='connection is closed'):
        await conn.prepare("SELECT 1")


async def test_prepare_error_is_the_server_error(conn):
    with pytest.raises(exceptions.UndefinedTableError):
        await conn.prepare("SELECT * FROM ps_no_such_table")
    assert await conn.fetchval("SELECT 1") == 1


async def test_codec_change_after_prepare_applies_to_the_statement(conn):
    stmt = await conn.prepare("SELECT '{\"a\": 1}'::json")
    assert await stmt.fetchval() == '{"a": 1}'
    await conn.set_type_codec('json', schema='pg_catalog', encoder=json.dumps,
                              decoder=json.loads)
    assert await stmt.fetchval() == {'a': 1}

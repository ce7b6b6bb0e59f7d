"""The statement cache on a live server: hits and evictions seen in
pg_prepared_statements, lifetime and size limits, the unnamed statement, and
recovery from schema changes (ALTER TABLE, ALTER TYPE)."""
from __future__ import annotations

import asyncio

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.core import statement_cache

# Longer than the max_cacheable_statement_size used below, so that checking
# the server's statements does not itself go through (and disturb) the cache.
LIST_STATEMENTS = (
    "SELECT name, statement FROM pg_catalog.pg_prepared_statements "
    "WHERE NOT from_sql ORDER BY prepare_time, name /* not cached: longer than the limit */")


async def _statements(conn) -> dict[str, str]:
    """query text -> server statement name."""
    return {r['statement']: r['name'] for r in await conn.fetch(LIST_STATEMENTS)}


@pytest.fixture
async def small_cache(open_conn):
    """A connection whose cache keeps 3 statements of at most 100 characters."""
    return await open_conn(statement_cache_size=3, max_cacheable_statement_size=100)


# --- hits, evictions, limits -------------------------------------------------------------

async def test_cache_hits_reuse_one_server_statement(conn, server_version):
    query = "SELECT $1::int * 3 AS cache_hit"
    for i in range(5):
        assert await conn.fetchval(query, i) == i * 3
    rows = await conn.fetch(
        "SELECT name FROM pg_prepared_statements WHERE statement = $1", query)
    assert len(rows) == 1
    if server_version >= 140000:
        runs = await conn.fetchval(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements "
            "WHERE statement = $1", query)
        assert runs == 5      # the same server statement ran five times


async def test_evicted_statements_are_closed_on_the_server(small_cache):
    conn = small_cache
    queries = [f"SELECT $1::int + {i}" for i in range(5)]
    for i, query in enumerate(queries[:3]):
        assert await conn.fetchval(query, 1) == 1 + i
    first = await _statements(conn)
    assert set(first) == set(queries[:3])

    assert await conn.fetchval(queries[3], 1) == 4     # evicts queries[0]
    assert await conn.fetchval(queries[4], 1) == 5     # evicts queries[1]
    now = await _statements(conn)
    assert set(now) == set(queries[2:])
    assert now[queries[2]] == first[queries[2]]         # kept entries keep their name


async def test_recently_used_entries_survive_eviction(small_cache):
    conn = small_cache
    a, b, c, d = (f"SELECT $1::int * {i}" for i in range(2, 6))
    for query in (a, b, c):
        await conn.fetchval(query, 1)
    await conn.fetchval(a, 1)          # a becomes the most recently used
    await conn.fetchval(d, 1)          # so b is evicted, not a
    assert set(await _statements(conn)) == {a, c, d}


async def test_statement_lifetime_limit(connect_kwargs):
    # The cache's clock is the test's: on a loaded machine the 0.2 s could
    # pass between the first two calls.
    now = [1000.0]
    statement_cache.use_clock(lambda: now[0])
    conn = await mypgdriver.connect(**connect_kwargs, max_cached_statement_lifetime=0.2,
                                    max_cacheable_statement_size=100)
    try:
        query = "SELECT $1::int AS aging"
        await conn.fetchval(query, 1)
        first = (await _statements(conn))[query]
        now[0] += 0.15
        await conn.fetchval(query, 2)
        assert (await _statements(conn))[query] == first
        now[0] += 0.15                  # 0.3 s since it was prepared
        assert await conn.fetchval(query, 3) == 3
        statements = await _statements(conn)
        assert statements[query] != first
        assert first not in statements.values()
    finally:
        statement_cache.use_clock(None)
        await conn.close()


async def test_statements_above_the_size_limit_are_not_cached(small_cache):
    conn = small_cache
    big = "SELECT $1::int AS big /*" + "x" * 200 + "*/"
    for i in range(3):
        assert await conn.fetchval(big, i) == i
    assert await _statements(conn) == {}


async def test_zero_size_limit_means_no_limit(open_conn):
    conn = await open_conn(max_cacheable_statement_size=0)
    big = "SELECT $1::int AS unlimited /*" + "x" * 20000 + "*/"
    await conn.fetchval(big, 1)
    await conn.fetchval(big, 2)
    rows = await conn.fetch(
        "SELECT 1 FROM pg_prepared_statements WHERE statement = $1", big)
    assert len(rows) == 1


# --- statement_cache_size=0: only the unnamed statement -----------------------------------------

async def test_no_cache_uses_only_the_unnamed_statement(open_conn):
    conn = await open_conn(statement_cache_size=0)
    for i in range(3):
        assert await conn.fetchval("SELECT $1::int * 2", i) == i * 2
        assert await conn.execute("SELECT $1::text", 'x') == 'SELECT 1'
    assert await conn.fetch(LIST_STATEMENTS) == []


async def test_no_cache_with_types_that_need_introspection(open_conn):
    # Introspection runs its own query between preparing the unnamed
    # statement and binding it; the Bind must still run the user's query.
    conn = await open_conn(statement_cache_size=0)
    try:
        await conn.execute("""
            DROP TYPE IF EXISTS sc_mood CASCADE;
            CREATE TYPE sc_mood AS ENUM ('calm', 'busy')""")
        assert await conn.fetchval("SELECT $1::sc_mood", 'busy') == 'busy'
        assert await conn.fetch("SELECT unnest(ARRAY['calm', 'busy']::sc_mood[]) AS m") == [
            ('calm',), ('busy',)]
    finally:
        await conn.execute("DROP TYPE IF EXISTS sc_mood CASCADE")
        await conn.close()


async def test_no_cache_bad_argument_leaves_the_connection_in_sync(open_conn):
    conn = await open_conn(statement_cache_size=0)
    with pytest.raises(exceptions.DataError):
        await conn.fetchval("SELECT $1::int", 'not a number')
    assert await conn.fetchval("SELECT $1::text", 'fine') == 'fine'
    assert await conn.fetchval("SELECT 3") == 3


async def test_no_cache_prepare_uses_the_unnamed_statement(open_conn):
    # What a transaction-mode pooler needs: nothing left on the server.
    conn = await open_conn(statement_cache_size=0)
    stmt = await conn.prepare("SELECT $1::int * 10 AS tenfold")
    assert stmt.get_name() == ''
    for i in range(4):
        assert await stmt.fetchval(i) == i * 10
        assert await stmt.fetch(i) == [(i * 10,)]
        assert await conn.fetch(LIST_STATEMENTS) == []
    assert stmt.get_statusmsg() == 'SELECT 1'


async def test_no_cache_prepared_statement_with_cursor_and_executemany(open_conn):
    conn = await open_conn(statement_cache_size=0)
    try:
        await conn.execute("DROP TABLE IF EXISTS sc_nocache; CREATE TABLE sc_nocache (n int)")
        insert = await conn.prepare("INSERT INTO sc_nocache VALUES ($1)")
        select = await conn.prepare("SELECT n FROM sc_nocache WHERE n >= $1 ORDER BY n")
        await insert.executemany([(i,) for i in range(10)])
        await insert.executemany([(10,), (11,)])
        async with conn.transaction():
            assert [r['n'] async for r in select.cursor(3, prefetch=4)] == list(range(3, 12))
            cur = await select.cursor(8)
            assert await cur.fetch(2) == [(8,), (9,)]
            assert await cur.fetchrow() == (10,)
        assert await select.fetchval(11) == 11
        assert await conn.fetch(LIST_STATEMENTS) == []
    finally:
        await conn.execute("DROP TABLE IF EXISTS sc_nocache")
        await conn.close()


async def test_no_cache_interleaved_prepared_statements_each_parse_their_own(open_conn):
    # Each Parse replaces the unnamed statement: every run parses its own.
    conn = await open_conn(statement_cache_size=0)
    add = await conn.prepare("SELECT $1::int + 1 AS plus")
    join = await conn.prepare("SELECT $1::text || $2::text AS joined")
    for i in range(3):
        assert await add.fetchval(i) == i + 1
        assert await join.fetchval('a', str(i)) == f'a{i}'
    # Pipelined on the one connection, in both orders.
    results = await asyncio.gather(*(
        add.fetchval(i) if i % 2 else join.fetchval('x', str(i)) for i in range(20)))
    assert results == [i + 1 if i % 2 else f'x{i}' for i in range(20)]
    assert await conn.fetch(LIST_STATEMENTS) == []


async def test_no_cache_prepared_statement_whose_result_type_changed_raises(open_conn):
    # The unnamed statement is parsed again with each run, so the server
    # cannot report 0A000: the driver compares the new description with
    # the result types the statement was prepared with.
    conn = await open_conn(statement_cache_size=0)
    try:
        await conn.execute("""
            DROP TABLE IF EXISTS sc_retype;
            CREATE TABLE sc_retype (n int4);
            INSERT INTO sc_retype VALUES (1234)""")
        stmt = await conn.prepare("SELECT n FROM sc_retype")
        assert await stmt.fetchval() == 1234
        await conn.execute("ALTER TABLE sc_retype ALTER COLUMN n TYPE text")
        # '1234' is 4 bytes: decoded as int4 it would be a wrong number.
        with pytest.raises(exceptions.InvalidCachedStatementError,
                           match='result types of the statement changed'):
            await stmt.fetchval()
        assert [a.type.name for a in stmt.get_attributes()] == ['int4']
        assert await conn.fetchval("SELECT n FROM sc_retype") == '1234'
        assert await (await conn.prepare("SELECT n FROM sc_retype")).fetchval() == '1234'
        assert await conn.fetch(LIST_STATEMENTS) == []
    finally:
        await conn.execute("DROP TABLE IF EXISTS sc_retype")
        await conn.close()


# --- schema changes ---------------------------------------------------------------------------------------

@pytest.fixture
async def people(conn):
    await conn.execute("""
        DROP TABLE IF EXISTS sc_people;
        CREATE TABLE sc_people (id int, name text);
        INSERT INTO sc_people VALUES (1, 'ann')""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS sc_people")


async def test_added_column_under_cached_select_star_is_retried(people):
    conn = people
    query = "SELECT * FROM sc_people ORDER BY id"
    assert [tuple(r) for r in await conn.fetch(query)] == [(1, 'ann')]
    await conn.execute("ALTER TABLE sc_people ADD COLUMN age int DEFAULT 30")
    rows = await conn.fetch(query)
    assert [tuple(r) for r in rows] == [(1, 'ann', 30)]
    assert list(rows[0].keys()) == ['id', 'name', 'age']
    # The stale statement was closed and replaced by a new one.
    assert len(await conn.fetch(
        "SELECT 1 FROM pg_prepared_statements WHERE statement = $1", query)) == 1


async def test_changed_column_type_is_retried(people):
    conn = people
    query = "SELECT id, name FROM sc_people"
    assert await conn.fetchrow(query) == (1, 'ann')
    await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE text")
    row = await conn.fetchrow(query)
    assert row == ('1', 'ann') and type(row['id']) is str


async def test_schema_change_inside_a_transaction_raises_invalid_cached_statement(people):
    conn = people
    query = "SELECT * FROM sc_people"
    await conn.fetch(query)
    xact = conn.transaction()
    await xact.start()
    await conn.execute("ALTER TABLE sc_people ADD COLUMN extra int")
    with pytest.raises(exceptions.InvalidCachedStatementError) as caught:
        await conn.fetch(query)
    assert isinstance(caught.value, exceptions.FeatureNotSupportedError)
    assert caught.value.sqlstate == '0A000'
    assert 'roll back and run the transaction again' in caught.value.hint
    assert 'cached statement plan is invalid' in str(caught.value)
    # The error failed the transaction; after rolling back all works again.
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        await conn.fetch("SELECT 1")
    await xact.rollback()
    assert [tuple(r) for r in await conn.fetch(query)] == [(1, 'ann')]


async def test_schema_change_then_new_transaction_uses_a_fresh_statement(people):
    conn = people
    query = "SELECT * FROM sc_people"
    await conn.fetch(query)
    await conn.execute("ALTER TABLE sc_people ADD COLUMN extra int DEFAULT 5")
    async with conn.transaction():
        # First use inside the transaction: the cache entry is stale and the
        # error would fail the transaction, so it is raised, not retried...
        with pytest.raises(exceptions.InvalidCachedStatementError):
            await conn.fetch(query)
    # ...and the cache entry is gone: the next transaction succeeds.
    async with conn.transaction():
        assert [tuple(r) for r in await conn.fetch(query)] == [(1, 'ann', 5)]


async def test_prepared_statement_keeps_its_result_types_after_a_schema_change(people):
    # As in asyncpg: an explicitly prepared statement is not re-prepared
    # behind the user's back; the server's 0A000 is raised, every time.
    conn = people
    query = "SELECT * FROM sc_people"
    stmt = await conn.prepare(query)
    assert [a.name for a in stmt.get_attributes()] == ['id', 'name']
    await conn.execute("ALTER TABLE sc_people ADD COLUMN age int DEFAULT 7")
    for _ in range(2):
        with pytest.raises(exceptions.InvalidCachedStatementError) as info:
            await stmt.fetchrow()
        assert info.value.sqlstate == '0A000'
        assert 'Prepare it again' in info.value.hint
    assert [a.name for a in stmt.get_attributes()] == ['id', 'name']
    # The statement cache behind conn.fetch re-prepares transparently.
    assert await conn.fetchrow(query) == (1, 'ann', 7)
    assert [a.name for a in (await conn.prepare(query)).get_attributes()] == [
        'id', 'name', 'age']


async def _named_statements_of(conn, query: str) -> list:
    return [r['name'] for r in await conn.fetch(
        "SELECT name FROM pg_prepared_statements WHERE statement = $1", query)]


async def test_cached_statement_takes_the_new_parameter_type_int_to_text(people):
    # The cached statement still has an int4 parameter: the str would be
    # refused client-side (asyncpg's behaviour) unless it is described again.
    conn = people
    query = "SELECT name FROM sc_people WHERE id = $1"
    assert await conn.fetchval(query, 1) == 'ann'
    await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE text")
    assert await conn.fetchval(query, '1') == 'ann'
    assert await conn.fetchval(query, '1') == 'ann'
    names = await _named_statements_of(conn, query)
    assert len(names) == 1
    assert [t.name for t in (await conn.prepare(query)).get_parameters()] == ['text']


async def test_cached_statement_takes_the_new_parameter_type_int4_to_int8(people):
    conn = people
    big = 2 ** 40
    query = "SELECT name FROM sc_people WHERE id = $1"
    assert await conn.fetchval(query, 1) is not None
    await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE int8")
    await conn.execute("INSERT INTO sc_people VALUES ($1, 'big')", big)
    assert await conn.fetchval(query, big) == 'big'
    assert await conn.execute("UPDATE sc_people SET name = 'bigger' WHERE id = $1",
                              big) == 'UPDATE 1'
    insert = "INSERT INTO sc_people VALUES ($1, $2)"
    await conn.execute(insert, 2, 'bob')    # cached with an int8 parameter now
    await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE text")
    await conn.executemany(insert, [('x', 'xena'), ('y', 'yann')])
    assert await conn.fetchval("SELECT count(*) FROM sc_people WHERE id IN ('x', 'y')") == 2


async def test_refused_argument_without_a_schema_change_raises_the_original_error(people):
    conn = people
    query = "SELECT name FROM sc_people WHERE id = $1"
    assert await conn.fetchval(query, 1) == 'ann'
    name = (await _named_statements_of(conn, query))[0]
    with pytest.raises(exceptions.DataError,
                       match=r"^invalid input for query argument \$1: 'x'"):
        await conn.fetchval(query, 'x')
    # Still cached under the same name; nothing else was left behind.
    assert await _named_statements_of(conn, query) == [name]
    assert await conn.fetchval(query, 1) == 'ann'


async def test_changed_parameter_type_inside_a_transaction_is_not_redescribed(people):
    # A Parse failing inside the block would fail the caller's transaction.
    conn = people
    query = "SELECT name FROM sc_people WHERE id = $1"
    assert await conn.fetchval(query, 1) == 'ann'
    async with conn.transaction():
        await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE text")
        with pytest.raises(exceptions.DataError, match=r'query argument \$1'):
            await conn.fetchval(query, '1')
        # The transaction is intact.
        assert await conn.fetchval("SELECT count(*) FROM sc_people") == 1
    assert await conn.fetchval(query, '1') == 'ann'


async def test_prepared_statement_keeps_its_parameter_types_after_a_schema_change(people):
    conn = people
    stmt = await conn.prepare("SELECT name FROM sc_people WHERE id = $1")
    await conn.execute("ALTER TABLE sc_people ALTER COLUMN id TYPE text")
    with pytest.raises(exceptions.DataError, match=r'query argument \$1'):
        await stmt.fetchval('1')
    assert [t.name for t in stmt.get_parameters()] == ['int4']


@pytest.fixture
async def composite(conn):
    await conn.execute("""
        DROP TABLE IF EXISTS sc_shapes; DROP TYPE IF EXISTS sc_pair;
        CREATE TYPE sc_pair AS (a int, b text);
        CREATE TABLE sc_shapes (id int, p sc_pair);
        INSERT INTO sc_shapes VALUES (1, ROW(1, 'x'))""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS sc_shapes; DROP TYPE IF EXISTS sc_pair")


async def test_changed_composite_type_is_relearned_outside_a_transaction(composite):
    conn = composite
    query = "SELECT p FROM sc_shapes"
    assert await conn.fetchval(query) == (1, 'x')
    await conn.execute("ALTER TYPE sc_pair ADD ATTRIBUTE c int")
    await conn.execute("UPDATE sc_shapes SET p = ROW(1, 'x', 9)")
    value = await conn.fetchval(query)
    assert value == (1, 'x', 9) and value['c'] == 9


async def test_changed_composite_type_raises_inside_a_transaction(composite):
    conn = composite
    query = "SELECT p FROM sc_shapes"
    assert await conn.fetchval(query) == (1, 'x')
    await conn.execute("ALTER TYPE sc_pair ADD ATTRIBUTE c int")
    async with conn.transaction():
        with pytest.raises(exceptions.OutdatedSchemaCacheError):
            await conn.fetchval(query)
        # The caches were dropped: the same transaction can go on.
        assert await conn.fetchval(query) == (1, 'x', None)


async def test_changed_composite_type_is_not_retried_for_writes(composite):
    conn = composite
    returning = "UPDATE sc_shapes SET id = id + 1 RETURNING p"
    assert await conn.fetchval(returning) == (1, 'x')
    await conn.execute("ALTER TYPE sc_pair ADD ATTRIBUTE c int")
    with pytest.raises(exceptions.OutdatedSchemaCacheError):
        await conn.fetchval(returning)
    # The UPDATE ran once per call, never twice.
    assert await conn.fetchval("SELECT id FROM sc_shapes") == 3
    assert await conn.fetchval(returning) == (1, 'x', None)


async def test_reload_schema_state_clears_types_and_statements(composite):
    conn = composite
    query = "SELECT p FROM sc_shapes"
    assert await conn.fetchval(query) == (1, 'x')
    assert query in await _statements(conn)
    await conn.execute("ALTER TYPE sc_pair ADD ATTRIBUTE c int")
    await conn.reload_schema_state()
    assert conn._session.statements.cache.states() == []
    assert query not in await _statements(conn)
    async with conn.transaction():
        # Would be OutdatedSchemaCacheError without the reload.
        assert await conn.fetchval(query) == (1, 'x', None)


async def test_cursor_on_a_stale_statement_raises_and_the_next_transaction_works(people):
    conn = people
    query = "SELECT * FROM sc_people"
    await conn.fetch(query)
    await conn.execute("ALTER TABLE sc_people ADD COLUMN extra int DEFAULT 1")
    with pytest.raises(exceptions.InvalidCachedStatementError):
        async with conn.transaction():
            async for _ in conn.cursor(query):
                pass
    async with conn.transaction():
        assert [tuple(r) async for r in conn.cursor(query)] == [(1, 'ann', 1)]

"""The statement cache on, through pgbouncer in transaction pooling mode.

pgbouncer 1.21+ with ``max_prepared_statements`` tracks the named statements
each client prepares with protocol messages (Parse), prepares them again on
whichever server connection a later Bind lands, and answers the client's
Close itself.  For that to work the driver must prepare with Parse (never SQL
PREPARE), close with Close (never SQL DEALLOCATE), and notice when the user
drops every statement (DISCARD ALL, DEALLOCATE ALL): pgbouncer 1.22+ forgets
them too, and closes the client connection if it later binds one of them.

These tests run the pgbouncer installed on the machine (tools/pgbouncer.py):
Debian's 1.18 in CI.  What the driver sends, and what a user gets with the
cache left on through a pooler that passes statement names through (1.18,
or 1.21+ with ``max_prepared_statements = 0``: correct results outside
transaction blocks, a clear error inside one), run on every version; the
tests of what 1.21+ and 1.22+ do skip with an older pgbouncer, saying so.
Run them with a newer binary::

    MYPGDRIVER_PGBOUNCER=/path/to/pgbouncer ./dev.sh test tests/test_pooler_prepared.py
"""
from __future__ import annotations

import asyncio
import io
import itertools
import random
from typing import Any, AsyncIterator, Iterator, Optional

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.core.statement_registry import PROCESS_TOKEN as _PROCESS_TOKEN
from tests.support.pgbouncer import (
    SERVER_POOL_SIZE,
    ClientMessageRecorder,
    installed_pgbouncer,
    require_pgbouncer,
    sql_sent,
    transaction_pool_settings,
)
from tools.pgbouncer import DROPS_STATEMENTS_ON_DISCARD, PREPARED_STATEMENTS, Pgbouncer

CLIENTS = 200
ROUNDS = 6


@pytest.fixture(scope="module")
def pooler(pg_cluster) -> Iterator[Pgbouncer]:
    """The pgbouncer found, pool_mode=transaction, 10 server connections.

    With max_prepared_statements when it has the setting (1.21+): a
    pgbouncer that carries statements then, one that passes their names
    through otherwise.
    """
    pg_cluster.require_local()
    binary = installed_pgbouncer()
    with Pgbouncer(binary, pg_cluster.host, pg_cluster.port,
                   settings=transaction_pool_settings(binary, CLIENTS + 100)) as bouncer:
        yield bouncer


@pytest.fixture
def tracking_pooler(request: pytest.FixtureRequest) -> Pgbouncer:
    """`pooler`, for a test of max_prepared_statements; skips before pgbouncer 1.21."""
    require_pgbouncer(PREPARED_STATEMENTS, "max_prepared_statements carries named statements "
                      "across server connections in transaction mode")
    return request.getfixturevalue("pooler")


@pytest.fixture(scope="module")
def untracked_pooler(pg_cluster) -> Iterator[Pgbouncer]:
    """A pgbouncer that passes statement names through: 3 server connections.

    Any version: 1.18 as it is, 1.21+ with max_prepared_statements = 0.
    """
    pg_cluster.require_local()
    binary = installed_pgbouncer()
    settings = dict(transaction_pool_settings(binary, 60, max_prepared_statements=0),
                    default_pool_size=3)
    with Pgbouncer(binary, pg_cluster.host, pg_cluster.port, settings=settings) as bouncer:
        yield bouncer


async def _connect(pooler: Pgbouncer, **kwargs: Any) -> Any:
    return await mypgdriver.connect(host="127.0.0.1", port=pooler.port, user="postgres",
                                    database="postgres", **kwargs)


@pytest.fixture
async def via_pooler(pooler: Pgbouncer) -> AsyncIterator[Any]:
    """A connection through pgbouncer 1.22+ with the default statement cache.

    Its users test what the driver does when pgbouncer forgets the client's
    statements on DISCARD ALL / DEALLOCATE ALL: they skip with an older one.
    """
    require_pgbouncer(DROPS_STATEMENTS_ON_DISCARD, "DISCARD ALL / DEALLOCATE ALL make it "
                      "forget the client's statements too")
    conn = await _connect(pooler)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def pooler_table(conn) -> AsyncIterator[Any]:
    await conn.execute("""
        DROP TABLE IF EXISTS pooler_log;
        CREATE TABLE pooler_log (client int, seq int, kind text, payload text)""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS pooler_log")


# --- many clients over few server connections ---------------------------------------------


async def _client(number: int, pooler: Pgbouncer, pids: set[int], start: asyncio.Event) -> int:
    """Mix every kind of operation for ROUNDS rounds, checking each result; rows inserted."""
    # A few clients get a tiny cache, so that statements are evicted (and closed) all the time.
    cache = 3 if number % 10 == 0 else 100
    conn = await _connect(pooler, statement_cache_size=cache)
    rng = random.Random(number)
    inserted = 0
    await start.wait()
    try:
        for seq in range(ROUNDS):
            step = (number + seq) % 5
            if step == 0:
                a, b = rng.randint(-1000, 1000), rng.randint(-1000, 1000)
                assert await conn.fetchval("SELECT $1::int + $2::int", a, b) == a + b
                text = f"c{number}-{seq}"
                row = await conn.fetchrow(
                    "SELECT upper($1::text) AS u, length($1::text) AS n", text)
                assert (row["u"], row["n"]) == (text.upper(), len(text))
                # A statement of this client's own: pgbouncer must keep names apart.
                assert await conn.fetchval(f"SELECT $1::int * {number}", seq) == seq * number
            elif step == 1:
                async with conn.transaction():
                    pid = await conn.fetchval("SELECT pg_backend_pid()")
                    pids.add(pid)
                    await conn.execute("INSERT INTO pooler_log VALUES ($1, $2, 'xact', $3)",
                                       number, seq, f"pid {pid}")
                    rows = await conn.fetch(
                        "SELECT seq, payload FROM pooler_log WHERE client = $1 AND seq = $2",
                        number, seq)
                    assert [tuple(r) for r in rows] == [(seq, f"pid {pid}")]
                    # The whole transaction stays on one server connection.
                    assert await conn.fetchval("SELECT pg_backend_pid()") == pid
                inserted += 1
            elif step == 2:
                stmt = await conn.prepare(
                    "SELECT count(*) FROM pooler_log WHERE client = $1 AND seq <= $2")
                before = await stmt.fetchval(number, seq)
                await conn.executemany(
                    "INSERT INTO pooler_log VALUES ($1, $2, 'many', $3)",
                    [(number, seq, "a"), (number, seq, "b")])
                inserted += 2
                assert await stmt.fetchval(number, seq) == before + 2
            elif step == 3:
                async with conn.transaction():
                    values = [r[0] async for r in conn.cursor(
                        "SELECT generate_series(1, $1::int)", 25, prefetch=10)]
                    assert values == list(range(1, 26))
                    cur = await conn.cursor("SELECT generate_series(1, $1::int) * $2::int",
                                            10, number)
                    assert [r[0] for r in await cur.fetch(4)] == [number * i for i in (1, 2, 3, 4)]
            else:
                records = [(number, seq, "copy", f"r{i}") for i in range(3)]
                status = await conn.copy_records_to_table("pooler_log", records=records)
                assert status == "COPY 3"
                inserted += 3
                out = io.BytesIO()
                await conn.copy_from_query(
                    f"SELECT payload FROM pooler_log WHERE client = {number} AND seq = {seq} "
                    f"AND kind = 'copy' ORDER BY payload", output=out)
                assert out.getvalue() == b"r0\nr1\nr2\n"
    finally:
        await conn.close()
    return inserted


async def test_two_hundred_clients_share_ten_server_connections_with_the_cache_on(
        tracking_pooler, pooler_table):
    pooler = tracking_pooler
    pids: set[int] = set()
    start = asyncio.Event()
    clients = [asyncio.ensure_future(_client(n, pooler, pids, start)) for n in range(CLIENTS)]
    # Every client is connected before the work starts: 200 client
    # connections really are open at once over the pool of 10.
    await asyncio.sleep(0)
    start.set()
    # Any error (a "prepared statement ... does not exist / already exists"
    # included) fails the test: no return_exceptions.
    inserted = await asyncio.gather(*clients)
    assert await pooler_table.fetchval("SELECT count(*) FROM pooler_log") == sum(inserted)
    assert 1 < len(pids) <= SERVER_POOL_SIZE


# --- how statements reach the pooler ------------------------------------------------------


async def test_statements_are_closed_with_close_messages_never_deallocate(pooler):
    with ClientMessageRecorder("127.0.0.1", pooler.port) as recorder:
        conn = await mypgdriver.connect(host="127.0.0.1", port=recorder.port, user="postgres",
                                        database="postgres", statement_cache_size=3)
        try:
            for round_ in range(2):
                for i in range(8):
                    assert await conn.fetchval(f"SELECT $1::int + {i}", round_) == round_ + i
            stmt = await conn.prepare("SELECT 42")
            assert await stmt.fetchval() == 42
            del stmt
            assert await conn.fetchval("SELECT 1") == 1
        finally:
            await conn.close()
        closes = recorder.sent(b"C")
        texts = sql_sent(recorder)
    # Evictions (8 queries in a cache of 3, twice) and the dropped
    # PreparedStatement were closed with Close('S'), which pgbouncer 1.21+
    # answers and tracks (an older one passes it on to the server connection
    # the client has); SQL DEALLOCATE would reach a random server connection.
    assert sum(1 for body in closes if body[:1] == b"S") >= 13
    assert not [t for t in texts if "DEALLOCATE" in t.upper()]
    # Every statement was prepared with a named protocol-level Parse.
    assert not [t for t in texts if t.lstrip().upper().startswith("PREPARE")]


def _sync_groups(recorder: ClientMessageRecorder) -> list[list[tuple[bytes, bytes]]]:
    """The client's extended-protocol messages, cut after each Sync (a pooler's boundary)."""
    groups: list[list[tuple[bytes, bytes]]] = [[]]
    for kind, body in recorder.messages:
        if kind == b"Q" or kind == b"X":
            continue
        groups[-1].append((kind, body))
        if kind == b"S":
            groups.append([])
    return [g for g in groups if g]


def _statement_name(kind: bytes, body: bytes) -> Optional[str]:
    """The statement a Parse or Bind names ('' for the unnamed one)."""
    if kind == b"P":
        return body.split(b"\0", 1)[0].decode()
    if kind == b"B":
        return body.split(b"\0", 2)[1].decode()    # after the portal name
    return None


async def test_a_cached_statement_is_created_with_its_first_run_in_one_sync(pooler, monitor):
    # Outside a transaction block a transaction-mode pooler may move the
    # client to another server connection after every Sync.  A cached
    # statement is therefore described as the unnamed statement, and
    # created (Parse/Describe) together with its first Bind/Execute, before
    # the same Sync: never created on one server connection and first bound
    # on another.  (Before, it was Parse/Describe/Sync, then Bind/Execute/Sync.)
    with ClientMessageRecorder("127.0.0.1", pooler.port) as recorder:
        conn = await mypgdriver.connect(host="127.0.0.1", port=recorder.port,
                                        user="postgres", database="postgres")
        try:
            assert await conn.fetchval("SELECT $1::int + 1", 1) == 2
            assert await conn.fetchval("SELECT $1::int + 1", 2) == 3
            assert await conn.fetchrow("SELECT $1::text AS t", "a") == ("a",)
            assert await conn.execute("SELECT $1::int", 5) == "SELECT 1"
            await conn.executemany("SELECT $1::int * 2", [(1,), (2,)])
            assert await conn.fetchmany("SELECT $1::int * 3", [(1,), (2,)]) == [(3,), (6,)]
            async with conn.transaction():
                assert [r[0] async for r in conn.cursor(
                    "SELECT generate_series(1, $1::int)", 3)] == [1, 2, 3]
            # Introspection's own catalog query is cached like any other.
            assert await conn.fetchval("SELECT $1::int4range", None) is None
        finally:
            await conn.close()
        groups = _sync_groups(recorder)
    created: dict[str, int] = {}
    for number, group in enumerate(groups):
        for kind, body in group:
            name = _statement_name(kind, body)
            if kind == b"P" and name:
                assert name not in created, f"{name} parsed twice"
                created[name] = number
                # Its first Bind follows in the same group.
                assert any(_statement_name(k, b) == name for k, b in group
                           if k == b"B"), f"{name} was parsed without its first Bind: {group}"
            if kind == b"B" and name:
                assert name in created, f"{name} bound before it was parsed"
    assert len(created) >= 6
    assert all(name.startswith(f"__mypg_{_PROCESS_TOKEN}_") for name in created)


async def test_the_cache_works_through_a_pooler_that_passes_statement_names_through(
        untracked_pooler):
    # pgbouncer without max_prepared_statements (1.18, or 1.21+ with 0)
    # forwards Parse and Bind unchanged to whichever server connection the
    # client has at the time.  The statement cache still never lets an
    # error reach the user outside a transaction block: a statement is
    # created with its first run (in one Sync, on one server connection),
    # and a later Bind that lands on a server connection without it gets
    # SQLSTATE 26000, after which it is created again the same way and run
    # once more.  (Created in its own Sync, as before, the retried Bind
    # could land elsewhere again.)
    async def client(number: int) -> set[int]:
        conn = await _connect(untracked_pooler)
        pids: set[int] = set()
        try:
            for seq in range(12):
                assert await conn.fetchval("SELECT $1::int + $2::int", number, seq) \
                    == number + seq
                pid, text = await conn.fetchrow(
                    "SELECT pg_backend_pid(), $1::text || $2::text", "c", str(number))
                assert text == f"c{number}"
                pids.add(pid)
                if seq % 3 == number % 3:
                    # Keep a server connection for a while: the others move.
                    async with conn.transaction():
                        await conn.execute("SELECT pg_sleep(0.002)")
        finally:
            await conn.close()
        return pids

    seen = await asyncio.gather(*(client(n) for n in range(30)))
    # The clients really were moved between server connections.
    assert len(set().union(*seen)) > 1
    assert any(len(pids) > 1 for pids in seen)


async def test_the_cache_left_on_fails_a_transaction_on_another_server_connection_with_a_hint(
        untracked_pooler):
    # What docs/guide/poolers.rst promises with the cache left on through a
    # pooler that passes statement names through (Debian's pgbouncer 1.18
    # as it is): inside a transaction block, a cached statement whose
    # transaction runs on a server connection without it fails with
    # SQLSTATE 26000 ("prepared statement ... does not exist"), a hint that
    # names statement_cache_size=0 and says to roll back and run the
    # transaction again, and the cache cleared, so the next attempt succeeds.
    query = "SELECT pg_backend_pid(), $1::int * 2"
    user = await _connect(untracked_pooler)
    holders: list[Any] = []
    try:
        created_on, doubled = await user.fetchrow(query, 1)
        assert doubled == 2
        # Hold the server connection that has the statement in other clients'
        # transactions (pgbouncer reuses the one released last, so the first
        # holder usually gets it), so that the user's transaction runs elsewhere.
        while True:
            assert len(holders) < 2, "no holder got the statement's server connection"
            holder = await _connect(untracked_pooler, statement_cache_size=0)
            holders.append(holder)
            await holder.transaction().start()     # rolled back when it is closed
            if await holder.fetchval("SELECT pg_backend_pid()") == created_on:
                break
        with pytest.raises(exceptions.InvalidSQLStatementNameError) as info:
            async with user.transaction():
                await user.fetchrow(query, 2)
        error = info.value
        assert error.sqlstate == "26000"
        assert error.message is not None and error.hint is not None
        assert error.message.startswith('prepared statement "__mypg_')
        assert error.message.endswith('" does not exist')
        assert "statement_cache_size=0" in error.hint
        assert "roll back and run the transaction again" in error.hint
        # The transaction run again succeeds: the statement is prepared anew
        # on the server connection it now has.
        async with user.transaction():
            pid, doubled = await user.fetchrow(query, 3)
            assert (doubled, pid != created_on) == (6, True)
        assert not user.is_closed()
    finally:
        for holder in holders:
            await holder.close()
        await user.close()


async def test_a_cached_statement_exists_on_the_server_once_it_ran(conn):
    query = "SELECT $1::int * 7"
    count = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1"
    # Refused client-side before anything ran: described only, nothing created.
    with pytest.raises(exceptions.DataError):
        await conn.fetchval(query, "seven")
    assert conn._session.statements.cache.get(query).parse_pending
    assert await conn.fetchval(count, query) == 0
    assert await conn.fetchval(query, 2) == 14
    assert await conn.fetchval(count, query) == 1
    assert await conn.fetchval(query, 3) == 21
    assert await conn.fetchval(count, query) == 1
    # Connection.prepare() creates its statement at once, as in asyncpg.
    other = "SELECT $1::int * 11"
    await conn.prepare(other)
    assert await conn.fetchval(count, other) == 1


async def test_a_statement_whose_creating_parse_failed_is_prepared_again(conn):
    query = "SELECT $1::int + 100"
    with pytest.raises(exceptions.DataError):
        await conn.fetchval(query, "x")             # cached, not created yet
    first = conn._session.statements.cache.get(query)
    assert first.parse_pending
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        async with conn.transaction():
            with pytest.raises(exceptions.DivisionByZeroError):
                await conn.execute("SELECT 1 / 0")
            # Its creating Parse fails in the aborted transaction.
            await conn.fetchval(query, 1)
    # No statement of that name exists: the next run, even inside a
    # transaction block, must not bind it (that would be SQLSTATE 26000).
    async with conn.transaction():
        assert await conn.fetchval(query, 1) == 101
    assert conn._session.statements.cache.get(query) is not first
    assert await conn.fetchval(
        "SELECT count(*) FROM pg_prepared_statements WHERE name = $1", first.name) == 0
    assert not conn._session.protocol.is_in_transaction()


async def test_prepare_creates_a_cached_statement_that_was_only_described(conn):
    # A PreparedStatement's statement exists on the server from the start,
    # as in asyncpg, even when the cache held the query described only.
    query = "SELECT $1::int + 200"
    with pytest.raises(exceptions.DataError):
        await conn.fetchval(query, "x")
    assert conn._session.statements.cache.get(query).parse_pending
    stmt = await conn.prepare(query)
    assert await conn.fetchval(
        "SELECT count(*) FROM pg_prepared_statements WHERE name = $1", stmt.get_name()) == 1
    assert await stmt.fetchval(1) == 201
    assert conn._session.statements.cache.get(query) is stmt._state


async def test_result_types_changed_between_describe_and_first_run(conn):
    # The named statement is created by the Parse in front of its first
    # Bind, after the schema changed: the server has no reason to object
    # (it describes the new types), so the driver compares the second
    # Describe with the types it decodes with.  Without that, the text
    # 'abcd' would be decoded as the int4 1633837924.
    await conn.execute("""
        DROP TABLE IF EXISTS drift;
        CREATE TABLE drift (id int, v int);
        INSERT INTO drift VALUES (1, 5)""")
    try:
        write = "UPDATE drift SET id = id + $1 RETURNING v"
        with pytest.raises(exceptions.DataError):
            await conn.fetch(write, "one")          # described with v int4, not created
        await conn.execute("ALTER TABLE drift ALTER v TYPE text; UPDATE drift SET v = 'abcd'")
        # A write ran; its rows were not decoded, and it is not repeated.
        with pytest.raises(exceptions.InvalidCachedStatementError, match="executed"):
            await conn.fetch(write, 1)
        assert await conn.fetchval("SELECT id FROM drift") == 2
        assert [tuple(r) for r in await conn.fetch(write, 1)] == [("abcd",)]

        read = "SELECT id, v FROM drift WHERE id = $1"
        with pytest.raises(exceptions.DataError):
            await conn.fetch(read, "three")         # described with v text, not created
        await conn.execute("ALTER TABLE drift ALTER v TYPE int USING length(v)")
        # A read is run again, described afresh.
        assert [tuple(r) for r in await conn.fetch(read, 3)] == [(3, 4)]
        assert [tuple(r) for r in await conn.fetch(read, 3)] == [(3, 4)]
    finally:
        await conn.execute("DROP TABLE IF EXISTS drift")


async def test_statement_described_on_one_server_connection_runs_on_another(tracking_pooler):
    # pgbouncer reuses the server connection released last (LIFO): while
    # `holder` keeps that one inside a transaction, `user`'s next Bind
    # lands on another connection, where pgbouncer prepares it again from
    # the client's Parse.  This is what makes a PreparedStatement (created
    # at once: Parse/Describe/Sync, then Bind/Execute/Sync) safe.
    pooler = tracking_pooler
    user = await _connect(pooler)
    holder = await _connect(pooler)
    try:
        stmt = await user.prepare("SELECT pg_backend_pid(), $1::int * 2")
        first_pid, doubled = await stmt.fetchrow(21)
        assert doubled == 42
        cached_pid = await user.fetchval("SELECT pg_backend_pid() + $1::int", 0)
        async with holder.transaction():
            held_pid = await holder.fetchval("SELECT pg_backend_pid()")
            other_pid, doubled = await stmt.fetchrow(5)
            assert doubled == 10
            assert other_pid != held_pid
            assert await user.fetchval("SELECT pg_backend_pid() + $1::int", 0) != held_pid
        assert held_pid in (first_pid, cached_pid)
    finally:
        await user.close()
        await holder.close()


# --- the user drops every statement ------------------------------------------------------


@pytest.mark.parametrize("command", ["DISCARD ALL", "DEALLOCATE ALL"])
async def test_dropping_all_statements_through_the_pooler_drops_the_cache(via_pooler, command):
    conn = via_pooler
    assert await conn.fetchval("SELECT $1::int + 1", 1) == 2
    stmt = await conn.prepare("SELECT $1::text || '!'")
    assert await stmt.fetchval("a") == "a!"
    await conn.execute(command)
    # pgbouncer forgot the statements too: binding one would get the
    # connection closed.  The driver saw the command's tag and prepares again.
    assert await conn.fetchval("SELECT $1::int + 1", 2) == 3
    assert await stmt.fetchval("b") == "b!"
    async with conn.transaction():
        await conn.execute("DEALLOCATE ALL")
        assert await conn.fetchval("SELECT $1::int + 1", 3) == 4
        assert await stmt.fetchval("c") == "c!"
    assert not conn.is_closed()


@pytest.mark.parametrize("command", ["DISCARD ALL", "DEALLOCATE ALL"])
async def test_a_prepared_statements_cursor_after_all_statements_were_dropped(conn, command):
    # The PreparedStatement's own methods prepare it again; so do its
    # cursors (a defect: "the prepared statement is closed").
    stmt = await conn.prepare("SELECT generate_series(1, $1::int)")
    await conn.execute(command)
    async with conn.transaction():
        assert [r[0] async for r in stmt.cursor(3, prefetch=2)] == [1, 2, 3]
        cur = await stmt.cursor(4)
        assert [r[0] for r in await cur.fetch(4)] == [1, 2, 3, 4]
    assert await stmt.fetchval(1) == 1


async def test_deallocate_all_in_a_multi_statement_query_drops_the_cache(via_pooler):
    conn = via_pooler
    assert await conn.fetchval("SELECT $1::int + 1", 1) == 2
    await conn.execute("SELECT 1; DEALLOCATE ALL; SELECT 2")
    assert await conn.fetchval("SELECT $1::int + 1", 5) == 6


# --- statements that vanished behind the driver's back (direct server) -------------------


def _forget_behind_the_drivers_back(conn, query: str) -> None:
    """Close `query`'s cached statement on the server without telling the cache."""
    state = conn._session.statements.cache.get(query)
    assert state is not None and state.name
    conn._session.protocol.close_statements([state.name], None)


async def test_missing_statement_is_prepared_again_and_retried_once(conn):
    query = "SELECT $1::int * 3"
    assert await conn.fetchval(query, 2) == 6
    _forget_behind_the_drivers_back(conn, query)
    # SQLSTATE 26000 outside a transaction: re-prepared, run once more.
    assert await conn.fetchval(query, 3) == 9
    assert await conn.fetchval(query, 4) == 12


async def test_missing_statement_inside_a_transaction_is_a_clear_error(conn):
    query = "SELECT $1::int * 5"
    assert await conn.fetchval(query, 1) == 5
    _forget_behind_the_drivers_back(conn, query)
    with pytest.raises(exceptions.InvalidSQLStatementNameError) as info:
        async with conn.transaction():
            await conn.fetchval(query, 2)
    assert "roll back and run the transaction again" in info.value.hint
    # The cache was cleared: the next call prepares afresh.
    assert await conn.fetchval(query, 3) == 15


async def test_statement_name_already_taken_is_prepared_under_another_name(conn):
    session = conn._session
    upcoming = next(session.statements._ids)
    session.statements._ids = itertools.count(upcoming)
    taken = f"__mypg_{_PROCESS_TOKEN}_{session.conn_id}_{upcoming}__"
    # Someone else (SQL PREPARE, another driver behind a pooler) has that name.
    await conn.execute(f'PREPARE "{taken}" AS SELECT 0')
    # SQLSTATE 42P05 on our Parse: prepared again under a fresh name.
    assert await conn.fetchval("SELECT $1::int - 1", 10) == 9
    assert await conn.fetchval(f'EXECUTE "{taken}"') == 0


async def test_missing_statement_of_the_users_own_sql_is_not_retried(conn):
    assert await conn.fetchval("SELECT $1::int + 0", 1) == 1
    with pytest.raises(exceptions.InvalidSQLStatementNameError):
        await conn.fetchval("EXECUTE mypg_no_such_statement")
    # Not one of the driver's statements: the cache was left alone.
    assert conn._session.statements.cache.get("SELECT $1::int + 0") is not None

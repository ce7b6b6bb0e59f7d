"""Call order is execution order, whatever a call needs before its statement can run.

docs/guide/concurrency.rst promises that a statement sees the effects of
every statement called before it on the connection.  A call that must wait
for an answer before it can send its statement (a prepare on a cache miss, a
re-prepare after DISCARD ALL, type introspection) holds its place in line:
later calls never overtake it.  Each test issues calls at once from many
tasks (``asyncio.gather`` starts them in call order) and compares what each
call saw with the same calls awaited one after another.
"""
from __future__ import annotations

import asyncio
import random
from typing import Any, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.prepared import PreparedStatement
from tests.support.session_state import unique_table_name

Op = Callable[[Any], Awaitable[Any]]


def outcome(result: Any) -> Any:
    """A comparable form of a call's result: exceptions by class."""
    if isinstance(result, BaseException):
        return ("error", type(result).__name__)
    if isinstance(result, list):
        return [tuple(r) if isinstance(r, mypgdriver.Record) else r for r in result]
    if isinstance(result, mypgdriver.Record):
        return tuple(result)
    if isinstance(result, PreparedStatement):
        return ("prepared", [p.name for p in result.get_parameters()])
    return result


async def in_sequence(conn: Any, ops: list[Op]) -> list[Any]:
    results = []
    for op in ops:
        try:
            results.append(await op(conn))
        except Exception as e:       # noqa: BLE001 - compared by class
            results.append(e)
    return [outcome(r) for r in results]


async def at_once(conn: Any, ops: list[Op]) -> list[Any]:
    results = await asyncio.gather(*(op(conn) for op in ops), return_exceptions=True)
    return [outcome(r) for r in results]


async def test_set_then_read_in_call_order(conn):
    calls: list[Any] = []
    for i in range(40):
        calls.append(conn.execute(f"SET application_name = 'a{i}'"))
        calls.append(conn.fetchval("SELECT current_setting('application_name')"))
    results = await asyncio.gather(*calls)
    assert results[1::2] == [f"a{i}" for i in range(40)]


async def test_first_use_with_arguments_keeps_its_place(conn, monitor):  # noqa: F811
    table = unique_table_name("mypg_order_dep")
    await monitor.execute(f"CREATE TABLE {table} (k int PRIMARY KEY)")
    try:
        results = await asyncio.gather(
            conn.execute(f"INSERT INTO {table} VALUES ($1)", 2),
            conn.execute(f"INSERT INTO {table} SELECT 3 UNION ALL SELECT 2"),
            return_exceptions=True)
        assert results[0] == "INSERT 0 1"
        assert type(results[1]) is exceptions.UniqueViolationError
        assert await monitor.fetch(f"SELECT k FROM {table} ORDER BY k") == [(2,)]
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_sequence_values_follow_call_order(conn, monitor):  # noqa: F811
    table = unique_table_name("mypg_order_seq")
    await monitor.execute(f"CREATE TABLE {table} (seq bigserial PRIMARY KEY, tag int)")
    try:
        calls: list[Any] = []
        for i in range(300):
            kind = i % 3
            if kind == 0:
                calls.append(conn.execute(f"INSERT INTO {table} (tag) VALUES ({i})"))
            elif kind == 1:
                calls.append(conn.execute(f"INSERT INTO {table} (tag) VALUES ($1)", i))
            else:
                calls.append(conn.fetchval(
                    f"INSERT INTO {table} (tag) VALUES ($1) RETURNING seq", i))
        results = await asyncio.gather(*calls)
        assert [r for r in results[2::3]] == list(range(3, 301, 3))
        rows = await monitor.fetch(f"SELECT seq, tag FROM {table} ORDER BY seq")
        assert [(r["seq"], r["tag"]) for r in rows] == [(i + 1, i) for i in range(300)]
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_reset_runs_after_the_calls_made_before_it(conn):
    calls = [
        conn.fetchval("SELECT pg_advisory_lock($1) IS NULL", 11),
        conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                      "AND pid = pg_backend_pid() AND objid = $1", 11),
        conn.reset(),
        conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                      "AND pid = pg_backend_pid() AND objid = $1 /* after */", 11),
    ]
    results = await asyncio.gather(*calls)
    assert results == [False, 1, None, 0]


async def test_call_before_copy_does_not_see_what_its_sink_started(conn, monitor):  # noqa: F811
    table = unique_table_name("mypg_order_copy")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        started: list[Any] = []

        async def sink(chunk: bytes) -> None:
            if not started:
                started.append(asyncio.ensure_future(
                    conn.execute(f"INSERT INTO {table} VALUES (1)")))

        results = await asyncio.gather(
            conn.fetchval(f"SELECT count(*) FROM {table} WHERE k = $1", 1),
            conn.copy_from_query("SELECT generate_series(1, 3)", output=sink))
        await started[0]
        assert results[0] == 0
        assert results[1] == "COPY 3"
        assert await monitor.fetchval(f"SELECT count(*) FROM {table}") == 1
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_concurrent_first_uses_share_one_prepare(conn):
    query = "SELECT $1::int + 2000"
    ids = conn._session.statements._ids      # the generated statement names' counter
    before = next(ids)
    results = await asyncio.gather(*(conn.fetchval(query, i) for i in range(50)))
    # Exactly one statement name was generated: one prepare for all 50.
    assert next(ids) == before + 2
    assert results == [i + 2000 for i in range(50)]
    assert await conn.fetchval(
        "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", query) == 1
    # One statement was ever created: the cache never evicted a duplicate.
    assert len(conn._session.statements.cache.states()) >= 1
    names = await conn.fetch("SELECT name FROM pg_prepared_statements WHERE statement = $1",
                             query)
    assert len(names) == 1


async def test_transaction_start_keeps_its_place(conn, monitor):  # noqa: F811
    # First uses called before start() run before BEGIN: the rollback of the
    # block does not undo them.  One called after it runs inside the block.
    table = unique_table_name("mypg_order_begin")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        tr = conn.transaction()
        await asyncio.gather(
            conn.execute(f"INSERT INTO {table} VALUES ($1)", 1),
            conn.fetchval(f"INSERT INTO {table} VALUES ($1) RETURNING k", 2),
            tr.start())
        await conn.execute(f"INSERT INTO {table} VALUES ($1) /* in */", 3)
        await tr.rollback()
        assert await monitor.fetch(f"SELECT k FROM {table} ORDER BY k") == [(1,), (2,)]
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_prepare_keeps_its_place(conn, monitor):  # noqa: F811
    table = unique_table_name("mypg_order_prep")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        async def prepared_count() -> int:
            stmt = await conn.prepare(f"SELECT count(*) FROM {table} WHERE k >= $1")
            return await stmt.fetchval(0)

        results = await asyncio.gather(
            conn.execute(f"INSERT INTO {table} VALUES (1)"),
            prepared_count(),
            conn.execute(f"INSERT INTO {table} VALUES (2)"))
        # prepare() was called before the second insert; its fetchval after.
        assert results[1] in (1, 2)
        counts = await asyncio.gather(
            conn.fetchval(f"SELECT count(*) FROM {table} WHERE k > $1", 0),
            conn.execute(f"INSERT INTO {table} VALUES (3)"))
        assert counts[0] == 2
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_discard_all_then_cached_statements_in_order(conn, monitor):  # noqa: F811
    table = unique_table_name("mypg_order_discard")
    await monitor.execute(f"CREATE TABLE {table} (seq bigserial, tag int)")
    try:
        insert = f"INSERT INTO {table} (tag) VALUES ($1) RETURNING seq"
        assert await conn.fetchval(insert, 0) == 1
        calls: list[Any] = []
        for i in range(1, 61):
            if i % 15 == 0:
                calls.append(conn.execute("DISCARD ALL"))
            calls.append(conn.fetchval(insert, i))
            calls.append(conn.execute(f"INSERT INTO {table} (tag) VALUES (-{i})"))
        results = await asyncio.gather(*calls)
        seqs = [r for r in results if isinstance(r, int)]
        assert seqs == list(range(2, 2 + 2 * 60, 2))
    finally:
        await monitor.execute(f"DROP TABLE {table}")


# --- random mixes of every kind of call, compared with the same calls awaited in turn ----------

def _mix(rng: random.Random, table: str, n: int) -> list[Op]:
    """`n` calls of random kinds, each of whose results depends on every call before it."""
    ops: list[Op] = []
    for i in range(n):
        kind = rng.randrange(18)
        variant = rng.randrange(4)      # a few query texts per kind: hits and misses
        if kind == 0:
            ops.append(lambda c, i=i: c.execute(f"INSERT INTO {table} (tag) VALUES ({i})"))
        elif kind == 1:
            ops.append(lambda c, i=i, v=variant: c.execute(
                f"INSERT INTO {table} (tag) VALUES ($1) /* v{v} */", i))
        elif kind == 2:
            ops.append(lambda c, i=i, v=variant: c.fetchval(
                f"INSERT INTO {table} (tag) VALUES ($1) RETURNING seq /* v{v} */", i))
        elif kind == 3:
            ops.append(lambda c, v=variant: c.fetchval(
                f"SELECT count(*) FROM {table} /* v{v} */"))
        elif kind == 4:
            ops.append(lambda c, v=variant: c.fetchval(
                f"SELECT coalesce(sum(tag), 0) FROM {table} WHERE tag > $1 /* v{v} */", -1000))
        elif kind == 5:
            ops.append(lambda c, i=i: c.execute(f"SET application_name = 'mix{i}'"))
        elif kind == 6:
            ops.append(lambda c, v=variant: c.fetchval(
                f"SELECT current_setting('application_name') || $1::text /* v{v} */", "!"))
        elif kind == 7:
            ops.append(lambda c, i=i: c.executemany(
                f"INSERT INTO {table} (tag) VALUES ($1)", [(i,), (i + 1000,)]))
        elif kind == 8:
            ops.append(lambda c, i=i: c.copy_records_to_table(
                table, records=[(i,)], columns=["tag"]))
        elif kind == 9:
            async def copy_out(c: Any) -> Any:
                chunks: list[bytes] = []

                async def sink(chunk: bytes) -> None:
                    chunks.append(chunk)
                await c.copy_from_query(f"SELECT count(*) FROM {table}", output=sink)
                return b"".join(chunks)
            ops.append(copy_out)
        elif kind == 10 and variant == 0:
            ops.append(lambda c: c.execute("DISCARD ALL"))
        elif kind == 11 and variant == 0:
            ops.append(lambda c, i=i: c.execute(
                f"ALTER TABLE {table} ADD COLUMN c{i} int DEFAULT {i}"))
        elif kind == 12 and variant < 2:
            # A prepare, then (a separate call) a run of a statement prepared
            # before the mix began.
            ops.append(lambda c, v=variant: c.prepare(
                f"SELECT count(*) + $1::int FROM {table} /* p{v} */"))
        elif kind == 12:
            ops.append(lambda c, i=i: c.prepared_before.fetchval(i))
        elif kind == 13 and variant < 2:
            ops.append(lambda c: c.fetchrow(f"SELECT * FROM {table} ORDER BY seq DESC LIMIT 1"))
        elif kind == 14 and variant == 0:
            ops.append(lambda c: c.reset())
        elif kind == 15:
            if variant < 2:
                ops.append(lambda c, v=variant: c.execute(f"LISTEN mix_channel_{v}"))
            elif variant == 2:
                ops.append(lambda c: c.execute("UNLISTEN *"))
            else:
                ops.append(lambda c: c.fetchval(
                    "SELECT array_agg(ch ORDER BY ch)::text FROM pg_listening_channels() ch"))
        elif kind == 16 and variant == 0:
            # Decoded by the codec of the call order: later counts come back as text.
            ops.append(lambda c: c.set_type_codec(
                "int8", schema="pg_catalog", encoder=str, decoder=lambda v: f"int8:{v}",
                format="text"))
        elif kind == 16 and variant == 1:
            ops.append(lambda c: c.reset_type_codec("int8", schema="pg_catalog"))
        else:
            ops.append(lambda c: c.fetchval(f"SELECT count(*) FROM {table} WHERE tag < 0"))
    return ops


class _MixConnection(mypgdriver.Connection):
    prepared_before: Any = None


async def _run_mix(connect_kwargs: dict[str, Any], seed: int) -> list[Any]:
    """The mix of `seed` in sequence, then at once, each on a fresh connection and table."""
    observed = []
    monitor = await mypgdriver.connect(**connect_kwargs)  # noqa: F811 - own loop (uvloop)
    try:
        for mode in ("sequence", "at once"):
            table = unique_table_name(f"mypg_order_mix{seed}")
            await monitor.execute(f"CREATE TABLE {table} (seq bigserial, tag int)")
            ops = _mix(random.Random(seed), table, 120)
            conn = await mypgdriver.connect(**connect_kwargs,
                                            server_settings={"application_name": "mix"},
                                            connection_class=_MixConnection)
            conn.prepared_before = await conn.prepare(f"SELECT count(*) + $1::int FROM {table}")
            try:
                run = in_sequence if mode == "sequence" else at_once
                results = await run(conn, ops)
                rows = await monitor.fetch(f"SELECT seq, tag FROM {table} ORDER BY seq")
                observed.append((results, [tuple(r) for r in rows]))
            finally:
                await conn.close()
                await monitor.execute(f"DROP TABLE {table}")
    finally:
        await monitor.close()
    return observed


@pytest.mark.parametrize("seed", range(12))
async def test_random_mix_matches_the_same_calls_in_sequence(connect_kwargs, seed):
    _assert_same(await _run_mix(connect_kwargs, seed))


@pytest.mark.parametrize("seed", range(100, 104))
async def test_random_mix_under_uvloop_matches_the_same_calls_in_sequence(connect_kwargs,
                                                                         seed):
    uvloop = pytest.importorskip("uvloop")
    # uvloop schedules callbacks and transports its own way: the same mixes
    # on a uvloop event loop in a thread of its own.
    _assert_same(await asyncio.to_thread(uvloop.run, _run_mix(connect_kwargs, seed)))


def _assert_same(observed: list[Any]) -> None:
    (seq_results, seq_rows), (par_results, par_rows) = observed
    for index, (a, b) in enumerate(zip(seq_results, par_results)):
        assert a == b, f"call {index}: in sequence {a!r}, at once {b!r}"
    assert seq_rows == par_rows


# --- interruptions of a call holding the line ------------------------------------------------

async def test_cancelled_line_holder_lets_the_calls_behind_it_go(conn):
    # A first use (it holds the line while its statement is prepared) is
    # cancelled after 0..39 loop iterations: the calls queued behind it all
    # run, in order, and the connection stays usable.
    for spins in range(40):
        query = f"SELECT $1::int + {spins} /* cancelled first use */"
        holder = asyncio.ensure_future(conn.fetchval(query, 1))
        others = [asyncio.ensure_future(conn.fetchval("SELECT $1::int * 10", i))
                  for i in range(4)]
        others.append(asyncio.ensure_future(conn.execute(f"SET application_name = 's{spins}'")))
        others.append(asyncio.ensure_future(
            conn.fetchval("SELECT current_setting('application_name')")))
        for _ in range(spins):
            await asyncio.sleep(0)
        holder.cancel()
        results = await asyncio.wait_for(asyncio.gather(*others), 10)
        assert results == [0, 10, 20, 30, "SET", f"s{spins}"], spins
        try:
            assert await holder == 1 + spins
        except asyncio.CancelledError:
            pass
    assert await conn.fetchval("SELECT $1::int", 7) == 7


@pytest.mark.parametrize("timeout", [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02])
async def test_timed_out_line_holder_lets_the_calls_behind_it_go(conn, timeout):
    for round_ in range(5):
        query = f"SELECT $1::int + {round_} /* timed out first use {timeout} */"
        holder = asyncio.ensure_future(conn.fetchval(query, 1, timeout=timeout))
        others = [asyncio.ensure_future(conn.fetchval("SELECT $1::int * 10", i))
                  for i in range(4)]
        results = await asyncio.wait_for(asyncio.gather(*others), 10)
        assert results == [0, 10, 20, 30]
        try:
            assert await holder == 1 + round_
        except asyncio.TimeoutError:
            pass
    assert await conn.fetchval("SELECT $1::int", 7) == 7


async def test_concurrent_executemany_on_one_connection_all_finish(conn, monitor):  # noqa: F811
    # executemany of a cached statement from several tasks at once: each gets
    # the connection alone in turn (they used to wait for ever).
    table = unique_table_name("mypg_order_many")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        insert = f"INSERT INTO {table} VALUES ($1)"
        await conn.execute(insert, 0)
        for _ in range(3):
            await asyncio.wait_for(asyncio.gather(*(
                conn.executemany(insert, [(i,), (i,)]) for i in range(1, 6))), 10)
        assert await monitor.fetchval(f"SELECT count(*) FROM {table}") == 1 + 3 * 5 * 2
        assert await asyncio.wait_for(conn.reset(), 10) is None
    finally:
        await monitor.execute(f"DROP TABLE {table}")


async def test_close_while_a_call_holds_the_line(connect_kwargs, monitor):  # noqa: F811
    # close() during a first use's prepare, at 0..19 loop iterations: what was
    # sent finishes or is cancelled, what was not sent raises InterfaceError
    # (the first use's Bind included), nothing called after close() runs.
    table = unique_table_name("mypg_order_close")
    await monitor.execute(f"CREATE TABLE {table} (k int)")
    try:
        for spins in range(20):
            conn = await mypgdriver.connect(**connect_kwargs)
            first = asyncio.ensure_future(
                conn.execute(f"INSERT INTO {table} VALUES ($1)", spins))
            behind = asyncio.ensure_future(conn.execute(f"INSERT INTO {table} VALUES (-1)"))
            for _ in range(spins):
                await asyncio.sleep(0)
            await asyncio.wait_for(conn.close(), 10)
            outcomes = await asyncio.gather(first, behind, return_exceptions=True)
            for outcome in outcomes:
                assert outcome == "INSERT 0 1" or type(outcome) in (
                    exceptions.InterfaceError, exceptions.QueryCanceledError), (spins, outcome)
            if outcomes[0] != "INSERT 0 1":
                # Not run: the one behind it did not run either (call order).
                assert outcomes[1] != "INSERT 0 1", (spins, outcomes)
            with pytest.raises(exceptions.InterfaceError):
                await conn.execute(f"INSERT INTO {table} VALUES (-2)")
            rows = await monitor.fetch(f"SELECT k FROM {table} WHERE k = $1 OR k < 0", spins)
            expected = [(spins,)] if outcomes[0] == "INSERT 0 1" else []
            if outcomes[1] == "INSERT 0 1":
                expected.append((-1,))
            assert sorted(tuple(r) for r in rows) == sorted(expected), (spins, outcomes)
            await monitor.execute(f"DELETE FROM {table}")
    finally:
        await monitor.execute(f"DROP TABLE {table}")


def _mix_in_block(rng: random.Random, table: str, n: int) -> list[Op]:
    """Calls made inside one transaction block, cursors among them."""
    ops: list[Op] = []
    for i in range(n):
        kind = rng.randrange(6)
        variant = rng.randrange(3)
        if kind == 0:
            ops.append(lambda c, i=i, v=variant: c.execute(
                f"INSERT INTO {table} (tag) VALUES ($1) /* b{v} */", i))
        elif kind == 1:
            async def iterate(c: Any, v: int = variant) -> Any:
                return [r[0] async for r in c.cursor(
                    f"SELECT tag FROM {table} WHERE tag >= $1 ORDER BY seq /* c{v} */", 0,
                    prefetch=2)]
            ops.append(iterate)
        elif kind == 2:
            async def fetch_two(c: Any, v: int = variant) -> Any:
                cur = await c.cursor(f"SELECT tag FROM {table} ORDER BY seq /* a{v} */")
                return await cur.fetch(2)
            ops.append(fetch_two)
        elif kind == 3:
            ops.append(lambda c, i=i: c.execute(f"INSERT INTO {table} (tag) VALUES ({i})"))
        elif kind == 4:
            ops.append(lambda c, v=variant: c.fetchval(
                f"SELECT count(*) FROM {table} WHERE tag >= $1 /* n{v} */", 0))
        else:
            ops.append(lambda c, i=i: c.executemany(
                f"INSERT INTO {table} (tag) VALUES ($1)", [(i + 500,)]))
    return ops


@pytest.mark.parametrize("seed", range(6))
async def test_random_mix_inside_a_transaction_matches_the_calls_in_sequence(
        connect_kwargs, monitor, seed):  # noqa: F811
    observed = []
    for mode in ("sequence", "at once"):
        table = unique_table_name(f"mypg_order_block{seed}")
        await monitor.execute(f"CREATE TABLE {table} (seq bigserial, tag int)")
        ops = _mix_in_block(random.Random(seed), table, 60)
        conn = await mypgdriver.connect(**connect_kwargs)
        try:
            run = in_sequence if mode == "sequence" else at_once
            async with conn.transaction():
                results = await run(conn, ops)
            rows = await monitor.fetch(f"SELECT seq, tag FROM {table} ORDER BY seq")
            observed.append((results, [tuple(r) for r in rows]))
        finally:
            await conn.close()
            await monitor.execute(f"DROP TABLE {table}")
    (seq_results, seq_rows), (par_results, par_rows) = observed
    for index, (a, b) in enumerate(zip(seq_results, par_results)):
        assert a == b, f"call {index}: in sequence {a!r}, at once {b!r}"
    assert seq_rows == par_rows

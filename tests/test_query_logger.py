"""Query loggers on a live server (asyncpg 0.29+ semantics): what a LoggedQuery
holds, plain and async callbacks, removal, and which operations are logged."""
from __future__ import annotations

import asyncio

import pytest

from mypgdriver import exceptions
from mypgdriver.connection import LoggedQuery


async def _settle() -> None:
    # Plain callbacks run via call_soon, async ones as tasks: let them run.
    for _ in range(3):
        await asyncio.sleep(0)


async def test_logged_query_fields_for_fetch_with_arguments(conn):
    records: list[LoggedQuery] = []
    conn.add_query_logger(records.append)
    assert await conn.fetchval("SELECT $1::int + $2::int", 2, 3, timeout=7.5) == 5
    await _settle()
    assert len(records) == 1
    record = records[0]
    assert type(record) is LoggedQuery
    assert record._fields == ('query', 'args', 'timeout', 'elapsed', 'exception',
                              'conn_addr', 'conn_params')
    assert record.query == "SELECT $1::int + $2::int"
    assert record.args == (2, 3)
    assert record.timeout == 7.5
    assert 0 < record.elapsed < 5
    assert record.exception is None
    assert record.conn_addr == conn._addr
    assert record.conn_params is conn._params


async def test_each_query_method_is_logged_once(conn):
    records: list[LoggedQuery] = []
    conn.add_query_logger(records.append)
    await conn.execute("SELECT 1")
    await conn.execute("SELECT $1::int", 1)
    await conn.fetch("SELECT 2")
    await conn.fetchrow("SELECT 3")
    await conn.fetchval("SELECT 4")
    await conn.executemany("SELECT $1::int", [(1,), (2,)])
    await _settle()
    assert [(r.query, r.args) for r in records] == [
        ("SELECT 1", ()),
        ("SELECT $1::int", (1,)),
        ("SELECT 2", ()),
        ("SELECT 3", ()),
        ("SELECT 4", ()),
        ("SELECT $1::int", [(1,), (2,)]),
    ]


async def test_failed_query_is_logged_with_its_exception(conn):
    records: list[LoggedQuery] = []
    conn.add_query_logger(records.append)
    with pytest.raises(exceptions.DivisionByZeroError) as caught:
        await conn.fetch("SELECT 1 / $1::int", 0)
    with pytest.raises(exceptions.SyntaxOrAccessError):
        await conn.execute("SELEC 1")
    await _settle()
    assert [r.query for r in records] == ["SELECT 1 / $1::int", "SELEC 1"]
    assert records[0].exception is caught.value
    assert isinstance(records[1].exception, exceptions.PostgresSyntaxError)


async def test_bad_argument_is_logged_with_its_data_error(conn):
    records: list[LoggedQuery] = []
    conn.add_query_logger(records.append)
    with pytest.raises(exceptions.DataError) as caught:
        await conn.fetchval("SELECT $1::int", "x")
    await _settle()
    assert len(records) == 1 and records[0].exception is caught.value


async def test_command_timeout_is_the_logged_timeout(connect_kwargs):
    import mypgdriver
    other = await mypgdriver.connect(**connect_kwargs, command_timeout=12.0)
    try:
        records: list[LoggedQuery] = []
        other.add_query_logger(records.append)
        await other.fetchval("SELECT 1")
        await other.fetchval("SELECT 1", timeout=3.0)
        await _settle()
        assert [r.timeout for r in records] == [12.0, 3.0]
    finally:
        await other.close()


async def test_async_callback_is_run_as_a_task(conn):
    seen = []
    done = asyncio.Event()

    async def log(record):
        await asyncio.sleep(0)
        seen.append(record.query)
        done.set()

    conn.add_query_logger(log)
    await conn.fetchval("SELECT 'async'")
    await asyncio.wait_for(done.wait(), 5)
    assert seen == ["SELECT 'async'"]


async def test_plain_callback_runs_after_the_query_returns(conn):
    records = []
    conn.add_query_logger(records.append)
    await conn.fetchval("SELECT 1")
    assert records == []      # scheduled with call_soon, as asyncpg does
    await _settle()
    assert len(records) == 1


async def test_remove_query_logger(conn):
    records = []
    conn.add_query_logger(records.append)
    conn.add_query_logger(records.append)    # added once only
    await conn.fetchval("SELECT 1")
    conn.remove_query_logger(records.append)
    conn.remove_query_logger(records.append)  # removing again is harmless
    await conn.fetchval("SELECT 2")
    await _settle()
    assert [r.query for r in records] == ["SELECT 1"]
    assert conn._session.query_loggers == []


async def test_query_logger_context_manager_removes_on_exit_even_on_error(conn):
    records = []
    with pytest.raises(KeyError):
        with conn.query_logger(records.append):
            await conn.fetchval("SELECT 'inside'")
            raise KeyError('x')
    await conn.fetchval("SELECT 'outside'")
    await _settle()
    assert [r.query for r in records] == ["SELECT 'inside'"]


async def test_transactions_are_logged_as_their_statements(conn):
    records = []
    with conn.query_logger(records.append):
        async with conn.transaction():
            await conn.fetchval("SELECT 1")
            async with conn.transaction():
                pass
    await _settle()
    queries = [r.query for r in records]
    assert queries[0] == 'BEGIN;' and queries[1] == 'SELECT 1' and queries[-1] == 'COMMIT;'
    assert queries[2].startswith('SAVEPOINT ') and queries[3].startswith('RELEASE SAVEPOINT ')


async def test_internal_type_introspection_is_not_logged(conn):
    await conn.execute("DROP TYPE IF EXISTS qlog_mood; CREATE TYPE qlog_mood AS ENUM ('x')")
    try:
        records = []
        with conn.query_logger(records.append):
            assert await conn.fetchval("SELECT 'x'::qlog_mood") == 'x'
        await _settle()
        assert [r.query for r in records] == ["SELECT 'x'::qlog_mood"]
    finally:
        await conn.execute("DROP TYPE IF EXISTS qlog_mood")


async def test_prepared_statements_and_cursors_are_not_logged(conn):
    records = []
    stmt = await conn.prepare("SELECT generate_series(1, 3)")
    async with conn.transaction():
        with conn.query_logger(records.append):
            await stmt.fetch()
            assert [r[0] async for r in conn.cursor("SELECT 1")] == [1]
    await _settle()
    assert records == []


async def test_no_logger_means_no_logging_work(conn, monkeypatch):
    calls = []

    async def spy(*args):
        calls.append(args)
        raise AssertionError('must not be called')

    monkeypatch.setattr(type(conn._session), 'logged', spy)
    assert await conn.fetchval("SELECT 1") == 1
    assert await conn.execute("SELECT 1") == 'SELECT 1'
    await conn.executemany("SELECT $1::int", [(1,)])
    assert calls == []

"""executemany inside a transaction block: a failure on our side (a row that
does not encode, an argument source that raises) applies none of its rows and
leaves the caller's block as it was, wherever the failure comes; a row that
fails on the server fails the block, as any failed statement does."""
from __future__ import annotations

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.test_executemany import INSERT, _count, _syncs, table, wire_writes  # noqa: F401

#: Rows executemany() sends at a time (session._EXECUTEMANY_BATCH).
BATCH = 1000
TOTAL = 3000


def _rows(bad_at: int | None = None) -> list:
    rows = [(i, f'label {i}') for i in range(TOTAL)]
    if bad_at is not None:
        rows[bad_at] = (bad_at, 12345)      # not text: fails while encoding
    return rows


def _source(rows: list, raise_at: int | None = None):
    for i, row in enumerate(rows):
        if i == raise_at:
            raise RuntimeError(f'source failed at {i}')
        yield row


async def _asource(rows: list, raise_at: int | None = None):
    for i, row in enumerate(rows):
        if i == raise_at:
            raise RuntimeError(f'source failed at {i}')
        yield row


def _args(kind: str, rows: list, raise_at: int | None = None):
    if kind == 'list':
        return rows
    if kind == 'generator':
        return _source(rows, raise_at)
    return _asource(rows, raise_at)


async def _ids(conn) -> list:
    return [r['id'] for r in await conn.fetch('SELECT id FROM many_items ORDER BY id')]


async def _assert_block_survives(conn, monitor, run, error, match) -> None:
    """`run()` fails with `error` inside a block; the block commits the rest."""
    async with conn.transaction():
        await conn.execute(INSERT, -1, 'before')
        with pytest.raises(error, match=match):
            await run()
        assert conn.is_in_transaction()
        assert await _ids(conn) == [-1]
        await conn.execute(INSERT, -2, 'after')
    assert not conn.is_in_transaction()
    assert await _ids(monitor) == [-2, -1]


@pytest.mark.parametrize('kind', ['list', 'generator', 'async generator'])
@pytest.mark.parametrize('bad_at', [5, BATCH - 1, BATCH, 2500])
async def test_unencodable_row_leaves_the_block_as_it_was(table, monitor, kind, bad_at):
    conn = table
    await _assert_block_survives(
        conn, monitor, lambda: conn.executemany(INSERT, _args(kind, _rows(bad_at))),
        exceptions.DataError, rf'\$2 in row {bad_at}\b')


@pytest.mark.parametrize('kind', ['generator', 'async generator'])
@pytest.mark.parametrize('raise_at', [10, BATCH, 1500])
async def test_failing_source_leaves_the_block_as_it_was(table, monitor, kind, raise_at):
    conn = table
    await _assert_block_survives(
        conn, monitor, lambda: conn.executemany(INSERT, _args(kind, _rows(), raise_at)),
        RuntimeError, f'source failed at {raise_at}')


async def test_unencodable_row_in_a_nested_transaction_leaves_both_blocks(table, monitor):
    conn = table
    async with conn.transaction():
        await conn.execute(INSERT, -3, 'outer')
        async with conn.transaction():
            await _assert_block_survives_inside(conn)
        assert await _ids(conn) == [-3, -2, -1]
    assert await _ids(monitor) == [-3, -2, -1]


async def _assert_block_survives_inside(conn) -> None:
    await conn.execute(INSERT, -1, 'before')
    with pytest.raises(exceptions.DataError, match=r'row 2500\b'):
        await conn.executemany(INSERT, _rows(2500))
    await conn.execute(INSERT, -2, 'after')


async def test_prepared_statement_failure_leaves_the_block_as_it_was(table, monitor):
    # A PreparedStatement's named statement (not the unnamed one).
    conn = table
    stmt = await conn.prepare(INSERT)
    await _assert_block_survives(conn, monitor, lambda: stmt.executemany(_rows(2500)),
                                 exceptions.DataError, r'row 2500\b')


async def test_failure_without_statement_cache_leaves_the_block_as_it_was(
        table, monitor, connect_kwargs):
    # The unnamed statement, parsed in the same pipeline as the savepoint.
    conn = await mypgdriver.connect(**connect_kwargs, statement_cache_size=0)
    try:
        await _assert_block_survives(
            conn, monitor, lambda: conn.executemany(INSERT, _source(_rows(), 1500)),
            RuntimeError, 'source failed at 1500')
        async with conn.transaction():
            await conn.executemany(INSERT, _rows()[:2500])
        assert await _count(monitor) == 2502
        assert await conn.fetch("SELECT name FROM pg_prepared_statements") == []
    finally:
        await conn.close()


async def test_fetchmany_failure_leaves_the_block_as_it_was(table, monitor):
    conn = table
    await _assert_block_survives(
        conn, monitor,
        lambda: conn.fetchmany(INSERT + ' RETURNING id', _rows(2500)),
        exceptions.DataError, r'row 2500\b')


async def test_many_batches_in_a_block_are_applied_with_the_block(table, monitor):
    conn = table
    async with conn.transaction():
        await conn.execute(INSERT, -1, 'before')
        assert await conn.executemany(INSERT, _source(_rows())) is None
        returned = await conn.fetchmany(
            INSERT + ' RETURNING id', [(i, 'x') for i in range(TOTAL, TOTAL + 1500)])
        assert [r['id'] for r in returned] == list(range(TOTAL, TOTAL + 1500))
        assert conn.is_in_transaction()
    assert await _count(monitor) == 1 + TOTAL + 1500


async def test_the_savepoint_travels_in_the_pipeline_of_the_rows(table):
    # No savepoint for one batch (nothing is written before it is encoded
    # whole); for more, SAVEPOINT in front of the rows and RELEASE in front
    # of the only Sync: no extra round trip.
    conn = table
    await conn.executemany(INSERT, _rows()[:1])     # prepare the statement first
    await conn.execute('TRUNCATE many_items')
    async with conn.transaction():
        with wire_writes(conn) as chunks:
            await conn.executemany(INSERT, _rows()[1:BATCH])
        wire = b''.join(chunks)
        assert b'SAVEPOINT' not in wire and _syncs(chunks) == 1
        with wire_writes(conn) as chunks:
            await conn.executemany(INSERT, _rows()[BATCH:])
        wire = b''.join(chunks)
        assert _syncs(chunks) == 1
        assert wire.count(b'SAVEPOINT mypg_savepoint_') == 2
        assert wire.index(b'\x00SAVEPOINT ') < wire.index(b'label 1000')
        assert wire.index(b'RELEASE SAVEPOINT ') > wire.index(b'label 2999')
    assert await _count(conn) == TOTAL - 1


async def test_a_new_cached_statement_is_parsed_ahead_of_the_savepoint(table, monitor):
    # A cached statement is created by the Parse in front of its first Bind:
    # that Parse goes ahead of the savepoint, so that an error of the Parse
    # is still recognised as the Parse's.  The statement outlives the
    # rollback to the savepoint.
    conn = table
    query = INSERT + '  -- new'
    async with conn.transaction():
        await conn.execute(INSERT, -1, 'before')
        with wire_writes(conn) as chunks:
            with pytest.raises(exceptions.DataError, match=r'row 2500\b'):
                await conn.executemany(query, _rows(2500))
        await conn.executemany(query, _rows()[:2500])
    [first_batch] = [chunk for chunk in chunks if b'\x00SAVEPOINT ' in chunk]
    assert b'\x00__mypg_' in first_batch
    assert first_batch.index(b'-- new\x00') < first_batch.index(b'\x00SAVEPOINT ')
    assert await _count(monitor) == 2501


async def test_a_server_error_still_fails_the_block(table, monitor):
    conn = table
    rows = _rows()
    rows[1500] = (1500, 'bad')              # violates the CHECK constraint
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        async with conn.transaction():
            await conn.execute(INSERT, -1, 'before')
            with pytest.raises(exceptions.CheckViolationError):
                await conn.executemany(INSERT, rows)
            assert conn.is_in_transaction()
            await conn.execute('SELECT 1')
    assert not conn.is_in_transaction()
    assert await _count(monitor) == 0


@pytest.mark.parametrize('kind', ['generator', 'async generator'])
async def test_a_server_error_before_a_failing_source_still_fails_the_block(
        table, monitor, kind):
    # The server's error comes first in row order and is raised: the block
    # is failed, as after any server error, even though our side failed too.
    conn = table
    rows = _rows()
    rows[5] = (5, 'bad')
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        async with conn.transaction():
            await conn.execute(INSERT, -1, 'before')
            with pytest.raises(exceptions.CheckViolationError):
                await conn.executemany(INSERT, _args(kind, rows, 1500))
            await conn.execute('SELECT 1')
    assert await _count(monitor) == 0


@pytest.mark.parametrize('bad_at', [5, 2500])
async def test_outside_a_block_nothing_is_applied(table, bad_at):
    conn = table
    with pytest.raises(exceptions.DataError, match=rf'row {bad_at}\b'):
        await conn.executemany(INSERT, _rows(bad_at))
    with pytest.raises(RuntimeError, match='source failed at 1500'):
        await conn.executemany(INSERT, _source(_rows(), 1500))
    assert not conn.is_in_transaction()
    assert await _count(conn) == 0

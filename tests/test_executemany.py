"""executemany on a live server: one pipeline (counted on the wire), atomic,
the failing row named, any iterable or async iterable."""
from __future__ import annotations

import asyncio
import contextlib

import pytest

import mypgdriver
from mypgdriver import exceptions

INSERT = "INSERT INTO many_items (id, label) VALUES ($1, $2)"
SYNC = b'S\x00\x00\x00\x04'


@pytest.fixture
async def table(conn):
    await conn.execute("""
        DROP TABLE IF EXISTS many_items;
        CREATE TABLE many_items (id int PRIMARY KEY, label text CHECK (label <> 'bad'))""")
    yield conn
    await conn.execute("DROP TABLE IF EXISTS many_items")


async def _count(conn) -> int:
    return await conn.fetchval("SELECT count(*) FROM many_items")


@contextlib.contextmanager
def wire_writes(conn):
    """Record every chunk the connection writes to its socket."""
    transport = conn._protocol.transport
    chunks: list[bytes] = []
    original = transport.write

    def write(data):
        chunks.append(bytes(data))
        return original(data)

    transport.write = write
    try:
        yield chunks
    finally:
        del transport.write


def _syncs(chunks: list[bytes]) -> int:
    # Sync is the only message whose type byte 'S' is followed by length 4;
    # Bind/Execute bodies here never contain that byte sequence.
    return sum(chunk.count(SYNC) for chunk in chunks)


async def test_ten_thousand_rows_go_in_one_pipeline(table):
    conn = table
    rows = [(i, f'label {i}') for i in range(10_000)]
    await conn.executemany(INSERT, rows[:1])     # prepare the statement first
    await conn.execute("TRUNCATE many_items")
    with wire_writes(conn) as chunks:
        assert await conn.executemany(INSERT, rows) is None
    assert await _count(conn) == 10_000
    assert await conn.fetchval("SELECT label FROM many_items WHERE id = 9999") == 'label 9999'
    # One Sync: one implicit transaction and one round trip for all rows,
    # in few network writes (batches), not one per row.
    assert _syncs(chunks) == 1
    assert len(chunks) <= 20


async def test_bad_row_fails_with_its_index_and_nothing_is_inserted(table):
    conn = table
    rows = [(i, f'label {i}') for i in range(10_000)]
    rows[7777] = (7777, 12345)          # not text: fails while encoding
    await conn.executemany(INSERT, rows[:1])
    await conn.execute("TRUNCATE many_items")
    with wire_writes(conn) as chunks:
        with pytest.raises(exceptions.DataError, match=r'\$2 in row 7777\b'):
            await conn.executemany(INSERT, rows)
    # Rows 0-6999 were already on the wire: the pipeline was failed on
    # purpose before its only Sync, so the server rolled them back.  Then
    # the refused argument made the driver describe the cached statement
    # again (unnamed Parse/Describe/Sync, one write) to see whether the
    # schema changed its parameter types: it did not, so the error stands.
    assert _syncs(chunks[:-1]) == 1
    assert chunks[-1].startswith(b'P\x00\x00') and _syncs(chunks[-1:]) == 1
    assert await _count(conn) == 0
    assert conn.is_in_transaction() is False
    assert await conn.fetchval("SELECT 1") == 1


async def test_row_rejected_by_the_server_rolls_back_every_row(table):
    conn = table
    rows = [(i, f'label {i}') for i in range(10_000)]
    rows[5000] = (5000, 'bad')           # violates the CHECK constraint
    await conn.executemany(INSERT, rows[:1])
    await conn.execute("TRUNCATE many_items")
    with wire_writes(conn) as chunks:
        with pytest.raises(exceptions.CheckViolationError):
            await conn.executemany(INSERT, rows)
    assert _syncs(chunks) == 1
    assert await _count(conn) == 0
    assert await conn.fetchval("SELECT 1") == 1


async def test_duplicate_key_in_the_middle_rolls_back_every_row(table):
    conn = table
    rows = [(i, 'x') for i in range(100)] + [(50, 'dup')] + [(i, 'y') for i in range(100, 200)]
    with pytest.raises(exceptions.UniqueViolationError):
        await conn.executemany(INSERT, rows)
    assert await _count(conn) == 0


async def test_wrong_number_of_arguments_names_the_row(table):
    conn = table
    with pytest.raises(exceptions.InterfaceError, match=r'\(row 2\)'):
        await conn.executemany(INSERT, [(1, 'a'), (2, 'b'), (3,)])
    assert await _count(conn) == 0


async def test_generator_and_async_generator_inputs(table):
    conn = table

    def rows():
        for i in range(2500):
            yield (i, str(i))

    async def arows():
        for i in range(2500, 5000):
            yield [i, str(i)]

    await conn.executemany(INSERT, rows())
    await conn.executemany(INSERT, arows())
    assert await _count(conn) == 5000
    assert await conn.fetchval("SELECT sum(id) FROM many_items") == sum(range(5000))


async def test_async_generator_failing_midway_inserts_nothing(table):
    conn = table

    async def arows():
        for i in range(3000):
            if i == 2500:
                raise RuntimeError('source broke')
            yield (i, 'x')

    with pytest.raises(RuntimeError, match='source broke'):
        await conn.executemany(INSERT, arows())
    assert await _count(conn) == 0
    assert await conn.fetchval("SELECT 1") == 1


async def test_empty_input_does_nothing(table):
    conn = table
    await conn.executemany(INSERT, [])
    await conn.executemany(INSERT, iter(()))
    assert await _count(conn) == 0


async def test_executemany_inside_a_transaction_is_part_of_it(table):
    conn = table
    with pytest.raises(exceptions.UniqueViolationError):
        async with conn.transaction():
            await conn.executemany(INSERT, [(1, 'a'), (2, 'b')])
            assert await _count(conn) == 2
            await conn.executemany(INSERT, [(3, 'c'), (1, 'again')])
    assert await _count(conn) == 0
    async with conn.transaction():
        await conn.executemany(INSERT, [(1, 'a'), (2, 'b')])
    assert await _count(conn) == 2


async def test_prepared_statement_executemany(table):
    conn = table
    stmt = await conn.prepare(INSERT)
    await stmt.executemany([(i, 'p') for i in range(1000)])
    assert await _count(conn) == 1000
    with pytest.raises(exceptions.DataError, match=r'row 3\b'):
        await stmt.executemany([(2000, 'a'), (2001, 'b'), (2002, 'c'), ('x', 'd')])
    assert await _count(conn) == 1000


async def test_without_statement_cache(table, connect_kwargs):
    other = await mypgdriver.connect(**connect_kwargs, statement_cache_size=0)
    try:
        await other.executemany(INSERT, [(i, 'n') for i in range(3000)])
        assert await _count(other) == 3000
        with pytest.raises(exceptions.DataError, match=r'row 0\b'):
            await other.executemany(INSERT, [('first row bad', 'n')])
        # The re-sent Parse of the failed call did not leak into this one.
        assert await other.fetchval("SELECT $1::int + 1", 1) == 2
        await other.executemany(INSERT, [(5000, 'n')])
        assert await _count(other) == 3001
        assert await other.fetch("SELECT name FROM pg_prepared_statements") == []
    finally:
        await other.close()


async def test_executemany_timeout_leaves_connection_usable(table):
    conn = table
    with pytest.raises(asyncio.TimeoutError):
        await conn.executemany(
            "INSERT INTO many_items (id, label) SELECT $1, pg_sleep(0.2)::text",
            [(i,) for i in range(50)], timeout=0.3)
    assert await _count(conn) == 0
    assert await conn.fetchval("SELECT 7") == 7


async def test_a_row_that_is_not_a_sequence_is_named_with_its_type(conn):
    with pytest.raises(exceptions.DataError,
                       match=r"row 0 is of type int, not a sequence of values"):
        await conn.executemany("SELECT $1::int", [1, 2])
    assert await conn.fetchval("SELECT 1") == 1

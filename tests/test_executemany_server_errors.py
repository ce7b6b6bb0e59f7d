"""executemany when a row fails on the server: the arguments are not read any
further, and the server's error is raised even if the arguments fail too."""
from __future__ import annotations

import asyncio
import time

import pytest

from mypgdriver import exceptions
from tests.test_executemany import INSERT, _count, table  # noqa: F401  (fixture)

#: Rows executemany() sends at a time (session._EXECUTEMANY_BATCH).
BATCH = 1000


class Source:
    """Rows 0, 1, 2, ... with `dup_at` repeating row 0's key; counts the rows read.

    `raise_at`: the index at which the source raises RuntimeError.
    `pause_at`: the index before which it waits `pause` seconds (blocking the
    loop for a plain generator), so that the server has answered the rows
    sent before it.
    """

    def __init__(self, total: int, dup_at: int | None = None, raise_at: int | None = None,
                 pause_at: int | None = None, pause: float = 0.0) -> None:
        self.total = total
        self.dup_at = dup_at
        self.raise_at = raise_at
        self.pause_at = pause_at
        self.pause = pause
        self.read = 0

    def _row(self, i: int) -> tuple[int, str]:
        if i == self.raise_at:
            raise RuntimeError(f'source failed at {i}')
        self.read += 1
        return (0 if i == self.dup_at else i, 'x')

    def rows(self):
        for i in range(self.total):
            if i == self.pause_at:
                time.sleep(self.pause)
            yield self._row(i)

    async def arows(self):
        for i in range(self.total):
            if i == self.pause_at:
                await asyncio.sleep(self.pause)
            yield self._row(i)


async def _assert_nothing_inserted(conn) -> None:
    assert await _count(conn) == 0
    assert conn.is_in_transaction() is False
    assert await conn.fetchval('SELECT 1') == 1


@pytest.mark.parametrize('dup_at', [1, 500, BATCH - 1])
async def test_a_server_error_stops_reading_a_generator(table, dup_at):
    # The duplicate goes in the first batch; the source pauses before the
    # second, long enough for the server's error to be back.  The error is
    # read between batches: at most two more batches are taken.
    conn = table
    source = Source(200_000, dup_at=dup_at, pause_at=BATCH, pause=0.5)
    with pytest.raises(exceptions.UniqueViolationError, match='many_items_pkey'):
        await conn.executemany(INSERT, source.rows())
    assert source.read <= 3 * BATCH
    await _assert_nothing_inserted(conn)


@pytest.mark.parametrize('dup_at', [1, 500, BATCH - 1])
async def test_a_server_error_stops_reading_an_async_generator(table, dup_at):
    # An async source is checked after every row: once the error is back, no
    # further row is taken.
    conn = table
    source = Source(200_000, dup_at=dup_at, pause_at=BATCH, pause=0.5)
    with pytest.raises(exceptions.UniqueViolationError, match='many_items_pkey'):
        await conn.executemany(INSERT, source.arows())
    assert source.read == BATCH + 1
    await _assert_nothing_inserted(conn)


async def test_a_server_error_stops_an_endless_async_generator_that_never_waits(table):
    conn = table

    async def endless():
        yield (0, 'x')
        yield (0, 'dup')
        i = 1
        while True:
            i += 1
            yield (i, 'x')

    with pytest.raises(exceptions.UniqueViolationError):
        await asyncio.wait_for(conn.executemany(INSERT, endless()), 20)
    await _assert_nothing_inserted(conn)


# (dup_at, raise_at): the source fails after a row that the server rejects,
# in the same batch, at the batch boundaries, in a later batch, far later.
FAILURE_POINTS = [
    (1, 2), (1, 5), (3, 4), (1, BATCH - 1), (1, BATCH), (1, BATCH + 1),
    (BATCH - 2, BATCH - 1), (BATCH - 1, BATCH), (BATCH, BATCH + 1),
    (BATCH + 500, BATCH + 700), (1, 2 * BATCH + 3), (10, 50_000),
]


@pytest.mark.parametrize('asynchronous', [False, True])
async def test_the_server_error_wins_over_a_later_failure_of_the_source(table, asynchronous):
    conn = table
    for dup_at, raise_at in FAILURE_POINTS:
        source = Source(100_000, dup_at=dup_at, raise_at=raise_at)
        rows = source.arows() if asynchronous else source.rows()
        with pytest.raises(exceptions.UniqueViolationError, match='many_items_pkey') as info:
            await conn.executemany(INSERT, rows)
        if source.read == raise_at:
            # The source did fail: its exception is kept as the context.
            assert isinstance(info.value.__context__, RuntimeError)
            assert str(info.value.__context__) == f'source failed at {raise_at}'
        await _assert_nothing_inserted(conn)


@pytest.mark.parametrize('asynchronous', [False, True])
async def test_a_failing_source_without_server_errors_raises_its_own_error(table, asynchronous):
    conn = table
    for raise_at in (0, 1, BATCH - 1, BATCH, BATCH + 1, 2 * BATCH + 3):
        source = Source(100_000, raise_at=raise_at)
        rows = source.arows() if asynchronous else source.rows()
        with pytest.raises(RuntimeError, match=f'^source failed at {raise_at}$'):
            await conn.executemany(INSERT, rows)
        assert source.read == raise_at
        await _assert_nothing_inserted(conn)


async def test_the_server_error_wins_over_a_bad_row_in_a_later_batch(table):
    conn = table
    for bad_at in (BATCH, BATCH + 1, 3 * BATCH - 1):
        rows = [(i, 'x') for i in range(4 * BATCH)]
        rows[1] = (0, 'dup')
        rows[bad_at] = ('not an int', 'x')
        with pytest.raises(exceptions.UniqueViolationError):
            await conn.executemany(INSERT, rows)
        await _assert_nothing_inserted(conn)


async def test_fetchmany_stops_on_the_server_error_too(table):
    conn = table
    source = Source(200_000, dup_at=1, raise_at=100_000, pause_at=BATCH, pause=0.5)
    with pytest.raises(exceptions.UniqueViolationError):
        await conn.fetchmany(INSERT + ' RETURNING id', source.rows())
    assert source.read <= 3 * BATCH
    await _assert_nothing_inserted(conn)

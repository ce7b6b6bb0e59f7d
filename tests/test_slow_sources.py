"""A call's timeout bounds it whatever its source of rows: slow synchronous sources.

A generator, an iterator or a file object that takes its time holds the
thread: the event loop cannot run the timeout's timer meanwhile, and the
sync API runs timers only while it waits.  executemany(), copy_records_to_table()
and copy_to_table() check the deadline between rows, records and chunks, so
that the call ends soon after its timeout with nothing written, whether the
source is slow at its start, in its middle, at its end, or all along.  Rows
are counted from another session.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Callable, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from tests.support.fixtures import AsyncConnect
from tests.support.waiting import poll

TIMEOUT = 0.5
ROWS = 60
# (Slow rows) -> seconds each row takes; the total is well past TIMEOUT.
SLOWNESS: dict[str, Callable[[int], float]] = {
    'all_along': lambda i: 0.05,
    'start': lambda i: 1.2 if i == 0 else 0.0,
    'middle': lambda i: 1.2 if i == ROWS // 2 else 0.0,
    'end': lambda i: 1.2 if i == ROWS else 0.0,      # before the source says it is done
}
# The longest a single step of a source takes, beyond which the call cannot
# notice its deadline, plus a margin for a loaded machine.
LATEST_END = TIMEOUT + 1.2 + 1.5


def slow_generator(slowness: Callable[[int], float], make: Callable[[int], Any]) -> Iterator[Any]:
    for i in range(ROWS + 1):
        time.sleep(slowness(i))
        if i == ROWS:
            return
        yield make(i)


class SlowIterator:
    """An iterator object (not a generator), as a cursor over another database would be."""

    def __init__(self, slowness: Callable[[int], float], make: Callable[[int], Any]) -> None:
        self.slowness = slowness
        self.make = make
        self.i = 0

    def __iter__(self) -> SlowIterator:
        return self

    def __next__(self) -> Any:
        i = self.i
        self.i += 1
        time.sleep(self.slowness(i))
        if i >= ROWS:
            raise StopIteration
        return self.make(i)


class SlowFile:
    """A binary file object whose read() takes its time: one line of COPY text per read."""

    def __init__(self, slowness: Callable[[int], float]) -> None:
        self.slowness = slowness
        self.i = 0

    def read(self, size: int = -1) -> bytes:
        i = self.i
        self.i += 1
        time.sleep(self.slowness(i))
        if i >= ROWS:
            return b''
        return f'{i}\n'.encode()


SOURCES = {
    'generator': slow_generator,
    'iterator': SlowIterator,
}


@pytest.fixture
def table(sync_observer: mypgdriver.sync.Connection) -> Iterator[str]:
    name = f'slow_source_{uuid.uuid4().hex[:10]}'
    sync_observer.execute(f'CREATE TABLE {name} (v int)')
    yield name
    sync_observer.execute(f'DROP TABLE {name}')


def rows_in(sync_observer: mypgdriver.sync.Connection, table: str) -> int:
    return int(sync_observer.fetchval(f'SELECT count(*) FROM {table}'))


def settled(sync_observer: mypgdriver.sync.Connection, pid: int) -> None:
    """Wait until backend `pid` is idle (not in a transaction): what it was sent is over."""
    state = poll(lambda: sync_observer.fetchval("SELECT state FROM pg_stat_activity WHERE pid = $1",
                                                pid),
                 lambda state: state == 'idle')
    assert state == 'idle', f'the backend never went idle: {state}'


OPERATIONS = ['executemany', 'copy_records_to_table', 'copy_to_table']


def make_call(conn: Any, operation: str, table: str, source: str,
              slowness: Callable[[int], float]) -> Any:
    """The call (a coroutine for an asyncio connection) feeding `table` from a slow source."""
    if operation == 'executemany':
        rows = SOURCES[source](slowness, lambda i: (i,))
        return conn.executemany(f'INSERT INTO {table} VALUES ($1)', rows, timeout=TIMEOUT)
    if operation == 'copy_records_to_table':
        records = SOURCES[source](slowness, lambda i: (i,))
        return conn.copy_records_to_table(table, records=records, timeout=TIMEOUT)
    if source == 'file':
        return conn.copy_to_table(table, source=SlowFile(slowness), timeout=TIMEOUT)
    chunks = SOURCES[source](slowness, lambda i: f'{i}\n'.encode())
    return conn.copy_to_table(table, source=chunks, timeout=TIMEOUT)


CASES = [(op, source, slow)
         for op in OPERATIONS
         for source in (['generator', 'iterator', 'file'] if op == 'copy_to_table'
                        else ['generator', 'iterator'])
         for slow in SLOWNESS]
IDS = [f'{op}-{source}-{slow}' for op, source, slow in CASES]


@pytest.mark.parametrize('operation,source,slow', CASES, ids=IDS)
def test_sync_slow_source_times_out_and_writes_nothing(
        dsn: str, sync_observer: mypgdriver.sync.Connection, table: str,
        operation: str, source: str, slow: str) -> None:
    with mypgdriver.sync.connect(dsn) as conn:
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            make_call(conn, operation, table, source, SLOWNESS[slow])
        elapsed = time.monotonic() - started
        assert elapsed < LATEST_END, elapsed
        settled(sync_observer, conn.get_server_pid())
        assert rows_in(sync_observer, table) == 0
        # The connection tells the server's state and goes on.
        assert conn.is_in_transaction() is False
        assert conn.fetchval('SELECT 1') == 1
        conn.execute(f'INSERT INTO {table} VALUES (-1)')
        assert rows_in(sync_observer, table) == 1


@pytest.mark.parametrize('operation,source,slow', CASES, ids=IDS)
async def test_slow_source_times_out_and_writes_nothing(
        dsn: str, open_conn: AsyncConnect, sync_observer: mypgdriver.sync.Connection,
        table: str, operation: str, source: str, slow: str) -> None:
    conn = await open_conn(dsn)
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await make_call(conn, operation, table, source, SLOWNESS[slow])
    elapsed = time.monotonic() - started
    assert elapsed < LATEST_END, elapsed
    settled(sync_observer, conn.get_server_pid())
    assert rows_in(sync_observer, table) == 0
    assert conn.is_in_transaction() is False
    assert await conn.fetchval('SELECT 1') == 1
    await conn.execute(f'INSERT INTO {table} VALUES (-1)')
    assert rows_in(sync_observer, table) == 1


@pytest.mark.parametrize('operation', OPERATIONS)
def test_sync_slow_source_inside_a_transaction_leaves_the_block_usable(
        dsn: str, sync_observer: mypgdriver.sync.Connection, table: str, operation: str) -> None:
    # In a block, a timed-out stream is rolled back to where it started (or
    # the block is failed, as after any server error): nothing it sent is
    # committed with the block.
    with mypgdriver.sync.connect(dsn) as conn:
        with pytest.raises(asyncio.TimeoutError):
            with conn.transaction():
                conn.execute(f'INSERT INTO {table} VALUES (-2)')
                make_call(conn, operation, table, 'generator', SLOWNESS['all_along'])
        assert conn.is_in_transaction() is False
        settled(sync_observer, conn.get_server_pid())
        assert rows_in(sync_observer, table) == 0


def test_sync_fast_source_within_its_timeout_writes_everything(
        dsn: str, sync_observer: mypgdriver.sync.Connection, table: str) -> None:
    # The checks never fire early: a source that keeps to the deadline is
    # written whole, from a generator and an iterator alike.
    with mypgdriver.sync.connect(dsn) as conn:
        for operation in OPERATIONS:
            for source in ('generator', 'iterator'):
                make_call(conn, operation, table, source, lambda i: 0.001)
    assert rows_in(sync_observer, table) == 6 * ROWS


# --- a timeout after the end of the stream was sent: the server's outcome is told -----------

@pytest.mark.parametrize('held', [False, True], ids=['cancel_arrives', 'cancel_too_late'])
def test_sync_timeout_after_the_sync_reports_what_the_server_did(
        pg_cluster: Any, sync_observer: mypgdriver.sync.Connection, table: str,
        held: bool) -> None:
    # All rows are sent with the Sync at once (a list); the statement takes
    # 0.1 s per row, so the timeout fires while the server works.  If the
    # cancel arrives, nothing is committed and the caller gets TimeoutError;
    # if it comes too late (held back by the proxy until the server has
    # committed), the caller is told the rows were written: the call
    # returns, rather than a TimeoutError for rows that are in the table.
    import threading

    from tests.support.tcp_proxy import TcpProxy
    release = threading.Event()
    hold = release.wait if held else None
    with TcpProxy(pg_cluster.host, pg_cluster.port, hold_cancel=hold) as proxy:
        with mypgdriver.sync.connect(host='127.0.0.1', port=proxy.port, user='postgres',
                                     database='postgres', ssl='disable') as conn:
            pid = conn.get_server_pid()

            def release_after_commit() -> None:
                # (At the latest after 10 s: when the cancel arrives, no rows ever come.)
                poll(lambda: rows_in(sync_observer, table), lambda rows: rows >= 10, timeout=10)
                release.set()
            releaser = threading.Thread(target=release_after_commit)
            releaser.start()
            try:
                query = f'INSERT INTO {table} SELECT $1 FROM pg_sleep(0.1)'
                if held:
                    assert conn.executemany(query, [(i,) for i in range(10)],
                                            timeout=0.4) is None
                else:
                    with pytest.raises(asyncio.TimeoutError) as caught:
                        conn.executemany(query, [(i,) for i in range(10)], timeout=0.4)
                    assert 'nothing was written' in str(caught.value)
            finally:
                release.set()
                releaser.join()
            settled(sync_observer, pid)
            assert rows_in(sync_observer, table) == (10 if held else 0)
            assert conn.is_in_transaction() is False
            assert conn.fetchval('SELECT 1') == 1

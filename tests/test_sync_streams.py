"""Large streams through the sync glue: no deadlock, no select() limit (issue 24).

A COPY FROM STDIN or executemany stream larger than both socket buffers,
against a server that writes to us meanwhile (a NOTICE per row), deadlocked
with blocking writes: our sendall() waited for the server to read, the
server waited for us to read.  The glue's transports now write without
blocking, keep what the socket does not take, pause the feeder above a
high-water mark and flush while reading (mypgdriver/sync/transport.py).

Each test runs under a watchdog: past its limit it shuts the connection's
socket down, which ends a deadlocked call with an error, and fails the test
as a deadlock.  The calls run through the prototype glue with no event loop
(the ``no_event_loop`` fixture of tests/support/fixtures.py refuses one).
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import os
import resource
import socket
import threading
import time
from typing import Any, Iterator

import pytest

import mypgdriver.sync as sync
from tests.support.fixtures import SyncConnect

pytestmark = pytest.mark.usefixtures('no_event_loop')

# About 64 MiB of COPY text: rows of a number and PAYLOAD_CHARS characters.
PAYLOAD_CHARS = 1000
ROWS_64_MB = 64 * 1024 * 1024 // (PAYLOAD_CHARS + 8)


@pytest.fixture
def timed_sync_conn(open_sync_conn: SyncConnect) -> Any:
    """A mypgdriver.sync connection with a connect timeout (the plugin's ``sync_conn`` has none)."""
    return open_sync_conn(timeout=10)


@contextlib.contextmanager
def deadlock_watchdog(conn: Any, seconds: float) -> Iterator[None]:
    """Fail the test if the block takes longer than `seconds`.

    A deadlocked call blocks in the kernel, where no timer of ours runs: a
    thread shuts the socket down, which ends the blocked send or receive.
    """
    fired = threading.Event()

    def fire() -> None:
        fired.set()
        transport = conn._aconn._protocol.transport
        with contextlib.suppress(OSError):
            transport.sock.shutdown(socket.SHUT_RDWR)
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except BaseException:
        if fired.is_set():
            pytest.fail(f'deadlock: still running after {seconds} s')
        raise
    finally:
        timer.cancel()
    if fired.is_set():
        pytest.fail(f'deadlock: still running after {seconds} s')


def noisy_table(conn: Any, name: str, notice: str = 'NEW.payload') -> None:
    """A temporary table whose rows each make the server send a NOTICE of `notice`."""
    conn.execute(f'''
        CREATE FUNCTION pg_temp.{name}_notice() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE NOTICE '%', {notice}; RETURN NEW; END $$''')
    conn.execute(f'CREATE TEMP TABLE {name} (id int, payload text)')
    conn.execute(f'CREATE TRIGGER notice_per_row BEFORE INSERT ON {name} '
                 f'FOR EACH ROW EXECUTE FUNCTION pg_temp.{name}_notice()')


def copy_text(rows: int, first: int = 0) -> bytes:
    payload = b'x' * PAYLOAD_CHARS
    return b''.join(b'%d\t%s\n' % (i, payload) for i in range(first, first + rows))


def copy_chunks(rows: int, per_chunk: int = 64) -> Iterator[bytes]:
    for first in range(0, rows, per_chunk):
        yield copy_text(min(per_chunk, rows - first), first)


def count_log_messages(conn: Any) -> list[Any]:
    seen: list[Any] = []
    conn._aconn.add_log_listener(lambda _conn, message: seen.append(message))
    return seen


@pytest.mark.parametrize('source', ['file object', 'iterable of bytes'])
def test_copy_in_of_64_mb_completes_while_the_server_sends_a_notice_per_row(
        timed_sync_conn: Any, source: str) -> None:
    # Each row comes back as a NOTICE of its payload: 64 MB each way.
    noisy_table(timed_sync_conn, 'copy_target')
    notices = count_log_messages(timed_sync_conn)
    data: Any = (io.BytesIO(copy_text(ROWS_64_MB)) if source == 'file object'
                 else copy_chunks(ROWS_64_MB))
    with deadlock_watchdog(timed_sync_conn, 60):
        status = timed_sync_conn.copy_to_table('copy_target', source=data)
    assert status == f'COPY {ROWS_64_MB}'
    assert timed_sync_conn.fetchval('SELECT count(*) FROM copy_target') == ROWS_64_MB
    assert timed_sync_conn.fetchval('SELECT count(DISTINCT id) FROM copy_target') == ROWS_64_MB
    assert len(notices) == ROWS_64_MB


def test_copy_records_of_32_mb_completes_while_the_server_sends_a_notice_per_row(
        timed_sync_conn: Any) -> None:
    noisy_table(timed_sync_conn, 'record_target')
    notices = count_log_messages(timed_sync_conn)
    rows = 32 * 1024 * 1024 // (PAYLOAD_CHARS + 8)
    payload = 'y' * PAYLOAD_CHARS
    with deadlock_watchdog(timed_sync_conn, 60):
        status = timed_sync_conn.copy_records_to_table(
            'record_target', records=((i, payload) for i in range(rows)))
    assert status == f'COPY {rows}'
    assert timed_sync_conn.fetchval('SELECT count(*) FROM record_target') == rows
    assert timed_sync_conn.fetchval('SELECT sum(id) FROM record_target') == rows * (rows - 1) // 2
    assert len(notices) == rows


@pytest.mark.parametrize('noisy', [False, True], ids=['plain', 'notice per row'])
def test_executemany_of_200000_rows_inserts_them_all(timed_sync_conn: Any, noisy: bool) -> None:
    rows = 200_000
    if noisy:
        noisy_table(timed_sync_conn, 'many_target')
        notices = count_log_messages(timed_sync_conn)
    else:
        timed_sync_conn.execute('CREATE TEMP TABLE many_target (id int, payload text)')
    payload = 'z' * 100
    with deadlock_watchdog(timed_sync_conn, 60):
        timed_sync_conn.executemany('INSERT INTO many_target VALUES ($1, $2)',
                              ((i, payload) for i in range(rows)))
    assert timed_sync_conn.fetchval('SELECT count(*) FROM many_target') == rows
    assert timed_sync_conn.fetchval('SELECT sum(id) FROM many_target') == rows * (rows - 1) // 2
    if noisy:
        assert len(notices) == rows


def test_copy_out_of_64_mb_into_a_file_object(timed_sync_conn: Any) -> None:
    rows = ROWS_64_MB
    output = io.BytesIO()
    with deadlock_watchdog(timed_sync_conn, 60):
        status = timed_sync_conn.copy_from_query(
            f"SELECT i, repeat('x', {PAYLOAD_CHARS}) FROM generate_series(0, $1 - 1) i",
            rows, output=output)
    assert status == f'COPY {rows}'
    assert output.getvalue() == copy_text(rows)


def test_a_timeout_in_the_middle_of_a_large_copy_in_commits_nothing_and_stays_in_sync(
        timed_sync_conn: Any) -> None:
    # A slow server (a short sleep per row): our output backs up, the feeder
    # waits for the drain, and the timeout must interrupt that wait.
    timed_sync_conn.execute('''
        CREATE FUNCTION pg_temp.slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.0005); RETURN NEW; END $$''')
    timed_sync_conn.execute('CREATE TEMP TABLE slow_target (id int, payload text)')
    timed_sync_conn.execute('CREATE TRIGGER slow_per_row BEFORE INSERT ON slow_target '
                      'FOR EACH ROW EXECUTE FUNCTION pg_temp.slow_row()')
    pid = timed_sync_conn._aconn.get_server_pid()
    fed: list[int] = []

    def chunks() -> Iterator[bytes]:
        for chunk in copy_chunks(ROWS_64_MB):
            fed.append(len(chunk))
            yield chunk
    started = time.monotonic()
    with deadlock_watchdog(timed_sync_conn, 30):
        with pytest.raises(asyncio.TimeoutError):
            timed_sync_conn.copy_to_table('slow_target', source=chunks(), timeout=1.0)
        elapsed = time.monotonic() - started
        # in the middle: some was fed, not all
        assert 0 < sum(fed) < len(copy_text(1)) * ROWS_64_MB
        assert timed_sync_conn.fetchval('SELECT count(*) FROM slow_target', timeout=10) == 0
        assert timed_sync_conn.fetchval('SELECT pg_backend_pid()') == pid
        assert not timed_sync_conn._aconn.is_in_transaction()
    assert elapsed < 1.0 + 5.0, elapsed     # (a loaded machine adds a fraction of 5 s)
    # the connection goes on streaming after it
    timed_sync_conn.execute('DROP TRIGGER slow_per_row ON slow_target')
    assert timed_sync_conn.copy_to_table('slow_target', source=copy_chunks(1000)) == 'COPY 1000'


def test_a_connection_above_fd_1024_waits_with_a_timeout(pg_cluster: Any) -> None:
    # select() refuses file descriptors >= 1024; a timer pending makes the
    # driver wait for the socket with a timeout rather than a blocking recv().
    wanted = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted + 100:
        if hard != resource.RLIM_INFINITY and hard < wanted + 100:
            pytest.skip(f'RLIMIT_NOFILE hard limit {hard} is too low')
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted + 100, hard))
    probe = socket.socket()
    copies: list[int] = []
    try:
        while len(copies) < wanted:
            copies.append(os.dup(probe.fileno()))
        conn = sync.connect(pg_cluster.dsn(), timeout=10)
        try:
            assert conn._aconn._protocol.transport.sock.fileno() >= 1024
            with deadlock_watchdog(conn, 30):
                assert conn.fetchval('SELECT pg_sleep(0.05)::text || $1', 'x', timeout=5) == 'x'
                with pytest.raises(asyncio.TimeoutError):
                    conn.fetchval('SELECT pg_sleep(5)', timeout=0.1)
                assert conn.fetchval('SELECT 1+1', timeout=5) == 2
        finally:
            conn.close()
    finally:
        for fd in copies:
            os.close(fd)
        probe.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_small_query_allocates_no_read_sized_buffer(pg_cluster: Any) -> None:
    # Each read goes into the transport's own buffer (recv_into): a 256 KiB
    # bytes object per read was served by mmap and shrunk and freed with
    # mremap and munmap, three syscalls and ~35 us of CPU per query.
    import tracemalloc

    import mypgdriver.sync

    with mypgdriver.sync.connect(pg_cluster.dsn()) as conn:
        assert conn.fetchval('SELECT 1') == 1
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            for _ in range(20):
                assert conn.fetchval('SELECT $1::int + 1', 1) == 2
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 64 * 1024, peak

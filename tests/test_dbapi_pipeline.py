"""mypgdriver.dbapi's pipeline mode (``with conn.pipeline():``, psycopg 3's shape), against a server.

The cursors' execute() queues on the sync connection's pipeline
(mypgdriver/dbapi/pipeline.py); fetch*() and the result attributes wait for
the statement's own answer.  Checked: order and round trips, errors in the
middle (the server's class, PipelineAborted behind it, nothing of the
segment applied), the implicit BEGIN outside autocommit, commit() and
rollback() and transaction() inside, nesting, what is refused, and the
connection usable after each case.
"""
from __future__ import annotations

from typing import Any

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver import exceptions
from mypgdriver.dbapi import Connection

pytestmark = pytest.mark.usefixtures('no_event_loop')


@pytest.fixture
def table(dbapi_conn: Connection) -> str:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('DROP TABLE IF EXISTS dbapi_pipe')
    cur.execute('CREATE TABLE dbapi_pipe (id int PRIMARY KEY, v text)')
    dbapi_conn.autocommit = False
    return 'dbapi_pipe'


def count_waits(conn: Connection) -> list[int]:
    waits = [0]

    def hook() -> None:
        waits[0] += 1
    conn.link.connection._runner._glue.wait_hook = hook
    return waits


def stop_counting(conn: Connection) -> None:
    conn.link.connection._runner._glue.wait_hook = None


def assert_usable(conn: Connection) -> None:
    cur = conn.cursor()
    cur.execute('SELECT %s::int + 1', (41,))
    assert cur.fetchall() == [(42,)]
    conn.rollback()


def test_statements_are_sent_without_waiting_and_read_in_any_order(
        dbapi_conn: Connection, table: str, sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    for sql, params in ((f'INSERT INTO {table} VALUES (%s, %s)', (0, 'x')),
                        (f'SELECT v FROM {table} WHERE id = %s', (0,)),
                        (f'UPDATE {table} SET v = %s WHERE id = %s', ('y', 0)),
                        ('SELECT %s::int * 2', (0,))):
        cur.execute(sql, params)          # prepared and cached once
    cur.execute(f'TRUNCATE {table}')
    waits = count_waits(dbapi_conn)
    try:
        with dbapi_conn.pipeline():
            cursors = []
            for i in range(25):
                c1 = dbapi_conn.cursor()
                c1.execute(f'INSERT INTO {table} VALUES (%s, %s)', (i, 'a'))
                c2 = dbapi_conn.cursor()
                c2.execute(f'UPDATE {table} SET v = %s WHERE id = %s', (f'v{i}', i))
                c3 = dbapi_conn.cursor()
                c3.execute(f'SELECT v FROM {table} WHERE id = %s', (i,))
                c4 = dbapi_conn.cursor()
                c4.execute('SELECT %s::int * 2', (i,))
                cursors.append((c1, c2, c3, c4))
            assert waits == [0]         # nothing waited for yet
            # the last one first: one wait for all
            assert cursors[-1][3].fetchall() == [(48,)]
            assert waits == [1]
            assert cursors[0][2].fetchone() == ('v0',)
            assert cursors[0][0].rowcount == 1
            assert cursors[0][1].statusmessage == 'UPDATE 1'
            assert [c.name for c in cursors[0][2].description] == ['v']
            assert waits == [1]
    finally:
        stop_counting(dbapi_conn)
    assert [c[2].fetchall() for c in cursors[1:]] == [[(f'v{i}',)] for i in range(1, 25)]
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 25


def test_outside_autocommit_the_begin_is_queued_and_commit_commits(
        dbapi_conn: Connection, table: str, sync_observer: Any) -> None:
    assert not dbapi_conn.autocommit
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
        cur2 = dbapi_conn.cursor()
        cur2.execute(f'INSERT INTO {table} VALUES (%s, %s)', (2, 'b'))
        assert cur2.rowcount == 1
        assert dbapi_conn.link.in_transaction()
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
        dbapi_conn.commit()
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (3, 'c'))
    # The block's end is a sync point, not a commit: the transaction the
    # pipeline's BEGIN opened goes on.
    assert dbapi_conn.link.in_transaction()
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2
    dbapi_conn.rollback()
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2
    assert not dbapi_conn.link.in_transaction()


def test_rollback_inside(dbapi_conn: Connection, table: str, sync_observer: Any) -> None:
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
        dbapi_conn.rollback()
        cur.execute(f'SELECT count(*) FROM {table}')
        assert cur.fetchall() == [(0,)]
        dbapi_conn.rollback()
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(dbapi_conn)


def test_an_error_in_the_middle(dbapi_conn: Connection, table: str,
                                sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    with pytest.raises(exceptions.UniqueViolationError):
        with dbapi_conn.pipeline():
            first = dbapi_conn.cursor()
            first.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
            failing = dbapi_conn.cursor()
            failing.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'again'))
            behind = dbapi_conn.cursor()
            behind.execute(f'INSERT INTO {table} VALUES (%s, %s)', (2, 'b'))
            assert first.rowcount == 1          # it ran; the segment decides
            with pytest.raises(exceptions.PipelineAborted):
                behind.fetchall()
            # The failed statement's error was not read: the block's end raises it.
    with pytest.raises(dbapi.ProgrammingError, match='did not return rows'):
        behind.fetchall()       # its error was raised once
    # One segment, rolled back whole.
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(dbapi_conn)


def test_an_error_read_by_a_fetch_is_not_raised_again(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute('SELECT 1 / %s::int', (0,))
        with pytest.raises(exceptions.DivisionByZeroError):
            cur.fetchall()
    assert_usable(dbapi_conn)


def test_sync_points_make_segments(dbapi_conn: Connection, table: str,
                                   sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline() as p:
        cur = dbapi_conn.cursor()
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
        p.sync()
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 1
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'dup'))
        with pytest.raises(exceptions.UniqueViolationError):
            p.sync()
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (2, 'b'))
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2


def test_nested_blocks_sync_at_the_inner_end(dbapi_conn: Connection, table: str,
                                             sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        with dbapi_conn.pipeline():
            cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 1
        assert dbapi_conn.link.pipeline is not None
        cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (2, 'b'))
    assert dbapi_conn.link.pipeline is None
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2


def test_transaction_blocks_inside(dbapi_conn: Connection, table: str,
                                   sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        with dbapi_conn.transaction():
            cur = dbapi_conn.cursor()
            cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
            with pytest.raises(exceptions.UniqueViolationError):
                with dbapi_conn.transaction():      # a savepoint
                    cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'dup'))
                    cur.fetchall()
            cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (2, 'b'))
            assert cur.rowcount == 1
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2
    assert_usable(dbapi_conn)


def test_executemany_inside(dbapi_conn: Connection, table: str, sync_observer: Any) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.executemany(f'INSERT INTO {table} VALUES (%s, %s)', [(i, 'x') for i in range(10)])
        assert cur.rowcount == 10
        cur.executemany(f'INSERT INTO {table} VALUES (%s, %s) RETURNING id',
                        [(i, 'y') for i in range(10, 13)], returning=True)
        assert cur.fetchall() == [(10,)]
        assert cur.nextset() and cur.fetchall() == [(11,)]
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 13


def test_a_refused_str_is_queued_as_text(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute('SELECT %s::int * 2', (1,))
        cur.execute('SELECT %s::int * 2', ('21',))
        assert cur.fetchall() == [(42,)]
        with pytest.raises(exceptions.DataError):
            cur.execute('SELECT %s::int * 2', (object(),))
        cur.execute('SELECT %s::int * 2', (2,))
        assert cur.fetchall() == [(4,)]
    assert_usable(dbapi_conn)


def test_copy_and_server_cursors_are_refused_inside(dbapi_conn: Connection, table: str) -> None:
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        with pytest.raises(dbapi.NotSupportedError, match='COPY cannot run inside a pipeline'):
            cur.copy(f'COPY {table} FROM STDIN')
        named = dbapi_conn.cursor('pipe_named')
        with pytest.raises(dbapi.NotSupportedError, match='server-side cursor'):
            named.execute(f'SELECT * FROM {table}')
        cur.execute('SELECT %s::int', (5,))
        assert cur.fetchall() == [(5,)]
    assert_usable(dbapi_conn)


def test_a_cursor_executed_again_drops_its_unread_result(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute('SELECT %s::int', (1,))
        cur.execute('SELECT %s::int', (2,))
        assert cur.fetchall() == [(2,)]
    cur.execute('SELECT %s::int', (3,))
    assert cur.fetchall() == [(3,)]


def test_results_can_be_read_after_the_block(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    with dbapi_conn.pipeline():
        cur = dbapi_conn.cursor()
        cur.execute('SELECT g FROM generate_series(1, %s) g', (3,))
    assert cur.fetchmany(2) == [(1,), (2,)]
    assert cur.rownumber == 2
    assert list(cur) == [(3,)]


def test_a_pipeline_is_entered_once_and_sync_needs_its_block(dbapi_conn: Connection) -> None:
    p = dbapi_conn.pipeline()
    with pytest.raises(dbapi.ProgrammingError, match='not open'):
        p.sync()
    with p:
        pass
    with pytest.raises(dbapi.ProgrammingError, match='entered only once'):
        with p:
            pass
    assert_usable(dbapi_conn)


@pytest.mark.parametrize('delay', [0.05, 0.3])
def test_ctrl_c_inside_a_pipeline(dbapi_conn: Connection, table: str, sync_observer: Any,
                                  default_sigint: None, delay: float) -> None:
    import os
    import signal
    import threading
    import time
    pid = dbapi_conn.link.connection.get_server_pid()
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with dbapi_conn.pipeline():
            cur = dbapi_conn.cursor()
            cur.execute(f'INSERT INTO {table} VALUES (%s, %s)', (1, 'a'))
            slow = dbapi_conn.cursor()
            slow.execute('SELECT pg_sleep(10)::text || %s::text', ('x',))
            slow.fetchall()
    timer.join()
    assert time.monotonic() - started < 5
    # The block is gone, the lock free, the connection the same and in sync;
    # nothing of the aborted segment was committed.
    assert dbapi_conn.link.pipeline is None
    assert dbapi_conn.link.lock._is_owned() is False      # type: ignore[attr-defined]
    assert dbapi_conn.link.connection.get_server_pid() == pid
    dbapi_conn.rollback()
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(dbapi_conn)


def test_an_unread_error_of_a_dropped_result_is_raised_at_the_sync_point(
        dbapi_conn: Connection) -> None:
    # docs/guide/dbapi.rst: a cursor executed again drops its unread result;
    # that result's error is raised at the sync point, and the server skipped
    # the statement behind it.
    dbapi_conn.autocommit = True
    with pytest.raises(exceptions.DivisionByZeroError):
        with dbapi_conn.pipeline():
            cur = dbapi_conn.cursor()
            cur.execute('SELECT 1 / %s::int', (0,))
            cur.execute('SELECT %s::int', (2,))
            with pytest.raises(exceptions.PipelineAborted):
                cur.fetchall()
    assert dbapi_conn.link.pipeline is None
    assert_usable(dbapi_conn)

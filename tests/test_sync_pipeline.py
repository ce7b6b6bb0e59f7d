"""Pipeline mode of the sync API (issue 34, part 4): ``with conn.pipeline() as p:``.

Against the real server: statements take effect in call order, a block of
100 statements is one send and one wait, an error stays with its statement
and the server's skipping of the rest of its segment is PipelineAborted,
explicit transaction blocks inside work and is_in_transaction() is the
server's after each sync point, what cannot be pipelined is refused with
InterfaceError, timeouts and Ctrl-C abort the segment and leave the
connection in sync, and a lost connection says which outcomes are unknown.
After every failure the connection is used again.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

import mypgdriver
import mypgdriver.sync as sync
from mypgdriver import exceptions
from mypgdriver.sync.pipeline import Pipeline, PipelineResult
from tests.support.interrupts import Bomb, LineTrace

pytestmark = pytest.mark.usefixtures('no_event_loop')


def make_table(conn: Any, name: str = 'pipe_t') -> str:
    conn.execute(f'DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (id int PRIMARY KEY, v text)')
    return name


def count_waits(conn: Any) -> list[int]:
    """A counter of the driver's blocking waits (each a read of the server's answers)."""
    waits = [0]

    def hook() -> None:
        waits[0] += 1
    conn._runner._glue.wait_hook = hook
    return waits


def assert_usable(conn: Any) -> None:
    assert conn.fetchval('SELECT $1::int + 1', 41) == 42
    assert conn.is_in_transaction() is False


# --- results and order ----------------------------------------------------------------------

def test_results_are_typed_and_in_order(sync_conn: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        assert isinstance(p, Pipeline)
        insert = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        rows = p.fetch(f'SELECT id, v FROM {table} ORDER BY id')
        row = p.fetchrow('SELECT $1::int AS x, $2::text AS y', 7, 'z')
        none = p.fetchrow('SELECT 1 WHERE false')
        value = p.fetchval('SELECT $1::int * 2', 21)
        named = p.fetchval('SELECT 1 AS a, 2 AS b', column='b')
        assert isinstance(value, PipelineResult)
    assert insert.done() and rows.done()
    assert insert.result() == 'INSERT 0 1'
    assert [tuple(r) for r in rows.result()] == [(1, 'a')]
    assert row.result()['y'] == 'z' and row.result()['x'] == 7
    assert none.result() is None
    assert value.result() == 42
    assert named.result() == 2
    # asked again: the same value
    assert value.result() == 42
    assert_usable(sync_conn)


def test_side_effects_take_effect_in_call_order(sync_conn: Any, sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        seen = []
        for i in range(1, 6):
            p.execute(f'INSERT INTO {table} VALUES ($1, $2)', i, 'new')
            seen.append(p.fetchval(f'SELECT count(*) FROM {table}'))
        p.execute(f"UPDATE {table} SET v = 'upd' WHERE id <= $1", 2)
        updated = p.fetch(f"SELECT id FROM {table} WHERE v = 'upd' ORDER BY id")
        p.execute(f'DELETE FROM {table} WHERE id = $1', 5)
        last = p.fetchval(f'SELECT array_agg(id ORDER BY id) FROM {table}')
        # results read out of order
        assert last.result() == [1, 2, 3, 4]
        assert [s.result() for s in reversed(seen)] == [5, 4, 3, 2, 1]
        assert [r['id'] for r in updated.result()] == [1, 2]
    assert sync_observer.fetchval(f'SELECT array_agg(id ORDER BY id) FROM {table}') == [1, 2, 3, 4]
    assert_usable(sync_conn)


def test_a_result_waits_for_its_own_answer_only(sync_conn: Any) -> None:
    with sync_conn.pipeline() as p:
        p.fetchval('SELECT 1')      # prepared (a round trip) before the block's statements
        first = p.fetchval('SELECT 1')
        slow = p.fetchval('SELECT pg_sleep(0.3)::text || $1::text', 'x')
        assert first.result() == 1
        assert not slow.done()
        assert slow.result() == 'x'
        assert sync_conn.is_in_transaction() is True     # no sync point yet
    assert sync_conn.is_in_transaction() is False


def test_hundred_mixed_statements_are_one_send_and_one_wait(sync_conn: Any,
                                                            sync_observer: Any) -> None:
    table = make_table(sync_conn)
    texts = (f'INSERT INTO {table} VALUES ($1, $2)',
             f'UPDATE {table} SET v = $2 WHERE id = $1',
             f'SELECT v FROM {table} WHERE id = $1',
             'SELECT $1::int + 1')

    def block() -> list[Any]:
        results = []
        with sync_conn.pipeline() as p:
            for i in range(25):
                results.append(p.execute(texts[0], i, 'a'))
                results.append(p.execute(texts[1], i, f'v{i}'))
                results.append(p.fetchval(texts[2], i))
                results.append(p.fetchval(texts[3], i))
        return results

    for text in texts:       # each statement prepared and cached once
        sync_conn.fetch(text.replace('$2', "'x'"), 0) if '$2' in text else sync_conn.fetch(
            text, 0)
    sync_conn.execute(f'TRUNCATE {table}')
    for text in texts:
        if '$2' in text:
            sync_conn.execute(text, -1, 'x')
    sync_conn.execute(f'TRUNCATE {table}')
    proto = sync_conn._aconn._protocol
    sends = proto.pipe_sends
    waits = count_waits(sync_conn)
    try:
        results = block()
    finally:
        sync_conn._runner._glue.wait_hook = None
    assert proto.pipe_sends - sends == 1
    assert waits == [1]
    assert len(results) == 100
    assert [results[k].result() for k in range(4)] == ['INSERT 0 1', 'UPDATE 1', 'v0', 1]
    assert [r.result() for r in results[2::4]] == [f'v{i}' for i in range(25)]
    assert [r.result() for r in results[3::4]] == list(range(1, 26))
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 25
    assert_usable(sync_conn)


def test_hundred_selects_are_one_round_trip(sync_conn: Any) -> None:
    sync_conn.fetchval('SELECT 1+1')
    proto = sync_conn._aconn._protocol
    sends = proto.pipe_sends
    waits = count_waits(sync_conn)
    try:
        with sync_conn.pipeline() as p:
            results = [p.fetchval('SELECT 1+1') for _ in range(100)]
    finally:
        sync_conn._runner._glue.wait_hook = None
    assert (proto.pipe_sends - sends, waits) == (1, [1])
    assert [r.result() for r in results] == [2] * 100


def test_a_statement_not_in_the_cache_is_prepared_in_the_pipeline(sync_conn: Any) -> None:
    # Parse/Describe/Flush: one round trip, no Sync (the transaction is not cut)
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        p.execute('BEGIN')
        p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        p.execute('ROLLBACK')
        count = p.fetchval(f'SELECT count(*) FROM {table} WHERE v = $1', 'a')
        # a type the codecs learn inside the pipeline (introspection)
        p.execute('DROP TYPE IF EXISTS pipe_mood')
        p.sync()
        p.execute("CREATE TYPE pipe_mood AS ENUM ('ok', 'sad')")
        p.sync()
        mood = p.fetchval("SELECT 'sad'::pipe_mood")
    assert count.result() == 0
    assert mood.result() == 'sad'
    assert_usable(sync_conn)


# --- errors -------------------------------------------------------------------------------------

def test_an_error_in_the_middle_aborts_the_rest_of_its_segment(sync_conn: Any,
                                                               sync_observer: Any) -> None:
    table = make_table(sync_conn)
    sync_conn.execute(f"INSERT INTO {table} VALUES (1, 'old')")
    with pytest.raises(exceptions.UniqueViolationError) as raised:
        with sync_conn.pipeline() as p:
            before = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 2, 'b')
            failing = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'dup')
            after = [p.fetchval('SELECT $1::int', i) for i in range(3)]
            later = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 3, 'c')
    # the error of the statement nobody read is raised at the end of the block
    assert before.result() == 'INSERT 0 1'
    with pytest.raises(exceptions.UniqueViolationError) as own:
        failing.result()
    assert own.value is raised.value
    for result in (*after, later):
        with pytest.raises(exceptions.PipelineAborted):
            result.result()
    # one implicit transaction: the insert before the error is rolled back too
    assert sync_observer.fetchval(f'SELECT array_agg(id ORDER BY id) FROM {table}') == [1]
    assert_usable(sync_conn)


def test_pipeline_aborted_is_an_operational_error() -> None:
    assert issubclass(exceptions.PipelineAborted, exceptions.pep249.OperationalError)
    assert not issubclass(exceptions.PipelineAborted, exceptions.PostgresError)
    assert mypgdriver.PipelineAborted is exceptions.PipelineAborted


def test_segments_before_the_failing_one_are_committed(sync_conn: Any,
                                                       sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        first = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        p.sync()
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 1
        failing = p.fetchval('SELECT 1 / $1::int', 0)
        skipped = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 2, 'b')
        with pytest.raises(exceptions.DivisionByZeroError):
            p.sync()
        # after the sync point the pipeline runs again
        again = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 3, 'c')
    assert first.result() == 'INSERT 0 1'
    with pytest.raises(exceptions.DivisionByZeroError):
        failing.result()
    with pytest.raises(exceptions.PipelineAborted):
        skipped.result()
    assert again.result() == 'INSERT 0 1'
    assert sync_observer.fetchval(f'SELECT array_agg(id ORDER BY id) FROM {table}') == [1, 3]
    assert_usable(sync_conn)


def test_an_error_already_read_is_not_raised_again_at_exit(sync_conn: Any) -> None:
    with sync_conn.pipeline() as p:
        failing = p.fetchval('SELECT 1 / $1::int', 0)
        with pytest.raises(exceptions.DivisionByZeroError):
            failing.result()
        skipped = p.fetchval('SELECT $1::int', 5)
        assert skipped.done()     # not sent: the server would skip it
        with pytest.raises(exceptions.PipelineAborted):
            skipped.result()
    assert_usable(sync_conn)


def test_an_argument_that_does_not_encode_queues_nothing(sync_conn: Any) -> None:
    sync_conn.fetchval('SELECT $1::int', 1)
    with sync_conn.pipeline() as p:
        ok = p.fetchval('SELECT $1::int', 1)
        with pytest.raises(exceptions.DataError):
            p.fetchval('SELECT $1::int', 'not a number')
        after = p.fetchval('SELECT $1::int', 3)
    assert (ok.result(), after.result()) == (1, 3)
    assert_usable(sync_conn)


def test_the_block_own_exception_wins_and_the_statements_ran(sync_conn: Any,
                                                             sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with pytest.raises(ValueError, match='mine'):
        with sync_conn.pipeline() as p:
            p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
            p.fetchval('SELECT 1 / $1::int', 0)
            raise ValueError('mine')
    # synced as any block: the insert ran, and the division failed the segment
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(sync_conn)


# --- transactions -------------------------------------------------------------------------------

def test_explicit_begin_commit_inside(sync_conn: Any, sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        p.execute('BEGIN')
        p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        p.sync()
        assert sync_conn.is_in_transaction() is True
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
        p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 2, 'b')
        commit = p.execute('COMMIT')
        p.sync()
        assert commit.result() == 'COMMIT'
        assert sync_conn.is_in_transaction() is False
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 2
    assert_usable(sync_conn)


def test_explicit_rollback_inside(sync_conn: Any, sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        p.execute('BEGIN')
        p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        inside = p.fetchval(f'SELECT count(*) FROM {table}')
        rollback = p.execute('ROLLBACK')
    assert (inside.result(), rollback.result()) == (1, 'ROLLBACK')
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(sync_conn)


def test_an_error_inside_a_block_leaves_it_failed_until_rollback(sync_conn: Any) -> None:
    with pytest.raises(exceptions.DivisionByZeroError):
        with sync_conn.pipeline() as p:
            p.execute('BEGIN')
            p.fetchval('SELECT 1 / $1::int', 0)
    assert sync_conn.is_in_transaction() is True        # the server's 'E'
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        sync_conn.fetchval('SELECT 1')
    sync_conn.execute('ROLLBACK')
    assert_usable(sync_conn)


def test_a_pipeline_inside_a_transaction(sync_conn: Any, sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.transaction():
        with sync_conn.pipeline() as p:
            p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        assert sync_conn.is_in_transaction() is True
        assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 1
    assert_usable(sync_conn)


def test_is_in_transaction_during_and_after(sync_conn: Any) -> None:
    assert sync_conn.is_in_transaction() is False
    with sync_conn.pipeline() as p:
        assert sync_conn.is_in_transaction() is False      # nothing sent yet
        r = p.fetchval('SELECT 1')
        assert sync_conn.is_in_transaction() is True        # an implicit transaction
        assert r.result() == 1
        assert sync_conn.is_in_transaction() is True        # read, not synced
        p.sync()
        assert sync_conn.is_in_transaction() is False
    assert sync_conn.is_in_transaction() is False


# --- refused ------------------------------------------------------------------------------------

def test_copy_is_refused_inside(sync_conn: Any, tmp_path: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        ok = p.fetchval('SELECT 1')
        with pytest.raises(exceptions.InterfaceError, match='COPY cannot run inside a pipeline'):
            p.execute(f'COPY {table} FROM STDIN')
        with pytest.raises(exceptions.InterfaceError, match='COPY cannot run inside a pipeline'):
            p.fetch('  -- a comment\n copy (SELECT 1) TO STDOUT')
        with pytest.raises(exceptions.InterfaceError,
                           match='cannot run this call while a pipeline is open'):
            sync_conn.copy_records_to_table(table, records=[(1, 'a')])
        with pytest.raises(exceptions.InterfaceError, match='DISCARD cannot run inside'):
            p.execute('DISCARD ALL')
        after = p.fetchval('SELECT 2')
    assert (ok.result(), after.result()) == (1, 2)
    sync_conn.copy_records_to_table(table, records=[(1, 'a')])
    assert sync_conn.fetchval(f'SELECT count(*) FROM {table}') == 1
    assert_usable(sync_conn)


def test_connection_calls_are_refused_inside(sync_conn: Any) -> None:
    sync_conn.fetchval('SELECT 1')
    with sync_conn.pipeline() as p:
        r = p.fetchval('SELECT 1')
        for call in (lambda: sync_conn.fetchval('SELECT 1'),
                     lambda: sync_conn.execute('SELECT 1'),
                     lambda: sync_conn.fetch('SELECT $1::int', 1),
                     lambda: sync_conn.prepare('SELECT 3'),
                     lambda: sync_conn.executemany('SELECT $1::int', [(1,)]),
                     lambda: sync_conn.transaction().start()):
            with pytest.raises(exceptions.InterfaceError,
                               match='cannot run this call while a pipeline is open'):
                call()
        assert r.result() == 1
    assert_usable(sync_conn)


def test_nested_pipeline_is_refused(sync_conn: Any) -> None:
    with sync_conn.pipeline() as p:
        r = p.fetchval('SELECT 1')
        with pytest.raises(exceptions.InterfaceError, match='pipelines do not nest'):
            with sync_conn.pipeline():
                pass
        assert r.result() == 1
    assert_usable(sync_conn)


def test_a_pipeline_is_used_inside_its_block_only(sync_conn: Any) -> None:
    p = sync_conn.pipeline()
    with pytest.raises(exceptions.InterfaceError, match='not open'):
        p.fetchval('SELECT 1')
    with p:
        assert p.is_open()
    assert not p.is_open()
    with pytest.raises(exceptions.InterfaceError, match='its block has ended'):
        p.fetchval('SELECT 1')
    with pytest.raises(exceptions.InterfaceError, match='entered only once'):
        with p:
            pass
    assert_usable(sync_conn)


# --- threads ------------------------------------------------------------------------------------

def test_another_thread_waits_for_the_end_of_the_block(sync_conn: Any) -> None:
    order: list[str] = []
    started = threading.Event()

    def other() -> None:
        started.set()
        order.append(f'other {sync_conn.fetchval("SELECT 5")}')

    with sync_conn.pipeline() as p:
        thread = threading.Thread(target=other)
        thread.start()
        started.wait(5)
        time.sleep(0.2)
        assert order == []
        r = p.fetchval('SELECT 4')
        assert r.result() == 4
        with pytest.raises(exceptions.InterfaceError, match='thread that opened it'):
            failure: list[BaseException] = []

            def use() -> None:
                try:
                    p.fetchval('SELECT 1')
                except BaseException as e:
                    failure.append(e)
            t = threading.Thread(target=use)
            t.start()
            t.join(5)
            raise failure[0]
        order.append('block end')
    thread.join(5)
    assert order == ['block end', 'other 5']
    assert_usable(sync_conn)


# --- timeouts, Ctrl-C and a lost connection -----------------------------------------------------

def test_a_statement_timeout_aborts_the_segment(sync_conn: Any, sync_observer: Any) -> None:
    table = make_table(sync_conn)
    with sync_conn.pipeline() as p:
        before = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 1, 'a')
        slow = p.fetchval('SELECT pg_sleep(5)::text || $1::text', 'x', timeout=0.3)
        after = p.execute(f'INSERT INTO {table} VALUES ($1, $2)', 2, 'b')
        started = time.monotonic()
        with pytest.raises(TimeoutError, match='pipelined statement timed out after 0.3 s'):
            slow.result()
        assert time.monotonic() - started < 3
        assert before.result() == 'INSERT 0 1'
        with pytest.raises(TimeoutError):
            slow.result()
        with pytest.raises(exceptions.PipelineAborted):
            after.result()
        again = p.fetchval('SELECT $1::int', 9)
    assert again.result() == 9
    assert sync_observer.fetchval(f'SELECT count(*) FROM {table}') == 0
    assert_usable(sync_conn)


def test_command_timeout_bounds_the_exit(open_sync_conn: Any) -> None:
    conn = open_sync_conn(command_timeout=0.3)
    with pytest.raises(TimeoutError):
        with conn.pipeline() as p:
            slow = p.fetchval('SELECT pg_sleep(5)::text || $1::text', 'x', timeout=10)
    with pytest.raises(exceptions.QueryCanceledError):
        slow.result()
    assert_usable(conn)


def test_lost_connection_says_outcome_unknown(sync_conn: Any, sync_observer: Any) -> None:
    pid = sync_conn.get_server_pid()
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        with sync_conn.pipeline() as p:
            sent = p.fetchval('SELECT pg_sleep(0.5)::text || $1::text', 'x')
            p._core.protocol.pipeline_flush(True)
            sync_observer.fetchval('SELECT pg_terminate_backend($1)', pid)
            with pytest.raises(exceptions.ConnectionDoesNotExistError,
                               match='whether it ran is unknown'):
                sent.result()
    assert sync_conn.is_closed()


class Harness:
    """Runs a pipeline block with a KeyboardInterrupt at the N-th tick of a hook."""

    def __init__(self, dsn: str, observer: Any) -> None:
        self.dsn = dsn
        self.observer = observer
        self.conn = sync.connect(dsn)
        self.table = make_table(self.conn, 'pipe_ctrl_c')
        self.outcomes = {'completed': 0, 'in sync': 0, 'closed': 0}

    def block(self, conn: Any) -> list[Any]:
        with conn.pipeline() as p:
            results = [p.execute(f'INSERT INTO {self.table} VALUES ($1, $2)', 1, 'a'),
                       p.fetchval('SELECT pg_sleep(0.05)::text || $1::text', 'x'),
                       p.fetchval('SELECT $1::int', 2)]
            assert results[1].result() == 'x'
            results.append(p.fetchval(f'SELECT count(*) FROM {self.table}'))
        assert [r.result() for r in results] == ['INSERT 0 1', 'x', 2, 1]
        return results

    def run(self, hook: str, at: int | None) -> bool:
        conn = self.conn
        self.conn.execute(f'TRUNCATE {self.table}')
        bomb = Bomb(at)
        glue = conn._runner._glue
        trace = LineTrace(bomb, lambda f: f.startswith(PACKAGE_DIR))
        if hook == 'wait':
            glue.wait_hook = bomb.tick
        else:
            trace.__enter__()
        fired = False
        try:
            self.block(conn)
        except KeyboardInterrupt:
            fired = True
        finally:
            trace.__exit__()
            glue.wait_hook = None
        assert fired == bomb.fired
        if at is None:
            return bomb.count   # type: ignore[return-value]
        self.check(hook, at, fired)
        return fired

    def check(self, hook: str, at: int, fired: bool) -> None:
        conn = self.conn
        where = f'{hook} #{at}'
        count = self.observer.fetchval(f'SELECT count(*) FROM {self.table}')
        if not fired:
            assert count == 1, where
            self.outcomes['completed'] += 1
        else:
            # the insert was committed only if the block got to its sync point
            assert count in (0, 1), where
        if conn.is_closed():
            assert hook == 'python', where     # a wait is a clean interruption
            with pytest.raises(exceptions.ConnectionDoesNotExistError):
                conn.fetchval('SELECT 1')
            self.outcomes['closed'] += 1
            self.conn = sync.connect(self.dsn)
            return
        pid = conn.get_server_pid()
        # the connection is free for another thread (the block let go of it)
        other: list[Any] = []
        t = threading.Thread(target=lambda: other.append(conn.fetchval('SELECT 7')))
        t.start()
        t.join(10)
        assert other == [7], where
        assert conn.fetchval('SELECT $1::int + 1', 41) == 42, where
        state = self.observer.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1', pid)
        assert state == 'idle', where
        assert conn.is_in_transaction() is False, where
        self.outcomes['in sync'] += 1


PACKAGE_DIR = __import__('os').path.dirname(mypgdriver.__file__)


@pytest.mark.parametrize('hook', ['wait', 'python'])
def test_ctrl_c_at_every_point_leaves_the_connection_in_sync(pg_cluster: Any, hook: str,
                                                             sync_observer: Any) -> None:
    h = Harness(pg_cluster.dsn(), sync_observer)
    try:
        h.block(h.conn)         # every statement cached: the points are the block's own
        total = h.run(hook, None)
        points = range(total + 1) if total <= 120 else range(0, total + 1, max(1, total // 120))
        delivered = sum(h.run(hook, at) for at in points)
        assert delivered >= min(total, len(points) - 1) > 0
        print(hook, total, h.outcomes)
        if hook == 'wait':
            assert h.outcomes['closed'] == 0
    finally:
        h.conn.close()


def test_real_sigint_inside_a_pipeline(sync_conn: Any, default_sigint: None) -> None:
    import os
    import signal
    pid = sync_conn.get_server_pid()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with sync_conn.pipeline() as p:
            slow = p.fetchval('SELECT pg_sleep(10)::text || $1::text', 'x')
            slow.result()
    timer.join()
    assert time.monotonic() - started < 5
    with pytest.raises(exceptions.QueryCanceledError):
        slow.result()
    assert sync_conn.get_server_pid() == pid
    assert_usable(sync_conn)


Call = Callable[[Any], Any]


def test_submit_gives_the_whole_result_for_faces(sync_conn: Any) -> None:
    from mypgdriver.core.result import Result
    from mypgdriver.rows import dict_row
    with sync_conn.pipeline() as p:
        run = p.submit('SELECT $1::int AS a, $2::text AS b', (1, 'x'), dict_row)
        command = p.submit('SELECT 1 WHERE false')
    result = run.result()
    assert isinstance(result, Result)
    assert result.rows == [{'a': 1, 'b': 'x'}]
    assert result.status == 'SELECT 1'
    assert result.description is not None
    assert [c.name for c in result.description] == ['a', 'b']
    assert command.result().rows == [] and command.result().status == 'SELECT 0'


@pytest.mark.parametrize('cache_size', [0, 2])
def test_statements_outside_the_cache_and_evicted_ones(open_sync_conn: Any,
                                                       cache_size: int) -> None:
    conn = open_sync_conn(statement_cache_size=cache_size)
    proto = conn._aconn._protocol
    for _ in range(2):
        with conn.pipeline() as p:
            results = [p.fetchval(f'SELECT {i % 5} + $1::int', i) for i in range(50)]
        assert [r.result() for r in results] == [i % 5 + i for i in range(50)]
    sends = proto.pipe_sends
    with conn.pipeline() as p:
        results = [p.fetchval(f'SELECT {i % 5} + $1::int', i) for i in range(50)]
    assert [r.result() for r in results] == [i % 5 + i for i in range(50)]
    # unnamed statements are described once per pipeline (5 texts, then the Sync);
    # a cache of 2 for 5 texts in turn prepares each statement again
    assert proto.pipe_sends - sends == (6 if cache_size == 0 else 51)
    assert conn.fetchval('SELECT count(*) FROM pg_prepared_statements') == cache_size
    assert_usable(conn)

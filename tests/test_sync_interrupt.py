"""Ctrl-C during a blocking call: in sync or closed, never in doubt (issue 24).

Python raises KeyboardInterrupt where Python code runs, or where a system
call is interrupted by the signal; the sync glue, its transports and the
protocol are compiled, so it cannot land inside them
(mypgdriver/sync/driver/glue.pyx).  The tests deliver it, without signals, at
each of the two kinds of places where it can land, for every N until the
call no longer reaches the N-th (or a spread of them for the long calls):

* ``wait``: the N-th blocking wait of the driver (its wait hook raises it,
  as the signal interrupting ``recv``/``poll`` would);
* ``python``: the N-th line of mypgdriver's Python code run during the call
  (a trace function raises it: the Session's, the connection's, copy.py,
  the connector, the facade).

A last test sends real SIGINTs during ``pg_sleep``.

After each interrupt: the caller got KeyboardInterrupt; the connection is
either closed, or the next call returns the expected value on the same
backend, which is then idle (not still running the interrupted statement);
nothing of an interrupted COPY, executemany (atomic, docs/guide/prepared.rst)
or transaction block is committed unless the statement completed.  An
interrupt in a wait leaves the connection open (the clean path).
"""
from __future__ import annotations

import io
import itertools
import os
import signal
import threading
import time
from typing import Any, Callable, Iterator, Optional

import pytest

import mypgdriver
import mypgdriver.sync as sync
from mypgdriver.core import block_owner
from tests.support.interrupts import Bomb, LineTrace

pytestmark = pytest.mark.usefixtures('no_event_loop')

HOOKS = ('wait', 'python')
MANY_ROWS = "SELECT g, repeat('x', 500) FROM generate_series(1, 20000) g"
EXECUTEMANY_ROWS = 3000
COPY_ROWS = 20000
PACKAGE_DIR = os.path.dirname(mypgdriver.__file__)


class Armed:
    """Ticks `bomb` at each entry of the step `hook` during the `with` block."""

    def __init__(self, conn: Any, hook: str, bomb: Bomb) -> None:
        self.glue = conn._runner._glue
        self.hook = hook
        self.bomb = bomb
        self.lines = LineTrace(bomb, lambda filename: filename.startswith(PACKAGE_DIR))

    def __enter__(self) -> 'Armed':
        if self.hook == 'wait':
            self.glue.wait_hook = self.bomb.tick
        elif self.hook == 'python':
            self.lines.__enter__()
        else:
            raise AssertionError(self.hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.lines.__exit__()
        self.glue.wait_hook = None


class Harness:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn = sync.connect(dsn, timeout=10)
        self.observer = sync.connect(dsn, timeout=10)
        self.outcomes: dict[str, int] = {'completed': 0, 'in sync': 0, 'closed': 0}

    def reconnect(self) -> None:
        self.conn = sync.connect(self.dsn, timeout=10)

    def close(self) -> None:
        for c in (self.conn, self.observer):
            if not c._aconn.is_closed():
                c.close()

    def points(self, hook: str, call: Callable[[Any], Any]) -> int:
        """How many times `call` enters the step `hook` (counted on one uninterrupted run)."""
        bomb = Bomb(None)
        with Armed(self.conn, hook, bomb):
            call(self.conn)
        return bomb.count

    def interrupt_at(self, hook: str, at: int, call: Callable[[Any], Any]) -> bool:
        """Run `call` with a KeyboardInterrupt at the `at`-th entry of `hook`; True if it fired."""
        bomb = Bomb(at)
        conn = self.conn
        with Armed(conn, hook, bomb):
            try:
                call(conn)
            except KeyboardInterrupt:
                assert bomb.fired
            else:
                assert not bomb.fired, f'{hook} #{at}: KeyboardInterrupt swallowed'
                self.outcomes['completed'] += 1
                return False
        if hook == 'wait':
            # the clean path: cancelled on the server, never closed
            assert not conn._aconn.is_closed(), f'{hook} #{at}'
        self.check_sound(f'{hook} #{at}')
        return True

    def check_sound(self, where: str) -> None:
        aconn = self.conn._aconn
        if aconn.is_closed():
            # docs/guide/sync.rst: later calls say the connection is gone
            with pytest.raises(mypgdriver.ConnectionDoesNotExistError):
                self.conn.fetchval('SELECT 1')
            self.outcomes['closed'] += 1
            self.reconnect()
            return
        pid = aconn.get_server_pid()
        # A connection in doubt would hang here, or answer another call's rows.
        assert self.conn.fetchval('SELECT $1::int + 1', 41, timeout=15) == 42, where
        assert self.conn.fetchval('SELECT pg_backend_pid()', timeout=15) == pid, where
        state, query = self.observer.fetchrow(
            'SELECT state, query FROM pg_stat_activity WHERE pid = $1', pid)
        assert state == 'idle' and query == 'SELECT pg_backend_pid()', (where, state, query)
        assert not aconn.is_in_transaction(), where
        self.outcomes['in sync'] += 1


@pytest.fixture
def harness(pg_cluster: Any) -> Iterator[Harness]:
    h = Harness(pg_cluster.dsn())
    try:
        yield h
    finally:
        h.close()


def spread(total: int, limit: int) -> list[int]:
    """Every point when there are few; else the first ones and an even spread of the rest."""
    if total <= limit:
        return list(range(total + 1))
    head = list(range(limit // 3))
    step = max(1, (total - len(head)) // (limit - len(head)))
    return head + list(range(len(head), total + 1, step))


def sweep(h: Harness, call: Callable[[Any], Any], limit: int = 60,
          after: Optional[Callable[[str], None]] = None,
          before: Optional[Callable[[], None]] = None) -> int:
    """Interrupt `call` at each point of each hook; the number of interrupts delivered."""
    delivered = 0
    for hook in HOOKS:
        if before is not None:
            before()
        total = h.points(hook, call)
        if after is not None:
            after('completed')
        for at in spread(total, limit):
            if before is not None:
                before()
            fired = h.interrupt_at(hook, at, call)
            delivered += fired
            if after is not None:
                after(f'{hook} #{at}' if fired else 'completed')
    assert delivered > 0
    return delivered


def test_interrupted_fetchval(harness: Harness) -> None:
    def call(conn: Any) -> None:
        assert conn.fetchval('SELECT $1::int * 2', 21) == 42
    call(harness.conn)      # prepared: the interrupts hit bind/execute only
    n = sweep(harness, call)
    print('fetchval', n, harness.outcomes)


def test_interrupted_prepared_fetchval(harness: Harness) -> None:
    # A PreparedStatement's run: CallRunner.run_prepared()'s compiled path.
    statements: dict[int, Any] = {}

    def call(conn: Any) -> None:
        stmt = statements.get(id(conn))
        if stmt is None:
            stmt = statements[id(conn)] = conn.prepare('SELECT $1::int * 2')
        assert stmt.fetch(21)[0][0] == 42
        assert stmt.get_statusmsg() == 'SELECT 1'
    call(harness.conn)      # prepared: the interrupts hit bind/execute only
    n = sweep(harness, call)
    print('prepared fetchval', n, harness.outcomes)


def test_interrupted_fetch_of_many_rows(harness: Harness) -> None:
    def call(conn: Any) -> None:
        rows = conn.fetch(MANY_ROWS)
        assert len(rows) == 20000 and rows[-1][0] == 20000
    n = sweep(harness, call, limit=40)
    print('fetch', n, harness.outcomes)


def test_interrupted_first_use_of_a_query(harness: Harness) -> None:
    unique = itertools.count()

    def call(conn: Any) -> None:
        k = next(unique)
        # a new text each time: prepare (describe, type lookups) then run
        assert conn.fetchval(f'SELECT $1::int + {k}, $2::text', 1, 'x') == 1 + k
    n = sweep(harness, call)
    print('first use', n, harness.outcomes)


def _table(h: Harness, name: str) -> None:
    h.conn.execute(f'DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (id int, label text)')


def _count(h: Harness, name: str) -> int:
    return int(h.observer.fetchval(f'SELECT count(*) FROM {name}'))


def test_interrupted_executemany_is_atomic(harness: Harness) -> None:
    _table(harness, 'sync_intr_many')
    rows = [(i, f'row {i}') for i in range(EXECUTEMANY_ROWS)]

    def call(conn: Any) -> None:
        conn.executemany('INSERT INTO sync_intr_many VALUES ($1, $2)', rows)

    def before() -> None:
        harness.observer.execute('TRUNCATE sync_intr_many')

    def after(where: str) -> None:
        # atomic (docs/guide/prepared.rst): all rows or none
        assert _count(harness, 'sync_intr_many') in (0, EXECUTEMANY_ROWS), where
    try:
        n = sweep(harness, call, limit=40, before=before, after=after)
    finally:
        harness.observer.execute('DROP TABLE IF EXISTS sync_intr_many')
    print('executemany', n, harness.outcomes)


def test_interrupted_copy_in_from_a_file_object(harness: Harness) -> None:
    _table(harness, 'sync_intr_copy')
    data = ''.join(f'{i}\tline {i} {"y" * 100}\n' for i in range(COPY_ROWS)).encode()

    def call(conn: Any) -> None:
        conn.copy_to_table('sync_intr_copy', source=io.BytesIO(data))

    def before() -> None:
        harness.observer.execute('TRUNCATE sync_intr_copy')

    def after(where: str) -> None:
        assert _count(harness, 'sync_intr_copy') in (0, COPY_ROWS), where
    try:
        n = sweep(harness, call, limit=40, before=before, after=after)
    finally:
        harness.observer.execute('DROP TABLE IF EXISTS sync_intr_copy')
    print('copy in', n, harness.outcomes)


def test_interrupted_transaction_block_is_rolled_back(harness: Harness) -> None:
    _table(harness, 'sync_intr_xact')
    phase: list[str] = []

    def call(conn: Any) -> None:
        phase[:] = ['body']
        with conn.transaction():
            conn.execute("INSERT INTO sync_intr_xact VALUES (1, 'a'), (2, 'b')")
            assert conn.fetchval('SELECT count(*) FROM sync_intr_xact') == 2
            phase[:] = ['exit']
        phase[:] = ['done']

    def before() -> None:
        harness.observer.execute('TRUNCATE sync_intr_xact')

    def after(where: str) -> None:
        count = _count(harness, 'sync_intr_xact')
        # committed only if the interrupt came during or after COMMIT
        assert count == 0 or (count == 2 and phase[0] in ('exit', 'done')), (where, phase)
        if not harness.conn._aconn.is_closed():
            assert not harness.conn._aconn.is_in_transaction(), where
    try:
        n = sweep(harness, call, before=before, after=after)
    finally:
        harness.observer.execute('DROP TABLE IF EXISTS sync_intr_xact')
    # The blocks of the connections closed by an interrupt left no scope
    # token open in this thread's context (which outlives them all).
    assert [t for t in block_owner._XACT_SCOPES.get() if t.open] == []
    print('transaction', n, harness.outcomes)


def test_interrupted_cursor_iteration_inside_a_block(harness: Harness) -> None:
    def call(conn: Any) -> None:
        with conn.transaction():
            total = 0
            for row in conn.cursor('SELECT g FROM generate_series(1, 2000) g', prefetch=250):
                total += row[0]
            assert total == 2000 * 2001 // 2

    def after(where: str) -> None:
        if not harness.conn.is_closed():
            assert not harness.conn.is_in_transaction(), where
    n = sweep(harness, call, after=after)
    print('cursor', n, harness.outcomes)


@pytest.mark.parametrize('delay', [0.002, 0.01, 0.05, 0.2, 0.5])
@pytest.mark.usefixtures('default_sigint')
def test_real_sigint_during_pg_sleep(harness: Harness, delay: float) -> None:
    for _ in range(3):
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        started = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt):
                timer.start()
                harness.conn.fetchval('SELECT pg_sleep(5)')
                time.sleep(5)   # (not reached unless the signal came late)
        finally:
            timer.join()
        assert time.monotonic() - started < 4
        if delay >= 0.05:
            # it landed in the blocking wait: cancelled, not closed
            assert not harness.conn._aconn.is_closed()
        harness.check_sound(f'SIGINT after {delay}s')

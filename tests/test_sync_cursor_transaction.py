"""mypgdriver.sync: cursors (iteration with prefetch, Cursor.fetch/forward/fetchrow) and transactions."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection
from tests.test_policy_without_event_loop import no_event_loop  # noqa: F401  (a fixture)


@pytest.fixture
def dsn(pg_cluster: Any) -> str:
    return pg_cluster.dsn()


@pytest.fixture
def sconn(dsn: str, no_event_loop: list[str]) -> Iterator[Connection]:  # noqa: F811
    with mypgdriver.sync.connect(dsn) as conn:
        yield conn


@pytest.fixture
def observer(dsn: str) -> Iterator[Connection]:
    with mypgdriver.sync.connect(dsn) as conn:
        yield conn


def test_iteration_fetches_prefetch_rows_per_round_trip(sconn: Connection) -> None:
    fetches: list[int] = []
    with sconn.transaction():
        cursor = sconn.cursor('SELECT g AS marked FROM generate_series(1, $1) g', 7, prefetch=3)
        rows = []
        for row in cursor:
            rows.append(row['marked'])
            fetches.append(sconn.fetchval(
                "SELECT count(*) FROM pg_cursors WHERE strpos(statement, 'mar' || 'ked') > 0"))
        assert rows == [1, 2, 3, 4, 5, 6, 7]
        # the portal is open while rows remain, closed once exhausted
        assert fetches[0] == 1
        assert fetches == [1] * 6 + [0]


def test_cursor_outside_a_transaction_is_refused(sconn: Connection) -> None:
    with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
        list(sconn.cursor('SELECT 1'))
    with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
        sconn.cursor('SELECT 1').open()


def test_open_cursor_fetch_forward_fetchrow(sconn: Connection) -> None:
    with sconn.transaction():
        cur = sconn.cursor('SELECT g FROM generate_series(1, 10) g', record_class=None).open()
        assert isinstance(cur, mypgdriver.sync.Cursor)
        assert [r['g'] for r in cur.fetch(3)] == [1, 2, 3]
        assert cur.forward(4) == 4
        row = cur.fetchrow()
        assert row is not None and row['g'] == 8
        assert [r['g'] for r in cur.fetch(5)] == [9, 10]
        assert cur.fetch(1) == []
        assert cur.fetchrow() is None
        assert cur.forward(3) == 0
    with sconn.transaction():
        with pytest.raises(mypgdriver.exceptions.InterfaceError):
            sconn.cursor('SELECT 1', prefetch=5).open()


def test_a_bad_cursor_query_fails_at_open(sconn: Connection) -> None:
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        with sconn.transaction():
            sconn.cursor('SELECT 1 / 0').open()
    assert not sconn.is_in_transaction()


def test_commit_is_seen_by_another_connection(sconn: Connection, observer: Connection) -> None:
    sconn.execute('CREATE TABLE sync_xact_c (x int)')
    try:
        with sconn.transaction(isolation='serializable'):
            sconn.execute('INSERT INTO sync_xact_c VALUES (1)')
            assert sconn.is_in_transaction()
            assert sconn.fetchval('SHOW transaction_isolation') == 'serializable'
            assert observer.fetchval('SELECT count(*) FROM sync_xact_c') == 0
        assert not sconn.is_in_transaction()
        assert observer.fetchval('SELECT count(*) FROM sync_xact_c') == 1
    finally:
        sconn.execute('DROP TABLE sync_xact_c')


def test_an_exception_rolls_back_and_propagates(sconn: Connection, observer: Connection) -> None:
    sconn.execute('CREATE TABLE sync_xact_r (x int)')
    try:
        with pytest.raises(KeyError):
            with sconn.transaction():
                sconn.execute('INSERT INTO sync_xact_r VALUES (1)')
                raise KeyError('boom')
        assert observer.fetchval('SELECT count(*) FROM sync_xact_r') == 0
        assert not sconn.is_in_transaction()
    finally:
        sconn.execute('DROP TABLE sync_xact_r')


def test_nested_blocks_are_savepoints(sconn: Connection) -> None:
    sconn.execute('CREATE TEMP TABLE n (x int)')
    with sconn.transaction():
        sconn.execute('INSERT INTO n VALUES (1)')
        with pytest.raises(mypgdriver.exceptions.UniqueViolationError):
            with sconn.transaction():
                sconn.execute('INSERT INTO n VALUES (2)')
                sconn.execute('CREATE TEMP TABLE n2 (x int UNIQUE); INSERT INTO n2 VALUES (1), (1)')
        with sconn.transaction():
            sconn.execute('INSERT INTO n VALUES (3)')
    assert [r['x'] for r in sconn.fetch('SELECT x FROM n ORDER BY x')] == [1, 3]


def test_start_commit_rollback_by_hand(sconn: Connection) -> None:
    sconn.execute('CREATE TEMP TABLE h (x int)')
    tr = sconn.transaction(readonly=False)
    tr.start()
    sconn.execute('INSERT INTO h VALUES (1)')
    inner = sconn.transaction()
    inner.start()
    sconn.execute('INSERT INTO h VALUES (2)')
    inner.rollback()
    tr.commit()
    assert [r['x'] for r in sconn.fetch('SELECT x FROM h')] == [1]
    tr2 = sconn.transaction()
    tr2.start()
    sconn.execute('INSERT INTO h VALUES (3)')
    tr2.rollback()
    assert sconn.fetchval('SELECT count(*) FROM h') == 1
    with sconn.transaction(readonly=True):
        with pytest.raises(mypgdriver.exceptions.ReadOnlySQLTransactionError):
            sconn.execute('CREATE TABLE sync_ro (x int)')
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        with sconn.transaction() as nothing:
            assert nothing is None
            sconn.transaction().commit()

"""mypgdriver.dbapi transactions seen from a second connection: the implicit BEGIN,
commit, rollback, autocommit, isolation settings, transaction() blocks, with conn,
and threads sharing a connection."""
from __future__ import annotations

import threading
from typing import Callable

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Connection, IsolationLevel


@pytest.fixture
def other(open_dbapi_conn: Callable[..., Connection], no_event_loop: list[str]) -> Connection:
    """A second session, in autocommit: it sees what the tested connection committed."""
    return open_dbapi_conn(autocommit=True)


@pytest.fixture
def table(other: Connection) -> str:
    other.execute('DROP TABLE IF EXISTS dbapi_x')
    other.execute('CREATE TABLE dbapi_x (id int PRIMARY KEY)')
    return 'dbapi_x'


def ids(connection: Connection) -> list[int]:
    return [row[0] for row in connection.execute('SELECT id FROM dbapi_x ORDER BY id')]


def test_first_statement_opens_a_transaction(dbapi_conn: Connection, other: Connection, table: str):
    assert not dbapi_conn.autocommit
    assert not dbapi_conn.sync_connection.is_in_transaction()
    dbapi_conn.execute('SELECT 1')
    assert dbapi_conn.sync_connection.is_in_transaction()
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (%s)', (1,))
    assert ids(other) == []            # not committed: invisible elsewhere
    assert ids(dbapi_conn) == [1]
    dbapi_conn.commit()
    assert not dbapi_conn.sync_connection.is_in_transaction()
    assert ids(other) == [1]


def test_rollback_undoes(dbapi_conn: Connection, other: Connection, table: str):
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    dbapi_conn.rollback()
    assert ids(other) == []
    assert ids(dbapi_conn) == []
    dbapi_conn.rollback()                    # nothing open: nothing to do
    dbapi_conn.commit()


def test_autocommit_commits_each_statement(dbapi_conn: Connection, other: Connection, table: str):
    dbapi_conn.autocommit = True
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (%s)', (1,))
    assert not dbapi_conn.sync_connection.is_in_transaction()
    assert ids(other) == [1]
    dbapi_conn.autocommit = False
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (2)')
    with pytest.raises(dbapi.ProgrammingError, match='while a transaction is open'):
        dbapi_conn.autocommit = True
    dbapi_conn.rollback()
    assert ids(other) == [1]


def test_connect_with_autocommit(dsn: str, table: str, other: Connection,
                                 no_event_loop: list[str]):
    with dbapi.connect(dsn, autocommit=True) as c:
        c.execute('INSERT INTO dbapi_x VALUES (3)')
    assert ids(other) == [3]


def test_isolation_read_only_deferrable_apply_to_the_next_transaction(dbapi_conn: Connection):
    dbapi_conn.isolation_level = IsolationLevel.SERIALIZABLE
    dbapi_conn.read_only = True
    dbapi_conn.deferrable = True
    cur = dbapi_conn.execute("SELECT current_setting('transaction_isolation'), "
                       "current_setting('transaction_read_only'), "
                       "current_setting('transaction_deferrable')")
    assert cur.fetchone() == ('serializable', 'on', 'on')
    with pytest.raises(dbapi.ProgrammingError):
        dbapi_conn.read_only = False
    dbapi_conn.rollback()
    dbapi_conn.isolation_level = 3
    assert dbapi_conn.isolation_level is IsolationLevel.REPEATABLE_READ
    dbapi_conn.read_only = False
    dbapi_conn.deferrable = None
    cur = dbapi_conn.execute("SELECT current_setting('transaction_isolation'), "
                       "current_setting('transaction_read_only')")
    assert cur.fetchone() == ('repeatable read', 'off')
    dbapi_conn.rollback()
    dbapi_conn.isolation_level = None
    assert dbapi_conn.execute("SELECT current_setting('transaction_isolation')").fetchone() == \
        ('read committed',)


def test_read_only_transaction_refuses_writes(dbapi_conn: Connection, table: str):
    dbapi_conn.read_only = True
    with pytest.raises(dbapi.InternalError):     # 25006 read_only_sql_transaction
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    dbapi_conn.rollback()


def test_transaction_block_commits_or_rolls_back(dbapi_conn: Connection, other: Connection,
                                                  table: str):
    with dbapi_conn.transaction() as tx:
        assert tx.savepoint_name is None
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
        assert ids(other) == []
    assert ids(other) == [1]
    assert not dbapi_conn.sync_connection.is_in_transaction()
    with pytest.raises(ZeroDivisionError):
        with dbapi_conn.transaction():
            dbapi_conn.execute('INSERT INTO dbapi_x VALUES (2)')
            raise ZeroDivisionError
    assert ids(other) == [1]
    assert not dbapi_conn.sync_connection.is_in_transaction()


def test_nested_blocks_are_savepoints(dbapi_conn: Connection, other: Connection, table: str):
    with dbapi_conn.transaction():
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
        with pytest.raises(dbapi.IntegrityError):
            with dbapi_conn.transaction() as inner:
                assert inner.savepoint_name is not None
                dbapi_conn.execute('INSERT INTO dbapi_x VALUES (2)')
                dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')     # duplicate
        with dbapi_conn.transaction('named'):
            dbapi_conn.execute('INSERT INTO dbapi_x VALUES (3)')
    assert ids(other) == [1, 3]


def test_block_after_implicit_transaction_is_a_savepoint(dbapi_conn: Connection, other: Connection,
                                                         table: str):
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    with dbapi_conn.transaction() as tx:
        assert tx.savepoint_name is not None
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (2)')
    assert ids(other) == []            # the outer transaction is still open
    dbapi_conn.commit()
    assert ids(other) == [1, 2]


def test_commit_inside_a_block_is_refused(dbapi_conn: Connection):
    with dbapi_conn.transaction():
        with pytest.raises(dbapi.ProgrammingError, match='not allowed inside'):
            dbapi_conn.commit()
        with pytest.raises(dbapi.ProgrammingError):
            dbapi_conn.rollback()


def test_force_rollback(dbapi_conn: Connection, other: Connection, table: str):
    with dbapi_conn.transaction(force_rollback=True):
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    assert ids(other) == []


def test_with_conn_commits_and_closes(dsn: str, other: Connection, table: str,
                                      no_event_loop: list[str]):
    with dbapi.connect(dsn) as c:
        c.execute('INSERT INTO dbapi_x VALUES (1)')
    assert c.closed
    assert ids(other) == [1]
    with pytest.raises(RuntimeError):
        with dbapi.connect(dsn) as c:
            c.execute('INSERT INTO dbapi_x VALUES (2)')
            raise RuntimeError('boom')
    assert c.closed
    assert ids(other) == [1]
    with pytest.raises(dbapi.InterfaceError):
        c.cursor()


def test_close_rolls_back(dsn: str, other: Connection, table: str,
                          no_event_loop: list[str]):
    c = dbapi.connect(dsn)
    c.execute('INSERT INTO dbapi_x VALUES (1)')
    c.close()
    assert c.closed
    c.close()                          # twice is fine
    assert ids(other) == []


def test_connection_usable_after_errors_in_a_transaction(dbapi_conn: Connection, table: str):
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    with pytest.raises(dbapi.IntegrityError):
        dbapi_conn.execute('INSERT INTO dbapi_x VALUES (1)')
    dbapi_conn.rollback()
    dbapi_conn.execute('INSERT INTO dbapi_x VALUES (2)')
    dbapi_conn.commit()
    assert ids(dbapi_conn) == [2]


def test_two_threads_share_one_connection(dbapi_conn: Connection, other: Connection, table: str):
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            cur = dbapi_conn.cursor()
            for i in range(first, first + 50):
                cur.execute('INSERT INTO dbapi_x VALUES (%s)', (i,))
                cur.execute('SELECT %s::int', (i,))
                assert cur.fetchone() == (i,)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ids(other) == []            # one transaction, the connection's
    dbapi_conn.commit()
    assert len(ids(other)) == 100

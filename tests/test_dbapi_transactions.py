"""mypgdriver.dbapi transactions seen from a second connection: the implicit BEGIN,
commit, rollback, autocommit, isolation settings, transaction() blocks, with conn,
and threads sharing a connection."""
from __future__ import annotations

import threading
from typing import Iterator

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Connection, IsolationLevel
from tests.test_dbapi_cursor import conn, dsn  # noqa: F401  (fixtures)
from tests.test_policy_without_event_loop import no_event_loop  # noqa: F401  (a fixture)


@pytest.fixture
def other(dsn: str, no_event_loop: list[str]) -> Iterator[Connection]:  # noqa: F811
    connection = dbapi.connect(dsn, autocommit=True)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def table(other: Connection) -> str:
    other.execute('DROP TABLE IF EXISTS dbapi_x')
    other.execute('CREATE TABLE dbapi_x (id int PRIMARY KEY)')
    return 'dbapi_x'


def ids(connection: Connection) -> list[int]:
    return [row[0] for row in connection.execute('SELECT id FROM dbapi_x ORDER BY id')]


def test_first_statement_opens_a_transaction(conn: Connection, other: Connection, table: str):
    assert not conn.autocommit
    assert not conn.sync_connection.is_in_transaction()
    conn.execute('SELECT 1')
    assert conn.sync_connection.is_in_transaction()
    conn.execute('INSERT INTO dbapi_x VALUES (%s)', (1,))
    assert ids(other) == []            # not committed: invisible elsewhere
    assert ids(conn) == [1]
    conn.commit()
    assert not conn.sync_connection.is_in_transaction()
    assert ids(other) == [1]


def test_rollback_undoes(conn: Connection, other: Connection, table: str):
    conn.execute('INSERT INTO dbapi_x VALUES (1)')
    conn.rollback()
    assert ids(other) == []
    assert ids(conn) == []
    conn.rollback()                    # nothing open: nothing to do
    conn.commit()


def test_autocommit_commits_each_statement(conn: Connection, other: Connection, table: str):
    conn.autocommit = True
    conn.execute('INSERT INTO dbapi_x VALUES (%s)', (1,))
    assert not conn.sync_connection.is_in_transaction()
    assert ids(other) == [1]
    conn.autocommit = False
    conn.execute('INSERT INTO dbapi_x VALUES (2)')
    with pytest.raises(dbapi.ProgrammingError, match='while a transaction is open'):
        conn.autocommit = True
    conn.rollback()
    assert ids(other) == [1]


def test_connect_with_autocommit(dsn: str, table: str, other: Connection,
                                 no_event_loop: list[str]):  # noqa: F811
    with dbapi.connect(dsn, autocommit=True) as c:
        c.execute('INSERT INTO dbapi_x VALUES (3)')
    assert ids(other) == [3]


def test_isolation_read_only_deferrable_apply_to_the_next_transaction(conn: Connection):
    conn.isolation_level = IsolationLevel.SERIALIZABLE
    conn.read_only = True
    conn.deferrable = True
    cur = conn.execute("SELECT current_setting('transaction_isolation'), "
                       "current_setting('transaction_read_only'), "
                       "current_setting('transaction_deferrable')")
    assert cur.fetchone() == ('serializable', 'on', 'on')
    with pytest.raises(dbapi.ProgrammingError):
        conn.read_only = False
    conn.rollback()
    conn.isolation_level = 3
    assert conn.isolation_level is IsolationLevel.REPEATABLE_READ
    conn.read_only = False
    conn.deferrable = None
    cur = conn.execute("SELECT current_setting('transaction_isolation'), "
                       "current_setting('transaction_read_only')")
    assert cur.fetchone() == ('repeatable read', 'off')
    conn.rollback()
    conn.isolation_level = None
    assert conn.execute("SELECT current_setting('transaction_isolation')").fetchone() == \
        ('read committed',)


def test_read_only_transaction_refuses_writes(conn: Connection, table: str):
    conn.read_only = True
    with pytest.raises(dbapi.InternalError):     # 25006 read_only_sql_transaction
        conn.execute('INSERT INTO dbapi_x VALUES (1)')
    conn.rollback()


def test_transaction_block_commits_or_rolls_back(conn: Connection, other: Connection,
                                                  table: str):
    with conn.transaction() as tx:
        assert tx.savepoint_name is None
        conn.execute('INSERT INTO dbapi_x VALUES (1)')
        assert ids(other) == []
    assert ids(other) == [1]
    assert not conn.sync_connection.is_in_transaction()
    with pytest.raises(ZeroDivisionError):
        with conn.transaction():
            conn.execute('INSERT INTO dbapi_x VALUES (2)')
            raise ZeroDivisionError
    assert ids(other) == [1]
    assert not conn.sync_connection.is_in_transaction()


def test_nested_blocks_are_savepoints(conn: Connection, other: Connection, table: str):
    with conn.transaction():
        conn.execute('INSERT INTO dbapi_x VALUES (1)')
        with pytest.raises(dbapi.IntegrityError):
            with conn.transaction() as inner:
                assert inner.savepoint_name is not None
                conn.execute('INSERT INTO dbapi_x VALUES (2)')
                conn.execute('INSERT INTO dbapi_x VALUES (1)')     # duplicate
        with conn.transaction('named'):
            conn.execute('INSERT INTO dbapi_x VALUES (3)')
    assert ids(other) == [1, 3]


def test_block_after_implicit_transaction_is_a_savepoint(conn: Connection, other: Connection,
                                                         table: str):
    conn.execute('INSERT INTO dbapi_x VALUES (1)')
    with conn.transaction() as tx:
        assert tx.savepoint_name is not None
        conn.execute('INSERT INTO dbapi_x VALUES (2)')
    assert ids(other) == []            # the outer transaction is still open
    conn.commit()
    assert ids(other) == [1, 2]


def test_commit_inside_a_block_is_refused(conn: Connection):
    with conn.transaction():
        with pytest.raises(dbapi.ProgrammingError, match='not allowed inside'):
            conn.commit()
        with pytest.raises(dbapi.ProgrammingError):
            conn.rollback()


def test_force_rollback(conn: Connection, other: Connection, table: str):
    with conn.transaction(force_rollback=True):
        conn.execute('INSERT INTO dbapi_x VALUES (1)')
    assert ids(other) == []


def test_with_conn_commits_and_closes(dsn: str, other: Connection, table: str,
                                      no_event_loop: list[str]):  # noqa: F811
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
                          no_event_loop: list[str]):  # noqa: F811
    c = dbapi.connect(dsn)
    c.execute('INSERT INTO dbapi_x VALUES (1)')
    c.close()
    assert c.closed
    c.close()                          # twice is fine
    assert ids(other) == []


def test_connection_usable_after_errors_in_a_transaction(conn: Connection, table: str):
    conn.execute('INSERT INTO dbapi_x VALUES (1)')
    with pytest.raises(dbapi.IntegrityError):
        conn.execute('INSERT INTO dbapi_x VALUES (1)')
    conn.rollback()
    conn.execute('INSERT INTO dbapi_x VALUES (2)')
    conn.commit()
    assert ids(conn) == [2]


def test_two_threads_share_one_connection(conn: Connection, other: Connection, table: str):
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            cur = conn.cursor()
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
    conn.commit()
    assert len(ids(other)) == 100

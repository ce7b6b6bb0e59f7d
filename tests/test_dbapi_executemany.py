"""mypgdriver.dbapi executemany(): pipelined, atomic, rowcount, returning=True with nextset()."""
from __future__ import annotations

import pytest

import mypgdriver
import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Connection


@pytest.fixture
def conn_with_table(dbapi_conn: Connection) -> Connection:
    """The shared DB-API connection, with the temp table dbapi_m (id int PRIMARY KEY, name text)."""
    dbapi_conn.execute('CREATE TEMP TABLE dbapi_m (id int PRIMARY KEY, name text)')
    dbapi_conn.commit()
    return dbapi_conn


def test_executemany_inserts_every_row_and_sums_rowcount(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.executemany('INSERT INTO dbapi_m VALUES (%s, %s)', [(i, f'n{i}') for i in range(100)])
    assert cur.rowcount == 100
    assert cur.description is None
    cur.execute('SELECT count(*), min(name), max(id) FROM dbapi_m')
    assert cur.fetchone() == (100, 'n0', 99)


def test_executemany_with_named_parameters_and_a_generator(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.executemany('INSERT INTO dbapi_m VALUES (%(id)s, %(name)s)',
                    ({'id': i, 'name': str(i), 'extra': None} for i in range(5)))
    assert cur.rowcount == 5
    cur.executemany('UPDATE dbapi_m SET name = %s WHERE id > %s', [('x', 2), ('y', 3)])
    assert cur.rowcount == 3          # 2 rows, then 1
    cur.executemany('DELETE FROM dbapi_m WHERE id = %s', [])
    assert cur.rowcount == 0


def test_executemany_is_atomic(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    conn_with_table.autocommit = True
    with pytest.raises(dbapi.IntegrityError) as info:
        cur.executemany('INSERT INTO dbapi_m VALUES (%s, %s)', [(1, 'a'), (2, 'b'), (1, 'c')])
    assert type(info.value) is mypgdriver.UniqueViolationError
    assert cur.execute('SELECT count(*) FROM dbapi_m').fetchone() == (0,)


def test_executemany_bad_parameters_send_nothing(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    with pytest.raises(dbapi.ProgrammingError, match='2 placeholders but 1 parameter'):
        cur.executemany('INSERT INTO dbapi_m VALUES (%s, %s)', [(1, 'a'), (2,)])
    conn_with_table.rollback()
    assert cur.execute('SELECT count(*) FROM dbapi_m').fetchone() == (0,)


def test_executemany_returning_keeps_each_result(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.executemany('INSERT INTO dbapi_m VALUES (%s, %s) RETURNING id, name',
                    [(1, 'a'), (2, 'b'), (3, 'c')], returning=True)
    assert [c.name for c in cur.description] == ['id', 'name']
    results = []
    while True:
        results.append((cur.fetchall(), cur.rowcount, cur.statusmessage))
        if not cur.nextset():
            break
    assert results == [([(1, 'a')], 1, 'INSERT 0 1'), ([(2, 'b')], 1, 'INSERT 0 1'),
                       ([(3, 'c')], 1, 'INSERT 0 1')]
    assert cur.nextset() is None


def test_executemany_returning_several_rows_per_run(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.executemany('SELECT g FROM generate_series(1, %s) g', [(2,), (0,), (3,)],
                    returning=True)
    assert cur.fetchall() == [(1,), (2,)]
    assert cur.nextset()
    assert cur.fetchall() == []
    assert cur.rowcount == 0
    assert cur.nextset()
    assert cur.fetchall() == [(1,), (2,), (3,)]
    assert cur.nextset() is None


def test_executemany_returning_inside_a_transaction_block(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.execute('SELECT 1')           # opens the transaction: the pipeline runs in it
    cur.executemany('INSERT INTO dbapi_m VALUES (%s, %s) RETURNING id',
                    [(1, 'a'), (2, 'b')], returning=True)
    assert cur.fetchall() == [(1,)]
    assert cur.nextset()
    assert cur.fetchall() == [(2,)]
    assert cur.nextset() is None
    conn_with_table.commit()

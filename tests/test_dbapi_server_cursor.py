"""mypgdriver.dbapi server-side cursors: DECLARE, FETCH in batches, scroll, WITH HOLD,
CLOSE, checked against pg_cursors."""
from __future__ import annotations

from typing import Any

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Connection


def cursors(conn: Connection) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    cur.execute("SELECT name, is_holdable, is_scrollable FROM pg_cursors WHERE name <> '' "
                "ORDER BY name")
    return cur.fetchall()


def test_declare_fetch_and_close(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='c1')
    assert isinstance(cur, dbapi.ServerCursor)
    assert cur.name == 'c1'
    assert cur.rownumber is None
    cur.execute('SELECT g, g::text AS t FROM generate_series(1, 10) g WHERE g > %s', (0,))
    assert [c.name for c in cur.description] == ['g', 't']
    assert cur.description[0].type_code == dbapi.NUMBER
    assert [row[0] for row in cursors(dbapi_conn)] == ['c1']
    assert cur.fetchone() == (1, '1')
    assert cur.fetchmany(3) == [(2, '2'), (3, '3'), (4, '4')]
    assert cur.rownumber == 4
    assert cur.rowcount == 4
    assert cur.fetchall() == [(i, str(i)) for i in range(5, 11)]
    assert cur.fetchone() is None
    assert cur.fetchall() == []
    cur.close()
    assert cursors(dbapi_conn) == []
    assert cur.closed
    with pytest.raises(dbapi.InterfaceError):
        cur.fetchone()


def test_iteration_fetches_itersize_rows_per_round_trip(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='c2')
    assert cur.itersize == dbapi_conn.itersize == 100
    cur.itersize = 4
    cur.execute('SELECT g FROM generate_series(1, 10) g')
    rows = iter(cur)
    assert next(rows) == (1,)
    assert (cur.statusmessage, cur.rowcount) == ('FETCH 4', 4)
    assert [next(rows) for _ in range(4)] == [(2,), (3,), (4,), (5,)]
    assert (cur.statusmessage, cur.rowcount) == ('FETCH 4', 8)
    assert [row[0] for row in rows] == list(range(6, 11))
    assert (cur.statusmessage, cur.rowcount) == ('FETCH 2', 10)


def test_cursor_lives_in_the_transaction(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='c3')
    cur.execute('SELECT 1')
    dbapi_conn.commit()
    assert cursors(dbapi_conn) == []
    with pytest.raises(dbapi.ProgrammingError):      # 34000 invalid_cursor_name
        cur.fetchone()
    dbapi_conn.rollback()
    cur.close()                                       # already gone: nothing to close


def test_withhold_outlives_commit(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='held', withhold=True)
    cur.execute('SELECT g FROM generate_series(1, 3) g')
    dbapi_conn.commit()
    assert [row[:2] for row in cursors(dbapi_conn)] == [('held', True)]
    dbapi_conn.commit()
    assert cur.fetchall() == [(1,), (2,), (3,)]
    cur.close()
    dbapi_conn.commit()
    assert cursors(dbapi_conn) == []


def test_scrollable_and_scroll(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='s', scrollable=True)
    cur.execute('SELECT g FROM generate_series(0, 9) g')
    assert cursors(dbapi_conn) == [('s', False, True)]
    cur.scroll(5, mode='absolute')
    assert cur.fetchone() == (5,)
    cur.scroll(-3)
    assert cur.rownumber == 3
    assert cur.fetchone() == (3,)
    cur.scroll(2)
    assert cur.fetchone() == (6,)
    with pytest.raises(ValueError):
        cur.scroll(1, mode='nowhere')
    cur.close()


def test_no_scroll_refuses_going_back(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='ns', scrollable=False)
    cur.execute('SELECT g FROM generate_series(0, 9) g')
    assert cursors(dbapi_conn) == [('ns', False, False)]
    cur.fetchmany(5)
    with pytest.raises(dbapi.OperationalError):       # 55000 cursor can only scan forward
        cur.scroll(-2)
    dbapi_conn.rollback()


def test_execute_again_redeclares(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='again')
    cur.execute('SELECT 1 AS a')
    assert cur.fetchall() == [(1,)]
    cur.execute("SELECT 'x' AS b, 2 AS c")
    assert [c.name for c in cur.description] == ['b', 'c']
    assert cur.fetchall() == [('x', 2)]
    assert [row[0] for row in cursors(dbapi_conn)] == ['again']
    cur.close()


def test_with_block_closes_and_row_factory(dbapi_conn: Connection):
    def names_row(cursor: Any) -> Any:
        names = [c.name for c in cursor.description]
        return lambda values: dict(zip(names, values))

    with dbapi_conn.cursor(name='w', row_factory=names_row) as cur:
        cur.execute('SELECT 1 AS one')
        assert cur.fetchone() == {'one': 1}
    assert cursors(dbapi_conn) == []


def test_built_in_row_factories_on_a_server_cursor(dbapi_conn: Connection):
    import mypgdriver.rows

    with dbapi_conn.cursor(name='d', row_factory=mypgdriver.rows.dict_row) as cur:
        cur.execute('SELECT g AS n FROM generate_series(1, 3) g')
        assert cur.fetchone() == {'n': 1}
        assert cur.fetchall() == [{'n': 2}, {'n': 3}]
    with dbapi_conn.cursor(name='s', row_factory=mypgdriver.rows.scalar_row) as cur:
        cur.execute('SELECT g FROM generate_series(1, 3) g')
        assert list(cur) == [1, 2, 3]


def test_unsupported_methods(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='u')
    with pytest.raises(dbapi.NotSupportedError):
        cur.executemany('SELECT %s', [(1,)])
    with pytest.raises(dbapi.ProgrammingError, match='execute'):
        cur.fetchone()
    with pytest.raises(dbapi.ProgrammingError):
        dbapi_conn.cursor(withhold=True)


def test_large_result_streams(dbapi_conn: Connection):
    cur = dbapi_conn.cursor(name='big')
    cur.itersize = 1000
    cur.execute("SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g")
    total = 0
    for row in cur:
        total += row[0]
    assert total == 20000 * 20001 // 2
    cur.close()

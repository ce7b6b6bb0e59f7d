"""The DB-API cursor's compiled half (mypgdriver/dbapi/cursorcore.pyx) against a real server.

execute() and the fetches are CursorCore's, in C, over the sync connection's
compiled call path; the rest of the cursor is Python in cursor.py.  These
tests check that a cached statement takes that path, that each case execute()
hands to Python (a refused str, a wrong parameter count, a script, a server
error) still behaves as the cursor's documentation says, and that the cursor
stays an ordinary class for its users (subclasses, weak references).
"""
from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

import mypgdriver.dbapi as dbapi
import mypgdriver.exceptions
from mypgdriver.dbapi import Connection
from mypgdriver.dbapi.cursor import Cursor


def compiled_calls(conn: Connection) -> int:
    return conn.link.connection._runner.compiled_calls


def test_a_cached_execute_takes_the_compiled_path(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('SELECT %s::int + 1', (1,))     # prepares: not on the compiled path
    assert cur.fetchall() == [(2,)]
    before = compiled_calls(dbapi_conn)
    for i in range(5):
        cur.execute('SELECT %s::int + 1', (i,))
        assert cur.fetchall() == [(i + 1,)]
        assert cur.rowcount == 1
        assert cur.statusmessage == 'SELECT 1'
        assert [c.name for c in cur.description] == ['?column?']
    assert compiled_calls(dbapi_conn) == before + 5


def test_fetches_walk_the_result(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    cur.execute('SELECT g FROM generate_series(1, 7) g WHERE g > %s', (0,))
    assert cur.fetchone() == (1,)
    assert cur.rownumber == 1
    assert cur.fetchmany(2) == [(2,), (3,)]
    cur.arraysize = 3
    assert cur.fetchmany() == [(4,), (5,), (6,)]
    assert cur.fetchall() == [(7,)]
    assert cur.fetchone() is None
    assert cur.fetchmany() == []
    assert cur.fetchall() == []
    with pytest.raises(TypeError):
        cur.fetchmany('2')      # type: ignore[arg-type]


def test_a_command_has_no_rows_to_fetch(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('CREATE TEMP TABLE compiled_t (a int)')
    for _ in range(2):
        cur.execute('INSERT INTO compiled_t VALUES (%s)', (1,))
        assert cur.description is None
        assert cur.rowcount == 1
        with pytest.raises(dbapi.ProgrammingError, match='did not return rows'):
            cur.fetchall()
        with pytest.raises(dbapi.ProgrammingError, match='did not return rows'):
            cur.fetchone()


def test_a_refused_str_of_a_cached_statement_goes_again_as_text(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    for _ in range(3):
        cur.execute('SELECT %s::int * 2', ('21',))
        assert cur.fetchall() == [(42,)]
    with pytest.raises(mypgdriver.exceptions.InvalidTextRepresentationError):
        cur.execute('SELECT %s::int * 2', ('abc',))
    dbapi_conn.rollback()
    with pytest.raises(mypgdriver.exceptions.DataError):
        cur.execute('SELECT %s::int * 2', (object(),))
    cur.execute('SELECT %s::int * 2', (4,))
    assert cur.fetchall() == [(8,)]


def test_a_wrong_parameter_count_of_a_cached_statement(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    cur.execute('SELECT %s::int', (1,))
    with pytest.raises(mypgdriver.exceptions.QueryParameterError,
                       match='the query has 1 placeholder but 2 parameters were given'):
        cur.execute('SELECT %s::int', (1, 2))
    with pytest.raises(mypgdriver.exceptions.QueryParameterError,
                       match='pass the values in a sequence'):
        cur.execute('SELECT %s::int', {'a': 1})
    # Nothing was sent: the transaction is as it was, the connection usable.
    cur.execute('SELECT %s::int', (3,))
    assert cur.fetchall() == [(3,)]


def test_a_server_error_then_the_next_execute(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    cur.execute('SELECT 1 / %s::int', (1,))
    with pytest.raises(mypgdriver.exceptions.DivisionByZeroError):
        cur.execute('SELECT 1 / %s::int', (0,))
    assert dbapi_conn.link.in_transaction()
    dbapi_conn.rollback()
    cur.execute('SELECT 1 / %s::int', (1,))
    assert cur.fetchall() == [(1,)]


def test_outside_autocommit_a_cached_execute_opens_the_transaction(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = False
    cur = dbapi_conn.cursor()
    cur.execute('SELECT %s::int', (1,))
    dbapi_conn.commit()
    assert not dbapi_conn.link.in_transaction()
    cur.execute('SELECT %s::int', (2,))
    assert dbapi_conn.link.in_transaction()
    cur.execute('SELECT %s::int', (3,))
    assert cur.fetchall() == [(3,)]
    dbapi_conn.commit()
    assert not dbapi_conn.link.in_transaction()


def test_a_parameterless_script_and_a_cached_statement(dbapi_conn: Connection) -> None:
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('SELECT 1; SELECT 2')
    assert cur.fetchall() == [(1,)]
    assert cur.nextset()
    assert cur.fetchall() == [(2,)]
    assert cur.nextset() is None
    cur.execute('SELECT 3')
    cur.execute('SELECT 3')
    assert cur.fetchall() == [(3,)]
    assert cur.nextset() is None


def test_a_closed_cursor_refuses(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    cur.close()
    with pytest.raises(dbapi.InterfaceError, match='the cursor is closed'):
        cur.execute('SELECT %s', (1,))
    with pytest.raises(dbapi.InterfaceError, match='the cursor is closed'):
        cur.fetchall()


def test_a_subclass_of_the_cursor(dbapi_conn: Connection) -> None:
    calls: list[str] = []

    class Logging(Cursor):
        __slots__ = ('seen',)

        def execute(self, query: str, params: Any = None, **kwargs: Any) -> Any:
            calls.append(query)
            return super().execute(query, params, **kwargs)

        def fetchall(self) -> list[Any]:
            return [tuple(reversed(row)) for row in super().fetchall()]

    cur = Logging(dbapi_conn)
    cur.seen = 1
    cur.execute('SELECT %s::int, %s::text', (1, 'a'))
    assert cur.fetchall() == [('a', 1)]
    assert calls == ['SELECT %s::int, %s::text']
    assert cur.seen == 1


def test_a_cursor_can_be_weakly_referenced(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    ref = weakref.ref(cur)
    assert ref() is cur
    del cur
    gc.collect()
    assert ref() is None


def test_the_lock_is_released_after_every_outcome(dbapi_conn: Connection) -> None:
    cur = dbapi_conn.cursor()
    lock = dbapi_conn.link.lock
    for params in ((1,), (1, 2), ('x',), (0,)):
        try:
            cur.execute('SELECT 1 / %s::int', params)
        except mypgdriver.exceptions.InterfaceError:
            pass
        except mypgdriver.exceptions.PostgresError:
            dbapi_conn.rollback()
        # Free for another thread (an RLock held by this one would be
        # acquired again here without telling).
        assert lock._is_owned() is False    # type: ignore[attr-defined]

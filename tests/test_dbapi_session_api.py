"""The DB-API on mypgdriver.core.session_api: one statement cache, the Session's."""
from __future__ import annotations

from typing import Callable

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver.core.session_api import Result
from mypgdriver.dbapi import Connection


@pytest.fixture
def autocommit_conn(open_dbapi_conn: Callable[..., Connection]) -> Connection:
    """A DB-API connection in autocommit (event loops allowed, unlike ``dbapi_conn``)."""
    return open_dbapi_conn(autocommit=True)


def test_a_dbapi_statement_and_a_sync_one_of_the_same_text_are_one_statement(
        autocommit_conn: Connection):
    sync_conn = autocommit_conn.sync_connection
    assert sync_conn.fetchval('SELECT $1::int + 1', 1) == 2
    prepared = sync_conn.fetchval('SELECT count(*) FROM pg_prepared_statements')
    cur = autocommit_conn.execute('SELECT %s::int + 1', (41,))
    assert cur.fetchone() == (42,)
    # No second statement was prepared on the server for the DB-API's run.
    assert sync_conn.fetchval('SELECT count(*) FROM pg_prepared_statements') == prepared
    assert autocommit_conn.link.statements.is_cached('SELECT $1::int + 1')


def test_without_a_statement_cache_nothing_stays_prepared_on_the_server(dsn: str):
    # What a transaction-mode pooler needs: the unnamed statement, every run.
    with dbapi.connect(dsn, autocommit=True, statement_cache_size=0) as conn:
        cur = conn.cursor()
        for i in range(3):
            cur.execute('SELECT %s::int * 2', (i,))
            assert cur.fetchall() == [(i * 2,)]
            assert cur.description is not None and cur.description[0].type_code == 23
        cur.executemany('SELECT %s::int', [(1,), (2,)], returning=True)
        assert cur.fetchall() == [(1,)]
        assert cur.description is not None and cur.description[0].name == 'int4'
        assert not conn.link.statements.is_cached('SELECT $1::int * 2')
        cur.execute('SELECT count(*) FROM pg_prepared_statements')
        assert cur.fetchone() == (0,)


def test_a_statement_runs_once_per_execute(autocommit_conn: Connection):
    autocommit_conn.execute('CREATE TEMP TABLE dbapi_once (v int)')
    cur = autocommit_conn.cursor()
    for i in range(3):
        cur.execute('INSERT INTO dbapi_once VALUES (%s) RETURNING v', (i,))
        assert cur.fetchall() == [(i,)]
        assert cur.statusmessage == 'INSERT 0 1' and cur.rowcount == 1
    assert autocommit_conn.execute('SELECT count(*) FROM dbapi_once').fetchone() == (3,)


def test_the_runner_gives_rows_tag_and_description_as_one_result(autocommit_conn: Connection):
    link = autocommit_conn.link
    result = link.run(link.statements.run('SELECT $1::text AS t', ('a',), None))
    assert isinstance(result, Result)
    assert result.status == 'SELECT 1'
    assert result.description is not None and result.description[0].name == 't'
    assert [tuple(row) for row in result.rows or ()] == [('a',)]
    command = link.run(link.statements.run('SET LOCAL work_mem = DEFAULT', (), None))
    assert command.rows is None and command.description is None and command.status == 'SET'

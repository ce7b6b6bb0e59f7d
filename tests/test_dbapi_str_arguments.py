"""mypgdriver.dbapi: a str for a parameter of another type is read by the server, as in psycopg.

psycopg sends every str as text (of type unknown), so ``SELECT %s::int``
with ``'42'`` gives 42 and with ``'abc'`` the server's error, 22P02
invalid_text_representation.  The binary codecs of the core refuse such a
str client-side (a DataError, nothing sent); the DB-API then binds that
value as text, so the server's input function of the type reads it.
"""
from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Iterator

import pytest

import mypgdriver
import mypgdriver.dbapi as dbapi
from mypgdriver import exceptions
from mypgdriver.dbapi import Connection


@pytest.fixture
def notes(dbapi_conn: Connection) -> Iterator[str]:
    """A table, and a function that adds a row to it each time it runs."""
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP TABLE IF EXISTS dbapi_notes')
    dbapi_conn.execute('CREATE TABLE dbapi_notes (id serial, n int)')
    dbapi_conn.execute('CREATE OR REPLACE FUNCTION dbapi_note(v int) RETURNS int LANGUAGE sql '
                 'AS $$ INSERT INTO dbapi_notes (n) VALUES (v) RETURNING v $$')
    dbapi_conn.autocommit = False
    yield 'dbapi_notes'
    dbapi_conn.rollback()
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP FUNCTION dbapi_note(int); DROP TABLE dbapi_notes')


def assert_invalid_text(error: BaseException, text: str) -> None:
    assert type(error) is exceptions.InvalidTextRepresentationError
    assert isinstance(error, dbapi.DataError)
    assert error.sqlstate == error.pgcode == '22P02'  # type: ignore[attr-defined]
    assert str(error) == f'invalid input syntax for type integer: "{text}"'


def test_a_str_that_is_not_an_int_gets_the_servers_error(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    with pytest.raises(dbapi.DataError) as info:
        dbapi_conn.execute('SELECT %s::int', ('abc',))
    assert_invalid_text(info.value, 'abc')
    # The server's error alone, not one raised while handling the refusal.
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # In autocommit the connection goes on at once.
    assert dbapi_conn.execute('SELECT %s::int', (5,)).fetchone() == (5,)
    assert not dbapi_conn._in_transaction()


def test_the_error_aborts_the_transaction_as_any_server_error(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    cur.execute('SELECT 1')
    with pytest.raises(dbapi.DataError) as info:
        cur.execute('SELECT %s::int', ('12x',))
    assert_invalid_text(info.value, '12x')
    with pytest.raises(exceptions.InFailedSQLTransactionError) as failed:
        cur.execute('SELECT 2')
    assert isinstance(failed.value, dbapi.InternalError) and failed.value.sqlstate == '25P02'
    dbapi_conn.rollback()
    assert cur.execute('SELECT %s::int', ('7',)).fetchone() == (7,)


def test_a_str_that_is_valid_text_for_the_type_is_read_by_the_server(
        dbapi_conn: Connection):
    cur = dbapi_conn.execute('SELECT %s::int', ('42',))
    assert cur.fetchone() == (42,)
    assert cur.description is not None and cur.description[0].type_code == 23
    # Again, from the statement prepared by the first execute.
    assert dbapi_conn.execute('SELECT %s::int', (' 43 ',)).fetchone() == (43,)
    values = dbapi_conn.execute(
        'SELECT %s::date, %s::numeric, %s::int[], %s::bool, %s::uuid, %s::bytea, '
        '%s::int8 + 1',
        ('2024-01-02', '1.50', '{1,2}', 't', '12345678-1234-5678-1234-567812345678',
         '\\x0102', '9000000000')).fetchone()
    assert values == (datetime.date(2024, 1, 2), decimal.Decimal('1.50'), [1, 2], True,
                      uuid.UUID('12345678-1234-5678-1234-567812345678'), b'\x01\x02',
                      9000000001)


def test_only_the_refused_values_go_as_text(dbapi_conn: Connection):
    row = dbapi_conn.execute('SELECT %s::int + %s::int, %s::text, %s::int[]',
                       ('1', 2, 'x', [3, 4])).fetchone()
    assert row == (3, 'x', [3, 4])
    row = dbapi_conn.execute('SELECT %(a)s::int * 2, %(b)s::float8',
                             {'a': '21', 'b': 0.5}).fetchone()
    assert row == (42, 0.5)


def test_a_where_clause_compares_with_the_str_as_psycopg_does(dbapi_conn: Connection):
    rows = dbapi_conn.execute('SELECT g FROM generate_series(1, 5) g WHERE g > %s',
                              ('3',)).fetchall()
    assert rows == [(4,), (5,)]


def test_the_statement_runs_once(dbapi_conn: Connection, notes: str):
    assert dbapi_conn.execute('SELECT dbapi_note(%s)', ('5',)).fetchone() == (5,)
    assert dbapi_conn.execute('SELECT id, n FROM dbapi_notes').fetchall() == [(1, 5)]
    with pytest.raises(dbapi.DataError) as info:
        dbapi_conn.execute('SELECT dbapi_note(%s)', ('five',))
    assert_invalid_text(info.value, 'five')
    dbapi_conn.rollback()
    assert dbapi_conn.execute('SELECT count(*) FROM dbapi_notes').fetchone() == (0,)
    cur = dbapi_conn.execute('INSERT INTO dbapi_notes (n) VALUES (%s) RETURNING n', ('6',))
    assert cur.fetchall() == [(6,)] and cur.rowcount == 1
    assert dbapi_conn.execute('SELECT n FROM dbapi_notes').fetchall() == [(6,)]


def test_refusals_that_text_cannot_help_stay_client_side(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    # A NUL cannot be sent as text either; a dict is no str.
    for args, reason in ((('4\x002',), 'invalid input for type int4: string contains a NUL '
                                       'character'),
                         (({'a': 1},), 'an integer is required (got type dict)')):
        with pytest.raises(exceptions.DataError) as info:
            dbapi_conn.execute('SELECT %s::int', args)
        assert type(info.value) is exceptions.DataError
        assert info.value.sqlstate == '22000'
        assert getattr(info.value, 'severity', None) is None
        assert str(info.value).startswith('invalid input for query argument $1: ')
        assert reason in str(info.value), str(info.value)
        assert dbapi_conn.execute('SELECT 1').fetchone() == (1,)
    # Not str: refused as before, though another argument is a str.
    with pytest.raises(exceptions.DataError) as info:
        dbapi_conn.execute('SELECT %s::text, %s::int', ('a', object()))
    assert type(info.value) is exceptions.DataError
    assert str(info.value).startswith('invalid input for query argument $2: ')


def test_a_server_cursor_reads_the_str_too(dbapi_conn: Connection):
    with dbapi_conn.cursor(name='dbapi_str') as cur:
        cur.execute('SELECT g FROM generate_series(1, %s) g', ('3',))
        assert cur.fetchall() == [(1,), (2,), (3,)]
    dbapi_conn.rollback()
    with dbapi_conn.cursor(name='dbapi_str_bad') as cur:
        with pytest.raises(dbapi.DataError) as info:
            cur.execute('SELECT g FROM generate_series(1, %s) g', ('three',))
    assert_invalid_text(info.value, 'three')
    dbapi_conn.rollback()


def test_callproc_reads_the_str(dbapi_conn: Connection):
    cur = dbapi_conn.cursor()
    # abs(unknown) resolves to abs(float8), as with psycopg's unknown-typed str.
    assert cur.callproc('abs', ('-4',)) == ('-4',)
    assert cur.fetchone() == (4.0,)


def test_the_asyncio_and_sync_apis_still_refuse_the_str(dsn: str):
    # $n parameters of asyncpg's API take Python values of the type, as asyncpg's.
    with mypgdriver.sync.connect(dsn) as sconn:
        with pytest.raises(exceptions.DataError) as info:
            sconn.fetchval('SELECT $1::int', '42')
        assert type(info.value) is exceptions.DataError
        assert sconn.fetchval('SELECT 1') == 1


def test_unknown_typed_parameters_and_text_still_take_the_fast_path(dbapi_conn: Connection):
    assert dbapi_conn.execute('SELECT %s', ('plain',)).fetchone() == ('plain',)
    assert dbapi_conn.execute('SELECT %s::text || %s', ('a', 'b')).fetchone() == ('ab',)
    values: list[Any] = [None, 'x']
    assert dbapi_conn.execute('SELECT %s::int, %s::varchar', values).fetchone() == (None, 'x')

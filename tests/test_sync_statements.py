"""mypgdriver.sync: more codec families, and the statement cache with its retries (issue 24).

The statement cache's policy (retry after a schema change, re-prepare after
DISCARD ALL, Close of evicted statements) is the Session's, shared with the
asyncio API; these tests check it through the blocking API against the
server's own view (pg_prepared_statements).
"""
from __future__ import annotations

import datetime
import decimal
import ipaddress

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection


def server_statements(conn: Connection) -> list[str]:
    """The driver's statements on the server (this query's own left out)."""
    return [row[0] for row in conn.fetch(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE '\\_\\_mypg\\_%' "
        "AND statement NOT LIKE '%pg_prepared_statements%' ORDER BY statement")]


def test_more_codec_families(sync_conn: Connection) -> None:
    assert sync_conn.fetchval('SELECT $1::bool AND true', True) is True
    assert sync_conn.fetchval('SELECT $1::float8 / 4', 1.0) == 0.25
    assert sync_conn.fetchval('SELECT $1::bytea || $2::bytea', b'\x00a', b'\xff') == b'\x00a\xff'
    assert sync_conn.fetchval("SELECT $1::interval + '1 day'",
                          datetime.timedelta(hours=1)) == datetime.timedelta(days=1, hours=1)
    assert sync_conn.fetchval("SELECT '12:30:01.5'::time") == datetime.time(12, 30, 1, 500000)
    assert sync_conn.fetchval('SELECT $1::inet', ipaddress.ip_interface('10.0.0.1/8')) == \
        ipaddress.ip_interface('10.0.0.1/8')
    assert sync_conn.fetchval("SELECT '10.1.0.0/16'::cidr") == ipaddress.ip_network('10.1.0.0/16')
    assert sync_conn.fetchval("SELECT $1::numeric[]", [decimal.Decimal('1.5'), None]) == \
        [decimal.Decimal('1.5'), None]
    assert sync_conn.fetchval("SELECT ARRAY[[1, 2], [3, 4]]::int2[]") == [[1, 2], [3, 4]]
    multirange = sync_conn.fetchval("SELECT '{[1,3), [5,7)}'::int4multirange")
    assert [(r.lower, r.upper) for r in multirange] == [(1, 3), (5, 7)]
    sync_conn.execute('CREATE DOMAIN pg_temp.positive AS int CHECK (VALUE > 0)')
    assert sync_conn.fetchval('SELECT $1::pg_temp.positive', 5) == 5
    with pytest.raises(mypgdriver.exceptions.CheckViolationError):
        sync_conn.fetchval('SELECT $1::pg_temp.positive', -5)
    assert sync_conn.fetchval("SELECT B'1011'::bit(4)").as_string() == '1011'
    assert sync_conn.fetchval('SELECT NULL::int') is None


def test_a_schema_change_under_a_cached_statement_is_retried(sync_conn: Connection) -> None:
    sync_conn.execute('CREATE TEMP TABLE shape (id int, v int)')
    sync_conn.execute('INSERT INTO shape VALUES (1, 10)')
    query = 'SELECT * FROM shape WHERE id = $1'
    assert tuple(sync_conn.fetchrow(query, 1)) == (1, 10)
    assert query in server_statements(sync_conn)
    # The result type changes: the cached plan is refused by the server
    # (0A000) and the statement prepared again, once, in its place.
    sync_conn.execute('ALTER TABLE shape ALTER COLUMN v TYPE text')
    assert tuple(sync_conn.fetchrow(query, 1)) == (1, '10')
    assert sync_conn.fetchval('SELECT 1') == 1
    # Inside a transaction block it cannot be retried: the error says so.
    sync_conn.execute('ALTER TABLE shape ALTER COLUMN v TYPE int USING v::int')
    with pytest.raises(mypgdriver.exceptions.InvalidCachedStatementError):
        with sync_conn.transaction():
            sync_conn.fetchrow(query, 1)
    assert sync_conn.is_in_transaction() is False
    assert tuple(sync_conn.fetchrow(query, 1)) == (1, 10)


def test_discard_all_drops_the_cache_and_statements_are_prepared_again(
        sync_conn: Connection) -> None:
    stmt = sync_conn.prepare('SELECT $1::int * 3')
    assert sync_conn.fetchval('SELECT $1::int + 1', 1) == 2
    assert len(server_statements(sync_conn)) >= 2
    sync_conn.execute('DISCARD ALL')
    assert server_statements(sync_conn) == []
    assert sync_conn.fetchval('SELECT $1::int + 1', 2) == 3
    assert stmt.fetchval(3) == 9
    assert server_statements(sync_conn) == ['SELECT $1::int * 3', 'SELECT $1::int + 1']


def test_evicted_statements_are_closed_on_the_server(dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn, statement_cache_size=3) as conn:
        for i in range(10):
            assert conn.fetchval(f'SELECT {i}::int + $1', 1) == i + 1
        conn.fetchval('SELECT 1')
        names = server_statements(conn)
        assert len(names) <= 3
        assert 'SELECT 9::int + $1' in names
        assert 'SELECT 0::int + $1' not in names

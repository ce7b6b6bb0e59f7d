"""mypgdriver.sync.connect(json=...) and sync create_pool(json=...): the same codecs as asyncio's.

tests/test_json_codec.py covers the codecs in depth; this checks that the
blocking API forwards the option (connect, pools, reset) and that a loads
error leaves a sync connection in sync.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import pytest

import mypgdriver.sync
from mypgdriver import exceptions
from mypgdriver.sync import Connection
from mypgdriver.types import JsonCodec

NESTED = {'a': [1, 2.5, None, True], 'ü': {'b': '✓'}}


@pytest.fixture
def jconn(open_sync_conn: Callable[..., Connection], no_event_loop: list[str]) -> Connection:  # noqa: F811
    """A connection with json=True: the JSON codecs on."""
    return open_sync_conn(json=True)


def test_values_both_ways(jconn: Connection) -> None:
    assert jconn.fetchval("SELECT $1::jsonb", NESTED) == NESTED
    assert jconn.fetchval("SELECT $1::json::text", NESTED) == json.dumps(NESTED)
    assert jconn.fetchval("SELECT ARRAY['[1]'::jsonb, NULL]") == [[1], None]
    assert jconn.fetchval("SELECT $1::jsonb", '{"as": "text"}') == {'as': 'text'}
    jconn.execute("CREATE TEMP TABLE t (id int, b jsonb)")
    jconn.executemany("INSERT INTO t VALUES ($1, $2)", [(1, {'x': 1}), (2, [2])])
    assert jconn.copy_records_to_table('t', records=[(3, NESTED)]) == 'COPY 1'
    assert jconn.fetch("SELECT id, b::text FROM t ORDER BY id") == [
        (1, '{"x": 1}'), (2, '[2]'), (3, '{"a": [1, 2.5, null, true], "ü": {"b": "✓"}}')]
    with pytest.raises(exceptions.DataError, match=r"\$2.*not JSON serializable"):
        jconn.execute("INSERT INTO t VALUES ($1, $2)", 4, object())
    assert jconn.fetchval("SELECT count(*) FROM t") == 3


def test_without_the_opt_in_values_stay_str(dsn: str,
                                            no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn) as conn:
        assert conn.fetchval("SELECT '{\"a\": 1}'::jsonb") == '{"a": 1}'


def test_orjson_and_a_loads_error(dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    orjson = pytest.importorskip('orjson')

    def loads(document: bytes) -> Any:
        if document == b'"refuse"':
            raise ValueError('refused')
        return orjson.loads(document)

    codec = JsonCodec(loads=loads, dumps=orjson.dumps, loads_bytes=True)
    with mypgdriver.sync.connect(dsn, json=codec) as conn:
        assert conn.fetchval("SELECT $1::json::text", {'k': 'é'}) == '{"k":"é"}'
        with pytest.raises(ValueError, match='refused'):
            conn.fetch("""SELECT v::jsonb FROM unnest(ARRAY['1', '"refuse"', '3']) v""")
        assert conn.fetch("SELECT $1::jsonb", [1]) == [([1],)]


def test_a_pool_gives_the_opt_in_to_every_connection(
        dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=2, json=True) as pool:
        with pool.acquire() as first, pool.acquire() as second:
            assert first.fetchval("SELECT $1::jsonb", {'a': 1}) == {'a': 1}
            assert second.fetchval("SELECT '[2]'::json") == [2]
        # after the release's reset
        with pool.acquire() as again:
            assert again.fetchval("SELECT '{\"x\": [3]}'::jsonb") == {'x': [3]}
        assert pool.fetchval("SELECT $1::jsonb", [4]) == [4]
        old_pids = {pool.fetchval("SELECT pg_backend_pid()")}
        pool.set_connect_args(dsn)
        pool.expire_connections()
        with pool.acquire() as fresh:
            # opened with the new arguments, and the pool's json
            assert fresh.get_server_pid() not in old_pids
            assert fresh.fetchval("SELECT '[5]'::jsonb") == [5]

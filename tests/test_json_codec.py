"""connect(json=...): json and jsonb as Python objects, with pluggable loads/dumps.

Without the opt-in nothing changes (values are str both ways, as in
asyncpg).  With it, results are decoded by loads and arguments other than
str/bytes (JSON text already) are encoded by dumps, also inside arrays,
composites and domains; set_type_codec() still wins.  What the server
stored is checked server-side (``::text``, comparisons), not only by
reading it back through the same codec.
"""
from __future__ import annotations

import asyncio
import decimal
import functools
import json
from typing import Any, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.types import JsonCodec
from tests.support.fixtures import AsyncConnect
from tests.support.scripted_server import (
    ScriptedServer,
    command_complete,
    data_row,
)

pytestmark = pytest.mark.asyncio

JSON_OID = 114
JSONB_OID = 3802

NESTED = {'a': [1, 2.5, None, True, False], 'b': {'c': 'd', 'e': []}, 'ü': '✓ 𝄞'}


@pytest.fixture
async def jconn(open_conn: Callable[..., Awaitable[Any]]) -> Any:
    """A connection opened with json=True."""
    return await open_conn(json=True)


# --- without the opt-in: str both ways, as before ---------------------------------


async def test_without_the_opt_in_values_stay_str(conn: Any) -> None:
    row = await conn.fetchrow(
        """SELECT '{"a": 1}'::json AS j, '{"a": 1}'::jsonb AS b, ARRAY['[1]'::jsonb] AS arr""")
    assert row['j'] == '{"a": 1}'
    assert row['b'] == '{"a": 1}'
    assert row['arr'] == ['[1]']
    # a str argument is JSON text, sent as it is
    assert await conn.fetchval("SELECT $1::jsonb::text", '{"b":[1, 2]}') == '{"b": [1, 2]}'
    with pytest.raises(exceptions.DataError,
                       match=r"\$1.*expected str, got dict .*connect with json=True"):
        await conn.fetchval("SELECT $1::jsonb", {'a': 1})


# --- decoding ---------------------------------------------------------------------


@pytest.mark.parametrize('typename', ['json', 'jsonb'])
async def test_values_are_decoded(jconn: Any, typename: str) -> None:
    text = json.dumps(NESTED, ensure_ascii=False)
    assert await jconn.fetchval(f"SELECT $1::text::{typename}", text) == NESTED
    for literal, expected in [('1', 1), ('-2.5', -2.5), ('"x"', 'x'), ('true', True),
                              ('null', None), ('[]', []), ('{}', {}), ('"\\u00e9"', 'é')]:
        assert await jconn.fetchval(f"SELECT $1::text::{typename}", literal) == expected
    # SQL NULL is None, not JSON null's decoding
    assert await jconn.fetchval(f"SELECT NULL::{typename}") is None


async def test_json_keeps_its_text_and_jsonb_is_normalised(jconn: Any) -> None:
    # json stores the text as given (duplicate keys: json.loads keeps the
    # last); jsonb keeps one key.  Both decode to the same dict here.
    row = await jconn.fetchrow("""SELECT '{"k": 1, "k": 2}'::json, '{"k": 1, "k": 2}'::jsonb""")
    assert tuple(row) == ({'k': 2}, {'k': 2})


@pytest.mark.parametrize('typename', ['json', 'jsonb'])
async def test_a_one_megabyte_value_round_trips(jconn: Any, typename: str) -> None:
    value = {'items': ['é' * 100 + str(i) for i in range(5000)], 'n': list(range(20000))}
    text = json.dumps(value)
    assert len(text.encode()) > 1_000_000
    assert await jconn.fetchval(f"SELECT $1::{typename}", value) == value
    assert await jconn.fetchval(
        f"SELECT $1::{typename} = $2::text::{typename}" if typename == 'jsonb'
        else f"SELECT $1::{typename}::text = $2", value, text)


# --- encoding ---------------------------------------------------------------------


@pytest.mark.parametrize('typename', ['json', 'jsonb'])
async def test_arguments_are_dumped(jconn: Any, typename: str) -> None:
    for value in [NESTED, [1, 'two', None], 3, 2.5, True, None]:
        # the server's text of the value, compared with json.dumps' text
        stored = await jconn.fetchval(f"SELECT $1::{typename}::text", value)
        if value is None:
            assert stored is None
        elif typename == 'json':
            assert stored == json.dumps(value)
        else:
            assert json.loads(stored) == value
    assert await jconn.fetchval(
        "SELECT $1::jsonb = '{\"a\": [1, 2.5, null, true, false], \"b\": {\"c\": \"d\", \"e\": []},"
        " \"ü\": \"✓ 𝄞\"}'::jsonb", NESTED)


@pytest.mark.parametrize('typename', ['json', 'jsonb'])
async def test_str_and_bytes_arguments_are_json_text_sent_as_they_are(jconn: Any,
                                                                      typename: str) -> None:
    assert await jconn.fetchval(f"SELECT $1::{typename}", '{"a": [1]}') == {'a': [1]}
    assert await jconn.fetchval(f"SELECT $1::{typename}", b'{"b": "\xc3\xa9"}') == {'b': 'é'}
    # a JSON string is written as one: json.dumps() it
    assert await jconn.fetchval(f"SELECT $1::{typename}", json.dumps('abc')) == 'abc'
    # a str that is not JSON text is the server's error, not a JSON string
    with pytest.raises(exceptions.InvalidTextRepresentationError):
        await jconn.fetchval(f"SELECT $1::{typename}", 'abc')
    assert await jconn.fetchval("SELECT 1") == 1


async def test_jsonpath_and_xml_are_unchanged(jconn: Any) -> None:
    assert await jconn.fetchval("SELECT $1::jsonpath", '$.a') == '$."a"'
    assert await jconn.fetchval("SELECT jsonb_path_query($1::jsonb, $2::jsonpath)",
                                {'a': {'b': 5}}, '$.a') == {'b': 5}


# --- containers -------------------------------------------------------------------


@pytest.mark.parametrize('typename', ['json', 'jsonb'])
async def test_arrays_decode_and_encode_their_elements(jconn: Any, typename: str) -> None:
    got = await jconn.fetchval(
        f"""SELECT ARRAY['{{"a": 1}}'::{typename}, NULL, '[1, 2]', '"s"']""")
    assert got == [{'a': 1}, None, [1, 2], 's']
    got = await jconn.fetchval(f"""SELECT ARRAY[['1', '{{}}'], ['null', '2']]::{typename}[]""")
    assert got == [[1, {}], [None, 2]]
    # dicts are elements; a list is a dimension, as for every array
    assert await jconn.fetchval(
        f"SELECT array_to_json($1::{typename}[])::text", [{'a': 1}, None, 5, 'true']) == (
        '[{"a": 1},null,5,true]')
    assert await jconn.fetchval(f"SELECT $1::{typename}[]",
                                [[{'x': 1}], [{'y': 2}]]) == [[{'x': 1}], [{'y': 2}]]
    with pytest.raises(exceptions.DataError, match=r'\$1'):
        await jconn.fetchval(f"SELECT $1::{typename}[]", [[1, 2], [3]])
    # a JSON array as an element: its text
    assert await jconn.fetchval(f"SELECT $1::{typename}[]", [json.dumps([1, 2]), {}]) == [
        [1, 2], {}]


async def test_composite_and_domain_fields(jconn: Any) -> None:
    async with jconn.transaction():
        await jconn.execute("CREATE TEMP TABLE docs (id int, j json, b jsonb)")
        await jconn.execute("CREATE DOMAIN pg_temp.doc AS jsonb CHECK (VALUE ? 'id')")
        await jconn.execute("CREATE TEMP TABLE tagged (d pg_temp.doc)")
        got = await jconn.fetchval(
            """SELECT ROW(1, '{"a": 1}', '[2]')::docs""")
        assert tuple(got) == (1, {'a': 1}, [2])
        # anonymous records too
        got = await jconn.fetchval("""SELECT ROW('{"a": 1}'::jsonb, '[1]'::json, 2)""")
        assert tuple(got) == ({'a': 1}, [1], 2)
        await jconn.execute("INSERT INTO docs SELECT ($1::docs).*", (2, {'x': 'y'}, [3, 4]))
        assert await jconn.fetchrow("SELECT j::text, b::text FROM docs") == (
            '{"x": "y"}', '[3, 4]')
        # domain over jsonb: the parameter's type is the domain
        await jconn.execute("INSERT INTO tagged VALUES ($1)", {'id': 7})
        assert await jconn.fetchval("SELECT d FROM tagged") == {'id': 7}
        assert await jconn.fetchval("SELECT d::text FROM tagged") == '{"id": 7}'
        with pytest.raises(exceptions.CheckViolationError):
            await jconn.execute("INSERT INTO tagged VALUES ($1)", {'no': 'id'})


async def test_executemany_and_copy_records(jconn: Any) -> None:
    await jconn.execute("CREATE TEMP TABLE rows (id int, j json, b jsonb)")
    await jconn.executemany("INSERT INTO rows VALUES ($1, $2, $3)",
                            [(1, {'a': 1}, [1]), (2, None, {'é': 'ü'}), (3, '"text"', 'null')])
    assert await jconn.fetch("SELECT id, j::text, b::text FROM rows ORDER BY id") == [
        (1, '{"a": 1}', '[1]'), (2, None, '{"é": "ü"}'), (3, '"text"', 'null')]
    assert await jconn.copy_records_to_table(
        'rows', records=[(4, {'c': [True]}, {'d': None}), (5, [], NESTED)]) == 'COPY 2'
    assert await jconn.fetch("SELECT j::text, b = $1 FROM rows WHERE id >= 4 ORDER BY id",
                             NESTED) == [('{"c": [true]}', False), ('[]', True)]
    assert await jconn.fetch("SELECT j, b FROM rows WHERE id >= 4 ORDER BY id") == [
        ({'c': [True]}, {'d': None}), ([], NESTED)]


# --- pluggable loads/dumps --------------------------------------------------------


@pytest.mark.parametrize('loads_bytes', [False, True])
async def test_orjson(open_conn: AsyncConnect, loads_bytes: bool) -> None:
    orjson = pytest.importorskip('orjson')
    calls: list[type] = []

    def loads(document: Any) -> Any:
        calls.append(type(document))
        return orjson.loads(document)

    codec = JsonCodec(loads=loads, dumps=orjson.dumps, loads_bytes=loads_bytes)
    conn = await open_conn(json=codec)
    # orjson.dumps returns bytes, written as they are
    assert await conn.fetchval("SELECT $1::jsonb::text", NESTED) == (
        '{"a": [1, 2.5, null, true, false], "b": {"c": "d", "e": []}, "ü": "✓ 𝄞"}')
    assert await conn.fetchval("SELECT $1::json::text", {'k': [1, 'é']}) == '{"k":[1,"é"]}'
    calls.clear()
    row = await conn.fetchrow("SELECT $1::jsonb, $1::json", NESTED)
    assert tuple(row) == (NESTED, NESTED)
    assert calls == [bytes if loads_bytes else str] * 2


async def test_a_custom_loads_with_decimals(open_conn: AsyncConnect) -> None:
    codec = JsonCodec(loads=functools.partial(json.loads, parse_float=decimal.Decimal),
                      loads_bytes=True)
    conn = await open_conn(json=codec)
    assert await conn.fetchval(
        """SELECT '{"price": 1.10, "big": 12345678901234567890.5}'::jsonb""") == {
        'price': decimal.Decimal('1.10'), 'big': decimal.Decimal('12345678901234567890.5')}


async def test_option_values(open_conn: AsyncConnect, connect_kwargs: dict[str, Any]) -> None:
    with pytest.raises(exceptions.ClientConfigurationError, match='json must be True'):
        await mypgdriver.connect(**connect_kwargs, json=5)
    with pytest.raises(TypeError, match='loads must be callable'):
        JsonCodec(loads=5)  # type: ignore[arg-type]
    # as SQLAlchemy passes a URL's query
    conn = await open_conn(json='true')
    assert await conn.fetchval("SELECT '[1]'::jsonb") == [1]
    conn = await open_conn(json=False)
    assert await conn.fetchval("SELECT '[1]'::jsonb") == '[1]'


# --- json=True: the standard library's scanner and encoder, called directly ---------


#: Values whose json.dumps() text the server's json type keeps as it is.
STDLIB_SAMPLES = [
    NESTED, [], {}, [[[]]], 0, -1, 2**70, 1.5, -0.0, 1e300, 5e-324, True, False,
    ['\u00e9\n\t"\\', '\ud83d\ude00', '\x01'], {'k' * 300: list(range(300))},
    {'1': 'int keys', 'nested': [{'a': None}]},
]


async def test_json_true_writes_what_json_dumps_writes(jconn: Any) -> None:
    # json keeps the text it was given: what was sent is what json.dumps() makes
    for value in STDLIB_SAMPLES + [{1: 'int key'}, (1, 2)]:
        assert await jconn.fetchval("SELECT $1::json::text", value) == json.dumps(value), value
    import enum

    class Level(enum.IntEnum):
        HIGH = 3
    assert await jconn.fetchval("SELECT $1::json::text", {'level': Level.HIGH}) == (
        json.dumps({'level': Level.HIGH}))


async def test_json_true_reads_what_json_loads_reads(jconn: Any) -> None:
    for value in STDLIB_SAMPLES:
        text = json.dumps(value)
        assert await jconn.fetchval("SELECT $1::text::json", text) == json.loads(text)
        # jsonb has its own text (numbers as numeric: 1e300 is an integer)
        decoded, server_text = await jconn.fetchrow(
            "SELECT $1::text::jsonb, $1::text::jsonb::text", text)
        assert decoded == json.loads(server_text)
    # json keeps whitespace around the value: read by json.loads itself
    for text in ['  {"a": 1}', '[1]\n', '\t\r\n"x" ', ' 5 ']:
        assert await jconn.fetchval("SELECT $1::text::json", text) == json.loads(text)
    # and its errors are json.loads' (a number past the int digit limit)
    digits = '9' * 5000
    with pytest.raises(ValueError) as expected:
        json.loads(digits)
    with pytest.raises(type(expected.value), match='Exceeds the limit'):
        await jconn.fetchval("SELECT $1::text::json", digits)
    assert await jconn.fetchval("SELECT $1::text::json", '[7]') == [7]


async def test_a_failed_dumps_leaves_no_circular_reference_markers(jconn: Any) -> None:
    # The encoder remembers the containers it is inside; when it fails
    # halfway, they must be forgotten, or encoding them again would be
    # refused as a circular reference.
    value: list[Any] = [[{1}]]
    with pytest.raises(exceptions.DataError, match='set is not JSON serializable'):
        await jconn.fetchval("SELECT $1::jsonb", value)
    value[0][0] = 1
    assert await jconn.fetchval("SELECT $1::jsonb", value) == [[1]]


# --- errors -----------------------------------------------------------------------


async def test_dumps_errors_name_the_argument(jconn: Any) -> None:
    with pytest.raises(exceptions.DataError,
                       match=r"query argument \$2: \{1, 2\} \(Object of type set is not JSON") \
            as info:
        await jconn.fetchval("SELECT $1::int, $2::jsonb", 1, {1, 2})
    assert isinstance(info.value.__cause__, TypeError)
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(exceptions.DataError, match=r"\$1.*Circular reference"):
        await jconn.fetchval("SELECT $1::json", circular)
    await jconn.execute("CREATE TEMP TABLE t (j jsonb)")
    with pytest.raises(exceptions.DataError, match=r"\$1 in row 1: "):
        await jconn.executemany("INSERT INTO t VALUES ($1)", [({'ok': 1},), (object(),)])
    with pytest.raises(exceptions.DataError, match=r"record 1, column 'j'"):
        await jconn.copy_records_to_table('t', records=[({'ok': 1},), ({2, 3},)])
    # nothing was written by the failed calls, and the connection is usable
    assert await jconn.fetchval("SELECT count(*) FROM t") == 0
    assert await jconn.fetchval("SELECT $1::jsonb", {'ok': True}) == {'ok': True}


async def test_what_dumps_returns_is_checked(open_conn: AsyncConnect) -> None:
    for dumps, message in [(lambda v: 42, 'returned int, expected str or bytes'),
                           (lambda v: '"a\x00b"', 'NUL character'),
                           (lambda v: b'"a\x00b"', 'NUL character')]:
        conn = await open_conn(json=JsonCodec(dumps=dumps))
        with pytest.raises(exceptions.DataError, match=rf"\$1: \[1\] .*{message}"):
            await conn.fetchval("SELECT $1::jsonb", [1])
        assert await conn.fetchval("SELECT 2") == 2


async def test_a_loads_error_is_raised_and_the_connection_stays_in_sync(
        open_conn: AsyncConnect) -> None:
    class Refused(Exception):
        pass

    def loads(document: str) -> Any:
        value = json.loads(document)
        if value == 'refuse':
            raise Refused(document)
        return value

    conn = await open_conn(json=JsonCodec(loads=loads))
    # the second of three rows fails: the call raises loads' exception
    # and the remaining rows are read and dropped
    with pytest.raises(Refused):
        await conn.fetch("""SELECT v::jsonb FROM unnest(ARRAY['1', '"refuse"', '3']) v""")
    assert await conn.fetch("SELECT $1::jsonb", [1]) == [([1],)]
    # pipelined calls: the one after the failure gets its own result
    failing = conn.fetchval("""SELECT '"refuse"'::json""")
    following = conn.fetchval("SELECT $1::json", {'next': 1})
    results = await asyncio.gather(failing, following, return_exceptions=True)
    assert isinstance(results[0], Refused)
    assert results[1] == {'next': 1}
    # inside a transaction block: the transaction is not aborted by it
    async with conn.transaction():
        with pytest.raises(Refused):
            await conn.fetchval("""SELECT '"refuse"'::jsonb""")
        assert await conn.fetchval("SELECT 5") == 5


async def test_server_json_that_loads_refuses(open_conn: AsyncConnect) -> None:
    # PostgreSQL's json accepts numbers any float overflows: a loads that
    # refuses them (as a strict parser may) fails the call only.
    def strict_loads(document: str) -> Any:
        return json.loads(document, parse_constant=_refuse,
                          parse_float=lambda s: _finite(float(s)))

    conn = await open_conn(json=JsonCodec(loads=strict_loads))
    with pytest.raises(ValueError, match='not finite'):
        await conn.fetchval("SELECT '[1.5e400]'::json")
    assert await conn.fetchval("SELECT '[1.5e300]'::json") == [1.5e300]


def _refuse(name: str) -> Any:
    raise ValueError(f'{name} is not JSON')


def _finite(x: float) -> float:
    if x != x or x in (float('inf'), float('-inf')):
        raise ValueError(f'{x} is not finite')
    return x


async def test_jsonb_format_version_is_checked(connect_kwargs: dict[str, Any]) -> None:
    rows = (data_row([b'\x02{}']) + command_complete())
    async with ScriptedServer(columns=[JSONB_OID], executes=[rows, data_row([b'\x01{"a":1}'])
                                                             + command_complete()]) as fake:
        conn = await asyncio.wait_for(mypgdriver.connect(
            host='127.0.0.1', port=fake.port, user='u', database='d', json=True), 5)
        try:
            with pytest.raises(exceptions.ProtocolError,
                               match='cannot decode a value of type jsonb: unsupported jsonb '
                                     'format version 2'):
                await conn.fetch('SELECT hostile')
            assert await conn.fetch('SELECT fine') == [({'a': 1},)]
        finally:
            await asyncio.wait_for(conn.close(), 5)


async def test_an_empty_jsonb_value_is_a_protocol_error(connect_kwargs: dict[str, Any]) -> None:
    rows = data_row([b'']) + command_complete()
    async with ScriptedServer(columns=[JSONB_OID], executes=[rows]) as fake:
        conn = await asyncio.wait_for(mypgdriver.connect(
            host='127.0.0.1', port=fake.port, user='u', database='d', json=True), 5)
        try:
            with pytest.raises(exceptions.ProtocolError):
                await conn.fetch('SELECT hostile')
            assert await conn.fetch('SELECT next') == []
        finally:
            await asyncio.wait_for(conn.close(), 5)


async def test_prepared_statements_cursors_and_schema_reloads(jconn: Any) -> None:
    stmt = await jconn.prepare("SELECT $1::jsonb AS doc")
    assert [(t.name, t.kind) for t in stmt.get_parameters()] == [('jsonb', 'scalar')]
    assert await stmt.fetchval({'p': 1}) == {'p': 1}
    async with jconn.transaction():
        got = [r['v'] async for r in jconn.cursor(
            "SELECT jsonb_build_object('i', i) AS v FROM generate_series(1, 3) i", prefetch=2)]
    assert got == [{'i': 1}, {'i': 2}, {'i': 3}]
    await jconn.reload_schema_state()
    assert await jconn.fetchval("SELECT '[1]'::jsonb") == [1]


# --- set_type_codec() wins --------------------------------------------------------


async def test_set_type_codec_takes_precedence_and_reset_restores_the_opt_in(
        jconn: Any) -> None:
    await jconn.set_type_codec('jsonb', schema='pg_catalog', format='text',
                               encoder=lambda v: json.dumps({'wrapped': v}),
                               decoder=lambda s: ('custom', s))
    assert await jconn.fetchval("SELECT '[1]'::jsonb") == ('custom', '[1]')
    assert await jconn.fetchval("SELECT ARRAY['[1]'::jsonb]") == [('custom', '[1]')]
    assert await jconn.fetchval("SELECT $1::jsonb::text", 5) == '{"wrapped": 5}'
    # json keeps the opt-in
    assert await jconn.fetchval("SELECT '[1]'::json") == [1]
    await jconn.reset_type_codec('jsonb', schema='pg_catalog')
    assert await jconn.fetchval("SELECT '[1]'::jsonb") == [1]
    assert await jconn.fetchval("SELECT ARRAY['[1]'::jsonb]") == [[1]]
    assert await jconn.fetchval("SELECT $1::jsonb::text", 5) == '5'


# --- pools ------------------------------------------------------------------------


async def test_a_pool_gives_the_opt_in_to_every_connection(
        connect_kwargs: dict[str, Any]) -> None:
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=2,
                                      json=True) as pool:
        async with pool.acquire() as first, pool.acquire() as second:
            old_pids = {first.get_server_pid(), second.get_server_pid()}
            # the second was opened on demand
            assert await first.fetchval("SELECT $1::jsonb", {'a': 1}) == {'a': 1}
            assert await second.fetchval("SELECT '[2]'::json") == [2]
            await second.execute("SELECT set_config('search_path', 'pg_catalog', false)")
        # after the release's reset (RESET ALL, DISCARD TEMP ...)
        async with pool.acquire() as again:
            assert await again.fetchval("SELECT current_setting('search_path')") == (
                '"$user", public')
            assert await again.fetchval("SELECT '{\"x\": [3]}'::jsonb") == {'x': [3]}
        assert await pool.fetchval("SELECT $1::jsonb", [4]) == [4]
        # new connect arguments keep the pool's json
        pool.set_connect_args(**connect_kwargs)
        await pool.expire_connections()
        async with pool.acquire() as fresh:
            assert fresh.get_server_pid() not in old_pids
            assert await fresh.fetchval("SELECT '[5]'::jsonb") == [5]


async def test_a_pool_without_the_opt_in_and_a_connect_callback(
        connect_kwargs: dict[str, Any]) -> None:
    seen: list[dict[str, Any]] = []

    async def connect(dsn: Any, **kwargs: Any) -> Any:
        seen.append(dict(kwargs))
        return await mypgdriver.connect(dsn, **kwargs)

    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1,
                                      connect=connect) as pool:
        assert await pool.fetchval("SELECT '[1]'::jsonb") == '[1]'
    # a pool without json= calls its connect callback as before
    assert 'json' not in seen[0]
    seen.clear()
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1,
                                      connect=connect, json=True) as pool:
        assert await pool.fetchval("SELECT '[1]'::jsonb") == [1]
    assert seen[0]['json'] == JsonCodec()
    with pytest.raises(exceptions.ClientConfigurationError):
        mypgdriver.create_pool(**connect_kwargs, json=[])


# --- cost -------------------------------------------------------------------------


async def test_loads_gets_one_object_per_value(open_conn: AsyncConnect) -> None:
    # The decoder is the loads function itself: no wrapper call in between.
    seen: list[Any] = []
    codec = JsonCodec(loads=seen.append, loads_bytes=True)
    conn = await open_conn(json=codec)
    await conn.fetch("SELECT '{\"a\": 1}'::jsonb, '[1]'::json")
    assert seen == [b'{"a": 1}', b'[1]']


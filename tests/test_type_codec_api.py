"""set_type_codec(), reset_type_codec() and set_builtin_type_codec(): naming types, hstore.

Types are named as asyncpg users name them: catalog names (``'int2'``), the
SQL spellings of built-in types with ``schema='pg_catalog'`` (``'smallint'``,
``'double precision'``), and ``codec_name='pg_contrib.hstore'`` for hstore
as dicts.  The hstore tests need the contrib extension on the server and skip
without it.
"""
from __future__ import annotations

import struct
import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mypgdriver import exceptions
from mypgdriver.codecs import pg_types

pytestmark = pytest.mark.asyncio

#: One column per type the names below resolve to.
COLUMNS_SQL = (
    "SELECT 1::int2 AS int2, 2.5::float8 AS float8, 'x'::varchar AS varchar, 3::int4 AS int4, "
    "true AS bool, '2020-01-02 03:04:05+00'::timestamptz AS timestamptz, "
    "B'101'::varbit AS varbit, 'y'::bpchar AS bpchar, 'z'::\"char\" AS char, 4.5::numeric AS numeric"
)


def tag(text: str) -> tuple:
    return ('decoded', text)


@pytest.mark.parametrize('typename, column', [
    ('smallint', 'int2'),
    ('double precision', 'float8'),
    ('character varying', 'varchar'),
    ('integer', 'int4'),
    ('int', 'int4'),
    ('Int4', 'int4'),
    ('boolean', 'bool'),
    ('timestamp with time zone', 'timestamptz'),
    ('timestamp  WITH time zone', 'timestamptz'),
    ('bit varying', 'varbit'),
    ('character', 'bpchar'),
    ('char', 'bpchar'),          # SQL's char is character(1), as in a cast and in asyncpg
    ('"char"', 'char'),
    ('decimal', 'numeric'),
    ('int2', 'int2'),
])
async def test_sql_type_names_resolve_in_pg_catalog(conn, typename: str, column: str) -> None:
    await conn.set_type_codec(typename, schema='pg_catalog', format='text',
                              encoder=str, decoder=tag)
    row = await conn.fetchrow(COLUMNS_SQL)
    tagged = [name for name, value in row.items() if isinstance(value, tuple)]
    assert tagged == [column]
    await conn.reset_type_codec(typename, schema='pg_catalog')
    row = await conn.fetchrow(COLUMNS_SQL)
    assert not any(isinstance(value, tuple) for value in row.values())


async def test_sql_type_name_codec_applies_to_arguments_and_arrays(conn) -> None:
    await conn.set_type_codec('smallint', schema='pg_catalog', format='text',
                              encoder=lambda v: str(len(v)), decoder=lambda s: 'n' * int(s))
    assert await conn.fetchval("SELECT $1::int2", 'abc') == 'nnn'
    assert await conn.fetchval("SELECT $1::int2[]", ['a', 'bb']) == ['n', 'nn']


async def test_builtin_type_names_in_pg_catalog_need_no_catalog_query(conn) -> None:
    # SQLAlchemy sets the json and jsonb codecs on every new connection: a
    # built-in type's OID is known without asking the server (as asyncpg
    # knows it).  Inside an aborted transaction a catalog query would fail.
    if conn.get_server_version().major < pg_types.SOURCE_MAJOR:
        pytest.skip('older than the server the built-in type table comes from')
    xact = conn.transaction()
    await xact.start()
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.execute("SELECT 1/0")
    for typename in ('json', 'jsonb', 'int4'):
        await conn.set_type_codec(typename, schema='pg_catalog', format='text',
                                  encoder=str, decoder=tag)
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        await conn.execute("SELECT 1")
    await xact.rollback()
    assert tuple(await conn.fetchrow("SELECT '{}'::json, '[]'::jsonb, 5::int4")) == (
        ('decoded', '{}'), ('decoded', '[]'), ('decoded', '5'))


@pytest.mark.parametrize('typename', [
    'nosuch', 'int4[]', 'numeric(10,2)', 'foo bar', 'select', 'a.b.c.d', 'x.y.z', '', '"int4',
])
async def test_unknown_type_names_raise_value_error_and_leave_the_transaction_alone(
        conn, typename: str) -> None:
    # The lookup is one catalog query that cannot fail on the server: a
    # syntax error there (as from to_regtype('foo bar')) would abort the
    # application's transaction.
    async with conn.transaction():
        await conn.execute("CREATE TEMP TABLE lookup_probe (a int)")
        with pytest.raises(ValueError, match=r'unknown type: pg_catalog\.'):
            await conn.set_type_codec(typename, schema='pg_catalog', encoder=str, decoder=str)
        with pytest.raises(ValueError, match='unknown type'):
            await conn.reset_type_codec(typename, schema='pg_catalog')
        assert await conn.fetchval("SELECT count(*) FROM lookup_probe") == 0


async def test_the_default_schema_falls_back_to_the_search_path(conn) -> None:
    # A documented leniency (asyncpg raises ValueError without
    # schema='pg_catalog'): the name resolves as it would in a cast.
    await conn.set_type_codec('double precision', format='text', encoder=str, decoder=tag)
    assert await conn.fetchval("SELECT 2.5::float8") == ('decoded', '2.5')
    await conn.reset_type_codec('double precision')
    assert await conn.fetchval("SELECT 2.5::float8") == 2.5


async def test_a_user_type_wins_over_a_builtin_of_the_same_spelling(conn) -> None:
    await conn.execute("DROP SCHEMA IF EXISTS names_s CASCADE; CREATE SCHEMA names_s; "
                       "CREATE TYPE names_s.float AS ENUM ('x'); "
                       "CREATE TYPE names_s.\"Mixed\" AS ENUM ('y')")
    try:
        await conn.set_type_codec('float', schema='names_s', encoder=str, decoder=tag)
        await conn.set_type_codec('Mixed', schema='names_s', encoder=str, decoder=str.upper)
        assert tuple(await conn.fetchrow(
            "SELECT 'x'::names_s.float, 'y'::names_s.\"Mixed\", 1.5::float8")) == (
            ('decoded', 'x'), 'Y', 1.5)
    finally:
        await conn.execute("DROP SCHEMA names_s CASCADE")


async def test_a_codec_on_a_domain_is_refused_and_the_connection_stays_usable(conn) -> None:
    # Results carry a domain's values as its base type, so a codec keyed by
    # the domain would silently never decode them (asyncpg refuses too).
    await conn.execute("DROP SCHEMA IF EXISTS dom_s CASCADE; CREATE SCHEMA dom_s; "
                       "CREATE DOMAIN dom_s.posint AS int4 CHECK (VALUE > 0)")
    try:
        async with conn.transaction():
            with pytest.raises(exceptions.UnsupportedClientFeatureError,
                               match=r'domain type dom_s\.posint.*base type \(pg_catalog\.int4\)'):
                await conn.set_type_codec('posint', schema='dom_s', format='text',
                                          encoder=str, decoder=tag)
            assert await conn.fetchval("SELECT 5::dom_s.posint") == 5
        # The advice works: a codec on the base type applies to the domain.
        await conn.set_type_codec('int4', schema='pg_catalog', format='text',
                                  encoder=str, decoder=tag)
        assert await conn.fetchval("SELECT 5::dom_s.posint") == ('decoded', '5')
    finally:
        await conn.reset_type_codec('int4', schema='pg_catalog')
        await conn.execute("DROP SCHEMA dom_s CASCADE")


async def test_every_pg_catalog_name_asyncpg_knows_resolves_to_the_same_type(conn) -> None:
    asyncpg_protocol = pytest.importorskip('asyncpg.protocol')
    names = asyncpg_protocol.BUILTIN_TYPE_NAME_MAP
    existing = {row[0] for row in await conn.fetch("SELECT oid::int FROM pg_type")}
    checked = 0
    for name, oid in names.items():
        if oid not in existing or name == 'smgr':
            # Types this server does not have (abstime, oid8...); smgr's old
            # OID 210 belongs to _pg_type on current servers.
            continue
        # The lookup behind set_type_codec() and reset_type_codec().
        assert await conn._type_oid_by_name(name, 'pg_catalog') == oid, name
        checked += 1
    assert checked > 100


@pytest.mark.parametrize('codec_name', ['int4', 'integer', 'int', 'pg_catalog.int4'])
async def test_builtin_codec_names_take_sql_spellings(conn, codec_name: str) -> None:
    # oid has int4's wire form, read unsigned: with int4's codec the largest
    # oid reads back as -1, which shows which codec is in use.
    await conn.set_builtin_type_codec('oid', schema='pg_catalog', codec_name=codec_name)
    assert await conn.fetchval("SELECT 4294967295::oid") == -1
    await conn.reset_type_codec('oid', schema='pg_catalog')
    assert await conn.fetchval("SELECT 4294967295::oid") == 4294967295


@pytest.mark.parametrize('codec_name', ['nosuch', 'pg_contrib.nosuch', 'hstore', 'other.int4'])
async def test_unknown_builtin_codec_names_are_refused(conn, codec_name: str) -> None:
    with pytest.raises(exceptions.InterfaceError, match='unknown built-in codec') as info:
        await conn.set_builtin_type_codec('int4', schema='pg_catalog', codec_name=codec_name)
    assert isinstance(info.value, ValueError)   # what mypgdriver raised before


# --- hstore as dict -------------------------------------------------------------------------


@pytest.fixture
async def hconn(conn):
    """`conn` with hstore (in schema contrib_hstore) decoded to dicts."""
    if not await conn.fetchval(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'hstore'"):
        pytest.skip('the hstore extension (PostgreSQL contrib) is not installed on the server')
    await conn.execute("CREATE SCHEMA IF NOT EXISTS contrib_hstore; "
                       "CREATE EXTENSION IF NOT EXISTS hstore SCHEMA contrib_hstore")
    await conn.set_builtin_type_codec('hstore', schema='contrib_hstore',
                                      codec_name='pg_contrib.hstore')
    return conn


async def test_hstore_results_are_dicts(hconn) -> None:
    got = await hconn.fetchval(
        """SELECT 'a=>1, b=>NULL, "c d"=>"", "q\\"x"=>"é ü", "NULL"=>"null"'
           ::contrib_hstore.hstore""")
    assert got == {'a': '1', 'b': None, 'c d': '', 'q"x': 'é ü', 'NULL': 'null'}
    assert await hconn.fetchval("SELECT ''::contrib_hstore.hstore") == {}


@pytest.mark.parametrize('value, expected', [
    ({'a': '1', 'b': None}, {'a': '1', 'b': None}),
    ({}, {}),
    ({'k': 'x' * 10000, '': ''}, {'k': 'x' * 10000, '': ''}),
    ({'é': 'ü', '"\\': '=>,'}, {'é': 'ü', '"\\': '=>,'}),
    ([('a', 'b'), ('c', None)], {'a': 'b', 'c': None}),
    (types.MappingProxyType({'m': 'p'}), {'m': 'p'}),
    ({str(i): str(i * i) for i in range(1000)}, {str(i): str(i * i) for i in range(1000)}),
], ids=['nulls', 'empty', 'long', 'quoting', 'pairs', 'mapping', 'many'])
async def test_hstore_arguments_round_trip(hconn, value: Any, expected: dict) -> None:
    got = await hconn.fetchval("SELECT $1::contrib_hstore.hstore", value)
    assert got == expected and type(got) is dict
    # The server's own view of what was sent.
    keys = await hconn.fetchval(
        "SELECT array_agg(k ORDER BY k) FROM contrib_hstore.skeys($1::contrib_hstore.hstore) k",
        value)
    assert keys == (sorted(expected) or None)


async def test_hstore_in_arrays_and_composites(hconn) -> None:
    assert await hconn.fetchval("SELECT $1::contrib_hstore.hstore[]", [{'a': 'b'}, None, {}]) \
        == [{'a': 'b'}, None, {}]
    row = await hconn.fetchval("SELECT ROW(1, 'x=>y'::contrib_hstore.hstore)")
    assert tuple(row) == (1, {'x': 'y'})


@pytest.mark.parametrize('value, reason', [
    ({None: 'x'}, 'keys cannot be None'),
    ({1: 'x'}, 'hstore keys must be str, got int'),
    ({'a': 1}, 'hstore values must be str, got int'),
    ({'a': b'x'}, 'hstore values must be str, got bytes'),
    ({'a\x00': 'x'}, 'key contains a NUL character'),
    ({'a': 'x\x00'}, 'value contains a NUL character'),
    ('a=>b', 'expected a dict'),
    (5, 'expected a dict'),
    ([('a', 'b', 'c')], 'expected (key, value) pairs'),
], ids=['none-key', 'int-key', 'int-value', 'bytes-value', 'nul-key', 'nul-value', 'str',
        'int', 'triple'])
async def test_bad_hstore_arguments_are_data_errors(hconn, value: Any, reason: str) -> None:
    with pytest.raises(exceptions.DataError, match=r'query argument \$1') as info:
        await hconn.fetchval("SELECT $1::contrib_hstore.hstore", value)
    assert reason in str(info.value)
    assert await hconn.fetchval("SELECT 'a=>b'::contrib_hstore.hstore") == {'a': 'b'}


async def test_hstore_codec_is_binary_only_and_can_be_reset(hconn) -> None:
    with pytest.raises(exceptions.InterfaceError, match="binary format, not 'text'"):
        await hconn.set_builtin_type_codec('hstore', schema='contrib_hstore',
                                           codec_name='pg_contrib.hstore', format='text')
    await hconn.reset_type_codec('hstore', schema='contrib_hstore')
    assert await hconn.fetchval("SELECT 'a=>b'::contrib_hstore.hstore") == '"a"=>"b"'


# Malformed hstore bytes come from a real server: the hstore codec is put on
# bytea, whose binary form is any bytes we choose.

def hstore_bytes(*pairs: tuple, count: int | None = None) -> bytes:
    out = struct.pack('!i', len(pairs) if count is None else count)
    for key, value in pairs:
        out += struct.pack('!i', len(key)) + key
        out += struct.pack('!i', -1) if value is None else struct.pack('!i', len(value)) + value
    return out


def raw_pair(*words: Any) -> bytes:
    return b''.join(struct.pack('!i', w) if isinstance(w, int) else w for w in words)


@pytest.fixture
async def bytea_as_hstore(conn):
    await conn.set_builtin_type_codec('bytea', schema='pg_catalog',
                                      codec_name='pg_contrib.hstore')
    return conn


async def test_wire_bytes_of_a_valid_hstore_decode(bytea_as_hstore) -> None:
    data = hstore_bytes((b'a', b'1'), (b'\xc3\xa9', None), (b'', b''))
    got = await bytea_as_hstore.fetchval("SELECT decode($1, 'hex')", data.hex())
    assert got == {'a': '1', 'é': None, '': ''}


@pytest.mark.parametrize('data, reason', [
    (b'', 'needed 4 more bytes'),
    (struct.pack('!i', -1), 'invalid pair count -1'),
    (struct.pack('!i', 0x7FFFFFFF), '2147483647 pairs claimed, but only 0 bytes follow'),
    (struct.pack('!i', 2) + raw_pair(1, b'a', -1), '2 pairs claimed, but only 9 bytes follow'),
    (struct.pack('!i', 1) + raw_pair(-1, -1), 'invalid key length -1'),
    (struct.pack('!i', 1) + raw_pair(100, -1), 'key length 100 exceeds the 4 bytes left'),
    (struct.pack('!i', 1) + raw_pair(1, b'a', -2), 'invalid value length -2'),
    (struct.pack('!i', 1) + raw_pair(0, 0x7FFFFFFF), 'value length 2147483647 exceeds'),
    (struct.pack('!i', 1) + raw_pair(1, b'\xff', -1), 'invalid UTF-8'),
    (hstore_bytes((b'a', b'b')) + b'\x00', 'left 1 bytes undecoded'),
], ids=['empty', 'negative-count', 'huge-count', 'short-pairs', 'null-key', 'long-key',
        'bad-value-length', 'huge-value', 'bad-utf8', 'trailing-byte'])
async def test_malformed_hstore_bytes_are_protocol_errors(bytea_as_hstore, data: bytes,
                                                          reason: str) -> None:
    with pytest.raises(exceptions.ProtocolError) as info:
        await bytea_as_hstore.fetchval("SELECT decode($1, 'hex')", data.hex())
    assert reason in str(info.value)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(
    st.binary(max_size=64),
    st.builds(lambda n, rest: struct.pack('!i', n) + rest,
              st.integers(-2 ** 31, 2 ** 31 - 1), st.binary(max_size=48))))
async def test_any_hstore_bytes_decode_or_raise_protocol_error(bytea_as_hstore,
                                                               data: bytes) -> None:
    try:
        got = await bytea_as_hstore.fetchval("SELECT decode($1, 'hex')", data.hex())
    except exceptions.ProtocolError:
        return
    assert type(got) is dict
    assert all(type(k) is str and (v is None or type(v) is str) for k, v in got.items())


async def test_an_encoder_exception_whose_str_fails_still_gives_the_argument_error(conn):
    class Unprintable(ValueError):
        def __str__(self) -> str:
            raise RuntimeError("no message")

    def encode(value: object) -> str:
        raise Unprintable()

    await conn.set_type_codec("int4", schema="pg_catalog", encoder=encode, decoder=int,
                              format="text")
    with pytest.raises(exceptions.DataError) as info:
        await conn.fetchval("SELECT $1::int4", 5)
    assert "invalid input for query argument $1" in str(info.value)
    assert "Unprintable" in str(info.value)
    assert isinstance(info.value.__cause__, Unprintable)
    await conn.reset_type_codec("int4", schema="pg_catalog")
    assert await conn.fetchval("SELECT $1::int4", 5) == 5

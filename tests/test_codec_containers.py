"""Composites, anonymous records, ranges and multiranges through a live server.

Each value goes both ways (query argument and result column) in the binary
format, is cross-checked against the server's own text rendering, and the
results are compared with asyncpg's for the same queries.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mypgdriver import exceptions
from mypgdriver.protocol.record import Record
from mypgdriver.types import Range

pytestmark = pytest.mark.asyncio

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

UTC = dt.timezone.utc

SCHEMA_SQL = """
DROP SCHEMA IF EXISTS ctest CASCADE;
CREATE SCHEMA ctest;
CREATE TYPE ctest.mood AS ENUM ('happy', 'sad');
CREATE DOMAIN ctest.posint AS int4 CHECK (VALUE > 0);
CREATE TYPE ctest.pair AS (a int4, b text);
CREATE DOMAIN ctest.pair_d AS ctest.pair;
CREATE TYPE ctest.inner_t AS (x int8, tags text[]);
CREATE TYPE ctest.outer_t AS (
    id int4, inner_v ctest.inner_t, pairs ctest.pair[], m ctest.mood, p ctest.posint,
    n numeric, r int4range);
CREATE TYPE ctest.with_acl AS (a int4, acl aclitem);
CREATE TYPE ctest.doc AS (id int4, body json);
CREATE TYPE ctest.floatrange AS RANGE (subtype = float8);
CREATE TYPE ctest.moneyrange AS RANGE (subtype = money);
CREATE DOMAIN ctest.small_range AS int4range;
CREATE TABLE ctest.items (id int4, name text, gone int4, price numeric);
ALTER TABLE ctest.items DROP COLUMN gone;
INSERT INTO ctest.items VALUES (1, 'apple', 1.50), (2, NULL, NULL);
SET TimeZone = 'UTC';
"""


@pytest.fixture
async def db(conn):
    """A connection with fresh user types in schema ctest."""
    await conn.execute(SCHEMA_SQL)
    return conn


def assert_record(value: Any, names: list[str], values: tuple) -> None:
    """A Record with exactly these field names and values."""
    assert type(value) is Record
    assert list(value.keys()) == names
    assert tuple(value) == values


# --- named composites: decoding -------------------------------------------------------


async def test_composite_decodes_to_record_with_field_names(db) -> None:
    value = await db.fetchval("SELECT ROW(1, 'x')::ctest.pair")
    assert_record(value, ['a', 'b'], (1, 'x'))
    assert value['a'] == 1 and value['b'] == 'x'


@pytest.mark.parametrize("literal, expected", [
    ("ROW(NULL, NULL)", (None, None)),
    ("ROW(7, NULL)", (7, None)),
    ("ROW(NULL, '')", (None, '')),
])
async def test_composite_null_fields(db, literal: str, expected: tuple) -> None:
    value = await db.fetchval(f"SELECT {literal}::ctest.pair")
    assert_record(value, ['a', 'b'], expected)


async def test_null_composite_is_none(db) -> None:
    assert await db.fetchval("SELECT NULL::ctest.pair") is None


async def test_nested_composite_with_enum_domain_array_range_fields(db) -> None:
    value = await db.fetchval("""
        SELECT ROW(1, ROW(2, ARRAY['a', NULL, 'c'])::ctest.inner_t,
                   ARRAY[ROW(3, 'p')::ctest.pair, NULL, ROW(NULL, 'q')::ctest.pair],
                   'sad', 5, 1.50, '[1,4)')::ctest.outer_t""")
    assert_record(value, ['id', 'inner_v', 'pairs', 'm', 'p', 'n', 'r'],
                  (1, (2, ['a', None, 'c']), [(3, 'p'), None, (None, 'q')], 'sad', 5,
                   Decimal('1.50'), Range(1, 4)))
    assert_record(value['inner_v'], ['x', 'tags'], (2, ['a', None, 'c']))
    assert_record(value['pairs'][0], ['a', 'b'], (3, 'p'))
    assert str(value['n']) == '1.50'


async def test_table_row_type_skips_dropped_columns(db) -> None:
    rows = await db.fetch("SELECT t FROM ctest.items t ORDER BY id")
    assert_record(rows[0][0], ['id', 'name', 'price'], (1, 'apple', Decimal('1.50')))
    assert_record(rows[1][0], ['id', 'name', 'price'], (2, None, None))


async def test_table_row_type_as_argument(db) -> None:
    value = await db.fetchval("SELECT $1::ctest.items", (3, 'pear', Decimal('2')))
    assert_record(value, ['id', 'name', 'price'], (3, 'pear', Decimal('2')))
    assert await db.fetchval("SELECT $1::ctest.items::text", (3, None, None)) == '(3,,)'


async def test_composite_array_with_nulls_and_two_dimensions(db) -> None:
    value = await db.fetchval(
        "SELECT ARRAY[ROW(1, 'a')::ctest.pair, NULL, ROW(2, NULL)::ctest.pair]")
    assert value == [(1, 'a'), None, (2, None)]
    assert_record(value[2], ['a', 'b'], (2, None))
    value = await db.fetchval("SELECT '{{\"(1,a)\",\"(2,b)\"},{\"(3,c)\",NULL}}'::ctest.pair[]")
    assert value == [[(1, 'a'), (2, 'b')], [(3, 'c'), None]]


async def test_domain_over_composite(db) -> None:
    value = await db.fetchval("SELECT ROW(1, 'x')::ctest.pair_d")
    assert_record(value, ['a', 'b'], (1, 'x'))
    value = await db.fetchval("SELECT $1::ctest.pair_d", (2, 'y'))
    assert_record(value, ['a', 'b'], (2, 'y'))


async def test_composite_with_text_only_field_moves_as_text(db) -> None:
    # aclitem has no binary output function, so the whole composite is text.
    value = await db.fetchval("SELECT ROW(1, 'postgres=r/postgres')::ctest.with_acl")
    assert value == '(1,postgres=r/postgres)'


async def test_catalog_row_type_moves_as_text(db) -> None:
    # Built-in row types come from the generated type table without their
    # fields, so they cannot be decoded as records.
    value = await db.fetchval("SELECT t FROM pg_catalog.pg_namespace t WHERE nspname = 'ctest'")
    assert type(value) is str and value.startswith('(') and ',ctest,' in value


async def test_user_codec_applies_inside_composites_and_records(db) -> None:
    import json
    await db.set_type_codec('json', schema='pg_catalog', encoder=json.dumps, decoder=json.loads)
    value = await db.fetchval("SELECT ROW(1, '{\"k\": [1, 2]}')::ctest.doc")
    assert_record(value, ['id', 'body'], (1, {'k': [1, 2]}))
    text = await db.fetchval("SELECT $1::ctest.doc::text", (2, {'a': None}))
    assert text == '(2,"{""a"": null}")'
    assert await db.fetchval("SELECT ROW(3, '[true]'::json)") == (3, [True])


# --- named composites: encoding -------------------------------------------------------


@pytest.mark.parametrize("arg", [(1, 'x'), [1, 'x'], {'a': 1, 'b': 'x'}, {'b': 'x', 'a': 1}])
async def test_composite_argument_forms(db, arg: Any) -> None:
    value, text = await db.fetchrow("SELECT $1::ctest.pair, $1::ctest.pair::text", arg)
    assert_record(value, ['a', 'b'], (1, 'x'))
    assert text == '(1,x)'


async def test_record_as_composite_argument(db) -> None:
    record = await db.fetchval("SELECT ROW(4, 'r')::ctest.pair")
    assert await db.fetchval("SELECT $1::ctest.pair::text", record) == '(4,r)'
    row = await db.fetchrow("SELECT 5 AS a, 's' AS b")
    assert await db.fetchval("SELECT $1::ctest.pair::text", row) == '(5,s)'


async def test_mapping_argument_missing_fields_are_null(db) -> None:
    assert await db.fetchval("SELECT $1::ctest.pair::text", {'b': 'only'}) == '(,only)'
    assert await db.fetchval("SELECT $1::ctest.pair::text", {}) == '(,)'


async def test_nested_composite_argument_round_trip(db) -> None:
    arg = (1, (2, ['a', None]), [(3, 'p'), None], 'happy', 5, Decimal('-0.5'), Range(2, 9))
    value, text = await db.fetchrow("SELECT $1::ctest.outer_t, $1::ctest.outer_t::text", arg)
    assert value == arg
    assert text == '(1,"(2,""{a,NULL}"")","{""(3,p)"",NULL}",happy,5,-0.5,"[2,9)")'


async def test_composite_array_argument(db) -> None:
    arg = [(1, 'a'), None, (None, 'b')]
    value, text = await db.fetchrow("SELECT $1::ctest.pair[], $1::ctest.pair[]::text", arg)
    assert value == arg
    assert text == '{"(1,a)",NULL,"(,b)"}'
    value = await db.fetchval("SELECT $1::ctest.pair[]", [[(1, 'a')], [(2, 'b')]])
    assert value == [[(1, 'a')], [(2, 'b')]]


async def test_domain_field_is_checked_by_the_server(db) -> None:
    # The field goes out with the domain's OID, so the server applies its CHECK.
    arg = (1, None, None, None, 0, None, None)
    with pytest.raises(exceptions.CheckViolationError):
        await db.fetchval("SELECT $1::ctest.outer_t", arg)
    assert await db.fetchval("SELECT 1") == 1


async def test_too_many_fields_is_data_error_naming_argument_and_counts(db) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval("SELECT $1::ctest.pair", (1, 'x', 3))
    message = str(info.value)
    assert '$1' in message
    assert 'expected 2 fields, got 3' in message
    assert "(1, 'x', 3)" in message
    assert await db.fetchval("SELECT $1::ctest.pair::text", (1, 'x')) == '(1,x)'


async def test_too_few_fields_is_data_error(db) -> None:
    with pytest.raises(exceptions.DataError, match=r'\$2.*expected 2 fields, got 1'):
        await db.fetchval("SELECT $1::int4, $2::ctest.pair", 1, (1,))
    assert await db.fetchval("SELECT 2") == 2


async def test_wrong_field_type_names_the_field(db) -> None:
    with pytest.raises(exceptions.DataError, match=r"\$1.*field 'b' of composite type pair"):
        await db.fetchval("SELECT $1::ctest.pair", (1, 2))
    assert await db.fetchval("SELECT 3") == 3


async def test_unknown_mapping_key_is_data_error(db) -> None:
    with pytest.raises(exceptions.DataError, match=r"'c' is not a field of composite type pair"):
        await db.fetchval("SELECT $1::ctest.pair", {'a': 1, 'c': 2})


@pytest.mark.parametrize("arg", [5, 'ab', b'ab', {1, 2}])
async def test_non_sequence_composite_argument_is_data_error(db, arg: Any) -> None:
    with pytest.raises(exceptions.DataError,
                       match=r'\$1.*expected a tuple, list, Record or mapping'):
        await db.fetchval("SELECT $1::ctest.pair", arg)
    assert await db.fetchval("SELECT 4") == 4


async def test_changed_composite_type_is_introspected_again_for_a_plain_read(db) -> None:
    assert await db.fetchval("SELECT ROW(1, 'a')::ctest.pair") == (1, 'a')
    await db.execute("ALTER TYPE ctest.pair ADD ATTRIBUTE c int4")
    value = await db.fetchval("SELECT ROW(1, 'a', 2)::ctest.pair")
    assert_record(value, ['a', 'b', 'c'], (1, 'a', 2))


async def test_changed_composite_type_in_transaction_raises_outdated_schema_cache(db) -> None:
    assert await db.fetchval("SELECT ROW(1, 'a')::ctest.pair") == (1, 'a')
    await db.execute("ALTER TYPE ctest.pair ADD ATTRIBUTE c int4")
    async with db.transaction():
        with pytest.raises(exceptions.OutdatedSchemaCacheError,
                           match='attributes of composite type pair: 3, expected 2'):
            await db.fetchval("SELECT ROW(1, 'a', 2)::ctest.pair")
        # The error came from decoding: the transaction itself is fine.
        assert await db.fetchval("SELECT ROW(1, 'a', 2)::ctest.pair") == (1, 'a', 2)


# --- anonymous records ------------------------------------------------------------------


async def test_anonymous_record_is_record_named_like_postgres(db) -> None:
    value = await db.fetchval("SELECT ROW(1, 'a')")
    assert_record(value, ['f1', 'f2'], (1, 'a'))
    # Equal to the tuple asyncpg returns for the same query.
    assert value == (1, 'a') and hash(value) == hash((1, 'a'))


async def test_nested_anonymous_records_and_nulls(db) -> None:
    value = await db.fetchval("SELECT ROW(1, ROW(2, 'x', NULL), NULL, ARRAY[1, 2])")
    assert_record(value, ['f1', 'f2', 'f3', 'f4'], (1, (2, 'x', None), None, [1, 2]))
    assert_record(value['f2'], ['f1', 'f2', 'f3'], (2, 'x', None))


async def test_empty_anonymous_record(db) -> None:
    assert_record(await db.fetchval("SELECT ROW()"), [], ())


async def test_anonymous_record_holding_named_composite_and_range(db) -> None:
    await db.fetchval("SELECT NULL::ctest.pair")  # introspected once, then known
    value = await db.fetchval("SELECT ROW(ROW(1, 'a')::ctest.pair, '[1,3)'::int4range)")
    assert value == ((1, 'a'), Range(1, 3))
    assert_record(value[0], ['a', 'b'], (1, 'a'))


async def test_array_of_anonymous_records(db) -> None:
    value = await db.fetchval("SELECT ARRAY[ROW(1, 'a'), ROW(2, NULL)]")
    assert value == [(1, 'a'), (2, None)]
    assert_record(value[1], ['f1', 'f2'], (2, None))


async def test_derived_table_row_is_anonymous_record(db) -> None:
    rows = await db.fetch("SELECT r FROM (VALUES (1, 'a'), (2, 'b')) AS r(x, y) ORDER BY x")
    # A derived table's row has its own (anonymous) row type.
    assert [tuple(row[0]) for row in rows] == [(1, 'a'), (2, 'b')]


async def test_anonymous_record_field_of_unknown_type_is_clear_error(db) -> None:
    # The statement's only column is `record`, so the enum was never introspected.
    with pytest.raises(exceptions.UnsupportedClientFeatureError,
                       match=r'field 2 of an anonymous record: its type \(OID \d+\) is not known'):
        await db.fetchval("SELECT ROW(1, 'sad'::ctest.mood)")
    assert await db.fetchval("SELECT 6") == 6
    # Once the type is known, the same record decodes.
    assert await db.fetchval("SELECT 'happy'::ctest.mood") == 'happy'
    assert await db.fetchval("SELECT ROW(1, 'sad'::ctest.mood)") == (1, 'sad')


@pytest.mark.parametrize("query, arg", [("SELECT $1::record", (1, 2)),
                                        ("SELECT $1::record[]", [(1, 'a')])])
async def test_anonymous_record_argument_is_rejected(db, query: str, arg: Any) -> None:
    # asyncpg: UnsupportedClientFeatureError; ours is also the DataError of
    # every argument that cannot be encoded.
    with pytest.raises(exceptions.UnsupportedClientFeatureError,
                       match=r'^invalid input for query argument \$1: .*anonymous composite') as info:
        await db.fetchval(query, arg)
    assert type(info.value) is exceptions.UnsupportedArgumentError
    assert isinstance(info.value, exceptions.DataError)
    assert type(info.value.__cause__) is exceptions.UnsupportedClientFeatureError
    assert await db.fetchval("SELECT 7") == 7


# --- ranges -------------------------------------------------------------------------------

D = dt.date
T = dt.datetime

RANGE_CASES = [
    ("int4range", Range(1, 5), "[1,5)"),
    ("int4range", Range(-2 ** 31, 2 ** 31 - 1), "[-2147483648,2147483647)"),
    ("int4range", Range(None, 5), "(,5)"),
    ("int4range", Range(3, None), "[3,)"),
    ("int4range", Range(None, None), "(,)"),
    ("int4range", Range(empty=True), "empty"),
    ("int8range", Range(-2 ** 62, 2 ** 62), "[-4611686018427387904,4611686018427387904)"),
    ("int8range", Range(None, 0), "(,0)"),
    ("int8range", Range(empty=True), "empty"),
    ("numrange", Range(Decimal("1.5"), Decimal("2.250"), upper_inc=True), "[1.5,2.250]"),
    ("numrange", Range(Decimal("-1"), Decimal("1"), lower_inc=False), "(-1,1)"),
    ("numrange", Range(None, Decimal("0.001"), upper_inc=True), "(,0.001]"),
    ("numrange", Range(empty=True), "empty"),
    ("daterange", Range(D(2020, 1, 1), D(2020, 2, 1)), "[2020-01-01,2020-02-01)"),
    # date.min is -infinity (as in asyncpg), so the earliest real date is day 2.
    ("daterange", Range(D(1, 1, 2), None), "[0001-01-02,)"),
    ("daterange", Range(dt.date.min, dt.date.max), "[-infinity,infinity)"),
    ("daterange", Range(empty=True), "empty"),
    ("tsrange", Range(T(2020, 1, 1, 12, 30), T(2020, 1, 2), lower_inc=False),
     '("2020-01-01 12:30:00","2020-01-02 00:00:00")'),
    ("tsrange", Range(T(2020, 1, 1, 0, 0, 0, 1), T(2020, 1, 1, 0, 0, 0, 2), upper_inc=True),
     '["2020-01-01 00:00:00.000001","2020-01-01 00:00:00.000002"]'),
    ("tsrange", Range(None, None), "(,)"),
    ("tstzrange", Range(T(2020, 1, 1, tzinfo=UTC), T(2021, 6, 1, 8, tzinfo=UTC)),
     '["2020-01-01 00:00:00+00","2021-06-01 08:00:00+00")'),
    ("tstzrange", Range(None, T(2020, 1, 1, tzinfo=UTC), upper_inc=True),
     '(,"2020-01-01 00:00:00+00"]'),
    ("tstzrange", Range(empty=True), "empty"),
    ("ctest.floatrange", Range(1.5, 2.5), "[1.5,2.5)"),
    ("ctest.floatrange", Range(-0.25, None, lower_inc=False), "(-0.25,)"),
    ("ctest.floatrange", Range(empty=True), "empty"),
    ("ctest.small_range", Range(1, 2), "[1,2)"),
]


@pytest.mark.parametrize("typename, value, text", RANGE_CASES)
async def test_range_decodes_server_literal(db, typename: str, value: Range, text: str) -> None:
    got = await db.fetchval(f"SELECT '{text}'::{typename}")
    assert type(got) is Range
    assert got == value
    assert (got.lower_inc, got.upper_inc, got.isempty) == (
        value.lower_inc, value.upper_inc, value.isempty)
    if value.lower is not None:
        assert type(got.lower) is type(value.lower)


@pytest.mark.parametrize("typename, value, text", RANGE_CASES)
async def test_range_argument_round_trip(db, typename: str, value: Range, text: str) -> None:
    got, got_text = await db.fetchrow(f"SELECT $1::{typename}, $1::{typename}::text", value)
    assert got == value
    assert got_text == text


@pytest.mark.parametrize("arg, expected", [
    (Range(1, 5, upper_inc=True), Range(1, 6)),
    (Range(1, 5, lower_inc=False), Range(2, 5)),
    (Range(5, 5), Range(empty=True)),
    ((1, 5), Range(1, 6)),          # asyncpg's shorthand: both bounds inclusive
    ([1, 5], Range(1, 6)),
    ((1,), Range(1, None)),
    ((), Range(empty=True)),
    ((None, None), Range(None, None)),
    ((None, 3), Range(None, 4)),
])
async def test_discrete_range_arguments_are_canonicalised_by_the_server(
        db, arg: Any, expected: Range) -> None:
    assert await db.fetchval("SELECT $1::int4range", arg) == expected


async def test_range_from_another_libraries_range_type(db) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    arg = asyncpg.Range(1, 3, upper_inc=True)
    assert await db.fetchval("SELECT $1::int8range::text", arg) == "[1,4)"
    assert await db.fetchval("SELECT $1::int8range::text", asyncpg.Range(empty=True)) == "empty"


@pytest.mark.parametrize("arg, message", [
    ((1, 2, 3), "expected 0, 1 or 2 elements in range (got 3)"),
    (5, "list, tuple or Range object expected (got type int)"),
    ("[1,2)", "list, tuple or Range object expected (got type str)"),
    (("a", 2), "invalid input for type int4"),
])
async def test_bad_range_argument_is_data_error(db, arg: Any, message: str) -> None:
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval("SELECT $1::int4range", arg)
    assert str(info.value).startswith("invalid input for query argument $1: ")
    assert message in str(info.value)
    assert await db.fetchval("SELECT 8") == 8


async def test_range_of_a_text_only_subtype_moves_as_text(db) -> None:
    # money has no binary codec, so neither has the range: its values are
    # str both ways (asyncpg refuses the type altogether).
    assert await db.fetchval("SELECT '[1,2)'::ctest.moneyrange") == '[$1.00,$2.00)'
    assert await db.fetchval("SELECT $1::ctest.moneyrange", '[1,3)') == '[$1.00,$3.00)'


@pytest.mark.parametrize("arg", [Range('1', '2'), ('1', '2')])
async def test_range_object_for_a_text_only_range_is_unsupported(db, arg: Any) -> None:
    with pytest.raises(exceptions.UnsupportedClientFeatureError,
                       match=r'^invalid input for query argument \$1: .*cannot be sent as range '
                             r'type moneyrange') as info:
        await db.fetchval("SELECT $1::ctest.moneyrange", arg)
    assert type(info.value) is exceptions.UnsupportedArgumentError
    assert isinstance(info.value, exceptions.DataError)
    assert await db.fetchval("SELECT 8") == 8


async def test_range_arrays(db) -> None:
    value = await db.fetchval("SELECT ARRAY['[1,2)'::int4range, 'empty', NULL, '(,)']")
    assert value == [Range(1, 2), Range(empty=True), None, Range(None, None)]
    arg = [Range(1, 3), None, Range(empty=True), Range(None, 7)]
    got, text = await db.fetchrow("SELECT $1::int4range[], $1::int4range[]::text", arg)
    assert got == arg
    assert text == '{"[1,3)",NULL,empty,"(,7)"}'
    arg = [[Range(1.0, 2.0)], [Range(empty=True)]]
    got = await db.fetchval("SELECT $1::ctest.floatrange[]", arg)
    assert got == [[Range(1.0, 2.0)], [Range(empty=True)]]


async def test_range_array_accepts_tuple_elements_like_asyncpg(db) -> None:
    assert await db.fetchval("SELECT $1::int4range[]", [(1, 5)]) == [Range(1, 6)]


# --- multiranges --------------------------------------------------------------------------

MULTIRANGE_CASES = [
    ("int4multirange", [Range(1, 3), Range(5, 7)], "{[1,3),[5,7)}"),
    ("int4multirange", [], "{}"),
    ("int4multirange", [Range(None, None)], "{(,)}"),
    ("int8multirange", [Range(None, 0), Range(2 ** 40, None)], "{(,0),[1099511627776,)}"),
    ("nummultirange", [Range(Decimal("1.5"), Decimal("2.5"), upper_inc=True)], "{[1.5,2.5]}"),
    ("datemultirange", [Range(D(2020, 1, 1), D(2020, 1, 5)), Range(D(2021, 1, 1), None)],
     "{[2020-01-01,2020-01-05),[2021-01-01,)}"),
    ("tsmultirange", [Range(T(2020, 1, 1), T(2020, 1, 2))],
     '{["2020-01-01 00:00:00","2020-01-02 00:00:00")}'),
    ("tstzmultirange", [Range(T(2020, 1, 1, tzinfo=UTC), None)], '{["2020-01-01 00:00:00+00",)}'),
    ("ctest.floatmultirange", [Range(0.5, 1.0), Range(2.0, 3.0, upper_inc=True)],
     "{[0.5,1),[2,3]}"),
]


@pytest.mark.parametrize("typename, value, text", MULTIRANGE_CASES)
async def test_multirange_decodes_server_literal(db, server_version: int, typename: str,
                                                  value: list, text: str) -> None:
    if server_version < 140000:
        pytest.skip("multiranges need PostgreSQL 14")
    got = await db.fetchval(f"SELECT '{text}'::{typename}")
    assert type(got) is list
    assert got == value


@pytest.mark.parametrize("typename, value, text", MULTIRANGE_CASES)
async def test_multirange_argument_round_trip(db, server_version: int, typename: str,
                                               value: list, text: str) -> None:
    if server_version < 140000:
        pytest.skip("multiranges need PostgreSQL 14")
    got, got_text = await db.fetchrow(f"SELECT $1::{typename}, $1::{typename}::text", value)
    assert got == value
    assert got_text == text


async def test_multirange_argument_forms(db, server_version: int) -> None:
    if server_version < 140000:
        pytest.skip("multiranges need PostgreSQL 14")
    # Overlapping ranges are merged by the server; tuples use the range shorthand.
    got = await db.fetchval("SELECT $1::int4multirange", ((1, 3), Range(3, 6), ()))
    assert got == [Range(1, 6)]
    got = await db.fetchval("SELECT ARRAY['{[1,2)}'::int4multirange, '{}', NULL]")
    assert got == [[Range(1, 2)], [], None]


@pytest.mark.parametrize("arg, message", [
    ("{[1,2)}", "a sequence of ranges is required for a multirange (got type str)"),
    (5, "a sequence of ranges is required for a multirange (got type int)"),
    ([Range(1, 2), None], "range 2 is None"),
    ([5], "list, tuple or Range object expected (got type int)"),
])
async def test_bad_multirange_argument_is_data_error(db, server_version: int, arg: Any,
                                                     message: str) -> None:
    if server_version < 140000:
        pytest.skip("multiranges need PostgreSQL 14")
    with pytest.raises(exceptions.DataError, match=r'^invalid input for query argument \$1: '):
        await db.fetchval("SELECT $1::int4multirange", arg)
    with pytest.raises(exceptions.DataError) as info:
        await db.fetchval("SELECT $1::int4multirange", arg)
    assert message in str(info.value)
    assert await db.fetchval("SELECT 9") == 9


# --- property tests: discrete ranges ---------------------------------------------------------


def canonical_discrete(lower, upper, lower_inc: bool, upper_inc: bool, empty: bool, step):
    """The range PostgreSQL stores for these bounds: [lower, upper), or empty."""
    if empty:
        return Range(empty=True)
    if lower is not None and not lower_inc:
        lower = lower + step
    if upper is not None and upper_inc:
        upper = upper + step
    if lower is not None and upper is not None and lower >= upper:
        return Range(empty=True)
    return Range(lower, upper)


def range_text(value: Range) -> str:
    if value.isempty:
        return "empty"
    if value.lower is None:
        lower = "("
    else:
        lower = f"[{value.lower}"
    upper = "" if value.upper is None else str(value.upper)
    return f"{lower},{upper})"


def discrete_ranges(bounds: st.SearchStrategy) -> st.SearchStrategy:
    """(Range argument, canonical Range) pairs; bounds may be unbounded."""
    @st.composite
    def build(draw):
        empty = draw(st.integers(0, 9)) == 0
        lower = draw(st.none() | bounds)
        upper = draw(st.none() | bounds)
        if lower is not None and upper is not None and lower > upper:
            lower, upper = upper, lower
        lower_inc, upper_inc = draw(st.booleans()), draw(st.booleans())
        arg = Range(lower, upper, lower_inc=lower_inc, upper_inc=upper_inc, empty=empty)
        return arg, (lower, upper, arg.lower_inc, arg.upper_inc, empty)
    return build()


@PROPERTY_SETTINGS
@given(case=discrete_ranges(st.integers(-2 ** 31 + 1, 2 ** 31 - 2)))
async def test_property_int4range_round_trip(db, case) -> None:
    arg, bounds = case
    expected = canonical_discrete(*bounds, step=1)
    got, text = await db.fetchrow("SELECT $1::int4range, $1::int4range::text", arg)
    assert got == expected
    assert text == range_text(expected)
    assert await db.fetchval("SELECT $1::text::int4range", text) == expected


@PROPERTY_SETTINGS
@given(case=discrete_ranges(st.integers(-2 ** 63 + 1, 2 ** 63 - 2)))
async def test_property_int8range_round_trip(db, case) -> None:
    arg, bounds = case
    expected = canonical_discrete(*bounds, step=1)
    got, text = await db.fetchrow("SELECT $1::int8range, $1::int8range::text", arg)
    assert got == expected
    assert text == range_text(expected)
    assert await db.fetchval("SELECT $1::text::int8range", text) == expected


@PROPERTY_SETTINGS
@given(case=discrete_ranges(st.dates(min_value=D(1, 1, 2), max_value=D(9999, 12, 30))))
async def test_property_daterange_round_trip(db, case) -> None:
    arg, bounds = case
    expected = canonical_discrete(*bounds, step=dt.timedelta(days=1))
    got, text = await db.fetchrow("SELECT $1::daterange, $1::daterange::text", arg)
    assert got == expected
    assert text == range_text(expected)
    assert await db.fetchval("SELECT $1::text::daterange", text) == expected


@PROPERTY_SETTINGS
@given(ranges=st.lists(discrete_ranges(st.integers(-1000, 1000)), max_size=6))
async def test_property_int4multirange_matches_server_union(db, server_version: int,
                                                            ranges) -> None:
    if server_version < 140000:
        pytest.skip("multiranges need PostgreSQL 14")
    args = [arg for arg, _ in ranges]
    got, text = await db.fetchrow("SELECT $1::int4multirange, $1::int4multirange::text", args)
    # The server's own union of the same ranges, parsed from text.
    texts = [range_text(canonical_discrete(*bounds, step=1)) for _, bounds in ranges]
    expected_text = await db.fetchval(
        "SELECT range_agg(r)::text FROM unnest($1::text[]::int4range[]) AS r", texts)
    assert text == (expected_text or "{}")
    assert got == await db.fetchval("SELECT $1::text::int4multirange", text)


# --- compared with asyncpg ---------------------------------------------------------------


def normalise(value: Any) -> Any:
    """asyncpg's and our values in one comparable form."""
    if isinstance(value, (list, tuple)) or type(value).__name__ == 'Record':
        return tuple(normalise(v) for v in value)
    if hasattr(value, 'isempty') and hasattr(value, 'lower_inc'):
        return ('range', normalise(value.lower), normalise(value.upper),
                value.lower_inc, value.upper_inc, value.isempty)
    return (type(value).__name__, value)


ASYNCPG_QUERIES = [
    ("SELECT ROW(1, 'a')::ctest.pair", ()),
    ("SELECT ROW(NULL, NULL)::ctest.pair", ()),
    ("SELECT ROW(1, ROW(2, ARRAY['a', NULL])::ctest.inner_t, ARRAY[ROW(3, 'p')::ctest.pair, NULL],"
     " 'sad', 5, 1.50, '[1,4)')::ctest.outer_t", ()),
    ("SELECT t FROM ctest.items t ORDER BY id", ()),
    ("SELECT ARRAY[ROW(1, 'a')::ctest.pair, NULL]", ()),
    ("SELECT ROW(1, 'a')", ()),
    ("SELECT ROW(1, ROW(2.5::float8, NULL), 'x'::text)", ()),
    ("SELECT ARRAY[ROW(1, 'a'), ROW(2, 'b')]", ()),
    ("SELECT $1::ctest.pair", ((1, 'x'),)),
    ("SELECT $1::ctest.pair", ({'b': 'y'},)),
    ("SELECT $1::ctest.pair_d", ((2, None),)),
    ("SELECT $1::ctest.pair[]", ([(1, 'x'), None],)),
    ("SELECT '[1,5)'::int4range, 'empty'::int8range, '(,)'::numrange, '[1.5,2]'::numrange", ()),
    ("SELECT '[2020-01-01,2020-02-01)'::daterange, '(\"2020-01-01\",)'::tsrange", ()),
    ("SELECT '[\"2020-01-01 00:00+00\",\"2020-01-02 00:00+00\")'::tstzrange", ()),
    ("SELECT '[1.5,2.5)'::ctest.floatrange, 'empty'::ctest.floatrange", ()),
    ("SELECT '{[1,3),[5,7)}'::int4multirange, '{}'::int8multirange", ()),
    ("SELECT '{[1.5,2.5]}'::nummultirange, '{[2020-01-01,2020-01-05)}'::datemultirange", ()),
    ("SELECT ARRAY['[1,2)'::int4range, 'empty', NULL]", ()),
    ("SELECT $1::int4range", ((1, 5),)),
    ("SELECT $1::int4range", ((1,),)),
    ("SELECT $1::int4range", ((),)),
    ("SELECT $1::int4multirange", ([(1, 3), (5, 7)],)),
]


async def test_same_values_as_asyncpg(db, connect_kwargs, server_version: int) -> None:
    asyncpg = pytest.importorskip("asyncpg")
    other = await asyncpg.connect(**connect_kwargs)
    try:
        for query, args in ASYNCPG_QUERIES:
            if 'multirange' in query and server_version < 140000:
                continue
            ours = await db.fetch(query, *args)
            theirs = await other.fetch(query, *args)
            assert normalise(ours) == normalise(theirs), query
    finally:
        await other.close()

"""Scalar codecs for uuid, json, network, bit, geometry and the system types,
and the value types of mypgdriver.types.

Every value goes through the server three ways: as an argument that comes
back as a result (`SELECT $1::T`), as an argument the server renders as text
(`SELECT $1::T::text`), and as a literal the server parses (`SELECT 'lit'::T`).
Expected results were checked against asyncpg 0.32, and the tests at the end
compare with asyncpg directly when it is installed.
"""
from __future__ import annotations

import ipaddress
import pickle
import uuid
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
)
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mypgdriver.types import (
    BitString,
    Box,
    Circle,
    Line,
    LineSegment,
    Path,
    Point,
    Polygon,
    Range,
    ServerVersion,
)

U = uuid.UUID('12345678-1234-5678-9abc-def012345678')
MAX_UINT64 = 2 ** 64 - 1


class Case(NamedTuple):
    pgtype: str         # what $1 is cast to
    arg: Any            # the argument sent
    value: Any          # the result expected back (exact value and type)
    text: str           # the server's text rendering of it


CASES: dict[str, Case] = {
    # uuid
    'uuid': Case('uuid', U, U, str(U)),
    'uuid-nil': Case('uuid', uuid.UUID(int=0), uuid.UUID(int=0),
                     '00000000-0000-0000-0000-000000000000'),
    'uuid-max': Case('uuid', uuid.UUID(int=2 ** 128 - 1), uuid.UUID(int=2 ** 128 - 1),
                     'ffffffff-ffff-ffff-ffff-ffffffffffff'),
    'uuid-from-str': Case('uuid', str(U), U, str(U)),
    'uuid-from-braced-upper-str': Case('uuid', '{' + U.hex.upper() + '}', U, str(U)),
    # json family: json keeps the text as sent, jsonb normalises it
    'json': Case('json', '{"b": [1, 2.50, null],  "a": {}}', '{"b": [1, 2.50, null],  "a": {}}',
                 '{"b": [1, 2.50, null],  "a": {}}'),
    'json-unicode': Case('json', '"żółć 😀"', '"żółć 😀"', '"żółć 😀"'),
    'jsonb': Case('jsonb', '{"b":1, "a":"x"}', '{"a": "x", "b": 1}', '{"a": "x", "b": 1}'),
    'jsonb-unicode': Case('jsonb', '{"k": "żółć 😀 \\u00e9"}', '{"k": "żółć 😀 é"}',
                          '{"k": "żółć 😀 é"}'),
    'jsonb-scalar': Case('jsonb', '1.50', '1.50', '1.50'),
    'jsonpath': Case('jsonpath', '$.a[*] ? (@ > 1)', '$."a"[*]?(@ > 1)', '$."a"[*]?(@ > 1)'),
    'xml': Case('xml', '<a b="1">żółć</a>', '<a b="1">żółć</a>', '<a b="1">żółć</a>'),
    # inet: a host (full-length prefix) is an address, otherwise an interface
    'inet-v4-host': Case('inet', IPv4Address('192.168.0.1'), IPv4Address('192.168.0.1'),
                         '192.168.0.1/32'),
    'inet-v4-prefix': Case('inet', IPv4Interface('192.168.0.1/24'),
                           IPv4Interface('192.168.0.1/24'), '192.168.0.1/24'),
    'inet-v6-host': Case('inet', IPv6Address('2001:db8::1'), IPv6Address('2001:db8::1'),
                         '2001:db8::1/128'),
    'inet-v6-prefix': Case('inet', IPv6Interface('2001:db8::1/64'),
                           IPv6Interface('2001:db8::1/64'), '2001:db8::1/64'),
    'inet-v6-zero-prefix': Case('inet', IPv6Interface('::1/0'), IPv6Interface('::1/0'), '::1/0'),
    'inet-v4-mapped-v6': Case('inet', IPv6Address('::ffff:1.2.3.4'),
                              IPv6Address('::ffff:1.2.3.4'), '::ffff:1.2.3.4/128'),
    'inet-from-str': Case('inet', '10.1.2.3/8', IPv4Interface('10.1.2.3/8'), '10.1.2.3/8'),
    'inet-from-str-host': Case('inet', 'fe80::1', IPv6Address('fe80::1'), 'fe80::1/128'),
    'inet-from-network': Case('inet', IPv4Network('10.0.0.0/8'), IPv4Interface('10.0.0.0/8'),
                              '10.0.0.0/8'),
    # cidr
    'cidr-v4': Case('cidr', IPv4Network('10.0.0.0/8'), IPv4Network('10.0.0.0/8'), '10.0.0.0/8'),
    'cidr-v4-host': Case('cidr', IPv4Network('1.2.3.4/32'), IPv4Network('1.2.3.4/32'),
                         '1.2.3.4/32'),
    'cidr-v6': Case('cidr', IPv6Network('2001:db8::/32'), IPv6Network('2001:db8::/32'),
                    '2001:db8::/32'),
    'cidr-v6-all': Case('cidr', IPv6Network('::/0'), IPv6Network('::/0'), '::/0'),
    'cidr-from-str': Case('cidr', '192.168.0.0/16', IPv4Network('192.168.0.0/16'),
                          '192.168.0.0/16'),
    'cidr-from-address': Case('cidr', IPv4Address('1.2.3.4'), IPv4Network('1.2.3.4/32'),
                              '1.2.3.4/32'),
    # mac addresses travel as text; the server normalises the spelling
    'macaddr': Case('macaddr', '08:00:2b:01:02:03', '08:00:2b:01:02:03', '08:00:2b:01:02:03'),
    'macaddr-other-spelling': Case('macaddr', '0800.2B01.0203', '08:00:2b:01:02:03',
                                   '08:00:2b:01:02:03'),
    'macaddr8': Case('macaddr8', '08:00:2b:01:02:03:04:05', '08:00:2b:01:02:03:04:05',
                     '08:00:2b:01:02:03:04:05'),
    'macaddr8-from-6-bytes': Case('macaddr8', '08:00:2b:01:02:03', '08:00:2b:ff:fe:01:02:03',
                                  '08:00:2b:ff:fe:01:02:03'),
    # bit strings, including lengths that do not fill the last byte
    'varbit-empty': Case('varbit', BitString(''), BitString(''), ''),
    'varbit-1': Case('varbit', BitString('1'), BitString('1'), '1'),
    'varbit-3': Case('varbit', BitString('101'), BitString('101'), '101'),
    'varbit-8': Case('varbit', BitString('10100101'), BitString('10100101'), '10100101'),
    'varbit-9': Case('varbit', BitString('101001011'), BitString('101001011'), '101001011'),
    'varbit-17': Case('varbit', BitString('1' * 17), BitString('1' * 17), '1' * 17),
    'varbit-from-bytes': Case('varbit', b'\xa5\x01', BitString('1010010100000001'),
                              '1010010100000001'),
    'bit-5': Case('bit(5)', BitString('10011'), BitString('10011'), '10011'),
    'bit-from-int': Case('bit(12)', BitString.from_int(0xABC, 12), BitString('101010111100'),
                         '101010111100'),
    # geometry
    'point': Case('point', Point(1.5, -2), Point(1.5, -2.0), '(1.5,-2)'),
    'point-from-tuple': Case('point', (1, 2), Point(1.0, 2.0), '(1,2)'),
    'point-extremes': Case('point', Point(1e300, -1e-300), Point(1e300, -1e-300),
                           '(1e+300,-1e-300)'),
    'line': Case('line', Line(1, -1, 0.5), Line(1.0, -1.0, 0.5), '{1,-1,0.5}'),
    'lseg': Case('lseg', LineSegment((0, 0), (1, 2)), LineSegment((0, 0), (1, 2)),
                 '[(0,0),(1,2)]'),
    'box': Case('box', Box((2, 3), (0, 1)), Box((2, 3), (0, 1)), '(2,3),(0,1)'),
    'box-normalised': Case('box', Box((0, 3), (2, 1)), Box((2, 3), (0, 1)), '(2,3),(0,1)'),
    'path-open': Case('path', Path((0, 0), (1, 1), (2, 0)), Path((0, 0), (1, 1), (2, 0)),
                      '[(0,0),(1,1),(2,0)]'),
    'path-closed': Case('path', Path((0, 0), (1, 1), is_closed=True),
                        Path((0, 0), (1, 1), is_closed=True), '((0,0),(1,1))'),
    'path-one-point': Case('path', Path((5, 5)), Path((5, 5)), '[(5,5)]'),
    'path-from-tuple-is-closed': Case('path', ((0, 0), (1, 2)), Path((0, 0), (1, 2), is_closed=True),
                                      '((0,0),(1,2))'),
    'path-from-list-is-open': Case('path', [(0, 0), (1, 2)], Path((0, 0), (1, 2)),
                                   '[(0,0),(1,2)]'),
    'polygon': Case('polygon', Polygon((0, 0), (1, 1), (1, 0)), Polygon((0, 0), (1, 1), (1, 0)),
                    '((0,0),(1,1),(1,0))'),
    'polygon-from-list': Case('polygon', [(0, 0), (0.5, 1)], Polygon((0, 0), (0.5, 1)),
                              '((0,0),(0.5,1))'),
    'circle': Case('circle', Circle((1, 2), 3), Circle(Point(1, 2), 3.0), '<(1,2),3>'),
    'circle-from-tuple': Case('circle', ((0, -1.5), 0.25), Circle((0, -1.5), 0.25),
                              '<(0,-1.5),0.25>'),
    # money is text; lc_monetary is set to C by the tests
    'money': Case('money', '12.34', '$12.34', '$12.34'),
    'money-negative': Case('money', '-1000.5', '-$1,000.50', '-$1,000.50'),
    # system types
    'tid': Case('tid', (0, 1), (0, 1), '(0,1)'),
    'tid-max': Case('tid', [4294967295, 65535], (4294967295, 65535), '(4294967295,65535)'),
    'xid': Case('xid', 4294967295, 4294967295, '4294967295'),
    'xid-zero': Case('xid', 0, 0, '0'),
    'cid': Case('cid', 7, 7, '7'),
    'xid8': Case('xid8', 123, 123, '123'),
    'xid8-max': Case('xid8', MAX_UINT64, MAX_UINT64, '18446744073709551615'),
    'pg_lsn': Case('pg_lsn', 0x16B3748, 0x16B3748, '0/16B3748'),
    'pg_lsn-zero': Case('pg_lsn', 0, 0, '0/0'),
    'pg_lsn-max': Case('pg_lsn', MAX_UINT64, MAX_UINT64, 'FFFFFFFF/FFFFFFFF'),
    'pg_lsn-from-str': Case('pg_lsn', '16/B374D848', 0x16B374D848, '16/B374D848'),
    'txid_snapshot': Case('txid_snapshot', (10, 20, (10, 14, 15)), (10, 20, (10, 14, 15)),
                          '10:20:10,14,15'),
    'txid_snapshot-no-xip': Case('txid_snapshot', (5, 5, ()), (5, 5, ()), '5:5:'),
    'txid_snapshot-from-list': Case('txid_snapshot', [10, 20, [12]], (10, 20, (12,)),
                                    '10:20:12'),
    # 64-bit ids (epoch 256); the server wants the low 32 bits of xmin/xmax non-zero.
    'pg_snapshot': Case('pg_snapshot', (3, 2 ** 40 + 5, [3, 2 ** 40 + 1]),
                        (3, 2 ** 40 + 5, (3, 2 ** 40 + 1)), f'3:{2 ** 40 + 5}:3,{2 ** 40 + 1}'),
    # reg* types are names, as text
    'regclass': Case('regclass', 'pg_class', 'pg_class', 'pg_class'),
    'regclass-qualified': Case('regclass', 'pg_catalog.pg_type', 'pg_type', 'pg_type'),
    'regtype': Case('regtype', 'int4', 'integer', 'integer'),
    'regproc': Case('regproc', 'now', 'now', 'now'),
    'regprocedure': Case('regprocedure', 'sum(int4)', 'sum(integer)', 'sum(integer)'),
    'regoper': Case('regoper', '||/', '||/', '||/'),
    'regoperator': Case('regoperator', '+(int4,int4)', '+(integer,integer)', '+(integer,integer)'),
    'regconfig': Case('regconfig', 'english', 'english', 'english'),
    'regdictionary': Case('regdictionary', 'simple', 'simple', 'simple'),
    'regnamespace': Case('regnamespace', 'pg_catalog', 'pg_catalog', 'pg_catalog'),
    'regrole': Case('regrole', 'pg_monitor', 'pg_monitor', 'pg_monitor'),
    'regcollation': Case('regcollation', '"C"', '"C"', '"C"'),
    'refcursor': Case('refcursor', 'my cursor', 'my cursor', 'my cursor'),
    # text search
    'tsvector': Case('tsvector', 'b a a:3', "'a':3 'b'", "'a':3 'b'"),
    'tsquery': Case('tsquery', 'a & !(b | c)', "'a' & !( 'b' | 'c' )", "'a' & !( 'b' | 'c' )"),
}


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@pytest.fixture
async def tconn(conn):
    """`conn` with the locale-dependent money rendering pinned."""
    await conn.execute("SET lc_monetary = 'C'")
    return conn


@pytest.mark.parametrize('case', CASES.values(), ids=CASES.keys())
async def test_value_round_trips_as_argument_and_result(tconn, case: Case) -> None:
    result = await tconn.fetchval(f'SELECT $1::{case.pgtype}', case.arg)
    assert result == case.value
    assert type(result) is type(case.value)


@pytest.mark.parametrize('case', CASES.values(), ids=CASES.keys())
async def test_argument_is_rendered_by_the_server_as_expected(tconn, case: Case) -> None:
    assert await tconn.fetchval(f'SELECT $1::{case.pgtype}::text', case.arg) == case.text


@pytest.mark.parametrize('case', CASES.values(), ids=CASES.keys())
async def test_server_literal_decodes_to_the_expected_value(tconn, case: Case) -> None:
    result = await tconn.fetchval(f'SELECT {sql_literal(case.text)}::{case.pgtype}')
    assert result == case.value
    assert type(result) is type(case.value)


async def test_values_survive_a_table_round_trip(tconn) -> None:
    cases = [CASES[k] for k in ('uuid', 'jsonb-unicode', 'inet-v6-prefix', 'cidr-v6',
                                'varbit-9', 'path-closed', 'polygon', 'circle', 'tid-max',
                                'xid8-max', 'money')]
    columns = ', '.join(f'c{i} {c.pgtype}' for i, c in enumerate(cases))
    await tconn.execute(f'CREATE TEMP TABLE codec_types ({columns})')
    placeholders = ', '.join(f'${i + 1}' for i in range(len(cases)))
    await tconn.execute(f'INSERT INTO codec_types VALUES ({placeholders})',
                        *[c.arg for c in cases])
    await tconn.execute(f'INSERT INTO codec_types VALUES ({", ".join(["NULL"] * len(cases))})')
    rows = await tconn.fetch('SELECT * FROM codec_types')
    assert list(rows[0].values()) == [c.value for c in cases]
    assert list(rows[1].values()) == [None] * len(cases)


async def test_uuid_result_is_a_plain_uuid(conn) -> None:
    u = await conn.fetchval("SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid")
    assert type(u) is uuid.UUID
    assert u.is_safe is uuid.SafeUUID.unknown
    assert u.version == 4
    assert hash(u) == hash(uuid.UUID('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'))
    assert pickle.loads(pickle.dumps(u)) == u
    with pytest.raises(TypeError):
        u.int = 5


async def test_uuid_column_of_many_rows(conn) -> None:
    rows = await conn.fetch(
        "SELECT md5(i::text)::uuid AS u, md5(i::text) AS h FROM generate_series(1, 2000) i")
    assert [r['u'] for r in rows] == [uuid.UUID(r['h']) for r in rows]


_db_settings = settings(max_examples=150, deadline=None,
                        suppress_health_check=[HealthCheck.function_scoped_fixture])


@_db_settings
@given(u=st.uuids())
async def test_uuid_property_round_trip(conn, u: uuid.UUID) -> None:
    row = await conn.fetchrow('SELECT $1::uuid, $1::uuid::text, $2::text::uuid', u, str(u))
    assert tuple(row) == (u, str(u), u)


@_db_settings
@given(bits=st.text(alphabet='01', max_size=80))
async def test_bit_string_property_round_trip(conn, bits: str) -> None:
    value = BitString(bits)
    row = await conn.fetchrow('SELECT $1::varbit, $1::varbit::text, $2::text::varbit',
                              value, bits)
    assert tuple(row) == (value, bits, value)
    assert row[0].as_string().replace(' ', '') == bits


@_db_settings
@given(address=st.ip_addresses(), data=st.data())
async def test_inet_property_round_trip(conn, address, data) -> None:
    prefix = data.draw(st.integers(0, address.max_prefixlen))
    value = ipaddress.ip_interface((address, prefix))
    expected = address if prefix == address.max_prefixlen else value
    row = await conn.fetchrow('SELECT $1::inet, $1::inet::text', value)
    assert row[0] == expected and type(row[0]) is type(expected)
    # Python and PostgreSQL spell some IPv6 addresses differently ('::ffff:0:0').
    assert ipaddress.ip_interface(row[1]) == value and row[1].endswith(f'/{prefix}')


# --- bad input -----------------------------------------------------------------

BAD_INPUT = {
    'uuid-garbage-str': ('uuid', 'not-a-uuid', 'invalid UUID'),
    'uuid-too-long-str': ('uuid', U.hex + '0', 'invalid UUID'),
    'uuid-non-ascii-str': ('uuid', U.hex[:-1] + 'é', 'invalid UUID'),
    'uuid-int': ('uuid', 5, 'expected uuid.UUID or str, got int'),
    'uuid-bytes': ('uuid', U.bytes, 'expected uuid.UUID or str, got bytes'),
    'json-dict': ('json', {'a': 1}, 'expected str, got dict'),
    'jsonb-bytes': ('jsonb', b'{}', 'expected str, got bytes'),
    'jsonb-nul': ('jsonb', '"a\x00"', 'NUL'),
    'jsonpath-int': ('jsonpath', 1, 'expected str, got int'),
    'xml-bytes': ('xml', b'<a/>', 'expected str, got bytes'),
    'inet-garbage': ('inet', '10.0.0.300', 'does not appear to be an IPv4 or IPv6 interface'),
    'inet-float': ('inet', 1.5, 'got float'),
    'cidr-host-bits': ('cidr', '10.0.0.1/8', 'has host bits set'),
    'cidr-interface-host-bits': ('cidr', IPv4Interface('10.0.0.1/8'), 'has host bits set'),
    'cidr-list': ('cidr', ['10.0.0.0/8'], 'got list'),
    'macaddr-bytes': ('macaddr', b'\x08\x00\x2b\x01\x02\x03', 'expected str, got bytes'),
    'varbit-str': ('varbit', '101', 'expected BitString or bytes, got str'),
    'varbit-int': ('varbit', 5, 'expected BitString or bytes, got int'),
    'point-three-numbers': ('point', (1, 2, 3), 'expected a point (x, y)'),
    'point-str-coordinate': ('point', ('a', 1), 'a coordinate must be a number, got str'),
    'point-none-coordinate': ('point', (None, 1), 'a coordinate must be a number, got NoneType'),
    'line-two-numbers': ('line', (1, 2), 'expected a line (A, B, C)'),
    'lseg-one-point': ('lseg', ((1, 2),), 'expected a lseg of two points'),
    'box-bad-corner': ('box', ((1, 2), 3), 'expected a point (x, y)'),
    'path-empty': ('path', Path(), 'a path needs at least one point'),
    'path-empty-list': ('path', [], 'a path needs at least one point'),
    'path-str': ('path', '[(0,0)]', 'expected Path, tuple (closed) or list (open) of points'),
    'polygon-empty': ('polygon', (), 'a polygon needs at least one point'),
    'polygon-bad-point': ('polygon', [(0, 0), (1,)], 'expected a point (x, y)'),
    'circle-no-radius': ('circle', ((1, 2),), 'expected a circle (center, radius)'),
    'money-number': ('money', 12.5, 'expected str, got float'),
    'tid-one-number': ('tid', (1,), 'expected a (block, offset) tuple'),
    'tid-negative-block': ('tid', (-1, 0), 'block number -1 is out of range'),
    'tid-offset-too-big': ('tid', (0, 65536), 'offset 65536 is out of range'),
    'tid-str': ('tid', '(0,1)', 'expected a (block, offset) tuple'),
    'xid-negative': ('xid', -1, 'xid -1 is out of range'),
    'xid-too-big': ('xid', 2 ** 32, 'xid 4294967296 is out of range'),
    'xid-float': ('xid', 1.5, 'xid must be an integer, got float'),
    'cid-bool': ('cid', True, 'cid must be an integer, got bool'),
    'xid8-too-big': ('xid8', 2 ** 64, 'xid8 18446744073709551616 is out of range'),
    'pg_lsn-bad-str': ('pg_lsn', '0/XYZ', "expected an int or 'X/Y' hex text"),
    'pg_lsn-negative': ('pg_lsn', -1, 'pg_lsn -1 is out of range'),
    'txid_snapshot-two-items': ('txid_snapshot', (1, 2), 'expected a (xmin, xmax, [xip, ...]) tuple'),
    'txid_snapshot-bad-xip': ('txid_snapshot', (1, 5, [2, -3]), 'xip -3 is out of range'),
    'txid_snapshot-xip-not-a-list': ('txid_snapshot', (1, 5, 3), 'must be a sequence of ints'),
    'regclass-oid-number': ('regclass', 1259, 'expected str, got int'),
    'tsvector-list': ('tsvector', ['a'], 'expected str, got list'),
}


@pytest.mark.parametrize('pgtype, value, reason', BAD_INPUT.values(), ids=BAD_INPUT.keys())
async def test_bad_argument_raises_data_error_naming_it(conn, pgtype, value, reason) -> None:
    import mypgdriver

    with pytest.raises(mypgdriver.DataError) as info:
        await conn.fetchval(f'SELECT 1, $1::{pgtype}', value)
    message = str(info.value)
    assert 'query argument $1' in message
    assert reason in message
    assert await conn.fetchval('SELECT 2') == 2


# --- str subclasses (SQLAlchemy passes them, e.g. for money and tsvector) ---------------


class Text(str):
    """A str subclass whose __str__ lies: the encoder must send the string's own value."""

    def __str__(self) -> str:
        return 'not the value'


STR_SUBCLASS_CASES = [
    ('money', '1.5', '$1.50'),
    ('money[]', ['1.5', None], '{$1.50,NULL}'),
    ('tsvector', 'b a', "'a' 'b'"),
    ('tsvector[]', ['a'], "{'a'}"),
    ('tsquery', 'a & b', "'a' & 'b'"),
    ('regclass', 'pg_class', 'pg_class'),
    ('text', 'x', 'x'),
    ('varchar[]', ['x'], '{x}'),
    ('jsonb', '{"a": 1}', '{"a": 1}'),
    ('xml', '<a/>', '<a/>'),
    ('uuid', '00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000001'),
    ('numeric', '1.50', '1.50'),
    ('macaddr', '08:00:2b:01:02:03', '08:00:2b:01:02:03'),
]


def _as_subclass(value: Any) -> Any:
    if isinstance(value, list):
        return [_as_subclass(v) for v in value]
    return None if value is None else Text(value)


@pytest.mark.parametrize('pgtype, value, text', STR_SUBCLASS_CASES,
                         ids=[case[0] for case in STR_SUBCLASS_CASES])
async def test_str_subclass_argument_is_sent_as_its_text(tconn, pgtype, value, text) -> None:
    query = f'SELECT $1::{pgtype}::text'
    assert await tconn.fetchval(query, _as_subclass(value)) == text
    assert await tconn.fetchval(query, value) == text


async def test_str_subclass_argument_for_an_extension_type(tconn) -> None:
    # citext is introspected (no built-in codec) and moved as text.
    if not await tconn.fetchval(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'"):
        pytest.skip('the citext extension (PostgreSQL contrib) is not installed on the server')
    await tconn.execute('CREATE SCHEMA IF NOT EXISTS contrib_citext; '
                        'CREATE EXTENSION IF NOT EXISTS citext SCHEMA contrib_citext')
    got = await tconn.fetchrow(
        'SELECT $1::contrib_citext.citext, '
        '$1::contrib_citext.citext OPERATOR(contrib_citext.=) $2::contrib_citext.citext, '
        '$3::contrib_citext.citext[]', Text('MiXed'), Text('mixed'), [Text('a'), None])
    assert tuple(got) == ('MiXed', True, ['a', None])


async def test_str_subclass_arguments_like_asyncpg(tconn, apg) -> None:
    for pgtype, value, _ in STR_SUBCLASS_CASES:
        if pgtype == 'uuid':
            continue    # asyncpg refuses a str subclass for uuid; we take it
        query = f'SELECT $1::{pgtype}::text'
        assert await tconn.fetchval(query, _as_subclass(value)) == \
            await apg.fetchval(query, _as_subclass(value)), pgtype


async def test_bad_second_argument_is_named(conn) -> None:
    import mypgdriver

    with pytest.raises(mypgdriver.DataError, match=r'argument \$2.*invalid UUID'):
        await conn.fetchval('SELECT $1::inet, $2::uuid', '10.0.0.1', 'zz')
    assert await conn.fetchval('SELECT $1::inet', '10.0.0.1') == IPv4Address('10.0.0.1')


async def test_values_the_server_refuses_leave_the_connection_usable(conn) -> None:
    import mypgdriver

    # Well-formed on the wire, refused by the server's own checks.
    with pytest.raises(mypgdriver.PostgresError):
        await conn.fetchval('SELECT $1::line', Line(0, 0, 1))
    with pytest.raises(mypgdriver.PostgresError):
        await conn.fetchval('SELECT $1::macaddr', 'not a mac')
    with pytest.raises(mypgdriver.PostgresError):
        await conn.fetchval('SELECT $1::jsonb', '{bad json')
    assert await conn.fetchval('SELECT $1::jsonb', '[]') == '[]'


# --- mypgdriver.types without a server --------------------------------------------

class TestBitString:
    def test_from_str_ignores_spaces_and_packs_bits_from_the_top(self) -> None:
        b = BitString('1010 1')
        assert (b.bytes, len(b)) == (b'\xa8', 5)
        assert [b[i] for i in range(5)] == [1, 0, 1, 0, 1]
        assert b[-1] == 1 and b[-2] == 0
        assert list(b) == [1, 0, 1, 0, 1]

    def test_as_string_repr_and_str_group_by_four(self) -> None:
        b = BitString('101010101')
        assert b.as_string() == '1010 1010 1'
        assert repr(b) == str(b) == '<BitString 1010 1010 1>'
        assert BitString().as_string() == ''
        assert len(BitString()) == 0 and BitString().bytes == b''

    def test_invalid_characters_are_refused(self) -> None:
        with pytest.raises(ValueError, match='position 2'):
            BitString('102')
        with pytest.raises(TypeError):
            BitString(b'101')

    @pytest.mark.parametrize('text, bits, data', [
        ('', 0, b''),
        (' ', 0, b''),
        ('   ', 0, b''),
        ('10 01', 4, b'\x90'),
        ('  1', 1, b'\x80'),
        ('1 0 1 0 1 1 0 0 1', 9, b'\xac\x80'),
    ])
    def test_spaces_anywhere_are_ignored_as_in_asyncpg(self, text: str, bits: int,
                                                       data: bytes) -> None:
        b = BitString(text)
        assert (len(b), b.bytes) == (bits, data)
        assert b == BitString(text.replace(' ', ''))

    @pytest.mark.parametrize('text, position', [('1\t0', 1), ('\n', 0), (' 1 x', 3)])
    def test_other_whitespace_is_an_invalid_bit(self, text: str, position: int) -> None:
        with pytest.raises(ValueError, match=f'position {position}'):
            BitString(text)

    def test_index_out_of_range(self) -> None:
        with pytest.raises(IndexError):
            BitString('101')[3]
        with pytest.raises(IndexError):
            BitString('101')[-4]

    def test_slices_are_bit_strings(self) -> None:
        assert BitString('110010')[1:4] == BitString('100')
        assert BitString('110010')[::-1] == BitString('010011')

    def test_frombytes(self) -> None:
        assert BitString.frombytes(b'\xff\x80', 9) == BitString('1111 1111 1')
        assert BitString.frombytes(b'\x0f') == BitString('00001111')
        assert BitString.frombytes(None, 10) == BitString('0' * 10)
        assert BitString.frombytes() == BitString()
        # Padding bits are cleared so that equal bit strings compare equal.
        assert BitString.frombytes(b'\xff', 4) == BitString('1111')
        assert BitString.frombytes(b'\xff', 4).bytes == b'\xf0'
        with pytest.raises(ValueError):
            BitString.frombytes(b'\xff\xff', 8)
        with pytest.raises(ValueError):
            BitString.frombytes(b'\xff', 9)

    def test_equality_and_hash_include_the_length(self) -> None:
        assert BitString('1') != BitString('10')
        assert BitString('10') == BitString('10')
        assert hash(BitString('0110')) == hash(BitString('0110'))
        assert len({BitString('1'), BitString('1'), BitString('10')}) == 2
        assert BitString('1') != '1'

    @pytest.mark.parametrize('bits, big, little, signed_big', [
        ('', 0, 0, 0),
        ('1', 1, 1, -1),
        ('0001', 1, 8, 1),
        ('1000 0000 1', 257, 257, -255),
        ('1100', 12, 3, -4),
    ])
    def test_to_int(self, bits, big, little, signed_big) -> None:
        b = BitString(bits)
        assert b.to_int() == big
        assert b.to_int('little') == little
        assert b.to_int(signed=True) == signed_big

    def test_from_int_inverts_to_int(self) -> None:
        assert BitString.from_int(12, 4) == BitString('1100')
        assert BitString.from_int(3, 4, 'little') == BitString('1100')
        assert BitString.from_int(-4, 4, signed=True) == BitString('1100')
        assert BitString.from_int(0, 0) == BitString()
        with pytest.raises(OverflowError):
            BitString.from_int(16, 4)
        with pytest.raises(OverflowError):
            BitString.from_int(-1, 4)
        with pytest.raises(ValueError):
            BitString.from_int(1, 4, 'middle')
        with pytest.raises(ValueError):
            BitString('1').to_int('middle')

    @given(st.text(alphabet='01', max_size=70), st.booleans())
    def test_to_int_from_int_property(self, bits: str, signed: bool) -> None:
        b = BitString(bits)
        for order in ('big', 'little'):
            assert BitString.from_int(b.to_int(order, signed=signed), len(b), order,
                                      signed=signed) == b

    def test_is_immutable_in_practice_and_pickles(self) -> None:
        b = BitString('10110')
        with pytest.raises(AttributeError):
            b.bytes = b''
        assert pickle.loads(pickle.dumps(b)) == b


class TestRange:
    def test_defaults_are_lower_inclusive_upper_exclusive(self) -> None:
        r = Range(1, 5)
        assert (r.lower, r.upper, r.lower_inc, r.upper_inc, r.isempty) == (1, 5, True, False, False)
        assert not r.lower_inf and not r.upper_inf

    def test_unbounded_sides_are_never_inclusive(self) -> None:
        r = Range(None, 5, lower_inc=True, upper_inc=True)
        assert (r.lower_inc, r.upper_inc, r.lower_inf, r.upper_inf) == (False, True, True, False)

    def test_empty(self) -> None:
        r = Range(1, 5, empty=True)
        assert (r.lower, r.upper, r.lower_inc, r.upper_inc, r.isempty) == (None, None, False, False, True)
        assert not r and Range(1, 5)
        assert not r.lower_inf and not r.upper_inf
        assert r == Range(empty=True)

    def test_repr_like_asyncpg(self) -> None:
        assert repr(Range(1, 5)) == '<Range [1, 5)>'
        assert repr(Range(None, 5, upper_inc=True)) == '<Range (, 5]>'
        assert repr(Range(1)) == '<Range [1, )>'
        assert repr(Range()) == '<Range (, )>'
        assert repr(Range(empty=True)) == str(Range(empty=True)) == '<Range empty>'

    def test_equality_and_hash(self) -> None:
        assert Range(1, 5) == Range(1, 5, lower_inc=True)
        assert Range(1, 5) != Range(1, 5, upper_inc=True)
        assert Range(1, 5) != (1, 5)
        assert hash(Range(1, 5)) == hash(Range(1, 5))
        assert len({Range(1, 5), Range(1, 5), Range(empty=True)}) == 2

    @pytest.mark.parametrize('a, b, expected', [
        (Range(2, 3), Range(1, 5), True),
        (Range(1, 5), Range(1, 5), True),
        (Range(1, 5), Range(1, 5, lower_inc=False), False),
        (Range(1, 5, lower_inc=False), Range(1, 5), True),
        (Range(1, 5, upper_inc=True), Range(1, 5), False),
        (Range(1, 5), Range(1, 5, upper_inc=True), True),
        (Range(None, 5), Range(1, 5), False),
        (Range(1, 5), Range(None, None), True),
        (Range(1, None), Range(0, 9), False),
        (Range(empty=True), Range(1, 2), True),
        (Range(1, 2), Range(empty=True), False),
        (Range(0, 3), Range(1, 5), False),
    ])
    def test_issubset_and_issuperset(self, a, b, expected) -> None:
        assert a.issubset(b) is expected
        assert b.issuperset(a) is expected

    def test_pickles_and_is_generic(self) -> None:
        r = Range(1, 5, upper_inc=True)
        assert pickle.loads(pickle.dumps(r)) == r
        assert Range[int](1, 2) == Range(1, 2)


class TestGeometry:
    def test_point_converts_to_float(self) -> None:
        p = Point(1, '2.5')
        assert p == (1.0, 2.5) and (p.x, p.y) == (1.0, 2.5)
        assert type(p.x) is float
        assert repr(p) == 'Point(1.0, 2.5)'

    def test_tuple_types_are_immutable(self) -> None:
        p = Point(1, 2)
        with pytest.raises(AttributeError):
            p.x = 3
        with pytest.raises(TypeError):
            p[0] = 3

    def test_compound_types_hold_points(self) -> None:
        box = Box((1, 2), [3, 4])
        assert box == ((1.0, 2.0), (3.0, 4.0))
        assert type(box.high) is Point and box.low == Point(3, 4)
        seg = LineSegment((0, 0), (1, 1))
        assert type(seg.p1) is Point and seg.p2 == Point(1, 1)
        circle = Circle((1, 2), 3)
        assert type(circle.center) is Point and circle.radius == 3.0
        line = Line(1, 2, 3)
        assert (line.A, line.B, line.C) == (1.0, 2.0, 3.0)

    def test_path(self) -> None:
        path = Path((0, 0), (1, 1))
        assert not path.is_closed and len(path) == 2
        assert path[1] == Point(1, 1) and path.points == (Point(0, 0), Point(1, 1))
        assert (1, 1) in path and list(path) == [Point(0, 0), Point(1, 1)]
        assert path != Path((0, 0), (1, 1), is_closed=True)
        assert hash(path) == hash(Path((0, 0), (1, 1)))
        assert repr(path) == 'Path(Point(0.0, 0.0), Point(1.0, 1.0), is_closed=False)'
        with pytest.raises(AttributeError):
            path.points = ()

    def test_polygon_is_a_closed_path(self) -> None:
        polygon = Polygon((0, 0), (1, 1), (1, 0))
        assert polygon.is_closed
        assert polygon == Path((0, 0), (1, 1), (1, 0), is_closed=True)
        assert repr(polygon) == 'Polygon(Point(0.0, 0.0), Point(1.0, 1.0), Point(1.0, 0.0))'

    @pytest.mark.parametrize('value', [
        Point(1, 2), Box((1, 2), (0, 0)), Line(1, 2, 3), LineSegment((1, 2), (3, 4)),
        Path((1, 2), (3, 4), is_closed=True), Polygon((1, 2), (3, 4)), Circle((1, 2), 3),
    ])
    def test_pickle_and_repr_round_trip(self, value) -> None:
        assert pickle.loads(pickle.dumps(value)) == value
        assert type(pickle.loads(pickle.dumps(value))) is type(value)
        assert eval(repr(value)) == value


def test_server_version_is_re_exported() -> None:
    from mypgdriver.server_info import ServerVersion as Original

    assert ServerVersion is Original


# --- the same answers as asyncpg ---------------------------------------------------

def _plain(value: Any) -> Any:
    """A driver-neutral form of a result, to compare the two drivers' types."""
    if type(value).__name__ == 'BitString':
        return ('BitString', value.bytes, len(value))
    if type(value).__name__ in ('Path', 'Polygon'):
        return (type(value).__name__, tuple(tuple(p) for p in value.points), value.is_closed)
    if isinstance(value, tuple):
        return (type(value).__name__ if type(value) is not tuple else '',
                tuple(_plain(v) for v in value))
    return (type(value).__name__, value)


def _for_asyncpg(value: Any) -> Any:
    import asyncpg.types

    if isinstance(value, BitString):
        return asyncpg.types.BitString.frombytes(value.bytes, len(value))
    if isinstance(value, Polygon):
        return asyncpg.types.Polygon(*value.points)
    if isinstance(value, Path):
        return asyncpg.types.Path(*value.points, is_closed=value.is_closed)
    return value


# asyncpg decodes pg_lsn as a signed int8 (FFFFFFFF/FFFFFFFF -> -1); we decode
# the unsigned WAL position.  asyncpg's Circle keeps a plain tuple as its
# center (ours is a Point, which compares equal).
_ASYNCPG_DIFFERS = {'pg_lsn-max', 'pg_lsn-from-str', 'circle', 'circle-from-tuple'}
# Arguments we take and asyncpg refuses.
_ASYNCPG_REFUSES = {'uuid-from-braced-upper-str', 'pg_lsn-from-str'}


@pytest.fixture
async def apg(connect_kwargs):
    asyncpg = pytest.importorskip('asyncpg')
    connection = await asyncpg.connect(**connect_kwargs)
    await connection.execute("SET lc_monetary = 'C'")
    try:
        yield connection
    finally:
        await connection.close()


async def test_results_match_asyncpg(tconn, apg) -> None:
    checked = 0
    for name, case in CASES.items():
        query = f'SELECT {sql_literal(case.text)}::{case.pgtype}'
        ours, theirs = await tconn.fetchval(query), await apg.fetchval(query)
        if name in _ASYNCPG_DIFFERS:
            assert ours == theirs or name.startswith('pg_lsn'), name
            continue
        assert _plain(ours) == _plain(theirs), name
        checked += 1
    assert checked > 80


async def test_arguments_are_encoded_like_asyncpg(tconn, apg) -> None:
    for name, case in CASES.items():
        if name in _ASYNCPG_DIFFERS or name in _ASYNCPG_REFUSES:
            continue
        query = f'SELECT $1::{case.pgtype}::text'
        theirs = await apg.fetchval(query, _for_asyncpg(case.arg))
        assert await tconn.fetchval(query, case.arg) == theirs, name


async def test_circle_and_lsn_differences_from_asyncpg_are_only_cosmetic(tconn, apg) -> None:
    query = "SELECT '<(1,2),3>'::circle, '1/2'::pg_lsn"
    ours, theirs = await tconn.fetchrow(query), await apg.fetchrow(query)
    assert ours[0] == theirs[0] and ours[1] == theirs[1] == 0x100000002
    assert type(ours[0].center) is Point


async def test_uuid_is_importable_from_asyncpgs_pgproto_path(conn):
    # Code written for asyncpg (Piccolo ORM, at import time) names this path.
    from mypgdriver.pgproto import pgproto
    from mypgdriver.pgproto.pgproto import UUID

    value = await conn.fetchval("SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid")
    assert isinstance(value, pgproto.UUID)
    assert value == UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    assert await conn.fetchval("SELECT $1::uuid", UUID(int=5)) == UUID(int=5)

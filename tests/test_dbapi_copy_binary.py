"""mypgdriver.dbapi's binary COPY FROM STDIN: set_types() and write_row() encoded as
copy_records_to_table() encodes, its errors, and the flush of large copies."""
from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Callable, Iterator

import pytest

import mypgdriver.dbapi as dbapi
import mypgdriver.dbapi.copy
from mypgdriver.dbapi import Connection

BENCH_RECORD = (10, 11, 10, 'TESTTESTTEST', 10.333, 12341234, '123412341234')
BENCH_COLUMNS = '(a int, b int, c int, d text, e float8, f int, g text)'
BENCH_TYPES = ['int4', 'int4', 'int4', 'text', 'float8', 'int4', 'text']


@pytest.fixture
def table(dbapi_conn: Connection) -> Iterator[str]:
    """A real (not temporary) table other connections can see: dbapi_bin, the bench's columns."""
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP TABLE IF EXISTS dbapi_bin')
    dbapi_conn.execute(f'CREATE TABLE dbapi_bin {BENCH_COLUMNS}')
    yield 'dbapi_bin'
    dbapi_conn.rollback()
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP TABLE IF EXISTS dbapi_bin')


def count_from_another_connection(open_dbapi_conn: Callable[[], Any], table: str) -> int:
    other = open_dbapi_conn()
    try:
        return other.execute(f'SELECT count(*) FROM {table}').fetchone()[0]
    finally:
        other.close()


def test_bench_record_copied_exactly(dbapi_conn: Connection, table: str,
                                     open_dbapi_conn: Callable[[], Any]):
    cur = dbapi_conn.cursor()
    with cur.copy(f'COPY {table} (a, b, c, d, e, f, g) FROM STDIN (FORMAT BINARY)') as copy:
        assert copy.binary
        copy.set_types(BENCH_TYPES)
        copy.write_row(BENCH_RECORD)
        copy.write_row([-1, 2147483647, -2147483648, '', -0.5, 0, 'é€\t\n\\'])  # a list too
        copy.write_row((None,) * 7)
    assert cur.statusmessage == 'COPY 3'
    assert cur.rowcount == 3
    rows = dbapi_conn.execute(f'SELECT * FROM {table} ORDER BY a NULLS LAST').fetchall()
    assert rows == [(-1, 2147483647, -2147483648, '', -0.5, 0, 'é€\t\n\\'),
                    BENCH_RECORD, (None,) * 7]
    assert count_from_another_connection(open_dbapi_conn, table) == 3


def test_more_types_read_back(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('CREATE TEMP TABLE dbapi_bin_types (b bool, x bytea, n numeric, '
                'ts timestamptz, u uuid, ai int4[], at text[], i8 bigint, d date, j jsonb, '
                'v varchar(10))')
    u = uuid.UUID('12345678-1234-5678-1234-567812345678')
    ts = datetime.datetime(2024, 1, 31, 12, 30, 15, 123456, tzinfo=datetime.timezone.utc)
    row = (True, b'\x00\xff\\', decimal.Decimal('-12345.678900'), ts, u, [1, None, 3],
           ['a', 'b c', None], -9223372036854775808, datetime.date(2000, 2, 29),
           '{"k": [1, 2]}', 'short')
    with cur.copy('COPY dbapi_bin_types FROM STDIN WITH (FORMAT binary)') as copy:
        # SQL spellings, pg_type names, arrays both ways, typmods, an OID.
        copy.set_types(['boolean', 'bytea', 'numeric(12, 6)', 'timestamp with time zone',
                        'uuid', 'int4[]', '_text', 'bigint', 1082, 'jsonb', 'varchar(10)'])
        copy.write_row(row)
        copy.write_row((False, b'', decimal.Decimal('NaN'), None, None, [], [], 0, None,
                        None, ''))
    assert cur.rowcount == 2
    got = cur.execute('SELECT * FROM dbapi_bin_types ORDER BY b DESC').fetchall()
    assert got[0] == row
    assert got[1][0] is False and got[1][1] == b'' and got[1][2].is_nan()
    assert got[1][3:] == (None, None, [], [], 0, None, None, '')


def test_without_set_types_is_a_programming_error(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    with pytest.raises(dbapi.ProgrammingError, match=r'call copy.set_types'):
        with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
            copy.write_row((1,))
    assert dbapi_conn.execute('SELECT 1').fetchone() == (1,)
    assert dbapi_conn.execute(f'SELECT count(*) FROM {table}').fetchone() == (0,)


@pytest.mark.parametrize('row, match', [
    ((1, 2), r'row 1 has 2 values, the COPY 3 columns'),
    ((1, 2, 3, 4), r'row 1 has 4 values'),
    ((1, 'abc', 3), r"row 1, column 2 \(int4\): 'abc'"),
    ((1, 2**40, 3), r'row 1, column 2 \(int4\)'),
    ({'a': 1}, r'row 1 is of type dict'),
    ('abc', r'row 1 is of type str'),
])
def test_a_bad_row_raises_data_error_and_copies_nothing(
        dbapi_conn: Connection, table: str, open_dbapi_conn: Callable[[], Any], row: Any,
        match: str):
    cur = dbapi_conn.cursor()
    with pytest.raises(dbapi.DataError, match=match):
        with cur.copy(f'COPY {table} (a, b, c) FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(['int4', 'int4', 'int4'])
            copy.write_row((0, 0, 0))
            copy.write_row(row)
    # The COPY failed on the server: not even the good row is there.
    assert count_from_another_connection(open_dbapi_conn, table) == 0
    assert dbapi_conn.execute(f'SELECT count(*) FROM {table}').fetchone() == (0,)


def test_a_refused_row_caught_in_the_block_leaves_nothing_behind(dbapi_conn: Connection,
                                                                   table: str):
    cur = dbapi_conn.cursor()
    with cur.copy(f'COPY {table} (a, d) FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types(['int4', 'text'])
        copy.write_row((1, 'one'))
        with pytest.raises(dbapi.DataError):
            copy.write_row((2, 3))      # the int4 went in before the text refused 3
        copy.write_row((4, 'four'))
    assert cur.rowcount == 2
    assert dbapi_conn.execute(f'SELECT a, d FROM {table} ORDER BY a').fetchall() == [
        (1, 'one'), (4, 'four')]


def test_a_failure_inside_a_transaction(dbapi_conn: Connection, table: str):
    dbapi_conn.autocommit = False
    cur = dbapi_conn.cursor()
    with pytest.raises(dbapi.DataError):
        with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(['int4'])
            copy.write_row((1,))
            copy.write_row(('x',))
    dbapi_conn.rollback()
    assert dbapi_conn.execute(f'SELECT count(*) FROM {table}').fetchone() == (0,)
    with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types(['int4'])
        copy.write_row((5,))
    dbapi_conn.commit()
    assert dbapi_conn.execute(f'SELECT a FROM {table}').fetchall() == [(5,)]


@pytest.mark.parametrize('types, error, match', [
    (['int4', 'no_such_type'], dbapi.ProgrammingError, r"unknown type 'no_such_type'"),
    ([987654321], dbapi.ProgrammingError, r'no type with OID 987654321'),
    ([1.5], dbapi.ProgrammingError, r'not float'),
    ('int4', dbapi.ProgrammingError, r'sequence of type names'),
    (['aclitem'], dbapi.NotSupportedError, r'no binary codec'),
])
def test_set_types_errors(dbapi_conn: Connection, table: str, types: Any,
                          error: type[Exception], match: str):
    cur = dbapi_conn.cursor()
    with pytest.raises(error, match=match):
        with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(types)
    assert dbapi_conn.execute('SELECT 2').fetchone() == (2,)
    assert dbapi_conn.execute(f'SELECT count(*) FROM {table}').fetchone() == (0,)


def test_a_type_the_connection_has_met(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    dbapi_conn.execute('DROP TYPE IF EXISTS dbapi_mood CASCADE')
    dbapi_conn.execute("CREATE TYPE dbapi_mood AS ENUM ('sad', 'happy')")
    try:
        dbapi_conn.execute('CREATE TEMP TABLE dbapi_bin_enum (m dbapi_mood, ms dbapi_mood[])')
        cur = dbapi_conn.cursor()
        with pytest.raises(dbapi.ProgrammingError, match='unknown type'):
            with cur.copy('COPY dbapi_bin_enum FROM STDIN (FORMAT BINARY)') as copy:
                copy.set_types(['dbapi_mood', 'dbapi_mood[]'])
        # A query with the type introspects it: then set_types() knows it.
        dbapi_conn.execute("SELECT 'sad'::dbapi_mood, ARRAY['sad']::dbapi_mood[]").fetchall()
        with cur.copy('COPY dbapi_bin_enum FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(['public.dbapi_mood', 'dbapi_mood[]'])
            copy.write_row(('happy', ['sad', 'happy']))
        assert dbapi_conn.execute('SELECT m::text, ms::text FROM dbapi_bin_enum').fetchall() \
            == [('happy', '{sad,happy}')]
    finally:
        dbapi_conn.execute('DROP TABLE IF EXISTS dbapi_bin_enum')
        dbapi_conn.execute('DROP TYPE dbapi_mood')


def test_large_copy_is_sent_in_blocks(dbapi_conn: Connection, table: str,
                                      open_dbapi_conn: Callable[[], Any]):
    cur = dbapi_conn.cursor()
    rows = 50_000       # ~4 MB of binary rows: sent as 64 KiB blocks fill
    with cur.copy(f'COPY {table} FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types(BENCH_TYPES)
        for i in range(rows):
            copy.write_row((i, 11, 10, 'TESTTESTTEST', i / 4, 12341234, '123412341234'))
            if i == 20_000:
                # Blocks went out: what is held is less than one block.
                assert 0 < copy.pending_size < mypgdriver.dbapi.copy.WRITE_BUFFER_BYTES
    assert cur.rowcount == rows
    assert dbapi_conn.execute(f'SELECT count(*), sum(a), sum(e) FROM {table}').fetchone() == (
        rows, rows * (rows - 1) // 2, sum(i / 4 for i in range(rows)))
    assert count_from_another_connection(open_dbapi_conn, table) == rows


def test_write_mixes_with_rows_in_order(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    # A raw binary tuple (1 field: int4 7) written between rows goes in order;
    # the header and trailer of write_row()'s rows are added around them.
    raw = b'\x00\x01' + b'\x00\x00\x00\x04' + (7).to_bytes(4, 'big')
    with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types(['int4'])
        copy.write_row((1,))
        copy.write(raw)
        copy.write_row((2,))
        copy.write(bytearray(raw) * 40_000)     # a big block goes out as it is
        copy.write_row((3,))
    assert cur.rowcount == 40_004
    rows = dbapi_conn.execute(f'SELECT a, count(*) FROM {table} GROUP BY a ORDER BY a')
    assert rows.fetchall() == [(1, 1), (2, 1), (3, 1), (7, 40_001)]


def test_text_copy_is_unchanged_by_set_types(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    with cur.copy(f'COPY {table} (a, d) FROM STDIN') as copy:
        assert not copy.binary
        copy.set_types(['int4', 'text'])        # checked, not needed
        copy.write_row((1, 'a\tb'))
    assert dbapi_conn.execute(f'SELECT a, d FROM {table}').fetchall() == [(1, 'a\tb')]
    with pytest.raises(dbapi.ProgrammingError, match='unknown type'):
        with cur.copy(f'COPY {table} (a) FROM STDIN') as copy:
            copy.set_types(['nope'])


def test_binary_detection_ignores_names(dbapi_conn: Connection):
    dbapi_conn.autocommit = True
    cur = dbapi_conn.cursor()
    cur.execute('CREATE TEMP TABLE "binary" ("binary" int)')
    with cur.copy('COPY "binary" ("binary") FROM STDIN') as copy:
        assert not copy.binary
        copy.write_row((1,))
    with cur.copy('COPY "binary" FROM STDIN BINARY') as copy:       # the old syntax
        assert copy.binary
        copy.set_types(['int4'])
        copy.write_row((2,))
    assert cur.execute('SELECT * FROM "binary" ORDER BY 1').fetchall() == [(1,), (2,)]


def test_write_row_after_the_block_and_on_copy_out(dbapi_conn: Connection, table: str):
    cur = dbapi_conn.cursor()
    with cur.copy(f'COPY {table} (a) FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types(['int4'])
    assert cur.statusmessage == 'COPY 0'        # no rows: still a valid binary file
    with pytest.raises(dbapi.ProgrammingError, match='inside the'):
        copy.write_row((1,))
    with pytest.raises(dbapi.ProgrammingError, match='inside the'):
        copy.set_types(['int4'])
    with cur.copy(f'COPY {table} TO STDOUT') as out:
        with pytest.raises(dbapi.ProgrammingError, match='FROM STDIN'):
            out.write_row((1,))
    assert dbapi_conn.execute('SELECT 3').fetchone() == (3,)

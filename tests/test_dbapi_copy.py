"""mypgdriver.dbapi COPY through the cursor: write/write_row, read/iterate/rows, large data
streamed, failures, and psycopg2's copy_expert()."""
from __future__ import annotations

import io
import tracemalloc

import pytest

import mypgdriver.dbapi as dbapi
import mypgdriver.dbapi.copy
from mypgdriver.dbapi import Connection
from mypgdriver.dbapi.copy import format_text_row


@pytest.fixture
def conn_with_table(dbapi_conn: Connection) -> Connection:
    """The shared DB-API connection, with the temp table dbapi_c (id int, name text, data bytea)."""
    dbapi_conn.execute('CREATE TEMP TABLE dbapi_c (id int, name text, data bytea)')
    dbapi_conn.commit()
    return dbapi_conn


def test_write_row_and_write(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    with cur.copy('COPY dbapi_c (id, name, data) FROM STDIN') as copy:
        assert copy.direction == 'in'
        copy.write_row((1, 'tab\there', b'\x00\xff'))
        copy.write_row((2, None, None))
        copy.write(b'3\tnew\\nline\t\\N\n')
        copy.write('4\tstr\t\\N\n')
    assert cur.statusmessage == 'COPY 4'
    assert cur.rowcount == 4
    cur.execute('SELECT * FROM dbapi_c ORDER BY id')
    assert cur.fetchall() == [(1, 'tab\there', b'\x00\xff'), (2, None, None),
                              (3, 'new\nline', None), (4, 'str', None)]
    conn_with_table.commit()


def test_read_blocks_iterate_and_rows(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.execute("INSERT INTO dbapi_c VALUES (1, 'a\\b', NULL), (2, E'x\\ty', '\\x01')")
    with cur.copy('COPY dbapi_c (id, name, data) TO STDOUT') as copy:
        assert copy.direction == 'out'
        assert list(copy.rows()) == [('1', 'a\\b', None), ('2', 'x\ty', '\\x01')]
    assert cur.statusmessage == 'COPY 2'
    with cur.copy('COPY (SELECT id FROM dbapi_c ORDER BY id) TO STDOUT') as copy:
        assert b''.join(copy) == b'1\n2\n'
    with cur.copy('COPY dbapi_c (id) TO STDOUT') as copy:
        data = b''
        while True:
            block = copy.read()
            if not block:
                break
            data += block
    assert sorted(data.split()) == [b'1', b'2']
    assert conn_with_table.execute('SELECT 1').fetchone() == (1,)


def test_large_copy_in_and_out_is_not_buffered(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    rows = 200_000
    line = 'x' * 100
    tracemalloc.start()
    try:
        with cur.copy('COPY dbapi_c (id, name) FROM STDIN') as copy:
            for i in range(rows):
                copy.write_row((i, line))
        _, peak_in = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        assert cur.rowcount == rows
        count = 0
        with cur.copy('COPY dbapi_c (id, name) TO STDOUT') as copy:
            for _row in copy.rows():
                count += 1
        _, peak_out = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == rows
    total = rows * (len(line) + 8)      # ~21 MB of data each way
    assert peak_in < total / 4
    assert peak_out < total / 4


def test_leaving_a_copy_out_early_cancels_the_rest(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    with cur.copy('COPY (SELECT g FROM generate_series(1, 1000000) g) TO STDOUT') as copy:
        first = copy.read()
    assert first.startswith(b'1\n')
    # cancelled on the server: the transaction it ran in failed
    with pytest.raises(dbapi.InternalError):
        conn_with_table.execute('SELECT 1')
    conn_with_table.rollback()
    assert conn_with_table.execute('SELECT 42').fetchone() == (42,)
    conn_with_table.rollback()
    conn_with_table.autocommit = True
    with cur.copy('COPY (SELECT g FROM generate_series(1, 1000000) g) TO STDOUT') as copy:
        copy.read()
    assert conn_with_table.execute('SELECT 43').fetchone() == (43,)


def test_exception_in_the_block_copies_nothing(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    conn_with_table.autocommit = True
    with pytest.raises(RuntimeError):
        with cur.copy('COPY dbapi_c (id) FROM STDIN') as copy:
            copy.write_row((1,))
            raise RuntimeError('stop')
    assert conn_with_table.execute('SELECT count(*) FROM dbapi_c').fetchone() == (0,)


def test_bad_data_is_the_servers_error_and_the_connection_stays_usable(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    with pytest.raises(dbapi.DataError):          # 22P02 invalid input syntax
        with cur.copy('COPY dbapi_c (id) FROM STDIN') as copy:
            copy.write(b'not a number\n')
    conn_with_table.rollback()
    assert conn_with_table.execute('SELECT count(*) FROM dbapi_c').fetchone() == (0,)


def test_copy_statement_errors(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    with pytest.raises(dbapi.ProgrammingError, match='FROM STDIN or COPY'):
        cur.copy('SELECT 1')
    with pytest.raises(dbapi.ProgrammingError):     # 42P01: no such table
        with cur.copy('COPY no_such_table FROM STDIN'):
            pass
    conn_with_table.rollback()
    with pytest.raises(dbapi.NotSupportedError):
        cur.copy('COPY (SELECT %s) TO STDOUT', (1,))
    with cur.copy('COPY dbapi_c FROM STDIN') as copy:
        with pytest.raises(dbapi.ProgrammingError, match='TO STDOUT'):
            copy.read()
    with pytest.raises(dbapi.ProgrammingError, match='inside the'):
        copy.write(b'')
    with pytest.raises(dbapi.NotSupportedError):
        format_text_row(([1, 2],))


def test_copy_expert_both_ways(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    cur.copy_expert('COPY dbapi_c (id, name) FROM STDIN WITH (FORMAT csv)',
                    io.StringIO('1,one\n2,two\n'))
    assert cur.rowcount == 2
    out = io.StringIO()
    cur.copy_expert('COPY (SELECT id, name FROM dbapi_c ORDER BY id) TO STDOUT '
                    'WITH (FORMAT csv)', out)
    assert out.getvalue() == '1,one\n2,two\n'
    binary = io.BytesIO()
    cur.copy_expert('COPY (SELECT id FROM dbapi_c ORDER BY id) TO STDOUT', binary)
    assert binary.getvalue() == b'1\n2\n'
    cur.copy_expert('COPY dbapi_c (id) FROM STDIN', io.BytesIO(b'3\n'), size=1)
    assert conn_with_table.execute('SELECT count(*) FROM dbapi_c').fetchone() == (3,)


def test_format_text_row():
    import datetime
    import decimal
    assert format_text_row((1, 'a\\b\n', None, True, decimal.Decimal('1.5'),
                            datetime.date(2024, 1, 2), b'\x0a')) == \
        '1\ta\\\\b\\n\t\\N\tt\t1.5\t2024-01-02\t\\\\x0a\n'


def test_write_row_values_as_the_server_reads_them(conn_with_table: Connection):
    import decimal
    import uuid

    cur = conn_with_table.cursor()
    cur.execute('CREATE TEMP TABLE dbapi_v (i int8, f float8, n numeric, b bool, t text, '
                'x bytea, u uuid)')
    u = uuid.UUID('12345678-1234-5678-1234-567812345678')
    rows = [(-9223372036854775808, -1.5e-300, decimal.Decimal('-1.25'), True,
             'é\\\t\r\n€', bytearray(b'\x00\\'), u),
            (9223372036854775807, float('inf'), decimal.Decimal('NaN'), False, '', b'', None),
            (0, 10.333, 2**70, None, 'plain', memoryview(b'ab')[::-1], None)]
    with cur.copy('COPY dbapi_v FROM STDIN') as copy:
        copy.write_row(rows[0])
        copy.write(b'1\t2\t3\tt\traw\t\\N\t\\N\n')     # in order between the rows
        copy.write_row(rows[1])
        with pytest.raises(dbapi.NotSupportedError):
            copy.write_row((5, 1.0, 1, True, 'half', [1], None))  # no half row is left
        copy.write_row(rows[2])
    assert cur.rowcount == 4
    cur.execute('SELECT * FROM dbapi_v')
    got = cur.fetchall()
    assert got[0] == (-9223372036854775808, -1.5e-300, decimal.Decimal('-1.25'), True,
                      'é\\\t\r\n€', b'\x00\\', u)
    assert got[1] == (1, 2.0, decimal.Decimal(3), True, 'raw', None, None)
    assert got[2][:5] == (9223372036854775807, float('inf'), got[2][2], False, '')
    assert got[2][2].is_nan() and got[2][5] == b''
    assert got[3] == (0, 10.333, decimal.Decimal(2**70), None, 'plain', b'ba', None)


def test_write_row_sends_blocks_as_they_fill(conn_with_table: Connection):
    cur = conn_with_table.cursor()
    row = (1, 'x' * 1000, None)
    with cur.copy('COPY dbapi_c FROM STDIN') as copy:
        for _ in range(300):        # ~300 KB: sent in blocks of 64 KiB
            copy.write_row(row)
        assert 0 < copy.pending_size < mypgdriver.dbapi.copy.WRITE_BUFFER_BYTES
    assert cur.rowcount == 300
    row = conn_with_table.execute('SELECT count(*), sum(length(name)) FROM dbapi_c').fetchone()
    assert row == (300, 300_000)

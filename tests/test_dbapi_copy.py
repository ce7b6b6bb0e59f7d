"""mypgdriver.dbapi COPY through the cursor: write/write_row, read/iterate/rows, large data
streamed, failures, and psycopg2's copy_expert()."""
from __future__ import annotations

import io
import tracemalloc
from typing import Any, Iterator

import pytest

import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Connection
from mypgdriver.dbapi.copy import format_text_row
from tests.test_policy_without_event_loop import no_event_loop  # noqa: F401  (a fixture)


@pytest.fixture
def conn(pg_cluster: Any, no_event_loop: list[str]) -> Iterator[Connection]:  # noqa: F811
    connection = dbapi.connect(pg_cluster.dsn())
    try:
        connection.execute('CREATE TEMP TABLE dbapi_c (id int, name text, data bytea)')
        connection.commit()
        yield connection
    finally:
        connection.close()


def test_write_row_and_write(conn: Connection):
    cur = conn.cursor()
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
    conn.commit()


def test_read_blocks_iterate_and_rows(conn: Connection):
    cur = conn.cursor()
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
    assert conn.execute('SELECT 1').fetchone() == (1,)


def test_large_copy_in_and_out_is_not_buffered(conn: Connection):
    cur = conn.cursor()
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


def test_leaving_a_copy_out_early_cancels_the_rest(conn: Connection):
    cur = conn.cursor()
    with cur.copy('COPY (SELECT g FROM generate_series(1, 1000000) g) TO STDOUT') as copy:
        first = copy.read()
    assert first.startswith(b'1\n')
    # cancelled on the server: the transaction it ran in failed
    with pytest.raises(dbapi.InternalError):
        conn.execute('SELECT 1')
    conn.rollback()
    assert conn.execute('SELECT 42').fetchone() == (42,)
    conn.rollback()
    conn.autocommit = True
    with cur.copy('COPY (SELECT g FROM generate_series(1, 1000000) g) TO STDOUT') as copy:
        copy.read()
    assert conn.execute('SELECT 43').fetchone() == (43,)


def test_exception_in_the_block_copies_nothing(conn: Connection):
    cur = conn.cursor()
    conn.autocommit = True
    with pytest.raises(RuntimeError):
        with cur.copy('COPY dbapi_c (id) FROM STDIN') as copy:
            copy.write_row((1,))
            raise RuntimeError('stop')
    assert conn.execute('SELECT count(*) FROM dbapi_c').fetchone() == (0,)


def test_bad_data_is_the_servers_error_and_the_connection_stays_usable(conn: Connection):
    cur = conn.cursor()
    with pytest.raises(dbapi.DataError):          # 22P02 invalid input syntax
        with cur.copy('COPY dbapi_c (id) FROM STDIN') as copy:
            copy.write(b'not a number\n')
    conn.rollback()
    assert conn.execute('SELECT count(*) FROM dbapi_c').fetchone() == (0,)


def test_copy_statement_errors(conn: Connection):
    cur = conn.cursor()
    with pytest.raises(dbapi.ProgrammingError, match='FROM STDIN or COPY'):
        cur.copy('SELECT 1')
    with pytest.raises(dbapi.ProgrammingError):     # 42P01: no such table
        with cur.copy('COPY no_such_table FROM STDIN'):
            pass
    conn.rollback()
    with pytest.raises(dbapi.NotSupportedError):
        cur.copy('COPY (SELECT %s) TO STDOUT', (1,))
    with cur.copy('COPY dbapi_c FROM STDIN') as copy:
        with pytest.raises(dbapi.ProgrammingError, match='TO STDOUT'):
            copy.read()
    with pytest.raises(dbapi.ProgrammingError, match='inside the'):
        copy.write(b'')
    with pytest.raises(dbapi.NotSupportedError):
        format_text_row(([1, 2],))


def test_copy_expert_both_ways(conn: Connection):
    cur = conn.cursor()
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
    assert conn.execute('SELECT count(*) FROM dbapi_c').fetchone() == (3,)


def test_format_text_row():
    import datetime
    import decimal
    assert format_text_row((1, 'a\\b\n', None, True, decimal.Decimal('1.5'),
                            datetime.date(2024, 1, 2), b'\x0a')) == \
        '1\ta\\\\b\\n\t\\N\tt\t1.5\t2024-01-02\t\\\\x0a\n'

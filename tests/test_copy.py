"""COPY on a live server: copy_from_table, copy_from_query, copy_to_table and
copy_records_to_table, their options, sources and outputs, errors, cancellation
and bounded memory; plus the COPY option lists on their own (quoting and
$n substitution are in test_sql.py)."""
from __future__ import annotations

import asyncio
import datetime
import decimal
import io
import ipaddress
import pathlib
import sys
import threading
import time
import tracemalloc
import uuid

import pytest

from mypgdriver import copy as pgcopy
from mypgdriver import exceptions
from tests.support.waiting import apoll

# Values that break naive COPY handling: the text format's escapes and NULL
# marker, CSV's quote and delimiter, line ends, non-ASCII and empty strings.
ODD_TEXTS = [
    'plain',
    'tab\there',
    'new\nline',
    'carriage\rreturn',
    'back\\slash',
    '\\N',
    'NULL',
    '',
    'ünïcødé ✓ 日本',
    'quote " double',
    "quote ' single",
    'comma, semicolon; pipe|',
    '"\t\\\n,;\'"',
    None,
]


@pytest.fixture
async def odd_table(conn):
    """A table `odd` (id, txt) holding ODD_TEXTS, and an empty copy `odd_copy`."""
    await conn.execute('CREATE TEMP TABLE odd (id int PRIMARY KEY, txt text)')
    await conn.execute('CREATE TEMP TABLE odd_copy (id int PRIMARY KEY, txt text)')
    await conn.executemany('INSERT INTO odd VALUES ($1, $2)', list(enumerate(ODD_TEXTS)))
    return list(enumerate(ODD_TEXTS))


async def _rows(conn, table: str) -> list[tuple]:
    return [tuple(r) for r in await conn.fetch(f'SELECT * FROM {table} ORDER BY 1')]


async def _assert_usable(conn) -> None:
    assert await conn.fetchval('SELECT 41 + 1') == 42
    assert not conn.is_in_transaction()


# --- SQL building (no server) ---------------------------------------------------------

def test_copy_options_text():
    assert pgcopy.copy_options() == ''
    assert pgcopy.copy_options(format='CSV', header=True, delimiter=';', null='',
                               quote="'", escape='\\', force_quote=True,
                               encoding='latin1') == (
        " (FORMAT csv, DELIMITER ';', NULL '', HEADER true, QUOTE '''', "
        "ESCAPE E'\\\\', FORCE_QUOTE *, ENCODING 'latin1')")
    assert pgcopy.copy_options(format='csv', force_not_null=['a', 'B"'], force_null=['c'],
                               header='match', freeze=True) == (
        ' (FORMAT csv, FREEZE true, HEADER match, FORCE_NOT_NULL ("a", "B"""), '
        'FORCE_NULL ("c"))')
    assert pgcopy.copy_options(format='binary', oids=False) == ' (FORMAT binary, OIDS false)'
    assert pgcopy.copy_options(format='csv', force_quote=False) == ' (FORMAT csv)'


@pytest.mark.parametrize('kwargs, error', [
    (dict(format='xml'), ValueError),
    (dict(format='binary', delimiter=','), ValueError),
    (dict(format='binary', header=True), ValueError),
    (dict(quote='"'), ValueError),                       # CSV only
    (dict(format='text', force_quote=True), ValueError),
    (dict(format='csv', force_quote='col'), TypeError),   # one string, not a list
    (dict(header='yes'), ValueError),
    (dict(freeze='true'), TypeError),
    (dict(delimiter=5), TypeError),
])
def test_copy_options_reject_invalid_combinations(kwargs, error):
    with pytest.raises(error):
        pgcopy.copy_options(**kwargs)


# --- round trips ----------------------------------------------------------------------

@pytest.mark.parametrize('opts', [
    {},
    {'format': 'text'},
    {'format': 'csv'},
    {'format': 'binary'},
    {'format': 'csv', 'header': True, 'delimiter': ';', 'null': '<null>', 'quote': '|',
     'escape': '!'},
    {'format': 'text', 'delimiter': '|', 'null': 'NIL'},
], ids=['default', 'text', 'csv', 'binary', 'csv-options', 'text-options'])
async def test_copy_round_trip_keeps_odd_values(conn, odd_table, opts):
    out = io.BytesIO()
    assert await conn.copy_from_table('odd', output=out, **opts) == f'COPY {len(ODD_TEXTS)}'
    assert await conn.copy_to_table('odd_copy', source=io.BytesIO(out.getvalue()),
                                    **opts) == f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table


async def test_copy_from_table_text_format_exact_bytes(conn, odd_table):
    out = io.BytesIO()
    await conn.copy_from_table('odd', output=out, columns=['txt'])
    assert out.getvalue().decode().split('\n') == [
        'plain', 'tab\\there', 'new\\nline', 'carriage\\rreturn', 'back\\\\slash', '\\\\N',
        'NULL', '', 'ünïcødé ✓ 日本', 'quote " double', "quote ' single",
        'comma, semicolon; pipe|', '"\\t\\\\\\n,;\'"', '\\N', '']


async def test_copy_from_table_csv_exact_bytes(conn):
    await conn.execute("CREATE TEMP TABLE csvt (a int, b text);"
                       "INSERT INTO csvt VALUES (1, 'x,y'), (2, NULL), (3, 'q\"q'), (4, '')")
    out = io.BytesIO()
    assert await conn.copy_from_table('csvt', output=out, format='csv', header=True,
                                      force_quote=['b']) == 'COPY 4'
    assert out.getvalue() == b'a,b\n1,"x,y"\n2,\n3,"q""q"\n4,""\n'
    out = io.BytesIO()
    await conn.copy_from_table('csvt', output=out, format='csv', delimiter=';', null='-',
                               quote="'", force_quote=True)
    assert out.getvalue() == b"'1';'x,y'\n'2';-\n'3';'q\"q'\n'4';''\n"


async def test_copy_to_table_csv_header_match_and_force_null(conn, server_version):
    if server_version < 150000:
        pytest.skip("COPY ... HEADER MATCH needs PostgreSQL 15")
    await conn.execute('CREATE TEMP TABLE hm (a int, b text, c text)')
    data = [b'a,b,c\n1,"",x\n2,,""\n']
    assert await conn.copy_to_table('hm', source=data, format='csv', header='match',
                                    force_null=['b'], force_not_null=['c']) == 'COPY 2'
    assert await _rows(conn, 'hm') == [(1, None, 'x'), (2, None, '')]
    with pytest.raises(exceptions.BadCopyFileFormatError):
        await conn.copy_to_table('hm', source=[b'a,c,b\n3,x,y\n'], format='csv',
                                 header='match')
    await _assert_usable(conn)


async def test_identifiers_are_quoted(conn):
    await conn.execute('CREATE SCHEMA IF NOT EXISTS "Sch ""q"""')
    await conn.execute('CREATE TABLE "Sch ""q"""."Tab le" ("Id" int, "we""ird" text, c int)')
    try:
        assert await conn.copy_records_to_table(
            'Tab le', schema_name='Sch "q"', columns=['Id', 'we"ird'],
            records=[(1, 'a'), (2, 'b')]) == 'COPY 2'
        assert await conn.copy_to_table('Tab le', schema_name='Sch "q"',
                                        columns=('we"ird', 'Id'), source=[b'c\t3\n']) == 'COPY 1'
        out = io.BytesIO()
        assert await conn.copy_from_table('Tab le', schema_name='Sch "q"',
                                          columns=['we"ird', 'Id'], output=out,
                                          format='csv') == 'COPY 3'
        assert out.getvalue() == b'a,1\nb,2\nc,3\n'
    finally:
        await conn.execute('DROP SCHEMA "Sch ""q""" CASCADE')


async def test_columns_given_as_one_string_are_refused(conn, odd_table):
    with pytest.raises(TypeError):
        await conn.copy_from_table('odd', output=io.BytesIO(), columns='txt')
    with pytest.raises(ValueError):
        await conn.copy_to_table('odd', source=[], force_quote=True)


# --- copy_from_query ------------------------------------------------------------------

async def test_copy_from_query_with_arguments(conn, odd_table):
    out = io.BytesIO()
    status = await conn.copy_from_query(
        "SELECT id, txt, $2::text || '$1' AS tag FROM odd WHERE id < $1 AND "
        "coalesce(txt, '') <> $3 ORDER BY id", 5, "it's \\ $1", 'plain',
        output=out, format='csv')
    assert status == 'COPY 4'
    assert out.getvalue().decode() == (
        "1,tab\there,it's \\ $1$1\n"
        '2,"new\nline",it\'s \\ $1$1\n'
        "3,\"carriage\rreturn\",it's \\ $1$1\n"
        "4,back\\slash,it's \\ $1$1\n")


async def test_copy_from_query_arguments_keep_their_types(conn):
    out = io.BytesIO()
    await conn.copy_from_query(
        'SELECT $1 + 1, $2::int[], $3::date, $4::text, $5::numeric * 2 FROM '
        '(SELECT 0 AS x) s WHERE x = $6',
        41, [1, None, 3], datetime.date(2024, 2, 29), None, decimal.Decimal('1.50'), 0,
        output=out)
    assert out.getvalue() == b'42\t{1,NULL,3}\t2024-02-29\t\\N\t3.00\n'


async def test_copy_from_query_argument_of_a_user_type_in_a_quoted_schema(conn):
    await conn.execute('CREATE SCHEMA "Copy Sch"; '
                       'CREATE TYPE "Copy Sch"."Mood" AS ENUM (\'ok\', \'it\'\'s fine\'); '
                       'CREATE TABLE "Copy Sch".moods (m "Copy Sch"."Mood")')
    try:
        await conn.execute('INSERT INTO "Copy Sch".moods VALUES (\'ok\'), (\'it\'\'s fine\')')
        out = io.BytesIO()
        assert await conn.copy_from_query('SELECT m FROM "Copy Sch".moods WHERE m = $1',
                                          "it's fine", output=out) == 'COPY 1'
        assert out.getvalue() == b"it's fine\n"
    finally:
        await conn.execute('DROP SCHEMA "Copy Sch" CASCADE')


async def test_copy_from_query_wrong_argument_count(conn):
    with pytest.raises(exceptions.InterfaceError):
        await conn.copy_from_query('SELECT $1::int', 1, 2, output=io.BytesIO())
    await _assert_usable(conn)


async def test_copy_from_query_bad_argument_raises_data_error(conn):
    with pytest.raises(exceptions.DataError):
        await conn.copy_from_query('SELECT $1::int', 'not an int', output=io.BytesIO())
    await _assert_usable(conn)


# --- outputs --------------------------------------------------------------------------

async def test_copy_out_to_path_str_and_pathlike(conn, odd_table, tmp_path):
    expected = io.BytesIO()
    await conn.copy_from_table('odd', output=expected)
    for path in (str(tmp_path / 'a.txt'), tmp_path / 'b.txt'):
        assert await conn.copy_from_table('odd', output=path) == f'COPY {len(ODD_TEXTS)}'
        assert pathlib.Path(path).read_bytes() == expected.getvalue()


async def test_copy_out_to_open_file_and_async_callable(conn, odd_table, tmp_path):
    expected = io.BytesIO()
    await conn.copy_from_table('odd', output=expected, format='csv')
    with open(tmp_path / 'f.csv', 'wb') as f:
        await conn.copy_from_table('odd', output=f, format='csv')
    assert (tmp_path / 'f.csv').read_bytes() == expected.getvalue()

    chunks = []

    async def collect(data: bytes) -> None:
        assert type(data) is bytes
        chunks.append(data)
    assert await conn.copy_from_table('odd', output=collect, format='csv') == \
        f'COPY {len(ODD_TEXTS)}'
    assert b''.join(chunks) == expected.getvalue()


async def test_copy_out_hands_over_many_rows_per_call(conn):
    # Rows are grouped per network read: 100k one-line rows must not cost
    # 100k calls of the output.
    calls = []

    async def collect(data: bytes) -> None:
        calls.append(data)
    status = await conn.copy_from_query('SELECT i FROM generate_series(1, 100000) i',
                                        output=collect)
    assert status == 'COPY 100000'
    assert b''.join(calls) == b''.join(b'%d\n' % i for i in range(1, 100001))
    assert len(calls) < 200


async def test_copy_out_to_object_with_async_write(conn):
    class AsyncSink:
        def __init__(self):
            self.data = bytearray()

        async def write(self, data):
            await asyncio.sleep(0)
            self.data += data
    sink = AsyncSink()
    assert await conn.copy_from_query('SELECT generate_series(1, 3)', output=sink) == 'COPY 3'
    assert bytes(sink.data) == b'1\n2\n3\n'


async def test_copy_out_rejects_unusable_output(conn):
    with pytest.raises(TypeError):
        await conn.copy_from_query('SELECT 1', output=42)
    await _assert_usable(conn)


async def test_copy_out_failing_output_raises_and_connection_stays_usable(conn):
    class Boom(Exception):
        pass

    async def failing(data):
        raise Boom('disk full')
    with pytest.raises(Boom):
        await conn.copy_from_query('SELECT generate_series(1, 100000)', output=failing)
    await _assert_usable(conn)


async def test_copy_out_slow_output_keeps_memory_bounded(conn):
    total = 0
    rows = 0
    calls = 0
    first = last = b''

    async def slow_output(data: bytes) -> None:
        nonlocal total, rows, calls, first, last
        calls += 1
        total += len(data)
        rows += data.count(b'\n')
        first = first or data[:20]
        last = data[-20:]
        # A stall at the start: without flow control, everything the server
        # sends meanwhile would pile up (about 60 MB of small bytes objects).
        await asyncio.sleep(1.0 if calls == 1 else len(data) / 20e6)

    tracemalloc.start()
    try:
        status = await conn.copy_from_query(
            'SELECT g FROM generate_series(1, 1000000) g', output=slow_output)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 'COPY 1000000'
    assert rows == 1000000
    assert total == sum(len(str(g)) + 1 for g in range(1, 1000001))
    assert first == b'1\n2\n3\n4\n5\n6\n7\n8\n9\n10'
    assert last == b'999998\n999999\n1000000\n'[-20:]
    assert peak < 6 * 1024 * 1024, peak
    await _assert_usable(conn)


async def test_copy_out_error_after_some_rows(conn):
    out = io.BytesIO()
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.copy_from_query('SELECT 10 / (5 - g) FROM generate_series(1, 10) g',
                                   output=out)
    await _assert_usable(conn)


async def test_copy_out_missing_table(conn):
    with pytest.raises(exceptions.UndefinedTableError):
        await conn.copy_from_table('no_such_table', output=io.BytesIO())
    await _assert_usable(conn)


async def test_copy_out_cancelled_mid_copy_leaves_connection_usable(conn):
    started = asyncio.Event()

    async def stuck(data):
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(conn.copy_from_query(
        'SELECT generate_series(1, 2000000)', output=stuck))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _assert_usable(conn)


async def test_copy_out_timeout(conn):
    async def stuck(data):
        await asyncio.sleep(0.05)
    with pytest.raises(asyncio.TimeoutError):
        await conn.copy_from_query('SELECT generate_series(1, 1000), pg_sleep(0.001)',
                                   output=stuck, timeout=0.3)
    await _assert_usable(conn)


# Rows at once (the output is called within milliseconds), then one a millisecond.
_FAST_THEN_SLOW = ('SELECT g, CASE WHEN g > 20000 THEN pg_sleep(0.001) END '
                   'FROM generate_series(1, 1000000) g')


class _OutputProbe:
    """An async output that records its calls and whether one is running."""

    def __init__(self, delay: float | None, swallow_cancel: bool = False) -> None:
        self.delay = delay              # None: never returns by itself
        self.swallow_cancel = swallow_cancel
        self.calls = 0
        self.running = 0

    async def __call__(self, data: bytes) -> None:
        self.calls += 1
        self.running += 1
        try:
            if self.delay is None:
                await asyncio.Event().wait()
            else:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            if not self.swallow_cancel:
                raise
        finally:
            self.running -= 1


async def _assert_copy_ended_on_server(conn, monitor) -> None:
    await _assert_usable(conn)
    assert await monitor.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'COPY%' "
        "AND state <> 'idle'", conn.get_server_pid()) == 0


@pytest.mark.parametrize('swallow_cancel', [False, True])
async def test_copy_out_timeout_stops_a_slow_output_on_time(conn, monitor, swallow_cancel):
    # The timeout lands at many points: before any data, while the output
    # waits, between calls; the output is slower than the timeout or never
    # returns.  Every time: TimeoutError on time, the output no longer
    # running when it is raised and never called again.
    loop = asyncio.get_running_loop()
    for delay in (None, 0.5, 0.05, 0.01, 0.001, 0):
        for timeout in (0.001, 0.02, 0.06, 0.15):
            output = _OutputProbe(delay, swallow_cancel)
            started = loop.time()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(conn.copy_from_query(
                    _FAST_THEN_SLOW, output=output, timeout=timeout), 10)
            elapsed = loop.time() - started
            # (a loaded machine adds a fraction of 5 s; a stuck output, 10)
            assert elapsed < timeout + 5.0, (delay, timeout, elapsed)
            assert output.running == 0, (delay, timeout)
            calls = output.calls
            if sys.version_info >= (3, 11):
                assert asyncio.current_task().cancelling() == 0
            # (a window in which the output must not be called again)
            await asyncio.sleep(0.02)
            assert (output.calls, output.running) == (calls, 0), (delay, timeout)
            await _assert_copy_ended_on_server(conn, monitor)


async def test_copy_out_cancel_stops_a_stuck_output(conn, monitor):
    for pause in (0, 0.01, 0.05):
        output = _OutputProbe(None)
        task = asyncio.ensure_future(conn.copy_from_query(
            'SELECT g FROM generate_series(1, 1000000) g', output=output))
        await apoll(lambda probe=output: probe.calls, bool, interval=0.001)
        await asyncio.sleep(pause)
        await conn.cancel()
        with pytest.raises(exceptions.QueryCanceledError):
            await asyncio.wait_for(task, 10)
        assert (output.calls, output.running) == (1, 0)
        await _assert_copy_ended_on_server(conn, monitor)


async def test_copy_out_timeout_waits_for_a_blocking_write_to_return(conn, monitor):
    # A file-like output's write() runs in a thread, which cannot be
    # interrupted: the TimeoutError comes once the write in progress returned.
    class SlowFile:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.calls = self.running = 0

        def write(self, data: bytes) -> None:
            with self.lock:
                self.calls += 1
                self.running += 1
            time.sleep(0.03)
            with self.lock:
                self.running -= 1

    for timeout in (0.01, 0.05, 0.1):
        out = SlowFile()
        with pytest.raises(asyncio.TimeoutError):
            await conn.copy_from_query(_FAST_THEN_SLOW, output=out, timeout=timeout)
        with out.lock:
            assert out.running == 0
            calls = out.calls
        # (a window in which the file must not be written again)
        time.sleep(0.05)
        assert (out.calls, out.running) == (calls, 0)
        await _assert_copy_ended_on_server(conn, monitor)


# --- sources --------------------------------------------------------------------------

async def test_copy_in_from_path_and_file_object(conn, odd_table, tmp_path):
    data = io.BytesIO()
    await conn.copy_from_table('odd', output=data)
    path = tmp_path / 'odd.txt'
    path.write_bytes(data.getvalue())
    assert await conn.copy_to_table('odd_copy', source=path) == f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table
    await conn.execute('TRUNCATE odd_copy')
    assert await conn.copy_to_table('odd_copy', source=str(path)) == f'COPY {len(ODD_TEXTS)}'
    await conn.execute('TRUNCATE odd_copy')
    with open(path, 'rb') as f:
        assert await conn.copy_to_table('odd_copy', source=f) == f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table


async def test_copy_in_large_file_object_read_in_chunks(conn):
    await conn.execute('CREATE TEMP TABLE big (n int, pad text)')
    data = b''.join(b'%d\t%s\n' % (i, b'x' * 90) for i in range(30000))   # ~2.8 MB
    reads = []

    class CountingReader(io.BytesIO):
        def read(self, n=-1):
            reads.append(n)
            return super().read(n)
    assert await conn.copy_to_table('big', source=CountingReader(data)) == 'COPY 30000'
    assert all(n == pgcopy.COPY_IN_READ_BYTES for n in reads)
    assert len(reads) == len(data) // pgcopy.COPY_IN_READ_BYTES + 2
    assert await conn.fetchval('SELECT sum(n) FROM big') == 30000 * 29999 // 2


async def test_copy_in_from_iterables_of_bytes(conn, odd_table):
    data = io.BytesIO()
    await conn.copy_from_table('odd', output=data, format='csv')
    lines = data.getvalue().splitlines(keepends=True)

    assert await conn.copy_to_table('odd_copy', source=iter(lines), format='csv') == \
        f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table
    await conn.execute('TRUNCATE odd_copy')

    async def agen():
        for line in lines:
            await asyncio.sleep(0)
            yield memoryview(line)
    assert await conn.copy_to_table('odd_copy', source=agen(), format='csv') == \
        f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table
    await conn.execute('TRUNCATE odd_copy')

    assert await conn.copy_to_table('odd_copy', source=bytearray(data.getvalue()),
                                    format='csv') == f'COPY {len(ODD_TEXTS)}'
    assert await _rows(conn, 'odd_copy') == odd_table


async def test_copy_in_huge_chunk_is_split(conn):
    await conn.execute('CREATE TEMP TABLE huge (n int, pad text)')
    data = bytearray(b''.join(b'%d\t%s\n' % (i, b'y' * 200) for i in range(20000)))  # ~4 MB
    assert len(data) > 3 * pgcopy.COPY_IN_MESSAGE_BYTES
    assert await conn.copy_to_table('huge', source=data) == 'COPY 20000'
    assert await conn.copy_to_table('huge', source=[bytes(data)]) == 'COPY 20000'
    assert tuple(await conn.fetchrow('SELECT count(*), sum(n), min(length(pad)) FROM huge')) \
        == (40000, 20000 * 19999, 200)


async def test_copy_in_many_small_chunks(conn):
    await conn.execute('CREATE TEMP TABLE nums (n int)')
    assert await conn.copy_to_table(
        'nums', source=(b'%d\n' % i for i in range(200000))) == 'COPY 200000'
    assert await conn.fetchval('SELECT sum(n) FROM nums') == 200000 * 199999 // 2


async def test_copy_in_where_and_columns(conn):
    await conn.execute('CREATE TEMP TABLE w (a int, b text DEFAULT \'dflt\', c int)')
    assert await conn.copy_to_table('w', columns=['c', 'a'], source=[b'1\t10\n2\t20\n3\t30\n'],
                                    where='c <> 2') == 'COPY 2'
    assert await _rows(conn, 'w') == [(10, 'dflt', 1), (30, 'dflt', 3)]


async def test_copy_in_failing_source_is_reraised_and_nothing_committed(conn, odd_table):
    class SourceError(Exception):
        pass

    def failing():
        yield b'100\tfirst\n' * 50000
        raise SourceError('source broke')
    with pytest.raises(SourceError, match='source broke'):
        await conn.copy_to_table('odd_copy', source=failing())
    assert await _rows(conn, 'odd_copy') == []
    await _assert_usable(conn)

    async def afailing():
        yield b'100\tfirst\n'
        raise SourceError('async source broke')
    with pytest.raises(SourceError, match='async source broke'):
        await conn.copy_to_table('odd_copy', source=afailing())
    assert await _rows(conn, 'odd_copy') == []
    await _assert_usable(conn)


async def test_copy_in_non_bytes_chunk_is_refused(conn, odd_table):
    with pytest.raises(TypeError):
        await conn.copy_to_table('odd_copy', source=[b'1\ta\n', '2\tb\n'])
    assert await _rows(conn, 'odd_copy') == []
    with pytest.raises(TypeError):
        await conn.copy_to_table('odd_copy', source=12)
    await _assert_usable(conn)


async def test_copy_in_bad_row_commits_nothing(conn, odd_table):
    data = b''.join(b'%d\tok\n' % i for i in range(100, 50100)) + b'oops\tbad\n' + \
        b''.join(b'%d\tok\n' % i for i in range(60000, 70000))
    with pytest.raises(exceptions.InvalidTextRepresentationError):
        await conn.copy_to_table('odd_copy', source=[data[i:i + 1000]
                                                     for i in range(0, len(data), 1000)])
    assert await _rows(conn, 'odd_copy') == []
    await _assert_usable(conn)


async def test_copy_in_missing_table_does_not_touch_source(conn):
    consumed = []

    def source():
        consumed.append(True)
        yield b'1\n'
    with pytest.raises(exceptions.UndefinedTableError):
        await conn.copy_to_table('no_such_table', source=source())
    assert consumed == []
    await _assert_usable(conn)


async def test_copy_in_inside_transaction_rolls_back_with_it(conn, odd_table):
    await conn.execute('BEGIN')
    assert await conn.copy_to_table('odd_copy', source=[b'1\ta\n']) == 'COPY 1'
    assert await conn.copy_records_to_table('odd_copy', records=[(2, 'b')]) == 'COPY 1'
    assert conn.is_in_transaction()
    assert await _rows(conn, 'odd_copy') == [(1, 'a'), (2, 'b')]
    await conn.execute('ROLLBACK')
    assert await _rows(conn, 'odd_copy') == []


async def test_copy_in_cancelled_mid_copy_leaves_connection_usable(conn, odd_table):
    sent = asyncio.Event()

    async def stuck():
        yield b'1\ta\n2\tb\n'
        sent.set()
        await asyncio.Event().wait()
        yield b'3\tc\n'

    task = asyncio.ensure_future(conn.copy_to_table('odd_copy', source=stuck()))
    await asyncio.wait_for(sent.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _assert_usable(conn)
    assert await _rows(conn, 'odd_copy') == []


async def test_copy_in_timeout(conn, odd_table):
    async def slow():
        for i in range(100):
            await asyncio.sleep(0.05)
            yield b'%d\tx\n' % i
    with pytest.raises(asyncio.TimeoutError):
        await conn.copy_to_table('odd_copy', source=slow(), timeout=0.2)
    await _assert_usable(conn)
    assert await _rows(conn, 'odd_copy') == []


# --- copy_records_to_table ------------------------------------------------------------

async def test_copy_records_many_types_with_nulls(conn):
    await conn.execute('''
        CREATE TEMP TABLE typed (
            i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric, b bool,
            t text, vc varchar(10), by bytea, d date, ts timestamp, tz timestamptz,
            iv interval, u uuid, j jsonb, arr int[], tarr text[], inet_ inet)''')
    utc = datetime.timezone.utc
    records = [
        (1, 2, 3, 1.5, 2.25, decimal.Decimal('12345.678900'), True, 'tab\tnl\n\\ ü', 'short',
         b'\x00\xff\\', datetime.date(2024, 2, 29), datetime.datetime(2000, 1, 1, 12, 30),
         datetime.datetime(2020, 5, 6, 7, 8, 9, 123456, tzinfo=utc),
         datetime.timedelta(days=3, seconds=5), uuid.UUID(int=12345), '{"a": [1, null]}',
         [1, None, 3], ['x', None, '"q"'], ipaddress.ip_interface('10.0.0.1/8')),
        (None,) * 19,
        (-32768, -2 ** 31, -2 ** 63, float('inf'), float('-inf'), decimal.Decimal('NaN'),
         False, '', '', b'', datetime.date.max, datetime.datetime.min,
         datetime.datetime(1970, 1, 1, tzinfo=utc), datetime.timedelta(0), uuid.UUID(int=0),
         '[]', [], [], ipaddress.ip_interface('::1/64')),
    ]
    assert await conn.copy_records_to_table('typed', records=records) == 'COPY 3'
    rows = [tuple(r) for r in await conn.fetch('SELECT * FROM typed ORDER BY i2 NULLS FIRST')]
    by_first = {r[0]: r for r in rows}
    assert by_first[None] == (None,) * 19
    got = by_first[1]
    assert got[:13] == records[0][:13]
    assert got[13:16] == records[0][13:16]
    assert got[16:] == records[0][16:]
    got = by_first[-32768]
    assert got[:5] == records[2][:5]
    assert got[5].is_nan()
    assert got[6:] == records[2][6:]


async def test_copy_records_columns_subset_where_and_async_iterable(conn):
    await conn.execute("CREATE TEMP TABLE cr (id int, name text DEFAULT 'anon', score int)")

    async def records():
        for i in range(10):
            await asyncio.sleep(0)
            yield (i * 10, i)

    assert await conn.copy_records_to_table('cr', records=records(), columns=['score', 'id'],
                                            where='id % 2 = 0') == 'COPY 5'
    assert await _rows(conn, 'cr') == [(i, 'anon', i * 10) for i in range(0, 10, 2)]


async def test_copy_records_empty_input(conn):
    await conn.execute('CREATE TEMP TABLE e (a int)')
    assert await conn.copy_records_to_table('e', records=[]) == 'COPY 0'

    async def nothing():
        return
        yield
    assert await conn.copy_records_to_table('e', records=nothing()) == 'COPY 0'


async def test_copy_records_large_generator(conn):
    await conn.execute('CREATE TEMP TABLE lg (a int8, b text)')
    count = 200_000
    assert await conn.copy_records_to_table(
        'lg', records=((i, 'v%d' % i) for i in range(count))) == f'COPY {count}'
    assert tuple(await conn.fetchrow('SELECT count(*), sum(a), max(b) FROM lg')) == \
        (count, count * (count - 1) // 2, 'v99999')


@pytest.mark.parametrize('as_async', [False, True], ids=['iterable', 'async-iterable'])
async def test_copy_records_bad_record_names_index_and_commits_nothing(conn, as_async):
    await conn.execute('CREATE TEMP TABLE br (a int, b text)')
    bad_index = 70_000
    records = [(i, 'r') for i in range(100_000)]
    records[bad_index] = ('not an int', 'r')

    async def agen():
        for r in records:
            yield r
    source = agen() if as_async else records
    with pytest.raises(exceptions.DataError) as info:
        await conn.copy_records_to_table('br', records=source)
    assert str(info.value).startswith(
        f"invalid input in record {bad_index}, column 'a': 'not an int'")
    assert await conn.fetchval('SELECT count(*) FROM br') == 0
    await _assert_usable(conn)


async def test_copy_records_wrong_length_record(conn):
    await conn.execute('CREATE TEMP TABLE wl (a int, b text)')
    with pytest.raises(exceptions.DataError, match='invalid record 2: expected 2 values, got 1'):
        await conn.copy_records_to_table('wl', records=[(1, 'a'), (2, 'b'), (3,)])
    assert await conn.fetchval('SELECT count(*) FROM wl') == 0
    await _assert_usable(conn)


async def test_copy_records_server_error_commits_nothing(conn):
    await conn.execute('CREATE TEMP TABLE uq (a int PRIMARY KEY)')
    with pytest.raises(exceptions.UniqueViolationError):
        await conn.copy_records_to_table(
            'uq', records=[(i,) for i in range(100_000)] + [(5,)])
    assert await conn.fetchval('SELECT count(*) FROM uq') == 0
    await _assert_usable(conn)
    with pytest.raises(exceptions.NotNullViolationError):
        await conn.copy_records_to_table('uq', records=[(1,), (None,), (3,)])
    await _assert_usable(conn)


async def test_copy_records_failing_iterator_is_reraised(conn):
    await conn.execute('CREATE TEMP TABLE fi (a int)')

    def records():
        for i in range(50_000):
            yield (i,)
        raise KeyError('gone')
    with pytest.raises(KeyError, match='gone'):
        await conn.copy_records_to_table('fi', records=records())
    assert await conn.fetchval('SELECT count(*) FROM fi') == 0
    await _assert_usable(conn)


class UnprintableError(Exception):
    """An exception whose message cannot be produced."""

    def __str__(self) -> str:
        raise RuntimeError('__str__ failed')


@pytest.mark.parametrize('source', ['records', 'async records', 'bytes', 'async bytes'])
async def test_copy_source_error_with_failing_str_is_reraised_and_connection_stays_open(
        conn, source):
    # The CopyFail message is made from the exception; its __str__ failing
    # must neither replace the caller's exception nor close the connection.
    await conn.execute('CREATE TEMP TABLE unprintable (a int)')

    def records():
        yield from [(i,) for i in range(10)]
        raise UnprintableError()

    async def arecords():
        for record in records():
            yield record

    def chunks():
        yield b'1\n2\n'
        raise UnprintableError()

    async def achunks():
        for chunk in chunks():
            yield chunk

    with pytest.raises(UnprintableError) as info:
        if source == 'records':
            await conn.copy_records_to_table('unprintable', records=records())
        elif source == 'async records':
            await conn.copy_records_to_table('unprintable', records=arecords())
        elif source == 'bytes':
            await conn.copy_to_table('unprintable', source=chunks())
        else:
            await conn.copy_to_table('unprintable', source=achunks())
    assert type(info.value) is UnprintableError
    assert not conn.is_closed()
    assert await conn.fetchval('SELECT count(*) FROM unprintable') == 0
    await _assert_usable(conn)


def test_copy_fail_reason_is_always_a_sendable_string():
    from mypgdriver.copy import copy_fail_reason
    assert copy_fail_reason(KeyError('gone')) == "KeyError: 'gone'"
    assert copy_fail_reason(UnprintableError()) == (
        'UnprintableError (its message could not be produced)')
    assert copy_fail_reason(ValueError('a\0b \udc80')) == 'ValueError: a\\0b \\udc80'
    assert len(copy_fail_reason(ValueError('x' * 5000))) == 1000


async def test_copy_records_missing_table_or_column(conn):
    with pytest.raises(exceptions.UndefinedTableError):
        await conn.copy_records_to_table('nope', records=[(1,)])
    await conn.execute('CREATE TEMP TABLE mc (a int)')
    with pytest.raises(exceptions.UndefinedColumnError):
        await conn.copy_records_to_table('mc', columns=['zz'], records=[(1,)])
    await _assert_usable(conn)


async def test_copy_records_cancelled_mid_copy(conn):
    await conn.execute('CREATE TEMP TABLE cc (a int)')
    sent = asyncio.Event()

    async def records():
        for i in range(1000):
            yield (i,)
        sent.set()
        await asyncio.Event().wait()
        yield (-1,)

    task = asyncio.ensure_future(conn.copy_records_to_table('cc', records=records()))
    await asyncio.wait_for(sent.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _assert_usable(conn)
    assert await conn.fetchval('SELECT count(*) FROM cc') == 0
    assert await conn.copy_records_to_table('cc', records=[(1,)]) == 'COPY 1'


async def test_copy_records_into_user_types(conn):
    await conn.execute("CREATE TYPE copy_mood AS ENUM ('sad', 'happy')")
    try:
        await conn.execute('CREATE TEMP TABLE ut (m copy_mood, ms copy_mood[])')
        assert await conn.copy_records_to_table(
            'ut', records=[('happy', ['sad', 'happy']), (None, None)]) == 'COPY 2'
        assert await _rows(conn, 'ut') == [('happy', ['sad', 'happy']), (None, None)]
    finally:
        await conn.execute('DROP TABLE IF EXISTS ut; DROP TYPE copy_mood')

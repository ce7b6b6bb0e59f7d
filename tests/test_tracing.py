"""OpenTelemetry spans and metrics of the asyncio API (mypgdriver/tracing.py), read back
from the SDK's in-memory span exporter and metric reader, on a live server."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from typing import Any, Iterator

import pytest

pytest.importorskip('opentelemetry.sdk', reason='needs opentelemetry-sdk (the test extra)')

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import mypgdriver  # noqa: E402
from mypgdriver import exceptions, tracing  # noqa: E402
from tests.support.waiting import apoll  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Telemetry:
    """The providers a test traces with, and what they collected."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer('test')

    def spans(self, name: str | None = None) -> list[Any]:
        spans = list(self.exporter.get_finished_spans())
        return spans if name is None else [s for s in spans if s.name == name]

    def clear(self) -> None:
        self.exporter.clear()

    def points(self, metric: str) -> list[Any]:
        """The data points of `metric` collected now."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in (data.resource_metrics if data is not None else ()):
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    tracing.instrument(tracer_provider=telemetry.tracer_provider,
                       meter_provider=telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        tracing.uninstrument()
        # Back to the automatic mode for the tests that run after these.
        tracing.TELEMETRY.mode = 'auto'


def connection_attributes(connect_kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        'db.system.name': 'postgresql',
        'db.namespace': connect_kwargs['database'],
        'server.address': connect_kwargs['host'],
        'server.port': connect_kwargs['port'],
    }


async def test_fetch_is_one_client_span_with_the_conventions_attributes(conn, otel,
                                                                       connect_kwargs):
    otel.clear()
    assert await conn.fetchval('SELECT $1::int + 1 AS n FROM pg_class LIMIT 1', 41) == 42
    [span] = otel.spans()
    assert span.name == 'SELECT pg_class'
    assert span.kind == SpanKind.CLIENT
    assert span.status.status_code == StatusCode.UNSET
    assert dict(span.attributes) == {
        **connection_attributes(connect_kwargs),
        'db.query.text': 'SELECT $1::int + 1 AS n FROM pg_class LIMIT 1',
        'db.query.summary': 'SELECT pg_class',
    }
    assert span.instrumentation_scope.name == 'mypgdriver'
    assert span.instrumentation_scope.version == mypgdriver.__version__


async def test_argument_values_are_never_in_the_span(conn, otel):
    otel.clear()
    secret = 'hunter2-do-not-log'
    await conn.fetchval('SELECT length($1::text)', secret)
    await conn.execute('SELECT $1::text', secret)
    stmt = await conn.prepare('SELECT $1::text')
    await stmt.fetchval(secret)
    await conn.executemany('SELECT $1::text', [(secret,), (secret,)])
    spans = otel.spans()
    assert len(spans) == 5
    for span in spans:
        assert all(secret not in str(value) for value in span.attributes.values())
        assert secret not in span.name


async def test_unique_violation_ends_the_span_with_its_sqlstate(conn, otel):
    await conn.execute('CREATE TEMP TABLE traced_unique (id int PRIMARY KEY)')
    await conn.execute('INSERT INTO traced_unique VALUES ($1)', 1)
    otel.clear()
    with pytest.raises(exceptions.UniqueViolationError) as caught:
        await conn.execute('INSERT INTO traced_unique VALUES ($1)', 1)
    [span] = otel.spans()
    assert span.name == 'INSERT traced_unique'
    assert span.attributes['db.response.status_code'] == '23505'
    assert span.attributes['error.type'] == '23505'
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == str(caught.value)
    # The metric has the same error.type, and no query text (opt-in there).
    [point] = [p for p in otel.points('db.client.operation.duration')
               if p.attributes.get('error.type') == '23505']
    assert point.count == 1
    assert 'db.query.text' not in point.attributes
    assert point.attributes['db.query.summary'] == 'INSERT traced_unique'


async def test_timeout_ends_the_span_with_timeout_error(conn, otel):
    otel.clear()
    with pytest.raises(asyncio.TimeoutError):
        await conn.fetch('SELECT pg_sleep(10)', timeout=0.2)
    [span] = otel.spans()
    assert span.attributes['error.type'] == 'TimeoutError'
    assert 'db.response.status_code' not in span.attributes
    assert span.status.status_code == StatusCode.ERROR
    assert 0.15 < (span.end_time - span.start_time) / 1e9 < 5
    # The connection is in sync, and the next call has its own span.
    assert await conn.fetchval('SELECT 7') == 7
    assert [s.attributes.get('error.type') for s in otel.spans()] == ['TimeoutError', None]


async def test_server_statement_timeout_is_its_sqlstate(conn, otel):
    await conn.execute("SET statement_timeout = '100ms'")
    otel.clear()
    with pytest.raises(exceptions.QueryCanceledError):
        await conn.fetch('SELECT pg_sleep(10)')
    [span] = otel.spans()
    assert span.attributes['error.type'] == '57014'
    assert span.attributes['db.response.status_code'] == '57014'


async def test_cancelled_task_ends_the_span_as_cancelled(conn, otel):
    otel.clear()
    task = asyncio.ensure_future(conn.fetch('SELECT pg_sleep(10)'))
    # until it is sent (a monitor's queries would be traced too)
    await apoll(lambda: conn.get_pipeline_stats().in_flight, lambda n: n == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [span] = otel.spans()
    assert span.attributes['error.type'] == 'asyncio.CancelledError'
    assert span.status.status_code == StatusCode.ERROR
    assert await conn.fetchval('SELECT 1') == 1


async def test_executemany_is_one_batch_span_with_its_size(conn, otel):
    await conn.execute('CREATE TEMP TABLE traced_batch (id int)')
    otel.clear()
    await conn.executemany('INSERT INTO traced_batch VALUES ($1)', [(1,), (2,), (3,)])
    [span] = otel.spans()
    assert span.name == 'BATCH INSERT traced_batch'
    assert span.attributes['db.operation.batch.size'] == 3
    assert span.attributes['db.operation.name'] == 'BATCH'
    assert span.attributes['db.query.summary'] == 'BATCH INSERT traced_batch'
    assert span.attributes['db.query.text'] == 'INSERT INTO traced_batch VALUES ($1)'


async def test_executemany_of_an_iterator_counts_the_rows_it_read(conn, otel):
    await conn.execute('CREATE TEMP TABLE traced_iter (id int)')
    otel.clear()
    await conn.executemany('INSERT INTO traced_iter VALUES ($1)', ((i,) for i in range(5)))

    async def rows():
        for i in range(2):
            yield (i,)
    await conn.executemany('INSERT INTO traced_iter VALUES ($1)', rows())
    assert [s.attributes['db.operation.batch.size'] for s in otel.spans()] == [5, 2]
    assert await conn.fetchval('SELECT count(*) FROM traced_iter') == 7


async def test_executemany_of_one_row_is_a_single_operation(conn, otel):
    await conn.execute('CREATE TEMP TABLE traced_one (id int)')
    otel.clear()
    await conn.executemany('INSERT INTO traced_one VALUES ($1)', [(1,)])
    [span] = otel.spans()
    assert span.name == 'INSERT traced_one'
    assert 'db.operation.batch.size' not in span.attributes
    assert 'db.operation.name' not in span.attributes


async def test_pipelined_calls_each_get_their_own_span(conn, otel):
    otel.clear()
    parents = [otel.tracer.start_span(f'request {i}') for i in range(3)]

    async def call(i: int) -> Any:
        from opentelemetry import trace
        with trace.use_span(parents[i], end_on_exit=False):
            return await conn.fetchval('SELECT pg_sleep(0.2)::text || $1::text', str(i))
    assert await asyncio.gather(*(call(i) for i in range(3))) == ['0', '1', '2']
    assert conn.get_pipeline_stats().max_in_flight >= 3     # they were in flight together
    spans = otel.spans()
    assert len(spans) == 3
    assert len({s.context.span_id for s in spans}) == 3
    # Each under its own caller's span, and all in flight at once.
    assert sorted(s.parent.span_id for s in spans) == sorted(
        p.get_span_context().span_id for p in parents)
    assert max(s.start_time for s in spans) < min(s.end_time for s in spans)
    for span in spans:
        assert (span.end_time - span.start_time) / 1e9 >= 0.19


async def test_span_is_a_child_of_the_callers_current_span(conn, otel):
    otel.clear()
    with otel.tracer.start_as_current_span('handle request') as parent:
        await conn.fetchval('SELECT 1')
    spans = otel.spans()
    [child] = [s for s in spans if s.name == 'SELECT']
    assert child.parent.span_id == parent.get_span_context().span_id
    assert child.context.trace_id == parent.get_span_context().trace_id


async def test_prepared_statement_cursor_and_copy_have_spans(conn, otel, tmp_path):
    await conn.execute('CREATE TEMP TABLE traced_copy (id int)')
    otel.clear()
    stmt = await conn.prepare('SELECT id FROM traced_copy WHERE id > $1')
    await stmt.fetch(0)
    await conn.copy_to_table('traced_copy', source=[b'1\n2\n'])
    await conn.copy_records_to_table('traced_copy', records=[(3,)])
    await conn.copy_from_query('SELECT id FROM traced_copy WHERE id > $1', 1,
                               output=str(tmp_path / 'out'))
    async with conn.transaction():
        cur = await conn.cursor('SELECT id FROM traced_copy ORDER BY id')
        assert [r['id'] for r in await cur.fetch(2)] == [1, 2]
    spans = otel.spans()
    names = [s.name for s in spans]
    assert names == ['PREPARE SELECT traced_copy', 'SELECT traced_copy', 'COPY traced_copy',
                     'COPY traced_copy', 'COPY SELECT traced_copy', 'BEGIN',
                     'SELECT traced_copy', 'SELECT traced_copy', 'COMMIT']
    prepare = spans.pop(0)
    assert prepare.attributes['db.operation.name'] == 'PREPARE'
    assert prepare.attributes['db.query.text'] == 'SELECT id FROM traced_copy WHERE id > $1'
    copy = spans[1]
    assert copy.attributes['db.operation.name'] == 'COPY'
    assert copy.attributes['db.collection.name'] == 'traced_copy'
    assert copy.attributes['db.query.text'] == 'COPY "traced_copy" FROM STDIN'
    # copy_from_query writes the values into the COPY: the span has the $n text.
    assert spans[3].attributes['db.query.text'] == (
        'COPY (SELECT id FROM traced_copy WHERE id > $1) TO STDOUT')
    assert 'db.collection.name' not in spans[3].attributes


async def test_copy_with_schema_names_the_qualified_table(conn, otel):
    otel.clear()
    out: list[bytes] = []

    async def write(data: bytes) -> None:
        out.append(data)
    await conn.copy_from_table('pg_am', schema_name='pg_catalog', columns=['amname'],
                               output=write)
    [span] = otel.spans()
    assert span.name == 'COPY pg_catalog.pg_am'
    assert span.attributes['db.collection.name'] == 'pg_catalog.pg_am'
    assert b'btree' in b''.join(out)


async def test_connect_span(otel, connect_kwargs):
    otel.clear()
    conn = await mypgdriver.connect(**connect_kwargs)
    await conn.close()
    [span] = otel.spans('connect')
    assert span.kind == SpanKind.CLIENT
    assert dict(span.attributes) == connection_attributes(connect_kwargs)
    assert span.status.status_code == StatusCode.UNSET


async def test_failed_connect_span_has_the_servers_sqlstate(otel, connect_kwargs):
    otel.clear()
    with pytest.raises(exceptions.InvalidCatalogNameError):
        await mypgdriver.connect(**{**connect_kwargs, 'database': 'no_such_db_traced'})
    [span] = otel.spans('connect')
    assert span.attributes['error.type'] == '3D000'
    assert span.attributes['db.response.status_code'] == '3D000'
    assert span.attributes['db.namespace'] == 'no_such_db_traced'
    assert span.status.status_code == StatusCode.ERROR


async def test_namespace_has_the_schema_of_search_path(otel, connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs,
                                    server_settings={'search_path': 'pg_catalog, public'})
    try:
        otel.clear()
        await conn.fetchval('SELECT 1')
        [span] = otel.spans()
        assert span.attributes['db.namespace'] == f"{connect_kwargs['database']}|pg_catalog"
    finally:
        await conn.close()


async def test_pool_acquire_span_and_metrics(otel, connect_kwargs):
    name = f"{connect_kwargs['host']}:{connect_kwargs['port']}/{connect_kwargs['database']}"
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=2) as pool:
        otel.clear()
        async with pool.acquire() as con:
            assert await con.fetchval('SELECT 1') == 1
            count = {p.attributes['db.client.connection.state']: p.value
                     for p in otel.points('db.client.connection.count')
                     if p.attributes['db.client.connection.pool.name'] == name}
            assert count == {'idle': 0, 'used': 1}
        [acquire] = otel.spans('acquire')
        assert acquire.kind == SpanKind.INTERNAL
        assert dict(acquire.attributes) == {'db.system.name': 'postgresql',
                                            'db.client.connection.pool.name': name}
        [query] = otel.spans('SELECT')
        assert query.attributes['db.query.text'] == 'SELECT 1'
        [wait] = [p for p in otel.points('db.client.connection.wait_time')
                  if p.attributes['db.client.connection.pool.name'] == name]
        assert wait.count == 1
        count = {p.attributes['db.client.connection.state']: p.value
                 for p in otel.points('db.client.connection.count')
                 if p.attributes['db.client.connection.pool.name'] == name}
        assert count == {'idle': 1, 'used': 0}
        [limit] = [p for p in otel.points('db.client.connection.max')
                   if p.attributes['db.client.connection.pool.name'] == name]
        assert limit.value == 2


async def test_pool_pending_requests_and_timed_out_acquire(otel, connect_kwargs):
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1) as pool:
        name = pool._otel_pool_name
        async with pool.acquire():
            assert name is not None
            waiter = asyncio.ensure_future(pool.acquire(timeout=0.3))
            # until the waiter is counted (it times out 0.3 s after it was made)
            [pending] = await apoll(
                lambda: [p for p in otel.points('db.client.connection.pending_requests')
                         if p.attributes['db.client.connection.pool.name'] == name],
                lambda points: [p.value for p in points] == [1], timeout=0.3)
            assert pending.value == 1
            with pytest.raises(asyncio.TimeoutError):
                await waiter
        failed = [s for s in otel.spans('acquire') if 'error.type' in s.attributes]
        assert [s.attributes['error.type'] for s in failed] == ['TimeoutError']
        [timeouts] = [p for p in otel.points('db.client.connection.timeouts')
                      if p.attributes['db.client.connection.pool.name'] == name]
        assert timeouts.value == 1


async def test_second_pool_to_the_same_place_gets_a_unique_name(otel, connect_kwargs):
    async with mypgdriver.create_pool(**connect_kwargs, min_size=0, max_size=1) as one, \
            mypgdriver.create_pool(**connect_kwargs, min_size=0, max_size=1) as two:
        async with one.acquire(), two.acquire():
            pass
        assert one._otel_pool_name is not None and two._otel_pool_name is not None
        assert two._otel_pool_name == one._otel_pool_name + '#2'


async def test_pool_shortcut_call_has_its_query_span(otel, connect_kwargs):
    async with mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1) as pool:
        otel.clear()
        assert await pool.fetchval('SELECT $1::int', 5) == 5
        assert [s.name for s in otel.spans() if s.name != 'acquire'] == ['SELECT']


async def test_operation_duration_histogram(conn, otel, connect_kwargs):
    await conn.fetchval('SELECT 1 FROM pg_am LIMIT 1')
    [point] = [p for p in otel.points('db.client.operation.duration')
               if p.attributes.get('db.query.summary') == 'SELECT pg_am']
    assert dict(point.attributes) == {**connection_attributes(connect_kwargs),
                                      'db.query.summary': 'SELECT pg_am'}
    assert point.count == 1
    assert 0 < point.sum < 5
    assert list(point.explicit_bounds) == list(tracing.DURATION_BUCKETS)


async def test_no_span_and_no_error_when_tracing_is_off(conn, otel):
    tracing.uninstrument()
    otel.clear()
    assert await conn.fetchval('SELECT 1') == 1
    await conn.executemany('SELECT $1::int', [(1,), (2,)])
    assert otel.spans() == []
    assert tracing.is_live() is False


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_without_opentelemetry_installed_queries_run_untraced(pg_cluster):
    out = run_python(f"""
        import asyncio, sys
        sys.modules['opentelemetry'] = None     # as if the extra were not installed
        import mypgdriver
        from mypgdriver import tracing

        async def main():
            conn = await mypgdriver.connect({pg_cluster.dsn()!r})
            print(await conn.fetchval('SELECT 41 + 1'), tracing.is_live())
            try:
                tracing.instrument()
            except ImportError as e:
                print('ImportError', 'opentelemetry-api' in str(e))
            await conn.close()
        asyncio.run(main())
    """)
    assert out.split('\n')[:2] == ['42 False', 'ImportError True']


def test_global_provider_set_before_connect_is_used_without_instrument(pg_cluster):
    out = run_python(f"""
        import asyncio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import mypgdriver
        from mypgdriver import tracing

        async def main():
            early = await mypgdriver.connect({pg_cluster.dsn()!r})
            await early.fetchval('SELECT 1')
            print(tracing.is_live())
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            conn = await mypgdriver.connect({pg_cluster.dsn()!r})
            await conn.fetchval('SELECT 2')
            await early.fetchval('SELECT 3')
            print(tracing.is_live(), [s.name for s in exporter.get_finished_spans()])
            await conn.close()
            await early.close()
        asyncio.run(main())
    """)
    assert out.split('\n')[:2] == ['False', "True ['connect', 'SELECT', 'SELECT']"]


@pytest.mark.parametrize('query, summary', [
    ('SELECT 1', 'SELECT'),
    ('select * from users u join orders o on o.uid = u.id', 'select users orders'),
    ('SELECT * FROM "song list", artists WHERE x = 1', 'SELECT "song list" artists'),
    ('INSERT INTO shipping_details (order_id, address) SELECT order_id, address '
     'FROM orders WHERE order_id = $1', 'INSERT shipping_details SELECT orders'),
    ('SELECT order_date FROM (SELECT * FROM orders o JOIN customers c ON true) t',
     'SELECT SELECT orders customers'),
    ("UPDATE public.accounts SET note = 'FROM x' WHERE id = $1", 'UPDATE public.accounts'),
    ('DELETE FROM t WHERE id IN (SELECT id FROM u)', 'DELETE t SELECT u'),
    ('-- a comment FROM nowhere\nSELECT /* FROM x */ 1', 'SELECT'),
    ('SELECT $$ FROM y $$, $tag$ FROM z $tag$', 'SELECT'),
    ('BEGIN ISOLATION LEVEL SERIALIZABLE', 'BEGIN'),
    ('CREATE TABLE IF NOT EXISTS t (id int)', 'CREATE t'),
    ('SET search_path = app', 'SET'),
    ('SELECT 1; SELECT 2 FROM t', 'SELECT SELECT t'),
    ('SELECT * FROM t FOR UPDATE', 'SELECT t'),
    ('', ''),
])
def test_query_summary(query, summary):
    assert tracing.summarize(query) == summary


def test_query_summary_is_cut_at_255_characters_between_words():
    query = 'SELECT * FROM ' + ', '.join(f'table_{i:03}' for i in range(100))
    summary = tracing.summarize(query)
    assert len(summary) <= 255
    assert summary.startswith('SELECT table_000 table_001')
    assert summary.split(' ')[-1].startswith('table_')
    assert len(summary.split(' ')[-1]) == len('table_000')


@pytest.mark.parametrize('error, name', [
    (asyncio.TimeoutError(), 'TimeoutError'),
    (TimeoutError(), 'TimeoutError'),
    (asyncio.CancelledError(), 'asyncio.CancelledError'),
    (KeyboardInterrupt(), 'KeyboardInterrupt'),
    (exceptions.InterfaceError('x'), 'mypgdriver.exceptions.InterfaceError'),
    (ValueError('x'), 'ValueError'),
])
def test_error_type_of_client_errors(error, name):
    assert tracing.error_type(error) == name

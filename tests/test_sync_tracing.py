"""OpenTelemetry spans and metrics of the sync API (mypgdriver.sync), on a live server.

The sync API drives the asyncio core's coroutines in the calling thread (the
glue), so a span's parent is that thread's current span: checked with
threads that each have their own.
"""
from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip('opentelemetry.sdk', reason='needs opentelemetry-sdk (the test extra)')

from opentelemetry import trace  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

import mypgdriver.sync  # noqa: E402
from mypgdriver import exceptions  # noqa: E402
from tests.test_tracing import Telemetry, otel  # noqa: E402,F401  (a fixture)


def attributes_of(pg_cluster: Any) -> dict[str, Any]:
    return {'db.system.name': 'postgresql', 'db.namespace': 'postgres',
            'server.address': pg_cluster.host, 'server.port': pg_cluster.port}


def test_sync_fetch_span(sync_conn: Any, otel: Telemetry, pg_cluster: Any) -> None:  # noqa: F811
    otel.clear()
    assert sync_conn.fetchval('SELECT $1::int FROM pg_am LIMIT 1', 3) == 3
    [span] = otel.spans()
    assert span.name == 'SELECT pg_am'
    assert span.kind == SpanKind.CLIENT
    assert dict(span.attributes) == {**attributes_of(pg_cluster),
                                     'db.query.text': 'SELECT $1::int FROM pg_am LIMIT 1',
                                     'db.query.summary': 'SELECT pg_am'}


def test_sync_span_parent_is_the_calling_threads_current_span(
        sync_conn: Any, otel: Telemetry) -> None:  # noqa: F811
    otel.clear()
    parents: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with otel.tracer.start_as_current_span(f'thread {i}') as parent:
                parents[i] = parent.get_span_context()
                for _ in range(3):
                    assert sync_conn.fetchval('SELECT $1::int', i) == i
        except BaseException as e:      # (reported by the test, not lost in the thread)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    queries = otel.spans('SELECT')
    assert len(queries) == 6
    by_parent: dict[int, int] = {}
    for span in queries:
        by_parent[span.parent.span_id] = by_parent.get(span.parent.span_id, 0) + 1
        [owner] = [c for c in parents.values() if c.span_id == span.parent.span_id]
        assert span.context.trace_id == owner.trace_id
    assert sorted(by_parent.values()) == [3, 3]
    # Outside any span: a root span, not a leftover parent of another thread.
    otel.clear()
    sync_conn.fetchval('SELECT 1')
    [root] = otel.spans()
    assert root.parent is None
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_sync_unique_violation_and_timeout(sync_conn: Any, otel: Telemetry) -> None:  # noqa: F811
    sync_conn.execute('CREATE TEMP TABLE traced_sync (id int PRIMARY KEY)')
    sync_conn.execute('INSERT INTO traced_sync VALUES ($1)', 1)
    otel.clear()
    with pytest.raises(exceptions.UniqueViolationError):
        sync_conn.execute('INSERT INTO traced_sync VALUES ($1)', 1)
    with pytest.raises(TimeoutError):
        sync_conn.fetch('SELECT pg_sleep(10)', timeout=0.2)
    unique, timeout = otel.spans()
    assert unique.attributes['error.type'] == '23505'
    assert unique.attributes['db.response.status_code'] == '23505'
    assert unique.status.status_code == StatusCode.ERROR
    assert timeout.attributes['error.type'] == 'TimeoutError'
    assert 'db.response.status_code' not in timeout.attributes
    assert timeout.status.status_code == StatusCode.ERROR
    assert sync_conn.fetchval('SELECT 2') == 2


def test_sync_executemany_batch_and_prepared(sync_conn: Any, otel: Telemetry) -> None:  # noqa: F811
    sync_conn.execute('CREATE TEMP TABLE traced_sync_batch (id int)')
    otel.clear()
    sync_conn.executemany('INSERT INTO traced_sync_batch VALUES ($1)', [(1,), (2,)])
    stmt = sync_conn.prepare('SELECT count(*) FROM traced_sync_batch')
    assert stmt.fetchval() == 2
    batch, prepare, prepared = otel.spans()
    assert batch.name == 'BATCH INSERT traced_sync_batch'
    assert prepare.name == 'PREPARE SELECT traced_sync_batch'
    assert batch.attributes['db.operation.batch.size'] == 2
    assert prepared.name == 'SELECT traced_sync_batch'


def test_sync_connect_span(dsn: str, otel: Telemetry, pg_cluster: Any,  # noqa: F811
                           no_event_loop: list[str]) -> None:  # noqa: F811
    otel.clear()
    with otel.tracer.start_as_current_span('startup') as parent:
        conn = mypgdriver.sync.connect(dsn)
    conn.close()
    [span] = otel.spans('connect')
    assert dict(span.attributes) == attributes_of(pg_cluster)
    assert span.parent.span_id == parent.get_span_context().span_id


def test_sync_pool_acquire_span_and_metrics(dsn: str, otel: Telemetry,  # noqa: F811
                                            pg_cluster: Any,
                                            no_event_loop: list[str]) -> None:  # noqa: F811
    name = f'{pg_cluster.host}:{pg_cluster.port}/postgres'
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=2) as pool:
        otel.clear()
        with pool.acquire() as con:
            assert con.fetchval('SELECT 1') == 1
            count = {p.attributes['db.client.connection.state']: p.value
                     for p in otel.points('db.client.connection.count')
                     if p.attributes['db.client.connection.pool.name'] == name}
            assert count == {'idle': 0, 'used': 1}
        [acquire] = otel.spans('acquire')
        assert acquire.kind == SpanKind.INTERNAL
        assert dict(acquire.attributes) == {'db.system.name': 'postgresql',
                                            'db.client.connection.pool.name': name}
        [wait] = [p for p in otel.points('db.client.connection.wait_time')
                  if p.attributes['db.client.connection.pool.name'] == name]
        assert wait.count == 1
        count = {p.attributes['db.client.connection.state']: p.value
                 for p in otel.points('db.client.connection.count')
                 if p.attributes['db.client.connection.pool.name'] == name}
        assert count == {'idle': 1, 'used': 0}
        # A shortcut call acquires, queries and releases: both spans.
        otel.clear()
        assert pool.fetchval('SELECT 5') == 5
        assert sorted(s.name for s in otel.spans()) == ['SELECT', 'acquire']

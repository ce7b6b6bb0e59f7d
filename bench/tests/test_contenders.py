"""The contenders of issue 25 against a real server: they move the rows the other drivers move.

psqlpy, mypgdriver's DB-API module (`mypgdriver-dbapi`) and each driver's
dict rows on pg_type (`psycopg-dict`, `mypgdriver-dict`, ...).  Each
fetch workload runs once through the contender's session, the very calls
the bench measures, and the rows it fetched are compared with asyncpg's
for the same query (as tuples, or as dicts for the dict-row contenders);
COPY and batches must leave their records in the table, and the cursor
must stream every row.  The rows are caught by shadowing `len` in the
driver module for the test: every fetch builder returns `len(rows)`.

A contender whose package is not installed skips; one whose mypgdriver
API does not exist yet (`mypgdriver.rows`, `mypgdriver.dbapi`) skips with
the reason its cells show in a run.
"""
from __future__ import annotations

import asyncio
import glob
import importlib
import json
import os
import shutil
import threading
import uuid
from typing import Any

import pytest

from bench import drivers, pool_scenario
from bench.drivers.base import ContenderUnavailable
from bench.server import DSN_ENV, BenchServer
from bench.workloads import BY_NAME, CURSOR_BATCH, Workload

asyncpg = pytest.importorskip("asyncpg")
if (not os.environ.get(DSN_ENV) and shutil.which("initdb") is None
        and not glob.glob("/usr/lib/postgresql/*/bin/initdb")):
    pytest.skip("no PostgreSQL server binaries", allow_module_level=True)

FETCH_WORKLOADS = [w.name for w in BY_NAME.values() if w.kind == "fetch"]

# contender -> (the package it needs, the module whose code fetches its rows)
CONTENDERS: dict[str, tuple[str, str]] = {
    "psqlpy": ("psqlpy", "bench.drivers.psqlpy_driver"),
    "mypgdriver-dbapi": ("mypgdriver", "bench.drivers.mypgdriver_dbapi_driver"),
    "psqlpy-dict": ("psqlpy", "bench.drivers.psqlpy_driver"),
    "psycopg-dict": ("psycopg", "bench.drivers.psycopg_driver"),
    "psycopg-async-dict": ("psycopg", "bench.drivers.psycopg_async_driver"),
    "psycopg2-dict": ("psycopg2", "bench.drivers.psycopg2_driver"),
    "mypgdriver-dict": ("mypgdriver", "bench.drivers.asyncpg_driver"),
    "mypgdriver-sync-dict": ("mypgdriver", "bench.drivers.mypgdriver_sync_driver"),
}
DICT_CONTENDERS = [name for name in CONTENDERS if name.endswith("-dict")]
TUPLE_CONTENDERS = [name for name in CONTENDERS if not name.endswith("-dict")]


@pytest.fixture(scope="module")
def server():
    server = BenchServer.start()
    yield server
    server.stop()


def _load(contender: str) -> Any:
    package, _ = CONTENDERS[contender]
    pytest.importorskip(package)
    return drivers.load(contender)


#: How long one iteration of a workload may take here (each takes well under a
#: second).  A peer's asyncio call that never completes (psqlpy 0.13's
#: copy_records_to_table once waited for ever with its backend in COPY, on a
#: loaded machine) skips its test instead of hanging the suite; mypgdriver's
#: own contenders fail.
ITERATION_LIMIT = 60.0


def _bounded(iteration: Any, name: str, w: Workload, params: dict[str, Any]) -> int:
    """Run `iteration` in a thread of its own, given up after ITERATION_LIMIT seconds.

    A thread, not asyncio.wait_for(): a peer's call that never completes may
    not complete its cancellation either, and its thread is left behind.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome['rows'] = iteration()
        except BaseException as exc:  # re-raised in the test's thread
            outcome['error'] = exc

    thread = threading.Thread(target=target, name=f'iteration of {name}', daemon=True)
    thread.start()
    thread.join(ITERATION_LIMIT)
    if thread.is_alive():
        message = f'{name} did not complete one {w.name} iteration in {ITERATION_LIMIT:.0f} s'
        _end_other_sessions(params)   # the hung one holds its table's locks
        if name.startswith('mypgdriver'):
            pytest.fail(message)
        pytest.skip(f'{message} (the peer hung)')
    if 'error' in outcome:
        raise outcome['error']
    return int(outcome['rows'])


def _end_other_sessions(params: dict[str, Any]) -> None:
    """Terminate every other client session of the bench server's database."""
    import mypgdriver.sync

    with mypgdriver.sync.connect(**params) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
                     "AND datname = current_database()")


def _run_once(driver: Any, params: dict[str, Any], w: Workload) -> int:
    """Open a session, run one iteration, close it; skip where the contender cannot run yet."""
    try:
        if driver.is_async:
            async def once() -> int:
                session = await driver.open(params, w)
                try:
                    return await session.run()
                finally:
                    await session.close()

            return _bounded(lambda: asyncio.run(once()), driver.name, w, params)
        session = driver.open(params, w)
        try:
            return session.run()
        finally:
            session.close()
    except ContenderUnavailable as exc:
        pytest.skip(f"skipped: {exc}")


class _RowCatcher:
    """Stands in for `len` in a driver module: keeps the rows it is asked to count."""

    def __init__(self) -> None:
        self.rows: list[Any] = []

    def __call__(self, rows: Any) -> int:
        self.rows = list(rows)
        return len(self.rows)


def _fetched(monkeypatch: pytest.MonkeyPatch, contender: str, server: BenchServer,
             w: Workload) -> list[Any]:
    """The rows one iteration of `contender` fetched for `w`."""
    driver = _load(contender)
    catcher = _RowCatcher()
    monkeypatch.setattr(importlib.import_module(CONTENDERS[contender][1]), "len", catcher,
                        raising=False)
    count = _run_once(driver, server.params, w)
    assert count == len(catcher.rows)
    return catcher.rows


def _asyncpg_rows(server: BenchServer, sql: str, *args: Any) -> list[Any]:
    async def fetch() -> list[Any]:
        conn = await asyncpg.connect(**server.params)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(fetch())


@pytest.fixture
def tables(server):
    """Creates a workload's tables (call it with the workload) and drops them afterwards."""
    made: list[Workload] = []

    def make(w: Workload) -> Workload:
        for sql in w.teardown + w.setup:
            server.psql(sql)
        made.append(w)
        return w

    yield make
    for w in made:
        for sql in w.teardown:
            server.psql(sql)


def _same_value(reference: Any, value: Any) -> bool:
    """Whether a contender's value is asyncpg's, allowing for other forms of the same value.

    Where the drivers differ in the Python type only: jsonb (asyncpg returns
    its text, psqlpy the decoded value), "char" (pg_type's one-byte
    columns: bytes in asyncpg, str in psqlpy and psycopg) and uuid (a str
    in psqlpy).
    """
    if isinstance(reference, str) and isinstance(value, (dict, list)):
        return bool(json.loads(reference) == value)
    if isinstance(reference, bytes) and len(reference) == 1 and isinstance(value, str):
        return reference.decode() == value
    if isinstance(reference, uuid.UUID) and isinstance(value, str):
        return str(reference) == value
    return bool(type(reference) is type(value) and reference == value) or (
        isinstance(reference, uuid.UUID) and reference == value)


def _by_first_columns(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # The workloads have no ORDER BY; their first two columns identify a row.
    return sorted(rows, key=lambda row: repr(row[:2]))


def _assert_rows_match(reference: list[tuple[Any, ...]], rows: list[tuple[Any, ...]]) -> None:
    assert len(rows) == len(reference)
    for ref, row in zip(_by_first_columns(reference), _by_first_columns(rows)):
        assert len(row) == len(ref)
        differ = [(i, r, v) for i, (r, v) in enumerate(zip(ref, row)) if not _same_value(r, v)]
        assert not differ, (ref, row)


@pytest.mark.parametrize("workload", FETCH_WORKLOADS)
@pytest.mark.parametrize("contender", TUPLE_CONTENDERS)
def test_contender_fetches_asyncpgs_rows(monkeypatch, server, tables, contender, workload):
    w = tables(BY_NAME[workload])
    rows = _fetched(monkeypatch, contender, server, w)
    assert rows, "no rows"
    assert all(isinstance(row, tuple) for row in rows), type(rows[0])
    _assert_rows_match([tuple(r) for r in _asyncpg_rows(server, w.sql, *w.args)], rows)


@pytest.mark.parametrize("contender", DICT_CONTENDERS)
def test_dict_row_contender_fetches_pg_type_as_dicts(monkeypatch, server, tables, contender):
    w = tables(BY_NAME["pg_type"])
    rows = _fetched(monkeypatch, contender, server, w)
    reference = [dict(r) for r in _asyncpg_rows(server, w.sql, *w.args)]
    # dicts (psycopg2's RealDictRow is a dict subclass), keyed by column name
    # in the query's order.
    assert all(isinstance(row, dict) for row in rows), type(rows[0])
    assert all(list(row) == list(reference[0]) for row in rows)
    _assert_rows_match([tuple(row.values()) for row in reference],
                       [tuple(row.values()) for row in rows])


def _table_rows(server: BenchServer, w: Workload) -> list[tuple[Any, ...]]:
    columns = ", ".join(w.columns)
    return [tuple(r) for r in _asyncpg_rows(
        server, f"SELECT {columns}, count(*) FROM {w.table} GROUP BY {columns}")]


@pytest.mark.parametrize("workload", ["copyfrom", "batch"])
@pytest.mark.parametrize("contender", TUPLE_CONTENDERS)
def test_contender_stores_every_record(server, tables, contender, workload):
    if contender.startswith("psqlpy") and workload == "copyfrom":
        # psqlpy 0.13's binary copy_records_to_table hung twice here with its
        # backend in COPY (ClientRead) and the whole test process asleep:
        # ITERATION_LIMIT's thread could not give up on it, and the suite
        # hung.  A peer's defect, not ours: its rows are not checked here.
        pytest.skip("psqlpy's binary COPY can hang the test process (psqlpy 0.13)")
    w = tables(BY_NAME[workload])
    assert _run_once(_load(contender), server.params, w) == w.rows
    # Every record arrived once, with each column's value intact.
    assert _table_rows(server, w) == [(*w.records[0], w.rows)]


@pytest.mark.parametrize("contender", TUPLE_CONTENDERS)
def test_contender_streams_the_whole_cursor(server, contender):
    w = BY_NAME["cursor_stream"]
    assert _run_once(_load(contender), server.params, w) == 100_000
    # The cursor's transaction is over: nothing is left open on the server.
    assert server.psql("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in%'"
                       ).strip() == "0"


def test_psqlpy_cursor_fetches_the_suites_batch_per_round_trip(monkeypatch, server):
    # The cursor asks for CURSOR_BATCH rows per FETCH, as every driver does.
    pytest.importorskip("psqlpy")
    from bench.drivers import psqlpy_driver

    sizes: list[int] = []

    def count_batch(rows: Any) -> int:
        sizes.append(len(list(rows)))
        return sizes[-1]

    monkeypatch.setattr(psqlpy_driver, "len", count_batch, raising=False)
    assert _run_once(psqlpy_driver.DRIVER, server.params, BY_NAME["cursor_stream"]) == 100_000
    # 50 full batches, and the empty FETCH that ends the iteration (if any).
    assert [size for size in sizes if size] == [CURSOR_BATCH] * (100_000 // CURSOR_BATCH)


# -- psqlpy's pool in the pool scenario ------------------------------------------------


def test_psqlpy_pool_runs_requests_and_its_updates_reach_the_table(server):
    pytest.importorskip("psqlpy")
    for sql in pool_scenario.SETUP_SQL:
        server.psql(sql)
    try:
        plans = pool_scenario.make_plans()[:50]
        updates = sum(1 for plan in plans for kind, _ in plan if kind == "update")
        contender = pool_scenario.open_contender("psqlpy-pool", server.params, 3, "query")

        async def serve() -> None:
            await contender.open()
            try:
                await asyncio.gather(*(contender.request(plan) for plan in plans))
            finally:
                await contender.close()

        asyncio.run(serve())
        hits = server.psql(f"SELECT sum(hits) FROM {pool_scenario.TABLE}").strip()
        assert int(hits) == updates > 0
    finally:
        for sql in pool_scenario.TEARDOWN_SQL:
            server.psql(sql)

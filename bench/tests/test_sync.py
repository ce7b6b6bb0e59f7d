"""mypgdriver's blocking API in the suite: the `mypgdriver-sync` contender and the sync pool scenario.

The first part needs no database (options, plan, the threaded measuring
loop with fake pools, the report); the end-to-end test at the bottom runs
`python -m bench` on a throwaway server for a few seconds.
"""
from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from bench import cli, drivers, memory, report, sync_pool_scenario
from bench.contenders import SYNC_POOL, THROUGHPUT, driver_of
from bench.pool_scenario import make_plans
from bench.runner import Options, PoolCell, RunResults, plan
from bench.server import REPO_ROOT

from .markdown import squeeze

SYNC = "mypgdriver-sync"


def _options(argv: list[str]) -> Options:
    return cli.options_from(cli.parser().parse_args(argv))


# -- the contender and the scenario in the suite's options and plan ------------------------


def test_mypgdriver_sync_is_a_default_driver_run_on_threads():
    assert SYNC in cli.ALL_DRIVERS
    assert SYNC in _options([]).drivers
    assert SYNC in THROUGHPUT.contenders
    assert drivers.load(SYNC).is_async is False  # the worker runs it on threads
    assert SYNC in memory.probe_drivers([SYNC, "pgbench"])


def test_sync_pool_is_a_default_workload_with_its_own_levels():
    o = _options([])
    assert "sync_pool" in o.scenarios
    assert (o.sync_pool_users, o.pool_size) == ([10, 50], 10)
    o = _options(["--workloads", "sync_pool", "--sync-pool-users", "4,8", "--pool-size", "3"])
    assert (o.workloads, o.scenarios, o.sync_pool_users, o.pool_size) == (
        [], ["sync_pool"], [4, 8], 3)
    assert cli.run_kind(cli.parser().parse_args(["--sync-pool-users", "4"]),
                        _options(["--sync-pool-users", "4"]))[1] == ["--sync-pool-users"]


def test_plan_runs_psycopg_pool_first_and_last_at_each_level():
    o = _options(["--workloads", "sync_pool", "--rounds", "1"])
    cells = plan(o)
    assert all(isinstance(c, PoolCell) and c.scenario == "sync_pool" for c in cells)
    assert [(c.users, c.label) for c in cells] == [
        (users, label) for users in (10, 50)
        for label in ("psycopg-sync-pool", "mypgdriver-sync-pool", "psycopg2-pool",
                      "psycopg-sync-pool (A/A)")]
    assert all(c.pool_size is None for c in cells)  # --pool-size, the same for every pool
    # Only the pools of the chosen drivers.
    o = _options(["--workloads", "sync_pool", "--drivers", "psycopg2,mypgdriver-sync"])
    assert {c.label for c in plan(o)} == {"mypgdriver-sync-pool", "psycopg2-pool"}


def test_sync_pool_results_are_filed_apart_from_the_pool_scenario():
    results = RunResults()
    cell = PoolCell(10, "psycopg2-pool", "psycopg2-pool", scenario="sync_pool")
    results.add(cell, {"requests": 5})
    assert results.pool == [] and results.pool_shortcuts == []
    assert results.sync_pool == [{"users": 10, "contender": "psycopg2-pool", "requests": 5}]
    assert len(results) == 1


def test_each_sync_contender_has_its_own_colour_not_mypgdriver_green():
    ours = report.DRIVER_COLOURS["mypgdriver"]
    for label in (SYNC, "mypgdriver-sync-pool"):
        assert driver_of(label) == SYNC
        assert report.colour_of(label) not in (ours, report.UNKNOWN_COLOUR)
        assert not report.is_highlighted(label)
    assert report.colour_of(SYNC) == report.colour_of("mypgdriver-sync-pool")


# -- the threaded measuring loop, with fake pools -----------------------------------------


class _FakePool:
    """Answers each request after `delay` s; fails every request from `fail_from` on."""

    name = "fake-pool"

    def __init__(self, delay: float = 0.001, fail_from: int | None = None) -> None:
        self.delay, self.fail_from = delay, fail_from
        self.calls = 0
        self.lock = threading.Lock()
        self.threads: set[int] = set()
        self.opened = self.closed = 0

    def version(self) -> str:
        return "0"

    def open(self) -> None:
        self.opened += 1

    def request(self, plan: Any) -> None:
        with self.lock:
            self.calls += 1
            self.threads.add(threading.get_ident())
            calls = self.calls
        time.sleep(self.delay)
        if self.fail_from is not None and calls >= self.fail_from:
            raise ConnectionError("pool is gone")

    def close(self) -> None:
        self.closed += 1


def test_sync_cell_runs_one_thread_per_user_and_counts_the_window():
    pool = _FakePool()
    cell = sync_pool_scenario.run_cell(pool, 4, make_plans(), warmup=0.05, duration=0.2)
    assert (pool.opened, pool.closed) == (1, 1)
    assert len(pool.threads) == 4
    assert 0 < cell.requests < pool.calls  # the warm-up's requests are not counted
    assert 4 * cell.requests <= cell.queries <= 10 * cell.requests
    assert cell.errors == 0 and cell.first_error is None
    # The window is the duration, stretched until each user finished a request
    # (at most MAX_EXTENSION, 30 s): a loaded machine adds a fraction of 5 s.
    assert 0.2 <= cell.elapsed < 0.2 + 5
    assert cell.p50_ms is not None and cell.p50_ms <= cell.p99_ms
    assert cell.cpu_seconds >= 0


def test_sync_cell_counts_failed_requests_and_goes_on():
    pool = _FakePool(fail_from=1)
    cell = sync_pool_scenario.run_cell(pool, 2, make_plans(), warmup=0.02, duration=0.1)
    assert cell.requests == 0 and cell.errors > 0
    assert cell.first_error == "ConnectionError: pool is gone"
    assert pool.closed == 1


def test_fifo_gate_hands_a_freed_slot_to_the_longest_waiter():
    # psycopg2-pool's gate: a thread that frees a slot and asks again at once
    # queues behind the threads already waiting (a Semaphore let it barge).
    gate = sync_pool_scenario.FifoGate(1)
    order: list[str] = []
    gate.__enter__()
    waiting = []
    for name in ("first", "second"):
        def wait(name: str = name) -> None:
            with gate:
                order.append(name)
        thread = threading.Thread(target=wait)
        thread.start()
        waiting.append(thread)
        deadline = time.monotonic() + 5
        while len(gate._waiters) < len(waiting) and time.monotonic() < deadline:
            time.sleep(0.001)
    gate.__exit__(None, None, None)
    with gate:  # behind both
        order.append("again")
    for thread in waiting:
        thread.join(5)
    assert order == ["first", "second", "again"]


def test_mypgdriver_sync_pool_without_create_pool_is_skipped(monkeypatch):
    sync = pytest.importorskip("mypgdriver.sync")
    monkeypatch.delattr(sync, "create_pool", raising=False)
    result: dict[str, Any] = {}
    sync_pool_scenario.run_spec({"contender": "mypgdriver-sync-pool", "users": 2,
                                 "pool_size": 1, "warmup": 0.0, "duration": 0.1,
                                 "params": {"host": "127.0.0.1", "port": 1, "user": "u",
                                            "database": "d"}}, result)
    assert result["skipped"] is True
    assert result["error"] == "skipped: mypgdriver.sync has no create_pool yet"


class _FakeSyncConnection:
    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self.calls = calls

    def __getattr__(self, method: str) -> Any:
        if method not in ("fetchrow", "fetch", "fetchval", "execute"):
            raise AttributeError(method)
        return lambda sql, *args: self.calls.append((method, sql, args))


class _FakeSyncPool:
    """What the sync pool contender may use of `mypgdriver.sync.create_pool`'s pool."""

    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self.calls = calls

    def acquire(self) -> Any:
        import contextlib

        @contextlib.contextmanager
        def lent() -> Any:
            self.calls.append(("acquire",))
            yield _FakeSyncConnection(self.calls)
            self.calls.append(("release",))

        return lent()

    def close(self) -> None:
        self.calls.append(("close",))


def test_mypgdriver_sync_pool_contender_uses_the_documented_pool_api(monkeypatch):
    # create_pool(dsn, min_size=, max_size=), `with pool.acquire() as conn:`,
    # the asyncio contender's calls without await, pool.close().
    sync = pytest.importorskip("mypgdriver.sync")
    calls: list[tuple[Any, ...]] = []

    def create_pool(dsn: str, **kwargs: Any) -> _FakeSyncPool:
        calls.append(("create_pool", dsn, kwargs))
        return _FakeSyncPool(calls)

    monkeypatch.setattr(sync, "create_pool", create_pool, raising=False)
    contender = sync_pool_scenario.open_contender(
        "mypgdriver-sync-pool", {"host": "h", "port": 5, "user": "u", "database": "d"}, 3)
    contender.open()
    plan = (("lookup", (1,)), ("range", (2,)), ("count", (3, 53)), ("update", (4,)))
    contender.request(plan)
    contender.close()
    kinds = sync_pool_scenario.QUERY_KINDS
    assert calls == [
        ("create_pool", "postgresql://u@h:5/d", {"min_size": 3, "max_size": 3}),
        ("acquire",),
        ("fetchrow", kinds["lookup"][1], (1,)), ("fetch", kinds["range"][1], (2,)),
        ("fetchval", kinds["count"][1], (3, 53)), ("execute", kinds["update"][1], (4,)),
        ("release",), ("close",)]


def test_dsn_of_the_suite_params():
    params = {"host": "127.0.0.1", "port": 5433, "user": "po stgres", "database": "db",
              "password": "p@ss"}
    assert sync_pool_scenario.dsn_of(params) == "postgresql://po%20stgres:p%40ss@127.0.0.1:5433/db"
    assert sync_pool_scenario.dsn_of({"host": "/tmp/s", "port": 5, "user": "u",
                                      "database": "d"}) == (
        "postgresql://u@/d?host=%2Ftmp%2Fs&port=5")


def test_report_has_the_sync_pool_tables_and_says_what_was_skipped():
    def cell(label: str, rate: float) -> dict[str, Any]:
        return {"users": 10, "contender": label, "requests": int(rate), "queries": 6 * int(rate),
                "errors": 0, "elapsed": 1.0, "cpu_seconds": 0.1, "requests_per_s": rate,
                "queries_per_s": 6 * rate, "latency_p50_ms": 1.0, "latency_p95_ms": 2.0,
                "latency_p99_ms": 4.0, "cpu_per_request_us": 100.0}

    section = {
        "settings": sync_pool_scenario.settings([10], 10, 0.1, 0.2),
        "results": [cell("psycopg-sync-pool", 100.0),
                    {"users": 10, "contender": "mypgdriver-sync-pool", "skipped": True,
                     "error": "skipped: mypgdriver.sync has no create_pool yet"},
                    cell("psycopg2-pool", 150.0), cell(SYNC_POOL.control, 110.0)],
    }
    text = squeeze("\n".join(report.sync_pool_markdown(section)))
    assert ("## Sync pool scenario: requests/s (ratio to psycopg_pool's pool; higher is better)"
            in text)
    assert "| users | A/A | psycopg-sync-pool | mypgdriver-sync-pool | psycopg2-pool |" in text
    assert "| 10 | 1.10 | 100 | n/a (skipped: mypgdriver.sync has no create_pool yet) | 150 (1.50) |" in text
    assert "mypgdriver-sync-pool was not run: mypgdriver.sync has no create_pool yet." in text
    assert report.pool_settings_text(section["settings"]).endswith("; one thread per user")


# -- end to end on a throwaway server ----------------------------------------------------------


def _needs_server_and_drivers() -> None:
    if shutil.which("initdb") is None and not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        pytest.skip("no PostgreSQL server binaries")
    for module in ("mypgdriver.sync", "psycopg", "psycopg_pool", "psycopg2"):
        pytest.importorskip(module)


def test_mypgdriver_sync_cells_and_the_sync_pool_scenario_run_end_to_end(tmp_path):
    _needs_server_and_drivers()
    import mypgdriver.sync

    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--drivers", "mypgdriver-sync,psycopg,psycopg2",
         "--workloads", "oneplusone,copyfrom,sync_pool", "--concurrency", "1,2",
         "--sync-pool-users", "3", "--pool-size", "2", "--duration", "0.3", "--warmup", "0.1",
         "--rounds", "1", "--no-control", "--output", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    saved = json.loads((run / "results.json").read_text())
    cells = {(r["workload"], r["concurrency"], r["driver"]): r for r in saved["results"]}
    for workload, rows in (("oneplusone", 1), ("copyfrom", 10_000)):
        for concurrency in (1, 2):
            cell = cells[(workload, concurrency, SYNC)]
            assert "error" not in cell, cell
            assert cell["queries"] > 0 and cell["rows"] == rows * cell["queries"]
            # Threads, one connection each, as psycopg and psycopg2 run.
            assert cell["event_loop"] == f"{concurrency} threads"
            assert cell["cpu_per_query_us"] > 0
    assert saved["machine"]["drivers"][SYNC] == mypgdriver.__version__
    assert SYNC not in saved["machine"]["event_loops"]  # threads, not a loop
    assert f"| {SYNC} |" in squeeze(proc.stdout)

    section = saved["sync_pool"]
    assert (section["settings"]["levels"], section["settings"]["pool_size"]) == ([3], 2)
    pools = {r["contender"]: r for r in section["results"]}
    assert sorted(pools) == ["mypgdriver-sync-pool", "psycopg-sync-pool", "psycopg2-pool"]
    if not hasattr(mypgdriver.sync, "create_pool"):  # the sync pool is not in this build yet
        assert pools.pop("mypgdriver-sync-pool")["error"].startswith("skipped: ")
    for name, cell in pools.items():
        assert "error" not in cell, (name, cell)
        assert cell["users"] == 3 and cell["requests"] > 0 and cell["errors"] == 0
        assert 4 * cell["requests"] <= cell["queries"] <= 10 * cell["requests"]
        assert cell["latency_p50_ms"] <= cell["latency_p99_ms"]
        assert cell["cpu_per_request_us"] > 0
        assert cell["event_loop"] == "3 threads"
    assert "psycopg_pool" in saved["machine"]["drivers"]
    assert "## Sync pool scenario: requests/s (ratio to psycopg_pool's pool" in proc.stdout

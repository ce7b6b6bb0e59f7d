"""Unit tests of the pool scenario and the memory probe inside the suite (no database)."""
from __future__ import annotations

import asyncio
import mmap

import pytest

from bench import cli, memory, pool_scenario, provenance, report, runner, worker
from bench.contenders import POOL, THROUGHPUT
from bench.drivers.base import Session
from bench.runner import Cell, MemoryProbe, Options, PoolCell, RunResults, plan
from bench.workloads import WORKLOADS

from .markdown import squeeze

AA_LABEL = THROUGHPUT.control
POOL_AA = POOL.control
MB = 2**20


# -- command line ----------------------------------------------------------------


def _options(argv: list[str]) -> Options:
    return cli.options_from(cli.parser().parse_args(argv))


ALL_SCENARIOS = ["dict_rows", "pipeline_oneplusone", "pipeline_lookup5", "pool", "pool_shortcuts", "sync_pool",
                 "pooler_pg_type", "pooler_oneplusone", "cursor_1m"]


def test_defaults_run_the_pipeline_and_pool_scenarios_and_the_memory_probe():
    o = _options([])
    assert o.workloads == [w.name for w in WORKLOADS]
    assert o.scenarios == ALL_SCENARIOS
    assert (o.pool_users, o.pool_size) == ([10, 50, 100], 10)


def test_quick_keeps_every_pool_level_the_pipelines_and_the_probe():
    o = _options(["--quick"])
    assert o.scenarios == ALL_SCENARIOS
    assert o.pool_users == [10, 50, 100]
    assert (o.duration, o.warmup) == (cli.QUICK_DURATION, cli.QUICK_WARMUP)


def test_workloads_pool_selects_the_pool_scenario_alone():
    o = _options(["--workloads", "pool"])
    assert (o.workloads, o.scenarios) == ([], ["pool"])


def test_skip_leaves_out_workloads_and_scenarios():
    o = _options(["--skip", "pool,cursor_stream,pipeline_lookup5"])
    assert o.scenarios == ["dict_rows", "pipeline_oneplusone", "pool_shortcuts", "sync_pool",
                           "pooler_pg_type", "pooler_oneplusone", "cursor_1m"]
    assert "cursor_stream" not in o.workloads
    assert len(o.workloads) == len(WORKLOADS) - 1


def test_pool_options():
    o = _options(["--pool-users", "5,20", "--pool-size", "4"])
    assert (o.pool_users, o.pool_size) == ([5, 20], 4)


@pytest.mark.parametrize("argv", [["--pool-users", "0"], ["--pool-size", "0"],
                                  ["--pool-size", "x"], ["--skip", "pools"]])
def test_bad_pool_arguments_exit_with_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parser().parse_args(argv)
    assert exc.value.code == 2


def test_list_names_the_scenarios(capsys):
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "\n  pool " in out
    assert "\n  cursor_1m " in out


# -- plan ------------------------------------------------------------------------


def _plan_options(**kw) -> Options:
    base = dict(drivers=["psycopg", "asyncpg", "mypgdriver", "pgbench"], workloads=[],
                concurrency=[10], duration=1.0, warmup=0.0, scenarios=["pool", "cursor_1m"],
                pool_users=[10, 50])
    base.update(kw)
    return Options(**base)


def test_plan_runs_pool_levels_then_one_probe_per_python_driver():
    # psycopg (sync) brings no pool contender: psycopg_pool's async pool
    # belongs to psycopg-async.
    assert plan(_plan_options()) == [
        PoolCell(10, "asyncpg-pool", "asyncpg-pool"),
        PoolCell(10, "mypgdriver-pool", "mypgdriver-pool"),
        PoolCell(10, "mypgdriver-connect", "mypgdriver-connect"),
        PoolCell(10, "asyncpg-pool", POOL_AA),
        PoolCell(50, "asyncpg-pool", "asyncpg-pool"),
        PoolCell(50, "mypgdriver-pool", "mypgdriver-pool"),
        PoolCell(50, "mypgdriver-connect", "mypgdriver-connect"),
        PoolCell(50, "asyncpg-pool", POOL_AA),
        MemoryProbe("asyncpg"),
        MemoryProbe("psycopg"),
        MemoryProbe("mypgdriver"),
    ]


def _pool_round(requests, elapsed, cpu, p50, p95, p99):
    return {"requests": requests, "queries": 5 * requests, "errors": 0, "elapsed": elapsed,
            "cpu_seconds": cpu, "latency_p50_ms": p50, "latency_p95_ms": p95,
            "latency_p99_ms": p99, "driver_version": "1", "event_loop": "uvloop"}


def test_pool_rounds_are_interleaved_and_combined():
    cells = plan(_plan_options(drivers=["asyncpg"], pool_users=[10], scenarios=["pool"],
                               aa_control=False, rounds=2))
    assert cells == [PoolCell(10, "asyncpg-pool", "asyncpg-pool", 1, 2),
                     PoolCell(10, "asyncpg-pool", "asyncpg-pool", 2, 2)]
    results = RunResults()
    results.add(cells[0], _pool_round(100, 1.0, 0.2, 1.0, 2.0, 9.0))
    results.add(cells[1], _pool_round(300, 1.0, 0.2, 3.0, 4.0, 5.0))
    (pool,) = results.pool
    assert (pool["users"], pool["contender"], pool["requests"]) == (10, "asyncpg-pool", 400)
    assert pool["requests_per_s"] == 200.0
    assert pool["cpu_per_request_us"] == pytest.approx(1e6 * 0.4 / 400)
    # The median of two rounds is the lower one (pool_scenario.combine_rounds).
    assert (pool["latency_p50_ms"], pool["latency_p99_ms"]) == (1.0, 5.0)
    assert len(results) == 2


def test_plan_puts_throughput_cells_before_the_scenarios():
    cells = plan(_plan_options(drivers=["asyncpg"], workloads=["oneplusone"], aa_control=False,
                               pool_users=[10]))
    assert cells == [Cell("oneplusone", 10, "asyncpg", "asyncpg"),
                     PoolCell(10, "asyncpg-pool", "asyncpg-pool"), MemoryProbe("asyncpg")]


def test_contenders_follow_the_drivers_and_the_control_setting():
    assert pool_scenario.contenders_for(["psycopg-async", "mypgdriver"], aa_control=True) == [
        ("mypgdriver-pool", "mypgdriver-pool"), ("mypgdriver-connect", "mypgdriver-connect"),
        ("psycopg-pool", "psycopg-pool")]
    assert pool_scenario.contenders_for(["asyncpg", "psycopg-async"], aa_control=False) == [
        ("asyncpg-pool", "asyncpg-pool"), ("psycopg-pool", "psycopg-pool")]


def test_describe_plan():
    o = _plan_options(drivers=["asyncpg", "psycopg2"], workloads=["oneplusone", "batch"])
    assert cli.describe_plan(plan(o), o) == (
        "6 cells: 2 workloads x concurrency 10 x 3 drivers; "
        "pool scenario: 4 cells (10,50 users x 2 contenders); memory probe: 2 drivers")


def test_progress_outcome_lines():
    pool_result = {"requests_per_s": 2500.4, "latency_p99_ms": 7.654, "cpu_per_request_us": 150.2,
                   "errors": 3}
    assert runner.outcome(PoolCell(10, "asyncpg-pool", "asyncpg-pool"), pool_result) == (
        "2,500 requests/s, p99 7.65 ms, 150 µs CPU/request, 3 failed requests")
    probe_result = {"peak_rss_growth_mb": 1.25, "rows": 1_000_000, "rows_per_s": 900_000.0}
    assert runner.outcome(MemoryProbe("asyncpg"), probe_result) == (
        "peak RSS +1.2 MB over 1,000,000 rows (900,000 rows/s)")
    assert runner.outcome(MemoryProbe("asyncpg"), {"error": "boom"}) == "n/a (boom)"


def test_time_left_counts_probes_at_their_own_length():
    o = _plan_options(duration=3.0, warmup=1.0, pool_users=[10])
    assert runner.nominal_seconds(PoolCell(10, "asyncpg-pool", "asyncpg-pool"), o) == 4.0
    assert runner.nominal_seconds(MemoryProbe("asyncpg"), o) == runner.PROBE_NOMINAL


def test_run_results_file_each_result_under_its_job():
    results = RunResults()
    results.add(Cell("oneplusone", 10, "asyncpg", AA_LABEL), {"queries": 1})
    results.add(PoolCell(50, "asyncpg-pool", POOL_AA), {"requests": 2})
    results.add(MemoryProbe("psycopg2"), {"rows": 3})
    assert results.cells == [{"workload": "oneplusone", "concurrency": 10, "driver": AA_LABEL,
                              "queries": 1}]
    assert results.pool == [{"users": 50, "contender": POOL_AA, "requests": 2}]
    assert results.memory == [{"driver": "psycopg2", "rows": 3}]
    assert len(results) == 3


# -- runner, with a fake server and a fake worker ------------------------------------


class _FakeServer:
    """Records the SQL the runner sends; nobody else is connected."""

    params = {"host": "h", "port": 1, "user": "u", "database": "d"}

    def __init__(self) -> None:
        self.sql: list[str] = []

    def psql(self, sql: str) -> str:
        self.sql.append(sql)
        return "0\n"

    def terminate_other_backends(self) -> None:
        self.sql.append("TERMINATE")


def test_runner_sets_up_the_pool_table_once_settles_between_cells_and_drops_it(monkeypatch):
    specs = []

    def fake_worker(spec, client_cpus, timeout):
        specs.append((spec, timeout))
        return {"requests": 10, "errors": 0, "requests_per_s": 10.0}

    monkeypatch.setattr(runner, "run_worker", fake_worker)
    server = _FakeServer()
    options = _plan_options(drivers=["asyncpg"], pool_users=[10, 50], scenarios=["pool"],
                            aa_control=False, warmup=0.5, duration=2.0, pool_size=7)
    cells = plan(options)
    results = runner.Runner(server, options).run(cells, lambda c: None, lambda c, r: None)
    assert results.pool == [
        {"users": 10, "contender": "asyncpg-pool", "requests": 10, "errors": 0,
         "requests_per_s": 10.0},
        {"users": 50, "contender": "asyncpg-pool", "requests": 10, "errors": 0,
         "requests_per_s": 10.0},
    ]
    assert specs[0] == ({"scenario": "pool", "contender": "asyncpg-pool", "users": 10,
                         "pool_size": 7, "connect_per": "query", "warmup": 0.5,
                         "duration": 2.0, "params": server.params},
                        0.5 + 2.0 + runner.CELL_GRACE)
    vacuum = f"VACUUM {pool_scenario.TABLE}"
    settle_query = server.sql[len(pool_scenario.SETUP_SQL)]
    assert server.sql == [*pool_scenario.SETUP_SQL, settle_query, vacuum, settle_query, vacuum,
                          *pool_scenario.TEARDOWN_SQL]


def test_runner_marks_an_empty_pool_cell_and_a_short_probe_as_errors(monkeypatch):
    def fake_worker(spec, client_cpus, timeout):
        if spec["scenario"] == "pool":
            return {"requests": 0, "errors": 5, "first_error": "OSError: refused",
                    "driver_version": "0.32.0"}
        assert timeout == memory.PROBE_TIMEOUT
        return {"rows": 999, "driver_version": "0.32.0", "event_loop": "uvloop 0.23.0"}

    monkeypatch.setattr(runner, "run_worker", fake_worker)
    server = _FakeServer()
    options = _plan_options(drivers=["asyncpg"], pool_users=[10], aa_control=False)
    results = runner.Runner(server, options).run(plan(options), lambda c: None,
                                                 lambda c, r: None)
    assert results.pool == [{"users": 10, "contender": "asyncpg-pool", "driver_version": "0.32.0",
                             "error": "no request finished inside the measuring window "
                                      "(OSError: refused)"}]
    assert results.memory == [{"driver": "asyncpg", "driver_version": "0.32.0",
                               "event_loop": "uvloop 0.23.0",
                               "error": "wrong row count: 999, expected 1000000"}]
    assert server.sql.count("TERMINATE") == 2


# -- the pool scenario's pieces -----------------------------------------------------------


def test_plans_are_fixed_by_the_seed_and_4_to_10_queries_long():
    plans = pool_scenario.make_plans()
    assert plans == pool_scenario.make_plans()
    assert plans != pool_scenario.make_plans(seed=8)
    assert len(plans) == pool_scenario.REQUEST_PLANS
    assert {len(p) for p in plans} == set(range(4, 11))
    for kind, args in (q for p in plans for q in p):
        assert kind in pool_scenario.QUERY_KINDS
        assert len(args) == (2 if kind == "count" else 1)
        assert 1 <= args[0] <= pool_scenario.TABLE_ROWS


def test_pyformat():
    assert pool_scenario.pyformat("SELECT $1 WHERE a BETWEEN $1 AND $2") == (
        "SELECT %s WHERE a BETWEEN %s AND %s")


def test_result_dict_of_a_cell():
    cell = pool_scenario.CellResult("asyncpg-pool", 10, requests=200, queries=1400, errors=1,
                                    elapsed=2.0, cpu_seconds=0.05, p50_ms=1.5, p95_ms=3.0,
                                    p99_ms=4.0, first_error="TimeoutError: ")
    assert pool_scenario.result_dict(cell) == {
        "requests": 200, "queries": 1400, "errors": 1, "elapsed": 2.0, "cpu_seconds": 0.05,
        "requests_per_s": 100.0, "queries_per_s": 700.0, "latency_p50_ms": 1.5,
        "latency_p95_ms": 3.0, "latency_p99_ms": 4.0, "cpu_per_request_us": 250.0,
        "first_error": "TimeoutError: "}


def test_combine_rounds_pools_throughput_and_takes_median_percentiles():
    def cell(requests, elapsed, p99):
        return pool_scenario.CellResult("x", 10, requests, requests * 5, 0, elapsed, 0.1,
                                        1.0, 2.0, p99)

    combined = pool_scenario.combine_rounds([cell(100, 1.0, 9.0), cell(300, 1.0, 3.0),
                                             cell(200, 2.0, 5.0)])
    assert (combined.requests, combined.elapsed, combined.requests_per_s) == (600, 4.0, 150.0)
    assert combined.p99_ms == 5.0
    assert combined.cpu_seconds == pytest.approx(0.3)


def test_verify_keeps_cells_with_requests_even_if_some_failed():
    result = {"requests": 3, "errors": 2, "first_error": "X"}
    assert pool_scenario.verify(result) is result
    assert pool_scenario.verify({"requests": 0, "errors": 0}) == {
        "error": "no request finished inside the measuring window"}


def test_settle_waits_for_other_sessions_then_vacuums():
    answers = iter(["2\n", "1\n", "0\n"])
    sent = []

    def psql(sql: str) -> str:
        sent.append(sql)
        return next(answers) if "pg_stat_activity" in sql else ""

    pool_scenario.settle(psql)
    assert len(sent) == 4
    assert sent[-1] == f"VACUUM {pool_scenario.TABLE}"


class _FakeContender:
    """Requests that cost nothing; every `fail_every`-th one raises."""

    name = "fake-pool"

    def __init__(self, fail_every: int = 0, delay: float = 0.0) -> None:
        self.fail_every = fail_every
        self.delay = delay
        self.calls = 0
        self.opened = self.closed = False

    def version(self) -> str:
        return "9.9"

    async def open(self) -> None:
        self.opened = True

    async def request(self, plan) -> None:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail_every and self.calls % self.fail_every == 0:
            raise ConnectionResetError("gone")

    async def close(self) -> None:
        self.closed = True


def test_run_cell_counts_requests_and_queries_of_the_window():
    contender = _FakeContender()
    plans = pool_scenario.make_plans()
    cell = asyncio.run(pool_scenario.run_cell(contender, 3, plans, 0.01, 0.05))
    assert contender.opened and contender.closed
    assert cell.requests > 0 and cell.errors == 0
    assert 4 * cell.requests <= cell.queries <= 10 * cell.requests
    assert cell.p50_ms <= cell.p95_ms <= cell.p99_ms
    assert (cell.contender, cell.users) == ("fake-pool", 3)


def test_run_cell_window_waits_for_one_request_per_user():
    # Requests ten times longer than the window: without the extension none
    # would finish inside it.
    cell = asyncio.run(pool_scenario.run_cell(_FakeContender(delay=0.2), 3,
                                              pool_scenario.make_plans(), 0.0, 0.02))
    assert cell.requests >= 3


def test_run_cell_counts_failed_requests_and_keeps_the_first_error():
    cell = asyncio.run(pool_scenario.run_cell(_FakeContender(fail_every=2), 2,
                                              pool_scenario.make_plans(), 0.0, 0.05))
    assert cell.errors > 0
    assert cell.first_error == "ConnectionResetError: gone"


def test_worker_runs_a_pool_spec(monkeypatch):
    contender = _FakeContender()
    monkeypatch.setattr(pool_scenario, "open_contender", lambda *args: contender)
    result: dict = {}
    worker.run({"scenario": "pool", "contender": "fake-pool", "users": 2, "pool_size": 2,
                "warmup": 0.0, "duration": 0.03, "params": {}}, result)
    assert result["driver_version"] == "9.9"
    assert result["requests"] > 0
    assert result["requests_per_s"] == result["requests"] / result["elapsed"]
    assert contender.closed


def test_worker_rejects_an_unknown_scenario():
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        worker.run({"scenario": "nope"}, {})


def test_open_contender_knows_every_default_contender():
    for name in POOL.contenders:
        assert pool_scenario.open_contender(name, {}, 5, "query").name == name
    with pytest.raises(ValueError):
        pool_scenario.open_contender("pgbouncer", {}, 5, "query")


# -- the memory probe ---------------------------------------------------------------------


def _allocate(megabytes: int) -> mmap.mmap | bytearray:
    # Fresh pages of the kernel's (an anonymous mapping), written, not just
    # reserved: untouched pages are not resident.  Not malloc: after the
    # test suite's big transfers, malloc may serve 64 MB from free heap
    # pages that are resident already, and the RSS would not move.
    if megabytes == 0:
        return bytearray()
    block = mmap.mmap(-1, megabytes * MB)
    for offset in range(0, megabytes * MB, mmap.PAGESIZE):
        block[offset] = 1
    return block


def test_peak_rss_sees_a_transient_allocation_and_restarts_from_now():
    peak = memory.PeakRss()
    peak.start()
    block = _allocate(64)
    del block
    assert peak.method == "VmHWM"
    assert peak.growth() >= 60 * MB
    peak.start()  # the 64 MB peak is behind us now
    assert peak.growth() < 16 * MB


class _StreamingDriver:
    """Streams ROWS rows, holding `hold_mb` MB at the peak (what a buffering cursor does)."""

    def __init__(self, is_async: bool, hold_mb: int, rows: int = memory.ROWS) -> None:
        self.is_async = is_async
        self.hold_mb = hold_mb
        self.rows = rows
        self.workloads = []

    def version(self) -> str:
        return "1.0"

    def _run(self) -> int:
        held = _allocate(self.hold_mb)
        del held
        return self.rows

    def open(self, params, workload):
        self.workloads.append(workload)
        if not self.is_async:
            return Session(run=self._run, close=lambda: None)

        async def run() -> int:
            return self._run()

        async def close() -> None:
            pass

        async def opened() -> Session:
            return Session(run=run, close=close)

        return opened()


@pytest.mark.parametrize("is_async", [False, True])
def test_probe_reports_the_growth_a_driver_holds_while_streaming(is_async, monkeypatch):
    driver = _StreamingDriver(is_async, hold_mb=80)
    monkeypatch.setattr(memory.drivers, "load", lambda name: driver)
    result: dict = {}
    memory.run_probe({"driver": "fake", "params": {}}, result)
    assert driver.workloads == [memory.CURSOR_1M]
    assert result["rows"] == memory.ROWS
    assert result["method"] == "VmHWM"
    assert 78 <= result["peak_rss_growth_mb"] < 100
    assert result["driver_version"] == "1.0"
    assert (result["event_loop"] == "1 thread") is not is_async


def test_probe_of_a_flat_driver_reports_little_growth(monkeypatch):
    monkeypatch.setattr(memory.drivers, "load", lambda name: _StreamingDriver(False, hold_mb=0))
    result: dict = {}
    memory.run_probe({"driver": "fake", "params": {}}, result)
    assert result["peak_rss_growth_mb"] < 8


def test_cursor_1m_is_the_cursor_stream_query_with_a_million_rows():
    stream = next(w for w in WORKLOADS if w.name == "cursor_stream")
    w = memory.CURSOR_1M
    assert (w.kind, w.sql, w.args, w.rows) == ("cursor", stream.sql, (1_000_000,), 1_000_000)
    assert w.name not in {x.name for x in WORKLOADS}  # not a throughput cell


def test_probe_drivers_are_the_python_ones():
    assert memory.probe_drivers(["pgbench", "psycopg2", "asyncpg"]) == ["psycopg2", "asyncpg"]


def test_memory_verify():
    ok = {"rows": memory.ROWS, "peak_rss_growth_mb": 1.0}
    assert memory.verify(ok) is ok
    assert memory.verify({"error": "x"}) == {"error": "x"}


# -- report -------------------------------------------------------------------------------


def _pool_cell(users, contender, rps, p99, cpu=100.0, errors=0, **extra):
    return {"users": users, "contender": contender, "requests": int(rps), "errors": errors,
            "requests_per_s": rps, "latency_p50_ms": p99 / 4, "latency_p95_ms": p99 / 2,
            "latency_p99_ms": p99, "cpu_per_request_us": cpu, "driver_version": "3.3.3",
            "event_loop": "uvloop 0.23.0", **extra}


def _full_report(results=()):
    pool = [
        _pool_cell(10, "asyncpg-pool", 3000, 8.0, cpu=160.0),
        _pool_cell(10, "mypgdriver-pool", 3600, 6.0, cpu=120.0),
        _pool_cell(10, "mypgdriver-connect", 30, 480.0, cpu=7000.0, errors=2,
                   first_error="TooManyConnectionsError: sorry, too many clients already"),
        {"users": 10, "contender": "psycopg-pool", "error": "ImportError: no psycopg_pool",
         "driver_version": "3.3.3"},
        _pool_cell(10, POOL_AA, 2700, 8.8),
    ]
    probes = [
        {"driver": "asyncpg", "rows": memory.ROWS, "seconds": 1.25, "rows_per_s": 800_000.0,
         "rss_start_mb": 30.25, "peak_rss_growth_mb": 0.84, "method": "VmHWM",
         "driver_version": "0.32.0", "event_loop": "uvloop 0.23.0"},
        {"driver": "psycopg2", "rows": memory.ROWS, "seconds": 2.0, "rows_per_s": 500_000.0,
         "rss_start_mb": 29.0, "peak_rss_growth_mb": 275.6, "method": "VmHWM",
         "driver_version": "2.9.13", "event_loop": "1 thread"},
    ]
    return {
        "started": "2026-01-01T00:00:00+00:00",
        "machine": provenance.machine_info("PostgreSQL 15.0", list(results), pool, probes),
        "settings": {"duration": 1.0, "warmup": 0.3, "concurrency": [10], "pin": False},
        "results": list(results),
        "pool": {"settings": pool_scenario.settings([10], 10, "query", 0.3, 1.0),
                 "results": pool},
        "memory": {"rows": memory.ROWS, "target_mb": memory.TARGET_MB, "results": probes},
    }


def test_markdown_pool_tables():
    text = squeeze(report.markdown(_full_report()))
    assert ("- Pool scenario: 4 to 10 queries per request, pool size 10, 10 concurrent users; "
            "0.3 s warm-up, then 1 s measured per cell; mypgdriver-connect opens a connection "
            "per query") in text
    assert "| users | A/A | asyncpg-pool | mypgdriver-pool | mypgdriver-connect | psycopg-pool |" in text
    assert ("| 10 | 0.90 | 3k | 3.6k (1.20) | 30 (0.01) | "
            "n/a (ImportError: no psycopg_pool) |") in text
    assert "| 10 | mypgdriver-pool | 3.6k | 1.20 | 1.50 | 3.00 | 6.00 | 0.75 | 120 | 0 |" in text
    assert "| 10 | asyncpg-pool (A/A) | 2.7k | 0.90 | 2.20 | 4.40 | 8.80 | 1.10 | 100 | 0 |" in text
    assert "| 10 | psycopg-pool | n/a (ImportError: no psycopg_pool) |" in text
    assert ("- mypgdriver-connect, 10 users: 2 failed requests, the first with "
            "TooManyConnectionsError: sorry, too many clients already") in text


def test_markdown_memory_table_flags_a_missed_target():
    text = squeeze(report.markdown(_full_report()))
    assert "## Memory: 1,000,000 rows through a cursor" in text
    assert "| asyncpg | 0.8 | yes | 800k | 1.25 | 30.2 |" in text
    assert "| psycopg2 | 275.6 | **no** | 500k | 2.00 | 29.0 |" in text


def test_markdown_without_throughput_cells_has_only_the_scenarios():
    text = squeeze(report.markdown(_full_report()))
    assert "## Rows/s" not in text and "- Cells:" not in text
    assert "## Pool scenario: requests/s (ratio to asyncpg's pool; higher is better)" in text


def test_machine_info_takes_versions_from_pool_and_probes():
    info = _full_report()["machine"]
    assert info["drivers"] == {"asyncpg": "0.32.0", "psycopg2": "2.9.13",
                               "mypgdriver": "3.3.3", "psycopg_pool": "3.3.3"}
    assert info["event_loops"] == {"asyncpg": "uvloop 0.23.0"}


def test_save_writes_pool_and_memory_charts_into_their_sections(tmp_path):
    pytest.importorskip("matplotlib")
    full = _full_report()
    assert report.save(full, tmp_path / "run", tmp_path / "latest") == []
    names = sorted(p.name for p in (tmp_path / "latest").iterdir())
    assert names == ["cursor_1m_rss.png", "pool.png", "results.json", "results.md"]
    text = (tmp_path / "latest" / "results.md").read_text()
    assert "![requests/s and p99 latency per contender](pool.png)" in text
    assert "![peak RSS growth per driver](cursor_1m_rss.png)" in text
    assert "## Charts" not in text  # no throughput cells, no overview chart

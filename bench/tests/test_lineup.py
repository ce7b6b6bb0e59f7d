"""The contenders of issue 25 in the suite, without a database.

psqlpy (asyncio, throughput cells and the pool scenario), mypgdriver's
DB-API module (`mypgdriver-dbapi`, threads) and the dict-row cells on
pg_type: the options that select them, the plan that runs them, the
worker's "skipped" cells while mypgdriver's APIs do not exist yet, and
the report's tables.  bench/tests/test_contenders.py runs them against a
server.
"""
from __future__ import annotations

import sys
from typing import Any

import pytest

from bench import cli, drivers, memory, pool_scenario, provenance, report, worker
from bench.contenders import DICT_ROWS, POOL, THROUGHPUT, driver_of
from bench.drivers.base import ContenderUnavailable, import_optional
from bench.runner import Cell, Options, plan

from .markdown import squeeze

AA = THROUGHPUT.control


def _options(argv: list[str]) -> Options:
    return cli.options_from(cli.parser().parse_args(argv))


# -- who runs ------------------------------------------------------------------------------


def test_psqlpy_and_the_dbapi_are_default_drivers_of_the_throughput_cells():
    for name in ("psqlpy", "mypgdriver-dbapi"):
        assert name in cli.ALL_DRIVERS and name in _options([]).drivers
        assert name in THROUGHPUT.contenders
        assert name in memory.probe_drivers(cli.ALL_DRIVERS)  # it has a cursor too
    assert drivers.load("psqlpy").is_async is True  # tasks on one event loop
    assert drivers.load("mypgdriver-dbapi").is_async is False  # one thread per connection


def test_dict_row_contenders_come_with_their_driver_not_as_drivers():
    assert not set(DICT_ROWS.contenders) & set(cli.ALL_DRIVERS)
    assert set(DICT_ROWS.contenders) == set(drivers.DICT_ROW_DRIVERS)
    assert DICT_ROWS.run_order(["psycopg2", "mypgdriver"], aa_control=False) == [
        ("mypgdriver-dict", "mypgdriver-dict"), ("psycopg2-dict", "psycopg2-dict")]
    for contender in DICT_ROWS.contenders:
        loaded = drivers.load(contender)
        assert loaded.name == contender
        assert loaded.is_async == drivers.load(DICT_ROWS.drivers[contender]).is_async
        assert driver_of(contender) == DICT_ROWS.drivers[contender]


def test_psqlpys_pool_is_a_pool_scenario_contender():
    assert pool_scenario.contenders_for(["asyncpg", "psqlpy"], aa_control=True) == [
        ("asyncpg-pool", "asyncpg-pool"), ("psqlpy-pool", "psqlpy-pool"),
        ("asyncpg-pool", POOL.control)]
    contender = pool_scenario.open_contender("psqlpy-pool", {}, 4, "query")
    assert (contender.name, contender.size) == ("psqlpy-pool", 4)
    assert POOL.version_name("psqlpy-pool") == "psqlpy"


# -- the plan ------------------------------------------------------------------------------


def test_dict_rows_run_in_pg_types_rounds_before_the_control():
    o = _options(["--drivers", "asyncpg,mypgdriver,psycopg", "--workloads",
                  "pg_type,oneplusone,dict_rows", "--concurrency", "1", "--rounds", "2"])
    cells = plan(o)
    assert all(isinstance(c, Cell) for c in cells)
    assert [(c.workload, c.label, c.round) for c in cells] == [
        (workload, label, r)
        for workload, labels in (
            ("pg_type", ("asyncpg", "mypgdriver", "psycopg", "psycopg-dict", "mypgdriver-dict",
                         AA)),
            ("oneplusone", ("asyncpg", "mypgdriver", "psycopg", AA)))
        for r in (1, 2) for label in labels]
    # A dict-row cell runs its own module, under its own label.
    (cell,) = [c for c in cells if c.label == "mypgdriver-dict" and c.round == 1]
    assert cell.driver == "mypgdriver-dict"


def test_dict_rows_alone_run_pg_type_with_the_dict_contenders_only():
    o = _options(["--drivers", "asyncpg,psycopg2,psqlpy", "--workloads", "dict_rows",
                  "--concurrency", "1,10", "--rounds", "1"])
    assert o.workloads == [] and o.scenarios == ["dict_rows"]
    assert [(c.workload, c.concurrency, c.label) for c in plan(o)] == [
        ("pg_type", 1, "psycopg2-dict"), ("pg_type", 1, "psqlpy-dict"),
        ("pg_type", 10, "psycopg2-dict"), ("pg_type", 10, "psqlpy-dict")]
    assert cli.describe_plan(plan(o), o) == "dict rows: 4 pg_type cells (2 contenders)"


def test_skipping_dict_rows_leaves_pg_type_to_the_drivers():
    o = _options(["--drivers", "psycopg", "--workloads", "pg_type", "--concurrency", "1",
                  "--rounds", "1"])
    assert [c.label for c in plan(o)] == ["psycopg"]
    o = _options(["--drivers", "psycopg", "--skip", "dict_rows", "--concurrency", "1",
                  "--rounds", "1"])
    assert "psycopg-dict" not in {getattr(c, "label", None) for c in plan(o)}


def test_the_default_run_has_the_dict_rows_of_every_driver_at_both_levels():
    o = _options([])
    dict_cells = [c for c in plan(o) if isinstance(c, Cell) and c.label in DICT_ROWS.contenders]
    assert {c.workload for c in dict_cells} == {"pg_type"}
    assert len(dict_cells) == len(DICT_ROWS.contenders) * 2 * 3  # c=1,10; three rounds


# -- skipped until mypgdriver's APIs exist -------------------------------------------------


def _spec(driver: str) -> dict[str, Any]:
    return {"driver": driver, "workload": "pg_type", "concurrency": 1, "warmup": 0.0,
            "duration": 0.1, "params": {}}


@pytest.mark.parametrize("driver, missing, why", [
    ("mypgdriver-dbapi", "mypgdriver.dbapi",
     "mypgdriver.dbapi does not exist yet (the DB-API module, issue 25)"),
    ("mypgdriver-dict", "mypgdriver.rows",
     "mypgdriver.rows does not exist yet (row factories, issue 25)"),
    ("mypgdriver-sync-dict", "mypgdriver.rows",
     "mypgdriver.rows does not exist yet (row factories, issue 25)"),
])
def test_a_contender_whose_api_does_not_exist_yet_is_skipped_with_the_reason(
        monkeypatch, driver, missing, why):
    pytest.importorskip("mypgdriver.sync")
    monkeypatch.setitem(sys.modules, missing, None)  # importing it raises ModuleNotFoundError
    result = worker.run_to_result(_spec(driver))
    assert result["error"] == f"skipped: {why}"
    assert result["skipped"] is True
    assert result["driver_version"]  # mypgdriver's, known before the skip


def test_import_optional_skips_only_for_the_module_itself(tmp_path, monkeypatch):
    with pytest.raises(ContenderUnavailable, match="^not here$"):
        import_optional("bench_no_such_module", "not here")
    # A module that exists but fails to import is a failure, not a skip.
    (tmp_path / "bench_broken_module.py").write_text("import bench_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        import_optional("bench_broken_module", "not here")
    assert exc.value.name == "bench_no_such_dependency"


# -- the report ----------------------------------------------------------------------------


def _cell(driver: str, rows_per_s: float, c: int = 1, **extra: Any) -> dict[str, Any]:
    return {"workload": "pg_type", "concurrency": c, "driver": driver, "queries": 10,
            "rows": int(rows_per_s), "rows_per_s": rows_per_s, "queries_per_s": rows_per_s / 600,
            "latency_mean_ms": 1.0, "latency_p50_ms": 1.0, "latency_p99_ms": 2.0,
            "cpu_per_query_us": 50.0, "driver_version": extra.pop("version", "1"),
            "event_loop": "uvloop", **extra}


def _skipped(driver: str, why: str) -> dict[str, Any]:
    return {"workload": "pg_type", "concurrency": 1, "driver": driver,
            "error": f"skipped: {why}", "skipped": True, "driver_version": "0.1"}


RESULTS = [
    _cell("asyncpg", 400_000), _cell("mypgdriver", 800_000), _cell("psycopg", 500_000),
    _skipped("mypgdriver-dbapi", "mypgdriver.dbapi does not exist yet (the DB-API module, "
                                 "issue 25)"),
    _cell("psqlpy", 300_000, version="0.13.1"),
    _cell("psycopg-dict", 400_000, version="3.3.9"), _cell("mypgdriver-dict", 760_000),
    _skipped("mypgdriver-sync-dict", "mypgdriver.rows does not exist yet (row factories, "
                                     "issue 25)"),
    _cell("psqlpy-dict", 200_000),
    _cell(AA, 440_000),
]


def _report(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"started": "2026-01-01T00:00:00+00:00",
            "machine": provenance.machine_info("PostgreSQL 15.0", results),
            "settings": {"duration": 1.0, "warmup": 0.3, "concurrency": [1], "pin": False},
            "results": results}


def test_dict_rows_have_their_own_table_against_psycopg_and_each_drivers_own_rows():
    text = squeeze(report.markdown(_report(RESULTS)))
    # Not in the drivers' tables ...
    assert ("| workload | c | A/A | asyncpg | mypgdriver | mypgdriver-dbapi | psycopg | psqlpy |"
            in text)
    assert "| psycopg-dict | 1 |" not in text.split("## Dict rows")[0]
    # ... but in their own, after the details.
    assert ("## Dict rows on pg_type: rows/s (ratio to psycopg-dict; higher is better)"
            in text)
    assert ("| c | psycopg-dict | mypgdriver-dict | mypgdriver-sync-dict | psqlpy-dict |\n"
            in text)
    assert ("| 1 | 400k | 760k (1.90) | n/a (skipped: mypgdriver.rows does not exist yet "
            "(row …) | 200k (0.50) |") in text
    assert "A/A (asyncpg measured twice in these rounds): c=1 1.10." in text
    assert "| mypgdriver-dict | 1 | 760k | 1.90 | 0.95 | mypgdriver | 1.000 | 2.000 | 50.0 |" in text
    assert "| psqlpy-dict | 1 | 200k | 0.50 | 0.67 | psqlpy | 1.000 | 2.000 | 50.0 |" in text
    assert ("- mypgdriver-sync-dict was not run: mypgdriver.rows does not exist yet "
            "(row factories, issue 25).") in text


def test_a_skipped_driver_is_listed_with_its_reason_under_the_rows_table():
    text = report.markdown(_report(RESULTS))
    rows_table = text.split("## Client CPU")[0]
    assert ("- mypgdriver-dbapi was not run: mypgdriver.dbapi does not exist yet "
            "(the DB-API module, issue 25).") in rows_table
    assert "mypgdriver-sync-dict was not run" not in rows_table


def test_a_dict_row_cells_version_is_its_drivers():
    drivers_seen = _report(RESULTS)["machine"]["drivers"]
    assert drivers_seen["psycopg"] == "1" and drivers_seen["psqlpy"] == "0.13.1"
    assert not set(drivers_seen) & set(DICT_ROWS.contenders)


def test_the_charts_leave_the_dict_rows_out(monkeypatch):
    drawn: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(report, "throughput_figures", lambda results: drawn.append(results) or {})
    report.figures(_report(RESULTS))
    assert {r["driver"] for r in drawn[0]} == {
        "asyncpg", "mypgdriver", "psycopg", "mypgdriver-dbapi", "psqlpy", AA}


def test_the_pool_tables_say_psqlpys_pool_fills_during_the_warm_up():
    cell = {"users": 10, "contender": "psqlpy-pool", "requests": 500, "errors": 0,
            "requests_per_s": 500.0, "latency_p50_ms": 1.0, "latency_p95_ms": 2.0,
            "latency_p99_ms": 3.0, "cpu_per_request_us": 900.0, "driver_version": "0.13.1"}
    pool = {"settings": pool_scenario.settings([10], 10, "query", 0.3, 1.0), "results": [cell]}
    text = "\n".join(report.pool_markdown(pool))
    assert ("psqlpy-pool opens its connections on demand (psqlpy's pool has no minimum\n"
            "size): the warm-up fills it.") in text
    assert "| 10 | psqlpy-pool | 500 |" in squeeze(text)

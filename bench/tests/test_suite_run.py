"""The whole suite end to end: a throwaway server, real drivers, saved results."""
from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
import time

import pytest

from bench import pgbench
from bench import pipeline_scenario as ps
from bench.runner import run_worker
from bench.server import REPO_ROOT, BenchServer

from .markdown import squeeze

asyncpg = pytest.importorskip("asyncpg")
if shutil.which("initdb") is None and not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
    pytest.skip("no PostgreSQL server binaries", allow_module_level=True)


def _saved_run(folder):
    """The one <timestamp>/ run a filtered run saved in `folder`: it leaves latest/ alone."""
    assert not (folder / "latest").exists()
    (run,) = [p for p in folder.iterdir() if p.is_dir()]
    return run


def test_small_run_saves_a_table_json_and_an_error_cell(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--drivers", "asyncpg,pgbench",
         "--workloads", "oneplusone,copyfrom", "--concurrency", "2",
         "--duration", "0.3", "--warmup", "0.1", "--output", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    run = _saved_run(tmp_path)
    report = json.loads((run / "results.json").read_text())
    assert report["run"] == "partial"
    assert report["partial_because"] == ["--drivers", "--workloads/--skip", "--concurrency",
                                         "--duration", "--warmup"]
    if (REPO_ROOT / ".git").exists():  # a checkout (or worktree), not an unpacked sdist
        assert len(report["commit"]) == 40 and isinstance(report["dirty"], bool)
    assert "left alone: a partial run (--drivers," in proc.stderr
    cells = {(r["workload"], r["driver"]): r for r in report["results"]}
    assert sorted(cells) == [
        ("copyfrom", "asyncpg"), ("copyfrom", "asyncpg (A/A)"), ("copyfrom", "pgbench"),
        ("oneplusone", "asyncpg"), ("oneplusone", "asyncpg (A/A)"), ("oneplusone", "pgbench"),
    ]
    assert cells[("copyfrom", "pgbench")]["error"] == "pgbench cannot express this workload"
    for key in [("oneplusone", "asyncpg"), ("oneplusone", "pgbench"), ("copyfrom", "asyncpg")]:
        cell = cells[key]
        assert "error" not in cell, cell
        assert cell["queries"] > 0
    assert cells[("copyfrom", "asyncpg")]["rows"] == 10_000 * cells[("copyfrom", "asyncpg")]["queries"]
    assert report["machine"]["drivers"]["asyncpg"] == asyncpg.__version__
    assert report["machine"]["server"].startswith("PostgreSQL ")
    assert "| oneplusone | 2 |" in squeeze(proc.stdout)
    assert (run / "results.md").read_text().startswith("# mypgdriver benchmark (partial run)")


def test_worker_turns_an_unknown_driver_into_an_error_cell():
    spec = {"driver": "no-such-driver", "workload": "oneplusone", "concurrency": 1,
            "warmup": 0.0, "duration": 0.1, "params": {}}
    assert run_worker(spec, None, timeout=60) == {"error": "KeyError: 'no-such-driver'"}


def test_pool_scenario_and_memory_probe_run_and_are_saved(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--drivers", "asyncpg", "--workloads", "pool,cursor_1m",
         "--pool-users", "3", "--pool-size", "2", "--duration", "0.3", "--warmup", "0.1",
         "--output", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((_saved_run(tmp_path) / "results.json").read_text())
    assert report["results"] == []
    assert report["pool"]["settings"]["levels"] == [3]
    assert report["pool"]["settings"]["pool_size"] == 2
    pool = {(r["users"], r["contender"]): r for r in report["pool"]["results"]}
    assert sorted(pool) == [(3, "asyncpg-pool"), (3, "asyncpg-pool (A/A)")]
    for cell in pool.values():
        assert "error" not in cell, cell
        assert cell["requests"] > 0
        assert 4 * cell["requests"] <= cell["queries"] <= 10 * cell["requests"]
        assert cell["driver_version"] == asyncpg.__version__
    (probe,) = report["memory"]["results"]
    assert probe["driver"] == "asyncpg"
    assert "error" not in probe, probe
    assert probe["rows"] == 1_000_000
    assert probe["peak_rss_growth_mb"] >= 0
    assert report["memory"]["target_mb"] == 50.0
    assert "| users | A/A | asyncpg-pool |" in squeeze(proc.stdout)
    assert "| asyncpg | " in squeeze(proc.stdout)
    assert "## Memory: 1,000,000 rows through a cursor" in proc.stdout


def test_pipeline_scenario_and_shortcut_level_run_and_are_saved(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--drivers", "asyncpg,pgbench",
         "--workloads", "pipeline_lookup5,pool_shortcuts", "--duration", "0.3",
         "--warmup", "0.1", "--no-control", "--output", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((_saved_run(tmp_path) / "results.json").read_text())
    assert report["results"] == []
    cells = {r["contender"]: r for r in report["pipeline"]["results"]}
    assert sorted(cells) == ["asyncpg-pool1", "asyncpg-pool10", "pgbench-1conn",
                             "pgbench-pipeline", "pgbench-pipeline-extended",
                             "pgbench-pipeline-sync"]
    try:
        pgbench.syncpipeline_pgbench()
    except pgbench.PgbenchError as exc:  # no pgbench 17+ here: its cell says so
        assert cells.pop("pgbench-pipeline-sync") == {
            "variant": "pipeline_lookup5", "contender": "pgbench-pipeline-sync",
            "error": str(exc)}
    else:
        assert cells["pgbench-pipeline-sync"]["queries"] % 100 == 0
        assert pgbench.major(cells["pgbench-pipeline-sync"]["driver_version"]) >= 17
    for name, cell in cells.items():
        assert "error" not in cell, (name, cell)
        assert cell["variant"] == "pipeline_lookup5"
        assert cell["queries"] > 0 and cell["rows"] == 5 * cell["queries"]
    assert cells["asyncpg-pool10"]["connections"] == 10
    assert cells["pgbench-pipeline"]["queries"] % 100 == 0
    (shortcuts,) = report["pool_shortcuts"]["results"]
    assert (shortcuts["users"], shortcuts["contender"]) == (200, "asyncpg-shortcuts")
    assert "error" not in shortcuts and shortcuts["requests"] > 0
    assert report["pool_shortcuts"]["settings"]["pool_size"] == 4
    assert ("## Pipeline scenario: queries/s (ratio to asyncpg's pool of 10; higher is better)"
            in proc.stdout)
    assert "## Pool shortcuts: requests/s (ratio to asyncpg's pool; higher is better)" in proc.stdout


def _transactions_of(server, executable, script, pipelines, at_least):
    """Transactions the server committed while pgbench ran `script` `pipelines` times."""
    def committed():
        return int(server.psql("SELECT xact_commit FROM pg_stat_database "
                               "WHERE datname = current_database()"))

    before = committed()
    pgbench.run_script(server.params, script, 1, transactions=pipelines, log=False,
                       executable=executable)
    deadline = time.monotonic() + 5  # the backend reports its counts as it exits
    while (count := committed() - before) < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def test_pgbench_pipeline_sync_makes_each_statement_its_own_transaction():
    try:
        executable = pgbench.syncpipeline_pgbench()
    except pgbench.PgbenchError as exc:
        pytest.skip(str(exc))
    server = BenchServer.start()
    try:
        # A pgbench 17+ runs against the bench's server (whatever its version).
        assert pgbench.major(pgbench.version(executable)) >= 17
        synced = _transactions_of(server, executable,
                                  ps.pgbench_script(ps.ONEPLUSONE, 100, sync_each=True), 5, 500)
        one_sync = _transactions_of(server, executable, ps.pgbench_script(ps.ONEPLUSONE, 100),
                                    5, 5)
    finally:
        server.stop()
    # Both include pgbench's own start-up (about 100 here, the same for both):
    # 5 pipelines add 500 transactions with a Sync per statement, 5 with one per pipeline.
    assert synced >= 500
    assert 480 <= synced - one_sync <= 520, (synced, one_sync)

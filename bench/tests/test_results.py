"""What a run records and where it goes, and how its tables and charts look (no database).

`cli.main` runs here with a fake server and a fake runner that answers
every planned cell at once, so that a whole run's results.json, results.md
and charts can be checked without measuring anything.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench import cli, provenance, report
from bench.contenders import LINEUPS, OURS, driver_of, is_control
from bench.runner import Cell, MemoryProbe, PoolCell, RunResults
from tools.pgbouncer import PgbouncerBinary

from .markdown import squeeze, tables

CHECKOUT = {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": True}


class _FakeServer:
    description = "PostgreSQL 99.0 (fake)"
    params: dict[str, Any] = {}

    @classmethod
    def start(cls) -> "_FakeServer":
        return cls()

    def stop(self) -> None:
        pass


def _result(cell: Any) -> dict[str, Any]:
    """A plausible result for any job; mypgdriver a little faster, psycopg2 failing."""
    if isinstance(cell, MemoryProbe):
        return {"rows": 1_000_000, "seconds": 1.0, "rows_per_s": 1e6, "rss_start_mb": 30.0,
                "peak_rss_growth_mb": 2.0, "method": "VmHWM", "driver_version": "1"}
    label = cell.label
    speed = 1.3 if driver_of(label) == OURS else 1.0
    # Counts over one second: combining rounds gives the same rates back.
    if isinstance(cell, PoolCell):
        requests = int(100 * speed)
        return {"requests": requests, "queries": 5 * requests, "errors": 0, "elapsed": 1.0,
                "cpu_seconds": 0.1, "requests_per_s": float(requests),
                "queries_per_s": 5.0 * requests, "latency_p50_ms": 1.0, "latency_p95_ms": 2.0,
                "latency_p99_ms": 3.0, "cpu_per_request_us": 1000.0, "driver_version": "1"}
    if isinstance(cell, Cell) and label == "psycopg2":
        return {"error": "ImportError: no psycopg2 here"}
    rate = 2_000_000 if label == "pgbench" else int(40_000 * speed)
    return {"queries": rate, "rows": rate, "elapsed": 1.0, "queries_per_s": float(rate),
            "rows_per_s": float(rate), "latency_mean_ms": 1.0, "latency_p50_ms": 1.0,
            "latency_p99_ms": 2.0, "cpu_seconds": rate * 1e-4, "cpu_per_query_us": 100.0,
            "driver_version": "1", "event_loop": "uvloop 0.0", "connections": 1}


class _FakeRunner:
    def __init__(self, server: Any, options: Any) -> None:
        pass

    def run(self, cells: list[Any], on_start: Any, on_finish: Any) -> RunResults:
        results = RunResults()
        for cell in cells:
            results.add(cell, _result(cell))
        return results


FAKE_PGBOUNCER = (PgbouncerBinary(Path("/nowhere/pgbouncer"), (1, 25, 2), "PgBouncer 1.25.2"),
                  "PgBouncer 1.25.2")


@pytest.fixture
def fake_run(monkeypatch):
    """Runs `python -m bench ARGS` with fakes; charts left out unless asked for.

    pgbouncer is "found" without looking for one: the pooler cells are
    answered by the fake runner.
    """
    monkeypatch.setattr(cli, "BenchServer", _FakeServer)
    monkeypatch.setattr(cli, "Runner", _FakeRunner)
    monkeypatch.setattr(cli.provenance, "checkout_state", lambda root: dict(CHECKOUT))
    monkeypatch.setattr(cli.pooler_scenario, "locate_pgbouncer", lambda: FAKE_PGBOUNCER)

    def run(*argv: str, charts: bool = False) -> int:
        if not charts:
            monkeypatch.setattr(report, "figures", lambda full: {})
        return cli.main(list(argv))

    return run


def _runs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "latest")


# -- what kind of run, and where its results go ------------------------------------------


@pytest.mark.parametrize("argv, kind, because", [
    ([], "full", []),
    (["--pin"], "full", []),
    (["--rounds", "3", "--concurrency", "1,10"], "full", []),  # the defaults, spelled out
    (["--quick"], "smoke", ["--quick"]),
    (["--quick", "--drivers", "asyncpg"], "smoke", ["--quick"]),
    (["--drivers", "asyncpg,mypgdriver"], "partial", ["--drivers"]),
    (["--skip", "pool"], "partial", ["--workloads/--skip"]),
    (["--duration", "3", "--no-control"], "partial", ["--duration", "--no-control"]),
])
def test_run_kind(argv, kind, because):
    args = cli.parser().parse_args(argv)
    assert cli.run_kind(args, cli.options_from(args)) == (kind, because)


def _old_latest(folder: Path) -> Path:
    latest = folder / "latest"
    latest.mkdir(parents=True)
    (latest / "results.json").write_text('{"run": "full", "old": true}\n')
    return latest


@pytest.mark.parametrize("argv, why", [
    (["--quick"], "a smoke run (--quick)"),
    (["--drivers", "asyncpg", "--workloads", "oneplusone"],
     "a partial run (--drivers, --workloads/--skip)"),
])
def test_a_smoke_or_filtered_run_leaves_latest_alone_and_says_so(fake_run, tmp_path, capsys,
                                                                    argv, why):
    latest = _old_latest(tmp_path)
    assert fake_run(*argv, "--output", str(tmp_path)) == 0
    assert json.loads((latest / "results.json").read_text()) == {"run": "full", "old": True}
    (run,) = _runs(tmp_path)
    assert (run / "results.json").exists() and (run / "results.md").exists()
    err = capsys.readouterr().err
    assert f"saved to {run}; {latest} left alone: {why}, only a full run replaces it" in err


def test_a_full_run_replaces_latest(fake_run, tmp_path, capsys):
    latest = _old_latest(tmp_path)
    assert fake_run("--output", str(tmp_path)) == 0
    saved = json.loads((latest / "results.json").read_text())
    assert saved["run"] == "full" and "old" not in saved
    (run,) = _runs(tmp_path)
    assert (run / "results.md").read_text() == (latest / "results.md").read_text()
    assert f"saved to {run} (and {latest})" in capsys.readouterr().err


def test_every_result_records_the_commit_and_the_dirty_flag(fake_run, tmp_path, capsys):
    fake_run("--quick", "--output", str(tmp_path))
    (run,) = _runs(tmp_path)
    saved = json.loads((run / "results.json").read_text())
    assert (saved["commit"], saved["dirty"]) == (CHECKOUT["commit"], True)
    out, err = capsys.readouterr()
    header = "- Commit: `0123456789ab`, **dirty**: the working tree differed from this commit"
    assert header in out
    assert header in (run / "results.md").read_text()
    assert "commit 0123456789ab with uncommitted changes (dirty)" in err


def test_a_smoke_run_is_labelled_in_its_output_and_files(fake_run, tmp_path, capsys):
    fake_run("--quick", "--output", str(tmp_path))
    (run,) = _runs(tmp_path)
    saved = json.loads((run / "results.json").read_text())
    assert (saved["run"], saved["note"]) == ("smoke", "smoke run: ratios are noise")
    out, err = capsys.readouterr()
    for text in (out, (run / "results.md").read_text()):
        assert text.startswith("# mypgdriver benchmark (smoke run), ")
        assert "**Smoke run: ratios are noise.**" in text
    assert err.splitlines()[1].startswith("smoke run: ratios are noise (--quick); commit ")


def test_results_saved_before_commits_were_recorded_say_so():
    text = report.markdown({"started": "2026-01-01T00:00:00+00:00",
                            "machine": provenance.machine_info("PostgreSQL 15.0", []),
                            "settings": {}, "results": []})
    assert "- Commit: not recorded" in text
    assert text.startswith("# mypgdriver benchmark, 2026")


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_checkout_state_sees_changes_and_new_files_but_not_ignored_ones(tmp_path):
    assert provenance.checkout_state(tmp_path) == {"commit": None, "dirty": None}
    _git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("results/\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    state = provenance.checkout_state(tmp_path)
    assert len(state["commit"]) == 40 and state["dirty"] is False
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.json").write_text("{}")
    assert provenance.checkout_state(tmp_path)["dirty"] is False
    (tmp_path / "b.py").write_text("y = 2\n")
    assert provenance.checkout_state(tmp_path)["dirty"] is True
    (tmp_path / "b.py").unlink()
    (tmp_path / "a.py").write_text("x = 2\n")
    assert provenance.checkout_state(tmp_path) == {"commit": state["commit"], "dirty": True}


# -- tables ----------------------------------------------------------------------------


def test_every_table_of_a_whole_run_is_aligned(fake_run, tmp_path, capsys):
    fake_run("--output", str(tmp_path))
    printed = capsys.readouterr().out
    found = tables(printed)
    # Rows/s, CPU and nine details tables; the dict rows' two; the pipeline's
    # two and its details, one per variant (two); the pool's two and its
    # shortcut level's two; the sync pool scenario's two; the pooler's three;
    # the memory table.
    assert len(found) == 2 + 9 + 2 + 2 + 2 + 2 + 2 + 2 + 3 + 1
    for lines in found:
        pipes = {tuple(i for i, ch in enumerate(line) if ch == "|") for line in lines}
        assert len(pipes) == 1, "\n".join(lines)
        marks = [cell.strip() for cell in lines[1].strip("|").split("|")]
        for line in [lines[0], *lines[2:]]:
            cells = line[1:-1].split("|")
            for cell, mark in zip(cells, marks):
                if not cell.strip():
                    continue
                if mark.endswith(":"):  # a number column: flush right, header too
                    assert cell.endswith(" ") and not cell.endswith("  "), (line, cell)
                else:
                    assert cell.startswith(" ") and not cell.startswith("  "), (line, cell)
    # The A/A column and the control's detail rows are among them.
    text = squeeze(printed)
    assert "| workload | c | A/A | asyncpg | mypgdriver |" in text
    assert "| asyncpg (A/A) | 1 | 40k |" in text
    assert "| 10 | asyncpg-pool (A/A) | 100 | 1.00 |" in text
    assert "### pipeline_lookup5" in text
    assert "| asyncpg-pool10 (A/A) | 1 | 40k | 1.00 |" in text


def test_a_table_right_aligns_numbers_and_keeps_markdown_marks():
    assert report.table(["name", "n"], [["a", "1"], ["long name", "12,345"], ["short"]],
                        [False, True]) == [
        "| name      |      n |",
        "| --------- | -----: |",
        "| a         |      1 |",
        "| long name | 12,345 |",
        "| short     |        |",
    ]


# -- charts ----------------------------------------------------------------------------


def _bars_and_lines(fig: Any) -> list[tuple[str, Any, Any]]:
    """(label, face colour, edge colour) of every labelled bar series and line in `fig`."""
    found = []
    for ax in fig.axes:
        for container in ax.containers:
            patch = container.patches[0]
            found.append((container.get_label(), patch.get_facecolor(), patch.get_edgecolor()))
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                found.append((line.get_label(), line.get_color(), None))
    return found


def test_each_contender_has_a_colour_of_its_own_and_green_is_only_mypgdriver(
        fake_run, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_rgba

    fake_run("--output", str(tmp_path), charts=True)
    saved = json.loads((tmp_path / "latest" / "results.json").read_text())
    drawn = report.figures(saved)
    assert {"rows_per_s.png", "rows_per_s_oneplusone.png", "pipeline.png", "pool.png",
            "sync_pool.png", "pooler.png", "cursor_1m_rss.png"} <= set(drawn)
    ours = to_rgba(report.DRIVER_COLOURS[OURS])
    # label -> colour over all the charts: one colour map for all of them.
    colour_of: dict[str, tuple[float, ...]] = {}
    labels = set()
    try:
        for name, fig in drawn.items():
            width, height = fig.get_size_inches() * report.DPI
            assert width <= 1000, name  # fits the docs' text column
            in_chart: dict[str, tuple[float, ...]] = {}
            for label, face, edge in _bars_and_lines(fig):
                labels.add(label)
                if label.startswith("target"):  # the memory chart's target line
                    continue
                face = to_rgba(face)
                if is_control(label):
                    assert face == to_rgba(report.CONTROL_COLOUR), (name, label)
                    continue
                assert colour_of.setdefault(label, face) == face, (name, label)
                in_chart.setdefault(label, face)
                # mypgdriver's colour is for mypgdriver used as intended (the
                # first contender of its lineup), outlined in black; not for
                # another driver, nor for mypgdriver-connect (no pool).
                assert (face == ours) == report.is_highlighted(label), (name, label)
                if face == ours:
                    assert driver_of(label) == OURS, (name, label)
                    assert to_rgba(edge) == to_rgba("black"), (name, label)
            # No two contenders of one chart share a colour.
            assert len(set(in_chart.values())) == len(in_chart), (name, in_chart)
    finally:
        for fig in drawn.values():
            report._pyplot().close(fig)
    assert colour_of["mypgdriver-connect"] != ours
    assert {"mypgdriver", "mypgdriver-1conn", "mypgdriver-pool", "mypgdriver-cache"} <= {
        label for label, face in colour_of.items() if face == ours}
    # Every lineup's control and the pool and pipeline contenders were drawn.
    assert {lineup.control for lineup in LINEUPS if lineup.control in labels} >= {
        "asyncpg (A/A)", "asyncpg-pool (A/A)", "asyncpg-pool10 (A/A)"}
    assert {"mypgdriver-pool", "mypgdriver-connect", "psycopg-pool", "asyncpg-pool1",
            "psycopg-pipeline", "pgbench-pipeline-sync", "mypgdriver-sync",
            "mypgdriver-sync-pool", "psycopg2-pool", "psycopg-sync-pool (A/A)"} <= labels
    # The blocking API has a colour of its own, not mypgdriver's green.
    assert colour_of["mypgdriver-sync"] != ours
    assert colour_of["mypgdriver-sync"] == colour_of["mypgdriver-sync-pool"]


def test_the_colour_map_gives_every_lineup_distinct_colours():
    # Every contender the suite knows, chart or not: a new contender must not
    # take a colour already used in its lineup, nor mypgdriver's.
    for lineup in LINEUPS:
        colours = [report.colour_of(label) for label in (*lineup.contenders, lineup.control)]
        assert len(set(colours)) == len(colours), lineup.contenders
        for label, colour in zip(lineup.contenders, colours):
            assert (colour == report.DRIVER_COLOURS[OURS]) == (
                lineup.drivers[label] == OURS and report.is_highlighted(label)), label
            assert colour != report.UNKNOWN_COLOUR, label


def test_pgbench_is_a_line_that_leaves_the_scale_to_the_drivers(fake_run, tmp_path):
    pytest.importorskip("matplotlib")
    fake_run("--quick", "--workloads", "oneplusone", "--output", str(tmp_path), charts=True)
    (run,) = _runs(tmp_path)
    saved = json.loads((run / "results.json").read_text())
    drawn = report.throughput_figures(saved["results"])
    try:
        (ax,) = drawn["rows_per_s_oneplusone.png"].axes
        bottom, top = ax.get_ylim()
        # The drivers' 52k is the tallest bar; pgbench's 2M does not set the scale.
        assert 52_000 < top < 2 * 52_000
        assert [line.get_label() for line in ax.get_lines()] == ["pgbench"]
        assert any("pgbench 2M ↑" == t.get_text() for t in ax.texts)
        assert "higher is better" in ax.get_title()
    finally:
        for fig in drawn.values():
            report._pyplot().close(fig)


def test_redraw_rebuilds_the_report_and_charts_from_results_json(fake_run, tmp_path):
    pytest.importorskip("matplotlib")
    fake_run("--output", str(tmp_path), charts=True)
    latest = tmp_path / "latest"
    before = (latest / "results.md").read_text()
    for png in latest.glob("*.png"):
        png.unlink()
    (latest / "results.md").unlink()
    assert report.redraw(latest) == []
    assert (latest / "results.md").read_text() == before
    assert {"pipeline.png", "pool.png", "rows_per_s.png"} <= {p.name for p in latest.iterdir()}

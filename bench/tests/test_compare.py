"""bench.compare: a cell is flagged only when it moved further than the A/A control did."""
from __future__ import annotations

import json
from pathlib import Path

from bench import compare


def _run(folder: Path, mypg: float, control: float, sync_pool: float) -> Path:
    folder.mkdir()
    results = [
        {"workload": "pg_type", "concurrency": 1, "driver": "asyncpg", "rows_per_s": 100.0},
        {"workload": "pg_type", "concurrency": 1, "driver": "asyncpg (A/A)",
         "rows_per_s": control},
        {"workload": "pg_type", "concurrency": 1, "driver": "mypgdriver", "rows_per_s": mypg},
    ]
    sync = [{"users": 10, "contender": "psycopg-sync-pool", "requests_per_s": 50.0},
            {"users": 10, "contender": "psycopg-sync-pool (A/A)", "requests_per_s": 50.0},
            {"users": 10, "contender": "mypgdriver-sync-pool", "requests_per_s": sync_pool}]
    (folder / "results.json").write_text(json.dumps(
        {"results": results, "sync_pool": {"results": sync}}))
    return folder


def test_a_change_within_the_aa_spread_is_not_flagged(tmp_path: Path) -> None:
    before = _run(tmp_path / "b", mypg=120.0, control=95.0, sync_pool=60.0)
    after = _run(tmp_path / "a", mypg=116.0, control=100.0, sync_pool=60.0)
    lines, slower = compare.compare([before], [after])
    assert slower == 0
    assert "| pg_type | 1 | mypgdriver | 1.2 | 1.16 | -3.3% | 5.0% |  |" in lines
    assert "asyncpg 5.0%" in lines[1]


def test_a_cell_slower_than_the_aa_spread_is_flagged(tmp_path: Path) -> None:
    before = _run(tmp_path / "b", mypg=120.0, control=98.0, sync_pool=60.0)
    after = _run(tmp_path / "a", mypg=120.0, control=100.0, sync_pool=45.0)
    lines, slower = compare.compare([before], [after])
    assert slower == 1
    assert ("| sync_pool | 10 | mypgdriver-sync-pool | 1.2 | 0.9 | -25.0% | 0.0% | "
            "worse beyond A/A |") in lines
    assert compare.main(["--before", str(before), "--after", str(after)]) == 1


def test_runs_of_one_tree_give_each_cell_its_own_spread_and_cpu_is_lower_better(
        tmp_path: Path) -> None:
    for name, mypg in (("b1", 120.0), ("b2", 108.0), ("a1", 110.0), ("a2", 112.0)):
        folder = _run(tmp_path / name, mypg=mypg, control=100.0, sync_pool=60.0)
        data = json.loads((folder / "results.json").read_text())
        for row in data["results"]:
            row["cpu_per_query_us"] = 1000.0 / row["rows_per_s"]
        (folder / "results.json").write_text(json.dumps(data))
    before = [tmp_path / "b1", tmp_path / "b2"]
    after = [tmp_path / "a1", tmp_path / "a2"]
    lines, worse = compare.compare(before, after, "rate")
    # Medians 1.14 and 1.11: -2.6%, within the 11.1% the two before runs were apart.
    assert worse == 0
    assert "| pg_type | 1 | mypgdriver | 1.14 | 1.11 | -2.6% | 11.1% |  |" in lines
    lines, worse = compare.compare(before, after, "cpu")
    assert worse == 0
    assert any(line.startswith("| pg_type | 1 | mypgdriver |") and "-2.4%" in line
               for line in lines)

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
    assert "| pg_type | 1 | mypgdriver | 1.20 | 1.16 | -3.3% |  |" in lines
    assert lines[0].startswith("A/A spread per lineup")
    assert "asyncpg 5.0%" in lines[0]


def test_a_cell_slower_than_the_aa_spread_is_flagged(tmp_path: Path) -> None:
    before = _run(tmp_path / "b", mypg=120.0, control=98.0, sync_pool=60.0)
    after = _run(tmp_path / "a", mypg=120.0, control=100.0, sync_pool=45.0)
    lines, slower = compare.compare([before], [after])
    assert slower == 1
    assert ("| sync_pool | 10 | mypgdriver-sync-pool | 1.20 | 0.90 | -25.0% | "
            "slower beyond A/A |") in lines
    assert compare.main(["--before", str(before), "--after", str(after)]) == 1

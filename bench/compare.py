"""Two trees' benchmark runs side by side: is any cell slower beyond its A/A spread?

    python -m bench.compare --before RUN_DIR... --after RUN_DIR...

Each RUN_DIR is an output folder of ``python -m bench`` (its results.json),
run from one tree (``--before``: the baseline tree, ``--after``: the
changed one), ideally interleaved (before, after, before, after) so that
the machine's drift falls on both.  Rows/s move 10-20% from run to run
here, so each cell is compared as its ratio to asyncpg measured in the same
run (the lineup's baseline), and that ratio's change is set against the
A/A control of the same runs: asyncpg measured twice, whose ratio to itself
says how far a cell moves with no change at all.  A cell is flagged when
its change is beyond the largest A/A deviation seen in any of the runs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from bench.contenders import POOL, POOL_SHORTCUTS, SYNC_POOL, THROUGHPUT, Lineup

Cell = tuple[str, int, str]     # (workload or scenario, concurrency or users, contender)


#: (section of results.json, its lineup, the rate compared, the cell's name and level).
SECTIONS = (
    ("results", THROUGHPUT, "rows_per_s", "workload", "concurrency", "driver"),
    ("pool", POOL, "requests_per_s", None, "users", "contender"),
    ("pool_shortcuts", POOL_SHORTCUTS, "requests_per_s", None, "users", "contender"),
    ("sync_pool", SYNC_POOL, "requests_per_s", None, "users", "contender"),
)


def _rows(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    part = data.get(section)
    if isinstance(part, dict):
        part = part.get("results")
    return part or []


def _cells(run: Path) -> dict[Cell, tuple[float, Lineup]]:
    """Cell -> (its rate relative to its lineup's baseline in that run, the lineup)."""
    data: dict[str, Any] = json.loads((run / "results.json").read_text())
    out: dict[Cell, tuple[float, Lineup]] = {}
    for section, lineup, metric, name, level, who in SECTIONS:
        rate = {(row[name] if name else section, row[level], row[who]): row[metric]
                for row in _rows(data, section) if row.get(metric)}
        for (cell, at, contender), value in rate.items():
            base = rate.get((cell, at, lineup.baseline))
            if base:
                out[cell, at, contender] = (value / base, lineup)
    return out


def _merged(runs: Sequence[Path]) -> dict[Cell, float]:
    """The median ratio of each cell over `runs`."""
    values: dict[Cell, list[float]] = {}
    for run in runs:
        for key, (ratio, _) in _cells(run).items():
            values.setdefault(key, []).append(ratio)
    return {key: statistics.median(v) for key, v in values.items()}


def compare(before: Sequence[Path], after: Sequence[Path]) -> tuple[list[str], int]:
    """The table's lines (markdown) and how many cells are slower beyond the A/A spread."""
    b, a = _merged(before), _merged(after)
    # Per lineup: the largest deviation of its A/A control from 1 in any run.
    spread: dict[str, float] = {}
    for runs in (before, after):
        for run in runs:
            for (_, _, contender), (ratio, lineup) in _cells(run).items():
                if contender == lineup.control:
                    spread[lineup.baseline] = max(spread.get(lineup.baseline, 0.0),
                                                  abs(ratio - 1.0))
    lines = ["A/A spread per lineup (largest |control / baseline - 1| in any run): "
             + ", ".join(f"{base} {value:.1%}" for base, value in spread.items()),
             "",
             "| cell | c/users | contender | before (x baseline) | after (x baseline) | change "
             "| |",
             "| --- | ---: | --- | ---: | ---: | ---: | --- |"]
    slower = 0
    lineups = {lineup.baseline: lineup for _, lineup, *_ in SECTIONS}
    for key in sorted(b.keys() & a.keys(), key=str):
        cell, at, contender = key
        lineup = next((ln for ln in lineups.values()
                       if contender in ln.contenders or contender == ln.control), None)
        if lineup is None or contender in (lineup.baseline, lineup.control):
            continue
        change = a[key] / b[key] - 1.0
        limit = spread.get(lineup.baseline)
        flag = ""
        if limit is not None and change < -limit:
            flag = "slower beyond A/A"
            slower += 1
        lines.append(f"| {cell} | {at} | {contender} | {b[key]:.2f} | {a[key]:.2f} | "
                     f"{change:+.1%} | {flag} |")
    return lines, slower


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the comparison; exit 1 if a cell is slower beyond the A/A spread."""
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", nargs="+", type=Path, required=True)
    parser.add_argument("--after", nargs="+", type=Path, required=True)
    options = parser.parse_args(argv)
    lines, slower = compare(options.before, options.after)
    print("\n".join(lines))
    print(f"\n{slower} cell(s) slower beyond the A/A spread")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())

"""Two trees' benchmark runs side by side: is any cell slower beyond its A/A spread?

    python -m bench.compare --before RUN_DIR... --after RUN_DIR...

Each RUN_DIR is an output folder of ``python -m bench`` (its results.json),
run from one tree (``--before``: the baseline tree, ``--after``: the
changed one), ideally interleaved (before, after, before, after) so that
the machine's drift falls on both.  ``--metric rate`` compares rows (or
requests) per second as each cell's ratio to the lineup's baseline in the
same run; ``--metric cpu`` the client CPU per query (request), the steady
number.  Each cell's change of medians is set against its A/A spread: how
far the runs of the same tree were apart (or, with one run per tree, the
lineup's A/A control: its baseline measured twice in a run).  A cell is
flagged when it got worse by more than that.
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


#: (section of results.json, its lineup, the cell's name and level fields, who).
SECTIONS = (
    ("results", THROUGHPUT, "workload", "concurrency", "driver"),
    ("pool", POOL, None, "users", "contender"),
    ("pool_shortcuts", POOL_SHORTCUTS, None, "users", "contender"),
    ("sync_pool", SYNC_POOL, None, "users", "contender"),
)

#: --metric -> (the fields read, per section kind; True if higher is better).
METRICS = {
    # Rows (requests) per second, as a ratio to the lineup's baseline in the
    # same run: what the report charts, and what the machine's drift moves.
    "rate": (("rows_per_s", "requests_per_s"), True),
    # Client CPU per query (request), as measured: the steady number.
    "cpu": (("cpu_per_query_us", "cpu_per_request_us"), False),
}


def _rows(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    part = data.get(section)
    if isinstance(part, dict):
        part = part.get("results")
    return part or []


def _cells(run: Path, metric: str) -> dict[Cell, tuple[float, Lineup]]:
    """Cell -> (its value in that run, its lineup); rates relative to the lineup's baseline."""
    data: dict[str, Any] = json.loads((run / "results.json").read_text())
    fields, _ = METRICS[metric]
    out: dict[Cell, tuple[float, Lineup]] = {}
    for section, lineup, name, level, who in SECTIONS:
        field = fields[0] if section == "results" else fields[1]
        value = {(row[name] if name else section, row[level], row[who]): row[field]
                 for row in _rows(data, section) if row.get(field)}
        for (cell, at, contender), v in value.items():
            if metric == "rate":
                base = value.get((cell, at, lineup.baseline))
                if not base:
                    continue
                v = v / base
            out[cell, at, contender] = (v, lineup)
    return out


def _spread(values: Sequence[float]) -> float:
    """How far one tree's runs of a cell are apart: max/min - 1."""
    return max(values) / min(values) - 1.0 if len(values) > 1 else 0.0


def compare(before: Sequence[Path], after: Sequence[Path],
            metric: str = "rate") -> tuple[list[str], int]:
    """The table's lines (markdown) and how many cells are worse beyond their A/A spread.

    A cell's A/A spread is how far the runs of the same tree were apart
    (before's runs among themselves, after's among themselves: the larger);
    with one run per tree, the lineup's A/A control (its baseline measured
    twice in a run) stands in.
    """
    _, higher_better = METRICS[metric]
    b: dict[Cell, list[float]] = {}
    a: dict[Cell, list[float]] = {}
    control: dict[str, float] = {}
    for runs, into in ((before, b), (after, a)):
        for run in runs:
            cells = _cells(run, metric)
            for key, (value, lineup) in cells.items():
                into.setdefault(key, []).append(value)
                if key[2] == lineup.control:
                    base = cells.get((key[0], key[1], lineup.baseline))
                    if base:
                        ratio = value if metric == "rate" else value / base[0]
                        control[lineup.baseline] = max(control.get(lineup.baseline, 0.0),
                                                       abs(ratio - 1.0))
    lines = [f"metric: {metric} ({'higher' if higher_better else 'lower'} is better); "
             f"{len(before)} run(s) before, {len(after)} after",
             "A/A control per lineup (largest |control / baseline - 1| in any run): "
             + ", ".join(f"{base} {value:.1%}" for base, value in control.items()),
             "",
             "| cell | c/users | contender | before | after | change (+ better) | A/A | |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    worse = 0
    lineups = [lineup for _, lineup, *_ in SECTIONS]
    for key in sorted(b.keys() & a.keys(), key=str):
        cell, at, contender = key
        lineup = next((ln for ln in lineups if contender in ln.contenders), None)
        if lineup is None or contender in (lineup.baseline, lineup.control):
            continue
        mb, ma = statistics.median(b[key]), statistics.median(a[key])
        change = ma / mb - 1.0 if higher_better else mb / ma - 1.0
        if len(b[key]) > 1 or len(a[key]) > 1:
            limit = max(_spread(b[key]), _spread(a[key]))
        else:
            limit = control.get(lineup.baseline, 0.0)
        flag = ""
        if change < -limit:
            flag = "worse beyond A/A"
            worse += 1
        lines.append(f"| {cell} | {at} | {contender} | {mb:.3g} | {ma:.3g} | {change:+.1%} | "
                     f"{limit:.1%} | {flag} |")
    return lines, worse


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the comparison; exit 1 if a cell is slower beyond the A/A spread."""
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", nargs="+", type=Path, required=True)
    parser.add_argument("--after", nargs="+", type=Path, required=True)
    parser.add_argument("--metric", choices=sorted(METRICS), default="rate")
    options = parser.parse_args(argv)
    lines, worse = compare(options.before, options.after, options.metric)
    print("\n".join(lines))
    print(f"\n{worse} cell(s) worse beyond their A/A spread")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())

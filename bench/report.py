"""Results out: the markdown tables, results.json and the charts, from result data only.

Everything here reads the dictionaries a run produced (or a results.json
read back): the names of contenders, baselines and controls come from
`contenders`, nothing from the runner or the scenarios, so a report can be
rebuilt from a saved run.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .contenders import (
    DICT_ROWS,
    DICT_ROWS_WORKLOAD,
    LINEUPS,
    OURS,
    PIPELINE,
    PIPELINE_CEILING,
    PIPELINE_OURS,
    PIPELINE_SYNC_CEILING,
    POOL,
    POOL_SHORTCUTS,
    POOLER,
    POOLER_OURS,
    POOLER_REFERENCE,
    SYNC_POOL,
    THROUGHPUT,
    Lineup,
    driver_of,
    is_control,
    is_main_contender,
)

ERROR_WIDTH = 50  # characters of an error message kept in a table cell
PIPELINE_CHART = "pipeline.png"
POOL_CHART = "pool.png"
SYNC_POOL_CHART = "sync_pool.png"
POOLER_CHART = "pooler.png"
MEMORY_CHART = "cursor_1m_rss.png"
OVERVIEW_CHART = "rows_per_s.png"
SMOKE_NOTE = "smoke run: ratios are noise"


def si(value: float) -> str:
    """A rate in a short form: 1.46M, 980k, 38.2k, 512."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            scaled = value / factor
            return f"{scaled:.3g}{suffix}" if scaled < 100 else f"{scaled:.0f}{suffix}"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def ms(value: float | None) -> str:
    """A latency in milliseconds for a table, or a dash when there is none."""
    return "–" if value is None else f"{value:,.2f}"


def _clip(text: str, width: int = ERROR_WIDTH) -> str:
    text = text.replace("|", "/").replace("\n", " ")
    return text[: width - 1] + "…" if len(text) > width else text


def _na(result: dict[str, Any]) -> str:
    return f"n/a ({_clip(result['error'])})"


def table(header: Sequence[str], rows: Iterable[Sequence[str]],
          numeric: Sequence[bool]) -> list[str]:
    """A markdown table whose columns line up in a terminal too.

    `numeric[i]` right-aligns column i (its header, its cells and its
    markdown alignment mark); the others are left-aligned.  Short rows are
    padded with empty cells.
    """
    body = [list(row) + [""] * (len(header) - len(row)) for row in rows]
    # Three dashes at least (and a colon) for the alignment row to be markdown.
    widths = [max([len(header[i]), 4 if numeric[i] else 3,
                   *(len(row[i]) for row in body)]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if right else c.ljust(w)
                                 for c, w, right in zip(cells, widths, numeric)) + " |"

    marks = ["-" * (w - 1) + ":" if right else "-" * w for w, right in zip(widths, numeric)]
    return [line(header), line(marks), *(line(row) for row in body)]


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value and base else "–"


def _groups(results: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, dict[str, Any]]]:
    """(workload, concurrency) -> driver label -> result, in run order."""
    groups: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["workload"], r["concurrency"]), {})[r["driver"]] = r
    return groups


def _labels(results: list[dict[str, Any]]) -> list[str]:
    """Driver labels in table order (contenders.THROUGHPUT), without the A/A control."""
    return THROUGHPUT.order([r["driver"] for r in results])


def split_dict_rows(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                             list[dict[str, Any]]]:
    """(the drivers' cells, the dict-row cells): the latter have a table of their own."""
    dict_rows = [r for r in results if r["driver"] in DICT_ROWS.contenders]
    return [r for r in results if r["driver"] not in DICT_ROWS.contenders], dict_rows


def _skipped(results: list[dict[str, Any]], key: str) -> dict[str, str]:
    """Contender label -> why it was not run, for cells skipped as a whole (the first reason)."""
    skipped: dict[str, str] = {}
    for r in results:
        if r.get("skipped"):
            skipped.setdefault(r[key], r["error"].removeprefix("skipped: "))
    return skipped


def _not_run_lines(results: list[dict[str, Any]], key: str = "driver") -> list[str]:
    """One line per skipped contender, with the reason its table cells clip."""
    return [f"- {label} was not run: {_clip(why, 4 * ERROR_WIDTH)}."
            for label, why in _skipped(results, key).items()]


def _cell(r: dict[str, Any] | None, metric: str, fmt: Callable[[float], str],
          base: float | None, is_base: bool) -> str:
    """One matrix cell: the value and its ratio to the baseline (with `base`), n/a or empty."""
    if r is None:
        return ""
    if "error" in r:
        return _na(r)
    if r.get(metric) is None:
        return "–"
    if base and not is_base:
        return f"{fmt(r[metric])} ({_ratio(r[metric], base)})"
    return fmt(r[metric])


def _matrix(results: list[dict[str, Any]], metric: str, fmt: Callable[[float], str],
            with_ratio: bool) -> list[str]:
    # The control has its own column, as a ratio: the noise next to the ratios.
    labels = _labels(results)
    control = any(r["driver"] == THROUGHPUT.control for r in results)
    rows = []
    for (workload, concurrency), by_driver in _groups(results).items():
        base = by_driver.get(THROUGHPUT.baseline, {}).get(metric)
        aa = [_ratio(by_driver.get(THROUGHPUT.control, {}).get(metric), base)] if control else []
        rows.append([workload, str(concurrency), *aa,
                     *(_cell(by_driver.get(label), metric, fmt, base if with_ratio else None,
                             label == THROUGHPUT.baseline) for label in labels)])
    header = ["workload", "c", *(["A/A"] if control else []), *labels]
    return table(header, rows, [False] + [True] * (len(header) - 1))


def _details(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    header = ["driver", "c", "rows/s", "queries/s", "mean ms", "p50 ms", "p99 ms",
              "CPU µs/query", f"rows/s vs {THROUGHPUT.baseline}", "peak RSS +MB"]
    # The control's row comes last in each group, as it ran.
    labels = [*_labels(results), THROUGHPUT.control]
    for workload in dict.fromkeys(r["workload"] for r in results):
        rows = []
        for (w, concurrency), by_driver in _groups(results).items():
            if w != workload:
                continue
            base = by_driver.get(THROUGHPUT.baseline, {}).get("rows_per_s")
            for label in labels:
                r = by_driver.get(label)
                if r is None:
                    continue
                if "error" in r:
                    rows.append([label, str(concurrency), _na(r)])
                    continue
                rows.append([
                    label, str(concurrency), si(r["rows_per_s"]), si(r["queries_per_s"]),
                    _fixed(r.get("latency_mean_ms"), 3), _fixed(r.get("latency_p50_ms"), 3),
                    _fixed(r.get("latency_p99_ms"), 3), _fixed(r.get("cpu_per_query_us"), 1),
                    _ratio(r["rows_per_s"], base), _fixed(r.get("rss_growth_mb"), 1),
                ])
        lines += ["", f"### {workload}", "",
                  *table(header, rows, [False] + [True] * (len(header) - 1))]
    return lines


def _fixed(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def run_header(report: dict[str, Any]) -> list[str]:
    """What kind of run this was and which code it measured, as the report's first lines.

    A smoke or partial run says so before any number; a result saved
    before commits were recorded says that instead of a commit.
    """
    lines = []
    kind = report.get("run", "full")
    if kind == "smoke":
        lines += ["**Smoke run: ratios are noise.** `--quick` measures each cell once, for a",
                  "second; the A/A column shows how far a ratio moves by noise alone. Compare",
                  "drivers with a full run (`python -m bench` without options).", ""]
    elif kind == "partial":
        why = ", ".join(report.get("partial_because", [])) or "options"
        lines += [f"**Partial run** (not the full suite: {why}): not comparable with a full",
                  "run as a whole.", ""]
    commit = report.get("commit")
    if "commit" not in report:
        source = "not recorded (a run from before commits were recorded)"
    elif commit is None:
        source = "unknown (not run from a git checkout)"
    else:
        dirty = report.get("dirty")
        source = f"`{commit[:12]}`" + (
            ", **dirty**: the working tree differed from this commit" if dirty
            else " (clean)" if dirty is False else "")
    return lines + [f"- Commit: {source}"]


def markdown(report: dict[str, Any]) -> str:
    """The whole report as markdown: setup, summary tables, details, pool and memory.

    Sections of parts that did not run (no throughput cells, no `pool` or
    `memory` key) are left out. Pool and memory charts listed in
    `report["charts"]` are shown in their sections.
    """
    m, s = report["machine"], report["settings"]
    results = report["results"]
    charts = report.get("charts", [])
    drivers = ", ".join(f"{d} {v}" for d, v in m["drivers"].items()) or "none measured"
    loops = ", ".join(f"{d}: {loop}" for d, loop in m["event_loops"].items())
    kind = report.get("run", "full")
    results, dict_rows = split_dict_rows(results)
    lines = [
        f"# mypgdriver benchmark{f' ({kind} run)' if kind != 'full' else ''}, "
        f"{report['started']}",
        "",
        *run_header(report),
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}",
        f"- {m['python']}; {m['server']}",
        f"- Drivers: {drivers}" + (f"; async event loop: {loops}" if loops else ""),
    ]
    if results or dict_rows:
        lines.append(
            f"- Cells: {s['warmup']:g} s warm-up, then {s['duration']:g} s measured"
            + (f", in {s['rounds']} rounds interleaving the drivers (rows/s and CPU over all "
               f"rounds, latency percentiles the median round's)" if s.get("rounds", 1) > 1
               else "")
            + "; "
            f"concurrency {', '.join(map(str, s['concurrency']))}; "
            f"pinning {'client core 0, server core 1 at c=1' if s['pin'] else 'off'}")
    if "pipeline" in report:
        lines.append(f"- Pipeline scenario: "
                     f"{pipeline_settings_text(report['pipeline']['settings'])}")
    if "pool" in report:
        lines.append(f"- Pool scenario: {pool_settings_text(report['pool']['settings'])}")
    if "pool_shortcuts" in report:
        lines.append(f"- Pool shortcuts: "
                     f"{pool_settings_text(report['pool_shortcuts']['settings'])}")
    if "sync_pool" in report:
        lines.append(f"- Sync pool scenario: "
                     f"{pool_settings_text(report['sync_pool']['settings'])}")
    if "pooler" in report and "skipped" not in report["pooler"]:
        lines.append(f"- Pooler scenario: {pooler_settings_text(report['pooler']['settings'])}")
    if results:
        lines += [
            "",
            f"## Rows/s (ratio to {THROUGHPUT.baseline}; higher is better)",
            "",
            f"A/A is {THROUGHPUT.baseline} measured a second time in the same run: how far a",
            "ratio moves from 1.00 by noise alone.",
            "",
            *_matrix(results, "rows_per_s", si, with_ratio=True),
            *(["", *not_run] if (not_run := _not_run_lines(results)) else []),
            "",
            "## Client CPU µs per query (lower is better)",
            "",
            *_matrix(results, "cpu_per_query_us", lambda v: f"{v:.1f}", with_ratio=False),
            "",
            "## Details",
            *_details(results),
        ]
    if dict_rows:
        lines += ["", *dict_rows_markdown(dict_rows, results)]
    if "pipeline" in report:
        lines += ["", *pipeline_markdown(report["pipeline"],
                                         PIPELINE_CHART if PIPELINE_CHART in charts else None)]
    if "pool" in report:
        lines += ["", *pool_markdown(report["pool"], POOL_CHART if POOL_CHART in charts else None)]
    if "pool_shortcuts" in report:
        lines += ["", *pool_shortcuts_markdown(report["pool_shortcuts"])]
    if "sync_pool" in report:
        lines += ["", *sync_pool_markdown(report["sync_pool"],
                                          SYNC_POOL_CHART if SYNC_POOL_CHART in charts else None)]
    if "pooler" in report:
        lines += ["", *pooler_markdown(report["pooler"],
                                       POOLER_CHART if POOLER_CHART in charts else None)]
    if "memory" in report:
        lines += ["", *memory_markdown(report["memory"],
                                       MEMORY_CHART if MEMORY_CHART in charts else None)]
    return "\n".join(lines) + "\n"


# -- dict rows on pg_type --------------------------------------------------------------


def dict_rows_markdown(dict_rows: list[dict[str, Any]],
                       results: list[dict[str, Any]]) -> list[str]:
    """The dict-row cells' tables: rows/s against psycopg's dict_row and each driver's own rows.

    `results` are the drivers' cells of the same run: the pg_type cell of
    the driver each dict-row contender belongs to (its Records or tuples)
    and asyncpg's A/A control, the noise of these cells too.
    """
    base_name = DICT_ROWS.baseline
    labels = DICT_ROWS.order([r["driver"] for r in dict_rows])
    by_level = {c: by_driver for (w, c), by_driver in _groups(dict_rows).items()}
    drivers = {c: by_driver for (w, c), by_driver in _groups(results).items()
               if w == DICT_ROWS_WORKLOAD}
    rows = []
    for concurrency, by_name in by_level.items():
        base = by_name.get(base_name, {}).get("rows_per_s")
        rows.append([str(concurrency),
                     *(_cell(by_name.get(label), "rows_per_s", si, base, label == base_name)
                       for label in labels)])
    header = ["c", *labels]
    lines = [
        f"## Dict rows on {DICT_ROWS_WORKLOAD}: rows/s (ratio to {base_name}; higher is better)",
        "",
        "Each driver's rows as dicts (column name -> value) in the pg_type cells of the",
        "same rounds: mypgdriver's `row_factory=mypgdriver.rows.dict_row` (asyncio and",
        "sync), psycopg's `row_factory=dict_row` (sync and async), psycopg2's",
        "`RealDictCursor` and psqlpy's `result()`; the same calls as each driver's own",
        "cells otherwise. \"vs own rows\" compares with the driver's own cell (Records or",
        "tuples) on pg_type.",
        "",
        *table(header, rows, [True] * len(header)),
    ]
    aa = [f"c={c} {_ratio(by.get(THROUGHPUT.control, {}).get('rows_per_s'), base)}"
          for c, by in drivers.items()
          if (base := by.get(THROUGHPUT.baseline, {}).get("rows_per_s"))
          and THROUGHPUT.control in by]
    if aa:
        lines += ["", f"A/A ({THROUGHPUT.baseline} measured twice in these rounds): "
                      f"{', '.join(aa)}."]
    header = ["contender", "c", "rows/s", f"vs {base_name}", "vs own rows", "own rows",
              "p50 ms", "p99 ms", "CPU µs/query"]
    rows = []
    for concurrency, by_name in by_level.items():
        base = by_name.get(base_name, {}).get("rows_per_s")
        for label in labels:
            r = by_name.get(label)
            if r is None:
                continue
            if "error" in r:
                rows.append([label, str(concurrency), _na(r)])
                continue
            own_label = DICT_ROWS.drivers[label]
            own = drivers.get(concurrency, {}).get(own_label, {}).get("rows_per_s")
            rows.append([label, str(concurrency), si(r["rows_per_s"]),
                         _ratio(r["rows_per_s"], base), _ratio(r["rows_per_s"], own),
                         own_label, _fixed(r.get("latency_p50_ms"), 3),
                         _fixed(r.get("latency_p99_ms"), 3), _fixed(r.get("cpu_per_query_us"), 1)])
    lines += ["", *table(header, rows, [False, True, True, True, True, False, True, True, True])]
    not_run = _not_run_lines(dict_rows)
    return lines + (["", *not_run] if not_run else [])


# -- the pool scenario -----------------------------------------------------------------


def pool_settings_text(settings: dict[str, Any]) -> str:
    """The pool scenario's settings in one line of prose."""
    low, high = settings["queries_per_request"]
    rounds = settings.get("rounds", 1)
    return (f"{low} to {high} queries per request, pool size {settings['pool_size']}, "
            f"{', '.join(map(str, settings['levels']))} concurrent users; "
            f"{settings['warmup']:g} s warm-up, then {settings['duration']:g} s measured per cell"
            + (f", {rounds} rounds (requests/s over all, percentiles the median round's)"
               if rounds > 1 else "")
            + ("; one pool shortcut call per statement" if settings.get("shortcuts") else
               "; one thread per user" if settings.get("threads") else
               f"; mypgdriver-connect opens a connection per {settings['connect_per']}"))


def _pool_levels(results: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    """users -> contender label -> result."""
    levels: dict[int, dict[str, dict[str, Any]]] = {}
    for r in results:
        levels.setdefault(r["users"], {})[r["contender"]] = r
    return levels


def pool_markdown(pool: dict[str, Any], chart: str | None = None) -> list[str]:
    """The pool scenario's tables: requests/s per level and contender, then the details."""
    control = any(r["contender"] == POOL.control for r in pool["results"])
    intro = [
        "Simulated web requests: each takes a connection from the pool, runs 4 to 10",
        "small queries (lookups, a short range, a count, a one-row update) and gives it",
        "back; all users run on one event loop. mypgdriver-connect has no pool: it opens",
        f"a connection per {pool['settings']['connect_per']}."
        + (" A/A is asyncpg's pool measured a second time." if control else ""),
    ]
    if any(r["contender"] == "psqlpy-pool" for r in pool["results"]):
        intro += ["psqlpy-pool opens its connections on demand (psqlpy's pool has no minimum",
                  "size): the warm-up fills it."]
    return _pool_tables(pool["results"], POOL, "Pool scenario", intro, chart)


def pool_shortcuts_markdown(section: dict[str, Any]) -> list[str]:
    """The shortcut level's tables, against asyncpg's pool used the same way."""
    results = section["results"]
    settings = section["settings"]
    control = any(r["contender"] == POOL_SHORTCUTS.control for r in results)
    intro = [
        f"The pool scenario's requests with {', '.join(map(str, settings['levels']))} users on "
        f"a pool of {settings['pool_size']}, each statement one `pool.fetchrow` / `fetch` /",
        "`fetchval` / `execute` call: the pool hands out a connection for that one",
        "statement, and no `acquire()` spans the request. psycopg_pool has no such",
        "methods, so it has no contender here."
        + (" A/A is asyncpg's measured a second time." if control else ""),
    ]
    return _pool_tables(results, POOL_SHORTCUTS, "Pool shortcuts", intro)


def sync_pool_markdown(section: dict[str, Any], chart: str | None = None) -> list[str]:
    """The sync pool scenario's tables, against psycopg_pool's ConnectionPool."""
    results = section["results"]
    control = any(r["contender"] == SYNC_POOL.control for r in results)
    intro = [
        "The pool scenario's requests served by threads, one per user, as a threaded",
        "WSGI application (Flask) serves them: psycopg_pool's `ConnectionPool`",
        "(psycopg-sync-pool), psycopg2's `ThreadedConnectionPool` (psycopg2-pool, behind a",
        "first-come-first-served gate of the pool's size: it raises instead of waiting when",
        "every connection is out) and `mypgdriver.sync.create_pool` (mypgdriver-sync-pool),",
        "all of the same size."
        + (" A/A is psycopg_pool's measured a second time." if control else ""),
    ]
    lines = _pool_tables(results, SYNC_POOL, "Sync pool scenario", intro, chart,
                         base_text="psycopg_pool's pool")
    not_run = _not_run_lines(results, "contender")
    return lines + (["", *not_run] if not_run else [])


def _pool_tables(results: list[dict[str, Any]], lineup: Lineup, name: str, intro: list[str],
                 chart: str | None = None, base_text: str = "asyncpg's pool") -> list[str]:
    base_name, aa_label = lineup.baseline, lineup.control
    labels = lineup.order([r["contender"] for r in results])
    levels = _pool_levels(results)
    control = any(r["contender"] == aa_label for r in results)
    rows = []
    for users, by_name in levels.items():
        base = by_name.get(base_name, {}).get("requests_per_s")
        aa = [_ratio(by_name.get(aa_label, {}).get("requests_per_s"), base)] if control else []
        rows.append([str(users), *aa,
                     *(_cell(by_name.get(label), "requests_per_s", si, base, label == base_name)
                       for label in labels)])
    header = ["users", *(["A/A"] if control else []), *labels]
    lines = [
        f"## {name}: requests/s (ratio to {base_text}; higher is better)",
        "",
        *intro,
        "",
        *table(header, rows, [True] * len(header)),
    ]
    if chart:
        lines += ["", f"![requests/s and p99 latency per contender]({chart})"]
    header = ["users", "contender", "requests/s", f"vs {base_name}", "p50 ms", "p95 ms",
              "p99 ms", f"p99 vs {base_name}", "CPU µs/request", "failed requests"]
    rows = []
    failures = []
    for users, by_name in levels.items():
        base = by_name.get(base_name, {})
        for label in [*labels, *([aa_label] if control else [])]:
            r = by_name.get(label)
            if r is None:
                continue
            if "error" in r:
                rows.append([str(users), label, _na(r)])
                continue
            cpu = r.get("cpu_per_request_us")
            rows.append([
                str(users), label, si(r["requests_per_s"]),
                _ratio(r["requests_per_s"], base.get("requests_per_s")),
                ms(r["latency_p50_ms"]), ms(r["latency_p95_ms"]), ms(r["latency_p99_ms"]),
                _ratio(r["latency_p99_ms"], base.get("latency_p99_ms")),
                "–" if cpu is None else f"{cpu:,.0f}", str(r["errors"]),
            ])
            if r.get("first_error"):
                failures.append(f"- {label}, {users} users: {r['errors']} failed requests, "
                                f"the first with {_clip(r['first_error'], 4 * ERROR_WIDTH)}")
    lines += ["", f"## {name}: latency and client CPU per request (lower is better)", "",
              "Latency is one whole request, from asking for a connection to giving it",
              "back. CPU is the client process's CPU time over the window divided by the",
              "requests finished in it.", "",
              *table(header, rows, [True, False, *[True] * (len(header) - 2)])]
    if failures:
        lines += ["", *failures]
    return lines


# -- the pipeline scenario -------------------------------------------------------------


def pipeline_settings_text(settings: dict[str, Any]) -> str:
    """The pipeline scenario's settings in one line of prose."""
    rounds = settings.get("rounds", 1)
    return (f"{settings['tasks']} tasks each looping on one query, "
            f"{settings['batch']} statements per pipeline (psycopg-pipeline, pgbench); "
            f"{settings['warmup']:g} s warm-up, then {settings['duration']:g} s measured per cell"
            + (f", {rounds} rounds (queries/s and CPU over all, percentiles the median "
               f"round's)" if rounds > 1 else "")
            + f"; pinning {'client core 0, server core 1' if settings.get('pin') else 'off'}")


def _pipeline_variants(results: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> contender label -> result (pipeline and pooler cells alike)."""
    variants: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        variants.setdefault(r["variant"], {})[r["contender"]] = r
    return variants


def _variant_matrix(results: list[dict[str, Any]], lineup: Lineup, metric: str,
                    fmt: Callable[[float], str], with_ratio: bool,
                    note: Callable[[dict[str, Any]], str] | None = None) -> list[str]:
    """One row per contender of `lineup` (the A/A after the baseline), one column per variant.

    Contenders go down the side, not across: their names are long and there
    are up to nine of them, while there are two or three variants, so the
    table stays narrow enough for a terminal or the docs' text column.  The
    A/A row always shows its ratio to the baseline (the noise), also where
    the other cells have none.  `note(result)` adds a word after a measured
    cell's value (the pooler's failed queries).
    """
    variants = _pipeline_variants(results)
    labels = _with_control(lineup.order([r["contender"] for r in results]), lineup,
                           (r["contender"] for r in results))
    rows = []
    for label in labels:
        cells = []
        for by_name in variants.values():
            base = by_name.get(lineup.baseline, {}).get(metric)
            ratio = with_ratio or label == lineup.control
            r = by_name.get(label)
            text = _cell(r, metric, fmt, base if ratio else None, label == lineup.baseline)
            extra = note(r) if note and r and "error" not in r else ""
            cells.append(f"{text} {extra}" if extra else text)
        rows.append([label, *cells])
    header = ["contender", *variants]
    return table(header, rows, [False] + [True] * len(variants))


def pipeline_markdown(pipeline: dict[str, Any], chart: str | None = None) -> list[str]:
    """The pipeline scenario's tables: queries/s and CPU per query, then the details.

    The details have a table per variant: with the variant in a column of its
    own, the table was eleven columns wide.
    """
    results = pipeline["results"]
    tasks, batch = pipeline["settings"]["tasks"], pipeline["settings"]["batch"]
    base_name, ceiling = PIPELINE.baseline, PIPELINE_CEILING
    sync_ceiling = PIPELINE_SYNC_CEILING
    control = any(r["contender"] == PIPELINE.control for r in results)
    lines = [
        "## Pipeline scenario: queries/s (ratio to asyncpg's pool of 10; higher is better)",
        "",
        f"{tasks} tasks on one event loop, each looping on one query. mypgdriver-1conn and",
        "psycopg-1conn share one connection (psycopg's lock runs one query at a time);",
        "asyncpg cannot share one, so it runs a pool of 10 or of 1. psycopg-pipeline sends",
        f"batches of {batch} statements in `conn.pipeline()`. pgbench-pipeline is pgbench with",
        f"{batch} statements per `\\startpipeline` on one connection (`-M prepared`, one Sync",
        f"per {batch}; pgbench-pipeline-extended: `-M extended`), pgbench-pipeline-sync the same",
        "with a Sync after every statement (`\\syncpipeline`, pgbench 17+: each statement its",
        "own transaction, as mypgdriver sends them), pgbench-1conn one statement at a time",
        "(`-M prepared`): the pipelined ceilings and the round-trip floor."
        + (" A/A is asyncpg's pool of 10 measured a second time." if control else ""),
        "",
        *_variant_matrix(results, PIPELINE, "queries_per_s", si, with_ratio=True),
        *(["", f"![queries/s per contender, one connection against pools and pgbench]({chart})"]
          if chart else []),
        "",
        "## Pipeline scenario: client CPU µs per query (lower is better)",
        "",
        *_variant_matrix(results, PIPELINE, "cpu_per_query_us", lambda v: f"{v:.1f}",
                         with_ratio=False),
    ]
    header = ["contender", "connections", "queries/s", f"vs {base_name}",
              f"vs {ceiling}", f"vs {sync_ceiling}", "p50 ms", "p99 ms", "CPU µs/query",
              "most in flight"]
    lines += ["", "## Pipeline scenario: details", "",
              "Latency is one query, from the call to its result (for psycopg-pipeline from",
              "the start of its batch); pgbench logs one line per transaction, a whole",
              "pipeline, so only its one-statement floor has a per-query latency. Most in",
              "flight is the deepest mypgdriver's pipeline got (`get_pipeline_stats()`)."]
    labels = PIPELINE.order([r["contender"] for r in results])
    for variant, by_name in _pipeline_variants(results).items():
        base = by_name.get(base_name, {}).get("queries_per_s")
        top = by_name.get(ceiling, {}).get("queries_per_s")
        sync_top = by_name.get(sync_ceiling, {}).get("queries_per_s")
        rows = []
        for label in [*labels, *([PIPELINE.control] if control else [])]:
            r = by_name.get(label)
            if r is None:
                continue
            if "error" in r:
                rows.append([label, _na(r)])
                continue
            rows.append([
                label, str(r.get("connections", "–")), si(r["queries_per_s"]),
                _ratio(r["queries_per_s"], base), _ratio(r["queries_per_s"], top),
                _ratio(r["queries_per_s"], sync_top),
                ms(r.get("latency_p50_ms")), ms(r.get("latency_p99_ms")),
                _fixed(r.get("cpu_per_query_us"), 1), str(r.get("max_in_flight", "–")),
            ])
        lines += ["", f"### {variant}", "",
                  *table(header, rows, [False, *[True] * (len(header) - 1)])]
    same_shape = [
        f"{variant} "
        f"{_ratio(by_name[PIPELINE_OURS]['queries_per_s'], by_name[sync_ceiling]['queries_per_s'])}"
        for variant, by_name in _pipeline_variants(results).items()
        if "queries_per_s" in by_name.get(PIPELINE_OURS, {})
        and "queries_per_s" in by_name.get(sync_ceiling, {})]
    if same_shape:
        lines += ["", f"{PIPELINE_OURS} / {sync_ceiling} (the same protocol shape, a Sync per "
                  "query): " + "; ".join(same_shape) + "."]
    return lines


# -- the pooler scenario ----------------------------------------------------------------


def _prepared_statements_text(bouncer: dict[str, Any]) -> str:
    """pgbouncer's max_prepared_statements, or that the version it ran had none."""
    if "max_prepared_statements" in bouncer:
        return f"max_prepared_statements {bouncer['max_prepared_statements']}"
    # A pgbouncer before 1.21 has no such setting: named statements are not
    # carried across its server connections.
    return "no max_prepared_statements (before pgbouncer 1.21)"


def pooler_settings_text(settings: dict[str, Any]) -> str:
    """The pooler scenario's settings in one line of prose."""
    bouncer = settings["pgbouncer_settings"]
    rounds = settings.get("rounds", 1)
    return (f"{settings.get('pgbouncer') or 'pgbouncer'} in {bouncer['pool_mode']} mode, "
            f"{_prepared_statements_text(bouncer)}, "
            f"{bouncer['default_pool_size']} server connections, a fresh pgbouncer per cell; "
            f"{settings['concurrency']} client connections; "
            f"{settings['warmup']:g} s warm-up, then {settings['duration']:g} s measured per cell"
            + (f", {rounds} rounds (rows/s and CPU over all, percentiles the median round's)"
               if rounds > 1 else ""))


def _failed_queries(result: dict[str, Any]) -> str:
    """The flag a contender with failed queries gets in the tables: it is not pooler-safe."""
    errors = result.get("errors") or 0
    return f"**{errors:,} failed**" if errors else ""


def _peer_margins(results: list[dict[str, Any]]) -> list[str]:
    """Per variant: mypgdriver's rows/s over the fastest other Python driver's."""
    margins = []
    for variant, by_name in _pipeline_variants(results).items():
        ours = by_name.get(POOLER_OURS, {}).get("rows_per_s")
        peers = [(r["rows_per_s"], label) for label, r in by_name.items()
                 if label != POOLER_OURS and not is_control(label)
                 and driver_of(label) not in (OURS, REFERENCE) and r.get("rows_per_s")]
        if ours and peers:
            best, name = max(peers)
            margins.append(f"{variant} {ours / best:.2f} ({name})")
    return margins


def pooler_markdown(section: dict[str, Any], chart: str | None = None) -> list[str]:
    """The pooler scenario's tables: rows/s and CPU per query, then the details.

    A section skipped for want of a pgbouncer says why instead.
    """
    settings = section["settings"]
    # The version measured, in the heading: figures through different
    # pgbouncer versions are not comparable.
    title = f"## Pooler scenario: rows/s through {settings.get('pgbouncer') or 'pgbouncer'}"
    if "skipped" in section:
        return [title, "", f"Skipped: {section['skipped']}."]
    results = section["results"]
    base_name, aa_label = POOLER.baseline, POOLER.control
    control = any(r["contender"] == aa_label for r in results)
    bouncer = settings["pgbouncer_settings"]
    lines = [
        f"{title} (ratio to {base_name}; higher is better)",
        "",
        f"The throughput workloads at concurrency {settings['concurrency']} through "
        f"{settings.get('pgbouncer') or 'pgbouncer'} in {bouncer['pool_mode']} mode",
        f"({_prepared_statements_text(bouncer)}, "
        f"{bouncer['default_pool_size']} server connections), each driver in its best",
        "pooler-safe configuration (details below). A failed query does not end a cell: it",
        "is counted, and a contender with any is flagged **failed**; a pooler-safe",
        "configuration has none."
        + (f" A/A is {base_name} measured a second time." if control else ""),
        "",
        *_variant_matrix(results, POOLER, "rows_per_s", si, with_ratio=True,
                         note=_failed_queries),
    ]
    if chart:
        lines += ["", f"![rows/s per contender through pgbouncer]({chart})"]
    lines += [
        "",
        "## Pooler scenario: client CPU µs per query (lower is better)",
        "",
        "The client process's CPU time only: pgbouncer's own is not in it.",
        "",
        *_variant_matrix(results, POOLER, "cpu_per_query_us", lambda v: f"{v:.1f}",
                         with_ratio=False),
    ]
    configurations = settings.get("configurations", {})
    header = ["variant", "contender", "configuration", "rows/s", "queries/s",
              f"vs {base_name}", "p50 ms", "p99 ms", "CPU µs/query", "failed queries"]
    rows, failures = [], []
    labels = POOLER.order([r["contender"] for r in results])
    for variant, by_name in _pipeline_variants(results).items():
        base = by_name.get(base_name, {}).get("rows_per_s")
        for label in [*labels, *([aa_label] if control else [])]:
            r = by_name.get(label)
            if r is None:
                continue
            configuration = configurations.get(label if label != aa_label else base_name, "")
            if "error" in r:
                rows.append([variant, label, configuration, _na(r)])
                continue
            errors = r.get("errors")
            rows.append([
                variant, label, configuration, si(r["rows_per_s"]), si(r["queries_per_s"]),
                _ratio(r["rows_per_s"], base), ms(r.get("latency_p50_ms")),
                ms(r.get("latency_p99_ms")), _fixed(r.get("cpu_per_query_us"), 1),
                "–" if errors is None else f"{errors:,}",
            ])
            if r.get("first_error"):
                failures.append(f"- {label}, {variant}: {errors:,} failed queries, the first "
                                f"with {_clip(r['first_error'], 4 * ERROR_WIDTH)}")
    lines += ["", "## Pooler scenario: details", "",
              "Failed queries are counted inside the measuring window (pgbench stops a client",
              "at its first error, which makes its cell n/a instead).", "",
              *table(header, rows, [False, False, False, *[True] * (len(header) - 3)])]
    if failures:
        lines += ["", *failures]
    margins = _peer_margins(results)
    if margins:
        lines += ["", f"{POOLER_OURS} / the fastest other Python driver (rows/s): "
                  + "; ".join(margins) + "."]
    return lines


# -- the memory probe ------------------------------------------------------------------


def memory_markdown(probe: dict[str, Any], chart: str | None = None) -> list[str]:
    """The cursor memory probe's table: peak RSS growth per driver against the target."""
    rows, target = probe["rows"], probe["target_mb"]
    # Results saved before the batch size was recorded do not say it.
    batch = f", {probe['batch']:,} per fetch" if "batch" in probe else ""
    header = ["driver", "peak RSS +MB", f"under {target:g} MB", "rows/s", "seconds",
              "RSS at start MB"]
    lines = [
        f"## Memory: {rows:,} rows through a cursor (lower is better)",
        "",
        f"Peak RSS growth of a fresh client process while one connection streams {rows:,}",
        f"rows (int, text, float8) through a server-side cursor{batch}, keeping",
        f"none. Target: under {target:g} MB.",
        "",
    ]
    body = []
    for r in probe["results"]:
        if "error" in r:
            body.append([r["driver"], _na(r)])
            continue
        growth = r["peak_rss_growth_mb"]
        body.append([
            r["driver"], f"{growth:.1f}", "yes" if growth < target else "**no**",
            si(r["rows_per_s"]), f"{r['seconds']:.2f}", f"{r['rss_start_mb']:.1f}",
        ])
    lines += table(header, body, [False, True, False, True, True, True])
    if any(r.get("method", "VmHWM") != "VmHWM" for r in probe["results"] if "error" not in r):
        lines += ["", "The peak could not be reset before streaming here (no",
                  "`/proc/self/clear_refs`): growths are from `ru_maxrss` and may be too high."]
    if chart:
        lines += ["", f"![peak RSS growth per driver]({chart})"]
    return lines


# -- charts -----------------------------------------------------------------------------
#
# One colour map for every chart (colour_of): a contender has the same colour
# wherever it appears, and no two contenders of one lineup share one. A
# driver's first contender in a lineup has the driver's colour
# (DRIVER_COLOURS); its others take the next shades of DRIVER_SHADES, of the
# same hue and with a dotted pattern (asyncpg-pool1 a light blue beside
# asyncpg-pool10), except mypgdriver's: green is mypgdriver used as intended
# and nothing else, so mypgdriver-connect (a connection per query, what a pool
# saves) is orange, not a shade of green that would read as mypgdriver. The
# blocking API, mypgdriver-sync (and its pool), is a driver of its own with
# its own colour, a dark green, neither outlined nor bold: mypgdriver's green
# stays the asyncio API's, the main contender of each scenario. The
# green contenders are outlined in black and bold in the legends; the A/A
# control is grey and hatched, a control rather than a contender. Figures are
# at most MAX_WIDTH inches wide at DPI, so that they fit the docs' text column
# without being shrunk to unreadable labels.

DPI = 100
MAX_WIDTH = 9.6  # inches: 960 px
DRIVER_SHADES: dict[str, tuple[str, ...]] = {
    "asyncpg": ("#1f77b4", "#aec7e8", "#0b3e66"),  # blues
    "mypgdriver": ("#2ca02c", "#ff7f0e", "#bcbd22"),  # green, then orange and olive
    # mypgdriver's blocking API: a driver of its own, in a dark green (not
    # mypgdriver's green, which stays the asyncio API's), then a teal.
    "mypgdriver-sync": ("#00441b", "#35978f"),
    "psycopg": ("#d62728", "#ff9896", "#7a1516"),  # reds
    "psycopg-async": ("#9467bd", "#c5b0d5", "#4a2d69"),  # purples
    "psycopg2": ("#8c564b", "#c49c94"),  # browns
    # mypgdriver's DB-API module: a driver of its own on the blocking API,
    # a light teal (not a green that would read as the asyncio API).
    "mypgdriver-dbapi": ("#80cdc1",),
    "psqlpy": ("#e6ab02", "#f7dc6f"),  # golds
    "pgbench": ("#e377c2", "#7b4173", "#f7b6d2", "#a55194"),  # pinks
}
DRIVER_COLOURS: dict[str, str] = {driver: shades[0] for driver, shades in DRIVER_SHADES.items()}
UNKNOWN_COLOUR = "#17becf"  # a driver the suite does not know (tests, new drivers)
CONTROL_COLOUR = "#c8c8c8"
REFERENCE = "pgbench"  # drawn as a line, not a bar: see _reference_lines


def _rank_in_driver(label: str) -> int:
    """0 for a driver's first contender in its lineup, 1 for its second, and so on."""
    for lineup in LINEUPS:
        if label in lineup.drivers:
            driver = lineup.drivers[label]
            same = [c for c in lineup.contenders if lineup.drivers[c] == driver]
            return same.index(label)
    return 0


def colour_of(label: str) -> str:
    """The fill colour of a contender or control, the same in every chart."""
    if is_control(label):
        return CONTROL_COLOUR
    shades = DRIVER_SHADES.get(driver_of(label) or "")
    rank = _rank_in_driver(label)
    if shades is None or rank >= len(shades):
        return UNKNOWN_COLOUR
    return shades[rank]


def is_highlighted(label: str) -> bool:
    """Whether `label` is drawn in mypgdriver's colour: mypgdriver's first contender."""
    return driver_of(label) == OURS and is_main_contender(label)


def bar_style(label: str) -> dict[str, Any]:
    """matplotlib `bar` keywords for a contender or control (see the note above)."""
    if is_control(label):
        return {"color": CONTROL_COLOUR, "edgecolor": "#7f7f7f", "hatch": "///",
                "linewidth": 0.8}
    style: dict[str, Any] = {"color": colour_of(label)}
    if is_highlighted(label):
        style.update(edgecolor="black", linewidth=1.4)
    elif not is_main_contender(label):
        # The dots are drawn in the edge colour.
        style.update(hatch="..", edgecolor="white", linewidth=0.5)
    return style


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _tick_format(axis: Any, fmt: Callable[[float], str]) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))


def _legend(fig: Any, handles: list[Any], names: list[str], ncol: int) -> None:
    """One legend under the plots, mypgdriver's entries in bold, the pgbench line last."""
    entries = sorted(zip(handles, names), key=lambda entry: driver_of(entry[1]) == REFERENCE)
    legend = fig.legend([h for h, _ in entries], [n for _, n in entries], loc="lower center",
                        ncol=min(ncol, len(names)), fontsize="small", frameon=False)
    for text in legend.get_texts():
        if is_highlighted(text.get_text()):
            text.set_fontweight("bold")


def _with_control(labels: list[str], lineup: Lineup, results: Iterable[str]) -> list[str]:
    """`labels` with the lineup's control right after the baseline, if it ran."""
    if lineup.control not in set(results):
        return labels
    at = labels.index(lineup.baseline) + 1 if lineup.baseline in labels else len(labels)
    return [*labels[:at], lineup.control, *labels[at:]]


def _bars(ax: Any, labels: list[str], groups: list[dict[str, dict[str, Any]]],
          metric: str) -> float:
    """Grouped bars: one group per entry of `groups`, one bar per label; returns the tallest.

    A cell that failed gets an "n/a" mark at the foot of its slot: an empty
    slot would read as zero, not as "did not run".
    """
    width = 0.8 / max(1, len(labels))
    tallest = 0.0
    for i, label in enumerate(labels):
        cells = [group.get(label, {}) for group in groups]
        xs = [x - 0.4 + (i + 0.5) * width for x in range(len(groups))]
        values = [cell.get(metric) or 0.0 for cell in cells]
        ax.bar(xs, values, width, label=label, **bar_style(label))
        tallest = max(tallest, *values)
        for x, cell in zip(xs, cells):
            if "error" in cell:
                ax.text(x, 0.01, " n/a", rotation=90, ha="center", va="bottom",
                        fontsize="x-small", transform=ax.get_xaxis_transform())
    return tallest


def _reference_lines(ax: Any, values: list[float | None], tallest: float,
                     label: str = REFERENCE) -> None:
    """pgbench as a dashed line across each group, on a scale set by the Python drivers.

    pgbench is the C client's floor, not a contender, and on the workloads
    where it streams fastest it is several times the best driver: as a bar it
    would set the scale and flatten the drivers' bars into a few pixels. The
    axis ends a little above the tallest driver (or above pgbench, when that
    is at most half as tall again); a pgbench line beyond the top is drawn at
    the top with its value written under it.
    """
    present = [v for v in values if v]
    top = tallest * 1.15 if tallest else max(present, default=1.0) * 1.1
    if present and max(present) <= tallest * 1.5:
        top = max(top, max(present) * 1.08)
    ax.set_ylim(0, top)
    colour = colour_of(REFERENCE)
    first = True
    for x, value in enumerate(values):
        if not value:
            continue
        y = min(value, top * 0.985)
        ax.plot([x - 0.42, x + 0.42], [y, y], color=colour, linestyle="--", linewidth=2,
                label=label if first else "_nolegend_")
        first = False
        if value > top:
            ax.text(x, y, f"pgbench {si(value)} ↑", ha="center", va="top", fontsize="small",
                    color="black")


def _throughput_panel(ax: Any, workload: str, results: list[dict[str, Any]],
                      title: str) -> None:
    groups = _groups(results)
    levels = [c for (w, c) in groups if w == workload]
    cells = [groups[(workload, c)] for c in levels]
    labels = _with_control([label for label in _labels(results) if label != REFERENCE],
                           THROUGHPUT, (r["driver"] for r in results))
    tallest = _bars(ax, labels, cells, "rows_per_s")
    _reference_lines(ax, [cell.get(REFERENCE, {}).get("rows_per_s") for cell in cells], tallest)
    ax.set_xticks(range(len(levels)))
    ax.set_xticklabels([f"c={c}" for c in levels])
    ax.set_title(title)
    _tick_format(ax.yaxis, si)


def throughput_figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The rows/s charts: OVERVIEW_CHART with every workload, and one per workload.

    Returns {file name: matplotlib figure}, none without results; raises
    ImportError when matplotlib is missing.
    """
    if not results:
        return {}
    plt = _pyplot()
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    figures: dict[str, Any] = {}

    cols = min(3, len(workloads))
    rows = -(-len(workloads) // cols)
    with plt.rc_context({"font.size": 8}):
        fig, axes = plt.subplots(rows, cols, figsize=(MAX_WIDTH, 2.5 * rows + 1.1),
                                 squeeze=False)
        for ax, workload in zip(axes.flat, workloads):
            _throughput_panel(ax, workload, results, workload)
        for ax in list(axes.flat)[len(workloads):]:
            ax.set_visible(False)
        for ax in axes[:, 0]:
            ax.set_ylabel("rows/s")
        # Every label once, from whichever panel has it (pgbench has no line
        # where it cannot run the workload).
        legend: dict[str, Any] = {}
        for ax in axes.flat:
            for handle, name in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(name, handle)
        _legend(fig, list(legend.values()), list(legend), ncol=4)
        fig.suptitle("Rows/s per driver (higher is better); pgbench, the C client, "
                     "as a dashed line")
        fig.tight_layout(rect=(0, 0.07 if rows > 1 else 0.14, 1, 1))
    figures[OVERVIEW_CHART] = fig

    for workload in workloads:
        fig, ax = plt.subplots(figsize=(8, 4.2))
        _throughput_panel(ax, workload, results, f"{workload}: rows/s (higher is better)")
        ax.set_ylabel("rows/s")
        handles, names = ax.get_legend_handles_labels()
        _legend(fig, handles, names, ncol=4)
        fig.tight_layout(rect=(0, 0.13, 1, 1))
        figures[f"rows_per_s_{workload}.png"] = fig
    return figures


def pipeline_figure(pipeline: dict[str, Any]) -> Any:
    """PIPELINE_CHART: queries/s per contender, one panel per variant.

    Horizontal bars, the contenders' names down the side and each bar's value
    at its end: nine contenders with long names would need a legend as large
    as the plot.  pgbench's pipelines are bars here, not the dashed line of
    the throughput charts: each is a contender of its own, with its own
    protocol shape.  None without results; raises ImportError when
    matplotlib is missing.
    """
    results = pipeline["results"]
    if not results:
        return None
    plt = _pyplot()
    variants = _pipeline_variants(results)
    labels = _with_control(PIPELINE.order([r["contender"] for r in results]), PIPELINE,
                           (r["contender"] for r in results))
    fig, axes = plt.subplots(1, len(variants), figsize=(MAX_WIDTH, 0.3 * len(labels) + 1.6),
                             sharey=True, squeeze=False)
    for ax, (variant, by_name) in zip(axes.flat, variants.items()):
        values = [(by_name.get(label) or {}).get("queries_per_s") or 0.0 for label in labels]
        for y, (label, value) in enumerate(zip(labels, values)):
            ax.barh([y], [value], label=label, **bar_style(label))
            cell = by_name.get(label)
            text = "" if cell is None else " n/a" if "error" in cell else f" {si(value)}"
            ax.text(value, y, text, va="center", fontsize="x-small")
        ax.set_xlim(0, max(values, default=0.0) * 1.2 or 1.0)
        ax.set_title(f"{variant}: queries/s", fontsize="medium")
        _tick_format(ax.xaxis, si)
    first = axes[0][0]
    first.set_yticks(range(len(labels)))
    first.set_yticklabels(labels)
    first.invert_yaxis()  # the baseline on top, as in the table
    for tick in first.get_yticklabels():
        if is_highlighted(tick.get_text()):
            tick.set_fontweight("bold")
    fig.suptitle(f"{pipeline['settings']['tasks']} tasks on one event loop, each looping on "
                 "one query (higher is better)")
    fig.tight_layout()
    return fig


def pool_figure(results: list[dict[str, Any]], lineup: Lineup = POOL,
                title: str = "Pool scenario: simulated web requests") -> Any:
    """POOL_CHART (SYNC_POOL_CHART with SYNC_POOL): requests/s and p99 per contender, by users.

    None without results; raises ImportError when matplotlib is missing.
    """
    if not results:
        return None
    plt = _pyplot()
    levels = _pool_levels(results)
    labels = _with_control(lineup.order([r["contender"] for r in results]), lineup,
                           (r["contender"] for r in results))
    fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH, 4.4))
    # p99 on a log scale: connecting per query is a hundred times slower
    # than any pool and would flatten the pools' bars to nothing.
    panels = (("requests_per_s", "requests/s (higher is better)", si, "linear"),
              ("latency_p99_ms", "p99 latency, ms, log scale (lower is better)",
               lambda v: f"{v:g}", "log"))
    for ax, (metric, title, fmt, scale) in zip(axes, panels):
        ax.set_yscale(scale)
        _bars(ax, labels, list(levels.values()), metric)
        ax.set_xticks(range(len(levels)))
        ax.set_xticklabels([f"{users} users" for users in levels])
        ax.set_title(title, fontsize="medium")
        _tick_format(ax.yaxis, fmt)
    handles, names = axes[0].get_legend_handles_labels()
    _legend(fig, handles, names, ncol=3)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def pooler_figure(results: list[dict[str, Any]], pgbouncer: str = "") -> Any:
    """POOLER_CHART: rows/s per contender through pgbouncer, one panel per variant.

    `pgbouncer` is the version that ran (``'PgBouncer 1.18.0'``), named in
    the title.

    pgbench-prepared is a dashed line, as pgbench in the throughput charts; a
    contender with failed queries says how many above its bar.  None without
    results; raises ImportError when matplotlib is missing.
    """
    if not results:
        return None
    plt = _pyplot()
    variants = _pipeline_variants(results)
    labels = _with_control([label for label in POOLER.order([r["contender"] for r in results])
                            if label != POOLER_REFERENCE],
                           POOLER, (r["contender"] for r in results))
    fig, axes = plt.subplots(1, len(variants), figsize=(MAX_WIDTH, 4.4), squeeze=False)
    legend: dict[str, Any] = {}
    for ax, (variant, by_name) in zip(axes.flat, variants.items()):
        tallest = _bars(ax, labels, [by_name], "rows_per_s")
        _reference_lines(ax, [by_name.get(POOLER_REFERENCE, {}).get("rows_per_s")], tallest,
                         label=POOLER_REFERENCE)
        width = 0.8 / max(1, len(labels))
        for i, label in enumerate(labels):
            failed = (by_name.get(label) or {}).get("errors")
            if failed:
                ax.text(-0.4 + (i + 0.5) * width, by_name[label]["rows_per_s"],
                        f"{failed:,} failed", rotation=90, ha="center", va="bottom",
                        fontsize="x-small")
        ax.set_xticks([])
        ax.set_title(f"{variant}: rows/s (higher is better)", fontsize="medium")
        ax.set_ylabel("rows/s")
        _tick_format(ax.yaxis, si)
        for handle, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, handle)
    _legend(fig, list(legend.values()), list(legend), ncol=4)
    fig.suptitle(f"Through {pgbouncer or 'pgbouncer'} in transaction mode, "
                 "each driver pooler-safe")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig


def memory_figure(probe: dict[str, Any]) -> Any:
    """MEMORY_CHART: peak RSS growth per driver against the target line.

    None without results; raises ImportError when matplotlib is missing.
    """
    results = probe["results"]
    if not results:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(results) + 1.9))
    for y, r in enumerate(results):
        growth = r.get("peak_rss_growth_mb") or 0.0
        ax.barh([y], [growth], label=r["driver"], **bar_style(r["driver"]))
        text = " n/a" if "error" in r else f" {growth:.1f} MB"
        ax.text(growth, y, text, va="center", fontsize="small")
    ax.set_yticks(range(len(results)))
    ax.set_yticklabels([r["driver"] for r in results])
    for tick in ax.get_yticklabels():
        if is_highlighted(tick.get_text()):
            tick.set_fontweight("bold")
    # Black, not red: red is a driver's colour (psycopg) in the other charts.
    ax.axvline(probe["target_mb"], color="black", linestyle="--", linewidth=1.2,
               label=f"target: under {probe['target_mb']:g} MB")
    ax.invert_yaxis()  # first driver on top, as in the table
    ax.set_xlabel("peak RSS growth, MB (lower is better)")
    ax.set_title(f"Memory: {probe['rows']:,} rows through a cursor")
    handles, names = ax.get_legend_handles_labels()
    ax.legend([h for h, n in zip(handles, names) if n.startswith("target")],
              [n for n in names if n.startswith("target")], loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """Every chart of `report` by file name, drawn but not saved.

    Raises ImportError when matplotlib is missing.
    """
    drawn = dict(throughput_figures(split_dict_rows(report["results"])[0]))
    if "pipeline" in report:
        fig = pipeline_figure(report["pipeline"])
        if fig is not None:
            drawn[PIPELINE_CHART] = fig
    if "pool" in report:
        fig = pool_figure(report["pool"]["results"])
        if fig is not None:
            drawn[POOL_CHART] = fig
    if "sync_pool" in report:
        fig = pool_figure(report["sync_pool"]["results"], SYNC_POOL,
                          "Sync pool scenario: simulated web requests from threads")
        if fig is not None:
            drawn[SYNC_POOL_CHART] = fig
    if "pooler" in report:
        fig = pooler_figure(report["pooler"]["results"],
                            report["pooler"]["settings"].get("pgbouncer", ""))
        if fig is not None:
            drawn[POOLER_CHART] = fig
    if "memory" in report:
        fig = memory_figure(report["memory"])
        if fig is not None:
            drawn[MEMORY_CHART] = fig
    return drawn


def save(report: dict[str, Any], outdir: Path, latest: Path | None) -> list[str]:
    """Write results.json, results.md and the charts into `outdir`; copy it to `latest`.

    `latest` is None when the run must not replace it (see cli.run_kind).
    Returns notes for the user (e.g. charts skipped).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    notes = []
    try:
        drawn = figures(report)
    except ImportError:
        drawn = {}
        notes.append("charts skipped: matplotlib is not installed (pip install matplotlib)")
    for name, fig in drawn.items():
        fig.savefig(outdir / name, dpi=DPI)
        _pyplot().close(fig)
    report["charts"] = list(drawn)
    text = markdown(report)
    # The overview chart closes the report; pool and memory charts are in
    # their sections already.
    if OVERVIEW_CHART in report["charts"]:
        text += f"\n## Charts\n\n![{OVERVIEW_CHART}]({OVERVIEW_CHART})\n"
    (outdir / "results.md").write_text(text)
    (outdir / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    if latest is not None:
        shutil.rmtree(latest, ignore_errors=True)
        shutil.copytree(outdir, latest)
    return notes


def redraw(directory: Path) -> list[str]:
    """Draw the charts and write results.md again from `directory`'s results.json.

    For a change to the report or the charts: the saved run is shown anew
    without measuring again.  Returns the notes of `save`.
    """
    report = json.loads((directory / "results.json").read_text())
    return save(report, directory, None)


if __name__ == "__main__":
    # python -m bench.report bench/results/latest
    for note in redraw(Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest")):
        print(f"note: {note}")

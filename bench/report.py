"""Results out: machine info, the markdown table, the JSON file and the charts."""
from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

from . import pipeline_scenario, pool_scenario
from .runner import AA_LABEL
from .workloads import CURSOR_BATCH

BASELINE = "asyncpg"
ERROR_WIDTH = 50  # characters of an error message kept in a table cell
POOL_CHART = "pool.png"
MEMORY_CHART = "cursor_1m_rss.png"
OVERVIEW_CHART = "rows_per_s.png"


def machine_info(server_description: str, results: Iterable[dict[str, Any]],
                 pool: Iterable[dict[str, Any]] = (),
                 memory_probes: Iterable[dict[str, Any]] = (),
                 pipeline: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """Where the numbers came from: CPU, Python, server and each driver's version.

    Versions come from throughput cells and memory probes (by driver), from
    pool cells (by the package providing the pool: psycopg_pool) and from
    pipeline cells (by the driver each contender belongs to; under its own
    name for a contender run by another program, the pgbench 17+ of
    pgbench-pipeline-sync).
    """
    versions: dict[str, str] = {}
    loops: dict[str, str] = {}
    for r in [*results, *memory_probes]:
        if "driver_version" in r and r["driver"] != AA_LABEL:
            versions.setdefault(r["driver"], r["driver_version"])
            loops.setdefault(r["driver"], r.get("event_loop", ""))
    for r in pipeline:
        driver = pipeline_scenario.CONTENDER_DRIVERS.get(r["contender"])
        if driver and "driver_version" in r:
            own = r["contender"] in pipeline_scenario.OWN_VERSION
            versions.setdefault(r["contender"] if own else driver, r["driver_version"])
            if driver != "pgbench":
                loops.setdefault(driver, r.get("event_loop", ""))
    for r in pool:
        package = pool_scenario.CONTENDER_PACKAGES.get(r["contender"])
        if package and "driver_version" in r:
            versions.setdefault(package, r["driver_version"])
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "server": server_description,
        "drivers": versions,
        # Sync drivers run threads ("10 threads", "1 thread"), not a loop.
        "event_loops": {d: loop for d, loop in loops.items() if "thread" not in loop},
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value and base else "–"


def _groups(results: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, dict[str, Any]]]:
    """(workload, concurrency) -> driver label -> result, in run order."""
    groups: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["workload"], r["concurrency"]), {})[r["driver"]] = r
    return groups


def _labels(results: list[dict[str, Any]]) -> list[str]:
    """Driver labels in table order: asyncpg, its control, ours, the others, pgbench last."""
    seen = list(dict.fromkeys(r["driver"] for r in results))
    rank = {BASELINE: 0, AA_LABEL: 1, "mypgdriver": 2, "pgbench": 4}
    return sorted(seen, key=lambda d: rank.get(d, 3))


def _matrix(results: list[dict[str, Any]], metric: str, fmt: Callable[[float], str],
            with_ratio: bool) -> list[str]:
    # The control has its own column, as a ratio: the noise next to the ratios.
    all_labels = _labels(results)
    control = [AA_LABEL] if AA_LABEL in all_labels else []
    labels = [label for label in all_labels if label != AA_LABEL]
    lines = [_row(["workload", "c", *(["A/A"] if control else []), *labels]),
             _row(["---", "---:", *["---:"] * (len(control) + len(labels))])]
    for (workload, concurrency), by_driver in _groups(results).items():
        base = by_driver.get(BASELINE, {}).get(metric)
        aa = [_ratio(by_driver.get(AA_LABEL, {}).get(metric), base)] if control else []
        cells = []
        for label in labels:
            r = by_driver.get(label)
            if r is None:
                cells.append("")
            elif "error" in r:
                cells.append(_na(r))
            elif with_ratio and base and label != BASELINE:
                cells.append(f"{fmt(r[metric])} ({_ratio(r[metric], base)})")
            else:
                cells.append(fmt(r[metric]))
        lines.append(_row([workload, str(concurrency), *aa, *cells]))
    return lines


def _details(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    header = ["driver", "c", "rows/s", "queries/s", "mean ms", "p50 ms", "p99 ms",
              "CPU µs/query", "rows/s vs asyncpg", "peak RSS +MB"]
    for workload in dict.fromkeys(r["workload"] for r in results):
        lines += ["", f"### {workload}", "", _row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
        for (w, concurrency), by_driver in _groups(results).items():
            if w != workload:
                continue
            base = by_driver.get(BASELINE, {}).get("rows_per_s")
            for label in _labels(results):
                r = by_driver.get(label)
                if r is None:
                    continue
                if "error" in r:
                    lines.append(_row([label, str(concurrency), _na(r)] + [""] * (len(header) - 3)))
                    continue
                lines.append(_row([
                    label, str(concurrency), si(r["rows_per_s"]), si(r["queries_per_s"]),
                    f"{r['latency_mean_ms']:.3f}", f"{r['latency_p50_ms']:.3f}",
                    f"{r['latency_p99_ms']:.3f}", f"{r['cpu_per_query_us']:.1f}",
                    _ratio(r["rows_per_s"], base),
                    f"{r['rss_growth_mb']:.1f}" if "rss_growth_mb" in r else "–",
                ]))
    return lines


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
    lines = [
        f"# mypgdriver benchmark, {report['started']}",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}",
        f"- {m['python']}; {m['server']}",
        f"- Drivers: {drivers}" + (f"; async event loop: {loops}" if loops else ""),
    ]
    if results:
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
    if results:
        lines += [
            "",
            "## Rows/s (ratio to asyncpg)",
            "",
            "A/A is asyncpg measured a second time in the same run: how far a ratio",
            "moves from 1.00 by noise alone.",
            "",
            *_matrix(results, "rows_per_s", si, with_ratio=True),
            "",
            "## Client CPU µs per query (lower is better)",
            "",
            *_matrix(results, "cpu_per_query_us", lambda v: f"{v:.1f}", with_ratio=False),
            "",
            "## Details",
            *_details(results),
        ]
    if "pipeline" in report:
        lines += ["", *pipeline_markdown(report["pipeline"])]
    if "pool" in report:
        lines += ["", *pool_markdown(report["pool"], POOL_CHART if POOL_CHART in charts else None)]
    if "pool_shortcuts" in report:
        lines += ["", *pool_shortcuts_markdown(report["pool_shortcuts"])]
    if "memory" in report:
        lines += ["", *memory_markdown(report["memory"],
                                       MEMORY_CHART if MEMORY_CHART in charts else None)]
    return "\n".join(lines) + "\n"


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
               f"; mypgdriver-connect opens a connection per {settings['connect_per']}"))


def _pool_labels(results: list[dict[str, Any]],
                 aa_label: str = pool_scenario.AA_LABEL) -> list[str]:
    """Contenders in table order: asyncpg's pool, ours, no pool, the others; no A/A."""
    rank = {pool_scenario.BASELINE: 0, "mypgdriver-pool": 1, "mypgdriver-connect": 2,
            pool_scenario.SHORTCUT_BASELINE: 0, "mypgdriver-shortcuts": 1}
    seen = dict.fromkeys(r["contender"] for r in results if r["contender"] != aa_label)
    return sorted(seen, key=lambda c: rank.get(c, 3))


def _pool_levels(results: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    """users -> contender label -> result."""
    levels: dict[int, dict[str, dict[str, Any]]] = {}
    for r in results:
        levels.setdefault(r["users"], {})[r["contender"]] = r
    return levels


def pool_markdown(pool: dict[str, Any], chart: str | None = None) -> list[str]:
    """The pool scenario's tables: requests/s per level and contender, then the details."""
    control = any(r["contender"] == pool_scenario.AA_LABEL for r in pool["results"])
    intro = [
        "Simulated web requests: each takes a connection from the pool, runs 4 to 10",
        "small queries (lookups, a short range, a count, a one-row update) and gives it",
        "back; all users run on one event loop. mypgdriver-connect has no pool: it opens",
        f"a connection per {pool['settings']['connect_per']}."
        + (" A/A is asyncpg's pool measured a second time." if control else ""),
    ]
    return _pool_tables(pool["results"], pool_scenario.BASELINE, pool_scenario.AA_LABEL,
                        "Pool scenario", "requests/s (ratio to asyncpg's pool)", intro, chart)


def pool_shortcuts_markdown(section: dict[str, Any]) -> list[str]:
    """The shortcut level's tables, against asyncpg's pool used the same way."""
    results = section["results"]
    settings = section["settings"]
    control = any(r["contender"] == pool_scenario.SHORTCUT_AA_LABEL for r in results)
    intro = [
        f"The pool scenario's requests with {', '.join(map(str, settings['levels']))} users on "
        f"a pool of {settings['pool_size']}, each statement one `pool.fetchrow` / `fetch` /",
        "`fetchval` / `execute` call: the pool hands out a connection for that one",
        "statement, and no `acquire()` spans the request. psycopg_pool has no such",
        "methods, so it has no contender here."
        + (" A/A is asyncpg's measured a second time." if control else ""),
    ]
    return _pool_tables(results, pool_scenario.SHORTCUT_BASELINE,
                        pool_scenario.SHORTCUT_AA_LABEL, "Pool shortcuts",
                        "requests/s (ratio to asyncpg's pool)", intro)


def _pool_tables(results: list[dict[str, Any]], base_name: str, aa_label: str, name: str,
                 rate_title: str, intro: list[str], chart: str | None = None) -> list[str]:
    labels = _pool_labels(results, aa_label)
    levels = _pool_levels(results)
    control = any(r["contender"] == aa_label for r in results)
    lines = [
        f"## {name}: {rate_title}",
        "",
        *intro,
        "",
        _row(["users", *(["A/A"] if control else []), *labels]),
        _row(["---:", *["---:"] * (int(control) + len(labels))]),
    ]
    for users, by_name in levels.items():
        base = by_name.get(base_name, {}).get("requests_per_s")
        aa = [_ratio(by_name.get(aa_label, {}).get("requests_per_s"), base)]
        cells = []
        for label in labels:
            r = by_name.get(label)
            if r is None:
                cells.append("")
            elif "error" in r:
                cells.append(_na(r))
            elif base and label != base_name:
                cells.append(f"{si(r['requests_per_s'])} ({_ratio(r['requests_per_s'], base)})")
            else:
                cells.append(si(r["requests_per_s"]))
        lines.append(_row([str(users), *(aa if control else []), *cells]))
    if chart:
        lines += ["", f"![requests/s and p99 latency per contender]({chart})"]
    header = ["users", "contender", "requests/s", f"vs {base_name}", "p50 ms", "p95 ms",
              "p99 ms", f"p99 vs {base_name}", "CPU µs/request", "failed requests"]
    lines += ["", f"## {name}: latency and client CPU per request", "",
              "Latency is one whole request, from asking for a connection to giving it",
              "back. CPU is the client process's CPU time over the window divided by the",
              "requests finished in it.", "",
              _row(header), _row(["---:", "---", *["---:"] * (len(header) - 2)])]
    failures = []
    for users, by_name in levels.items():
        base = by_name.get(base_name, {})
        for label in [*labels, *([aa_label] if control else [])]:
            r = by_name.get(label)
            if r is None:
                continue
            if "error" in r:
                lines.append(_row([str(users), label, _na(r)] + [""] * (len(header) - 3)))
                continue
            lines.append(_row([
                str(users), label, si(r["requests_per_s"]),
                _ratio(r["requests_per_s"], base.get("requests_per_s")),
                ms(r["latency_p50_ms"]), ms(r["latency_p95_ms"]), ms(r["latency_p99_ms"]),
                _ratio(r["latency_p99_ms"], base.get("latency_p99_ms")),
                f"{r['cpu_per_request_us']:,.0f}", str(r["errors"]),
            ]))
            if r.get("first_error"):
                failures.append(f"- {label}, {users} users: {r['errors']} failed requests, "
                                f"the first with {_clip(r['first_error'], 4 * ERROR_WIDTH)}")
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


def _pipeline_labels(results: list[dict[str, Any]]) -> list[str]:
    """Contenders in table order (pipeline_scenario.CONTENDERS), without the A/A control."""
    order = {c: i for i, c in enumerate(pipeline_scenario.CONTENDERS)}
    seen = dict.fromkeys(r["contender"] for r in results
                         if r["contender"] != pipeline_scenario.AA_LABEL)
    return sorted(seen, key=lambda c: order.get(c, len(order)))


def _pipeline_variants(results: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """variant -> contender label -> result."""
    variants: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        variants.setdefault(r["variant"], {})[r["contender"]] = r
    return variants


def _pipeline_matrix(results: list[dict[str, Any]], metric: str, fmt: Callable[[float], str],
                     with_ratio: bool) -> list[str]:
    labels = _pipeline_labels(results)
    aa_label, base_name = pipeline_scenario.AA_LABEL, pipeline_scenario.BASELINE
    control = any(r["contender"] == aa_label for r in results)
    lines = [_row(["variant", *(["A/A"] if control else []), *labels]),
             _row(["---", *["---:"] * (int(control) + len(labels))])]
    for variant, by_name in _pipeline_variants(results).items():
        base = by_name.get(base_name, {}).get(metric)
        aa = [_ratio(by_name.get(aa_label, {}).get(metric), base)] if control else []
        cells = []
        for label in labels:
            r = by_name.get(label)
            if r is None:
                cells.append("")
            elif "error" in r:
                cells.append(_na(r))
            elif r.get(metric) is None:
                cells.append("–")
            elif with_ratio and base and label != base_name:
                cells.append(f"{fmt(r[metric])} ({_ratio(r[metric], base)})")
            else:
                cells.append(fmt(r[metric]))
        lines.append(_row([variant, *aa, *cells]))
    return lines


OURS = "mypgdriver-1conn"  # the contender the summary line compares


def pipeline_markdown(pipeline: dict[str, Any]) -> list[str]:
    """The pipeline scenario's tables: queries/s and CPU per query, then the details."""
    results = pipeline["results"]
    tasks, batch = pipeline["settings"]["tasks"], pipeline["settings"]["batch"]
    base_name, ceiling = pipeline_scenario.BASELINE, pipeline_scenario.CEILING
    sync_ceiling = pipeline_scenario.SYNC_CEILING
    control = any(r["contender"] == pipeline_scenario.AA_LABEL for r in results)
    lines = [
        "## Pipeline scenario: queries/s (ratio to asyncpg's pool of 10)",
        "",
        f"{tasks} tasks on one event loop, each looping on one query. mypgdriver-1conn and",
        f"psycopg-1conn share one connection (psycopg's lock runs one query at a time);",
        "asyncpg cannot share one, so it runs a pool of 10 or of 1. psycopg-pipeline sends",
        f"batches of {batch} statements in `conn.pipeline()`. pgbench-pipeline is pgbench with",
        f"{batch} statements per `\\startpipeline` on one connection (`-M prepared`, one Sync",
        f"per {batch}; pgbench-pipeline-extended: `-M extended`), pgbench-pipeline-sync the same",
        "with a Sync after every statement (`\\syncpipeline`, pgbench 17+: each statement its",
        "own transaction, as mypgdriver sends them), pgbench-1conn one statement at a time",
        "(`-M prepared`): the pipelined ceilings and the round-trip floor."
        + (" A/A is asyncpg's pool of 10 measured a second time." if control else ""),
        "",
        *_pipeline_matrix(results, "queries_per_s", si, with_ratio=True),
        "",
        "## Pipeline scenario: client CPU µs per query (lower is better)",
        "",
        *_pipeline_matrix(results, "cpu_per_query_us", lambda v: f"{v:.1f}", with_ratio=False),
    ]
    header = ["variant", "contender", "connections", "queries/s", f"vs {base_name}",
              f"vs {ceiling}", f"vs {sync_ceiling}", "p50 ms", "p99 ms", "CPU µs/query",
              "most in flight"]
    lines += ["", "## Pipeline scenario: details", "",
              "Latency is one query, from the call to its result (for psycopg-pipeline from",
              "the start of its batch); pgbench logs one line per transaction, a whole",
              "pipeline, so only its one-statement floor has a per-query latency. Most in",
              "flight is the deepest mypgdriver's pipeline got (`get_pipeline_stats()`).", "",
              _row(header), _row(["---", "---", *["---:"] * (len(header) - 2)])]
    labels = _pipeline_labels(results)
    for variant, by_name in _pipeline_variants(results).items():
        base = by_name.get(base_name, {}).get("queries_per_s")
        top = by_name.get(ceiling, {}).get("queries_per_s")
        sync_top = by_name.get(sync_ceiling, {}).get("queries_per_s")
        for label in [*labels, *([pipeline_scenario.AA_LABEL] if control else [])]:
            r = by_name.get(label)
            if r is None:
                continue
            if "error" in r:
                lines.append(_row([variant, label, _na(r)] + [""] * (len(header) - 3)))
                continue
            lines.append(_row([
                variant, label, str(r.get("connections", "–")), si(r["queries_per_s"]),
                _ratio(r["queries_per_s"], base), _ratio(r["queries_per_s"], top),
                _ratio(r["queries_per_s"], sync_top),
                ms(r.get("latency_p50_ms")), ms(r.get("latency_p99_ms")),
                f"{r['cpu_per_query_us']:.1f}", str(r.get("max_in_flight", "–")),
            ]))
    same_shape = [
        f"{variant} {_ratio(by_name[OURS]['queries_per_s'], by_name[sync_ceiling]['queries_per_s'])}"
        for variant, by_name in _pipeline_variants(results).items()
        if "queries_per_s" in by_name.get(OURS, {})
        and "queries_per_s" in by_name.get(sync_ceiling, {})]
    if same_shape:
        lines += ["", f"{OURS} / {sync_ceiling} (the same protocol shape, a Sync per query): "
                  + "; ".join(same_shape) + "."]
    return lines


# -- the memory probe ------------------------------------------------------------------


def memory_markdown(probe: dict[str, Any], chart: str | None = None) -> list[str]:
    """The cursor memory probe's table: peak RSS growth per driver against the target."""
    rows, target = probe["rows"], probe["target_mb"]
    header = ["driver", "peak RSS +MB", f"under {target:g} MB", "rows/s", "seconds",
              "RSS at start MB"]
    lines = [
        f"## Memory: {rows:,} rows through a cursor",
        "",
        f"Peak RSS growth of a fresh client process while one connection streams {rows:,}",
        f"rows (int, text, float8) through a server-side cursor, {CURSOR_BATCH:,} per",
        f"fetch, keeping none. Target: under {target:g} MB.",
        "",
        _row(header),
        _row(["---", *["---:"] * (len(header) - 1)]),
    ]
    for r in probe["results"]:
        if "error" in r:
            lines.append(_row([r["driver"], _na(r)] + [""] * (len(header) - 2)))
            continue
        growth = r["peak_rss_growth_mb"]
        lines.append(_row([
            r["driver"], f"{growth:.1f}", "yes" if growth < target else "**no**",
            si(r["rows_per_s"]), f"{r['seconds']:.2f}", f"{r['rss_start_mb']:.1f}",
        ]))
    if any(r.get("method", "VmHWM") != "VmHWM" for r in probe["results"] if "error" not in r):
        lines += ["", "The peak could not be reset before streaming here (no",
                  "`/proc/self/clear_refs`): growths are from `ru_maxrss` and may be too high."]
    if chart:
        lines += ["", f"![peak RSS growth per driver]({chart})"]
    return lines


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def charts(results: list[dict[str, Any]], outdir: Path) -> list[str]:
    """Bar charts of rows/s, one PNG per workload and one with all; returns the file names.

    Raises ImportError when matplotlib is missing.
    """
    if not results:
        return []
    import matplotlib

    plt = _pyplot()
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    labels = _labels(results)
    groups = _groups(results)
    colours = {label: plt.get_cmap("tab10")(i % 10) for i, label in enumerate(labels)}

    def draw(ax: Any, workload: str) -> None:
        levels = [c for (w, c) in groups if w == workload]
        width = 0.8 / len(labels)
        for i, label in enumerate(labels):
            cells = [groups[(workload, c)].get(label, {}) for c in levels]
            xs = [x + i * width for x in range(len(levels))]
            ax.bar(xs, [cell.get("rows_per_s") or 0 for cell in cells], width,
                   label=label, color=colours[label])
            for x, cell in zip(xs, cells):
                if "error" in cell:  # an empty slot would read as "zero", not "did not run"
                    ax.text(x, 0, " n/a", rotation=90, ha="center", va="bottom", fontsize="x-small")
        ax.set_xticks([x + width * (len(labels) - 1) / 2 for x in range(len(levels))])
        ax.set_xticklabels([f"c={c}" for c in levels])
        ax.set_title(workload)
        ax.set_ylabel("rows/s")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: si(v)))

    files = []
    for workload in workloads:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        draw(ax, workload)
        ax.legend(fontsize="small", loc="best")
        fig.tight_layout()
        name = f"rows_per_s_{workload}.png"
        fig.savefig(outdir / name, dpi=100)
        plt.close(fig)
        files.append(name)

    cols = 3
    rows = -(-len(workloads) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, workload in zip(axes.flat, workloads):
        draw(ax, workload)
    for ax in list(axes.flat)[len(workloads):]:
        ax.set_visible(False)
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(len(labels), 7))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(outdir / OVERVIEW_CHART, dpi=100)
    plt.close(fig)
    return [OVERVIEW_CHART, *files]


def pool_chart(results: list[dict[str, Any]], outdir: Path) -> list[str]:
    """POOL_CHART: requests/s and p99 latency per contender, grouped by users.

    Returns the file names written (none without results); raises
    ImportError when matplotlib is missing.
    """
    if not results:
        return []
    import matplotlib

    plt = _pyplot()
    levels = _pool_levels(results)
    labels = _pool_labels(results)
    if any(r["contender"] == pool_scenario.AA_LABEL for r in results):
        labels.append(pool_scenario.AA_LABEL)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(labels)
    # p99 on a log scale: connecting per query is a hundred times slower
    # than any pool and would flatten the pools' bars to nothing.
    panels = (("requests_per_s", "requests/s (higher is better)", si, "linear"),
              ("latency_p99_ms", "p99 latency, ms, log scale (lower is better)",
               lambda v: f"{v:g}", "log"))
    for ax, (metric, title, fmt, scale) in zip(axes, panels):
        ax.set_yscale(scale)
        for i, label in enumerate(labels):
            cells = [by_name.get(label, {}) for by_name in levels.values()]
            xs = [x + i * width for x in range(len(levels))]
            ax.bar(xs, [cell.get(metric) or 0 for cell in cells], width, label=label,
                   color=plt.get_cmap("tab10")(i % 10))
            for x, cell in zip(xs, cells):
                if "error" in cell:  # at the bottom of the axes, log scale or not
                    ax.text(x, 0.01, " n/a", rotation=90, ha="center", va="bottom",
                            fontsize="x-small", transform=ax.get_xaxis_transform())
        ax.set_xticks([x + width * (len(labels) - 1) / 2 for x in range(len(levels))])
        ax.set_xticklabels([f"{users} users" for users in levels])
        ax.set_title(title)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _, f=fmt: f(v)))
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(labels))
    fig.suptitle("Pool scenario: simulated web requests")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(outdir / POOL_CHART, dpi=100)
    plt.close(fig)
    return [POOL_CHART]


def memory_chart(probe: dict[str, Any], outdir: Path) -> list[str]:
    """MEMORY_CHART: peak RSS growth per driver against the target line.

    Returns the file names written (none without results); raises
    ImportError when matplotlib is missing.
    """
    results = probe["results"]
    if not results:
        return []
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(results) + 1.8))
    names = [r["driver"] for r in results]
    ax.barh(names, [r.get("peak_rss_growth_mb") or 0 for r in results], color="tab:blue")
    for y, r in enumerate(results):
        text = " n/a" if "error" in r else f" {r['peak_rss_growth_mb']:.1f} MB"
        ax.text(r.get("peak_rss_growth_mb") or 0, y, text, va="center", fontsize="small")
    ax.axvline(probe["target_mb"], color="tab:red", linestyle="--",
               label=f"target: under {probe['target_mb']:g} MB")
    ax.invert_yaxis()  # first driver on top, as in the table
    ax.set_xlabel("peak RSS growth, MB")
    ax.set_title(f"Memory: {probe['rows']:,} rows through a cursor")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(outdir / MEMORY_CHART, dpi=100)
    plt.close(fig)
    return [MEMORY_CHART]


def save(report: dict[str, Any], outdir: Path, latest: Path | None) -> list[str]:
    """Write results.json, results.md and the charts into `outdir`; copy to `latest`.

    Returns notes for the user (e.g. charts skipped).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    notes = []
    try:
        report["charts"] = charts(report["results"], outdir)
        if "pool" in report:
            report["charts"] += pool_chart(report["pool"]["results"], outdir)
        if "memory" in report:
            report["charts"] += memory_chart(report["memory"], outdir)
    except ImportError:
        report["charts"] = []
        notes.append("charts skipped: matplotlib is not installed (pip install matplotlib)")
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

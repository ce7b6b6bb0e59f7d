"""Results out: machine info, the markdown table, the JSON file and the charts."""
from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

from .runner import AA_LABEL

BASELINE = "asyncpg"
ERROR_WIDTH = 50  # characters of an error message kept in a table cell


def machine_info(server_description: str, results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Where the numbers came from: CPU, Python, server and each driver's version."""
    results = list(results)
    versions: dict[str, str] = {}
    loops: dict[str, str] = {}
    for r in results:
        if "driver_version" in r and r["driver"] != AA_LABEL:
            versions.setdefault(r["driver"], r["driver_version"])
            loops.setdefault(r["driver"], r.get("event_loop", ""))
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "server": server_description,
        "drivers": versions,
        "event_loops": {d: loop for d, loop in loops.items() if not loop.endswith("threads")},
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


def _na(result: dict[str, Any]) -> str:
    error = result["error"].replace("|", "/").replace("\n", " ")
    if len(error) > ERROR_WIDTH:
        error = error[: ERROR_WIDTH - 1] + "…"
    return f"n/a ({error})"


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
    """The whole report as markdown: setup, two summary tables, per-workload details."""
    m, s = report["machine"], report["settings"]
    results = report["results"]
    drivers = ", ".join(f"{d} {v}" for d, v in m["drivers"].items()) or "none measured"
    loops = ", ".join(f"{d}: {loop}" for d, loop in m["event_loops"].items())
    lines = [
        f"# mypgdriver benchmark, {report['started']}",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}",
        f"- {m['python']}; {m['server']}",
        f"- Drivers: {drivers}" + (f"; async event loop: {loops}" if loops else ""),
        f"- Cells: {s['warmup']:g} s warm-up, then {s['duration']:g} s measured; "
        f"concurrency {', '.join(map(str, s['concurrency']))}; "
        f"pinning {'client core 0, server core 1 at c=1' if s['pin'] else 'off'}",
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
    return "\n".join(lines) + "\n"


def charts(results: list[dict[str, Any]], outdir: Path) -> list[str]:
    """Bar charts of rows/s, one PNG per workload and one with all; returns the file names.

    Raises ImportError when matplotlib is missing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig.savefig(outdir / "rows_per_s.png", dpi=100)
    plt.close(fig)
    return ["rows_per_s.png", *files]


def save(report: dict[str, Any], outdir: Path, latest: Path | None) -> list[str]:
    """Write results.json, results.md and the charts into `outdir`; copy to `latest`.

    Returns notes for the user (e.g. charts skipped).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    notes = []
    try:
        report["charts"] = charts(report["results"], outdir)
    except ImportError:
        report["charts"] = []
        notes.append("charts skipped: matplotlib is not installed (pip install matplotlib)")
    text = markdown(report)
    if report["charts"]:
        text += "\n## Charts\n\n" + "".join(f"![{n}]({n})\n" for n in report["charts"][:1])
    (outdir / "results.md").write_text(text)
    (outdir / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    if latest is not None:
        shutil.rmtree(latest, ignore_errors=True)
        shutil.copytree(outdir, latest)
    return notes

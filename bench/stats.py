"""Turning raw timings into the numbers a cell reports."""
from __future__ import annotations

import statistics
from typing import Any, Sequence


def percentiles(values: Sequence[float], points: Sequence[int]) -> list[float | None]:
    """The percentiles `points` (each 1..99) of `values`, in any order; None each without values.

    Interpolated between the two nearest values ("inclusive": never outside
    the values measured, which the default "exclusive" method can be for a
    p99 of few samples).  One value is every percentile of itself (before
    Python 3.13 `statistics.quantiles` refuses a single value).
    """
    if not values:
        return [None] * len(points)
    if len(values) == 1:
        return [float(values[0])] * len(points)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[point - 1] for point in points]


def cell_result(
    *,
    queries: int,
    rows: int,
    elapsed: float,
    cpu_seconds: float,
    latencies: Sequence[float],
) -> dict[str, Any]:
    """The measured numbers of one cell; latencies in seconds, output in ms / µs.

    Numbers that cannot exist (no query finished) are `None`, which JSON keeps.
    """
    p50, p99 = percentiles(latencies, (50, 99))

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else 1e3 * seconds

    return {
        "queries": queries,
        "rows": rows,
        "elapsed": elapsed,
        "queries_per_s": queries / elapsed if elapsed else 0.0,
        "rows_per_s": rows / elapsed if elapsed else 0.0,
        "latency_mean_ms": ms(sum(latencies) / len(latencies)) if latencies else None,
        "latency_p50_ms": ms(p50),
        "latency_p99_ms": ms(p99),
        "cpu_seconds": cpu_seconds,
        "cpu_per_query_us": 1e6 * cpu_seconds / queries if queries else None,
    }


def combine_rounds(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One cell's numbers from its rounds.

    Counts, times and CPU add up, so throughput and CPU per query are those
    of all rounds together; mean latency is weighted by queries; p50 and p99
    are the median of the rounds' values (the rounds' latencies are not
    kept).  Failed queries (the pooler scenario counts them) add up too, and
    the first round's first error is kept.  A round that failed makes the
    whole cell n/a.
    """
    if len(results) == 1:
        return dict(results[0])
    for i, r in enumerate(results, 1):
        if "error" in r:
            same = all(other.get("error") == r["error"] for other in results)
            return {**r, "error": r["error"] if same else f"round {i}: {r['error']}"}
    combined = dict(results[-1])
    for key in ("queries", "rows", "elapsed", "cpu_seconds", "rows_total", "errors"):
        if all(key in r for r in results):
            combined[key] = sum(r[key] for r in results)
    queries, elapsed = combined["queries"], combined["elapsed"]
    first_errors = [r["first_error"] for r in results if r.get("first_error")]
    if first_errors:
        combined["first_error"] = first_errors[0]
    combined["queries_per_s"] = queries / elapsed if elapsed else 0.0
    combined["rows_per_s"] = combined["rows"] / elapsed if elapsed else 0.0
    combined["cpu_per_query_us"] = 1e6 * combined["cpu_seconds"] / queries if queries else None
    weighted = [(r["latency_mean_ms"], r["queries"]) for r in results
                if r.get("latency_mean_ms") is not None]
    if weighted:
        combined["latency_mean_ms"] = (sum(m * q for m, q in weighted)
                                       / sum(q for _, q in weighted))
    for key in ("latency_p50_ms", "latency_p99_ms"):
        values = sorted(r[key] for r in results if r.get(key) is not None)
        if values:
            combined[key] = statistics.median(values)
    if all("rss_growth_mb" in r for r in results):
        combined["rss_growth_mb"] = max(r["rss_growth_mb"] for r in results)
    combined["rounds"] = len(results)
    return combined

"""Turning raw timings into the numbers a cell reports."""
from __future__ import annotations

import math
from typing import Any, Sequence


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (`fraction` in 0..1)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


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
    ordered = sorted(latencies)

    def ms(seconds: float) -> float | None:
        return 1e3 * seconds if ordered else None

    return {
        "queries": queries,
        "rows": rows,
        "elapsed": elapsed,
        "queries_per_s": queries / elapsed if elapsed else 0.0,
        "rows_per_s": rows / elapsed if elapsed else 0.0,
        "latency_mean_ms": ms(sum(ordered) / len(ordered)) if ordered else None,
        "latency_p50_ms": ms(percentile(ordered, 0.50)),
        "latency_p99_ms": ms(percentile(ordered, 0.99)),
        "cpu_seconds": cpu_seconds,
        "cpu_per_query_us": 1e6 * cpu_seconds / queries if queries else None,
    }

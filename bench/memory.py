"""The memory probe: peak RSS growth while streaming 1M rows through a cursor.

The issue's target is that streaming 1,000,000 rows through a server-side
cursor grows the client's peak resident memory by less than 50 MB: a cursor
that buffered its whole result (or leaked rows) would need several hundred.
This is not a throughput cell: each driver streams the rows once, in a fresh
`python -m bench.worker` process, so nothing measured before (imports of
other drivers, earlier cells) inflates or hides the growth.

The peak is the kernel's high-water mark (`VmHWM`), reset to the current RSS
just before streaming by writing 5 to `/proc/self/clear_refs` (Linux 4.0+).
Where that is impossible, `ru_maxrss` stands in; it includes any peak from
before the reset point, so the growth it gives can only be too high.
"""
from __future__ import annotations

import asyncio
import os
import re
import resource
import time
from typing import Any

from . import drivers
from .workloads import Workload

ROWS = 1_000_000
TARGET_MB = 50.0
NAME = "cursor_1m"

# The rows of the cursor_stream workload, ten times as many: three columns
# (int, text, float8), fetched CURSOR_BATCH at a time through each driver's
# cursor builder, so the probe runs the exact calls the throughput cell runs.
CURSOR_1M = Workload(
    name=NAME,
    description=f"{ROWS:,} rows streamed through a cursor once: peak RSS growth",
    kind="cursor",
    sql="SELECT i, 'row ' || i AS label, i * 0.5::float8 AS half FROM generate_series(1, $1) AS i",
    args=(ROWS,),
    rows=ROWS,
)

# Seconds a probe may take before the runner kills it: 1M rows take one to
# a few seconds per driver here, and a slow machine gets plenty of room.
PROBE_TIMEOUT = 180.0

_STATUS_KB = re.compile(r"^(VmRSS|VmHWM):\s+(\d+)\s+kB", re.MULTILINE)


def _status_bytes() -> dict[str, int]:
    """VmRSS and VmHWM of this process in bytes, from /proc/self/status."""
    with open("/proc/self/status") as f:
        return {key: int(kb) * 1024 for key, kb in _STATUS_KB.findall(f.read())}


class PeakRss:
    """Peak resident memory of this process from a starting point on.

    `start()` records the current RSS and makes the peak restart from it;
    `growth()` is how far above that start the peak went, in bytes.
    """

    def __init__(self) -> None:
        self.method = "VmHWM"
        self.start_bytes = 0

    def start(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to VmRSS (proc(5), clear_refs)
            self.start_bytes = _status_bytes()["VmRSS"]
        except (OSError, KeyError):
            self.method = "ru_maxrss"
            self.start_bytes = _current_rss()

    def peak(self) -> int:
        """The high-water mark in bytes (since `start()` for VmHWM)."""
        if self.method == "VmHWM":
            return _status_bytes()["VmHWM"]
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def growth(self) -> int:
        return max(0, self.peak() - self.start_bytes)


def _current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _event_loop_name() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    return f"uvloop {uvloop.__version__}"


def run_probe(spec: dict[str, Any], result: dict[str, Any]) -> None:
    """Stream CURSOR_1M once with `spec["driver"]`, filling `result` with the growth.

    The connection is open and the driver imported before the starting
    point: the growth is what streaming itself holds on to, not the cost of
    importing a driver.
    """
    driver = drivers.load(spec["driver"])
    result["driver_version"] = driver.version()
    peak = PeakRss()
    if driver.is_async:
        result["event_loop"] = _event_loop_name()

        async def stream() -> tuple[int, float]:
            session = await driver.open(spec["params"], CURSOR_1M)
            try:
                peak.start()
                started = time.perf_counter()
                rows = await session.run()
                return rows, time.perf_counter() - started
            finally:
                await session.close()

        if result["event_loop"] == "asyncio":
            rows, seconds = asyncio.run(stream())
        else:
            import uvloop

            rows, seconds = uvloop.run(stream())
    else:
        result["event_loop"] = "1 thread"
        session = driver.open(spec["params"], CURSOR_1M)
        try:
            peak.start()
            started = time.perf_counter()
            rows = session.run()
            seconds = time.perf_counter() - started
        finally:
            session.close()
    growth = peak.growth()
    result.update({
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds if seconds else 0.0,
        "rss_start_mb": peak.start_bytes / 2**20,
        "peak_rss_growth_mb": growth / 2**20,
        "method": peak.method,
    })


def verify(result: dict[str, Any]) -> dict[str, Any]:
    """A probe that did not stream all the rows is an error, not a small number."""
    if "error" in result or result["rows"] == ROWS:
        return result
    return {**{k: v for k, v in result.items() if k in ("driver_version", "event_loop")},
            "error": f"wrong row count: {result['rows']}, expected {ROWS}"}


def probe_drivers(chosen: list[str]) -> list[str]:
    """The chosen drivers the probe applies to: the Python ones (all have cursors)."""
    return [d for d in chosen if d in drivers.MODULES]

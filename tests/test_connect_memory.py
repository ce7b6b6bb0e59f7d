"""A connect / query / close loop must not grow the process's memory (issue 22).

Each closed connection lives until the cyclic garbage collector reaches it
(the protocol, the session and the Connection refer to each other), and its
buffers used to be 256 KiB of C memory: the C heap grew by about 9 MB in the
first few hundred cycles and kept creeping, below anything tracemalloc or gc
counts see.  The loop runs in a child process, with its own allocator state,
and reports its resident set size (VmRSS) after the warm-up and the highest
it reaches afterwards.

``MALLOC_PERTURB_`` makes glibc fill each block it hands out, so every page
of heap that malloc uses is resident: the RSS then shows the heap's real
footprint whatever the rest of the process touches, and whether or not the
kernel backs the heap with transparent huge pages.  (Without it, here, the
old code's heap grew as much while its RSS stayed flat: the big buffers'
pages were never written.)

Run on its own with ``./dev.sh test tests/test_connect_memory.py`` or
``-m memory``.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: A few cycles for the one-time costs (imports, the first connection's
#: caches).  Deliberately short: the old code's growth came in the first few
#: hundred cycles, and a long warm-up would hide it.
WARMUP_CYCLES = 30
MEASURED_CYCLES = 1500
#: Measured here (MALLOC_PERTURB_ set, peak of the samples): before the fix
#: 3.8-4.0 MB with SELECT 1 on either loop and 7.0-7.1 MB with the large
#: value; with it, under 0.1 MB in every case.
MAX_GROWTH_MB = 2.0
WALL_CLOCK_LIMIT = 120

pytestmark = [
    pytest.mark.memory,
    pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc"),
]


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def connect_close_loop(connect_kwargs: dict[str, Any], query: str, warmup: int,
                             cycles: int) -> dict:
    import mypgdriver

    async def cycle() -> None:
        conn = await mypgdriver.connect(**connect_kwargs)
        await conn.fetchval(query)
        await conn.close()

    for _ in range(warmup):
        await cycle()
    before = peak = rss_mb()
    # The highest of samples taken along the way: how much is held at the
    # end depends on where the garbage collector happened to be.
    for i in range(1, cycles + 1):
        await cycle()
        if i % 50 == 0:
            peak = max(peak, rss_mb())
    return {"before_mb": before, "peak_mb": peak}


def child_main() -> None:
    # python -m tests.test_connect_memory LOOP QUERY WARMUP CYCLES, with connect()'s
    # arguments as JSON in $CONNECT_KWARGS (not argv: they may hold a password).
    loop_name, query, warmup, cycles = sys.argv[1:5]
    connect_kwargs = json.loads(os.environ["CONNECT_KWARGS"])
    coro = connect_close_loop(connect_kwargs, query, int(warmup), int(cycles))
    if loop_name == "uvloop":
        import uvloop
        result = uvloop.run(coro)
    else:
        result = asyncio.run(coro)
    print(json.dumps(result))


@pytest.mark.parametrize("loop_name, query", [
    ("asyncio", "SELECT 1"),
    ("uvloop", "SELECT 1"),
    # A 300 kB value arrives over several reads, so the receive buffer grows
    # to hold it: that storage too must go when the connection closes.
    ("asyncio", "SELECT repeat('x', 300000)"),
], ids=["asyncio", "uvloop", "asyncio-large-value"])
def test_connect_close_loop_does_not_grow_rss(connect_kwargs, loop_name, query):
    if loop_name == "uvloop" and importlib.util.find_spec("uvloop") is None:
        pytest.skip("uvloop is not installed")
    env = dict(os.environ, MALLOC_PERTURB_="165", CONNECT_KWARGS=json.dumps(connect_kwargs))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.test_connect_memory", loop_name, query,
             str(WARMUP_CYCLES), str(MEASURED_CYCLES)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=WALL_CLOCK_LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the connect/close loop took over {WALL_CLOCK_LIMIT} s:\n{exc.stderr}")
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    growth = result["peak_mb"] - result["before_mb"]
    assert growth < MAX_GROWTH_MB, (
        f"RSS grew by {growth:.1f} MB over {MEASURED_CYCLES} connect/{query}/close cycles "
        f"on {loop_name} ({result['before_mb']:.1f} -> {result['peak_mb']:.1f} MB at most)")


if __name__ == "__main__":
    child_main()

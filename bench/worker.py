"""One benchmark cell, run in its own process: `python -m bench.worker`.

Reads a JSON spec on stdin ({driver, workload, concurrency, warmup,
duration, params, expected_rows}), runs the workload on `concurrency`
connections (tasks on one event loop for async drivers, threads for sync
ones), and prints one JSON line with the results, or with `error` set.
A spec with `scenario` set runs that instead: "pool" (one contender at one
level of the pool scenario, `bench.pool_scenario.run_spec`), "sync_pool" (one
contender at one level of the sync pool scenario, on threads,
`bench.sync_pool_scenario.run_spec`), "pipeline" (one
Python contender of the pipeline scenario, `bench.pipeline_scenario.run_spec`),
"pooler" (one Python contender of the pooler scenario: this module's
measuring loops with a driver configured by `bench.pooler_scenario`, failed
queries counted instead of ending the cell) or "cursor_1m" (the memory
probe, `bench.memory.run_probe`).
A separate process per cell keeps drivers from disturbing each other
(imports, memory, a crash) and makes the process's CPU time the driver's.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import (
    drivers,
    memory,
    pipeline_scenario,
    pool_scenario,
    pooler_scenario,
    sync_pool_scenario,
)
from .drivers.base import SKIPPED, ContenderUnavailable
from .stats import cell_result
from .workloads import BY_NAME


def cpu_time() -> float:
    """User + system CPU seconds of this whole process (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Window:
    """The measuring window: queries finishing inside it are counted.

    Counting completions (not starts) keeps throughput unbiased even when one
    query lasts a good part of the window (cursor_stream).
    """

    start: float = float("inf")
    end: float = float("inf")
    cpu_start: float = 0.0
    cpu_end: float = 0.0
    stopped: bool = False

    def open(self) -> None:
        self.cpu_start = cpu_time()
        self.start = time.perf_counter()

    def close(self) -> None:
        self.end = time.perf_counter()
        self.cpu_end = cpu_time()
        self.stopped = True


@dataclass
class Tally:
    """What one connection did: inside the window, and in all (for checking).

    `errors` and `first_error` are kept only by the loops that go on after a
    failed query (`keep_going`); the others end the cell at the first error.
    """

    latencies: list[float] = field(default_factory=list)
    rows: int = 0
    rows_total: int = 0
    errors: int = 0
    first_error: str | None = None
    failed_in_window: bool = False


# The window stays open past --duration until every connection has finished
# one iteration inside it, or this many seconds more. Otherwise connections
# that all started together and each need longer than the window (100k-row
# cursors at c=10 on a busy machine) would finish none inside it.
MAX_EXTENSION = 30.0
EXTENSION_STEP = 0.01
# After a failed query a `keep_going` loop waits this long before the next:
# a connection that is gone fails at once, and without a pause its loop
# would spin without ever giving the event loop (or the other threads) a turn.
ERROR_PAUSE = 0.001


def _each_finished_one(tallies: list[Tally]) -> bool:
    return all(t.latencies or t.failed_in_window for t in tallies)


def _count(window: Window, tally: Tally, started: float, finished: float, rows: int) -> None:
    tally.rows_total += rows
    if window.start <= finished <= window.end:
        tally.latencies.append(finished - started)
        tally.rows += rows


def _count_error(window: Window, tally: Tally, finished: float, exc: Exception) -> None:
    """A failed query: counted (with the first error's text) when it ends inside the window."""
    if window.start <= finished <= window.end:
        tally.errors += 1
        tally.failed_in_window = True
        if tally.first_error is None:
            tally.first_error = describe_error(exc)


async def _run_async(driver: Any, spec: dict[str, Any],
                     keep_going: bool = False) -> tuple[Window, list[Tally]]:
    workload = BY_NAME[spec["workload"]]
    sessions = await asyncio.gather(
        *(driver.open(spec["params"], workload) for _ in range(spec["concurrency"]))
    )
    window = Window()
    tallies = [Tally() for _ in sessions]
    perf_counter = time.perf_counter

    async def loop(session: Any, tally: Tally) -> None:
        run = session.run
        while not window.stopped:
            started = perf_counter()
            rows = await run()
            _count(window, tally, started, perf_counter(), rows)

    # A loop of its own, so that the usual one has no try block in it.
    async def loop_counting_errors(session: Any, tally: Tally) -> None:
        run = session.run
        while not window.stopped:
            started = perf_counter()
            try:
                rows = await run()
            except Exception as exc:  # noqa: BLE001 - counted and reported, the cell goes on
                _count_error(window, tally, perf_counter(), exc)
                await asyncio.sleep(ERROR_PAUSE)
                continue
            _count(window, tally, started, perf_counter(), rows)

    each = loop_counting_errors if keep_going else loop
    tasks = [asyncio.ensure_future(each(s, t)) for s, t in zip(sessions, tallies)]

    async def wait(seconds: float) -> None:
        # A loop only ends early by raising: surface that at once.
        done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()

    try:
        await wait(spec["warmup"])
        window.open()
        await wait(spec["duration"])
        deadline = time.monotonic() + MAX_EXTENSION
        while not _each_finished_one(tallies) and time.monotonic() < deadline:
            await wait(EXTENSION_STEP)
        window.close()
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for session in sessions:
            # The first error is the one to report, not a failed close after it.
            with contextlib.suppress(Exception):
                await session.close()
        raise
    for session in sessions:
        await session.close()
    return window, tallies


def _run_threads(driver: Any, spec: dict[str, Any],
                 keep_going: bool = False) -> tuple[Window, list[Tally]]:
    workload = BY_NAME[spec["workload"]]
    sessions = []
    try:
        for _ in range(spec["concurrency"]):
            sessions.append(driver.open(spec["params"], workload))
        window = Window()
        tallies = [Tally() for _ in sessions]
        errors: list[BaseException] = []
        failed = threading.Event()
        perf_counter = time.perf_counter

        def loop(session: Any, tally: Tally) -> None:
            run = session.run
            try:
                while not window.stopped:
                    started = perf_counter()
                    rows = run()
                    _count(window, tally, started, perf_counter(), rows)
            except BaseException as exc:
                errors.append(exc)
                failed.set()

        def loop_counting_errors(session: Any, tally: Tally) -> None:
            run = session.run
            while not window.stopped:
                started = perf_counter()
                try:
                    rows = run()
                except Exception as exc:  # noqa: BLE001 - counted and reported, the cell goes on
                    _count_error(window, tally, perf_counter(), exc)
                    time.sleep(ERROR_PAUSE)
                    continue
                _count(window, tally, started, perf_counter(), rows)

        each = loop_counting_errors if keep_going else loop
        threads = [threading.Thread(target=each, args=st, daemon=True)
                   for st in zip(sessions, tallies)]
        for thread in threads:
            thread.start()
        if not failed.wait(spec["warmup"]):
            window.open()
            if not failed.wait(spec["duration"]):
                deadline = time.monotonic() + MAX_EXTENSION
                while not _each_finished_one(tallies) and time.monotonic() < deadline:
                    if failed.wait(EXTENSION_STEP):
                        break
                window.close()
        # Let every thread finish its query before the connections close.
        window.stopped = True
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
    except BaseException:
        for session in sessions:
            # The first error is the one to report, not a failed close after it.
            with contextlib.suppress(Exception):
                session.close()
        raise
    for session in sessions:
        session.close()
    return window, tallies


def _event_loop_name() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    return f"uvloop {uvloop.__version__}"


def run_cell(spec: dict[str, Any], result: dict[str, Any], driver: Any = None,
             keep_going: bool = False) -> None:
    """Run one cell as described by `spec`, filling in `result`.

    Filling a dict the caller holds keeps the driver's version in the
    result even when the run itself fails.  `driver` replaces the one
    `spec["driver"]` names (the pooler scenario's configured drivers).  With
    `keep_going`, a failed query is counted (`errors`, `first_error`) and
    the connection goes on with the next one; otherwise it ends the cell.
    """
    if driver is None:
        driver = drivers.load(spec["driver"])
    result["driver_version"] = driver.version()
    rss_before = resident_bytes()
    if driver.is_async:
        result["event_loop"] = _event_loop_name()
        coro = _run_async(driver, spec, keep_going)
        if result["event_loop"] == "asyncio":
            window, tallies = asyncio.run(coro)
        else:
            import uvloop

            window, tallies = uvloop.run(coro)
    else:
        result["event_loop"] = f"{spec['concurrency']} threads"
        window, tallies = _run_threads(driver, spec, keep_going)
    peak_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    latencies = [lat for t in tallies for lat in t.latencies]
    result.update(
        cell_result(
            queries=len(latencies),
            rows=sum(t.rows for t in tallies),
            elapsed=window.end - window.start,
            cpu_seconds=window.cpu_end - window.cpu_start,
            latencies=latencies,
        )
    )
    result["rss_growth_mb"] = max(0, peak_bytes - rss_before) / 2**20
    result["rows_total"] = sum(t.rows_total for t in tallies)
    if keep_going:
        result["errors"] = sum(t.errors for t in tallies)
        first = next((t.first_error for t in tallies if t.first_error), None)
        if first is not None:
            result["first_error"] = first


def describe_error(exc: BaseException) -> str:
    """A one-line description of an exception for the results table."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    """Run what `spec` asks for: a throughput, pool, pipeline or pooler cell, or a memory probe."""
    scenario = spec.get("scenario")
    if scenario is None:
        run_cell(spec, result)
    elif scenario == pool_scenario.NAME:
        pool_scenario.run_spec(spec, result)
    elif scenario == sync_pool_scenario.NAME:
        sync_pool_scenario.run_spec(spec, result)
    elif scenario == pooler_scenario.SCENARIO:
        run_cell(pooler_scenario.cell_spec(spec), result,
                 driver=pooler_scenario.driver_for(spec["contender"]), keep_going=True)
    elif scenario == pipeline_scenario.SCENARIO:
        pipeline_scenario.run_spec(spec, result)
    elif scenario == memory.NAME:
        memory.run_probe(spec, result)
    else:
        raise ValueError(f"unknown scenario {scenario!r}")


def run_to_result(spec: dict[str, Any]) -> dict[str, Any]:
    """Run `spec` and return its result; a failure is a result with `error` set.

    A contender that cannot run here (ContenderUnavailable) is not a
    failure of it: its result says "skipped: <why>" and `skipped: True`.
    """
    result: dict[str, Any] = {}
    try:
        run(spec, result)
    except ContenderUnavailable as exc:
        result.update(error=f"{SKIPPED}{exc}", skipped=True)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an n/a cell
        result["error"] = describe_error(exc)
    return result


def main() -> None:
    result = run_to_result(json.loads(sys.stdin.read()))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    # A driver may leave non-daemon threads or a wedged loop behind; the
    # result is out, so do not wait for them.
    os._exit(0)


if __name__ == "__main__":
    main()

"""Runs the cells of a benchmark plan, one subprocess per cell, and collects results."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Union

from . import (
    memory,
    pgbench,
    pipeline_scenario,
    pool_scenario,
    pooler_scenario,
    sync_pool_scenario,
)
from .contenders import DICT_ROWS, DICT_ROWS_SCENARIO, DICT_ROWS_WORKLOAD, THROUGHPUT
from .server import REPO_ROOT, BenchServer
from .stats import combine_rounds
from .workloads import BY_NAME, Workload

if TYPE_CHECKING:
    from tools.pgbouncer import PgbouncerBinary

# Seconds a cell may take beyond warm-up + duration (connecting, a slow
# driver's last iteration) before it is killed and marked n/a.
CELL_GRACE = 60.0


def _with_round(title: str, round: int, rounds: int) -> str:
    """A cell's title, with its round when there are several."""
    return f"{title} (round {round}/{rounds})" if rounds > 1 else title


@dataclass(frozen=True)
class Cell:
    """One measurement: a driver running a workload at a concurrency.

    With several rounds, each round is its own cell; the report combines them.
    """

    workload: str
    concurrency: int
    driver: str
    label: str
    round: int = 1
    rounds: int = 1

    def title(self) -> str:
        return _with_round(f"{self.workload} c={self.concurrency} {self.label}", self.round,
                           self.rounds)

    @property
    def key(self) -> tuple[str, int, str]:
        """What the rounds of one cell share."""
        return self.workload, self.concurrency, self.label


@dataclass(frozen=True)
class PoolCell:
    """One contender of the pool scenario at one number of concurrent users (one round).

    `scenario` is pool_scenario.NAME for the levels of `--pool-users`,
    pool_scenario.SHORTCUTS_NAME for the shortcut level, which has its own
    pool size (`pool_size`; None means `--pool-size`), or
    sync_pool_scenario.NAME for the sync pool scenario's levels
    (`--sync-pool-users`, threads instead of tasks).
    """

    users: int
    contender: str
    label: str
    round: int = 1
    rounds: int = 1
    pool_size: int | None = None
    scenario: str = pool_scenario.NAME

    def title(self) -> str:
        size = f" pool={self.pool_size}" if self.pool_size is not None else ""
        return _with_round(f"{self.scenario} users={self.users}{size} {self.label}",
                           self.round, self.rounds)

    @property
    def key(self) -> tuple[int, str]:
        return self.users, self.label


@dataclass(frozen=True)
class VariantCell:
    """One contender of a scenario with variants (pipeline, pooler) on one variant (one round).

    The scenarios subclass it side by side, so that isinstance() tells their
    cells apart.
    """

    variant: str
    contender: str
    label: str
    round: int = 1
    rounds: int = 1

    def name(self) -> str:
        return f"{self.variant} {self.label}"

    def title(self) -> str:
        return _with_round(self.name(), self.round, self.rounds)

    @property
    def key(self) -> tuple[str, str]:
        return self.variant, self.label


@dataclass(frozen=True)
class PipelineCell(VariantCell):
    """One contender of the pipeline scenario on one variant (one round)."""


@dataclass(frozen=True)
class PoolerCell(VariantCell):
    """One contender of the pooler scenario on one variant (one round), through pgbouncer."""

    def name(self) -> str:
        return f"{self.variant} c={pooler_scenario.CONCURRENCY} {self.label}"


@dataclass(frozen=True)
class MemoryProbe:
    """One driver streaming 1M rows through a cursor once, for its peak RSS growth."""

    driver: str

    def title(self) -> str:
        return f"{memory.NAME} {self.driver} (peak RSS)"


Job = Union[Cell, PipelineCell, PoolCell, PoolerCell, MemoryProbe]


def _variant_cells(cell_type: type[VariantCell], scenario: Any, options: Options,
                   rounds: int) -> list[VariantCell]:
    """The cells of a scenario with variants (its module has NAMES and contenders_for())."""
    contenders = scenario.contenders_for(options.drivers, options.aa_control)
    return [cell_type(variant, contender, label, r, rounds)
            for variant in scenario.NAMES if variant in options.scenarios
            for r in range(1, rounds + 1)
            for contender, label in contenders]

# Scenarios that are not throughput cells, selectable by name like workloads
# (the dict-row cells are throughput cells of pg_type, in their own table).
SCENARIOS = (DICT_ROWS_SCENARIO, *pipeline_scenario.NAMES, pool_scenario.NAME, pool_scenario.SHORTCUTS_NAME,
             sync_pool_scenario.NAME, *pooler_scenario.NAMES, memory.NAME)

# Seconds a memory probe is expected to take, for the time-left estimate
# only: 1M rows at 0.5-2M rows/s.
PROBE_NOMINAL = 1.5


@dataclass
class Options:
    """What to run and for how long (seconds), from the command line."""

    drivers: list[str]
    workloads: list[str]
    concurrency: list[int]
    duration: float
    warmup: float
    pin: bool = False
    # Each cell is measured in this many rounds; a round runs every driver
    # once, so slow drift of the machine spreads over all drivers alike.
    rounds: int = 1
    aa_control: bool = True
    # Named entries of SCENARIOS to run after the throughput cells.
    scenarios: list[str] = field(default_factory=list)
    pool_users: list[int] = field(default_factory=lambda: list(pool_scenario.DEFAULT_LEVELS))
    pool_size: int = pool_scenario.DEFAULT_POOL_SIZE
    sync_pool_users: list[int] = field(
        default_factory=lambda: list(sync_pool_scenario.DEFAULT_LEVELS))


def plan(options: Options) -> list[Job]:
    """The cells to run, in order.

    For each workload and concurrency, in each round: asyncpg first (the
    baseline), the others (on pg_type, then the dict-row contenders of the
    chosen drivers, psycopg's first), then asyncpg again as the A/A control, so the
    control also sees whatever drift happened while the others ran. Rounds
    interleave the drivers (all of round 1, then all of round 2, ...) rather
    than measuring one driver's rounds back to back. Then the pipeline
    scenario, variant by variant in the same order (asyncpg's pool of 10
    first and last), the pool scenario, level by level (asyncpg's pool first
    and last), its shortcut level, the pooler scenario, variant by variant
    (asyncpg first and last), and the memory probes, one per driver.
    The sync pool scenario runs after the shortcut level, level by level
    (psycopg_pool's pool first and last).
    """
    order = sorted(options.drivers, key=lambda d: d != THROUGHPUT.baseline)
    cells: list[Job] = []
    rounds = options.rounds
    # The dict-row contenders of the chosen drivers run in pg_type's rounds,
    # after the drivers and before the A/A control; alone when pg_type is
    # not chosen.
    dict_rows = (DICT_ROWS.run_order(options.drivers, aa_control=False)
                 if DICT_ROWS_SCENARIO in options.scenarios else [])
    workloads = list(options.workloads)
    if dict_rows and DICT_ROWS_WORKLOAD not in workloads:
        workloads.insert(0, DICT_ROWS_WORKLOAD)
    for workload in workloads:
        throughput = workload in options.workloads
        extra = dict_rows if workload == DICT_ROWS_WORKLOAD else []
        for concurrency in options.concurrency:
            for r in range(1, rounds + 1):
                if throughput:
                    for driver in order:
                        cells.append(Cell(workload, concurrency, driver, driver, r, rounds))
                cells += [Cell(workload, concurrency, contender, label, r, rounds)
                          for contender, label in extra]
                if throughput and options.aa_control and THROUGHPUT.baseline in options.drivers:
                    cells.append(Cell(workload, concurrency, THROUGHPUT.baseline,
                                      THROUGHPUT.control, r, rounds))
    cells += _variant_cells(PipelineCell, pipeline_scenario, options, rounds)
    if pool_scenario.NAME in options.scenarios:
        contenders = pool_scenario.contenders_for(options.drivers, options.aa_control)
        for users in options.pool_users:
            for r in range(1, rounds + 1):
                cells += [PoolCell(users, contender, label, r, rounds)
                          for contender, label in contenders]
    if pool_scenario.SHORTCUTS_NAME in options.scenarios:
        contenders = pool_scenario.shortcut_contenders_for(options.drivers, options.aa_control)
        for r in range(1, rounds + 1):
            cells += [PoolCell(pool_scenario.SHORTCUT_USERS, contender, label, r, rounds,
                               pool_scenario.SHORTCUT_POOL_SIZE, pool_scenario.SHORTCUTS_NAME)
                      for contender, label in contenders]
    if sync_pool_scenario.NAME in options.scenarios:
        contenders = sync_pool_scenario.contenders_for(options.drivers, options.aa_control)
        for users in options.sync_pool_users:
            for r in range(1, rounds + 1):
                cells += [PoolCell(users, contender, label, r, rounds,
                                   scenario=sync_pool_scenario.NAME)
                          for contender, label in contenders]
    cells += _variant_cells(PoolerCell, pooler_scenario, options, rounds)
    if memory.NAME in options.scenarios:
        cells += [MemoryProbe(driver) for driver in memory.probe_drivers(order)]
    return cells


@dataclass
class RunResults:
    """Results of a run, one list per kind of job, each in run order.

    `rounds` holds each round of each throughput cell; `cells` combines the
    rounds of each cell (see stats.combine_rounds).
    """

    rounds: dict[tuple[str, int, str], list[dict[str, Any]]] = field(default_factory=dict)
    pool_rounds: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    shortcut_rounds: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    sync_pool_rounds: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    pipeline_rounds: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    pooler_rounds: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    memory: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return (sum(map(len, self.rounds.values())) + sum(map(len, self.pool_rounds.values()))
                + sum(map(len, self.shortcut_rounds.values()))
                + sum(map(len, self.sync_pool_rounds.values()))
                + sum(map(len, self.pipeline_rounds.values()))
                + sum(map(len, self.pooler_rounds.values())) + len(self.memory))

    @property
    def cells(self) -> list[dict[str, Any]]:
        return [{"workload": workload, "concurrency": concurrency, "driver": label,
                 **combine_rounds(results)}
                for (workload, concurrency, label), results in self.rounds.items()]

    @property
    def pool(self) -> list[dict[str, Any]]:
        return [{"users": users, "contender": label, **_combine_pool_rounds(users, label, results)}
                for (users, label), results in self.pool_rounds.items()]

    @property
    def pool_shortcuts(self) -> list[dict[str, Any]]:
        return [{"users": users, "contender": label, **_combine_pool_rounds(users, label, results)}
                for (users, label), results in self.shortcut_rounds.items()]

    @property
    def sync_pool(self) -> list[dict[str, Any]]:
        return [{"users": users, "contender": label, **_combine_pool_rounds(users, label, results)}
                for (users, label), results in self.sync_pool_rounds.items()]

    @property
    def pipeline(self) -> list[dict[str, Any]]:
        return [{"variant": variant, "contender": label, **combine_rounds(results)}
                for (variant, label), results in self.pipeline_rounds.items()]

    @property
    def pooler(self) -> list[dict[str, Any]]:
        return [{"variant": variant, "contender": label, **combine_rounds(results)}
                for (variant, label), results in self.pooler_rounds.items()]

    def add(self, job: Job, result: dict[str, Any]) -> None:
        """File `result` under its job, with the keys that say which job it was."""
        if isinstance(job, PoolCell):
            rounds = {pool_scenario.SHORTCUTS_NAME: self.shortcut_rounds,
                      sync_pool_scenario.NAME: self.sync_pool_rounds}.get(job.scenario,
                                                                          self.pool_rounds)
            rounds.setdefault(job.key, []).append(result)
        elif isinstance(job, PipelineCell):
            self.pipeline_rounds.setdefault(job.key, []).append(result)
        elif isinstance(job, PoolerCell):
            self.pooler_rounds.setdefault(job.key, []).append(result)
        elif isinstance(job, MemoryProbe):
            self.memory.append({"driver": job.driver, **result})
        else:
            self.rounds.setdefault(job.key, []).append(result)


def _combine_pool_rounds(users: int, label: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """One pool cell from its rounds, as pool_scenario.combine_rounds pools them."""
    if len(results) == 1:
        return results[0]
    for r in results:
        if "error" in r:
            return r
    cells = [pool_scenario.CellResult(
        contender=label, users=users, requests=r["requests"], queries=r["queries"],
        errors=r["errors"], elapsed=r["elapsed"], cpu_seconds=r["cpu_seconds"],
        p50_ms=r["latency_p50_ms"], p95_ms=r["latency_p95_ms"], p99_ms=r["latency_p99_ms"],
        first_error=r.get("first_error")) for r in results]
    return {**results[-1], **pool_scenario.result_dict(pool_scenario.combine_rounds(cells)),
            "rounds": len(results)}


class Progress:
    """Progress lines on stderr: what runs, how many cells are left, time left."""

    def __init__(self, cells: list[Job], options: Options) -> None:
        self.nominals = [nominal_seconds(cell, options) for cell in cells]
        self.total = len(cells)
        self.done = 0
        self.overhead = 1.0  # per-cell setup + process start, refined as cells finish
        self.started = time.monotonic()

    def start(self, cell: Job) -> None:
        left = sum(self.nominals[self.done:]) + (self.total - self.done) * self.overhead
        print(f"[{self.done + 1}/{self.total}] {cell.title()} ... "
              f"(about {_minutes(left)} left)", file=sys.stderr, flush=True)

    def finish(self, cell: Job, result: dict[str, Any]) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        self.overhead = max(0.0, (elapsed - sum(self.nominals[:self.done])) / self.done)
        print(f"      {outcome(cell, result)}", file=sys.stderr, flush=True)


def nominal_seconds(cell: Job, options: Options) -> float:
    """How long a job should take, setup and process start aside."""
    return PROBE_NOMINAL if isinstance(cell, MemoryProbe) else options.warmup + options.duration


def outcome(cell: Job, result: dict[str, Any]) -> str:
    """One line saying how a job went, for the progress output."""
    if "error" in result:
        return f"n/a ({result['error']})"
    if isinstance(cell, PipelineCell):
        p99 = result.get("latency_p99_ms")
        return (f"{result['queries_per_s']:,.0f} queries/s, "
                f"{result['cpu_per_query_us']:,.1f} µs CPU/query"
                + (f", p99 {p99:,.2f} ms" if p99 is not None else ""))
    if isinstance(cell, PoolCell):
        errors = f", {result['errors']} failed requests" if result["errors"] else ""
        return (f"{result['requests_per_s']:,.0f} requests/s, p99 "
                f"{result['latency_p99_ms']:,.2f} ms, "
                f"{result['cpu_per_request_us']:,.0f} µs CPU/request{errors}")
    if isinstance(cell, MemoryProbe):
        return (f"peak RSS +{result['peak_rss_growth_mb']:,.1f} MB over {result['rows']:,} rows "
                f"({result['rows_per_s']:,.0f} rows/s)")
    failed = (f", {result['errors']:,} failed queries ({result.get('first_error', '')})"
              if result.get("errors") else "")
    return (f"{result['rows_per_s']:,.0f} rows/s, {result['queries_per_s']:,.0f} q/s, "
            f"{result['cpu_per_query_us']:,.1f} µs CPU/query{failed}")


def _minutes(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _pinning(options: Options, concurrency: int) -> tuple[set[int] | None, set[int] | None]:
    """(client cpus, server cpus) for a cell: pinned apart at c=1 with --pin.

    Pipeline cells (one client process, one connection for most contenders)
    ask with concurrency 1: --pin pins them apart too.
    """
    if options.pin and concurrency == 1:
        return {0}, {1}
    return None, None


def run_worker(spec: dict[str, Any], client_cpus: set[int] | None, timeout: float) -> dict[str, Any]:
    """Run one cell in a `python -m bench.worker` subprocess and return its result."""
    preexec = (lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.worker"], input=json.dumps(spec), capture_output=True,
            text=True, cwd=REPO_ROOT, timeout=timeout, preexec_fn=preexec,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if lines:
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    # No JSON: the worker died (a segfault in a driver, say).
    return {"error": crash_description(proc.returncode, proc.stderr)}


def crash_description(returncode: int, stderr: str) -> str:
    """Why a worker ended without a result: its signal or exit code, and stderr's last line."""
    if returncode < 0:
        try:
            how = signal.Signals(-returncode).name
        except ValueError:
            how = f"signal {-returncode}"
    else:
        how = f"exit code {returncode}"
    lines = stderr.strip().splitlines()
    return f"worker crashed ({how})" + (f": {lines[-1]}" if lines else "")


class Runner:
    """Runs a plan against one server and returns the list of cell results."""

    def __init__(self, server: BenchServer, options: Options) -> None:
        self.server = server
        self.options = options
        self._expected_rows: dict[str, int] = {}
        self._all_cpus = os.sched_getaffinity(0)
        self._server_cpus: set[int] | None = None
        self._pool_table = False  # the pool scenario's table exists on the server
        # The pgbouncer binary of the pooler scenario, found at its first cell.
        self._pgbouncer: PgbouncerBinary | None = None

    def expected_rows(self, w: Workload, fresh: bool = False) -> int:
        """Rows one iteration must return, counted on the server when it varies.

        `fresh` counts again: the pooler cells run after other scenarios
        created tables (a table adds its row types to pg_type).
        """
        if w.rows is not None:
            return w.rows
        if fresh or w.name not in self._expected_rows:
            self._expected_rows[w.name] = int(
                self.server.psql(f"SELECT count(*) FROM ({w.literal_sql}) AS q").strip())
        return self._expected_rows[w.name]

    def _pin_server(self, cpus: set[int] | None) -> None:
        if not self.options.pin:
            return
        wanted = cpus or self._all_cpus
        if wanted == self._server_cpus:
            return
        if not self.server.pin(wanted):
            print("note: cannot pin the server (not on this machine?); pinning the client only",
                  file=sys.stderr)
        self._server_cpus = wanted

    def run(self, cells: list[Job], on_start: Callable[[Job], None],
            on_finish: Callable[[Job, dict[str, Any]], None]) -> RunResults:
        """Run `cells` in order; on Ctrl-C, stop and return what was measured."""
        results = RunResults()
        try:
            for cell in cells:
                on_start(cell)
                try:
                    result = self.run_job(cell)
                except Exception as exc:  # noqa: BLE001 - one broken cell must not end the run
                    result = {"error": f"harness: {type(exc).__name__}: {exc}"}
                on_finish(cell, result)
                results.add(cell, result)
        except KeyboardInterrupt:
            print("interrupted: reporting the cells measured so far", file=sys.stderr)
        finally:
            if self._pool_table:
                for sql in pool_scenario.TEARDOWN_SQL:
                    self.server.psql(sql)
                self._pool_table = False
        return results

    def run_job(self, job: Job) -> dict[str, Any]:
        """Run one job of any kind and return its result."""
        if isinstance(job, PoolCell):
            return self.run_pool_cell(job)
        if isinstance(job, PipelineCell):
            return self.run_pipeline_cell(job)
        if isinstance(job, PoolerCell):
            return self.run_pooler_cell(job)
        if isinstance(job, MemoryProbe):
            return self.run_memory_probe(job)
        return self.run_cell(job)

    def run_pool_cell(self, cell: PoolCell) -> dict[str, Any]:
        """One contender at one level of the pool scenario, in a worker process."""
        o = self.options
        self._pin_server(None)
        try:
            if not self._pool_table:
                for sql in pool_scenario.SETUP_SQL:
                    self.server.psql(sql)
                self._pool_table = True
            pool_scenario.settle(self.server.psql)
        except Exception as exc:  # noqa: BLE001 - a broken setup is this cell's n/a
            return {"error": f"setup failed: {exc}"}
        # The shortcut level runs in the pool scenario's worker code; the
        # sync pool scenario in its own (threads).
        scenario = (sync_pool_scenario.NAME if cell.scenario == sync_pool_scenario.NAME
                    else pool_scenario.NAME)
        spec = {"scenario": scenario, "contender": cell.contender,
                "users": cell.users,
                "pool_size": o.pool_size if cell.pool_size is None else cell.pool_size,
                "connect_per": pool_scenario.DEFAULT_CONNECT_PER,
                "warmup": o.warmup, "duration": o.duration, "params": self.server.params}
        result = pool_scenario.verify(
            run_worker(spec, None, o.warmup + o.duration + CELL_GRACE))
        if "error" in result:
            self.server.terminate_other_backends()
        return result

    def run_pipeline_cell(self, cell: PipelineCell) -> dict[str, Any]:
        """One contender of the pipeline scenario: a worker process, or pgbench here."""
        o = self.options
        variant = pipeline_scenario.VARIANTS[cell.variant]
        client_cpus, server_cpus = _pinning(o, 1)
        self._pin_server(server_cpus)
        try:
            pool_scenario.wait_for_other_sessions(self.server.psql)
            for sql in variant.teardown + variant.setup:
                self.server.psql(sql)
        except Exception as exc:  # noqa: BLE001 - a broken setup is this cell's n/a
            return {"error": f"setup failed: {exc}"}
        timeout = o.warmup + o.duration + CELL_GRACE
        if cell.contender in pipeline_scenario.PGBENCH:
            preexec = (lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None
            result = pipeline_scenario.run_pgbench_cell(
                self.server.params, variant, cell.contender, o.warmup, o.duration, preexec,
                timeout)
        else:
            spec = {"scenario": pipeline_scenario.SCENARIO, "variant": variant.name,
                    "contender": cell.contender, "tasks": pipeline_scenario.TASKS,
                    "warmup": o.warmup, "duration": o.duration, "params": self.server.params}
            result = run_worker(spec, client_cpus, timeout)
        result = pipeline_scenario.verify(result, variant)
        if "error" in result:
            self.server.terminate_other_backends()
        for sql in variant.teardown:
            self.server.psql(sql)
        return result

    def run_pooler_cell(self, cell: PoolerCell) -> dict[str, Any]:
        """One contender of the pooler scenario, through a pgbouncer started for this cell.

        A fresh pgbouncer per cell: no contender finds server connections,
        or statements pgbouncer prepared on them, left by the one before.
        """
        o = self.options
        w = pooler_scenario.workload(cell.variant)
        self._pin_server(None)
        try:
            if self._pgbouncer is None:
                binary, why = pooler_scenario.locate_pgbouncer()
                if binary is None:
                    return {"error": f"no pgbouncer: {why}"}
                self._pgbouncer = binary
            pool_scenario.wait_for_other_sessions(self.server.psql)
            for sql in w.teardown + w.setup:
                self.server.psql(sql)
            expected = self.expected_rows(w, fresh=True)
            bouncer = pooler_scenario.start_pgbouncer(self._pgbouncer, self.server.params)
        except Exception as exc:  # noqa: BLE001 - a broken setup is this cell's n/a
            return {"error": f"setup failed: {exc}"}
        timeout = o.warmup + o.duration + CELL_GRACE
        try:
            params = pooler_scenario.pooled_params(self.server.params, bouncer.port)
            if pooler_scenario.is_reference(cell.contender):
                result = pgbench.run_cell(params, w, pooler_scenario.CONCURRENCY, o.warmup,
                                          o.duration, expected, None, timeout,
                                          mode=pooler_scenario.PGBENCH_MODE)
            else:
                spec = {"scenario": pooler_scenario.SCENARIO, "variant": cell.variant,
                        "contender": cell.contender,
                        "concurrency": pooler_scenario.CONCURRENCY, "warmup": o.warmup,
                        "duration": o.duration, "params": params}
                result = pooler_scenario.verify(run_worker(spec, None, timeout))
            if "error" not in result:
                result = self._verify(w, expected, result)
        finally:
            bouncer.stop()
        if "error" in result:
            self.server.terminate_other_backends()
        for sql in w.teardown:
            self.server.psql(sql)
        return result

    def run_memory_probe(self, probe: MemoryProbe) -> dict[str, Any]:
        """One driver streaming CURSOR_1M once in a fresh worker process."""
        self._pin_server(None)
        spec = {"scenario": memory.NAME, "driver": probe.driver, "params": self.server.params}
        result = memory.verify(run_worker(spec, None, memory.PROBE_TIMEOUT))
        if "error" in result:
            self.server.terminate_other_backends()
        return result

    def run_cell(self, cell: Cell) -> dict[str, Any]:
        w = BY_NAME[cell.workload]
        o = self.options
        client_cpus, server_cpus = _pinning(o, cell.concurrency)
        self._pin_server(server_cpus)
        try:
            for sql in w.teardown + w.setup:
                self.server.psql(sql)
            expected = self.expected_rows(w)
        except Exception as exc:  # noqa: BLE001 - a broken setup is this cell's n/a
            return {"error": f"setup failed: {exc}"}
        timeout = o.warmup + o.duration + CELL_GRACE
        if cell.driver == "pgbench":
            preexec = (lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None
            result = pgbench.run_cell(self.server.params, w, cell.concurrency, o.warmup,
                                      o.duration, expected, preexec, timeout)
        else:
            spec = {"driver": cell.driver, "workload": w.name, "concurrency": cell.concurrency,
                    "warmup": o.warmup, "duration": o.duration, "params": self.server.params}
            result = run_worker(spec, client_cpus, timeout)
        if "error" not in result:
            result = self._verify(w, expected, result)
        if "error" in result:
            self.server.terminate_other_backends()
        for sql in w.teardown:
            self.server.psql(sql)
        return result

    def _verify(self, w: Workload, expected: int, result: dict[str, Any]) -> dict[str, Any]:
        """Turn a result that did not move the promised rows into an error.

        A driver cannot win by returning less: fetched rows must match the
        server's count, and sent rows must have arrived in the table.
        """
        queries, rows = result["queries"], result["rows"]
        if queries == 0:
            return {"error": "no query finished inside the measuring window"}
        if rows != queries * expected:
            return {"error": f"wrong row count: {rows / queries:g} per query, expected {expected}"}
        if w.kind in ("copy", "batch"):
            # Workers report every row they sent, warm-up included, so the
            # table must hold exactly that; pgbench only reports the window.
            sent = result.get("rows_total", rows)
            stored = int(self.server.psql(f"SELECT count(*) FROM {w.table}").strip())
            if stored < sent or ("rows_total" in result and stored != sent):
                return {"error": f"{stored} rows in {w.table}, {sent} reported sent"}
        return result

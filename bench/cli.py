"""Command line: `python -m bench [options]` (see bench/README.md)."""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import (
    drivers,
    memory,
    pipeline_scenario,
    pool_scenario,
    pooler_scenario,
    provenance,
    report,
    sync_pool_scenario,
)
from .contenders import (
    DICT_ROWS,
    DICT_ROWS_SCENARIO,
    DICT_ROWS_WORKLOAD,
    PIPELINE,
    POOL,
    POOL_SHORTCUTS,
    POOLER,
    SYNC_POOL,
)
from .runner import (
    SCENARIOS,
    MemoryProbe,
    Options,
    PipelineCell,
    PoolCell,
    PoolerCell,
    Progress,
    Runner,
    plan,
)
from .server import REPO_ROOT, BenchServer
from .workloads import BY_NAME, CURSOR_BATCH, WORKLOADS

ALL_DRIVERS = [*drivers.MODULES, "pgbench"]
# Throughput workloads first, then the scenarios that are not throughput cells.
ALL_WORKLOADS = [*BY_NAME, *SCENARIOS]
# Per round: three rounds of 1.5 s measured, each after 1 s of warm-up.
DEFAULT_ROUNDS = 3
DEFAULT_DURATION = 1.5
DEFAULT_WARMUP = 1.0
QUICK_DURATION = 1.0
QUICK_WARMUP = 0.3


def _names(known: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or 'empty list'}; choose from {', '.join(known)}")
        return names
    return parse


def _levels(text: str) -> list[int]:
    try:
        levels = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        levels = []
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive integers, e.g. 1,10")
    return levels


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("a positive integer")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark mypgdriver against asyncpg, psycopg, psycopg2 and pgbench.",
    )
    p.add_argument("--drivers", type=_names(ALL_DRIVERS), default=ALL_DRIVERS,
                   help=f"comma-separated (default: {','.join(ALL_DRIVERS)})")
    p.add_argument("--workloads", type=_names(ALL_WORKLOADS), default=ALL_WORKLOADS,
                   help=f"comma-separated (default: {','.join(ALL_WORKLOADS)}); "
                        f"'{DICT_ROWS_SCENARIO}' is each driver's dict rows on "
                        f"{DICT_ROWS_WORKLOAD} (in its cells, a table of its own), "
                        f"{' and '.join(pipeline_scenario.NAMES)} are the pipeline scenario "
                        f"({pipeline_scenario.TASKS} tasks on one connection), "
                        f"'{pool_scenario.NAME}' the in-app pool scenario, "
                        f"'{pool_scenario.SHORTCUTS_NAME}' its level of "
                        f"{pool_scenario.SHORTCUT_USERS} users on a pool of "
                        f"{pool_scenario.SHORTCUT_POOL_SIZE} through the pool's shortcut methods, "
                        f"'{sync_pool_scenario.NAME}' the sync pool scenario (threads, "
                        f"thread-safe pools), "
                        f"{' and '.join(pooler_scenario.NAMES)} the pooler scenario "
                        f"(through pgbouncer in transaction mode), "
                        f"'{memory.NAME}' the cursor memory probe")
    p.add_argument("--skip", type=_names(ALL_WORKLOADS), default=[],
                   help="comma-separated workloads to leave out, e.g. pool,cursor_1m")
    p.add_argument("--concurrency", type=_levels, default=None,
                   help="connections per cell, comma-separated (default: 1,10)")
    p.add_argument("--duration", type=float, default=None,
                   help=f"measured seconds per cell and round (default: {DEFAULT_DURATION:g})")
    p.add_argument("--warmup", type=float, default=None,
                   help=f"warm-up seconds per cell and round, not measured "
                        f"(default: {DEFAULT_WARMUP:g})")
    p.add_argument("--rounds", type=_positive, default=None,
                   help=f"measure each cell in this many rounds, every driver once per round, "
                        f"and combine them (default: {DEFAULT_ROUNDS}; 1 with --quick)")
    p.add_argument("--pool-users", type=_levels, default=list(pool_scenario.DEFAULT_LEVELS),
                   help="pool scenario: concurrent users per level, comma-separated "
                        f"(default: {','.join(map(str, pool_scenario.DEFAULT_LEVELS))})")
    p.add_argument("--pool-size", type=_positive, default=pool_scenario.DEFAULT_POOL_SIZE,
                   help=f"pool scenario: connections per pool "
                        f"(default: {pool_scenario.DEFAULT_POOL_SIZE})")
    p.add_argument("--sync-pool-users", type=_levels,
                   default=list(sync_pool_scenario.DEFAULT_LEVELS),
                   help="sync pool scenario: concurrent users (threads) per level, "
                        "comma-separated (default: "
                        f"{','.join(map(str, sync_pool_scenario.DEFAULT_LEVELS))}; the pool "
                        "size is --pool-size)")
    p.add_argument("--pin", action="store_true",
                   help="at concurrency 1 and in the pipeline scenario, run the client on "
                        "core 0 and the server on core 1")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: {QUICK_DURATION:g} s cells at concurrency 10 only, one "
                        f"round; its ratios are noise, and it leaves latest/ alone")
    p.add_argument("--no-control", dest="aa_control", action="store_false",
                   help="skip the A/A control (asyncpg measured twice)")
    p.add_argument("--output", type=Path, default=REPO_ROOT / "bench" / "results",
                   help="results folder: each run goes in a <timestamp>/ folder, and a full "
                        "run (no --quick, no option changing what is measured) is copied to "
                        "latest/ (default: bench/results)")
    p.add_argument("--list", action="store_true", help="list drivers and workloads, then exit")
    return p


def options_from(args: argparse.Namespace) -> Options:
    """Resolve --quick against explicit values: explicit flags win."""
    quick = args.quick

    def pick(value, normal, fast):
        return value if value is not None else (fast if quick else normal)

    pin = args.pin
    if pin and (os.cpu_count() or 1) < 2:
        print("note: --pin needs two cores; running unpinned", file=sys.stderr)
        pin = False
    chosen = [name for name in args.workloads if name not in args.skip]
    return Options(
        drivers=args.drivers,
        workloads=[name for name in chosen if name in BY_NAME],
        scenarios=[name for name in chosen if name in SCENARIOS],
        pool_users=args.pool_users,
        pool_size=args.pool_size,
        sync_pool_users=args.sync_pool_users,
        concurrency=pick(args.concurrency, [1, 10], [10]),
        duration=pick(args.duration, DEFAULT_DURATION, QUICK_DURATION),
        warmup=pick(args.warmup, DEFAULT_WARMUP, QUICK_WARMUP),
        rounds=pick(args.rounds, DEFAULT_ROUNDS, 1),
        pin=pin,
        aa_control=args.aa_control,
    )


# Options that change what a run measures, by the Options field they set.
# --pin is not one: pinned or not, a run measures the whole suite.
_MEASURING_FLAGS = {"drivers": "--drivers", "workloads": "--workloads/--skip",
                    "scenarios": "--workloads/--skip", "concurrency": "--concurrency",
                    "duration": "--duration", "warmup": "--warmup", "rounds": "--rounds",
                    "pool_users": "--pool-users", "pool_size": "--pool-size",
                    "sync_pool_users": "--sync-pool-users",
                    "aa_control": "--no-control"}


def run_kind(args: argparse.Namespace, options: Options) -> tuple[str, list[str]]:
    """("full", []), ("smoke", ["--quick"]) or ("partial", the options that make it so).

    A full run measures everything with the default settings; only a full
    run may replace latest/, which the docs show.  Options given with their
    default values do not make a run partial.
    """
    if args.quick:
        return "smoke", ["--quick"]
    defaults = options_from(parser().parse_args([]))
    changed = [flag for name, flag in _MEASURING_FLAGS.items()
               if getattr(options, name) != getattr(defaults, name)]
    return ("partial", list(dict.fromkeys(changed))) if changed else ("full", [])


def _list() -> None:
    print("drivers:", ", ".join(ALL_DRIVERS))
    print("workloads:")
    for w in WORKLOADS:
        print(f"  {w.name:<20} {w.description}")
    print(f"  {DICT_ROWS_SCENARIO:<20} dict rows on {DICT_ROWS_WORKLOAD}, run in its cells: "
          f"{', '.join(DICT_ROWS.contenders)}")
    pipeline_contenders = ", ".join(PIPELINE.contenders)
    for variant in pipeline_scenario.VARIANTS.values():
        print(f"  {variant.name:<20} pipeline scenario: {variant.description}; "
              f"{pipeline_contenders}")
    print(f"  {pool_scenario.NAME:<20} in-app pool scenario: web requests of "
          f"{pool_scenario.QUERIES_PER_REQUEST[0]}-{pool_scenario.QUERIES_PER_REQUEST[1]} "
          f"queries, {', '.join(POOL.contenders)}")
    print(f"  {pool_scenario.SHORTCUTS_NAME:<20} pool scenario level: "
          f"{pool_scenario.SHORTCUT_USERS} users, pool of {pool_scenario.SHORTCUT_POOL_SIZE}, "
          f"one pool.fetchrow/fetch/fetchval/execute call per statement (no acquire), "
          f"{', '.join(POOL_SHORTCUTS.contenders)}")
    print(f"  {sync_pool_scenario.NAME:<20} sync pool scenario: the same requests from "
          f"threads through thread-safe pools, {', '.join(SYNC_POOL.contenders)}")
    for variant, workload in pooler_scenario.VARIANTS.items():
        print(f"  {variant:<20} pooler scenario: {workload} at c={pooler_scenario.CONCURRENCY} "
              f"through pgbouncer (transaction mode), {', '.join(POOLER.contenders)}")
    print(f"  {memory.NAME:<20} {memory.CURSOR_1M.description}, once per driver")


def describe_plan(cells: list, options: Options) -> str:
    """One line saying what the run will do."""
    throughput = [c for c in cells
                  if not isinstance(c, (PipelineCell, PoolCell, PoolerCell, MemoryProbe))]
    pipeline = [c for c in cells if isinstance(c, PipelineCell)]
    pool = [c for c in cells
            if isinstance(c, PoolCell) and c.scenario == pool_scenario.NAME]
    shortcuts = [c for c in cells
                 if isinstance(c, PoolCell) and c.scenario == pool_scenario.SHORTCUTS_NAME]
    sync_pool = [c for c in cells
                 if isinstance(c, PoolCell) and c.scenario == sync_pool_scenario.NAME]
    pooler = [c for c in cells if isinstance(c, PoolerCell)]
    probes = [c for c in cells if isinstance(c, MemoryProbe)]
    parts = []
    dict_rows = [c for c in throughput if c.label in DICT_ROWS.contenders]
    throughput = [c for c in throughput if c.label not in DICT_ROWS.contenders]
    if throughput:
        parts.append(f"{len(throughput)} cells: {len(options.workloads)} workloads x concurrency "
                     f"{','.join(map(str, options.concurrency))} x "
                     f"{len(set(c.label for c in throughput))} drivers"
                     + (f" x {options.rounds} rounds" if options.rounds > 1 else ""))
    if dict_rows:
        parts.append(f"dict rows: {len(dict_rows)} {DICT_ROWS_WORKLOAD} cells "
                     f"({len(set(c.label for c in dict_rows))} contenders)")
    if pipeline:
        parts.append(f"pipeline scenario: {len(pipeline)} cells "
                     f"({len(set(c.variant for c in pipeline))} variants x "
                     f"{len(set(c.label for c in pipeline))} contenders)")
    if pool:
        parts.append(f"pool scenario: {len(pool)} cells ({','.join(map(str, options.pool_users))} "
                     f"users x {len(set(c.label for c in pool))} contenders)")
    if shortcuts:
        parts.append(f"pool shortcuts: {len(shortcuts)} cells "
                     f"({pool_scenario.SHORTCUT_USERS} users, pool of "
                     f"{pool_scenario.SHORTCUT_POOL_SIZE} x "
                     f"{len(set(c.label for c in shortcuts))} contenders)")
    if sync_pool:
        parts.append(f"sync pool scenario: {len(sync_pool)} cells "
                     f"({','.join(map(str, options.sync_pool_users))} threads x "
                     f"{len(set(c.label for c in sync_pool))} contenders)")
    if pooler:
        parts.append(f"pooler scenario: {len(pooler)} cells "
                     f"({len(set(c.variant for c in pooler))} variants x "
                     f"{len(set(c.label for c in pooler))} contenders, c="
                     f"{pooler_scenario.CONCURRENCY} through pgbouncer)")
    if probes:
        parts.append(f"memory probe: {len(probes)} drivers")
    return "; ".join(parts) or "nothing to run"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite as `argv` asks; 0 when every cell ran (some may be n/a), else 1 or 2."""
    args = parser().parse_args(argv)
    if args.list:
        _list()
        return 0
    options = options_from(args)
    cells = plan(options)
    pgbouncer = None
    pooler_skipped = None
    if any(isinstance(c, PoolerCell) for c in cells):
        # Found before the server starts: without one the cells are left out.
        pgbouncer, found = pooler_scenario.locate_pgbouncer()
        if pgbouncer is None:
            pooler_skipped = f"no pgbouncer: {found}"
            print(f"note: pooler scenario skipped: {pooler_skipped}", file=sys.stderr)
            cells = [c for c in cells if not isinstance(c, PoolerCell)]
    kind, because = run_kind(args, options)
    # The code measured is the code at the start: a checkout edited during
    # the run is not what ran.
    checkout = provenance.checkout_state(REPO_ROOT)
    started = datetime.datetime.now().astimezone()
    print(describe_plan(cells, options), file=sys.stderr)
    print(describe_run(kind, because, checkout), file=sys.stderr)
    if not cells:
        return 2

    print("starting PostgreSQL ...", file=sys.stderr, flush=True)
    server = BenchServer.start()
    print(f"using {server.description}", file=sys.stderr)
    progress = Progress(cells, options)
    try:
        results = Runner(server, options).run(cells, progress.start, progress.finish)
    finally:
        server.stop()
    complete = len(results) == len(cells)

    full: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        **checkout,
        "run": kind,
        **({"note": report.SMOKE_NOTE} if kind == "smoke" else {}),
        **({"partial_because": because} if kind == "partial" else {}),
        "machine": provenance.machine_info(server.description, results.cells,
                                           [*results.pool, *results.pool_shortcuts,
                                            *results.sync_pool],
                                           results.memory, results.pipeline, results.pooler),
        "settings": {"duration": options.duration, "warmup": options.warmup,
                     "rounds": options.rounds,
                     "concurrency": options.concurrency, "pin": options.pin, "quick": args.quick},
        "results": results.cells,
    }
    if not complete:
        full["interrupted"] = True
    if any(isinstance(c, PipelineCell) for c in cells):
        full["pipeline"] = {
            "settings": pipeline_scenario.settings(
                [v for v in pipeline_scenario.NAMES if v in options.scenarios],
                options.warmup, options.duration, options.rounds, options.pin),
            "results": results.pipeline,
        }
    if any(isinstance(c, PoolCell) and c.scenario == pool_scenario.NAME for c in cells):
        full["pool"] = {
            "settings": pool_scenario.settings(options.pool_users, options.pool_size,
                                               pool_scenario.DEFAULT_CONNECT_PER,
                                               options.warmup, options.duration,
                                               options.rounds),
            "results": results.pool,
        }
    if any(isinstance(c, PoolCell) and c.scenario == pool_scenario.SHORTCUTS_NAME
           for c in cells):
        full["pool_shortcuts"] = {
            "settings": {**pool_scenario.settings([pool_scenario.SHORTCUT_USERS],
                                                  pool_scenario.SHORTCUT_POOL_SIZE,
                                                  pool_scenario.DEFAULT_CONNECT_PER,
                                                  options.warmup, options.duration,
                                                  options.rounds),
                         "shortcuts": True},
            "results": results.pool_shortcuts,
        }
    if any(isinstance(c, PoolCell) and c.scenario == sync_pool_scenario.NAME for c in cells):
        full["sync_pool"] = {
            "settings": sync_pool_scenario.settings(options.sync_pool_users, options.pool_size,
                                                    options.warmup, options.duration,
                                                    options.rounds),
            "results": results.sync_pool,
        }
    pooler_variants = [v for v in pooler_scenario.NAMES if v in options.scenarios]
    if pooler_variants:
        full["pooler"] = {
            "settings": pooler_scenario.settings(pooler_variants, options.warmup,
                                                 options.duration, options.rounds, pgbouncer),
            "results": results.pooler,
            **({"skipped": pooler_skipped} if pooler_skipped else {}),
        }
    if any(isinstance(c, MemoryProbe) for c in cells):
        full["memory"] = {"rows": memory.ROWS, "target_mb": memory.TARGET_MB,
                          "batch": CURSOR_BATCH, "results": results.memory}
    outdir = args.output / started.strftime("%Y%m%d-%H%M%S")
    latest = args.output / "latest"
    replace_latest = kind == "full" and complete
    notes = report.save(full, outdir, latest if replace_latest else None)
    print(report.markdown(full))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(describe_saved(outdir, latest, kind, because, complete), file=sys.stderr)
    return 0 if complete else 1


def describe_run(kind: str, because: list[str], checkout: dict[str, Any]) -> str:
    """One line saying what kind of run this is and which commit it measures."""
    commit = checkout.get("commit")
    if commit is None:
        source = "code not in a git checkout (no commit recorded)"
    else:
        source = f"commit {commit[:12]}" + (
            " with uncommitted changes (dirty)" if checkout.get("dirty") else "")
    if kind == "smoke":
        return f"{report.SMOKE_NOTE} (--quick); {source}"
    if kind == "partial":
        return f"partial run ({', '.join(because)}); {source}"
    return f"full run; {source}"


def describe_saved(outdir: Path, latest: Path, kind: str, because: list[str],
                   complete: bool) -> str:
    """Where the results went, and why latest/ was left alone when it was."""
    if kind == "full" and complete:
        return f"saved to {outdir} (and {latest})"
    why = ("the run was interrupted" if not complete
           else "a smoke run (--quick)" if kind == "smoke"
           else f"a partial run ({', '.join(because)})")
    return f"saved to {outdir}; {latest} left alone: {why}, only a full run replaces it"

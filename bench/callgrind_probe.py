"""Client instructions per query of mypgdriver builds, counted by callgrind.

Wall-clock and CPU-time cells at concurrency 1 move with where the scheduler
puts client and server on a 2-core machine; instruction counts do not. This
runs a benchmark workload's statement through mypgdriver exactly as
`bench/drivers/asyncpg_driver.py` does (the same `Session.run`, uvloop as the
worker uses), in a client process under `valgrind --tool=callgrind`, N and
2N times; the difference of the two totals divided by N is the client's
instructions per query, without interpreter start-up, imports, connecting and
preparing. The server (one throwaway `bench.server.BenchServer` for the whole
run) is not measured.

Each `--tree` is a checkout with its extensions built in place; the client
imports that checkout's `mypgdriver` and `bench` package, so two commits can
be compared against the same server::

    python -m bench.callgrind_probe --tree ../wt-old --tree . \\
        --workloads batch,copyfrom,oneplusone,generate_series --repeat 2

Run from the repository root (the server comes from `tools/pgcluster.py`).
Per-function differences between two trees: `--keep DIR` keeps the callgrind
files, and `--annotate-diff DIR` prints the functions whose instructions per
query moved most between the first and second tree.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Queries run (and not counted) before the measured ones in both runs, so that
# the statement is prepared, codecs resolved and buffers grown.
WARMUP_QUERIES = 10
DEFAULT_WORKLOADS = "batch,copyfrom,oneplusone,generate_series"


# --- the measured client ----------------------------------------------------

#: How the client calls the workload's statement (--call): as the benchmark
#: does (a PreparedStatement's fetch), through conn.fetch (the statement
#: cache), or as the pipeline scenario does (100 tasks sharing the connection,
#: each calling conn.fetch; `queries` is then the loops per task, and the
#: result is per loop of all 100), through mypgdriver.sync's conn.fetch
#: (no event loop), or psycopg2's cursor (execute + fetchall, as its users
#: write it; libpq's instructions are the client's too) for comparison;
#: "dbapi" is mypgdriver.dbapi's cursor called the same way (autocommit),
#: "psycopg" psycopg 3's blocking cursor.  A COPY workload (copyfrom) runs
#: as the bench drivers of those clients run it (see run_copy_client);
#: "dbapi_text" is the DB-API's text-format COPY, for comparison.
CALLS = ("stmt", "conn", "pipeline", "sync", "dbapi", "dbapi_text", "psycopg2", "psycopg")
#: --row-factory: what conn.fetch makes its rows as (conn, pipeline and sync
#: calls): "record" passes nothing (the default, and all an older tree knows),
#: the others pass that factory of mypgdriver.rows.
ROW_FACTORIES = ("record", "tuple_row", "dict_row", "scalar_row", "namedtuple_row")
PIPELINE_TASKS = 100


def run_client(root: str, workload_name: str, queries: int, params: dict[str, Any],
               call: str = "stmt", row_factory: str = "record") -> None:
    """Run `queries` iterations of a workload through `root`'s mypgdriver."""
    # The tree's own packages must win over whatever sits beside this file.
    sys.path[0:1] = [root]
    import uvloop

    import mypgdriver
    from bench.drivers.mypgdriver_driver import DRIVER
    from bench.workloads import BY_NAME

    if not Path(mypgdriver.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {mypgdriver.__file__}, not the tree {root}")
    workload = BY_NAME[workload_name]
    kwargs: dict[str, Any] = {}
    if row_factory != "record":
        import mypgdriver.rows
        kwargs["row_factory"] = getattr(mypgdriver.rows, row_factory)
    if workload.kind == "copy" and call in ("sync", "dbapi", "dbapi_text", "psycopg"):
        run_copy_client(workload, queries, params, call)
        return
    if call in ("sync", "dbapi", "psycopg2", "psycopg"):
        run_sync_client(workload, queries, params, call, kwargs)
        return

    async def main() -> None:
        if call == "stmt":
            session = await DRIVER.open(params, workload)
            run, close = session.run, session.close
        else:
            conn = await mypgdriver.connect(**params)
            close = conn.close

            async def run() -> None:
                await conn.fetch(workload.sql, *workload.args, **kwargs)
        tasks = PIPELINE_TASKS if call == "pipeline" else 1

        async def loop(n: int) -> None:
            for _ in range(n):
                await run()
        await asyncio.gather(*(loop(WARMUP_QUERIES) for _ in range(tasks)))
        await asyncio.gather(*(loop(queries) for _ in range(tasks)))
        await close()

    uvloop.run(main())


def run_copy_client(workload: Any, queries: int, params: dict[str, Any], call: str) -> None:
    """A COPY workload through a blocking client, as its bench driver runs it.

    "sync": mypgdriver.sync's copy_records_to_table; "dbapi": the DB-API's
    binary COPY (set_types + write_row); "dbapi_text": its text COPY
    (write_row without types); "psycopg": psycopg 3's binary COPY.
    """
    from bench.drivers import mypgdriver_dbapi_driver

    if call == "sync":
        from bench.drivers.mypgdriver_sync_driver import DRIVER as sync_driver
        session = sync_driver.open(params, workload)
        run, close = session.run, session.close
    elif call == "dbapi":
        session = mypgdriver_dbapi_driver.DRIVER.open(params, workload)
        run, close = session.run, session.close
    elif call == "dbapi_text":
        import mypgdriver.dbapi

        conn = mypgdriver.dbapi.connect(autocommit=True, **params)
        run, close = mypgdriver_dbapi_driver.text_copy(conn, workload), conn.close
    else:
        from bench.drivers.psycopg_driver import DRIVER as psycopg_driver
        session = psycopg_driver.open(params, workload)
        run, close = session.run, session.close
    for _ in range(WARMUP_QUERIES):
        run()
    for _ in range(queries):
        run()
    close()


def run_sync_client(workload: Any, queries: int, params: dict[str, Any], call: str,
                    kwargs: dict[str, Any]) -> None:
    """The blocking clients: mypgdriver.sync's conn.fetch, or a DB-API cursor.

    The DB-API cursors (mypgdriver.dbapi, psycopg2, psycopg 3) run
    ``cur.execute(sql, params); cur.fetchall()`` in autocommit mode, the
    workload's ``$n`` written as ``%s``.
    """
    sql = re.sub(r"\$\d+", "%s", workload.sql)
    if call == "sync":
        import mypgdriver.sync

        conn = mypgdriver.sync.connect(**params)

        def run() -> None:
            conn.fetch(workload.sql, *workload.args, **kwargs)
    elif call in ("dbapi", "psycopg"):
        if call == "dbapi":
            import mypgdriver.dbapi

            conn = mypgdriver.dbapi.connect(autocommit=True, **params, **kwargs)
        else:
            import psycopg

            conn = psycopg.connect(host=params["host"], port=params["port"],
                                   user=params["user"], dbname=params["database"],
                                   password=params.get("password"), autocommit=True)
        dcur = conn.cursor()

        def run() -> None:
            dcur.execute(sql, workload.args)
            dcur.fetchall()
    else:
        import psycopg2

        conn = psycopg2.connect(host=params["host"], port=params["port"],
                                user=params["user"], dbname=params["database"],
                                password=params.get("password"))
        conn.autocommit = True
        cur = conn.cursor()

        def run() -> None:
            cur.execute(sql, workload.args)
            cur.fetchall()
    for _ in range(WARMUP_QUERIES):
        run()
    for _ in range(queries):
        run()
    conn.close()


# --- the driver of the runs -------------------------------------------------

def callgrind_total(path: Path) -> int:
    """The total instruction count (Ir) a callgrind output file reports."""
    text = path.read_text()
    match = re.search(r"^(?:totals|summary):\s+(\d+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"no totals line in {path}")
    return int(match.group(1))


def measure(tree: Path, workload: str, queries: int, params: dict[str, Any], out: Path,
            call: str = "stmt", row_factory: str = "record") -> int:
    """Instructions of one client process running `queries` iterations."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, str(Path(__file__).resolve()), "--client",
        "--root", str(tree), "--workload", workload, "--queries", str(queries),
        "--params", json.dumps(params), "--call", call, "--row-factory", row_factory,
    ]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{tree} {workload} x{queries} failed:\n{done.stderr[-3000:]}")
    return callgrind_total(out)


def per_query(trees: list[Path], workloads: list[str], queries: int, repeat: int,
              keep: Path | None, call: str = "stmt",
              row_factories: list[str] | None = None) -> dict[str, dict[int, list[float]]]:
    """Instructions per query for each workload and tree (by position), one value per repeat."""
    from bench.server import BenchServer
    from bench.workloads import BY_NAME

    factories = row_factories or ["record"] * len(trees)
    server = BenchServer.start()
    scratch = Path(tempfile.mkdtemp(prefix="callgrind_probe_"))
    results: dict[str, dict[int, list[float]]] = {
        w: {i: [] for i in range(len(trees))} for w in workloads}
    try:
        for name in workloads:
            w = BY_NAME[name]
            for round_no in range(repeat):
                for index, tree in enumerate(trees):
                    totals = []
                    for n in (queries, 2 * queries):
                        # A fresh table per run, as the benchmark has per cell.
                        for sql in w.teardown + w.setup:
                            server.psql(sql)
                        out = (keep or scratch) / f"{name}.tree{index}.r{round_no}.n{n}.out"
                        totals.append(measure(tree, name, n, server.params, out, call,
                                              factories[index]))
                    value = (totals[1] - totals[0]) / queries
                    results[name][index].append(value)
                    print(f"{name:16} tree{index} round {round_no}: {value:,.0f} instructions/query",
                          file=sys.stderr, flush=True)
            for sql in w.teardown:
                server.psql(sql)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def print_table(trees: list[Path], results: dict[str, dict[int, list[float]]],
                factories: list[str] | None = None) -> None:
    """A Markdown table: median per tree, and the last tree against the first."""
    header = ["workload"] + [f"tree{i}" for i in range(len(trees))] + ["delta"]
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    for name, by_tree in results.items():
        medians = [statistics.median(by_tree[i]) for i in range(len(trees))]
        delta = (medians[-1] - medians[0]) / medians[0] * 100
        cells = [f"{m:,.0f}" for m in medians] + [f"{delta:+.1f}%"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for i, tree in enumerate(trees):
        rows = f" ({factories[i]})" if factories and factories[i] != "record" else ""
        print(f"\ntree{i}: {tree}{rows}", end="")
    print()


# --- per-function differences -----------------------------------------------

_FUNCTION_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*)$")


def _short_name(name: str, root: str) -> str:
    """`file:function` with the tree's folder and the shared object left out.

    Both trees' files then have the same name (`mypgdriver/protocol/...`);
    callgrind names some by absolute path and some relative to the cwd.
    """
    name = name.split(" [", 1)[0].strip()
    return name.removeprefix(root.rstrip("/") + "/")


def function_costs(path: Path) -> dict[str, int]:
    """Self instructions per function (file:function), from callgrind_annotate's summary."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout
    # The client's command line names its tree: --root DIR.
    root = re.search(r"--root (\S+)", text)
    # The summary is the block after the "Ir  file:function" header.
    summary = text.split("file:function", 1)[1].split("\n", 2)[2]
    costs: dict[str, int] = {}
    for line in summary.splitlines():
        match = _FUNCTION_LINE.match(line)
        if match is None:
            continue
        name = _short_name(match.group(2), root.group(1) if root else "")
        costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def annotate_diff(folder: Path, workload: str, queries: int, top: int) -> None:
    """Print the functions whose self cost per query changed most from tree0 to tree1."""
    def per_query_costs(index: int) -> dict[str, float]:
        small = function_costs(folder / f"{workload}.tree{index}.r0.n{queries}.out")
        large = function_costs(folder / f"{workload}.tree{index}.r0.n{2 * queries}.out")
        return {k: (large.get(k, 0) - small.get(k, 0)) / queries for k in set(small) | set(large)}

    old, new = per_query_costs(0), per_query_costs(1)
    rows = [(new.get(k, 0) - old.get(k, 0), old.get(k, 0), new.get(k, 0), k) for k in set(old) | set(new)]
    rows.sort(key=lambda r: -abs(r[0]))
    print(f"{workload}: self instructions per query, tree0 -> tree1 (sum {sum(old.values()):,.0f} -> "
          f"{sum(new.values()):,.0f})")
    for delta, before, after, name in rows[:top]:
        print(f"{delta:+12,.0f} {before:12,.0f} {after:12,.0f}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="a checkout with built extensions (repeat; first is the baseline)")
    parser.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    parser.add_argument("--queries", type=int, default=100, help="N: runs of N and 2N are differenced")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per tree (the median is shown)")
    parser.add_argument("--keep", type=Path, help="keep the callgrind files in this folder")
    parser.add_argument("--annotate-diff", type=Path, metavar="DIR",
                        help="compare per function the files --keep left in DIR")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--call", choices=CALLS, default="stmt",
                        help="stmt: a PreparedStatement's fetch, as the benchmark; conn: "
                             "conn.fetch (statement cache); pipeline: 100 tasks on one "
                             "connection calling conn.fetch (per loop of all 100)")
    parser.add_argument("--row-factory", default="record",
                        help="conn/pipeline/sync calls: record (default) or a factory of "
                             "mypgdriver.rows (tuple_row, dict_row, ...); a comma-separated "
                             "list gives one per --tree, in order (the same tree may be "
                             "given twice to compare two factories)")
    # The measured client process (started by this script under valgrind).
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.client:
        run_client(args.root, args.workload, args.queries, json.loads(args.params), args.call,
                   args.row_factory)
        return 0
    workloads = args.workloads.split(",")
    if args.annotate_diff:
        for name in workloads:
            annotate_diff(args.annotate_diff, name, args.queries, args.top)
        return 0
    if not args.tree:
        parser.error("give at least one --tree")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    trees = [t.resolve() for t in args.tree]
    factories = args.row_factory.split(",")
    if len(factories) == 1:
        factories *= len(trees)
    if len(factories) != len(trees) or not set(factories) <= set(ROW_FACTORIES):
        parser.error(f"--row-factory: one of {', '.join(ROW_FACTORIES)}, or one per --tree")
    results = per_query(trees, workloads, args.queries, args.repeat, args.keep, args.call,
                        factories)
    print_table(trees, results, factories)
    return 0


if __name__ == "__main__":
    sys.exit(main())

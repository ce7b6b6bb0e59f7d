"""Client instructions per pool checkout, counted by callgrind.

What one use of a pool costs the client, for both pools: ``acquire()``,
``fetchval('SELECT 1')`` and release (``sync``: ``with pool.acquire()``;
``async``: ``async with pool.acquire()``), and the shortcut
``pool.fetchval('SELECT 1')`` (``sync-shortcut``, ``async-shortcut``).  As
in ``bench.callgrind_probe`` (whose helpers this reuses), a client process
runs under ``valgrind --tool=callgrind`` N and 2N times; the difference of
the two totals divided by N is the instructions per checkout, without
start-up, imports and connecting::

    python -m bench.pool_callgrind --tree ../wt-base --tree . --queries 200

The pool has one connection (min_size=max_size=1), so every checkout
resets it on release as a real one does.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Imported in main(), not here: the client process runs this file as a script,
# with its tree, not the package, on sys.path.
WARMUP_QUERIES = 10

#: The measured calls (--calls).
CALLS = ("sync", "sync-shortcut", "async", "async-shortcut")
QUERY = "SELECT 1"


def run_client(root: str, call: str, queries: int, params: dict[str, Any]) -> None:
    """Run `queries` checkouts of kind `call` through `root`'s mypgdriver."""
    sys.path[0:1] = [root]
    import mypgdriver

    if not Path(mypgdriver.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {mypgdriver.__file__}, not the tree {root}")
    if call.startswith("sync"):
        import mypgdriver.sync

        pool = mypgdriver.sync.create_pool(min_size=1, max_size=1, **params)
        if call == "sync":
            def run() -> None:
                with pool.acquire() as con:
                    con.fetchval(QUERY)
        else:
            def run() -> None:
                pool.fetchval(QUERY)
        for _ in range(WARMUP_QUERIES):
            run()
        for _ in range(queries):
            run()
        pool.close()
        return

    import uvloop

    async def main() -> None:
        apool = await mypgdriver.create_pool(min_size=1, max_size=1, **params)
        if call == "async":
            async def arun() -> None:
                async with apool.acquire() as con:
                    await con.fetchval(QUERY)
        else:
            async def arun() -> None:
                await apool.fetchval(QUERY)
        for _ in range(WARMUP_QUERIES):
            await arun()
        for _ in range(queries):
            await arun()
        await apool.close()

    uvloop.run(main())


def measure(tree: Path, call: str, queries: int, params: dict[str, Any], out: Path) -> int:
    """Instructions of one client process running `queries` checkouts."""
    from bench.callgrind_probe import callgrind_total

    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, str(Path(__file__).resolve()), "--client", "--root", str(tree),
        "--call", call, "--queries", str(queries), "--params", json.dumps(params),
    ]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{tree} {call} x{queries} failed:\n{done.stderr[-3000:]}")
    return callgrind_total(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="a checkout with built extensions (repeat; first is the baseline)")
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--queries", type=int, default=200,
                        help="N: runs of N and 2N are differenced")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--call", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        run_client(args.root, args.call, args.queries, json.loads(args.params))
        return 0
    if not args.tree:
        parser.error("give at least one --tree")
    calls = args.calls.split(",")
    if not set(calls) <= set(CALLS):
        parser.error(f"--calls: a comma-separated list of {', '.join(CALLS)}")
    from bench.server import BenchServer

    trees = [t.resolve() for t in args.tree]
    results: dict[str, list[list[float]]] = {c: [[] for _ in trees] for c in calls}
    server = BenchServer.start()
    scratch = Path(tempfile.mkdtemp(prefix="pool_callgrind_"))
    try:
        for call in calls:
            for round_no in range(args.repeat):
                for index, tree in enumerate(trees):
                    totals = [measure(tree, call, n, server.params,
                                      scratch / f"{call}.{index}.{round_no}.{n}.out")
                              for n in (args.queries, 2 * args.queries)]
                    value = (totals[1] - totals[0]) / args.queries
                    results[call][index].append(value)
                    print(f"{call:15} tree{index} round {round_no}: {value:,.0f} "
                          f"instructions/checkout", file=sys.stderr, flush=True)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    print("| call | " + " | ".join(f"tree{i}" for i in range(len(trees))) + " | delta |")
    print("| --- |" + " ---: |" * (len(trees) + 1))
    for call, by_tree in results.items():
        medians = [statistics.median(values) for values in by_tree]
        delta = (medians[-1] - medians[0]) / medians[0] * 100
        print(f"| {call} | " + " | ".join(f"{m:,.0f}" for m in medians) + f" | {delta:+.2f}% |")
    for i, tree in enumerate(trees):
        print(f"tree{i}: {tree}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

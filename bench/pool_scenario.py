"""In-app pool scenario: simulated web requests through a connection pool.

Each request takes a connection, runs 4 to 10 small queries (point lookups,
a short range, a count, an update of one row) and gives the connection back.
A ramp of concurrent users (10, 50, 100 by default) runs on one event loop
(uvloop when installed), and for every level each contender runs in turn:

* ``mypgdriver-pool``: mypgdriver's pool;
* ``mypgdriver-connect``: no pool, mypgdriver opening a connection per query
  (``--connect-per request`` opens one per request instead);
* ``asyncpg-pool``: asyncpg's pool;
* ``psycopg-pool``: psycopg_pool's AsyncConnectionPool (autocommit, binary
  results, so that each query is a statement of its own as with the others).

Every contender replays the same pre-generated requests (same queries, same
arguments, same order per user).  Reported per level: requests per second,
p50/p95/p99 request latency (acquire to release) and client CPU time per
request, which is steadier than throughput on a shared machine.

Usage::

    python -m bench.pool_scenario                       # starts its own server
    python -m bench.pool_scenario --dsn postgresql://u@h/db
    python -m bench.pool_scenario --levels 10,50 --duration 3 --json out.json

``$MYPGDRIVER_BENCH_DSN`` is used when ``--dsn`` is not given.  Only
``mypgdriver_bench_pool_items`` is created (and dropped) on that server.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.util
import json
import math
import os
import platform
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Dict, List, Optional, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tools.pgcluster import ExternalCluster, PgCluster  # noqa: E402

TABLE = "mypgdriver_bench_pool_items"
TABLE_ROWS = 10_000
REQUEST_PLANS = 2_000  # distinct requests, replayed in a cycle
QUERIES_PER_REQUEST = (4, 10)
DEFAULT_LEVELS = (10, 50, 100)
DEFAULT_CONTENDERS = ("mypgdriver-pool", "mypgdriver-connect", "asyncpg-pool", "psycopg-pool")

# One entry per kind of query: (weight, SQL with $n, how to draw its arguments).
# Small, index-backed statements: the pool, not the server, should be the
# thing measured.
QUERY_KINDS: Dict[str, Tuple[int, str]] = {
    "lookup": (40, f"SELECT id, name, price FROM {TABLE} WHERE id = $1"),
    "range": (25, f"SELECT id, name, price FROM {TABLE} WHERE id >= $1 ORDER BY id LIMIT 10"),
    "count": (20, f"SELECT count(*) FROM {TABLE} WHERE id BETWEEN $1 AND $2"),
    "update": (15, f"UPDATE {TABLE} SET hits = hits + 1 WHERE id = $1"),
}

Query = Tuple[str, Tuple[Any, ...]]  # (kind, arguments)
Plan = Tuple[Query, ...]  # one request


def make_plans(seed: int = 7) -> List[Plan]:
    """The requests every contender replays: 4-10 queries each, fixed by `seed`."""
    rng = random.Random(seed)
    kinds = list(QUERY_KINDS)
    weights = [QUERY_KINDS[k][0] for k in kinds]
    plans = []
    for _ in range(REQUEST_PLANS):
        queries = []
        for kind in rng.choices(kinds, weights, k=rng.randint(*QUERIES_PER_REQUEST)):
            first = rng.randint(1, TABLE_ROWS)
            args: Tuple[Any, ...] = (first, first + 50) if kind == "count" else (first,)
            queries.append((kind, args))
        plans.append(tuple(queries))
    return plans


def pyformat(sql: str) -> str:
    """$n placeholders to psycopg's %s (each parameter is used once, in order)."""
    out = sql
    for n in range(9, 0, -1):
        out = out.replace(f"${n}", "%s")
    return out


# --- contenders -------------------------------------------------------------------
#
# Each contender is an object with `request(plan)` running one request and
# `close()`; `open_contender` builds one for a level.


class MypgdriverPool:
    name = "mypgdriver-pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size

    async def open(self) -> None:
        from mypgdriver.pool import create_pool

        self.pool = await create_pool(min_size=self.size, max_size=self.size, **self.params)

    async def request(self, plan: Plan) -> None:
        async with self.pool.acquire() as con:
            await run_asyncpg_style(con, plan)

    async def close(self) -> None:
        await self.pool.close()


class AsyncpgPool(MypgdriverPool):
    name = "asyncpg-pool"

    async def open(self) -> None:
        import asyncpg

        self.pool = await asyncpg.create_pool(min_size=self.size, max_size=self.size,
                                              **self.params)


class MypgdriverConnect:
    name = "mypgdriver-connect"

    def __init__(self, params: Dict[str, Any], per: str) -> None:
        self.params, self.per = params, per

    async def open(self) -> None:
        import mypgdriver

        self.connect = mypgdriver.connect

    async def request(self, plan: Plan) -> None:
        if self.per == "request":
            con = await self.connect(**self.params)
            try:
                await run_asyncpg_style(con, plan)
            finally:
                await con.close()
            return
        for query in plan:
            con = await self.connect(**self.params)
            try:
                await run_asyncpg_style(con, (query,))
            finally:
                await con.close()

    async def close(self) -> None:
        pass


class PsycopgPool:
    name = "psycopg-pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size
        self.sql = {kind: pyformat(sql) for kind, (_, sql) in QUERY_KINDS.items()}

    async def open(self) -> None:
        from psycopg_pool import AsyncConnectionPool

        p = self.params
        conninfo = f"host={p['host']} port={p['port']} user={p['user']} dbname={p['database']}"
        if p.get("password"):
            conninfo += f" password={p['password']}"
        self.pool = AsyncConnectionPool(conninfo, min_size=self.size, max_size=self.size,
                                        kwargs={"autocommit": True}, open=False)
        await self.pool.open(wait=True)

    async def request(self, plan: Plan) -> None:
        sql = self.sql
        async with self.pool.connection() as conn:
            for kind, args in plan:
                cur = await conn.execute(sql[kind], args, binary=True)
                if kind == "lookup":
                    await cur.fetchone()
                elif kind == "range":
                    await cur.fetchall()
                elif kind == "count":
                    (await cur.fetchone())[0]

    async def close(self) -> None:
        await self.pool.close()


async def run_asyncpg_style(con: Any, plan: Plan) -> None:
    """One request's queries with asyncpg's API (mypgdriver and asyncpg alike)."""
    for kind, args in plan:
        sql = QUERY_KINDS[kind][1]
        if kind == "lookup":
            await con.fetchrow(sql, *args)
        elif kind == "range":
            await con.fetch(sql, *args)
        elif kind == "count":
            await con.fetchval(sql, *args)
        else:
            await con.execute(sql, *args)


def open_contender(name: str, params: Dict[str, Any], pool_size: int, per: str) -> Any:
    if name == "mypgdriver-pool":
        return MypgdriverPool(params, pool_size)
    if name == "asyncpg-pool":
        return AsyncpgPool(params, pool_size)
    if name == "psycopg-pool":
        return PsycopgPool(params, pool_size)
    if name == "mypgdriver-connect":
        return MypgdriverConnect(params, per)
    raise ValueError(f"unknown contender {name!r}")


# --- one cell: a contender at a number of users ------------------------------------


@dataclasses.dataclass
class CellResult:
    contender: str
    users: int
    requests: int
    queries: int
    errors: int
    elapsed: float
    cpu_seconds: float
    p50_ms: Optional[float]
    p95_ms: Optional[float]
    p99_ms: Optional[float]
    first_error: Optional[str] = None

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.elapsed if self.elapsed else 0.0

    @property
    def cpu_per_request_us(self) -> Optional[float]:
        return 1e6 * self.cpu_seconds / self.requests if self.requests else None


def percentile(sorted_values: Sequence[float], fraction: float) -> Optional[float]:
    """Nearest-rank percentile of sorted values, or None if there are none."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def cpu_time() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_cell(contender: Any, users: int, plans: Sequence[Plan],
                   warmup: float, duration: float) -> CellResult:
    """Run `users` concurrent users for warmup + duration; measure the latter."""
    await contender.open()
    latencies: List[float] = []
    queries = 0
    errors = 0
    first_error: Optional[str] = None
    measuring = False
    stopping = False

    async def user(index: int) -> None:
        nonlocal queries, errors, first_error
        position = (index * 7919) % len(plans)  # users start at different requests
        perf = time.perf_counter
        while not stopping:
            plan = plans[position]
            position = (position + 1) % len(plans)
            start = perf()
            try:
                await contender.request(plan)
            except Exception as e:  # noqa: BLE001 - counted and shown, the run goes on
                if measuring:
                    errors += 1
                    if first_error is None:
                        first_error = f"{type(e).__name__}: {e}"
                continue
            # Requests finishing inside the window count, wherever they
            # started: a contender whose requests outlast the window
            # (connect per query at 100 users) still gets a rate.
            if measuring:
                latencies.append(perf() - start)
                queries += len(plan)

    tasks = [asyncio.ensure_future(user(i)) for i in range(users)]
    try:
        await asyncio.sleep(warmup)
        measuring = True
        cpu_start, wall_start = cpu_time(), time.perf_counter()
        await asyncio.sleep(duration)
        measuring = False
        elapsed, cpu_seconds = time.perf_counter() - wall_start, cpu_time() - cpu_start
    finally:
        stopping = True
        await asyncio.gather(*tasks, return_exceptions=True)
        await contender.close()
    ordered = sorted(latencies)

    def ms(fraction: float) -> Optional[float]:
        value = percentile(ordered, fraction)
        return None if value is None else value * 1e3

    return CellResult(contender=contender.name, users=users, requests=len(ordered),
                      queries=queries, errors=errors, elapsed=elapsed,
                      cpu_seconds=cpu_seconds, p50_ms=ms(0.50), p95_ms=ms(0.95),
                      p99_ms=ms(0.99), first_error=first_error)


def run_loop(coro: Awaitable[Any], use_uvloop: bool) -> Any:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(coro)
    return asyncio.run(coro)


# --- the server ----------------------------------------------------------------------


class Server:
    """The server to measure against: given by a DSN, or a throwaway one of ours."""

    def __init__(self, dsn: Optional[str]) -> None:
        if dsn:
            self.cluster: Any = ExternalCluster(dsn)
            self.params: Dict[str, Any] = {
                "host": self.cluster.host, "port": self.cluster.port,
                "user": self.cluster.user, "database": self.cluster.database}
            if self.cluster.password is not None:
                self.params["password"] = self.cluster.password
        else:
            # Keep background work out of random cells: autovacuum (the
            # UPDATEs; settle() vacuums between cells instead) and checkpoints.
            self.cluster = PgCluster(settings={
                "autovacuum": False, "jit": False, "max_connections": 400,
                "max_wal_size": "8GB", "checkpoint_timeout": "1h"})
            self.cluster.init()
            self.cluster.start()
            self.params = {"host": self.cluster.host, "port": self.cluster.port,
                           "user": "postgres", "database": "postgres"}
        self.version = self.psql("SHOW server_version").strip()

    def psql(self, sql: str) -> str:
        return self.cluster.psql(sql, user=self.params["user"], dbname=self.params["database"])

    def create_table(self) -> None:
        self.psql(
            f"DROP TABLE IF EXISTS {TABLE};\n"
            f"CREATE TABLE {TABLE} (id int PRIMARY KEY, name text NOT NULL, "
            f"price float8 NOT NULL, hits int NOT NULL DEFAULT 0);\n"
            f"INSERT INTO {TABLE} (id, name, price) SELECT g, 'item ' || g, g * 0.25 "
            f"FROM generate_series(1, {TABLE_ROWS + 60}) g;\n"
            f"VACUUM ANALYZE {TABLE};")

    def settle(self, timeout: float = 10.0) -> None:
        """Between cells: wait until the last cell's sessions are gone, clean the table.

        Backends of closed connections take a moment to exit, and after the
        connect-per-query cells there can be a hundred of them, which would
        otherwise slow the start of the next cell.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            others = self.psql(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND pid <> pg_backend_pid() AND datname = current_database()").strip()
            if others == "0":
                break
            time.sleep(0.05)
        self.psql(f"VACUUM {TABLE}")

    def close(self) -> None:
        try:
            self.psql(f"DROP TABLE IF EXISTS {TABLE}")
        finally:
            if isinstance(self.cluster, PgCluster):
                self.cluster.destroy()


# --- reporting -----------------------------------------------------------------------


def _num(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(results: Sequence[CellResult], header: str) -> str:
    """One table per level: contenders side by side."""
    lines = [header, ""]
    for users in dict.fromkeys(r.users for r in results):
        lines += [f"### {users} concurrent users", "",
                  "| contender | requests/s | p50 ms | p95 ms | p99 ms | CPU µs/request | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for r in (r for r in results if r.users == users):
            lines.append(
                f"| {r.contender} | {r.requests_per_s:,.0f} | {_num(r.p50_ms)} | "
                f"{_num(r.p95_ms)} | {_num(r.p99_ms)} | {_num(r.cpu_per_request_us, 0)} | "
                f"{r.errors} |")
        lines.append("")
        for r in results:
            if r.users == users and r.first_error:
                lines.append(f"* {r.contender}: first error: {r.first_error}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def versions() -> Dict[str, str]:
    found = {"python": platform.python_version()}
    for module in ("mypgdriver", "asyncpg", "psycopg", "psycopg_pool", "uvloop"):
        try:
            found[module] = __import__(module).__version__
        except Exception:  # noqa: BLE001 - absent or broken: say so in the report
            found[module] = "not available"
    return found


# --- command line ----------------------------------------------------------------------


def _list(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.pool_scenario",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", default=os.environ.get("MYPGDRIVER_BENCH_DSN"),
                   help="server to use (default: $MYPGDRIVER_BENCH_DSN, else start one)")
    p.add_argument("--levels", type=lambda t: [int(n) for n in _list(t)],
                   default=list(DEFAULT_LEVELS), help="concurrent users per level (10,50,100)")
    p.add_argument("--contenders", type=_list, default=list(DEFAULT_CONTENDERS),
                   help=f"comma-separated subset of {','.join(DEFAULT_CONTENDERS)}")
    p.add_argument("--pool-size", type=int, default=10, help="connections per pool (10)")
    p.add_argument("--connect-per", choices=("query", "request"), default="query",
                   help="mypgdriver-connect opens a connection per query or per request")
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds per cell")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first")
    p.add_argument("--rounds", type=int, default=1,
                   help="run the whole ramp this many times, rotating the order of the "
                        "contenders; requests/s over all rounds, median of each percentile")
    p.add_argument("--no-uvloop", action="store_true", help="use asyncio's own loop")
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    p.add_argument("--markdown", type=Path, help="also write the tables here")
    return p


def combine_rounds(cells: Sequence[CellResult]) -> CellResult:
    """One result from several rounds of a cell.

    Throughput and CPU time are pooled over all rounds (total requests over
    total time); each latency percentile is the median of the rounds' values,
    so one round disturbed by something else on the machine does not decide it.
    """
    if len(cells) == 1:
        return cells[0]

    def median(values: List[Optional[float]]) -> Optional[float]:
        present = sorted(v for v in values if v is not None)
        return present[(len(present) - 1) // 2] if present else None

    first_errors = [c.first_error for c in cells if c.first_error]
    return CellResult(
        contender=cells[0].contender, users=cells[0].users,
        requests=sum(c.requests for c in cells), queries=sum(c.queries for c in cells),
        errors=sum(c.errors for c in cells), elapsed=sum(c.elapsed for c in cells),
        cpu_seconds=sum(c.cpu_seconds for c in cells),
        p50_ms=median([c.p50_ms for c in cells]), p95_ms=median([c.p95_ms for c in cells]),
        p99_ms=median([c.p99_ms for c in cells]),
        first_error=first_errors[0] if first_errors else None)


def run_one(name: str, users: int, params: Dict[str, Any], plans: Sequence[Plan],
            args: argparse.Namespace) -> CellResult:
    """One cell on a fresh event loop; a contender that fails is a result too."""
    contender = open_contender(name, params, args.pool_size, args.connect_per)
    try:
        return run_loop(run_cell(contender, users, plans, args.warmup, args.duration),
                        not args.no_uvloop)
    except Exception as e:  # noqa: BLE001
        return CellResult(name, users, 0, 0, 0, 0.0, 0.0, None, None, None,
                          first_error=f"{type(e).__name__}: {e}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    unknown = [c for c in args.contenders if c not in DEFAULT_CONTENDERS]
    if unknown:
        parser().error(f"unknown contenders: {', '.join(unknown)}")
    plans = make_plans()
    server = Server(args.dsn)
    results: List[CellResult] = []
    loop_name = "asyncio" if args.no_uvloop else "uvloop"
    rounds: Dict[Tuple[int, str], List[CellResult]] = {}
    try:
        server.create_table()
        for round_no in range(args.rounds):
            shift = round_no % len(args.contenders)
            order = args.contenders[shift:] + args.contenders[:shift]
            for users in args.levels:
                for name in order:
                    server.settle()
                    result = run_one(name, users, server.params, plans, args)
                    rounds.setdefault((users, name), []).append(result)
                    print(f"{users:>4} users  {name:<20} {result.requests_per_s:>9,.0f} req/s  "
                          f"p50 {_num(result.p50_ms)} ms  p99 {_num(result.p99_ms)} ms"
                          + (f"  errors {result.errors}" if result.errors else "")
                          + (f"  ({result.first_error})" if result.first_error else ""),
                          file=sys.stderr, flush=True)
    finally:
        server.close()
    for users in dict.fromkeys(args.levels):
        for name in args.contenders:
            if (users, name) in rounds:
                results.append(combine_rounds(rounds[(users, name)]))
    if importlib.util.find_spec("uvloop") is None:
        loop_name = "asyncio"
    info = versions()
    header = (f"## Pool scenario: {QUERIES_PER_REQUEST[0]}-{QUERIES_PER_REQUEST[1]} queries "
              f"per request, pool size {args.pool_size}, {args.duration:g} s per cell"
              + (f", {args.rounds} rounds (requests/s and CPU over all rounds, percentiles "
                 f"the median round's)" if args.rounds > 1 else "") + "\n\n"
              f"PostgreSQL {server.version}; {loop_name}; "
              + ", ".join(f"{k} {v}" for k, v in info.items())
              + f"; mypgdriver-connect opens a connection per {args.connect_per}.")
    text = markdown(results, header)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps({
            "settings": {"levels": args.levels, "pool_size": args.pool_size,
                         "duration": args.duration, "warmup": args.warmup,
                         "event_loop": loop_name, "connect_per": args.connect_per,
                         "server_version": server.version, **info},
            "results": [dict(dataclasses.asdict(r), requests_per_s=r.requests_per_s,
                             cpu_per_request_us=r.cpu_per_request_us) for r in results],
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

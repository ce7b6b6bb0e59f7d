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
  results, so that each query is a statement of its own as with the others);
* ``psqlpy-pool``: psqlpy's ConnectionPool (``max_db_pool_size`` of the pool
  size; psqlpy has no minimum size and opens connections on demand, so the
  warm-up fills it), ``async with pool.acquire() as conn:`` and
  ``fetch_row`` / ``fetch`` / ``fetch_val`` / ``execute``, statements
  prepared and cached per connection (its default), rows read as tuples.

One more level, ``pool_shortcuts`` (200 users, a pool of 4), runs the same
requests through the pool's shortcut methods instead: each query is one
``pool.fetchrow`` / ``fetch`` / ``fetchval`` / ``execute`` call, which takes a
connection for that one statement (no ``acquire()`` in the request):

* ``mypgdriver-shortcuts`` and ``asyncpg-shortcuts``; psycopg_pool has no
  shortcut methods (only ``connection()`` / ``getconn()``), so it has no
  contender at this level.

Every contender replays the same pre-generated requests (same queries, same
arguments, same order per user).  Reported per level: requests per second,
p50/p95/p99 request latency (acquire to release) and client CPU time per
request, which is steadier than throughput on a shared machine.

`python -m bench` runs this scenario as part of the suite (one worker
process per contender and level, see `bench/runner.py`).  It also runs on
its own, all cells in this one process::

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
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple

from . import provenance, report
from .contenders import POOL, POOL_SHORTCUTS
from .stats import percentiles

NAME = "pool"
TABLE = "mypgdriver_bench_pool_items"
TABLE_ROWS = 10_000
REQUEST_PLANS = 2_000  # distinct requests, replayed in a cycle
QUERIES_PER_REQUEST = (4, 10)
DEFAULT_LEVELS = (10, 50, 100)
DEFAULT_POOL_SIZE = 10
DEFAULT_CONNECT_PER = "query"  # what mypgdriver-connect opens a connection for
# The contenders' names, baselines and A/A labels: contenders.POOL and
# contenders.POOL_SHORTCUTS.

# The shortcut level: many users on a small pool, one pool shortcut call
# per statement.
SHORTCUTS_NAME = "pool_shortcuts"
SHORTCUT_USERS = 200
SHORTCUT_POOL_SIZE = 4
ALL_CONTENDERS = POOL.contenders + POOL_SHORTCUTS.contenders

# One entry per kind of query: (weight, SQL with $n, how to draw its arguments).
# Small, index-backed statements: the pool, not the server, should be the
# thing measured.
QUERY_KINDS: Dict[str, Tuple[int, str]] = {
    "lookup": (40, f"SELECT id, name, price FROM {TABLE} WHERE id = $1"),
    "range": (25, f"SELECT id, name, price FROM {TABLE} WHERE id >= $1 ORDER BY id LIMIT 10"),
    "count": (20, f"SELECT count(*) FROM {TABLE} WHERE id BETWEEN $1 AND $2"),
    "update": (15, f"UPDATE {TABLE} SET hits = hits + 1 WHERE id = $1"),
}

# The table every request reads; 60 rows past TABLE_ROWS so that a range or
# count starting at the last id still finds its rows.
SETUP_SQL: Tuple[str, ...] = (
    f"DROP TABLE IF EXISTS {TABLE}",
    f"CREATE TABLE {TABLE} (id int PRIMARY KEY, name text NOT NULL, "
    f"price float8 NOT NULL, hits int NOT NULL DEFAULT 0)",
    f"INSERT INTO {TABLE} (id, name, price) SELECT g, 'item ' || g, g * 0.25 "
    f"FROM generate_series(1, {TABLE_ROWS + 60}) g",
    f"VACUUM ANALYZE {TABLE}",
)
TEARDOWN_SQL: Tuple[str, ...] = (f"DROP TABLE IF EXISTS {TABLE}",)

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


def contenders_for(drivers: Sequence[str], aa_control: bool) -> List[Tuple[str, str]]:
    """(contender, label) pairs to run at each level, in order, for the suite's `--drivers`.

    asyncpg's pool runs first (the baseline) and, as in the throughput cells,
    once more last as the A/A control.
    """
    return POOL.run_order(drivers, aa_control)


def shortcut_contenders_for(drivers: Sequence[str], aa_control: bool) -> List[Tuple[str, str]]:
    """(contender, label) pairs of the shortcut level, asyncpg's first and last (A/A)."""
    return POOL_SHORTCUTS.run_order(drivers, aa_control)


# --- contenders -------------------------------------------------------------------
#
# Each contender is an object with `open()`, `request(plan)` running one
# request, `close()` and `version()`; `open_contender` builds one for a level.


class MypgdriverPool:
    name = "mypgdriver-pool"
    package = "mypgdriver"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size

    def version(self) -> str:
        return str(getattr(__import__(self.package), "__version__", "unknown"))

    async def open(self) -> None:
        import mypgdriver

        self.pool = await mypgdriver.create_pool(min_size=self.size, max_size=self.size,
                                                 **self.params)

    async def request(self, plan: Plan) -> None:
        async with self.pool.acquire() as con:
            await run_asyncpg_style(con, plan)

    async def close(self) -> None:
        await self.pool.close()


class AsyncpgPool(MypgdriverPool):
    name = "asyncpg-pool"
    package = "asyncpg"

    async def open(self) -> None:
        import asyncpg

        self.pool = await asyncpg.create_pool(min_size=self.size, max_size=self.size,
                                              **self.params)


class MypgdriverShortcuts(MypgdriverPool):
    """mypgdriver's pool, each statement one shortcut call (`pool.fetchrow(...)`)."""

    name = "mypgdriver-shortcuts"

    async def request(self, plan: Plan) -> None:
        await run_asyncpg_style(self.pool, plan)


class AsyncpgShortcuts(AsyncpgPool):
    """asyncpg's pool, each statement one shortcut call (`pool.fetchrow(...)`)."""

    name = "asyncpg-shortcuts"

    async def request(self, plan: Plan) -> None:
        await run_asyncpg_style(self.pool, plan)


class MypgdriverConnect:
    name = "mypgdriver-connect"
    package = "mypgdriver"

    def __init__(self, params: Dict[str, Any], per: str) -> None:
        self.params, self.per = params, per

    def version(self) -> str:
        return str(getattr(__import__(self.package), "__version__", "unknown"))

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
    package = "psycopg_pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size
        self.sql = {kind: pyformat(sql) for kind, (_, sql) in QUERY_KINDS.items()}

    def version(self) -> str:
        import psycopg_pool

        return str(psycopg_pool.__version__)

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


class PsqlpyPool:
    name = "psqlpy-pool"
    package = "psqlpy"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size

    def version(self) -> str:
        from importlib.metadata import version

        return version(self.package)

    async def open(self) -> None:
        import psqlpy

        from .drivers.psqlpy_driver import connect_keywords

        self.pool = psqlpy.ConnectionPool(**connect_keywords(self.params),
                                          max_db_pool_size=self.size)

    async def request(self, plan: Plan) -> None:
        async with self.pool.acquire() as con:
            for kind, args in plan:
                sql, params = QUERY_KINDS[kind][1], list(args)
                if kind == "lookup":
                    (await con.fetch_row(sql, params)).result(as_tuple=True)
                elif kind == "range":
                    (await con.fetch(sql, params)).result(as_tuple=True)
                elif kind == "count":
                    await con.fetch_val(sql, params)
                else:
                    await con.execute(sql, params)

    async def close(self) -> None:
        self.pool.close()


async def run_asyncpg_style(con: Any, plan: Plan) -> None:
    """One request's queries with asyncpg's API (mypgdriver and asyncpg alike).

    `con` is a connection, or a pool for the shortcut contenders (a pool has
    the same four methods, each taking a connection for one statement).
    """
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
    """The contender called `name`, not yet opened."""
    if name == "mypgdriver-pool":
        return MypgdriverPool(params, pool_size)
    if name == "asyncpg-pool":
        return AsyncpgPool(params, pool_size)
    if name == "psycopg-pool":
        return PsycopgPool(params, pool_size)
    if name == "psqlpy-pool":
        return PsqlpyPool(params, pool_size)
    if name == "mypgdriver-connect":
        return MypgdriverConnect(params, per)
    if name == "mypgdriver-shortcuts":
        return MypgdriverShortcuts(params, pool_size)
    if name == "asyncpg-shortcuts":
        return AsyncpgShortcuts(params, pool_size)
    raise ValueError(f"unknown contender {name!r}")


# --- one cell: a contender at a number of users ------------------------------------


@dataclasses.dataclass
class CellResult:
    """What one contender did at one level, inside the measuring window."""

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


def cpu_time() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# The window stays open past `duration` until every user has finished one
# request inside it (or failed one), by at most this many seconds: at 100
# users, connecting per query makes one request last longer than a --quick
# window, which would otherwise end with no request at all.
MAX_EXTENSION = 30.0
EXTENSION_STEP = 0.01


async def run_cell(contender: Any, users: int, plans: Sequence[Plan],
                   warmup: float, duration: float) -> CellResult:
    """Run `users` concurrent users for warmup + duration; measure the latter.

    The measured window can run longer than `duration`, see MAX_EXTENSION;
    rates use its real length.
    """
    await contender.open()
    latencies: List[float] = []
    queries = 0
    errors = 0
    first_error: Optional[str] = None
    measuring = False
    stopping = False
    finished_one = [False] * users  # per user: a request ended inside the window

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
                    finished_one[index] = True
                    if first_error is None:
                        first_error = f"{type(e).__name__}: {e}"
                continue
            # Requests finishing inside the window count, wherever they
            # started: a contender whose requests outlast the window
            # (connect per query at 100 users) still gets a rate.
            if measuring:
                latencies.append(perf() - start)
                queries += len(plan)
                finished_one[index] = True

    tasks = [asyncio.ensure_future(user(i)) for i in range(users)]
    try:
        await asyncio.sleep(warmup)
        measuring = True
        cpu_start, wall_start = cpu_time(), time.perf_counter()
        await asyncio.sleep(duration)
        deadline = time.monotonic() + MAX_EXTENSION
        while not all(finished_one) and time.monotonic() < deadline:
            await asyncio.sleep(EXTENSION_STEP)
        measuring = False
        elapsed, cpu_seconds = time.perf_counter() - wall_start, cpu_time() - cpu_start
    finally:
        stopping = True
        await asyncio.gather(*tasks, return_exceptions=True)
        await contender.close()
    p50, p95, p99 = (None if value is None else value * 1e3
                     for value in percentiles(latencies, (50, 95, 99)))
    return CellResult(contender=contender.name, users=users, requests=len(latencies),
                      queries=queries, errors=errors, elapsed=elapsed,
                      cpu_seconds=cpu_seconds, p50_ms=p50, p95_ms=p95, p99_ms=p99,
                      first_error=first_error)


def event_loop_name(use_uvloop: bool = True) -> str:
    """The loop `run_loop` uses: uvloop with its version when installed and wanted."""
    if use_uvloop and importlib.util.find_spec("uvloop") is not None:
        import uvloop

        return f"uvloop {uvloop.__version__}"
    return "asyncio"


def run_loop(coro: Awaitable[Any], use_uvloop: bool) -> Any:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(coro)
    return asyncio.run(coro)


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


# --- the suite's side: one cell per worker process, checked, as a dict -----------------


def result_dict(cell: CellResult) -> Dict[str, Any]:
    """A cell's numbers under the names the suite's report and JSON use."""
    out: Dict[str, Any] = {
        "requests": cell.requests,
        "queries": cell.queries,
        "errors": cell.errors,
        "elapsed": cell.elapsed,
        "cpu_seconds": cell.cpu_seconds,
        "requests_per_s": cell.requests_per_s,
        "queries_per_s": cell.queries / cell.elapsed if cell.elapsed else 0.0,
        "latency_p50_ms": cell.p50_ms,
        "latency_p95_ms": cell.p95_ms,
        "latency_p99_ms": cell.p99_ms,
        "cpu_per_request_us": cell.cpu_per_request_us,
    }
    if cell.first_error:
        out["first_error"] = cell.first_error
    return out


def run_spec(spec: Dict[str, Any], result: Dict[str, Any]) -> None:
    """Run the pool cell `spec` describes (in a `bench.worker` process), filling `result`.

    spec: contender, users, pool_size, connect_per, warmup, duration, params.
    """
    contender = open_contender(spec["contender"], spec["params"], spec["pool_size"],
                               spec.get("connect_per", DEFAULT_CONNECT_PER))
    result["driver_version"] = contender.version()
    result["event_loop"] = event_loop_name()
    cell = run_loop(run_cell(contender, spec["users"], make_plans(), spec["warmup"],
                             spec["duration"]), use_uvloop=True)
    result.update(result_dict(cell))


def verify(result: Dict[str, Any]) -> Dict[str, Any]:
    """A cell in which no request finished is an error; failed requests are counted."""
    if "error" in result or result["requests"] > 0:
        return result
    why = result.get("first_error")
    kept = ("users", "contender", "driver_version", "event_loop")
    return {**{k: result[k] for k in kept if k in result},
            "error": "no request finished inside the measuring window"
                     + (f" ({why})" if why else "")}


def settle(psql: Callable[[str], str], timeout: float = 10.0) -> None:
    """Between cells: wait until the last cell's sessions are gone, clean the table.

    Backends of closed connections take a moment to exit, and after the
    connect-per-query cells there can be a hundred of them, which would
    otherwise slow the start of the next cell.  The UPDATEs leave dead rows
    that autovacuum (off on the benchmark server) would otherwise clean in
    the middle of some later cell.
    """
    wait_for_other_sessions(psql, timeout)
    psql(f"VACUUM {TABLE}")


def wait_for_other_sessions(psql: Callable[[str], str], timeout: float = 10.0) -> None:
    """Wait (by at most `timeout` s) until the benchmark user's other sessions have left."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        others = psql(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid() AND usename = current_user "
            "AND datname = current_database()").strip()
        if others == "0":
            break
        time.sleep(0.05)


# --- command line (the scenario on its own) ---------------------------------------------


VERSIONED_MODULES = ("mypgdriver", "asyncpg", "psycopg", "psycopg_pool", "psqlpy", "uvloop")


def versions() -> Dict[str, str]:
    """module -> version of what the standalone run used ("not available" if missing)."""
    from importlib.metadata import version

    found = {}
    for module in VERSIONED_MODULES:
        try:
            found[module] = str(getattr(__import__(module), "__version__", None)
                                or version(module))  # psqlpy has no __version__
        except Exception:  # noqa: BLE001 - absent or broken: say so in the report
            found[module] = "not available"
    return found


def _list(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.pool_scenario",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", default=None,
                   help="server to use (default: $MYPGDRIVER_BENCH_DSN, else start one)")
    p.add_argument("--levels", type=lambda t: [int(n) for n in _list(t)],
                   default=list(DEFAULT_LEVELS), help="concurrent users per level (10,50,100)")
    p.add_argument("--contenders", type=_list, default=list(POOL.contenders),
                   help=f"comma-separated subset of {','.join(ALL_CONTENDERS)} "
                        f"(default: {','.join(POOL.contenders)})")
    p.add_argument("--pool-size", type=int, default=DEFAULT_POOL_SIZE,
                   help=f"connections per pool ({DEFAULT_POOL_SIZE})")
    p.add_argument("--connect-per", choices=("query", "request"), default=DEFAULT_CONNECT_PER,
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


def settings(levels: Sequence[int], pool_size: int, connect_per: str, warmup: float,
             duration: float, rounds: int = 1) -> Dict[str, Any]:
    """The scenario's settings as the report shows them."""
    return {"levels": list(levels), "pool_size": pool_size, "connect_per": connect_per,
            "queries_per_request": list(QUERIES_PER_REQUEST), "warmup": warmup,
            "duration": duration, "rounds": rounds}


def main(argv: Optional[Sequence[str]] = None) -> int:
    # Not at the top: a worker process running one cell needs no server.
    from .server import REPO_ROOT, BenchServer

    args = parser().parse_args(argv)
    checkout = provenance.checkout_state(REPO_ROOT)
    unknown = [c for c in args.contenders if c not in ALL_CONTENDERS]
    if unknown:
        parser().error(f"unknown contenders: {', '.join(unknown)}")
    plans = make_plans()
    server = BenchServer.start(args.dsn)
    rounds: Dict[Tuple[int, str], List[CellResult]] = {}
    try:
        for sql in SETUP_SQL:
            server.psql(sql)
        for round_no in range(args.rounds):
            shift = round_no % len(args.contenders)
            order = args.contenders[shift:] + args.contenders[:shift]
            for users in args.levels:
                for name in order:
                    settle(server.psql)
                    result = run_one(name, users, server.params, plans, args)
                    rounds.setdefault((users, name), []).append(result)
                    print(f"{users:>4} users  {name:<20} {result.requests_per_s:>9,.0f} req/s  "
                          f"p50 {report.ms(result.p50_ms)} ms  p99 {report.ms(result.p99_ms)} ms"
                          + (f"  errors {result.errors}" if result.errors else "")
                          + (f"  ({result.first_error})" if result.first_error else ""),
                          file=sys.stderr, flush=True)
        for sql in TEARDOWN_SQL:
            server.psql(sql)
    finally:
        server.stop()
    results = []
    for users in dict.fromkeys(args.levels):
        for name in args.contenders:
            if (users, name) in rounds:
                cell = combine_rounds(rounds[(users, name)])
                results.append(verify({"users": users, "contender": name, **result_dict(cell)}))
    scenario = {
        **checkout,
        "settings": {**settings(args.levels, args.pool_size, args.connect_per, args.warmup,
                                args.duration, args.rounds),
                     "event_loop": event_loop_name(not args.no_uvloop),
                     "server": server.description, **versions()},
        "results": results,
    }
    info = scenario["settings"]
    header = [
        "# Pool scenario",
        "",
        *report.run_header(scenario),
        f"- {server.description}; {info['event_loop']}; "
        + ", ".join(f"{module} {info[module]}" for module in VERSIONED_MODULES),
        f"- {report.pool_settings_text(info)}",
        "",
    ]
    text = "\n".join(header + report.pool_markdown(scenario)) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(scenario, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

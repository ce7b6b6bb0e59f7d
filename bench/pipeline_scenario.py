"""The pipeline scenario: 100 tasks sharing one connection.

mypgdriver pipelines concurrent calls made on one connection: the queries of
many tasks are written at once and their results come back in order, each
query ending with its own Sync.  This scenario measures what that is worth
against what the other drivers offer for the same application shape, 100
tasks each looping on one small query:

* ``mypgdriver-1conn``: one mypgdriver connection shared by the 100 tasks,
  ``conn.fetchval(sql)`` / ``conn.fetch(sql, a, b)`` (statement cache);
* ``asyncpg-pool10`` / ``asyncpg-pool1``: asyncpg cannot share a connection
  ("another operation is in progress"), so its best is a pool of 10 (or 1):
  ``async with pool.acquire() as con: await con.fetchval(...)``;
* ``psycopg-1conn``: one psycopg 3 AsyncConnection shared by the 100 tasks,
  each with its own cursor (``execute(prepare=True)``, binary): psycopg's
  connection lock serialises them, one round trip at a time;
* ``psycopg-pipeline``: psycopg's pipeline mode where it applies: one task
  sends batches of 100 statements inside ``async with conn.pipeline()`` and
  reads the 100 results (psycopg's tasks cannot share a pipeline: in one
  long-lived pipeline every statement lands in one open implicit
  transaction, and a pipeline block per task does not complete);
* ``mypgdriver-sync-pipeline``: mypgdriver.sync's pipeline mode, one thread:
  batches of 100 statements inside ``with conn.pipeline() as p:``
  (``p.fetchval`` / ``p.fetch``: statement cache, one Sync per block),
  then the 100 results read (``result()``);
* ``psycopg-sync-pipeline``: the same with psycopg 3's sync Connection
  (``with conn.pipeline():``, a cursor per statement, ``prepare=True``);
* ``pgbench-pipeline`` / ``pgbench-pipeline-extended``: pgbench's pipelined
  ceiling, a script of ``\\startpipeline``, 100 statements, ``\\endpipeline``
  on one connection, ``-M prepared`` (the server work of the drivers'
  prepared statements) and ``-M extended`` (a Parse per statement); one
  Sync per 100 statements, so all 100 run in one implicit transaction;
* ``pgbench-pipeline-sync``: the same-shape ceiling, the ``-M prepared``
  pipeline with a Sync after every statement (``\\syncpipeline``, pgbench
  17+; the last statement's Sync is ``\\endpipeline``'s), so each statement
  is its own implicit transaction, as mypgdriver sends them;
* ``pgbench-1conn``: pgbench ``-M prepared``, one statement per
  transaction on one connection: the round-trip floor.

Two variants: ``pipeline_oneplusone`` (``SELECT 1+1``) and
``pipeline_lookup5`` (five rows by primary key from a 10,000-row table).
Every result is checked (2; the five expected ids in order): a wrong one
ends the cell as n/a.  pgbench cannot check rows inside a pipeline
(``\\gset`` is refused there), so before its cell the runner runs a
checking script once (`check_script`) and pgbench's exit status covers
errors during the cell.
"""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .contenders import PIPELINE
from .stats import cell_result

SCENARIO = "pipeline"  # the worker's `scenario` for a Python contender's cell
TASKS = 100  # concurrent tasks of the Python contenders
BATCH = 100  # statements per pipeline: psycopg's batches, pgbench's script
TABLE = "mypgdriver_bench_pipeline_items"
TABLE_ROWS = 10_000
LOOKUP_ROWS = 5
CASES = 1_000  # distinct lookups, replayed in a cycle

# The contenders' names, baseline and A/A label: contenders.PIPELINE.

# Server connections each contender uses, for the report.
CONNECTIONS: Dict[str, int] = {
    "mypgdriver-1conn": 1, "asyncpg-pool10": 10, "asyncpg-pool1": 1, "psycopg-1conn": 1,
    "psycopg-pipeline": 1, "mypgdriver-sync-pipeline": 1, "psycopg-sync-pipeline": 1,
    "pgbench-pipeline": 1, "pgbench-pipeline-sync": 1,
    "pgbench-pipeline-extended": 1, "pgbench-1conn": 1,
}


class PgbenchShape(NamedTuple):
    """What a pgbench contender's transaction is."""

    mode: str  # -M: prepared or extended
    statements: int  # per transaction: one, or a pipeline of BATCH
    sync_each: bool = False  # a Sync after every statement of the pipeline (pgbench 17+)


PGBENCH: Dict[str, PgbenchShape] = {
    "pgbench-pipeline": PgbenchShape("prepared", BATCH),
    "pgbench-pipeline-sync": PgbenchShape("prepared", BATCH, sync_each=True),
    "pgbench-pipeline-extended": PgbenchShape("extended", BATCH),
    "pgbench-1conn": PgbenchShape("prepared", 1),
}


@dataclass(frozen=True)
class Variant:
    """One query the tasks loop on: its SQL ($n), rows per query, table."""

    name: str
    description: str
    sql: str
    rows: int
    setup: Tuple[str, ...] = ()
    teardown: Tuple[str, ...] = ()

    @property
    def lookup(self) -> bool:
        """Whether the query takes a range of ids (else it is SELECT 1+1)."""
        return "$1" in self.sql

    @property
    def pyformat_sql(self) -> str:
        return self.sql.replace("$1", "%s").replace("$2", "%s")


ONEPLUSONE = Variant(
    name="pipeline_oneplusone",
    description=f"{TASKS} tasks on one connection, each looping on SELECT 1+1",
    sql="SELECT 1+1",
    rows=1,
)
LOOKUP5 = Variant(
    name="pipeline_lookup5",
    description=f"{TASKS} tasks on one connection, each looping on a 5-row primary-key lookup",
    sql=f"SELECT id, name FROM {TABLE} WHERE id BETWEEN $1 AND $2 ORDER BY id",
    rows=LOOKUP_ROWS,
    setup=(
        f"CREATE TABLE {TABLE} (id int PRIMARY KEY, name text NOT NULL)",
        f"INSERT INTO {TABLE} (id, name) SELECT g, 'item ' || g "
        f"FROM generate_series(1, {TABLE_ROWS}) g",
        f"VACUUM ANALYZE {TABLE}",
    ),
    teardown=(f"DROP TABLE IF EXISTS {TABLE}",),
)
VARIANTS: Dict[str, Variant] = {v.name: v for v in (ONEPLUSONE, LOOKUP5)}
NAMES = tuple(VARIANTS)

# A query's arguments and the answer it must give: 2 for SELECT 1+1, the
# ids of the five rows, in order, for the lookup.
Case = Tuple[Tuple[Any, ...], Any]


def make_cases(variant: Variant, seed: int = 11) -> List[Case]:
    """The queries every contender replays, fixed by `seed`."""
    if not variant.lookup:
        return [((), 2)]
    rng = random.Random(seed)
    cases = []
    for _ in range(CASES):
        first = rng.randint(1, TABLE_ROWS - LOOKUP_ROWS + 1)
        last = first + LOOKUP_ROWS - 1
        cases.append(((first, last), tuple(range(first, last + 1))))
    return cases


def contenders_for(drivers: Sequence[str], aa_control: bool) -> List[Tuple[str, str]]:
    """(contender, label) pairs in run order for the suite's `--drivers`.

    asyncpg's pool of 10 runs first (the baseline) and once more last as the
    A/A control, as in the throughput cells.
    """
    return PIPELINE.run_order(drivers, aa_control)


class WrongResult(Exception):
    """A query answered something other than what the case expects."""


def wrong(variant: Variant, args: Tuple[Any, ...], got: Any, expected: Any) -> WrongResult:
    what = f"{variant.sql} with {args}" if args else variant.sql
    return WrongResult(f"wrong result: {what} gave {got!r}, expected {expected!r}")


# --- the measuring loop ------------------------------------------------------------------


class Window:
    """The measuring window: queries finishing inside it are counted, with latency."""

    def __init__(self, workers: int = 0) -> None:
        self.measuring = False
        self.stopping = False
        self.latencies: List[float] = []
        self.finished_one = [False] * workers  # per worker: a query ended inside the window

    def expect(self, workers: int) -> None:
        """How many workers must each finish a query in the window before it closes."""
        self.finished_one = [False] * workers

    def count(self, worker: int, started: float, finished: float) -> None:
        if self.measuring:
            self.latencies.append(finished - started)
            self.finished_one[worker] = True


MAX_EXTENSION = 30.0
EXTENSION_STEP = 0.01

Worker = Callable[[int], Awaitable[None]]


async def measure(workers: Sequence[Worker], window: Window, warmup: float,
                  duration: float) -> Tuple[float, float]:
    """Run `workers` for warmup + duration; returns (elapsed, CPU seconds) of the window.

    The window stays open past `duration` until every worker has finished a
    query in it, by at most MAX_EXTENSION. A worker that raises (a wrong
    result, a driver error) ends the cell with that error.
    """
    tasks = [asyncio.ensure_future(w(i)) for i, w in enumerate(workers)]

    async def wait(seconds: float) -> None:
        done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()

    try:
        await wait(warmup)
        window.measuring = True
        cpu_start, wall_start = cpu_time(), time.perf_counter()
        await wait(duration)
        deadline = time.monotonic() + MAX_EXTENSION
        while not all(window.finished_one) and time.monotonic() < deadline:
            await wait(EXTENSION_STEP)
        window.measuring = False
        elapsed, cpu_seconds = time.perf_counter() - wall_start, cpu_time() - cpu_start
        window.stopping = True
        await asyncio.gather(*tasks)
    except BaseException:
        window.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return elapsed, cpu_seconds


def cpu_time() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


Call = Callable[[Tuple[Any, ...]], Awaitable[Any]]


def task_workers(call_for: Callable[[int], Call], variant: Variant, cases: List[Case],
                 window: Window, tasks: int) -> List[Worker]:
    """`tasks` workers, each looping on `call_for(task)(args)` and checking the answer.

    `call` returns what the case expects: the value of SELECT 1+1, the ids
    of the lookup's rows.
    """
    perf = time.perf_counter
    n = len(cases)

    async def worker(index: int) -> None:
        call = call_for(index)
        position = (index * 7919) % n  # tasks start at different lookups
        while not window.stopping:
            args, expected = cases[position]
            position = (position + 1) % n
            started = perf()
            got = await call(args)
            finished = perf()
            if got != expected:
                raise wrong(variant, args, got, expected)
            window.count(index, started, finished)

    return [worker] * tasks


# --- contenders -------------------------------------------------------------------------
#
# Each has `open()`, `workers(variant, cases, window, tasks)`, `close()`,
# `version()`, and `stats()` (extra numbers for the result, may be empty).


def _ids(rows: Sequence[Any]) -> Tuple[int, ...]:
    return tuple([r[0] for r in rows])


class MypgdriverConnection:
    name = "mypgdriver-1conn"
    package = "mypgdriver"

    def __init__(self, params: Dict[str, Any]) -> None:
        self.params = params

    def version(self) -> str:
        return str(getattr(__import__(self.package), "__version__", "unknown"))

    async def open(self) -> None:
        module = __import__(self.package)
        self.conn = await module.connect(**self.params)

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        conn, sql = self.conn, variant.sql
        if variant.lookup:
            async def call(args: Tuple[Any, ...]) -> Any:
                return _ids(await conn.fetch(sql, *args))
        else:
            async def call(args: Tuple[Any, ...]) -> Any:
                return await conn.fetchval(sql)
        return task_workers(lambda _: call, variant, cases, window, tasks)

    def stats(self) -> Dict[str, Any]:
        get = getattr(self.conn, "get_pipeline_stats", None)
        if get is None:
            return {}
        in_flight, max_in_flight, limit = get()
        return {"max_in_flight": max_in_flight, "pipeline_limit": limit}

    async def close(self) -> None:
        await self.conn.close()


class AsyncpgPool:
    """asyncpg's pool: each task acquires a connection per query (a pool's best here)."""

    package = "asyncpg"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size
        self.name = f"asyncpg-pool{size}"

    def version(self) -> str:
        return str(getattr(__import__(self.package), "__version__", "unknown"))

    async def open(self) -> None:
        import asyncpg

        self.pool = await asyncpg.create_pool(min_size=self.size, max_size=self.size,
                                              **self.params)

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        pool, sql = self.pool, variant.sql
        if variant.lookup:
            async def call(args: Tuple[Any, ...]) -> Any:
                async with pool.acquire() as con:
                    return _ids(await con.fetch(sql, *args))
        else:
            async def call(args: Tuple[Any, ...]) -> Any:
                async with pool.acquire() as con:
                    return await con.fetchval(sql)
        return task_workers(lambda _: call, variant, cases, window, tasks)

    def stats(self) -> Dict[str, Any]:
        return {}

    async def close(self) -> None:
        await self.pool.close()


def conninfo(params: Dict[str, Any]) -> str:
    """asyncpg-style keywords as a libpq conninfo string."""
    info = (f"host={params['host']} port={params['port']} user={params['user']} "
            f"dbname={params['database']}")
    return info + (f" password={params['password']}" if params.get("password") else "")


class PsycopgConnection:
    """One psycopg AsyncConnection shared by the tasks, a cursor each: psycopg serialises them."""

    name = "psycopg-1conn"

    def __init__(self, params: Dict[str, Any]) -> None:
        self.params = params

    def version(self) -> str:
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    async def open(self) -> None:
        import psycopg

        self.conn = await psycopg.AsyncConnection.connect(conninfo(self.params), autocommit=True)

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        conn, sql = self.conn, variant.pyformat_sql

        def call_for(_: int) -> Call:
            cur = conn.cursor(binary=True)
            if variant.lookup:
                async def call(args: Tuple[Any, ...]) -> Any:
                    await cur.execute(sql, args, prepare=True)
                    return _ids(await cur.fetchall())
            else:
                async def call(args: Tuple[Any, ...]) -> Any:
                    await cur.execute(sql, prepare=True)
                    return (await cur.fetchone())[0]
            return call

        return task_workers(call_for, variant, cases, window, tasks)

    def stats(self) -> Dict[str, Any]:
        return {}

    async def close(self) -> None:
        await self.conn.close()


class PsycopgPipeline(PsycopgConnection):
    """psycopg's pipeline mode: one task, batches of BATCH statements per pipeline block.

    Each batch is sent inside ``async with conn.pipeline()`` (one Sync at the
    end of the block), then its results are read; a query's latency is from
    the start of its batch to its result.  The tasks argument is ignored:
    the batch stands for the tasks' queries.
    """

    name = "psycopg-pipeline"

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        conn, sql, lookup = self.conn, variant.pyformat_sql, variant.lookup
        cursors = [conn.cursor(binary=True) for _ in range(BATCH)]
        perf = time.perf_counter
        n = len(cases)

        async def worker(index: int) -> None:
            position = 0
            while not window.stopping:
                batch = [cases[(position + i) % n] for i in range(BATCH)]
                position = (position + BATCH) % n
                started = perf()
                async with conn.pipeline():
                    for cur, (args, _) in zip(cursors, batch):
                        await cur.execute(sql, args, prepare=True)
                for cur, (args, expected) in zip(cursors, batch):
                    got = _ids(await cur.fetchall()) if lookup else (await cur.fetchone())[0]
                    finished = perf()
                    if got != expected:
                        raise wrong(variant, args, got, expected)
                    window.count(index, started, finished)

        return [worker]


class MypgdriverSyncPipeline:
    """mypgdriver.sync's pipeline mode: one thread, batches of BATCH statements per block.

    Each batch is queued inside ``with conn.pipeline() as p:`` (the block's
    end is its one Sync), then its results are read; a query's latency is
    from the start of its batch to its result.  Blocking calls inside the
    cell's event loop (which runs nothing else meanwhile): the one worker
    yields to it between batches.  The tasks argument is ignored.
    """

    name = "mypgdriver-sync-pipeline"
    package = "mypgdriver"

    def __init__(self, params: Dict[str, Any]) -> None:
        self.params = params

    def version(self) -> str:
        return str(getattr(__import__(self.package), "__version__", "unknown"))

    async def open(self) -> None:
        import mypgdriver.sync

        self.conn = mypgdriver.sync.connect(**self.params)

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        conn, sql, lookup = self.conn, variant.sql, variant.lookup
        perf = time.perf_counter
        n = len(cases)

        async def worker(index: int) -> None:
            position = 0
            while not window.stopping:
                batch = [cases[(position + i) % n] for i in range(BATCH)]
                position = (position + BATCH) % n
                started = perf()
                with conn.pipeline() as p:
                    if lookup:
                        results = [p.fetch(sql, *args) for args, _ in batch]
                    else:
                        results = [p.fetchval(sql) for _ in batch]
                for result, (args, expected) in zip(results, batch):
                    got = _ids(result.result()) if lookup else result.result()
                    finished = perf()
                    if got != expected:
                        raise wrong(variant, args, got, expected)
                    window.count(index, started, finished)
                await asyncio.sleep(0)

        return [worker]

    def stats(self) -> Dict[str, Any]:
        return {}

    async def close(self) -> None:
        self.conn.close()


class PsycopgSyncPipeline:
    """psycopg 3's sync pipeline mode: one thread, batches of BATCH statements per block."""

    name = "psycopg-sync-pipeline"

    def __init__(self, params: Dict[str, Any]) -> None:
        self.params = params

    def version(self) -> str:
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    async def open(self) -> None:
        import psycopg

        self.conn = psycopg.Connection.connect(conninfo(self.params), autocommit=True)

    def workers(self, variant: Variant, cases: List[Case], window: Window,
                tasks: int) -> List[Worker]:
        conn, sql, lookup = self.conn, variant.pyformat_sql, variant.lookup
        cursors = [conn.cursor(binary=True) for _ in range(BATCH)]
        perf = time.perf_counter
        n = len(cases)

        async def worker(index: int) -> None:
            position = 0
            while not window.stopping:
                batch = [cases[(position + i) % n] for i in range(BATCH)]
                position = (position + BATCH) % n
                started = perf()
                with conn.pipeline():
                    for cur, (args, _) in zip(cursors, batch):
                        cur.execute(sql, args, prepare=True)
                for cur, (args, expected) in zip(cursors, batch):
                    got = _ids(cur.fetchall()) if lookup else cur.fetchone()[0]
                    finished = perf()
                    if got != expected:
                        raise wrong(variant, args, got, expected)
                    window.count(index, started, finished)
                await asyncio.sleep(0)

        return [worker]

    def stats(self) -> Dict[str, Any]:
        return {}

    async def close(self) -> None:
        self.conn.close()


PYTHON_CONTENDERS = ("mypgdriver-1conn", "asyncpg-pool10", "asyncpg-pool1", "psycopg-1conn",
                     "psycopg-pipeline", "mypgdriver-sync-pipeline", "psycopg-sync-pipeline")


def open_contender(name: str, params: Dict[str, Any]) -> Any:
    """The Python contender called `name`, not yet opened."""
    if name == "mypgdriver-1conn":
        return MypgdriverConnection(params)
    if name == "asyncpg-pool10":
        return AsyncpgPool(params, 10)
    if name == "asyncpg-pool1":
        return AsyncpgPool(params, 1)
    if name == "psycopg-1conn":
        return PsycopgConnection(params)
    if name == "psycopg-pipeline":
        return PsycopgPipeline(params)
    if name == "mypgdriver-sync-pipeline":
        return MypgdriverSyncPipeline(params)
    if name == "psycopg-sync-pipeline":
        return PsycopgSyncPipeline(params)
    raise ValueError(f"unknown pipeline contender {name!r}")


async def run_cell(contender: Any, variant: Variant, tasks: int, warmup: float,
                   duration: float) -> Dict[str, Any]:
    """One contender on one variant: open, measure, close; the cell's numbers."""
    await contender.open()
    try:
        window = Window()
        workers = contender.workers(variant, make_cases(variant), window, tasks)
        window.expect(len(workers))
        elapsed, cpu_seconds = await measure(workers, window, warmup, duration)
        extra = contender.stats()
    finally:
        await contender.close()
    queries = len(window.latencies)
    result = cell_result(queries=queries, rows=queries * variant.rows, elapsed=elapsed,
                         cpu_seconds=cpu_seconds, latencies=window.latencies)
    result.update(extra)
    return result


def event_loop_name() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    return f"uvloop {uvloop.__version__}"


def run_spec(spec: Dict[str, Any], result: Dict[str, Any]) -> None:
    """Run the pipeline cell `spec` describes (in a `bench.worker` process), filling `result`.

    spec: variant, contender, tasks, warmup, duration, params.
    """
    contender = open_contender(spec["contender"], spec["params"])
    result["driver_version"] = contender.version()
    result["event_loop"] = event_loop_name()
    coro = run_cell(contender, VARIANTS[spec["variant"]], spec.get("tasks", TASKS),
                    spec["warmup"], spec["duration"])
    if result["event_loop"] == "asyncio":
        result.update(asyncio.run(coro))
    else:
        import uvloop

        result.update(uvloop.run(coro))
    result["connections"] = CONNECTIONS[spec["contender"]]


# --- pgbench -----------------------------------------------------------------------------


def _pgbench_sql(variant: Variant, var: str) -> str:
    """The variant's statement for pgbench, its ids from the pgbench variable `var`."""
    if not variant.lookup:
        return variant.sql + ";"
    return (variant.sql.replace("$1", f":{var}")
            .replace("$2", f":{var} + {LOOKUP_ROWS - 1}") + ";")


def _random_id(var: str) -> str:
    return f"\\set {var} random(1, {TABLE_ROWS - LOOKUP_ROWS + 1})"


def pgbench_script(variant: Variant, statements: int, sync_each: bool = False) -> str:
    """A pgbench script whose transaction is `statements` statements.

    One statement: sent on its own (the round-trip floor). More: one
    pipeline of them (``\\startpipeline`` ... ``\\endpipeline``, one Sync),
    each lookup with its own random ids. With `sync_each`, a
    ``\\syncpipeline`` (pgbench 17+: a Sync, the pipeline goes on) after
    every statement but the last, whose Sync is ``\\endpipeline``'s: a Sync
    per statement, each its own implicit transaction.
    """
    if statements == 1:
        lines = [_random_id("a")] if variant.lookup else []
        return "\n".join([*lines, _pgbench_sql(variant, "a")]) + "\n"
    lines = [_random_id(f"a{i}") for i in range(statements)] if variant.lookup else []
    lines.append("\\startpipeline")
    for i in range(statements):
        lines.append(_pgbench_sql(variant, f"a{i}"))
        if sync_each and i < statements - 1:
            lines.append("\\syncpipeline")
    lines.append("\\endpipeline")
    return "\n".join(lines) + "\n"


def check_script(variant: Variant) -> str:
    """A pgbench script that aborts (division by zero) unless a query gives the right answer.

    ``\\gset`` is refused in a pipeline, so this runs the statement on its
    own, wrapped to give one row: the value, or the lookup's count and ids.
    """
    fail = ["\\set wrong_answer 1 / 0", "\\endif"]
    if not variant.lookup:
        return "\n".join(["SELECT 1+1 AS v \\gset", "\\if :v != 2", *fail]) + "\n"
    query = _pgbench_sql(variant, "a").rstrip(";")
    return "\n".join([
        _random_id("a"),
        f"SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM ({query}) AS q \\gset",
        f"\\if :n != {LOOKUP_ROWS} or :lo != :a or :hi != :a + {LOOKUP_ROWS - 1}",
        *fail,
    ]) + "\n"


CHECK_TRANSACTIONS = 20


def run_pgbench_cell(params: Dict[str, Any], variant: Variant, contender: str, warmup: float,
                     duration: float, preexec: Optional[Callable[[], None]] = None,
                     timeout: float = 120.0) -> Dict[str, Any]:
    """A pgbench contender on one connection; its queries/s, CPU per query and (floor) latency.

    Latency percentiles exist only for the one-statement floor: pgbench logs
    one line per transaction, which for the pipelines is a batch of BATCH.
    A Sync per statement takes a pgbench 17+ (`pgbench.syncpipeline_pgbench`);
    without one the cell is n/a ("needs pgbench 17+: ...").
    """
    from . import pgbench

    mode, statements, sync_each = PGBENCH[contender]
    try:
        executable = pgbench.syncpipeline_pgbench() if sync_each else "pgbench"
        pgbench.run_script(params, check_script(variant), 1, transactions=CHECK_TRANSACTIONS,
                           mode=mode, log=False, timeout=timeout, executable=executable)
        lines, cpu = pgbench.run_script(params, pgbench_script(variant, statements, sync_each),
                                        1, warmup + duration + 1, mode=mode, preexec=preexec,
                                        timeout=timeout, executable=executable)
    except pgbench.PgbenchError as exc:
        return {"error": str(exc)}
    total = len(lines)
    transactions, latencies = pgbench.parse_log(lines, warmup, duration)
    queries = transactions * statements
    result = cell_result(queries=queries, rows=queries * variant.rows, elapsed=duration,
                         cpu_seconds=cpu * transactions / total if total else 0.0,
                         latencies=latencies if statements == 1 else [])
    result["driver_version"] = pgbench.version(executable)
    result["event_loop"] = f"1 thread, -M {mode}" + (
        f", {statements} statements per pipeline" if statements > 1 else "") + (
        ", a Sync after each" if sync_each else "")
    result["connections"] = 1
    return result


def verify(result: Dict[str, Any], variant: Variant) -> Dict[str, Any]:
    """A cell that finished no query, or not the promised rows, is an error."""
    if "error" in result:
        return result
    kept = {k: result[k] for k in ("driver_version", "event_loop") if k in result}
    queries = result["queries"]
    if queries == 0:
        return {**kept, "error": "no query finished inside the measuring window"}
    if result["rows"] != queries * variant.rows:
        return {**kept, "error": f"wrong row count: {result['rows'] / queries:g} per query, "
                                 f"expected {variant.rows}"}
    return result


def settings(variants: Sequence[str], warmup: float, duration: float, rounds: int,
             pin: bool) -> Dict[str, Any]:
    """The scenario's settings as the report shows them."""
    return {"variants": list(variants), "tasks": TASKS, "batch": BATCH, "warmup": warmup,
            "duration": duration, "rounds": rounds, "pin": pin}

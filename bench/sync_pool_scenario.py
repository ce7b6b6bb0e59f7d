"""Sync pool scenario: a threaded web application (Flask-style) serving requests through a pool.

What a synchronous reporting app does: a WSGI server runs N worker threads,
each request takes a connection from an in-application pool, runs 4 to 10
small queries and gives the connection back.  The requests are the pool
scenario's (`bench.pool_scenario`: the same query mix, table and
pre-generated plans, replayed in the same order per user); the users are
threads instead of tasks, and the pools are the thread-safe ones:

* ``psycopg-sync-pool``: psycopg_pool's ``ConnectionPool`` (psycopg 3,
  autocommit, binary results), ``with pool.connection() as conn:`` and
  ``conn.execute(...)``: the baseline (psycopg 3 is the sync driver most
  applications move to);
* ``psycopg2-pool``: psycopg2's ``ThreadedConnectionPool``, ``getconn()`` /
  ``putconn()`` (autocommit).  It raises ``PoolError`` instead of waiting
  when every connection is out, so, as applications do, a gate of the
  pool's size makes a user wait for a connection rather than fail.  The
  gate hands a returned connection to the longest waiter (`FifoGate`), as
  psycopg_pool does: with `threading.Semaphore` the thread that released a
  slot took it straight back (it still holds the GIL), and one user of
  three on a pool of two waited 30 s for its first request;
* ``mypgdriver-sync-pool``: ``mypgdriver.sync.create_pool(dsn, min_size=N,
  max_size=N)``, ``with pool.acquire() as conn:`` and the asyncio
  contender's calls (``fetchrow`` / ``fetch`` / ``fetchval`` /
  ``execute``) without ``await``.  Where ``mypgdriver.sync`` has no
  ``create_pool`` yet, its cell is n/a with ``skipped: ...`` saying so, and
  the run goes on.

Every pool has the same size (``--pool-size``, opened full before the
warm-up), so from 50 users on requests queue for a connection.  Reported per
level: requests/s, p50 / p95 / p99 latency of a whole request (waiting for
a connection included), client CPU per request (the worker process's, all
threads), failed requests.

`python -m bench --workloads sync_pool` runs it alone (one worker process
per contender, level and round, see `bench/runner.py`).
"""
from __future__ import annotations

import threading
import time
import urllib.parse
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .contenders import SYNC_POOL
from .drivers.base import SKIPPED, ContenderUnavailable
from .pool_scenario import (
    DEFAULT_POOL_SIZE,
    EXTENSION_STEP,
    MAX_EXTENSION,
    QUERY_KINDS,
    CellResult,
    Plan,
    cpu_time,
    make_plans,
    pyformat,
    result_dict,
)
from .stats import percentiles

NAME = "sync_pool"
DEFAULT_LEVELS = (10, 50)
# The contenders' names, baseline and A/A label: contenders.SYNC_POOL.  A
# contender that cannot run here raises ContenderUnavailable; its cell's
# error then starts with SKIPPED, as a throughput cell's does.

def contenders_for(drivers: Sequence[str], aa_control: bool) -> List[Tuple[str, str]]:
    """(contender, label) pairs to run at each level, psycopg_pool's first and last (A/A)."""
    return SYNC_POOL.run_order(drivers, aa_control)


def dsn_of(params: Dict[str, Any]) -> str:
    """A postgresql:// URL for the suite's connection keywords (asyncpg's spelling)."""
    user = urllib.parse.quote(params["user"], safe="")
    if params.get("password") is not None:
        user += ":" + urllib.parse.quote(params["password"], safe="")
    db = urllib.parse.quote(params["database"], safe="")
    host, port = params["host"], params["port"]
    if str(host).startswith("/"):  # a unix socket directory goes in the query
        return f"postgresql://{user}@/{db}?" + urllib.parse.urlencode({"host": host,
                                                                       "port": port})
    netloc = f"[{host}]" if ":" in str(host) else host
    return f"postgresql://{user}@{netloc}:{port}/{db}"


def conninfo_of(params: Dict[str, Any]) -> str:
    """libpq's key=value form of the suite's connection keywords."""
    info = (f"host={params['host']} port={params['port']} user={params['user']} "
            f"dbname={params['database']}")
    if params.get("password"):
        info += f" password={params['password']}"
    return info


class FifoGate:
    """At most `size` holders at once; a freed slot goes to the longest waiter (FIFO).

    Unlike `threading.Semaphore`, a thread that releases a slot and asks
    again at once cannot take it back ahead of the threads already waiting.
    """

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._free = size
        self._waiters: Deque[threading.Lock] = deque()

    def __enter__(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            handoff = threading.Lock()
            handoff.acquire()
            self._waiters.append(handoff)
        handoff.acquire()  # released by __exit__ when the slot is handed to us

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


# --- contenders: open(), request(plan), close(), version() -----------------------------


class PsycopgSyncPool:
    name = "psycopg-sync-pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size
        self.sql = {kind: pyformat(sql) for kind, (_, sql) in QUERY_KINDS.items()}

    def version(self) -> str:
        import psycopg_pool

        return str(psycopg_pool.__version__)

    def open(self) -> None:
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(conninfo_of(self.params), min_size=self.size,
                                   max_size=self.size, kwargs={"autocommit": True}, open=False)
        self.pool.open(wait=True)

    def request(self, plan: Plan) -> None:
        sql = self.sql
        with self.pool.connection() as conn:
            for kind, args in plan:
                cur = conn.execute(sql[kind], args, binary=True)
                if kind == "lookup":
                    cur.fetchone()
                elif kind == "range":
                    cur.fetchall()
                elif kind == "count":
                    cur.fetchone()[0]

    def close(self) -> None:
        self.pool.close()


class Psycopg2Pool:
    name = "psycopg2-pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size
        self.sql = {kind: pyformat(sql) for kind, (_, sql) in QUERY_KINDS.items()}

    def version(self) -> str:
        import psycopg2

        return psycopg2.__version__.split()[0]

    def open(self) -> None:
        from psycopg2.pool import ThreadedConnectionPool

        from .drivers.psycopg_driver import dbapi_params

        self.pool = ThreadedConnectionPool(self.size, self.size, **dbapi_params(self.params))
        # getconn() raises PoolError when every connection is out: wait instead,
        # first come first served.
        self.free = FifoGate(self.size)

    def request(self, plan: Plan) -> None:
        sql = self.sql
        with self.free:
            conn = self.pool.getconn()
            try:
                if not conn.autocommit:
                    conn.autocommit = True
                with conn.cursor() as cur:
                    for kind, args in plan:
                        cur.execute(sql[kind], args)
                        if kind == "lookup":
                            cur.fetchone()
                        elif kind == "range":
                            cur.fetchall()
                        elif kind == "count":
                            cur.fetchone()[0]
            finally:
                self.pool.putconn(conn)

    def close(self) -> None:
        self.pool.closeall()


class MypgdriverSyncPool:
    name = "mypgdriver-sync-pool"

    def __init__(self, params: Dict[str, Any], size: int) -> None:
        self.params, self.size = params, size

    def version(self) -> str:
        import mypgdriver

        return str(getattr(mypgdriver, "__version__", "unknown"))

    def open(self) -> None:
        import mypgdriver.sync

        create_pool = getattr(mypgdriver.sync, "create_pool", None)
        if create_pool is None:
            raise ContenderUnavailable("mypgdriver.sync has no create_pool yet")
        self.pool = create_pool(dsn_of(self.params), min_size=self.size, max_size=self.size)

    def request(self, plan: Plan) -> None:
        with self.pool.acquire() as conn:
            for kind, args in plan:
                sql = QUERY_KINDS[kind][1]
                if kind == "lookup":
                    conn.fetchrow(sql, *args)
                elif kind == "range":
                    conn.fetch(sql, *args)
                elif kind == "count":
                    conn.fetchval(sql, *args)
                else:
                    conn.execute(sql, *args)

    def close(self) -> None:
        self.pool.close()


CONTENDERS = {c.name: c for c in (PsycopgSyncPool, Psycopg2Pool, MypgdriverSyncPool)}


def open_contender(name: str, params: Dict[str, Any], pool_size: int) -> Any:
    """The contender called `name`, not yet opened."""
    if name not in CONTENDERS:
        raise ValueError(f"unknown contender {name!r}")
    return CONTENDERS[name](params, pool_size)


# --- one cell: a contender at a number of users (threads) ------------------------------


class _User:
    """What one user thread did inside the measuring window."""

    __slots__ = ("latencies", "queries", "errors", "first_error", "finished_one")

    def __init__(self) -> None:
        self.latencies: List[float] = []
        self.queries = 0
        self.errors = 0
        self.first_error: Optional[str] = None
        self.finished_one = False


def run_cell(contender: Any, users: int, plans: Sequence[Plan], warmup: float,
             duration: float) -> CellResult:
    """`users` threads serving requests for warmup + duration; the latter is measured.

    Requests finishing inside the window count, with their latency; the
    window stays open past `duration` until every user has finished (or
    failed) one request in it, by at most MAX_EXTENSION.  A failed request is
    counted and the user goes on with the next one.
    """
    contender.open()
    tallies = [_User() for _ in range(users)]
    state = {"measuring": False, "stopping": False}
    perf = time.perf_counter

    def user(index: int) -> None:
        tally = tallies[index]
        position = (index * 7919) % len(plans)  # users start at different requests
        request = contender.request
        while not state["stopping"]:
            plan = plans[position]
            position = (position + 1) % len(plans)
            start = perf()
            try:
                request(plan)
            except Exception as e:  # noqa: BLE001 - counted and shown, the run goes on
                if state["measuring"]:
                    tally.errors += 1
                    tally.finished_one = True
                    if tally.first_error is None:
                        tally.first_error = f"{type(e).__name__}: {e}"
                time.sleep(0.001)  # a pool that is gone fails at once: do not spin
                continue
            if state["measuring"]:
                tally.latencies.append(perf() - start)
                tally.queries += len(plan)
                tally.finished_one = True

    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(users)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(warmup)
        state["measuring"] = True
        cpu_start, wall_start = cpu_time(), perf()
        time.sleep(duration)
        deadline = time.monotonic() + MAX_EXTENSION
        while not all(t.finished_one for t in tallies) and time.monotonic() < deadline:
            time.sleep(EXTENSION_STEP)
        state["measuring"] = False
        elapsed, cpu_seconds = perf() - wall_start, cpu_time() - cpu_start
    finally:
        state["measuring"] = False
        state["stopping"] = True
        for thread in threads:
            thread.join()
        contender.close()
    latencies = [lat for t in tallies for lat in t.latencies]
    p50, p95, p99 = (None if value is None else value * 1e3
                     for value in percentiles(latencies, (50, 95, 99)))
    first_error = next((t.first_error for t in tallies if t.first_error), None)
    return CellResult(contender=contender.name, users=users, requests=len(latencies),
                      queries=sum(t.queries for t in tallies),
                      errors=sum(t.errors for t in tallies), elapsed=elapsed,
                      cpu_seconds=cpu_seconds, p50_ms=p50, p95_ms=p95, p99_ms=p99,
                      first_error=first_error)


def run_spec(spec: Dict[str, Any], result: Dict[str, Any]) -> None:
    """Run the sync pool cell `spec` describes (in a `bench.worker` process), filling `result`.

    spec: contender, users, pool_size, warmup, duration, params.  A contender
    that cannot run here (no `mypgdriver.sync.create_pool`) fills in `error`
    starting with "skipped: " and `skipped: True`.
    """
    contender = open_contender(spec["contender"], spec["params"],
                               spec.get("pool_size", DEFAULT_POOL_SIZE))
    result["driver_version"] = contender.version()
    result["event_loop"] = f"{spec['users']} threads"
    try:
        cell = run_cell(contender, spec["users"], make_plans(), spec["warmup"],
                        spec["duration"])
    except ContenderUnavailable as exc:
        result.update(error=f"{SKIPPED}{exc}", skipped=True)
        return
    result.update(result_dict(cell))


def settings(levels: Sequence[int], pool_size: int, warmup: float, duration: float,
             rounds: int = 1) -> Dict[str, Any]:
    """The scenario's settings as the report shows them."""
    from .pool_scenario import QUERIES_PER_REQUEST

    return {"levels": list(levels), "pool_size": pool_size,
            "queries_per_request": list(QUERIES_PER_REQUEST), "warmup": warmup,
            "duration": duration, "rounds": rounds, "threads": True}

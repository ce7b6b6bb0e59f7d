"""The pooler scenario: pg_type and oneplusone through pgbouncer in transaction mode.

An application that outgrows one server's connections puts a pooler in
front of it, in transaction mode: each transaction may run on another
server connection.  Drivers have to be configured for that, and the usual
advice (turn prepared statements off) costs the speed they give.  Since
pgbouncer 1.21, ``max_prepared_statements`` lets the pooler carry
protocol-level named statements across its server connections, which
mypgdriver relies on to keep its statement cache on.

Two variants, each the throughput workload of the same name run at
concurrency 10 through the pgbouncer installed on the machine
(``tools/pgbouncer.py``: ``MYPGDRIVER_PGBOUNCER``, else ``pgbouncer`` on
PATH, else Debian's), started fresh for every cell in front of the
benchmark's server, with ``pool_mode = transaction``, 10 server connections
and, from pgbouncer 1.21 on, ``max_prepared_statements = 200``.  The
results say which version ran: before 1.21 (Debian 12's 1.18) pgbouncer
cannot carry named statements, so the configurations below that prepare
them measure a pooler they were not meant for (mypgdriver's cache pays a
re-prepare each time it lands on another server connection; psycopg's
prepared statements and pgbench ``-M prepared`` fail):

* ``pooler_pg_type``: the 12-column ``pg_type`` query, about 600 rows;
* ``pooler_oneplusone``: ``SELECT 1+1``, the round trip.

Each driver runs in its best configuration that is safe through such a
pooler (``CONFIGURATIONS`` says it in one line each):

* ``asyncpg-nocache``: ``asyncpg.connect(statement_cache_size=0)``, as
  asyncpg's documentation requires behind pgbouncer in transaction mode;
  ``conn.fetch(sql, *args)``.  asyncpg then describes each query with an
  unnamed statement and a Flush (no Sync, so the pooler keeps the server
  connection) and parses it again with the Bind: two round trips a query;
* ``mypgdriver-cache``: ``mypgdriver.connect()`` with its statement cache
  on (the default), the same ``conn.fetch(sql, *args)``: named statements,
  one round trip a query once prepared;
* ``psycopg-unprepared`` / ``psycopg-async-unprepared``: psycopg 3 with
  ``prepare_threshold=None`` (its long-standing setting for pgbouncer: no
  server-side prepared statements), autocommit, binary results,
  ``cur.execute(sql, args)``: an unnamed Parse/Bind/Execute/Sync per query;
* ``psycopg-prepared``: psycopg 3 (sync) with its default
  ``prepare_threshold`` (a query is prepared from its sixth execution on):
  psycopg's documentation supports prepared statements through pgbouncer
  1.22+ when its libpq is 17+ (it closes them with the protocol's Close),
  so this is psycopg's best through this pooler, measured beside the
  setting usually given for poolers;
* ``psycopg2``: as it is (it never prepares): the throughput cells' code;
* ``pgbench-prepared``: pgbench ``-M prepared``, 10 clients: the C client
  with named prepared statements, which pgbouncer 1.21+ carries.

A query that fails does not end the cell: failed queries are counted (with
the first error) and reported per contender, and the table flags a
contender with any.  A configuration that is truly pooler-safe has none.

The Python contenders run in ``bench.worker`` (its measuring loops, with
the drivers this module configures); the runner starts pgbouncer and runs
pgbench.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from .contenders import POOLER, POOLER_REFERENCE
from .drivers import load as load_driver
from .drivers.base import ConnParams, Session
from .drivers.psycopg_driver import dbapi_params
from .workloads import BY_NAME, Workload

if TYPE_CHECKING:
    from tools.pgbouncer import PgbouncerBinary

SCENARIO = "pooler"  # the worker's `scenario` for a Python contender's cell
CONCURRENCY = 10  # client connections to the pooler, every contender

# variant -> the throughput workload it runs through the pooler
VARIANTS: Dict[str, str] = {"pooler_pg_type": "pg_type", "pooler_oneplusone": "oneplusone"}
NAMES = tuple(VARIANTS)

# pgbouncer's settings: those of the pooler tests (tests/support/pgbouncer.py),
# which the bench cannot import (they need pytest).
SERVER_POOL_SIZE = 10  # server connections the clients share
MAX_PREPARED_STATEMENTS = 200  # named statements pgbouncer keeps per server connection
# Every version's.
PGBOUNCER_SETTINGS: Dict[str, object] = {
    "pool_mode": "transaction",
    "default_pool_size": SERVER_POOL_SIZE,
    "max_client_conn": 100,
}
# Added from the version that has the setting (1.21): an older pgbouncer
# refuses to start with a setting it does not know.
PREPARED_STATEMENT_SETTINGS: Dict[str, object] = {
    "max_prepared_statements": MAX_PREPARED_STATEMENTS,
}

PGBENCH_MODE = "prepared"  # pgbench-prepared's -M

# What each contender is, in one line for the report.
CONFIGURATIONS: Dict[str, str] = {
    "asyncpg-nocache": "statement_cache_size=0; conn.fetch",
    "mypgdriver-cache": "statement cache on (default); conn.fetch",
    "psycopg-unprepared": "prepare_threshold=None, autocommit, binary; cur.execute",
    "psycopg-async-unprepared": "prepare_threshold=None, autocommit, binary; cur.execute",
    "psycopg-prepared": "default prepare_threshold (prepared from the 6th run), autocommit, "
                        "binary; cur.execute",
    "psycopg2": "as is (never prepares), autocommit; cur.execute",
    "pgbench-prepared": f"-M {PGBENCH_MODE}, {CONCURRENCY} clients",
}


def workload(variant: str) -> Workload:
    """The throughput workload `variant` runs through the pooler."""
    return BY_NAME[VARIANTS[variant]]


def contenders_for(drivers: Sequence[str], aa_control: bool) -> List[Tuple[str, str]]:
    """(contender, label) pairs in run order for the suite's `--drivers`.

    asyncpg first (the baseline), the others, and asyncpg again last as the
    A/A control, as in the throughput cells.
    """
    return POOLER.run_order(drivers, aa_control)


# --- pgbouncer ------------------------------------------------------------------------


def pgbouncer_settings(version: Sequence[int]) -> Dict[str, object]:
    """pgbouncer's settings for its `version` (e.g. ``(1, 18, 0)``)."""
    from tools.pgbouncer import PREPARED_STATEMENTS

    if tuple(version) >= PREPARED_STATEMENTS:
        return {**PGBOUNCER_SETTINGS, **PREPARED_STATEMENT_SETTINGS}
    return dict(PGBOUNCER_SETTINGS)


def locate_pgbouncer() -> Tuple[Optional["PgbouncerBinary"], str]:
    """(the pgbouncer binary installed on the machine, its version), or (None, why there is none).

    tools/pgbouncer.py says where it looks; whatever its version, it is the
    one the scenario runs through.
    """
    from tools.pgbouncer import PgbouncerUnavailable, find_pgbouncer

    try:
        binary = find_pgbouncer()
    except (PgbouncerUnavailable, OSError) as exc:
        lines = str(exc).strip().splitlines()
        return None, lines[0] if lines else type(exc).__name__
    return binary, binary.banner


def start_pgbouncer(binary: "PgbouncerBinary", server_params: ConnParams) -> Any:
    """A running pgbouncer (tools.pgbouncer.Pgbouncer) in front of the server.

    Its settings are pgbouncer_settings() for the binary's version.  Raises
    RuntimeError for a server that needs a password: the pgbouncer runner
    logs in with trust authentication only.
    """
    from tools.pgbouncer import Pgbouncer

    if server_params.get("password"):
        raise RuntimeError("pgbouncer is run with trust authentication; "
                           "it cannot log in to a server that asks for a password")
    bouncer = Pgbouncer(binary, server_params["host"], server_params["port"],
                        users=[server_params["user"]], database=server_params["database"],
                        settings=pgbouncer_settings(binary.version))
    bouncer.start()
    return bouncer


def pooled_params(server_params: ConnParams, bouncer_port: int) -> ConnParams:
    """Connection keywords for the pooler in front of the server (same user and database)."""
    return {**server_params, "host": "127.0.0.1", "port": bouncer_port}


# --- the Python contenders: drivers for bench.worker ------------------------------------


class AsyncpgStyle:
    """asyncpg's API with the given connect keywords; each iteration one `conn.fetch`.

    `conn.fetch(sql, *args)`, not `conn.prepare()`: an explicit prepare makes
    a named statement whatever the cache size, which is not what asyncpg's
    advice for poolers means.
    """

    is_async = True

    def __init__(self, name: str, module: str, connect_kwargs: Dict[str, Any]) -> None:
        self.name = name
        self._module_name = module
        self.connect_kwargs = connect_kwargs

    def version(self) -> str:
        """The installed version of the driver package."""
        module = importlib.import_module(self._module_name)
        return str(getattr(module, "__version__", "unknown"))

    async def open(self, params: ConnParams, workload: Workload) -> Session:
        """Connect through the pooler; the session runs the workload's query once per call."""
        module = importlib.import_module(self._module_name)
        conn = await module.connect(**params, **self.connect_kwargs)
        sql, args = workload.sql, workload.args

        async def run() -> int:
            return len(await conn.fetch(sql, *args))

        return Session(run=run, close=conn.close)


class PsycopgUnprepared:
    """psycopg 3, sync, with prepared statements off (`prepare_threshold=None`)."""

    is_async = False
    name = "psycopg-unprepared"
    # psycopg.connect's prepared-statement keywords for this contender.
    prepare_settings: Dict[str, Any] = {"prepare_threshold": None}

    def version(self) -> str:
        """psycopg's version and its libpq wrapper (binary, c or python)."""
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    def open(self, params: ConnParams, workload: Workload) -> Session:
        """Connect through the pooler; the session runs the workload's query once per call."""
        import psycopg

        conn = psycopg.connect(**dbapi_params(params), autocommit=True, **self.prepare_settings)
        cur = conn.cursor(binary=True)
        sql, args = workload.pyformat_sql, workload.args

        def run() -> int:
            cur.execute(sql, args)
            return len(cur.fetchall())

        return Session(run=run, close=conn.close)


class PsycopgPrepared(PsycopgUnprepared):
    """psycopg 3, sync, with its default prepare threshold: named statements once warm."""

    name = "psycopg-prepared"
    prepare_settings: Dict[str, Any] = {}


class PsycopgAsyncUnprepared(PsycopgUnprepared):
    """psycopg 3's AsyncConnection with prepared statements off (`prepare_threshold=None`)."""

    is_async = True
    name = "psycopg-async-unprepared"

    async def open(self, params: ConnParams, workload: Workload) -> Session:  # type: ignore[override]
        """Connect through the pooler; the session runs the workload's query once per call."""
        import psycopg

        conn = await psycopg.AsyncConnection.connect(**dbapi_params(params), autocommit=True,
                                                     **self.prepare_settings)
        cur = conn.cursor(binary=True)
        sql, args = workload.pyformat_sql, workload.args

        async def run() -> int:
            await cur.execute(sql, args)
            return len(await cur.fetchall())

        return Session(run=run, close=conn.close)


def driver_for(contender: str) -> Any:
    """The configured driver (bench.drivers' interface) of a Python contender."""
    if contender == "asyncpg-nocache":
        return AsyncpgStyle(contender, "asyncpg", {"statement_cache_size": 0})
    if contender == "mypgdriver-cache":
        return AsyncpgStyle(contender, "mypgdriver", {})
    if contender == "psycopg-unprepared":
        return PsycopgUnprepared()
    if contender == "psycopg-async-unprepared":
        return PsycopgAsyncUnprepared()
    if contender == "psycopg-prepared":
        return PsycopgPrepared()
    if contender == "psycopg2":
        # psycopg2 has no server-side prepare: the throughput cells' code is
        # already pooler-safe.
        return load_driver("psycopg2")
    raise ValueError(f"unknown pooler contender {contender!r}")


def cell_spec(spec: Dict[str, Any]) -> Dict[str, Any]:
    """The worker's throughput-cell spec for the pooler cell `spec` (variant -> workload)."""
    return {"workload": VARIANTS[spec["variant"]], "concurrency": spec["concurrency"],
            "warmup": spec["warmup"], "duration": spec["duration"], "params": spec["params"]}


# --- results -----------------------------------------------------------------------------


def verify(result: Dict[str, Any]) -> Dict[str, Any]:
    """A cell whose every query failed is an error that says the first failure."""
    if "error" in result or result.get("queries", 0) > 0 or not result.get("first_error"):
        return result
    kept = {k: result[k] for k in ("driver_version", "event_loop", "errors") if k in result}
    return {**kept, "error": f"every query failed: {result['first_error']}"}


def is_reference(contender: str) -> bool:
    """Whether the runner runs `contender` itself (pgbench) rather than in a worker."""
    return contender == POOLER_REFERENCE


def settings(variants: Sequence[str], warmup: float, duration: float, rounds: int,
             pgbouncer: Optional["PgbouncerBinary"]) -> Dict[str, Any]:
    """The scenario's settings as the report shows them.

    ``pgbouncer`` is what the binary says its version is (``'PgBouncer
    1.18.0'``; empty when there was none) and ``pgbouncer_settings`` are
    the settings of that version.
    """
    return {"variants": list(variants), "concurrency": CONCURRENCY,
            "pgbouncer": pgbouncer.banner if pgbouncer else "",
            "pgbouncer_settings": (pgbouncer_settings(pgbouncer.version) if pgbouncer
                                   else dict(PGBOUNCER_SETTINGS)),
            "warmup": warmup, "duration": duration, "rounds": rounds,
            "configurations": dict(CONFIGURATIONS)}

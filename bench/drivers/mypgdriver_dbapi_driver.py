"""mypgdriver's DB-API module (`mypgdriver.dbapi`, PEP 249), written as psycopg2 code is.

What an application moved from psycopg2 or psycopg 3 by changing its
import does: `conn = mypgdriver.dbapi.connect(...)`, `conn.autocommit =
True` (as the psycopg2 contender sets it), one `cur = conn.cursor()` and
per query `cur.execute(sql, params)` with `%s` placeholders (the
workload's `pyformat_sql`, as the psycopg contenders send it) and
`cur.fetchall()`; `cur.executemany` for batches; binary COPY through
`cur.copy("COPY ... FROM STDIN (FORMAT BINARY)")`, `set_types` with the
workload's column types and `write_row` per record (psycopg 3's shape, as
bench/drivers/psycopg_driver.py writes it); a named (server-side) cursor with `itersize` inside a transaction
ended by `conn.commit()` for streaming (psycopg2's shape).  The worker runs
it as it runs every sync driver: one thread per connection.

Until `mypgdriver.dbapi` exists, its cells are skipped with that reason.
"""
from __future__ import annotations

from typing import Any, Callable

from ..workloads import CURSOR_BATCH, Workload
from .base import ConnParams, Session, import_optional

Runner = Callable[[], int]

MISSING = "mypgdriver.dbapi does not exist yet (the DB-API module, issue 25)"


def _fetch(conn: Any, w: Workload) -> Runner:
    cur = conn.cursor()
    sql, args = w.pyformat_sql, w.args

    def run() -> int:
        cur.execute(sql, args)
        return len(cur.fetchall())

    return run


def _copy(conn: Any, w: Workload) -> Runner:
    cur = conn.cursor()
    sql = f"COPY {w.table} ({', '.join(w.columns)}) FROM STDIN (FORMAT BINARY)"
    types, records = list(w.column_types), w.records

    def run() -> int:
        with cur.copy(sql) as copy:
            copy.set_types(types)
            for record in records:
                copy.write_row(record)
        return len(records)

    return run


def text_copy(conn: Any, w: Workload) -> Runner:
    """The text-format COPY (`write_row` without types), for bench/copy_cpu.py's comparison."""
    cur = conn.cursor()
    sql = f"COPY {w.table} ({', '.join(w.columns)}) FROM STDIN"
    records = w.records

    def run() -> int:
        with cur.copy(sql) as copy:
            for record in records:
                copy.write_row(record)
        return len(records)

    return run


def _batch(conn: Any, w: Workload) -> Runner:
    cur = conn.cursor()
    sql, records = w.pyformat_sql, w.records

    def run() -> int:
        cur.executemany(sql, records)
        return len(records)

    return run


def _cursor(conn: Any, w: Workload) -> Runner:
    # A named cursor lives in a transaction: this session leaves autocommit,
    # and each iteration commits (psycopg2's shape).
    conn.autocommit = False
    sql, args = w.pyformat_sql, w.args

    def run() -> int:
        rows = 0
        with conn.cursor(name="bench_stream") as cur:
            cur.itersize = CURSOR_BATCH
            cur.execute(sql, args)
            for _ in cur:
                rows += 1
        conn.commit()
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


class MypgdriverDbapiDriver:
    name = "mypgdriver-dbapi"
    is_async = False

    def version(self) -> str:
        import mypgdriver

        return str(getattr(mypgdriver, "__version__", "unknown"))

    def open(self, params: ConnParams, workload: Workload) -> Session:
        dbapi = import_optional("mypgdriver.dbapi", MISSING)
        conn = dbapi.connect(**params)
        try:
            conn.autocommit = True
            run = _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            conn.close()
            raise
        return Session(run=run, close=conn.close)


DRIVER = MypgdriverDbapiDriver()

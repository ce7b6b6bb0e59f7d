"""psycopg 3, synchronous, in its fastest idiomatic form.

Tuple rows (the default row factory), server-side prepared statements
(`prepare=True`), binary COPY with `write_row`, `executemany` (which
pipelines on libpq 14+), and a named server cursor for streaming.

Cursors ask for binary results (`binary=True`): measured here at c=1,
text results made psycopg 2.5x slower on large_object, 1.5x on arrays and
1.3x on wide_row, and no workload faster, so text would understate the peer.
"""
from __future__ import annotations

from typing import Callable

from ..workloads import CURSOR_BATCH, Workload
from .base import ConnParams, Session

Runner = Callable[[], int]


def dbapi_params(params: ConnParams) -> ConnParams:
    """asyncpg-style keywords -> libpq's (`database` is `dbname` there)."""
    out = dict(params)
    if "database" in out:
        out["dbname"] = out.pop("database")
    return out


def copy_sql(w: Workload) -> str:
    return f"COPY {w.table} ({', '.join(w.columns)}) FROM STDIN (FORMAT BINARY)"


def _fetch(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, args = w.pyformat_sql, w.args

    def run() -> int:
        cur.execute(sql, args, prepare=True)
        return len(cur.fetchall())

    return run


def _copy(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, types, records = copy_sql(w), list(w.column_types), w.records

    def run() -> int:
        with cur.copy(sql) as copy:
            copy.set_types(types)
            for record in records:
                copy.write_row(record)
        return len(records)

    return run


def _batch(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, records = w.pyformat_sql, w.records

    def run() -> int:
        cur.executemany(sql, records)
        return len(records)

    return run


def _cursor(conn, w: Workload) -> Runner:
    sql, args = w.pyformat_sql, w.args

    def run() -> int:
        rows = 0
        with conn.transaction(), conn.cursor(name="bench_stream", binary=True) as cur:
            cur.itersize = CURSOR_BATCH
            cur.execute(sql, args)
            for _ in cur:
                rows += 1
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


class PsycopgDriver:
    is_async = False

    def __init__(self, name: str = "psycopg", dict_rows: bool = False) -> None:
        self.name = name
        # The dict-row cells: `row_factory=psycopg.rows.dict_row` on the
        # connection, as psycopg's documentation shows it; the same calls
        # otherwise.
        self.dict_rows = dict_rows

    def version(self) -> str:
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    def open(self, params: ConnParams, workload: Workload) -> Session:
        import psycopg

        conn = psycopg.connect(**dbapi_params(params), autocommit=True,
                               **self.connect_options())
        try:
            run = _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            conn.close()
            raise
        return Session(run=run, close=conn.close)

    def connect_options(self) -> dict[str, object]:
        """Keywords added to the connection: the row factory of the dict-row cells."""
        if not self.dict_rows:
            return {}
        from psycopg.rows import dict_row

        return {"row_factory": dict_row}


DRIVER = PsycopgDriver()
DICT_DRIVER = PsycopgDriver("psycopg-dict", dict_rows=True)

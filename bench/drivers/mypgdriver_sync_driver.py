"""mypgdriver's blocking API (`mypgdriver.sync`), run like psycopg and psycopg2.

The same calls as the asyncio contender (`asyncpg_driver`), without
`await`: `conn.prepare()` once and `stmt.fetch(*args)` per query,
`copy_records_to_table` for COPY, `executemany` for batches, and
`conn.cursor(prefetch=...)` inside `conn.transaction()` for streaming.
The worker runs it as it runs every sync driver: one thread per
connection (c=1 one thread, c=10 ten threads, one connection each).
Only the public API of `mypgdriver.sync` is used.
"""
from __future__ import annotations

from typing import Any, Callable

from ..workloads import CURSOR_BATCH, Workload
from .asyncpg_driver import ROWS_MISSING
from .base import ConnParams, Session, import_optional

Runner = Callable[[], int]


def _fetch(conn: Any, w: Workload) -> Runner:
    stmt = conn.prepare(w.sql)
    args = w.args

    def run() -> int:
        return len(stmt.fetch(*args))

    return run


def _copy(conn: Any, w: Workload) -> Runner:
    records, table, columns = w.records, w.table, list(w.columns)

    def run() -> int:
        conn.copy_records_to_table(table, records=records, columns=columns)
        return len(records)

    return run


def _batch(conn: Any, w: Workload) -> Runner:
    records, sql = w.records, w.sql

    def run() -> int:
        conn.executemany(sql, records)
        return len(records)

    return run


def _cursor(conn: Any, w: Workload) -> Runner:
    sql, args = w.sql, w.args

    def run() -> int:
        rows = 0
        with conn.transaction():
            for _ in conn.cursor(sql, *args, prefetch=CURSOR_BATCH):
                rows += 1
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


class MypgdriverSyncDriver:
    is_async = False

    def __init__(self, name: str = "mypgdriver-sync", dict_rows: bool = False) -> None:
        self.name = name
        # The dict-row cells: `row_factory=mypgdriver.rows.dict_row` on
        # connect, the same calls otherwise.
        self.dict_rows = dict_rows

    def version(self) -> str:
        import mypgdriver

        return str(getattr(mypgdriver, "__version__", "unknown"))

    def open(self, params: ConnParams, workload: Workload) -> Session:
        import mypgdriver.sync

        options = {}
        if self.dict_rows:
            options["row_factory"] = import_optional("mypgdriver.rows", ROWS_MISSING).dict_row
        conn = mypgdriver.sync.connect(**params, **options)
        try:
            run = _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            conn.close()
            raise
        return Session(run=run, close=conn.close)


DRIVER = MypgdriverSyncDriver()
DICT_DRIVER = MypgdriverSyncDriver("mypgdriver-sync-dict", dict_rows=True)

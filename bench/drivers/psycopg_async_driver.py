"""psycopg 3's AsyncConnection, with the same calls as the sync module."""
from __future__ import annotations

from typing import Awaitable, Callable

from ..workloads import CURSOR_BATCH, Workload
from .base import ConnParams, Session
from .psycopg_driver import copy_sql, dbapi_params

Runner = Callable[[], Awaitable[int]]


async def _fetch(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, args = w.pyformat_sql, w.args

    async def run() -> int:
        await cur.execute(sql, args, prepare=True)
        return len(await cur.fetchall())

    return run


async def _copy(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, types, records = copy_sql(w), list(w.column_types), w.records

    async def run() -> int:
        async with cur.copy(sql) as copy:
            copy.set_types(types)
            for record in records:
                await copy.write_row(record)
        return len(records)

    return run


async def _batch(conn, w: Workload) -> Runner:
    cur = conn.cursor(binary=True)
    sql, records = w.pyformat_sql, w.records

    async def run() -> int:
        await cur.executemany(sql, records)
        return len(records)

    return run


async def _cursor(conn, w: Workload) -> Runner:
    sql, args = w.pyformat_sql, w.args

    async def run() -> int:
        rows = 0
        async with conn.transaction(), conn.cursor(name="bench_stream", binary=True) as cur:
            cur.itersize = CURSOR_BATCH
            await cur.execute(sql, args)
            async for _ in cur:
                rows += 1
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


class PsycopgAsyncDriver:
    is_async = True

    def __init__(self, name: str = "psycopg-async", dict_rows: bool = False) -> None:
        self.name = name
        # The dict-row cells: `row_factory=psycopg.rows.dict_row` on the
        # connection, as psycopg's documentation shows it; the same calls
        # otherwise.
        self.dict_rows = dict_rows

    def version(self) -> str:
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    async def open(self, params: ConnParams, workload: Workload) -> Session:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(**dbapi_params(params), autocommit=True,
                                                     **self.connect_options())
        try:
            run = await _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            await conn.close()
            raise
        return Session(run=run, close=conn.close)

    def connect_options(self) -> dict[str, object]:
        """Keywords added to the connection: the row factory of the dict-row cells."""
        if not self.dict_rows:
            return {}
        from psycopg.rows import dict_row

        return {"row_factory": dict_row}


DRIVER = PsycopgAsyncDriver()
DICT_DRIVER = PsycopgAsyncDriver("psycopg-async-dict", dict_rows=True)

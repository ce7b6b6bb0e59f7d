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
    name = "psycopg-async"
    is_async = True

    def version(self) -> str:
        import psycopg

        return f"{psycopg.__version__} ({psycopg.pq.__impl__})"

    async def open(self, params: ConnParams, workload: Workload) -> Session:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(**dbapi_params(params), autocommit=True)
        try:
            run = await _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            await conn.close()
            raise
        return Session(run=run, close=conn.close)


DRIVER = PsycopgAsyncDriver()

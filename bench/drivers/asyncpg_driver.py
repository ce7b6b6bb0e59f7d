"""asyncpg in its fastest idiomatic form; also drives mypgdriver.

Prepared statements for queries, `copy_records_to_table` for COPY,
`executemany` for batches, `conn.cursor` inside a transaction for streaming.
mypgdriver promises asyncpg's API, so `mypgdriver_driver` is this class
with another module name: both run exactly the same calls.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Awaitable, Callable

from ..workloads import CURSOR_BATCH, Workload
from .base import ConnParams, Session

Runner = Callable[[], Awaitable[int]]


async def _fetch(conn, w: Workload) -> Runner:
    stmt = await conn.prepare(w.sql)
    args = w.args

    async def run() -> int:
        return len(await stmt.fetch(*args))

    return run


async def _copy(conn, w: Workload) -> Runner:
    records, table, columns = w.records, w.table, list(w.columns)

    async def run() -> int:
        await conn.copy_records_to_table(table, records=records, columns=columns)
        return len(records)

    return run


async def _batch(conn, w: Workload) -> Runner:
    records, sql = w.records, w.sql

    async def run() -> int:
        await conn.executemany(sql, records)
        return len(records)

    return run


async def _cursor(conn, w: Workload) -> Runner:
    sql, args = w.sql, w.args

    async def run() -> int:
        rows = 0
        async with conn.transaction():
            async for _ in conn.cursor(sql, *args, prefetch=CURSOR_BATCH):
                rows += 1
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


class AsyncpgStyleDriver:
    """A driver with asyncpg's API, imported by module name on first use."""

    is_async = True

    def __init__(self, name: str, module: str) -> None:
        self.name = name
        self._module_name = module

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(self._module_name)

    def version(self) -> str:
        return str(getattr(self.module, "__version__", "unknown"))

    async def open(self, params: ConnParams, workload: Workload) -> Session:
        conn = await self.module.connect(**params)
        try:
            run = await _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            await conn.close()
            raise
        return Session(run=run, close=conn.close)


DRIVER = AsyncpgStyleDriver("asyncpg", "asyncpg")

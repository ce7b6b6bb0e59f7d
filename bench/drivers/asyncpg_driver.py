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
from .base import ConnParams, Session, import_optional

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
        conn = await self.module.connect(**params, **self.connect_options())
        try:
            run = await _BUILDERS[workload.kind](conn, workload)
        except BaseException:
            await conn.close()
            raise
        return Session(run=run, close=conn.close)

    def connect_options(self) -> dict[str, object]:
        """Keywords added to `connect()`: none, the driver's defaults."""
        return {}


class MypgdriverDictRows(AsyncpgStyleDriver):
    """mypgdriver with `row_factory=mypgdriver.rows.dict_row` on connect (the dict-row cells).

    The same calls as the Record contender (`prepare` once, `stmt.fetch`),
    so the two differ in the rows they build and nothing else.  Skipped
    while `mypgdriver.rows` does not exist.
    """

    def connect_options(self) -> dict[str, object]:
        rows = import_optional(f"{self._module_name}.rows", ROWS_MISSING)
        return {"row_factory": rows.dict_row}


# Why the dict-row cells of mypgdriver are skipped until issue 25's row
# factories are merged.
ROWS_MISSING = "mypgdriver.rows does not exist yet (row factories, issue 25)"

DRIVER = AsyncpgStyleDriver("asyncpg", "asyncpg")

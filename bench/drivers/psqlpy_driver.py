"""psqlpy, the Rust-based asyncio driver (tokio-postgres underneath), as its documentation shows it.

One `psqlpy.connect(...)` per connection and per query
`await conn.execute(sql, [args])`: the statement is prepared on first use
and cached by the connection, psqlpy's default (`prepared=True`, which its
documentation recommends; `prepared=False` prepares and deallocates the
statement on every call, a round trip more).  Rows are read with
`result(as_tuple=True)`, its tuple rows, like the other contenders' tuples
and Records; `DICT_DRIVER` (the dict-row cells) reads them with `result()`,
psqlpy's default, a list of dicts.  COPY is `copy_records_to_table`
(binary COPY from Python values, the column types read from the table),
batches `execute_many` (one statement per record, in a transaction psqlpy
opens itself), streaming a server-side cursor in a transaction,
`fetch_number` rows per FETCH, read with `async for`.

psqlpy decodes no char(n) (bpchar) column: wide_row's is read through a
custom decoder, the way its documentation says to (`CUSTOM_DECODERS`).
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from ..workloads import CURSOR_BATCH, Workload
from .base import ConnParams, Session

Runner = Callable[[], Awaitable[int]]


def _text(data: bytes) -> str:
    return data.decode()


# psqlpy has no decoder for some types and raises "Cannot convert bpchar
# into Python type, please look at the custom_decoders functionality": its
# documented answer is a decoder per column, given to result().  Workload ->
# those decoders (wide_row's char(1) column).
CUSTOM_DECODERS: dict[str, dict[str, Callable[[bytes], Any]]] = {
    "wide_row": {"grade": _text},
}


async def _fetch(conn: Any, w: Workload, as_tuple: bool) -> Runner:
    sql, args = w.sql, list(w.args)
    decoders = CUSTOM_DECODERS.get(w.name)

    if as_tuple:
        async def run() -> int:
            return len((await conn.execute(sql, args)).result(as_tuple=True,
                                                              custom_decoders=decoders))
    else:
        async def run() -> int:
            return len((await conn.execute(sql, args)).result(custom_decoders=decoders))

    return run


async def _copy(conn: Any, w: Workload, as_tuple: bool) -> Runner:
    table, columns, records = w.table, list(w.columns), w.records

    async def run() -> int:
        await conn.copy_records_to_table(table_name=table, records=records, columns=columns)
        return len(records)

    return run


async def _batch(conn: Any, w: Workload, as_tuple: bool) -> Runner:
    # execute_many takes a list of lists: made once, as the other drivers'
    # records are made once.
    sql, records = w.sql, [list(record) for record in w.records]

    async def run() -> int:
        await conn.execute_many(sql, records)
        return len(records)

    return run


async def _cursor(conn: Any, w: Workload, as_tuple: bool) -> Runner:
    sql, args = w.sql, list(w.args)

    async def run() -> int:
        rows = 0
        async with conn.transaction() as transaction:
            cursor = transaction.cursor(sql, args, array_size=CURSOR_BATCH)
            async with cursor:
                async for result in cursor:
                    rows += len(result.result(as_tuple=True))
        return rows

    return run


_BUILDERS = {"fetch": _fetch, "copy": _copy, "batch": _batch, "cursor": _cursor}


def connect_keywords(params: ConnParams) -> dict[str, Any]:
    """The suite's asyncpg-style keywords in psqlpy's spelling."""
    keywords = {"host": params["host"], "port": params["port"], "username": params["user"],
                "db_name": params["database"]}
    if params.get("password") is not None:
        keywords["password"] = params["password"]
    return keywords


class PsqlpyDriver:
    is_async = True

    def __init__(self, name: str = "psqlpy", dict_rows: bool = False) -> None:
        self.name = name
        self.dict_rows = dict_rows

    def version(self) -> str:
        from importlib.metadata import version

        return version("psqlpy")

    async def open(self, params: ConnParams, workload: Workload) -> Session:
        import psqlpy

        conn = await psqlpy.connect(**connect_keywords(params))
        try:
            run = await _BUILDERS[workload.kind](conn, workload, not self.dict_rows)
        except BaseException:
            conn.close()
            raise

        async def close() -> None:
            conn.close()

        return Session(run=run, close=close)


DRIVER = PsqlpyDriver()
DICT_DRIVER = PsqlpyDriver("psqlpy-dict", dict_rows=True)

"""Row factories (mypgdriver.rows) as type checkers must see them, on both APIs.

tools/check_types.sh runs ``mypy --strict`` and pyright (strict) on this
file as on pooled.py, whose conventions it follows: ``assert_type(expr, T)``
lines the checkers must infer exactly, and mistakes each marked with the
ignore comment of the error both must report.  It is never run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import mypgdriver.sync
from mypgdriver import Connection, Pool, Record
from mypgdriver.cursor import CursorFactory
from mypgdriver.prepared import PreparedStatement
from mypgdriver.rows import (
    Column,
    ResultDescription,
    RowMaker,
    args_row,
    class_row,
    dict_row,
    kwargs_row,
    namedtuple_row,
    scalar_row,
    tuple_row,
)

if TYPE_CHECKING:
    # typing.assert_type is 3.11+; pyright checks for 3.9.
    from typing_extensions import assert_type


@dataclass
class Item:
    """What class_row makes."""

    id: int
    name: str


def make_item(id: int, name: str) -> Item:
    """What args_row and kwargs_row call."""
    return Item(id, name)


def count_columns(cursor: Any) -> RowMaker[int]:
    """A factory written for psycopg: reads ``cursor.description``."""
    columns: Sequence[Column] = cursor.description

    def make_row(values: Sequence[Any]) -> int:
        return len(columns) + len(values)
    return make_row


async def rows_on_the_asyncio_api(conn: Connection, pool: Pool) -> None:
    """Each factory gives its row type, per call, per statement, per cursor and on the pool."""
    assert_type(await conn.fetch('SELECT 1'), List[Record])
    assert_type(await conn.fetch('SELECT 1', row_factory=dict_row), List[Dict[str, Any]])
    assert_type(await conn.fetch('SELECT 1', row_factory=tuple_row), List[Tuple[Any, ...]])
    assert_type(await conn.fetch('SELECT 1', row_factory=scalar_row), List[Any])
    assert_type(await conn.fetch('SELECT 1', row_factory=namedtuple_row), List[NamedTuple])
    assert_type(await conn.fetch('SELECT 1', row_factory=class_row(Item)), List[Item])
    assert_type(await conn.fetch('SELECT 1', row_factory=args_row(make_item)), List[Item])
    assert_type(await conn.fetch('SELECT 1', row_factory=kwargs_row(make_item)), List[Item])
    assert_type(await conn.fetch('SELECT 1', row_factory=count_columns), List[int])
    assert_type(await conn.fetchrow('SELECT 1', row_factory=dict_row),
                Optional[Dict[str, Any]])
    assert_type(await conn.fetchmany('SELECT $1', [(1,)], row_factory=class_row(Item)),
                List[Item])
    assert_type(conn.cursor('SELECT 1', row_factory=dict_row), CursorFactory[Dict[str, Any]])
    stmt = await conn.prepare('SELECT 1', row_factory=class_row(Item))
    assert_type(stmt, PreparedStatement[Item])
    assert_type(await stmt.fetch(), List[Item])
    assert_type(await stmt.fetchrow(), Optional[Item])
    assert_type(await stmt.fetch(row_factory=dict_row), List[Dict[str, Any]])
    assert_type(await stmt.fetchmany([(1,)], row_factory=tuple_row), List[Tuple[Any, ...]])
    assert_type(stmt.cursor(row_factory=scalar_row), CursorFactory[Any])
    assert_type(await pool.fetch('SELECT 1', row_factory=dict_row), List[Dict[str, Any]])
    assert_type(await pool.fetchrow('SELECT 1', row_factory=class_row(Item)), Optional[Item])
    async with pool.acquire() as con:
        assert_type(await con.fetch('SELECT 1', row_factory=dict_row), List[Dict[str, Any]])
    description = ResultDescription((Column('id', 23, 4, -1),))
    assert_type(dict_row(description)([1]), Dict[str, Any])
    assert_type(description.description[0].type_code, int)


async def mistakes_with_row_factories(conn: Connection) -> None:
    """What both checkers must refuse."""
    await conn.fetch('SELECT 1', row_factory=42)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]
    await conn.fetch('SELECT 1', record_class=Record, row_factory=dict_row)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]


def rows_on_the_sync_api(conn: mypgdriver.sync.Connection, pool: mypgdriver.sync.Pool) -> None:
    """The same on mypgdriver.sync."""
    assert_type(conn.fetch('SELECT 1'), List[Record])
    assert_type(conn.fetch('SELECT 1', row_factory=dict_row), List[Dict[str, Any]])
    assert_type(conn.fetchrow('SELECT 1', row_factory=class_row(Item)), Optional[Item])
    assert_type(conn.fetchmany('SELECT $1', [(1,)], row_factory=tuple_row),
                List[Tuple[Any, ...]])
    assert_type(conn.cursor('SELECT 1', row_factory=dict_row),
                mypgdriver.sync.CursorFactory[Dict[str, Any]])
    # The factory is the cursor of `await conn.cursor(q)` without the await.
    assert_type(conn.cursor('SELECT 1').fetch(5), List[Record])
    assert_type(conn.cursor('SELECT 1', row_factory=dict_row).fetch(5, timeout=1.5),
                List[Dict[str, Any]])
    assert_type(conn.cursor('SELECT 1', row_factory=class_row(Item)).fetchrow(),
                Optional[Item])
    assert_type(conn.cursor('SELECT 1').forward(5), int)
    assert_type(conn.cursor('SELECT 1', row_factory=scalar_row).open().fetch(5), List[Any])
    with pool.acquire() as pooled:
        assert_type(pooled.cursor('SELECT 1', row_factory=tuple_row).fetch(2),
                    List[Tuple[Any, ...]])
        assert_type(pooled.cursor('SELECT 1').fetchrow(timeout=1), Optional[Record])
    stmt = conn.prepare('SELECT 1', row_factory=dict_row)
    assert_type(stmt, mypgdriver.sync.PreparedStatement[Dict[str, Any]])
    assert_type(stmt.fetch(), List[Dict[str, Any]])
    assert_type(stmt.fetch(row_factory=class_row(Item)), List[Item])
    assert_type(stmt.cursor().fetchrow(), Optional[Dict[str, Any]])
    assert_type(pool.fetch('SELECT 1', row_factory=scalar_row), List[Any])
    assert_type(pool.fetchrow('SELECT 1', row_factory=dict_row), Optional[Dict[str, Any]])


def mistakes_with_a_sync_cursor(conn: mypgdriver.sync.Connection) -> None:
    """What both checkers must refuse on the cursor a sync cursor() returns."""
    conn.cursor('SELECT 1').fetch()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    conn.cursor('SELECT 1').fetch('5')  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    conn.cursor('SELECT 1').fetchval()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]

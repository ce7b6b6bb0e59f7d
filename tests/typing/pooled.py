"""A pooled connection, and the pool's shortcuts, as type checkers must see them.

tools/check_types.sh runs ``mypy --strict`` and pyright (strict) on this
file as on app.py.  It is never run.  Two kinds of lines:

* ``assert_type(expr, T)``: the checker must infer exactly ``T`` (an ``Any``
  where a Record is meant fails it, unlike an annotated assignment).
* Mistakes that must be reported, each marked for both checkers::

      await conn.fetchvall('...')  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]

  mypy reads only ``# type: ignore[code]`` and pyright only ``# pyright:
  ignore[rule]`` (``enableTypeIgnoreComments = false`` in pyproject.toml).
  An ignore that suppresses nothing is itself an error for both
  (``--strict`` turns on mypy's ``warn_unused_ignores``; pyright has
  ``reportUnnecessaryTypeIgnoreComment = "error"``), and one naming another
  code than the error's does not hide it.  So a mistake that stops being
  reported, or is reported as something else, fails the check.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from mypgdriver import Connection, Pool, Record
from mypgdriver.cursor import CursorFactory
from mypgdriver.pool import PoolAcquireContext, PoolConnectionProxy
from mypgdriver.prepared import PreparedStatement
from mypgdriver.transaction import Transaction

if TYPE_CHECKING:
    # typing.assert_type is 3.11+; pyright checks for 3.9.
    from typing_extensions import assert_type


class ItemRecord(Record):
    """A record_class, to see that the row type follows it."""


async def correct_calls_on_a_pooled_connection(pool: Pool) -> None:
    """Connection's methods, with their overloads and return types, through the proxy."""
    assert_type(pool.acquire(), PoolAcquireContext)
    async with pool.acquire() as conn:
        assert_type(conn, PoolConnectionProxy)
        assert_type(await conn.execute('SELECT $1', 1, timeout=5), str)
        assert_type(await conn.fetch('SELECT 1'), List[Record])
        assert_type(await conn.fetch('SELECT 1', timeout=5, record_class=ItemRecord),
                    List[ItemRecord])
        assert_type(await conn.fetchrow('SELECT 1'), Optional[Record])
        assert_type(await conn.fetchrow('SELECT 1', record_class=ItemRecord),
                    Optional[ItemRecord])
        assert_type(await conn.fetchval('SELECT 1', column=0, timeout=5), Any)
        assert_type(await conn.fetchmany('SELECT $1', [(1,)], record_class=ItemRecord),
                    List[ItemRecord])
        assert_type(await conn.executemany('SELECT $1', [(1,)], timeout=5), None)
        assert_type(await conn.prepare('SELECT 1'), PreparedStatement[Record])
        assert_type(conn.cursor('SELECT 1', prefetch=10), CursorFactory[Record])
        assert_type(conn.transaction(isolation='serializable'), Transaction)
        assert_type(await conn.copy_records_to_table('t', records=[(1,)]), str)
        assert_type(conn.is_closed(), bool)
        assert_type(conn.is_in_transaction(), bool)
        assert_type(conn.get_server_pid(), int)
        plain: Connection = conn  # accepted wherever a Connection is
        del plain

    conn = await pool.acquire()
    assert_type(conn, PoolConnectionProxy)
    assert_type(await conn.fetchrow('SELECT 1'), Optional[Record])
    await pool.release(conn)


class AppConnection(Connection):
    """A connection_class with a method of its own."""

    async def item_count(self) -> int:
        """How many items there are."""
        count: int = await self.fetchval('SELECT count(*) FROM items')
        return count


async def methods_of_a_connection_class(pool: Pool) -> None:
    """Pool is not generic over connection_class: isinstance() narrows (true at run time)."""
    async with pool.acquire() as conn:
        await conn.item_count()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        assert isinstance(conn, AppConnection)
        assert_type(await conn.item_count(), int)
        assert_type(await conn.fetchrow('SELECT 1'), Optional[Record])
        await conn.item_cont()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


async def correct_calls_on_the_pool(pool: Pool) -> None:
    """The shortcuts take Connection's arguments and return its types."""
    assert_type(await pool.execute('SELECT $1', 1, timeout=5), str)
    assert_type(await pool.fetch('SELECT 1', record_class=ItemRecord), List[ItemRecord])
    assert_type(await pool.fetchrow('SELECT 1'), Optional[Record])
    assert_type(await pool.fetchval('SELECT 1', column='x'), Any)
    assert_type(await pool.fetchmany('SELECT $1', [(1,)]), List[Record])
    assert_type(await pool.executemany('SELECT $1', [(1,)]), None)
    assert_type(await pool.copy_from_table('t', output='t.csv', format='csv'), str)
    assert_type(await pool.copy_from_query('SELECT $1', 1, output='q.csv', header=True), str)
    assert_type(await pool.copy_to_table('t', source='t.csv', columns=['a'], where='a > 0'),
                str)
    assert_type(await pool.copy_records_to_table('t', records=[(1,)], timeout=5), str)


async def mistakes_on_a_pooled_connection(pool: Pool) -> None:
    """A misspelt method or keyword must be reported, as on a Connection."""
    async with pool.acquire() as conn:
        await conn.fetchvall('SELECT 1')  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        await conn.execute('SELECT 1', timout=5)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        await conn.fetch('SELECT 1', timout=5)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue]
        await conn.fetchrow('SELECT 1', recordclass=ItemRecord)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue]
        await conn.fetchval('SELECT 1', colum=1)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        await conn.copy_records_to_table('t', record=[(1,)])  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    conn = await pool.acquire()
    await conn.executemany_('SELECT $1', [(1,)])  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    await pool.release(conn)


async def mistakes_on_the_pool(pool: Pool) -> None:
    """The shortcuts refuse what Connection's methods refuse."""
    await pool.fetchvall('SELECT 1')  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    await pool.execute('SELECT 1', timout=5)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await pool.copy_to_table('t', sourc='t.csv')  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await pool.copy_from_query('SELECT 1', outptu='q.csv')  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]

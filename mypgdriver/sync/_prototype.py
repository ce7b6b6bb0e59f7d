"""The thin prototype facade over the sync glue (mypgdriver/sync/glue.pyx).

Not an API: the tests of the glue and bench/sync_prototype_*.py use it
until the public ``mypgdriver.sync`` replaces it.
"""
from __future__ import annotations

from typing import Any, Optional

from mypgdriver.sync.blocks import TransactionBlock
from mypgdriver.sync.glue import SyncGlue, open_connection

__all__ = ('Connection', 'SyncGlue', 'Transaction', 'connect', 'open_connection')


class Connection:
    """A blocking connection: the asyncio Connection, its calls driven by a SyncGlue."""

    def __init__(self, aconn: Any, glue: SyncGlue) -> None:
        self._aconn = aconn
        self._glue = glue
        self._run = glue.run

    def fetchval(self, query: str, *args: Any, **kw: Any) -> Any:
        return self._run(self._aconn.fetchval(query, *args, **kw))

    def fetchval_direct(self, query: str, *args: Any, timeout: Optional[float] = None) -> Any:
        # Measured variant: the Session's coroutine without Connection.fetchval's frame.
        rows = self._run(self._aconn._session.execute(query, args, 1, timeout, False, None))
        return rows[0][0] if rows else None

    def fetch(self, query: str, *args: Any, **kw: Any) -> list:
        return self._run(self._aconn.fetch(query, *args, **kw))

    def fetchrow(self, query: str, *args: Any, **kw: Any) -> Any:
        return self._run(self._aconn.fetchrow(query, *args, **kw))

    def execute(self, query: str, *args: Any, **kw: Any) -> str:
        return self._run(self._aconn.execute(query, *args, **kw))

    def executemany(self, command: str, args: Any, **kw: Any) -> None:
        return self._run(self._aconn.executemany(command, args, **kw))

    def copy_to_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_to_table(table_name, **kw))

    def copy_records_to_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_records_to_table(table_name, **kw))

    def copy_from_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_from_table(table_name, **kw))

    def copy_from_query(self, query: str, *args: Any, **kw: Any) -> str:
        return self._run(self._aconn.copy_from_query(query, *args, **kw))

    def transaction(self, **kw: Any) -> 'Transaction':
        return Transaction(self._run, self._aconn.transaction(**kw))

    def close(self) -> None:
        self._run(self._aconn.close())
        self._glue.run_ready()


class Transaction(TransactionBlock):
    """``with conn.transaction():`` over the asyncio Transaction."""


def connect(dsn: Optional[str] = None, **kw: Any) -> Connection:
    """The thin prototype Connection over open_connection()."""
    aconn, glue = open_connection(dsn, **kw)
    return Connection(aconn, glue)

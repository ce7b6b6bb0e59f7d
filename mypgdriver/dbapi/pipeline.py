"""Pipeline mode of the DB-API: ``with conn.pipeline():`` (psycopg 3's shape).

Inside the block a cursor's execute() queues its statement on the sync
connection's pipeline (mypgdriver/sync/pipeline.py, one core for every face)
and returns at once; the cursor's fetch*(), ``description``, ``rowcount``
and ``statusmessage`` wait for that statement's own answer.  Outside
autocommit, the BEGIN that PEP 249 opens a transaction with is queued too;
commit() and rollback() run in the pipeline and wait for their answer.
Leaving the block is a sync point (psycopg's: it waits for every answer and
raises the first error no fetch asked for); ``p.sync()`` makes one inside.
Blocks nest as in psycopg: an inner block's end is a sync point, the
outermost one's ends pipeline mode.  The rules are in docs/guide/pipeline.rst
and docs/guide/dbapi.rst.

The block holds the connection's DB-API lock: other threads' calls on the
connection wait for its end.
"""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Optional

from mypgdriver.exceptions import pep249

if TYPE_CHECKING:
    from mypgdriver.dbapi.link import ConnectionLink

__all__ = ('Pipeline',)


class Pipeline:
    """``with conn.pipeline() as p:`` on a DB-API connection (see the module docstring)."""

    __slots__ = ('_link', '_outermost', '_entered')

    def __init__(self, link: ConnectionLink) -> None:
        """Use :meth:`mypgdriver.dbapi.Connection.pipeline`."""
        self._link = link
        self._outermost = False
        self._entered = False

    def __enter__(self) -> Pipeline:
        if self._entered:
            raise pep249.ProgrammingError('a Pipeline can be entered only once')
        link = self._link
        link.lock.acquire()
        try:
            if link.is_closed():
                raise pep249.InterfaceError('the connection is closed')
            if link.pipeline is None:
                block = link.in_transaction()
                pipeline = link.connection.pipeline()
                pipeline.__enter__()
                link.pipeline = pipeline
                link.pipeline_block = block
                self._outermost = True
        except BaseException:
            link.lock.release()
            raise
        self._entered = True
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        link = self._link
        try:
            pipeline = link.pipeline
            if pipeline is None:
                return      # (the connection was closed inside the block)
            if self._outermost:
                try:
                    pipeline.__exit__(exc_type, exc, tb)
                finally:
                    link.pipeline = None
            elif exc_type is None:
                try:
                    pipeline.sync()
                finally:
                    link.synced()
        finally:
            link.lock.release()

    def sync(self) -> None:
        """A sync point: send what is queued, wait for every answer; raise the first error unread.

        The statements since the last sync point are committed then in
        autocommit mode (the server's implicit transaction); outside it
        they are in the transaction that the pipeline's BEGIN opened.
        """
        pipeline = self._link.pipeline
        if pipeline is None:
            raise pep249.ProgrammingError('the pipeline is not open: use it inside its with block')
        try:
            pipeline.sync()
        finally:
            self._link.synced()

"""Pipeline mode of the asyncio API: ``async with conn.pipeline() as p:`` (mypgdriver/core/pipeline.py).

The same core as the sync API's ``with conn.pipeline()``: inside the block,
``await p.fetchval(...)`` (and execute, fetch, fetchrow) queues the
statement and returns a :class:`PipelineResult` without waiting for the
server (it waits only for a statement to prepare, the first time its text
is seen); ``await result`` (or ``await result.result()``) waits for that
statement's own answer.  Leaving the block is a sync point.  Other tasks'
calls on the connection wait for the end of the block; the block's own
task may not call the connection itself meanwhile (InterfaceError).  The
rules are in docs/guide/pipeline.rst.
"""
from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generator, Optional, TypeVar, Union, overload

from mypgdriver import exceptions
from mypgdriver._typing import RecordT, RowT
from mypgdriver.core.pipeline import (
    SHAPE_ROW,
    SHAPE_ROWS,
    SHAPE_STATUS,
    SHAPE_VALUE,
    PendingResult,
    PipelineCore,
)
from mypgdriver.protocol.protocol import WANT_ROWS, WANT_STATUS
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows

if TYPE_CHECKING:
    from mypgdriver.core.session import Session

__all__ = ('Pipeline', 'PipelineResult')

T = TypeVar('T')


class PipelineResult(PendingResult[T]):
    """The pending result of one pipelined statement: ``await`` it for its value.

    ``await result`` waits for this statement's answer (sending what the
    pipeline holds) and gives its value, or raises its error (the server's,
    :exc:`~mypgdriver.exceptions.PipelineAborted`, TimeoutError).
    ``done()`` says whether the answer is in.
    """

    __slots__ = ()

    async def result(self) -> T:
        """This statement's value, waiting for its answer if needed; or its error."""
        if not self._fut.done():
            await self._core.wait_result(self)
        return self._value()

    def __await__(self) -> Generator[Any, None, T]:
        return self.result().__await__()


class Pipeline:
    """A pipeline on an asyncio Connection: ``async with conn.pipeline() as p:``."""

    __slots__ = ('_session', '_core')

    def __init__(self, session: Session) -> None:
        self._session = session
        self._core: Optional[PipelineCore] = None

    async def __aenter__(self) -> Pipeline:
        if self._core is not None:
            raise exceptions.InterfaceError('a Pipeline can be entered only once')
        session = self._session
        core = PipelineCore(session)
        await core.begin(session.deadline(session.command_timeout))
        self._core = core
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        core = self._core
        if core is None:
            return
        session = self._session
        # A cancelled task (or Ctrl-C) aborts the open segment; an exception
        # of the block's code syncs it, and is the one raised.
        abort = exc_type is not None and (not issubclass(exc_type, Exception)
                                          or issubclass(exc_type, asyncio.CancelledError))
        try:
            await core.close(abort, session.deadline(session.command_timeout))
        except Exception:
            if exc_type is None:
                raise
        finally:
            core.end()

    def _core_open(self) -> PipelineCore:
        core = self._core
        if core is None:
            raise exceptions.InterfaceError(
                'the pipeline is not open: use it inside its async with block')
        return core

    async def _send(self, query: str, args: tuple[Any, ...], limit: int,
                    timeout: Optional[float], want: int, rows_as: Any, shape: int,
                    column: Any) -> Any:
        core = self._core_open()
        result = core.send(PipelineResult, query, args, limit, timeout, want, rows_as, shape,
                           column)
        if result is None:
            result = await core.send_slow(PipelineResult, query, args, limit, timeout, want,
                                          rows_as, shape, column)
        return result

    async def execute(self, query: str, *args: object,
                      timeout: Optional[float] = None) -> PipelineResult[str]:
        """Queue a command; its result is the status tag (one statement per call)."""
        return await self._send(query, args, 0, timeout, WANT_STATUS,  # type: ignore[no-any-return]
                                Record, SHAPE_STATUS, 0)

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None,
                    row_factory: None = None) -> PipelineResult[list[Record]]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: type[RecordT],
                    row_factory: None = None) -> PipelineResult[list[RecordT]]: ...

    @overload
    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: None = None,
                    row_factory: RowFactory[RowT]) -> PipelineResult[list[RowT]]: ...

    async def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
                    record_class: Optional[type[Record]] = None,
                    row_factory: Optional[RowFactory[Any]] = None) -> PipelineResult[list[Any]]:
        """Queue a query; its result is every row."""
        rows_as = record_class if row_factory is None else choose_rows(record_class, row_factory)
        return await self._send(query, args, 0, timeout, WANT_ROWS,  # type: ignore[no-any-return]
                                rows_as, SHAPE_ROWS, 0)

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None,
                       row_factory: None = None) -> PipelineResult[Optional[Record]]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: type[RecordT],
                       row_factory: None = None) -> PipelineResult[Optional[RecordT]]: ...

    @overload
    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: None = None,
                       row_factory: RowFactory[RowT]) -> PipelineResult[Optional[RowT]]: ...

    async def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                       record_class: Optional[type[Record]] = None,
                       row_factory: Optional[RowFactory[Any]] = None) -> PipelineResult[Any]:
        """Queue a query; its result is the first row, or None."""
        rows_as = record_class if row_factory is None else choose_rows(record_class, row_factory)
        return await self._send(query, args, 1, timeout, WANT_ROWS,  # type: ignore[no-any-return]
                                rows_as, SHAPE_ROW, 0)

    async def fetchval(self, query: str, *args: object, column: Union[int, str] = 0,
                       timeout: Optional[float] = None) -> PipelineResult[Any]:
        """Queue a query; its result is one value of the first row (None if there are no rows)."""
        return await self._send(query, args, 1, timeout, WANT_ROWS,  # type: ignore[no-any-return]
                                Record, SHAPE_VALUE, column)

    async def sync(self) -> None:
        """A sync point: Sync, then wait for every answer so far; raise the first error unread."""
        session = self._session
        await self._core_open().sync(session.deadline(session.command_timeout))

    def is_open(self) -> bool:
        """True inside the block."""
        core = self._core
        return core is not None and core.open

"""Pipeline mode of the sync API: ``with conn.pipeline() as p:`` (mypgdriver/core/pipeline.py).

Inside the block, ``p.execute()``, ``p.fetch()``, ``p.fetchrow()`` and
``p.fetchval()`` take the arguments of the Connection's methods of the same
name and return at once a :class:`PipelineResult`, without waiting for the
server; ``result()`` waits for its own answer only.  Leaving the block is
a sync point: it waits for every answer and raises the first error that no
result() was asked for.  The rules (errors, transactions, what is refused)
are in docs/guide/pipeline.rst.

The block holds the connection (its CallRunner, hold()): another thread's
call waits for the end of the block.  A pipeline is used from the thread
that opened it.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Sequence, TypeVar, Union, overload

from mypgdriver import exceptions
from mypgdriver._typing import RecordT, RowT
from mypgdriver.core.pipeline import (
    SHAPE_RESULT,
    SHAPE_ROW,
    SHAPE_ROWS,
    SHAPE_STATUS,
    SHAPE_VALUE,
    PendingResult,
    PipelineCore,
)
from mypgdriver.core.result import Result
from mypgdriver.protocol.protocol import WANT_RESULT, WANT_ROWS, WANT_STATUS
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows
from mypgdriver.sync.driver.pipeline_block import PipelineBlock

__all__ = ('Pipeline', 'PipelineResult')

T = TypeVar('T')
_get_ident = threading.get_ident


class PipelineResult(PendingResult[T]):
    """The pending result of one pipelined statement.

    ``result()`` waits for this statement's answer (sending what the
    pipeline holds, with a Flush), then returns its value (the rows, the
    row, the value or the status tag, as the call that made it says) or
    raises its error: the server's, :exc:`~mypgdriver.exceptions.PipelineAborted`
    if the server skipped it after an earlier error, TimeoutError if its
    call's timeout (or the connection's ``command_timeout``) passed first.
    ``done()`` says whether the answer is in.  It may be asked again: the
    same value, or the same error.
    """

    __slots__ = ()

    def result(self) -> T:
        """This statement's value, waiting for its answer if needed; or its error."""
        if not self._fut.done():
            core = self._core
            core.face(core.wait_result(self))
        return self._value()


class Pipeline(PipelineBlock):
    """A pipeline on a sync Connection: ``with conn.pipeline() as p:`` (see the module docstring).

    Made by :meth:`mypgdriver.sync.Connection.pipeline`; entered once.  Its
    ``with`` block is compiled (driver/pipeline_block.pyx: Ctrl-C cannot
    leave the connection held).
    """

    __slots__ = ()

    def _core_here(self) -> PipelineCore:
        core = self._core
        if core is None or not core.open:
            raise exceptions.InterfaceError(
                'the pipeline is not open: use it inside its with block')
        if self._thread != _get_ident():
            raise exceptions.InterfaceError(
                'a pipeline is used by the thread that opened it')
        return core

    def _send(self, query: str, args: tuple[Any, ...], limit: int, timeout: Optional[float],
              want: int, rows_as: Any, shape: int, column: Any) -> Any:
        core = self._core
        if core is None or self._thread != _get_ident():
            core = self._core_here()
        result = core.send(PipelineResult, query, args, limit, timeout, want, rows_as, shape,
                           column)
        if result is None:
            result = self._run(core.send_slow(PipelineResult, query, args, limit, timeout, want,
                                              rows_as, shape, column))
        return result

    def execute(self, query: str, *args: object,
                timeout: Optional[float] = None) -> PipelineResult[str]:
        """Queue a command; its result is the status tag (e.g. ``'INSERT 0 1'``).

        One statement per call, even without arguments (the extended
        protocol: the server refuses several statements in one string).
        """
        return self._send(query, args, 0, timeout, WANT_STATUS, Record,  # type: ignore[no-any-return]
                          SHAPE_STATUS, 0)

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: None = None,
              row_factory: None = None) -> PipelineResult[list[Record]]: ...

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: type[RecordT],
              row_factory: None = None) -> PipelineResult[list[RecordT]]: ...

    @overload
    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: None = None,
              row_factory: RowFactory[RowT]) -> PipelineResult[list[RowT]]: ...

    def fetch(self, query: str, *args: object, timeout: Optional[float] = None,
              record_class: Optional[type[Record]] = None,
              row_factory: Optional[RowFactory[Any]] = None) -> PipelineResult[list[Any]]:
        """Queue a query; its result is every row (as :meth:`Connection.fetch` makes them)."""
        rows_as = record_class if row_factory is None else choose_rows(record_class, row_factory)
        return self._send(query, args, 0, timeout, WANT_ROWS, rows_as,  # type: ignore[no-any-return]
                          SHAPE_ROWS, 0)

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: None = None,
                 row_factory: None = None) -> PipelineResult[Optional[Record]]: ...

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: type[RecordT],
                 row_factory: None = None) -> PipelineResult[Optional[RecordT]]: ...

    @overload
    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: None = None,
                 row_factory: RowFactory[RowT]) -> PipelineResult[Optional[RowT]]: ...

    def fetchrow(self, query: str, *args: object, timeout: Optional[float] = None,
                 record_class: Optional[type[Record]] = None,
                 row_factory: Optional[RowFactory[Any]] = None) -> PipelineResult[Any]:
        """Queue a query; its result is the first row, or None."""
        rows_as = record_class if row_factory is None else choose_rows(record_class, row_factory)
        return self._send(query, args, 1, timeout, WANT_ROWS, rows_as,  # type: ignore[no-any-return]
                          SHAPE_ROW, 0)

    def fetchval(self, query: str, *args: object, column: Union[int, str] = 0,
                 timeout: Optional[float] = None) -> PipelineResult[Any]:
        """Queue a query; its result is one value of the first row (None if there are no rows)."""
        return self._send(query, args, 1, timeout, WANT_ROWS, Record,  # type: ignore[no-any-return]
                          SHAPE_VALUE, column)

    def submit(self, query: str, args: Sequence[Any] = (), rows_as: Any = None,
               timeout: Optional[float] = None) -> PipelineResult[Result]:
        """Queue `query` with `args`; its result is a :class:`~mypgdriver.core.result.Result`.

        The rows (as `rows_as` makes them: a Record class, a row factory of
        :mod:`mypgdriver.rows`, None for the connection's default), the
        status tag and the description of the run together: for faces
        built on the pipeline, such as a DB-API cursor, whose execute()
        queues and whose fetch*() reads ``result()``.  ``$n`` placeholders.
        """
        if rows_as is not None and not isinstance(rows_as, type):
            rows_as = choose_rows(None, rows_as)
        # (A tuple is kept as it is: a subclass may mean something, StrAsTextArguments.)
        args = args if isinstance(args, tuple) else tuple(args)
        return self._send(query, args, 0, timeout, WANT_RESULT,  # type: ignore[no-any-return]
                          rows_as, SHAPE_RESULT, 0)

    def sync(self) -> None:
        """A sync point: send Sync and wait for every answer so far; raise the first error unread.

        The statements since the last sync point are committed then (the
        server's implicit transaction), unless a BEGIN among them left a
        block open or one of them failed (then none of them is).  Bounded
        by the connection's ``command_timeout``.
        """
        core = self._core_here()
        session = self._session
        self._run(core.sync(session.deadline(session.command_timeout)))

    def is_open(self) -> bool:
        """True inside the block."""
        core = self._core
        return core is not None and core.open

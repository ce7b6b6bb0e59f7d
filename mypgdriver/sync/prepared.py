"""PreparedStatement of the sync API: the asyncio PreparedStatement, driven by the runner."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Iterable, Optional, overload

from mypgdriver._typing import ArgumentRow, OtherRowT, RowT
from mypgdriver.rows import RowFactory
from mypgdriver.sync.cursor import CursorFactory

if TYPE_CHECKING:
    from mypgdriver import prepared as async_prepared
    from mypgdriver.sync.runner import CallRunner
    from mypgdriver.types import Attribute, Type


class PreparedStatement(Generic[RowT]):
    """A prepared statement (see :meth:`Connection.prepare`).

    The same object as the asyncio API's
    (:class:`mypgdriver.prepared.PreparedStatement`) with blocking methods:
    the server statement stays valid while it is referenced, and is closed
    once it is not (unless the statement cache still holds it).
    """

    __slots__ = ('_runner', '_statement')

    def __init__(self, runner: CallRunner,
                 statement: async_prepared.PreparedStatement[RowT]) -> None:
        self._runner = runner
        self._statement = statement

    def __repr__(self) -> str:
        return repr(self._statement)

    # --- description ---

    def get_name(self) -> str:
        """The name of the statement on the server."""
        return self._statement.get_name()

    def get_query(self) -> str:
        """The text of the statement."""
        return self._statement.get_query()

    def get_statusmsg(self) -> Optional[str]:
        """The status tag of the last run, e.g. ``'SELECT 5'`` (None before the first run)."""
        return self._statement.get_statusmsg()

    def get_parameters(self) -> tuple[Type, ...]:
        """The type of each parameter, as a tuple of :class:`~mypgdriver.types.Type`."""
        return self._statement.get_parameters()

    def get_attributes(self) -> tuple[Attribute, ...]:
        """Name and type of each result column, as :class:`~mypgdriver.types.Attribute` tuples."""
        return self._statement.get_attributes()

    # --- running ---

    @overload
    def fetch(self, *args: object, timeout: Optional[float] = None,
              row_factory: None = None) -> list[RowT]: ...

    @overload
    def fetch(self, *args: object, timeout: Optional[float] = None,
              row_factory: RowFactory[OtherRowT]) -> list[OtherRowT]: ...

    def fetch(self, *args: object, timeout: Optional[float] = None,
              row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run the statement and return all rows (`row_factory`: this call's rows)."""
        if row_factory is None:
            return self._runner.run(self._statement.fetch(*args, timeout=timeout))
        return self._runner.run(self._statement.fetch(*args, timeout=timeout,
                                                      row_factory=row_factory))

    @overload
    def fetchrow(self, *args: object, timeout: Optional[float] = None,
                 row_factory: None = None) -> Optional[RowT]: ...

    @overload
    def fetchrow(self, *args: object, timeout: Optional[float] = None,
                 row_factory: RowFactory[OtherRowT]) -> Optional[OtherRowT]: ...

    def fetchrow(self, *args: object, timeout: Optional[float] = None,
                 row_factory: Optional[RowFactory[Any]] = None) -> Any:
        """Run the statement and return the first row, or None."""
        if row_factory is None:
            return self._runner.run(self._statement.fetchrow(*args, timeout=timeout))
        return self._runner.run(self._statement.fetchrow(*args, timeout=timeout,
                                                         row_factory=row_factory))

    def fetchval(self, *args: object, column: int | str = 0,
                 timeout: Optional[float] = None) -> Any:
        """Run the statement and return one value of the first row (None if no rows)."""
        return self._runner.run(self._statement.fetchval(*args, column=column, timeout=timeout))

    def executemany(self, args: Iterable[ArgumentRow], *,
                    timeout: Optional[float] = None) -> None:
        """Run the statement once per argument sequence, pipelined and atomic."""
        self._runner.run(self._statement.executemany(args, timeout=timeout))

    @overload
    def fetchmany(self, args: Iterable[ArgumentRow], *, timeout: Optional[float] = None,
                  row_factory: None = None) -> list[RowT]: ...

    @overload
    def fetchmany(self, args: Iterable[ArgumentRow], *, timeout: Optional[float] = None,
                  row_factory: RowFactory[OtherRowT]) -> list[OtherRowT]: ...

    def fetchmany(self, args: Iterable[ArgumentRow], *, timeout: Optional[float] = None,
                  row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run the statement once per argument sequence and return all rows."""
        return self._runner.run(self._statement.fetchmany(args, timeout=timeout,
                                                          row_factory=row_factory))

    @overload
    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: None = None) -> CursorFactory[RowT]: ...

    @overload
    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: RowFactory[OtherRowT]) -> CursorFactory[OtherRowT]: ...

    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: Optional[RowFactory[Any]] = None) -> CursorFactory[Any]:
        """A cursor over this statement's rows (see :meth:`Connection.cursor`)."""
        return CursorFactory(self._runner, self._statement.cursor(
            *args, prefetch=prefetch, timeout=timeout, row_factory=row_factory))

    def explain(self, *args: object, analyze: bool = False) -> Any:
        """The statement's execution plan (``EXPLAIN (FORMAT JSON, VERBOSE)``), parsed.

        With `analyze` the statement really runs (inside a transaction or
        savepoint that is rolled back afterwards).
        """
        return self._runner.run(self._statement.explain(*args, analyze=analyze))

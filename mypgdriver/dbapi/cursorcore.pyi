# Types of mypgdriver/dbapi/cursorcore.pyx as Python code sees it.
from typing import Any, Optional

from typing_extensions import Self, disjoint_base

from mypgdriver.core.result import Result
from mypgdriver.dbapi.cursor import Params
from mypgdriver.dbapi.link import ConnectionLink
from mypgdriver.rows import Column
from mypgdriver.sync.pipeline import PipelineResult

__all__ = ('CursorCore',)

@disjoint_base
class CursorCore:
    """The state and the per-statement calls of a DB-API cursor (see the module docstring)."""

    _conn: Any
    _link: ConnectionLink
    #: The default number of rows fetchmany() returns (PEP 249; 1 by default).
    arraysize: int
    row_factory_: Any
    _rows_as: Any
    _results: list[Result]
    _index: int
    _rows: Optional[list[Any]]
    _pos: int
    _description: Optional[tuple[Column, ...]]
    _rowcount: Optional[int]
    _status: Optional[str]
    _query: Optional[str]
    _closed: bool
    _pending: Optional[PipelineResult[Result]]
    def __init__(self, link: ConnectionLink) -> None: ...
    def execute(self, query: str, params: Optional[Params] = None, *,
                prepare: Optional[bool] = None) -> Self:
        """Run `query` with `params` bound on the server; returns the cursor itself."""
    def _select_result(self, result: Result) -> None: ...
    def _wait_pending(self) -> None:
        """If execute() ran inside a pipeline: wait for its answer and make it the current result."""
    def fetchone(self) -> Any:
        """The next row of the current result, or None at its end."""
    def fetchmany(self, size: Optional[int] = None) -> list[Any]:
        """The next `size` rows (default: :attr:`arraysize`); fewer at the end."""
    def fetchall(self) -> list[Any]:
        """All the remaining rows of the current result."""
    # execute() also calls _ran_as_script(), _queue(), _recover() and _no_result(),
    # which the subclass (cursor.py's Cursor) defines.

"""PreparedStatement of the sync API: the asyncio PreparedStatement, driven by the runner."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mypgdriver._typing import RowT
from mypgdriver.sync._prepared_methods import PreparedStatementMethods

if TYPE_CHECKING:
    from mypgdriver import prepared as async_prepared
    from mypgdriver.sync.driver.runner import CallRunner


class PreparedStatement(PreparedStatementMethods[RowT]):
    """A prepared statement (see :meth:`Connection.prepare`).

    The same object as the asyncio API's
    (:class:`mypgdriver.prepared.PreparedStatement`) with blocking methods:
    the server statement stays valid while it is referenced, and is closed
    once it is not (unless the statement cache still holds it).  Its
    methods are the asyncio statement's, written by tools/gen_sync.py into
    PreparedStatementMethods; this class holds only what differs.
    """

    __slots__ = ('_runner', '_statement')

    def __init__(self, runner: CallRunner,
                 statement: async_prepared.PreparedStatement[RowT]) -> None:
        self._runner = runner
        self._statement = statement

    def __repr__(self) -> str:
        return repr(self._statement)

"""Transaction of the sync API: ``with conn.transaction():`` over the asyncio Transaction."""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from mypgdriver import transaction as async_transaction
    from mypgdriver.sync.runner import CallRunner


class Transaction:
    """A transaction block, or a savepoint when nested (see :meth:`Connection.transaction`).

    As a ``with`` block it commits on normal exit and rolls back when the
    block raises, re-raising the exception; start(), commit() and rollback()
    do the same by hand.  The rules are the asyncio API's
    (:class:`mypgdriver.transaction.Transaction`): while a thread's block is
    open, calls from other threads on the connection raise InterfaceError,
    as calls from other tasks do in asyncio.
    """

    __slots__ = ('_runner', '_transaction')

    def __init__(self, runner: CallRunner, transaction: async_transaction.Transaction) -> None:
        self._runner = runner
        self._transaction = transaction

    def __repr__(self) -> str:
        return repr(self._transaction)

    def __enter__(self) -> None:
        self._runner.run(self._transaction.__aenter__())

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._runner.run(self._transaction.__aexit__(exc_type, exc, tb))

    def start(self) -> None:
        """Enter the transaction block (BEGIN) or savepoint."""
        self._runner.run(self._transaction.start())

    def commit(self) -> None:
        """Commit (or release the savepoint).  Not allowed inside ``with``."""
        self._runner.run(self._transaction.commit())

    def rollback(self) -> None:
        """Roll back (to the savepoint).  Not allowed inside ``with``."""
        self._runner.run(self._transaction.rollback())

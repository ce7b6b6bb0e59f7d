"""Transaction of the sync API: ``with conn.transaction():`` over the asyncio Transaction."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mypgdriver.sync._transaction_methods import TransactionMethods
from mypgdriver.sync.driver.blocks import TransactionBlock

if TYPE_CHECKING:
    from mypgdriver import transaction as async_transaction
    from mypgdriver.sync.driver.runner import CallRunner


class Transaction(TransactionMethods, TransactionBlock):
    """A transaction block, or a savepoint when nested (see :meth:`Connection.transaction`).

    As a ``with`` block it commits on normal exit and rolls back when the
    block raises, re-raising the exception; start(), commit() and rollback()
    do the same by hand.  The rules are the asyncio API's
    (:class:`mypgdriver.transaction.Transaction`): while a thread's block is
    open, calls from other threads on the connection raise InterfaceError,
    as calls from other tasks do in asyncio.  (``__enter__`` and
    ``__exit__`` are compiled, in blocks.pyx: Ctrl-C cannot land between
    the BEGIN and the block's start, nor before its end is sent.)
    start(), commit() and rollback() are the asyncio Transaction's, written
    by tools/gen_sync.py into TransactionMethods.
    """

    __slots__ = ()

    def __init__(self, runner: CallRunner, transaction: async_transaction.Transaction) -> None:
        super().__init__(runner.run, transaction)

    def __repr__(self) -> str:
        return repr(self._transaction)

"""The transaction-block owner: which Transaction opened the connection's block, and who may use it.

While a Transaction block is open, only the caller that opened it (a task,
or a thread through mypgdriver.sync) and the tasks it started inside the
block may use the connection: a call from anyone else would run inside a
transaction it knows nothing about, and be committed or rolled back with
it.  The server's own transaction status comes from ReadyForQuery (the
protocol keeps it); this object keeps what the server does not know: the
Transaction object that owns the block, its scope, whether the driver had
to roll it back behind the owner's back, and the cleanup of a block whose
statement was interrupted (Session.settle_transaction()), which runs before
anything else on the connection.
"""
from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Callable, Optional

from mypgdriver import exceptions

# The transaction blocks (their scope tokens) that the current context is
# inside.  A task copies the context it is created in, so tasks started
# inside an ``async with conn.transaction():`` block belong to the block.
_XACT_SCOPES: contextvars.ContextVar[tuple[BlockScope, ...]] = contextvars.ContextVar(
    'mypgdriver_transaction_scopes', default=())


class BlockScope:
    """The scope token of one transaction block: open until the block ends.

    A block may end in another context than the one it began in (SQLAlchemy
    rolls back in a task of its own, through asyncio.shield, when it closes
    a connection), which cannot take the token out of the first context's
    _XACT_SCOPES.  The token says itself that it is over, and the next block
    begun in that context drops it (BlockOwner.begin()).  Without that,
    one context that begins many blocks (asyncio.Runner runs every call in
    the same context) kept every token, and each begin, end and scope check
    scanned them all: measured 4 ms per transaction after 10,000 blocks.
    """

    __slots__ = ('open',)

    def __init__(self) -> None:
        self.open = True


class BlockOwner:
    """The open transaction block of one connection: its Transaction, scope and owner."""

    __slots__ = ('top', 'broken', 'cleanup', 'active', '_scope', '_owner', '_current_task')

    def __init__(self, current_task: Callable[[], Any]) -> None:
        #: The Transaction that opened the current block (None: no block).
        self.top: Any = None
        #: Why the driver rolled the open block back behind its owner's back.
        self.broken: Optional[str] = None
        #: The task finishing an interrupted block (begin_cleanup()), if any.
        self.cleanup: Optional[asyncio.Future[Any]] = None
        #: True while a block is open or being cleaned up: the one attribute
        #: the hot paths read before asking for more (Admission.needs_sync()).
        self.active = False
        self._scope: Optional[BlockScope] = None
        # The task (or sync caller) that opened the block.
        self._owner: Any = None
        self._current_task = current_task

    def begin(self, xact: Any) -> None:
        """`xact` opens a transaction block: from now on it belongs to the current caller's scope."""
        token = BlockScope()
        self.top = xact
        self.active = True
        self.broken = None
        self._scope = token
        self._owner = self._current_task()
        # (The tokens of blocks that ended elsewhere are dropped here.)
        scopes = tuple(t for t in _XACT_SCOPES.get() if t.open)
        _XACT_SCOPES.set(scopes + (token,))

    def end(self, xact: Any) -> None:
        """`xact`'s block is over (or belongs to an ended pool checkout); others may use the connection."""
        if xact is None or self.top is not xact:
            return
        token = self._scope
        self.top = None
        self.active = self.cleanup is not None
        self.broken = None
        self._scope = None
        self._owner = None
        if token is not None:
            token.open = False
        scopes = _XACT_SCOPES.get()
        if token in scopes:
            _XACT_SCOPES.set(tuple(t for t in scopes if t.open))

    def begin_cleanup(self, task: asyncio.Future[Any]) -> None:
        """`task` finishes an interrupted block; it runs before any other operation."""
        self.cleanup = task
        self.active = True

    def end_cleanup(self, task: asyncio.Future[Any]) -> None:
        """`task` (begun with begin_cleanup()) is done."""
        if self.cleanup is task:
            self.cleanup = None
            self.active = self.top is not None

    def check_scope(self) -> None:
        """Refuse a call from outside the open transaction block.

        Inside the block are the caller that opened it and every task it
        started while the block was open (they copy its context).  A call
        from any other task would run inside a transaction it knows nothing
        about (and be committed or rolled back with it), so it raises.  Once
        the opening task has finished (a test fixture's setup, a block
        started through wait_for() before Python 3.12), any task may go on.
        """
        token = self._scope
        if token is None or token in _XACT_SCOPES.get():
            return
        owner = self._owner
        if owner is None or owner.done():
            return
        raise exceptions.InterfaceError(
            'cannot perform operation: the connection is inside a transaction started by '
            'another task; use a pool (mypgdriver.create_pool) to give each task its own '
            'connection and run them concurrently, or await the end of that transaction first')

    def connection_lost(self) -> None:
        """The connection is gone: the open block's scope token is over.

        The block's end (end()) may never run then (a sync call interrupted
        by Ctrl-C closes the connection).  The token must not stay open in
        the caller's context, where each later block and scope check would
        scan it: a thread's context lives as long as the thread.  No caller
        is a stranger to a block on a lost connection: each is told the
        connection is gone, not whose block it was.
        """
        token = self._scope
        if token is not None:
            token.open = False
        self._scope = None
        self._owner = None

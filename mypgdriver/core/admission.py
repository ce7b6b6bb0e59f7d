"""Admission: when each caller of a connection may send, in call order.

Calls made concurrently by several tasks (or threads, through
mypgdriver.sync) are pipelined: each operation is sent as soon as the
protocol admits it (``protocol.may_send()``), else sync() waits for the
caller's turn; several are in flight at once and each caller gets its own
result.  What may hold a caller back, all decided here:

* the cleanup of an interrupted transaction block (BlockOwner.cleanup: it
  runs before anything else on the connection);
* the callers ahead of it (call order), a pending cancel, a full pipeline;
* a caller holding the connection alone (hold(): streams, reset(), the
  cleanup) or holding *the line* (enter_line(): a call that must wait for
  an answer before it can send its own statement, such as a prepare, keeps
  its place in call order across those round trips);
* a transaction block opened by another task (BlockOwner.check_scope()).

Statements queued for Close (StatementRegistry) are sent ahead of the
admitted caller's operation.  The protocol keeps the queue of turns itself
(``turn()``, ``took_turn()``); this object decides who asks for which turn,
waits for it within the caller's deadline, and owns the line.
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Optional

from mypgdriver import exceptions
from mypgdriver.core import waits
from mypgdriver.core.deadlines import NO_DEADLINE, Deadline

if TYPE_CHECKING:
    from mypgdriver.core.block_owner import BlockOwner
    from mypgdriver.core.statement_registry import StatementRegistry
    from mypgdriver.protocol.statement import StatementState


#: The error of a call on the connection itself made inside its pipeline's block.
PIPELINE_REFUSED = (
    'cannot run this call while a pipeline is open on the connection: inside the block '
    'only the pipeline\'s execute(), fetch(), fetchrow(), fetchval() and sync() are '
    'pipelined; COPY, transaction(), prepare(), cursors, executemany() and the '
    'connection\'s own query methods are refused (leave the pipeline block first)')


class Admission:
    """Turns, the line and the connection held alone, for one connection."""

    __slots__ = ('protocol', 'loop', 'blocks', 'statements', 'line_task', 'line_depth',
                 'current_task', 'pipeline_owner', '_check_open', '_is_closed')

    def __init__(self, protocol: Any, loop: Any, blocks: BlockOwner,
                 statements: StatementRegistry, current_task: Callable[[], Any],
                 check_open: Callable[[], None], is_closed: Callable[[], bool]) -> None:
        self.protocol = protocol
        self.loop = loop
        self.blocks = blocks
        self.statements = statements
        #: The caller holding the line (see enter_line()) and how many of its
        #: nested steps entered it.
        self.line_task: Any = None
        self.line_depth = 0
        #: Who "the caller" is: the current asyncio task, or the caller that
        #: a glue driving the coroutines without an event loop names.
        self.current_task = current_task
        #: The caller whose pipeline holds the connection (mypgdriver/core/pipeline.py).
        self.pipeline_owner: Any = None
        self._check_open = check_open
        self._is_closed = is_closed

    def needs_sync(self) -> bool:
        """True unless an operation may be sent right now (see sync())."""
        blocks = self.blocks
        if blocks.active:
            blocks.check_scope()
            if blocks.cleanup is not None:
                return True
        if self.statements.to_close:
            return True
        proto = self.protocol
        if proto.may_send():
            return False
        if proto.line_held and self.holds_line():
            return not proto.may_send_in_line()
        return True

    async def sync(self, deadline: Deadline, exclusive: bool = False) -> Optional[float]:
        """Wait until this caller may send its next operation; return the time left of `deadline`.

        Waits for the cleanup of an interrupted transaction block, then for
        the caller's turn (call order; a pending cancel, a caller holding the
        line or the connection alone, or a full pipeline make it wait), then
        sends the Close of statements that left the cache ahead of the
        caller's operation, all before the call's `deadline`.  With `exclusive` the
        caller holds the connection alone once this returns: it must call
        release().  The caller holding the line (enter_line()) waits only for
        what it must: it is ahead of every other caller.
        """
        blocks = self.blocks
        if blocks.active:
            blocks.check_scope()
        cleanup = blocks.cleanup
        if cleanup is not None:
            try:
                await self._wait_for_cleanup(cleanup, deadline)
            except Exception:
                if not cleanup.done():
                    raise       # our own timeout
                # The cleanup failed and closed the connection: check_open()
                # below says so.
        self._check_open()
        await self.take_turn(exclusive, self.line_task is not None and self.holds_line(),
                             deadline)
        try:
            if (self.statements.to_close and not exclusive
                    and self.protocol.has_spare_slot()):
                self._send_closes()
            return deadline.left()
        except BaseException:
            if exclusive:
                self.release()
            raise

    async def hold(self, deadline: Deadline) -> Optional[float]:
        """Wait until the connection can be held alone (nothing in flight); the time left.

        Every operation sent until release() must be sent as exclusive.
        """
        return await self.sync(deadline, exclusive=True)

    def release(self) -> None:
        """End hold(): queued callers may send again."""
        self.protocol.release_exclusive()

    @contextlib.asynccontextmanager
    async def held(self, deadline: Deadline,
                   keeping: Optional[StatementState] = None) -> AsyncIterator[Optional[float]]:
        """``async with admission.held(deadline) as left:`` hold() ... release().

        The one hold/release pair of the callers that need the connection
        alone (COPY, executemany's stream, reset(), a query that runs alone).
        `keeping`: the statement the caller will run, which an eviction by
        the callers ahead of it must not close meanwhile (its Close is sent
        after it ran).
        """
        if keeping is None:
            left = await self.sync(deadline, exclusive=True)
        else:
            keeping.refs += 1
            try:
                left = await self.sync(deadline, exclusive=True)
            finally:
                self.statements.detach(keeping)
        try:
            yield left
        finally:
            self.protocol.release_exclusive()

    async def take_turn(self, exclusive: bool, bypass: bool, deadline: Deadline) -> None:
        """Wait for the protocol to admit the caller (queued in call order) until `deadline`.

        `bypass`: the line holder or the cleanup of an interrupted block,
        queued first and passing the held line.
        """
        proto = self.protocol
        if proto.pipeline_on and self.pipeline_owner is not None and (
                self.pipeline_owner is self.current_task()):
            # Its turn would come at the end of the block it runs in.
            raise exceptions.InterfaceError(PIPELINE_REFUSED)
        first = bypass
        while True:
            fut = proto.turn(exclusive, first, bypass)
            if fut is None:
                return
            try:
                if deadline is NO_DEADLINE:
                    await fut
                else:
                    await self._await_turn(fut, deadline)
            except BaseException:
                proto.give_back_turn(fut, exclusive)
                raise
            if proto.took_turn(exclusive, bypass):
                return
            # Woken, but a caller ahead of us took the line before we could
            # send: wait again, at the head of the queue.
            first = True

    async def _await_turn(self, fut: asyncio.Future[Any], deadline: Deadline) -> None:
        # Awaited directly (a timer instead of wait_for()): callers woken
        # together resume in the order they were woken, which is call order.
        left = deadline.left()
        expired: list[bool] = []
        handle = self.loop.call_later(left, _expire_turn, fut, expired)
        try:
            await fut
        except asyncio.CancelledError:
            if not expired:
                raise
            raise deadline.error(
                'call', 'it was still waiting for its turn behind the calls '
                'made before it on this connection, and nothing was sent') from None
        finally:
            handle.cancel()

    async def _wait_for_cleanup(self, cleanup: asyncio.Future[Any],
                                deadline: Deadline) -> None:
        if deadline is NO_DEADLINE:
            await waits.wait_shielded(self.loop, cleanup, None)
            return
        # A stalled server must not make the next call hang past its own
        # timeout; the cleanup goes on in the background.
        try:
            await waits.wait_shielded(self.loop, cleanup, deadline.left())
        except asyncio.TimeoutError:
            raise deadline.error(
                'call', 'it was still waiting for an interrupted transaction '
                'block to be rolled back, and nothing was sent') from None

    def _send_closes(self) -> None:
        # Sent ahead of the caller's operation, not waited for: a Close
        # cannot fail for a statement we created (closing a missing one is
        # not an error either), and the connection stays in sync regardless.
        names = self.statements.take_closes()
        if not names or self._is_closed():
            return
        self.protocol.close_statements(names, None).add_done_callback(_retrieve)

    # --- the line: call order across round trips ----------------------------------------------

    def holds_line(self) -> bool:
        """True if the current caller holds the line (enter_line())."""
        task = self.line_task
        return task is not None and task is self.current_task()

    async def enter_line(self, deadline: Deadline) -> Optional[float]:
        """Take the caller's turn and keep it until leave_line(); the time left of `deadline`.

        For a call that must wait for an answer before it can send its own
        statement (a prepare, type introspection, a re-prepare): from its
        first message to its last nobody else sends, so it keeps its place in
        call order.  Re-entrant within the caller; every enter_line() is
        paired with a leave_line().
        """
        if self.line_task is not None and self.holds_line():
            self.line_depth += 1
            return deadline.left()
        if self.needs_sync():
            timeout = await self.sync(deadline)
        else:
            timeout = deadline.left()
        # Admitted: nothing is awaited between here and the caller's send.
        self.take_line_now()
        return timeout

    def take_line_now(self) -> None:
        """Hold the line from here: the caller is admitted, or nothing was sent since its own operation."""
        if self.line_task is not None and self.holds_line():
            self.line_depth += 1
            return
        self.line_task = self.current_task()
        self.line_depth = 1
        self.protocol.hold_line()

    @contextlib.asynccontextmanager
    async def line(self, deadline: Deadline = NO_DEADLINE) -> AsyncIterator[Optional[float]]:
        """``async with admission.line(deadline) as left:`` enter_line() ... leave_line()."""
        left = await self.enter_line(deadline)
        try:
            yield left
        finally:
            self.leave_line()

    def leave_line(self) -> None:
        """The line holder sent its last message (or gave up): the callers behind it may send."""
        self.line_depth -= 1
        if self.line_depth <= 0:
            self.line_depth = 0
            self.line_task = None
            self.protocol.release_line()

    def may_run_again(self, error: BaseException) -> bool:
        """True if the operation that failed with `error` was the last one sent (and nobody holds the line).

        A call whose statement failed before it ran (a schema change, a
        dropped statement) is run again only then, holding the line from
        here (take_line_now()): otherwise later calls already ran, and
        running it now would put it behind them.  (Asked of the protocol on
        this error path, so the hot path records nothing.)
        """
        proto = self.protocol
        return (proto.last_sent_failed_with(error) and not proto.line_held
                and not self._is_closed())


def _expire_turn(fut: asyncio.Future[Any], expired: list[bool]) -> None:
    """A turn waited for past its deadline: wake the waiter, which raises TimeoutError."""
    if not fut.done():
        expired.append(True)
        fut.cancel()


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Done callback of an operation nobody awaits: its outcome is retrieved."""
    if not fut.cancelled():
        fut.exception()

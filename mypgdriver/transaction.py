"""Transaction: a transaction block, or a savepoint when nested."""
from __future__ import annotations

import asyncio
import enum
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional

from mypgdriver import exceptions
from mypgdriver.core import waits

if TYPE_CHECKING:
    from mypgdriver.connection import Connection
    from mypgdriver.core.deadlines import Deadline
    from mypgdriver.core.session import Session

ISOLATION_LEVELS = {
    'read_committed': 'READ COMMITTED',
    'read_uncommitted': 'READ UNCOMMITTED',
    'repeatable_read': 'REPEATABLE READ',
    'serializable': 'SERIALIZABLE',
}

# SHOW transaction_isolation -> our spelling, to compare nested levels.
_ISOLATION_BY_SETTING = {sql.lower(): name for name, sql in ISOLATION_LEVELS.items()}


class TransactionState(enum.Enum):
    """Where a :class:`Transaction` is in its life."""

    NEW = 0
    STARTED = 1
    COMMITTED = 2
    ROLLEDBACK = 3
    FAILED = 4


class Transaction:
    """A transaction block (see :meth:`Connection.transaction`).

    The outermost Transaction of a connection runs BEGIN / COMMIT /
    ROLLBACK; one started while another is active is a savepoint
    (SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO SAVEPOINT).  As an
    ``async with`` block it commits on normal exit and rolls back when the
    block raises, re-raising the exception.

    A block is never left open behind its owner: when one of its statements
    is interrupted (task cancelled, timeout, connection trouble), the driver
    waits for the interrupted statement's outcome from the server and ends
    the block there (ROLLBACK, or ROLLBACK TO SAVEPOINT) before the
    exception reaches the caller; if that cannot be done within a few
    seconds, the connection is closed.  An interrupted COMMIT says in its
    exception's message whether the transaction was committed.
    """

    __slots__ = ('_connection', '_session', '_checkout', '_isolation', '_readonly',
                 '_deferrable', '_state', '_nested', '_savepoint', '_managed')

    def __init__(self, connection: Connection, session: Session, isolation: Optional[str],
                 readonly: bool, deferrable: bool) -> None:
        if isolation and isolation not in ISOLATION_LEVELS:
            raise ValueError(
                f'isolation is expected to be either of {set(ISOLATION_LEVELS)}, '
                f'got {isolation!r}')
        self._connection = connection
        self._session = session
        self._checkout = session.checkout
        self._isolation = isolation
        self._readonly = readonly
        self._deferrable = deferrable
        self._state = TransactionState.NEW
        self._nested = False
        self._savepoint: Optional[str] = None
        self._managed = False

    def __repr__(self) -> str:
        attrs = [f'state:{self._state.name.lower()}']
        if self._isolation is not None:
            attrs.append(self._isolation)
        if self._readonly:
            attrs.append('readonly')
        if self._deferrable:
            attrs.append('deferrable')
        return f'<{type(self).__name__} {" ".join(attrs)} {id(self):#x}>'

    async def __aenter__(self) -> None:
        if self._managed:
            raise exceptions.InterfaceError(
                'cannot enter context: already in an `async with` block')
        self._managed = True
        try:
            await self.start()
        except BaseException:
            self._managed = False
            raise

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        try:
            session = self._session
            if self._checkout != session.checkout and exc_type is not None:
                # The pool checkout this block belonged to has ended (say, an
                # async generator left unfinished inside the block, closed
                # by its finalizer after the release): the pool's reset
                # rolled the block back, and the connection may be someone
                # else's by now.  Nothing to do, and nothing to report over
                # the exception leaving the block.  A normal exit still
                # raises below: the commit it asks for cannot happen.
                if self._state is TransactionState.STARTED:
                    self._state = TransactionState.ROLLEDBACK
                return
            if session.is_closed() and self._state is TransactionState.STARTED:
                self._forget()
                self._state = TransactionState.FAILED
                if exc_type is not None:
                    # The block's own error (often the lost connection) says
                    # more than "connection is closed" would: let it through.
                    return
            if self._state is not TransactionState.STARTED and exc_type is not None:
                # start() failed or the block already ended (e.g. settled
                # after an interruption): nothing left to do.
                return
            self._check_usable('__aexit__')
            if exc_type is not None:
                await self._rollback()
            else:
                await self._commit()
        finally:
            self._managed = False

    async def start(self) -> None:
        """Enter the transaction block (BEGIN) or savepoint."""
        self._check_usable('start')
        self._check_not_finished('start')
        if self._state is TransactionState.STARTED:
            raise exceptions.InterfaceError('cannot start; the transaction is already started')
        session = self._session
        # One deadline for every step (the wait for its turn, SHOW, BEGIN);
        # in line from the start: calls made after start() run after BEGIN.
        deadline = session.deadline(session.resolve_timeout(None))
        # (The transaction status is known only once an interrupted
        # operation has drained: enter_line() waits for that.)
        async with session.admission.line(deadline):
            await self._start_in_line(deadline)
        self._state = TransactionState.STARTED

    async def _start_in_line(self, deadline: Deadline) -> None:
        session = self._session
        top = session.blocks.top
        if top is None:
            if session.is_in_transaction():
                raise exceptions.InterfaceError(
                    'cannot use Connection.transaction() in a manually started transaction')
            # From here on, only this task and the tasks it starts inside
            # the block may use the connection (pipelined calls from other
            # tasks would otherwise slip into the transaction).
            session.blocks.begin(self)
        else:
            session.blocks.check_scope()
            if self._isolation:
                outer = top._isolation
                if outer is None:
                    setting = await self._connection.fetchval(
                        'SHOW transaction_isolation', timeout=deadline.left())
                    outer = _ISOLATION_BY_SETTING[setting]
                if self._isolation != outer:
                    raise exceptions.InterfaceError(
                        f'nested transaction has a different isolation level: '
                        f'current {self._isolation!r} != outer {outer!r}')
            self._nested = True

        if self._nested:
            self._savepoint = session.new_savepoint_name()
            query = f'SAVEPOINT {self._savepoint};'
        else:
            query = 'BEGIN'
            if self._isolation:
                query += f' ISOLATION LEVEL {ISOLATION_LEVELS[self._isolation]}'
            if self._readonly:
                query += ' READ ONLY'
            if self._deferrable:
                query += ' DEFERRABLE'
            query += ';'
        await self._run(query, 'start', deadline.left())

    async def commit(self) -> None:
        """Commit (or release the savepoint).  Not allowed inside ``async with``."""
        self._check_usable('commit')
        if self._managed:
            raise exceptions.InterfaceError(
                'cannot manually commit from within an `async with` block')
        await self._commit()

    async def rollback(self) -> None:
        """Roll back (to the savepoint).  Not allowed inside ``async with``."""
        self._check_usable('rollback')
        if self._managed:
            raise exceptions.InterfaceError(
                'cannot manually rollback from within an `async with` block')
        await self._rollback()

    async def _commit(self) -> None:
        self._check_started('commit')
        broken = self._session.blocks.broken
        if broken is not None:
            # The driver had to roll the whole block back (an interrupted
            # savepoint could not be undone alone): committing now would
            # silently commit nothing, or the statements that ran since in
            # autocommit mode.
            self._state = TransactionState.FAILED
            self._forget()
            raise exceptions.InterfaceError(
                f'cannot commit: the transaction was rolled back ({broken})')
        query = f'RELEASE SAVEPOINT {self._savepoint};' if self._nested else 'COMMIT;'
        # A failing COMMIT (e.g. a deferred constraint) ends the transaction
        # on the server all the same: nothing stays open.
        await self._run(query, 'commit')
        self._finished(TransactionState.COMMITTED)

    async def _rollback(self) -> None:
        self._check_started('rollback')
        if self._session.blocks.broken is not None and not self._nested:
            # Already rolled back by the driver; nothing is open any more.
            self._finished(TransactionState.ROLLEDBACK)
            return
        query = f'ROLLBACK TO {self._savepoint};' if self._nested else 'ROLLBACK;'
        await self._run(query, 'rollback')
        self._finished(TransactionState.ROLLEDBACK)

    def _finished(self, state: TransactionState) -> None:
        self._state = state
        self._forget()

    def _forget(self) -> None:
        self._session.blocks.end(self)

    # --- one statement of the block, and what happens when it is interrupted ---

    async def _run(self, query: str, step: str, timeout: Optional[float] = None) -> None:
        session = self._session
        before = session.protocol.op_seq
        try:
            # Through execute(), as in asyncpg: a connection_class that
            # overrides it sees the block's statements too.
            if timeout is None:
                await self._connection.execute(query)
            else:
                await self._connection.execute(query, timeout=timeout)
        except exceptions.PostgresError:
            # The server answered: its own rules say what is open now (a
            # failed COMMIT or BEGIN leaves no transaction; a failed
            # savepoint statement leaves the outer block to roll back).
            self._state = TransactionState.FAILED
            if not self._nested:
                self._forget()
            raise
        except BaseException as exc:
            # Interrupted (cancelled, timed out) or failed on our side: the
            # statement may or may not have run.  Find out, and end the
            # block on the server, before the caller hears about it.
            self._state = TransactionState.FAILED
            await self._settle(exc, step, before)
            raise

    async def _settle(self, exc: BaseException, step: str, before: int) -> None:
        session = self._session
        savepoint = self._savepoint
        nested = self._nested
        expected = {'start': 'SAVEPOINT' if nested else 'BEGIN',
                    'commit': 'RELEASE' if nested else 'COMMIT',
                    'rollback': 'ROLLBACK'}[step]

        def follow_up(status: str, ours: Optional[str]) -> Optional[str]:
            ran = ours == expected
            if not nested:
                return None if status == 'I' else 'ROLLBACK'
            if status == 'I':
                return None
            if step == 'start':
                return f'RELEASE SAVEPOINT {savepoint}' if ran else None
            if step == 'commit' and not ran:
                return f'ROLLBACK TO SAVEPOINT {savepoint}; RELEASE SAVEPOINT {savepoint}'
            if step == 'rollback' and not ran:
                return f'ROLLBACK TO SAVEPOINT {savepoint}'
            return None

        cleanup = session.settle_transaction(not nested, before, follow_up)
        if isinstance(exc, asyncio.TimeoutError):
            # The call's time is up: it does not wait for the cleanup, which
            # goes on in the background and runs before anything else on the
            # connection (ending the block on the server, or closing the
            # connection if its outcome cannot be known).
            if not nested:
                self._forget()
            if step == 'commit':
                _explain(exc, f'{expected} timed out and its outcome is not known yet: the '
                         f'statement is being cancelled and the block ended on the server in '
                         f'the background (the connection is closed if the outcome cannot be '
                         f'established)')
            return
        outcome = None
        try:
            outcome = await waits.wait_shielded(self._session.loop, cleanup, None)
        except asyncio.CancelledError:
            if not cleanup.done():
                # Cancelled again while cleaning up: the cleanup goes on in
                # the background and runs before anything else.
                self._forget()
                raise
        except BaseException:
            pass    # the connection was closed: nothing is open any more
        if not nested:
            self._forget()
        if step == 'commit':
            _explain(exc, self._commit_outcome(outcome, expected, before))

    def _commit_outcome(self, outcome: Any, expected: str, before: int) -> str:
        done = 'the savepoint was released' if self._nested else 'the transaction was committed'
        undone = ('the savepoint was rolled back' if self._nested
                  else 'the transaction was rolled back')
        unknown = (f'{expected} was interrupted and its outcome is not known: '
                   f'{"the savepoint may or may not have been released" if self._nested else "the transaction may or may not have been committed"}')
        if outcome is None:
            # The connection was closed while settling: a COMMIT that was
            # sent may have been carried out before the end.
            if self._session.protocol.op_seq > before and not self._nested:
                return unknown + ' (the connection was closed)'
            return f'{expected} was interrupted and the connection was closed: {undone}'
        if outcome.last:
            if outcome.tag == expected:
                return f'{expected} was interrupted, but completed: {done}'
            # It failed (the server ends a transaction whose COMMIT fails),
            # or answered ROLLBACK (the transaction had failed before).
            return f'{expected} was interrupted: {undone}'
        if outcome.follow_up is not None or not outcome.sent:
            return f'{expected} was interrupted: {undone}'
        # Something else ran after it (a connection_class's execute()): the
        # server's status alone cannot tell a commit from a rollback.
        return unknown

    # --- checks ---

    def _check_usable(self, method: str) -> None:
        self._session.check_handle(self._checkout, 'Transaction', method)

    def _check_not_finished(self, operation: str) -> None:
        if self._state is TransactionState.COMMITTED:
            raise exceptions.InterfaceError(
                f'cannot {operation}; the transaction is already committed')
        if self._state is TransactionState.ROLLEDBACK:
            raise exceptions.InterfaceError(
                f'cannot {operation}; the transaction is already rolled back')
        if self._state is TransactionState.FAILED:
            raise exceptions.InterfaceError(
                f'cannot {operation}; the transaction is in error state')

    def _check_started(self, operation: str) -> None:
        if self._state is TransactionState.NEW:
            raise exceptions.InterfaceError(
                f'cannot {operation}; the transaction is not yet started')
        self._check_not_finished(operation)


def _explain(exc: BaseException, text: str) -> None:
    """Put what happened to the transaction into the caller's exception."""
    if isinstance(exc, (asyncio.CancelledError, asyncio.TimeoutError)):
        # Their message is free (usually empty): it becomes the outcome.
        exc.args = (text,)
    if sys.version_info >= (3, 11):
        exc.add_note(text)

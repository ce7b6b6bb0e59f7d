"""Transaction: a transaction block, or a savepoint when nested."""
from __future__ import annotations

import enum
from typing import Optional

from mypgdriver import exceptions

ISOLATION_LEVELS = {
    'read_committed': 'READ COMMITTED',
    'read_uncommitted': 'READ UNCOMMITTED',
    'repeatable_read': 'REPEATABLE READ',
    'serializable': 'SERIALIZABLE',
}

# SHOW transaction_isolation -> our spelling, to compare nested levels.
_ISOLATION_BY_SETTING = {sql.lower(): name for name, sql in ISOLATION_LEVELS.items()}


class TransactionState(enum.Enum):
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
    """

    __slots__ = ('_connection', '_isolation', '_readonly', '_deferrable', '_state',
                 '_nested', '_savepoint', '_managed')

    def __init__(self, connection, isolation: Optional[str], readonly: bool,
                 deferrable: bool) -> None:
        if isolation and isolation not in ISOLATION_LEVELS:
            raise ValueError(
                f'isolation is expected to be either of {set(ISOLATION_LEVELS)}, '
                f'got {isolation!r}')
        self._connection = connection
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
        await self.start()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        try:
            if self._connection.is_closed():
                if self._connection._top_xact is self:
                    self._connection._top_xact = None
                self._state = TransactionState.FAILED
                if exc_type is not None:
                    # The block's own error (often the lost connection) says
                    # more than "connection is closed" would: let it through.
                    return
            self._check_connection('__aexit__')
            if exc_type is not None:
                await self._rollback()
            else:
                await self._commit()
        finally:
            self._managed = False

    async def start(self) -> None:
        """Enter the transaction block (BEGIN) or savepoint."""
        self._check_connection('start')
        self._check_not_finished('start')
        if self._state is TransactionState.STARTED:
            raise exceptions.InterfaceError('cannot start; the transaction is already started')
        conn = self._connection
        if conn._top_xact is None:
            if conn.is_in_transaction():
                raise exceptions.InterfaceError(
                    'cannot use Connection.transaction() in a manually started transaction')
            conn._top_xact = self
        else:
            if self._isolation:
                outer = conn._top_xact._isolation
                if outer is None:
                    setting = await conn.fetchval('SHOW transaction_isolation')
                    outer = _ISOLATION_BY_SETTING[setting]
                if self._isolation != outer:
                    raise exceptions.InterfaceError(
                        f'nested transaction has a different isolation level: '
                        f'current {self._isolation!r} != outer {outer!r}')
            self._nested = True

        if self._nested:
            self._savepoint = f'mypg_savepoint_{next(conn._savepoint_ids)}'
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
        try:
            await conn.execute(query)
        except BaseException:
            self._state = TransactionState.FAILED
            if conn._top_xact is self:
                conn._top_xact = None
            raise
        self._state = TransactionState.STARTED

    async def commit(self) -> None:
        """Commit (or release the savepoint).  Not allowed inside ``async with``."""
        self._check_connection('commit')
        if self._managed:
            raise exceptions.InterfaceError(
                'cannot manually commit from within an `async with` block')
        await self._commit()

    async def rollback(self) -> None:
        """Roll back (to the savepoint).  Not allowed inside ``async with``."""
        self._check_connection('rollback')
        if self._managed:
            raise exceptions.InterfaceError(
                'cannot manually rollback from within an `async with` block')
        await self._rollback()

    async def _commit(self) -> None:
        self._check_started('commit')
        conn = self._connection
        if conn._top_xact is self:
            conn._top_xact = None
        query = f'RELEASE SAVEPOINT {self._savepoint};' if self._nested else 'COMMIT;'
        # A failing COMMIT (e.g. a deferred constraint) ends the transaction
        # on the server all the same: nothing stays open.
        await self._finish(query, TransactionState.COMMITTED)

    async def _rollback(self) -> None:
        self._check_started('rollback')
        conn = self._connection
        if conn._top_xact is self:
            conn._top_xact = None
        query = f'ROLLBACK TO {self._savepoint};' if self._nested else 'ROLLBACK;'
        await self._finish(query, TransactionState.ROLLEDBACK)

    async def _finish(self, query: str, state: TransactionState) -> None:
        try:
            await self._connection.execute(query)
        except BaseException:
            self._state = TransactionState.FAILED
            raise
        self._state = state

    def _check_connection(self, method: str) -> None:
        if self._connection.is_closed():
            raise exceptions.InterfaceError(
                f'cannot call Transaction.{method}(): the underlying connection is closed')

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

"""Cursors: server-side portals read a batch at a time.

A cursor is a named portal (PostgreSQL's extended query protocol); portals
live until the end of their transaction, so cursors exist only inside one.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, AsyncIterator, Deque, Generator, Generic, Optional

from mypgdriver import exceptions
from mypgdriver._typing import RowT
from mypgdriver.protocol.rowstream import RowStream

if TYPE_CHECKING:
    from mypgdriver.connection import Connection
    from mypgdriver.core.deadlines import Deadline
    from mypgdriver.core.session import Session, Timeout
    from mypgdriver.protocol.statement import StatementState

DEFAULT_PREFETCH = 50


def check_prefetch(prefetch: object) -> None:
    """Refuse a bad `prefetch` before anything is sent."""
    if prefetch is None:
        return
    if isinstance(prefetch, bool) or not isinstance(prefetch, int):
        raise TypeError(f'prefetch must be an int, not {type(prefetch).__name__}')
    if prefetch <= 0:
        raise exceptions.InterfaceError('prefetch argument must be greater than zero')


class CursorFactory(Generic[RowT]):
    """What :meth:`Connection.cursor` returns.

    ``async for row in factory`` iterates over all rows, fetching `prefetch`
    rows per round trip; ``await factory`` opens a :class:`Cursor` for
    explicit fetch(n) / fetchrow() / forward(n).  Generic in the row type,
    as :class:`~mypgdriver.prepared.PreparedStatement` is.
    """

    __slots__ = ('_connection', '_session', '_checkout', '_query', '_state', '_args',
                 '_prefetch', '_timeout', '_rows_as')

    def __init__(self, connection: Connection, session: Session, query: str,
                 state: Optional[StatementState], args: tuple[object, ...],
                 prefetch: Optional[int], timeout: Optional[float],
                 rows_as: Any) -> None:
        self._connection = connection
        self._session = session
        self._checkout = session.checkout
        self._query = query
        self._state = state
        self._args = args
        self._prefetch = prefetch
        self._timeout = timeout
        self._rows_as = rows_as

    def __aiter__(self) -> AsyncIterator[RowT]:
        # A RowStream yields the rows of CursorIterator's batches.
        self._session.check_handle(self._checkout, 'CursorFactory', '__aiter__')
        prefetch = DEFAULT_PREFETCH if self._prefetch is None else self._prefetch
        return RowStream(CursorIterator(self._session, self._checkout, self._query, self._state,
                                        self._args, self._rows_as, prefetch,
                                        self._timeout))

    def __await__(self) -> Generator[Any, None, Cursor[RowT]]:
        self._session.check_handle(self._checkout, 'CursorFactory', '__await__')
        if self._prefetch is not None:
            raise exceptions.InterfaceError(
                'prefetch argument can only be specified for iterable cursor')
        cursor: Cursor[RowT] = Cursor(self._session, self._checkout, self._query, self._state, self._args,
                        self._rows_as)
        return cursor._open(self._timeout).__await__()


class BaseCursor(Generic[RowT]):
    """What iterating and explicit cursors share: the statement and the portal."""

    __slots__ = ('_session', '_checkout', '_query', '_state', '_args', '_rows_as',
                 '_portal', '_exhausted')
    #: The public class named in errors and repr().
    _api_name = 'BaseCursor'

    def __init__(self, session: Session, checkout: int, query: str,
                 state: Optional[StatementState], args: tuple[object, ...],
                 rows_as: Any) -> None:
        self._session = session
        self._checkout = checkout
        self._query = query
        self._args = args
        self._rows_as = rows_as
        self._portal: Optional[str] = None
        self._exhausted = False
        self._state: Optional[StatementState] = None
        if state is not None:
            self._hold(state)

    def __del__(self) -> None:
        state = getattr(self, '_state', None)
        if state is not None:
            self._session.statements.detach(state)

    def __repr__(self) -> str:
        flags = ' exhausted' if self._exhausted else ''
        return f'<{self._api_name} {self._query[:30]!r}{flags}>'

    def _hold(self, state: StatementState) -> None:
        # The statement must outlive cache eviction until the portal is bound.
        self._session.statements.attach(state)
        self._state = state

    def _prepared(self) -> StatementState:
        # (Prepared before any Bind: see _prepare_and_bind.)
        state = self._state
        if state is None:
            raise exceptions.InterfaceError('the cursor has no prepared statement')
        return state

    def _timeout_of(self, timeout: Optional[float]) -> Optional[float]:
        """The call's timeout: validated, else the connection's command_timeout."""
        return self._session.resolve_timeout(timeout)

    def _needs_statement(self) -> bool:
        """True until the cursor has a statement the server still has (or its portal is open).

        The server drops a PreparedStatement's statement on DISCARD ALL or
        DEALLOCATE ALL; a cursor not bound yet prepares it again, as the
        PreparedStatement's own methods do.
        """
        state = self._state
        return state is None or (self._portal is None and state.closed
                                 and state in self._session.statements.dropped)

    async def _prepare(self, timeout: Timeout) -> None:
        # (The caller holds the line: see _prepare_and_bind.)
        session = self._session
        state = session.statements.cached(self._query)
        if state is None:
            state = await session.prepare_state(self._query, timeout)
        old = self._state
        self._hold(state)
        if old is not None:
            session.statements.detach(old)

    def _check_ready(self, method: str) -> None:
        session = self._session
        session.check_handle(self._checkout, self._api_name, method)
        if self._state is not None and self._state.closed and not self._needs_statement():
            raise exceptions.InterfaceError('cursor: the prepared statement is closed')
        if not session.is_in_transaction():
            raise exceptions.NoActiveSQLTransactionError(
                'cursor cannot be created outside of a transaction')

    async def _prepare_and_bind(self, limit: Optional[int], deadline: Deadline,
                                method: str) -> list[RowT]:
        """Open the portal (fetching its first `limit` rows; None: bind only), preparing first if needed.

        A prepare is a round trip before the Bind: the cursor holds its place
        in line meanwhile (calls made after it wait), within one deadline.
        """
        session = self._session
        if not self._needs_statement():
            self._check_ready(method)
            if limit is None:
                await self._bind_only(deadline)
                return []
            return await self._bind_execute(limit, deadline)
        self._check_ready(method)
        async with session.admission.line(deadline):
            await self._prepare(deadline)
            self._check_ready(method)
            if limit is None:
                await self._bind_only(deadline)
                return []
            return await self._bind_execute(limit, deadline)

    async def _bind_execute(self, limit: int, timeout: Timeout) -> list[RowT]:
        """Open the portal and fetch its first `limit` rows."""
        if self._portal is not None:
            raise exceptions.InterfaceError('cursor already has an open portal')
        session = self._session
        portal = session.new_portal_name()
        # (Inside a transaction there is no retry; after a schema change the
        # Session drops the stale cache entries, so the next attempt succeeds.)
        rows, more = await session.bind_portal(self._prepared(), self._args, portal, limit,
                                               timeout, self._rows_as)
        self._portal = portal
        self._exhausted = not more
        return rows

    async def _bind_only(self, timeout: Timeout) -> None:
        """Open the portal without running it (rows come with later fetches)."""
        if self._portal is not None:
            raise exceptions.InterfaceError('cursor already has an open portal')
        session = self._session
        portal = session.new_portal_name()
        await session.bind_portal(self._prepared(), self._args, portal, 0, timeout, None,
                                  fetch=False)
        self._portal = portal
        self._exhausted = False

    async def _execute(self, limit: int, timeout: Timeout) -> list[RowT]:
        """Fetch up to `limit` more rows of the open portal."""
        if self._portal is None:
            raise exceptions.InterfaceError('cursor does not have an open portal')
        rows, more = await self._session.execute_portal(self._prepared(), self._portal, limit,
                                                        timeout, self._rows_as)
        self._exhausted = not more
        return rows

    async def _close_portal(self, timeout: Timeout) -> None:
        portal, self._portal = self._portal, None
        if portal is not None:
            await self._session.close_portal(portal, timeout)


class CursorIterator(BaseCursor[RowT]):
    """The portal behind ``async for row in conn.cursor(...)``.

    Fetches `prefetch` rows per round trip; a RowStream (Cython) hands them
    out without a coroutine per row.
    """

    __slots__ = ('_prefetch', '_timeout')
    _api_name = 'CursorIterator'

    def __init__(self, session: Session, checkout: int, query: str,
                 state: Optional[StatementState], args: tuple[object, ...],
                 rows_as: Any, prefetch: int,
                 timeout: Optional[float]) -> None:
        check_prefetch(prefetch)
        super().__init__(session, checkout, query, state, args, rows_as)
        self._prefetch = prefetch
        self._timeout = timeout

    async def next_batch(self) -> list[RowT]:
        """The next rows ([] at the end); the portal is closed once exhausted.

        One deadline for the whole step: the prepare (if needed), the fetch
        and the close of an exhausted portal share the cursor's timeout.
        """
        session = self._session
        deadline = session.deadline(self._timeout_of(self._timeout))
        if self._exhausted:
            await self._close_portal(deadline)
            return []
        if self._portal is None:
            rows = await self._prepare_and_bind(self._prefetch, deadline, '__anext__')
        else:
            self._check_ready('__anext__')
            rows = await self._execute(self._prefetch, deadline)
        if self._exhausted:
            # Close now rather than on the next call: the loop may stop here.
            await self._close_portal(deadline)
        return rows


class Cursor(BaseCursor[RowT]):
    """An open portal into a query's rows (``await conn.cursor(query)``)."""

    __slots__ = ('_pending',)
    _api_name = 'Cursor'

    def __init__(self, session: Session, checkout: int, query: str,
                 state: Optional[StatementState], args: tuple[object, ...],
                 rows_as: Any) -> None:
        super().__init__(session, checkout, query, state, args, rows_as)
        self._pending: Deque[RowT] = collections.deque()

    async def _open(self, timeout: Optional[float]) -> Cursor[RowT]:
        session = self._session
        deadline = session.deadline(self._timeout_of(timeout))
        await self._prepare_and_bind(None, deadline, '__await__')
        return self

    async def fetch(self, n: int, *, timeout: Optional[float] = None) -> list[RowT]:
        """The next `n` rows (fewer at the end, [] when exhausted)."""
        self._check_ready('fetch')
        _check_count(n)
        timeout = self._timeout_of(timeout)
        rows = self._take_pending(n)
        if len(rows) < n and not self._exhausted:
            rows.extend(await self._execute(n - len(rows), timeout))
        return rows

    async def fetchrow(self, *, timeout: Optional[float] = None) -> Optional[RowT]:
        """The next row, or None when exhausted."""
        self._check_ready('fetchrow')
        timeout = self._timeout_of(timeout)
        if self._pending:
            return self._pending.popleft()
        if self._exhausted:
            return None
        rows = await self._execute(1, timeout)
        return rows[0] if rows else None

    async def forward(self, n: int, *, timeout: Optional[float] = None) -> int:
        """Skip the next `n` rows on the server; return how many were skipped (<= n)."""
        self._check_ready('forward')
        _check_count(n)
        timeout = self._timeout_of(timeout)
        skipped = len(self._take_pending(n))
        if skipped < n and not self._exhausted:
            status = await self._session.simple(
                f'MOVE FORWARD {n - skipped:d} FROM "{self._portal}"', timeout, log=False)
            moved = int(status.split()[1])
            if moved < n - skipped:
                self._exhausted = True
            skipped += moved
        return skipped

    def _take_pending(self, n: int) -> list[RowT]:
        pending = self._pending
        return [pending.popleft() for _ in range(min(n, len(pending)))]


def _check_count(n: object) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f'n must be an int, not {type(n).__name__}')
    if n <= 0:
        raise exceptions.InterfaceError('n must be greater than zero')

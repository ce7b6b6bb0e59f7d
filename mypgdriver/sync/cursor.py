"""Cursors of the sync API: the asyncio CursorFactory and Cursor, driven by the runner.

The sync API is the asyncio API without ``await``, so ``cur = await
conn.cursor(query)`` becomes ``cur = conn.cursor(query)``: the factory is
itself a cursor, with fetch(n), fetchrow() and forward(n).  Its portal is
bound at the first of those calls (``await factory`` then, in the same
call as the fetch), inside the transaction the caller must be in, with the
errors the asyncio API raises at the ``await``.  ``for row in
conn.cursor(query, *args, prefetch=N)`` iterates over all rows, fetching N
per round trip (default 50).

``conn.cursor(query).open()`` binds the portal there and then and returns
a :class:`Cursor`: for code that wants the query started (its snapshot
taken, under READ COMMITTED) and its errors raised at that line, as
``await`` does, rather than at the first fetch.

Each round trip is one call: between two batches the connection is free,
and other threads' calls run in between (see runner.py).

fetch(n), fetchrow() and forward(n) are written once for both classes, by
tools/gen_sync.py from the asyncio Cursor, into CursorMethods
(_cursor_methods.py); each class says in ``_on_cursor()`` which asyncio
Cursor runs them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Coroutine, Iterator, Optional, TypeVar, cast

from mypgdriver import exceptions
from mypgdriver._typing import RowT
from mypgdriver.protocol.rowstream import RowStream
from mypgdriver.sync._cursor_methods import CursorMethods

if TYPE_CHECKING:
    from mypgdriver import cursor as async_cursor
    from mypgdriver.sync.driver.runner import CallRunner

T = TypeVar('T')
#: One call of the asyncio Cursor (``lambda c: c.fetch(n)``), run by a sync cursor.
CursorCall = Callable[['async_cursor.Cursor[RowT]'], Coroutine[Any, Any, T]]


class CursorFactory(CursorMethods[RowT]):
    """What :meth:`Connection.cursor` returns: iterate it, or use it as a :class:`Cursor`.

    ``for row in factory`` iterates over all rows.  Its fetch(n),
    fetchrow() and forward(n) are a Cursor's (``await conn.cursor(q)`` in
    asyncio is ``conn.cursor(q)`` here): the first of them binds the
    portal.  open() binds it at once and returns a Cursor.
    """

    __slots__ = ('_runner', '_factory', '_cursor')

    def __init__(self, runner: CallRunner, factory: async_cursor.CursorFactory[RowT]) -> None:
        self._runner = runner
        self._factory = factory
        # The asyncio Cursor bound by the first fetch/fetchrow/forward.
        self._cursor: Optional[async_cursor.Cursor[RowT]] = None

    def __repr__(self) -> str:
        if self._cursor is not None:
            return repr(self._cursor)
        return super().__repr__()

    def __iter__(self) -> Iterator[RowT]:
        """All rows, `prefetch` per round trip (inside a transaction)."""
        if self._cursor is not None:
            # A new portal would start over from the first row, which the
            # caller, having fetched some, would not expect.
            raise exceptions.InterfaceError(
                'this cursor was used with fetch(), fetchrow() or forward(): read the rest '
                'with fetch(); iterate a new conn.cursor(query) to go through all the rows')
        return self._rows()

    def _rows(self) -> Iterator[RowT]:
        run = self._runner.run
        # The asyncio iterator is a RowStream over the cursor's batches: the
        # batches are fetched here, one call each, and the rows handed out.
        batches = cast(RowStream, self._factory.__aiter__()).source
        while True:
            rows = run(batches.next_batch())
            if not rows:
                return
            yield from rows

    def open(self) -> Cursor[RowT]:
        """Bind the portal now and return a :class:`Cursor` (``await conn.cursor(q)`` in asyncio).

        Each call binds a new portal, as each ``await`` of the factory does.
        """
        return Cursor(self._runner, self._runner.run(_opened(self._factory)))

    def _on_cursor(self, call: CursorCall[RowT, T]) -> T:
        # One runner call, so that two threads' first fetches bind one portal.
        return self._runner.run(self._bound_then(call))

    async def _bound_then(self, call: CursorCall[RowT, T]) -> T:
        cursor = self._cursor
        if cursor is None:
            # The asyncio API's own checks and errors: those of `await factory`.
            cursor = self._cursor = await self._factory
        return await call(cursor)


async def _opened(factory: async_cursor.CursorFactory[RowT]) -> async_cursor.Cursor[RowT]:
    return await factory


class Cursor(CursorMethods[RowT]):
    """An open portal into a query's rows (see :meth:`CursorFactory.open`)."""

    __slots__ = ('_runner', '_cursor')

    def __init__(self, runner: CallRunner, cursor: async_cursor.Cursor[RowT]) -> None:
        self._runner = runner
        self._cursor = cursor

    def __repr__(self) -> str:
        return repr(self._cursor)

    def _on_cursor(self, call: CursorCall[RowT, T]) -> T:
        return self._runner.run(call(self._cursor))

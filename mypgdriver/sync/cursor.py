"""Cursors of the sync API: the asyncio CursorFactory and Cursor, driven by the runner.

``for row in conn.cursor(query, *args, prefetch=N)`` iterates over all rows,
fetching N per round trip (default 50).  ``conn.cursor(query).open()`` is
the sync spelling of ``await conn.cursor(query)``: it binds the portal (the
query starts on the server, and its errors are raised, there and then, as
with ``await``) and returns a :class:`Cursor` with fetch(n), fetchrow() and
forward(n).  (A Cursor bound lazily, at its first fetch, would read the same
as the async code without ``await``, but its query would start later: a
different snapshot under READ COMMITTED, and errors raised elsewhere.)

Each round trip is one call: between two batches the connection is free,
and other threads' calls run in between (see runner.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Iterator, Optional, cast

from mypgdriver._typing import RowT
from mypgdriver.protocol.rowstream import RowStream

if TYPE_CHECKING:
    from mypgdriver import cursor as async_cursor
    from mypgdriver.sync.runner import CallRunner


class CursorFactory(Generic[RowT]):
    """What :meth:`Connection.cursor` returns: iterate it, or open() it for a :class:`Cursor`."""

    __slots__ = ('_runner', '_factory')

    def __init__(self, runner: CallRunner, factory: async_cursor.CursorFactory[RowT]) -> None:
        self._runner = runner
        self._factory = factory

    def __iter__(self) -> Iterator[RowT]:
        """All rows, `prefetch` per round trip (inside a transaction)."""
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
        """Bind the portal and return a :class:`Cursor` (``await conn.cursor(q)`` in asyncio)."""
        return Cursor(self._runner, self._runner.run(_opened(self._factory)))


async def _opened(factory: async_cursor.CursorFactory[RowT]) -> async_cursor.Cursor[RowT]:
    return await factory


class Cursor(Generic[RowT]):
    """An open portal into a query's rows (see :meth:`CursorFactory.open`)."""

    __slots__ = ('_runner', '_cursor')

    def __init__(self, runner: CallRunner, cursor: async_cursor.Cursor[RowT]) -> None:
        self._runner = runner
        self._cursor = cursor

    def __repr__(self) -> str:
        return repr(self._cursor)

    def fetch(self, n: int, *, timeout: Optional[float] = None) -> list[RowT]:
        """The next `n` rows (fewer at the end, [] when exhausted)."""
        return self._runner.run(self._cursor.fetch(n, timeout=timeout))

    def fetchrow(self, *, timeout: Optional[float] = None) -> Optional[RowT]:
        """The next row, or None when exhausted."""
        return self._runner.run(self._cursor.fetchrow(timeout=timeout))

    def forward(self, n: int, *, timeout: Optional[float] = None) -> int:
        """Skip the next `n` rows on the server; return how many were skipped (<= n)."""
        return self._runner.run(self._cursor.forward(n, timeout=timeout))

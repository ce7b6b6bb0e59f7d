"""Server-side cursors: ``conn.cursor(name='c')`` DECLAREs a cursor and FETCHes its rows.

For results too big to hold in memory: execute() sends ``DECLARE name
CURSOR FOR query`` (inside the transaction, or WITH HOLD to outlive it),
and each fetch is a ``FETCH FORWARD n FROM name``: only the rows asked for
cross the network and stay in memory.  Iterating fetches `itersize` rows per
round trip.
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from mypgdriver import exceptions
from mypgdriver.dbapi.cursor import Cursor, Params
from mypgdriver.exceptions import pep249
from mypgdriver.paramstyle import PYFORMAT, convert
from mypgdriver.rows import RowFactory
from mypgdriver.sql import quote_ident

if TYPE_CHECKING:
    from typing_extensions import Self

    from mypgdriver.core.session_api import RowStream
    from mypgdriver.dbapi.connection import Connection

__all__ = ('ServerCursor',)

# Names of the FETCH statements prepared for the cursors (see _fetch()).
_statement_numbers = itertools.count(1)


class ServerCursor(Cursor):
    """A cursor declared on the server (PEP 249 cursor API, psycopg 3's ServerCursor).

    execute() DECLAREs it; fetchone(), fetchmany(), fetchall() and
    iteration FETCH from it (iteration `itersize` rows at a time, 100 by
    default); scroll() MOVEs it; close() CLOSEs it.  Without `withhold` it
    lives until the end of the transaction (outside autocommit, the
    execute() opens one); with it, until close().  The row count is the
    number of rows fetched so far.  executemany() and nextset() are not
    supported.
    """

    __slots__ = ('_name', '_scrollable', '_withhold', 'itersize', '_declared', '_fetches',
                 '_fetched')

    def __init__(self, connection: Connection, name: str, *,
                 row_factory: Optional[RowFactory[Any]] = None, scrollable: Optional[bool] = None,
                 withhold: bool = False) -> None:
        """Use :meth:`Connection.cursor` with a `name`."""
        super().__init__(connection, row_factory=row_factory)
        self._name = name
        self._scrollable = scrollable
        self._withhold = withhold
        #: Rows fetched per round trip while iterating.
        self.itersize: int = connection.itersize
        self._declared = False
        self._fetches: dict[str, RowStream] = {}
        self._fetched = 0

    @property
    def name(self) -> str:
        """The cursor's name on the server."""
        return self._name

    @property
    def scrollable(self) -> Optional[bool]:
        """SCROLL (True), NO SCROLL (False) or the server's default (None)."""
        return self._scrollable

    @property
    def withhold(self) -> bool:
        """Whether the cursor is declared WITH HOLD (usable after the transaction)."""
        return self._withhold

    @property
    def rownumber(self) -> Optional[int]:
        """The index of the next row in the cursor's result, or None before execute()."""
        return self._pos if self._declared else None

    def execute(self, query: str, params: Optional[Params] = None, *,
                prepare: Optional[bool] = None) -> Self:
        """DECLARE the cursor for `query` (a SELECT or VALUES...) with `params`; returns self.

        A cursor declared before under this object is closed first.  The
        description is known at once (one more round trip: the FETCH
        statement is prepared).
        """
        link = self._link
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        if link.pipeline is not None:
            raise pep249.NotSupportedError(
                'a server-side cursor cannot run inside a pipeline (conn.pipeline()): '
                'use it after the block, or a client-side cursor inside it')
        with link.lock:
            self._close_on_server()
            if params is None:
                text = query
                args: Sequence[Any] = ()
            else:
                converted = convert(query, PYFORMAT)
                text = converted.text
                args = converted.arguments(params)
            scroll = ('' if self._scrollable is None
                      else ' SCROLL' if self._scrollable else ' NO SCROLL')
            hold = ' WITH HOLD' if self._withhold else ''
            declare = f'DECLARE {quote_ident(self._name)}{scroll} CURSOR{hold} FOR {text}'
            self._query = declare
            link.begin_implicit()
            if args:
                try:
                    link.run(link.statements.run(declare, args, None))
                except exceptions.DataError as e:
                    # Refused by a codec: a str goes again as text, as in psycopg.
                    link.run_str_as_text(declare, args, None, e)
            else:
                link.simple(declare)
            self._declared = True
            self._fetched = 0
            # A FETCH statement is described by the cursor it reads: a
            # redeclared cursor needs statements prepared for it.
            self._drop_fetches()
            self._description = self._fetch_statement(f'FORWARD {self.itersize}').description
            self._rows = []
            self._pos = 0
            self._rowcount = -1
            self._status = 'DECLARE CURSOR'
        return self

    def executemany(self, query: str, params_seq: Any, *, returning: bool = False) -> None:
        """Not supported on a server-side cursor (NotSupportedError)."""
        raise pep249.NotSupportedError('executemany() is not supported on server-side cursors')

    def nextset(self) -> Optional[bool]:
        """Not supported on a server-side cursor (NotSupportedError)."""
        raise pep249.NotSupportedError('nextset() is not supported on server-side cursors')

    def fetchone(self) -> Any:
        """The next row, or None at the end (one FETCH)."""
        rows = self._fetch('FORWARD 1')
        return rows[0] if rows else None

    def fetchmany(self, size: Optional[int] = None) -> list[Any]:
        """The next `size` rows (default: arraysize), in one FETCH."""
        if size is None:
            size = self.arraysize
        return self._fetch(f'FORWARD {int(size)}')

    def fetchall(self) -> list[Any]:
        """All the remaining rows, in one FETCH."""
        return self._fetch('FORWARD ALL')

    def __iter__(self) -> Iterator[Any]:
        while True:
            size = self.itersize
            rows = self._fetch(f'FORWARD {size}')
            yield from rows
            if len(rows) < size:
                return

    def scroll(self, value: int, mode: str = 'relative') -> None:
        """Move the cursor on the server (MOVE): 'relative' to here, or 'absolute'.

        Moving backward needs a scrollable cursor (``scrollable=True``),
        else the server refuses it.
        """
        self._check_declared()
        if mode == 'relative':
            move = f'MOVE FORWARD {int(value)}'
            target = self._pos + value
        elif mode == 'absolute':
            move = f'MOVE ABSOLUTE {int(value)}'
            target = value
        else:
            raise ValueError(f"mode must be 'relative' or 'absolute', not {mode!r}")
        if target < 0:
            raise IndexError(f'position {target} is before the first row')
        link = self._link
        with link.lock:
            link.simple(f'{move} FROM {quote_ident(self._name)}')
        self._pos = target

    def close(self) -> None:
        """CLOSE the cursor on the server (if it still exists there) and this object."""
        if self._closed:
            return
        try:
            with self._link.lock:
                self._close_on_server()
        finally:
            self._drop_fetches()
            super().close()

    # --- internals ------------------------------------------------------------------------

    def _check_declared(self) -> None:
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        if not self._declared:
            raise pep249.ProgrammingError('no result to fetch from: call execute() first')

    def _fetch_statement(self, direction: str) -> RowStream:
        stream = self._fetches.get(direction)
        if stream is None:
            link = self._link
            # A name of its own: the statement cache (keyed by text) must not
            # hand it to a cursor of the same name declared for another query.
            stream = link.run(link.statements.prepare_stream(
                f'FETCH {direction} FROM {quote_ident(self._name)}',
                f'_dbapi_fetch_{next(_statement_numbers)}'))
            self._fetches[direction] = stream
        return stream

    def _drop_fetches(self) -> None:
        fetches, self._fetches = self._fetches, {}
        for stream in fetches.values():
            stream.close()

    def _fetch(self, direction: str) -> list[Any]:
        self._check_declared()
        link = self._link
        with link.lock:
            stream = self._fetch_statement(direction)
            result = link.run(stream.fetch(self._rows_as))
            self._status = result.status
        rows = result.rows if result.rows is not None else []
        self._pos += len(rows)
        self._fetched += len(rows)
        self._rowcount = self._fetched
        return rows

    def _close_on_server(self) -> None:
        if not self._declared:
            return
        self._declared = False
        link = self._link
        if link.is_closed() or not (self._withhold or link.in_transaction()):
            return      # gone with its transaction (or its connection)
        try:
            exists = link.run(link.statements.value(
                'SELECT 1 FROM pg_catalog.pg_cursors WHERE name = $1', self._name))
        except exceptions.InFailedSQLTransactionError:
            return      # the transaction failed: its ROLLBACK drops the cursor
        if exists:
            link.simple(f'CLOSE {quote_ident(self._name)}')

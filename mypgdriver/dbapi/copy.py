"""COPY through the DB-API cursor, in the spirit of psycopg 3's ``cursor.copy()``.

>>> with cur.copy('COPY t (id, name) FROM STDIN') as copy:
...     copy.write_row((1, 'a'))          # text format, one row
...     copy.write(b'2\\tb\\n')             # or blocks of data as they come
>>> with cur.copy('COPY t TO STDOUT') as copy:
...     for row in copy.rows():           # ('1', 'a'), ('2', 'b'): strings, NULL is None
...         ...

The data streams: a block written goes to the server once 128 KiB are
pending, and rows read are taken from the network as they are consumed
(reading stops while 512 KiB wait unread), so neither direction holds the
whole table in memory.  The connection is held by the block: other
threads' calls on it wait until the block ends.

This module drives the core's COPY steps one call at a time (the start,
each block, the end) through :mod:`mypgdriver.core.session_api`
(StepwiseCopyIn and StepwiseCopyOut of mypgdriver/copy.py).
"""
from __future__ import annotations

import re
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

from mypgdriver.core.session_api import StepwiseCopyIn, StepwiseCopyOut
from mypgdriver.dbapi.copytext import TextRows
from mypgdriver.exceptions import pep249

if TYPE_CHECKING:
    from mypgdriver.dbapi.cursor import Cursor

__all__ = ('Copy',)

#: Data written is sent once this much is pending.
WRITE_BUFFER_BYTES = 128 * 1024

_FROM_STDIN = re.compile(r'\bFROM\s+STDIN\b', re.IGNORECASE)
_TO_STDOUT = re.compile(r'\bTO\s+STDOUT\b', re.IGNORECASE)

# COPY's text format (PostgreSQL docs, COPY, "Text Format").
_UNESCAPE = re.compile(r'\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))', re.DOTALL)
_UNESCAPED = {'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}


class Copy:
    """A COPY in progress on a cursor's connection (use ``with cursor.copy(sql) as copy:``).

    For ``COPY ... FROM STDIN``: write() and write_row(); the COPY ends
    (and its status goes to the cursor's statusmessage and rowcount) when
    the ``with`` block ends, or fails on the server, copying nothing, if
    the block raises.  For ``COPY ... TO STDOUT``: iterate for blocks of
    data (bytes), read() one block, or rows() for the rows of the text
    format as tuples of strings (None for NULL); leaving the block before
    the end cancels the rest on the server (inside a transaction, the
    transaction then fails: roll it back).
    """

    __slots__ = ('_cursor', '_link', '_statement', '_direction', '_steps', '_pending',
                 '_pending_size', '_text_rows', '_started', '_finished', '_status', '_remainder')

    def __init__(self, cursor: Cursor, statement: str) -> None:
        """Use :meth:`Cursor.copy`."""
        if _FROM_STDIN.search(statement):
            direction = 'in'
        elif _TO_STDOUT.search(statement):
            direction = 'out'
        else:
            raise pep249.ProgrammingError(
                'cursor.copy() runs COPY ... FROM STDIN or COPY ... TO STDOUT')
        self._cursor = cursor
        self._link = cursor.connection.link
        self._statement = statement
        self._direction = direction
        self._steps: Union[StepwiseCopyIn, StepwiseCopyOut, None] = None
        self._pending: list[bytes] = []
        self._pending_size = 0
        # write_row()'s lines, formatted in C (mypgdriver/dbapi/copytext.pyx).
        self._text_rows = TextRows()
        self._started = False
        self._finished = False
        self._status: Optional[str] = None
        self._remainder = b''

    @property
    def direction(self) -> str:
        """'in' for COPY FROM STDIN, 'out' for COPY TO STDOUT."""
        return self._direction

    def __enter__(self) -> Copy:
        link = self._link
        link.lock.acquire()
        try:
            link.begin_implicit()
            statements = link.statements
            steps = (statements.copy_in(self._statement) if self._direction == 'in'
                     else statements.copy_out(self._statement))
            link.run(steps.start())
            self._steps = steps
            self._started = True
        except BaseException:
            link.lock.release()
            raise
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self._finish(exc)
        finally:
            self._link.lock.release()
        self._cursor.show_command(self._status)

    # --- COPY FROM STDIN --------------------------------------------------------------------

    def write(self, buffer: Union[bytes, bytearray, memoryview, str]) -> None:
        """Send a block of data in the COPY's format (a str is encoded as UTF-8)."""
        self._check_active('in', 'write')
        data = buffer.encode() if isinstance(buffer, str) else bytes(buffer)
        if self._text_rows.size:
            rows = self._text_rows.take()       # the rows written before
            self._pending.append(rows)
            self._pending_size += len(rows)
        self._pending.append(data)
        self._pending_size += len(data)
        if self._pending_size >= WRITE_BUFFER_BYTES:
            self._flush()

    def write_row(self, row: Sequence[Any]) -> None:
        """Send one row in the text format (the COPY must use it: the default).

        None is NULL; str, int, float, Decimal, bool (t/f), bytes (as
        ``\\x`` hex for bytea), date/time values (ISO) and UUIDs are written
        as their text; lists, tuples and dicts raise NotSupportedError
        (write them with write() in the format of the column's type).
        Formatted in C, into a buffer sent once 128 KiB are pending.
        """
        self._check_active('in', 'write_row')
        rows = self._text_rows
        rows.add(row)
        if rows.size >= WRITE_BUFFER_BYTES:
            self._flush()

    # --- COPY TO STDOUT ---------------------------------------------------------------------

    def read(self) -> bytes:
        """The next block of data, b'' at the end."""
        self._check_active('out', 'read')
        if self._remainder:
            data, self._remainder = self._remainder, b''
            return data
        steps = self._steps
        assert isinstance(steps, StepwiseCopyOut)
        block = self._link.run(steps.next())
        return b'' if block is None else block

    def __iter__(self) -> Iterator[bytes]:
        while True:
            block = self.read()
            if not block:
                return
            yield block

    def rows(self) -> Iterator[tuple[Optional[str], ...]]:
        """The rows of a text-format COPY TO STDOUT, as tuples of str (None for NULL).

        Values are not converted to Python types: each is the text the
        server wrote (``'1'``, ``'t'``, ``'2024-01-31'``).
        """
        for line in self._lines():
            yield tuple(None if field == '\\N' else _unescape(field)
                        for field in line.split('\t'))

    def _lines(self) -> Iterator[str]:
        rest = b''
        for block in self:
            data = rest + block if rest else block
            lines = data.split(b'\n')
            rest = lines.pop()
            for line in lines:
                yield line.decode()
        if rest:
            yield rest.decode()

    # --- internals --------------------------------------------------------------------------

    def _check_active(self, direction: str, method: str) -> None:
        if self._direction != direction:
            raise pep249.ProgrammingError(
                f'{method}() is for COPY {"FROM STDIN" if direction == "in" else "TO STDOUT"}')
        if not self._started or self._finished:
            raise pep249.ProgrammingError(
                f'{method}() is allowed only inside the "with cursor.copy(...)" block')

    def _flush(self) -> None:
        if self._text_rows.size:
            self._pending.append(self._text_rows.take())
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b''.join(self._pending)
        self._pending = []
        self._pending_size = 0
        steps = self._steps
        assert isinstance(steps, StepwiseCopyIn)
        self._link.run(steps.send(data))

    def _finish(self, exc: Optional[BaseException]) -> None:
        if self._finished or not self._started:
            return
        self._finished = True
        run = self._link.run
        steps = self._steps
        if isinstance(steps, StepwiseCopyIn):
            if exc is None:
                self._flush()
                self._status = run(steps.finish())
            else:
                run(steps.fail(exc))
        else:
            assert steps is not None
            self._status = run(steps.finish())


def format_text_row(row: Sequence[Any]) -> str:
    """One line of COPY's text format for `row` (see Copy.write_row)."""
    line = TextRows()
    line.add(row)
    return line.take().decode()


def _unescape(field: str) -> str:
    if '\\' not in field:
        return field

    def replace(m: re.Match[str]) -> str:
        octal, hexa, char = m.groups()
        if octal is not None:
            return chr(int(octal, 8))
        if hexa is not None:
            return chr(int(hexa, 16))
        return _UNESCAPED.get(char, char)

    return _UNESCAPE.sub(replace, field)

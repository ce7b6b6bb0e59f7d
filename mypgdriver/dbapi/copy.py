"""COPY through the DB-API cursor, in the spirit of psycopg 3's ``cursor.copy()``.

>>> with cur.copy('COPY t (id, name) FROM STDIN') as copy:
...     copy.write_row((1, 'a'))          # text format, one row
...     copy.write(b'2\\tb\\n')             # or blocks of data as they come
>>> with cur.copy('COPY t (id, name) FROM STDIN (FORMAT BINARY)') as copy:
...     copy.set_types(['int4', 'text'])  # binary: the codecs of the columns
...     copy.write_row((1, 'a'))          # encoded as copy_records_to_table() does
>>> with cur.copy('COPY t TO STDOUT') as copy:
...     for row in copy.rows():           # ('1', 'a'), ('2', 'b'): strings, NULL is None
...         ...

The data streams: a block written goes to the server once 64 KiB are
pending, and rows read are taken from the network as they are consumed
(reading stops while 512 KiB wait unread), so neither direction holds the
whole table in memory.  The connection is held by the block: other
threads' calls on it wait until the block ends.

This module drives the core's COPY steps one call at a time (the start,
each block, the end) through :mod:`mypgdriver.core.session_api`
(StepwiseCopyIn and StepwiseCopyOut of mypgdriver/copy.py).  Copy is built
on copyrows.CopyRows, whose write_row() runs in C (copyrows.pyx): the
user's loop calling it is the only Python call per row.
"""
from __future__ import annotations

import re
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

from mypgdriver.core.session_api import StepwiseCopyIn, StepwiseCopyOut
from mypgdriver.dbapi.copyrows import FLUSH_BYTES, ROWS_BINARY, ROWS_CLOSED, ROWS_TEXT, CopyRows
from mypgdriver.dbapi.copytext import TextRows
from mypgdriver.dbapi.copytypes import TypeSpec, copy_codecs
from mypgdriver.exceptions import pep249

if TYPE_CHECKING:
    from mypgdriver.dbapi.cursor import Cursor

__all__ = ('Copy',)

#: Data written is sent once this much is pending.
WRITE_BUFFER_BYTES = FLUSH_BYTES

_FROM_STDIN = re.compile(r'\bFROM\s+STDIN\b', re.IGNORECASE)
_TO_STDOUT = re.compile(r'\bTO\s+STDOUT\b', re.IGNORECASE)
# In the options after STDIN/STDOUT (and before a WHERE): FORMAT binary,
# FORMAT 'binary', or the old syntax's BINARY.
_BINARY = re.compile(r'\bbinary\b', re.IGNORECASE)
_WHERE = re.compile(r'\bWHERE\b', re.IGNORECASE)

# COPY's text format (PostgreSQL docs, COPY, "Text Format").
_UNESCAPE = re.compile(r'\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))', re.DOTALL)
_UNESCAPED = {'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}


class Copy(CopyRows):
    """A COPY in progress on a cursor's connection (use ``with cursor.copy(sql) as copy:``).

    For ``COPY ... FROM STDIN``: write() and write_row() (for a binary
    COPY, set_types() first); the COPY ends (and its status goes to the
    cursor's statusmessage and rowcount) when the ``with`` block ends, or
    fails on the server, copying nothing, if the block raises.  For
    ``COPY ... TO STDOUT``: iterate for blocks of data (bytes), read() one
    block, or rows() for the rows of the text format as tuples of strings
    (None for NULL); leaving the block before the end cancels the rest on
    the server (inside a transaction, the transaction then fails: roll it
    back).
    """

    __slots__ = ('_cursor', '_link', '_statement', '_direction', '_binary', '_steps',
                 '_started', '_finished', '_status', '_remainder', '_wrote_data')

    def __init__(self, cursor: Cursor, statement: str) -> None:
        """Use :meth:`Cursor.copy`."""
        match = _FROM_STDIN.search(statement)
        if match:
            direction = 'in'
        else:
            match = _TO_STDOUT.search(statement)
            if match is None:
                raise pep249.ProgrammingError(
                    'cursor.copy() runs COPY ... FROM STDIN or COPY ... TO STDOUT')
            direction = 'out'
        options = _WHERE.split(statement[match.end():], 1)[0]
        self._cursor = cursor
        self._link = cursor.connection.link
        self._statement = statement
        self._direction = direction
        self._binary = _BINARY.search(options) is not None
        self._steps: Union[StepwiseCopyIn, StepwiseCopyOut, None] = None
        self._started = False
        self._finished = False
        self._status: Optional[str] = None
        self._remainder = b''
        self._wrote_data = False

    @property
    def direction(self) -> str:
        """'in' for COPY FROM STDIN, 'out' for COPY TO STDOUT."""
        return self._direction

    @property
    def binary(self) -> bool:
        """Whether the statement asks for the binary format (``FORMAT BINARY``)."""
        return self._binary

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
        if self._direction == 'in':
            self.set_rows_mode(ROWS_BINARY if self._binary else ROWS_TEXT)
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self._finish(exc)
        finally:
            self._link.lock.release()
        self._cursor.show_command(self._status)

    def set_types(self, types: Sequence[TypeSpec]) -> None:
        """Say the type of each column the COPY moves, in the statement's column order.

        Each is a type name (``'int4'``, ``'integer'``, ``'text'``,
        ``'timestamptz'``, ``'numeric'``, ``'int4[]'``...) or an OID.  A
        binary ``COPY ... FROM STDIN`` needs them before write_row(): each
        value is then encoded by the codec of its column's type, the one
        copy_records_to_table() and query arguments use.  Built-in types are
        known by name; another type (an enum, a domain, a composite) once the
        connection has met it (a query used it), as ``'schema.name'``
        (``public`` by default) or by OID: the COPY holds the connection, so
        it cannot be asked.  Unknown types raise ProgrammingError, a type
        without a binary codec NotSupportedError (copy it as text).  For a
        text-format COPY the types are checked and otherwise not needed:
        write_row() writes each value's text.
        """
        if self._finished:
            raise pep249.ProgrammingError(
                'set_types() is allowed only inside the "with cursor.copy(...)" block')
        binary = self._binary and self._direction == 'in'
        codecs, names = copy_codecs(types, self._link.statements.session.codecs, binary)
        if binary:
            self.set_rows_types(codecs, names)

    # --- COPY FROM STDIN --------------------------------------------------------------------

    def write(self, buffer: Union[bytes, bytearray, memoryview, str]) -> None:
        """Send a block of data in the COPY's format (a str is encoded as UTF-8).

        It goes after the rows written before it.  In a binary COPY the
        data is sent as it is: the file header and trailer that write_row()
        adds for its rows are not added for data written here.
        """
        self._check_active('in', 'write')
        self._wrote_data = True
        # (bytes() takes any buffer layout, as it did.)
        data = (buffer.encode() if isinstance(buffer, str)
                else buffer if type(buffer) is bytes else bytes(buffer))
        if len(data) >= WRITE_BUFFER_BYTES:
            # A big block goes as it is, after what is pending (no copy).
            self._flush()
            self._send(data)
            return
        self.add_data(data)
        if self.pending_size >= WRITE_BUFFER_BYTES:
            self._flush()

    # write_row() is CopyRows's, in C (copyrows.pyx).

    def refuse_write_row(self) -> None:
        self._check_active('in', 'write_row')

    def send_pending(self) -> None:
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
        if not self.pending_size:
            return
        # Sent from the pending buffer itself (CopyRows exports it), then
        # cleared: the protocol copies it into its message.
        view = self.pending_view()
        try:
            self._send(view)
        finally:
            try:
                view.release()
            except BufferError:
                # A slice is still referenced (by the traceback of a failed
                # send): the buffer is released with it.
                pass
        self.clear_pending()

    def _send(self, data: Union[bytes, memoryview]) -> None:
        steps = self._steps
        assert isinstance(steps, StepwiseCopyIn)
        self._link.run(steps.send(data))

    def _finish(self, exc: Optional[BaseException]) -> None:
        if self._finished or not self._started:
            return
        self._finished = True
        self.set_rows_mode(ROWS_CLOSED)
        run = self._link.run
        steps = self._steps
        if isinstance(steps, StepwiseCopyIn):
            if exc is None:
                # A binary COPY of no data at all still sends a valid file.
                self.end_rows(self._binary and not self._wrote_data)
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

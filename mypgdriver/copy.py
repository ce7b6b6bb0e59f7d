"""COPY: bulk transfer into and out of tables (part of Connection).

COPY runs as a simple Query; the server then switches the connection into
copy mode (PostgreSQL docs, "Protocol: COPY Operations").  Data leaving the
server is handed to the caller's output as it arrives, with reading paused
while a slow output catches up; data entering the server is sent in chunks,
waiting for the transport to drain, so memory stays bounded both ways.
"""
from __future__ import annotations

import asyncio
import inspect
import os
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterable,
    Awaitable,
    Callable,
    Iterable,
    Optional,
    Sequence,
    Union,
)

from mypgdriver import exceptions, tracing
from mypgdriver._typing import ArgumentRows
from mypgdriver.core import waits
from mypgdriver.core.deadlines import NO_DEADLINE, Deadline
from mypgdriver.core.waits import interruption_point
from mypgdriver.exceptions import pep249
from mypgdriver.protocol.buffer import WriteBuffer
from mypgdriver.protocol.record import Record
from mypgdriver.sql import quote_ident, quote_literal, substitute_parameters
from mypgdriver.tracing import TELEMETRY

if TYPE_CHECKING:
    from mypgdriver.core.session import Session

#: COPY OUT: stop reading from the socket once this much data waits for a
#: slow output, and read again once the output took it.
COPY_OUT_PAUSE_BYTES = 512 * 1024

#: COPY IN: small chunks from an iterable are joined up to this size, so a
#: source yielding one line at a time does not cost one write per line.
COPY_IN_CHUNK_BYTES = 256 * 1024

#: COPY IN: the largest CopyData message sent; bigger chunks are split.
COPY_IN_MESSAGE_BYTES = 1024 * 1024

#: How much a file-like source is asked for per read() (as asyncpg does).
COPY_IN_READ_BYTES = 512 * 1024

#: copy_records_to_table(): target size of one CopyData message; the number
#: of records per message is estimated from the first, small batch.
COPY_RECORDS_CHUNK_BYTES = 64 * 1024
COPY_RECORDS_FIRST_BATCH = 16

# Memory of a bytes object and its list slot beyond its data (CPython, 64-bit).
_CHUNK_OVERHEAD = 41
_FORMATS = ('text', 'csv', 'binary')


# --- SQL text: table names, option lists ---------------------------------------------

def _table_name(table_name: str, schema_name: Optional[str]) -> str:
    if schema_name:
        return quote_ident(schema_name) + '.' + quote_ident(table_name)
    return quote_ident(table_name)


def _identifier_list(names: Iterable[str], what: str) -> str:
    # A single str is iterable too, and would silently become a list of
    # one-letter column names.
    if isinstance(names, (str, bytes)):
        raise TypeError(f'{what} must be a sequence of column names, not a single string')
    return ', '.join(quote_ident(name) for name in names)


def _columns_clause(columns: Optional[Iterable[str]]) -> str:
    if not columns:
        return ''
    return '(' + _identifier_list(columns, 'columns') + ')'


def _where_clause(where: Optional[str], server_version) -> str:
    if not where:
        return ''
    if not isinstance(where, str):
        raise TypeError(f'where must be a str (an SQL expression), not {type(where).__name__}')
    if server_version is not None and server_version.major < 12:
        raise exceptions.UnsupportedServerFeatureError(
            'the where parameter requires PostgreSQL 12 or later (COPY FROM ... WHERE)')
    return ' WHERE ' + where


def copy_options(*, format: Optional[str] = None, oids: Optional[bool] = None,
                 freeze: Optional[bool] = None, delimiter: Optional[str] = None,
                 null: Optional[str] = None, header: Union[bool, str, None] = None,
                 quote: Optional[str] = None, escape: Optional[str] = None,
                 force_quote: Union[bool, Sequence[str], None] = None,
                 force_not_null: Union[bool, Sequence[str], None] = None,
                 force_null: Union[bool, Sequence[str], None] = None,
                 encoding: Optional[str] = None) -> str:
    """Build the ``(FORMAT csv, DELIMITER ',', ...)`` option list of a COPY command.

    Options left as None are not sent, so the server's defaults apply.
    Combinations that COPY rejects in any case (a text option with the binary
    format, a CSV option with another format) raise ValueError here, before
    anything is sent.
    """
    opts = []
    fmt = 'text'
    if format is not None:
        if not isinstance(format, str) or format.lower() not in _FORMATS:
            raise ValueError(f"format must be one of 'text', 'csv' or 'binary', not {format!r}")
        fmt = format.lower()
        opts.append('FORMAT ' + fmt)

    for name, flag in (('oids', oids), ('freeze', freeze)):
        if flag is not None:
            if not isinstance(flag, bool):
                raise TypeError(f'{name} must be a bool, not {type(flag).__name__}')
            opts.append(f'{name.upper()} {str(flag).lower()}')

    text_options = {'delimiter': delimiter, 'null': null, 'header': header, 'quote': quote,
                    'escape': escape, 'force_quote': force_quote,
                    'force_not_null': force_not_null, 'force_null': force_null}
    if fmt == 'binary':
        given = [name for name, value in text_options.items() if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} cannot be used with format='binary'")
    if fmt != 'csv':
        given = [name for name in ('quote', 'escape', 'force_quote', 'force_not_null',
                                   'force_null') if text_options[name] is not None]
        if given:
            raise ValueError(f"{', '.join(given)} can only be used with format='csv'")

    for name, text in (('delimiter', delimiter), ('null', null)):
        if text is not None:
            opts.append(f'{name.upper()} {quote_literal(text)}')
    if header is not None:
        if isinstance(header, bool):
            opts.append(f'HEADER {str(header).lower()}')
        elif isinstance(header, str) and header.lower() == 'match':
            opts.append('HEADER match')
        else:
            raise ValueError(f"header must be True, False or 'match', not {header!r}")
    for name, text in (('quote', quote), ('escape', escape)):
        if text is not None:
            opts.append(f'{name.upper()} {quote_literal(text)}')
    for name, value in (('force_quote', force_quote), ('force_not_null', force_not_null),
                        ('force_null', force_null)):
        if value is None or value is False:
            continue
        if value is True:
            opts.append(f'{name.upper()} *')
        else:
            opts.append(f'{name.upper()} ({_identifier_list(value, name)})')
    if encoding is not None:
        opts.append(f'ENCODING {quote_literal(encoding)}')
    return ' (' + ', '.join(opts) + ')' if opts else ''


# --- COPY OUT: from the protocol's sink to the caller's output ------------------------

class _CopyOutStream:
    """Collects the CopyData chunks the protocol delivers until the output takes them.

    feed() runs inside the protocol's message loop, so it must never raise
    and never block: it only appends, and pauses reading when too much is
    waiting.
    """

    __slots__ = ('_protocol', 'chunks', 'size', 'waiter', 'paused')

    def __init__(self, protocol) -> None:
        self._protocol = protocol
        self.chunks: list = []
        self.size = 0
        self.waiter: Optional[asyncio.Future] = None
        self.paused = False

    def feed(self, data: bytes) -> None:
        self.chunks.append(data)
        # Count the bytes object's own size too: with one-row messages of a
        # few bytes, the objects outweigh the data several times.
        self.size += len(data) + _CHUNK_OVERHEAD
        if self.size >= COPY_OUT_PAUSE_BYTES and not self.paused:
            self.paused = True
            self._protocol.pause_reading()
        self.wake()

    def wake(self, _fut=None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self) -> bytes:
        """All data collected so far, as one bytes object (one write per batch)."""
        chunks = self.chunks
        data = chunks[0] if len(chunks) == 1 else b''.join(chunks)
        self.chunks = []
        self.size = 0
        self.resume()
        return data

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._protocol.resume_reading()


def _fspath(obj) -> Optional[Union[str, bytes]]:
    if isinstance(obj, (str, bytes)) or hasattr(obj, '__fspath__'):
        return os.fspath(obj)
    return None


def _batch_taker(records: Iterable, protocol: Any) -> Callable[[int], Sequence]:
    """A function returning the next `n` records (fewer at the end, none after it).

    A source that computes its records holds the thread while it does (the
    timeout's timer cannot run): the protocol checks the deadline after each
    of its records (fill_rows()), and the batch ends early past it (the
    caller then asks stream_overdue() and stops).
    """
    if isinstance(records, (list, tuple)):
        # Slicing costs a pointer copy per record; islice() into a new
        # list measured ~50 instructions per record.
        position = 0

        def take(n: int) -> Sequence:
            nonlocal position
            batch = records[position:position + n]
            position += len(batch)
            return batch

        return take
    iterator = iter(records)

    fill = protocol.fill_rows

    def take_watched(n: int) -> Sequence:
        batch: list = []
        fill(batch, iterator, n)
        return batch

    return take_watched


async def _read_chunks(loop, file) -> AsyncIterable:
    """Chunks of a file-like object; a blocking read() runs in the default executor."""
    read = file.read
    if inspect.iscoroutinefunction(read):
        while True:
            data = await read(COPY_IN_READ_BYTES)
            if not data:
                return
            yield data
    while True:
        data = await loop.run_in_executor(None, read, COPY_IN_READ_BYTES)
        if not data:
            return
        yield data


async def _finish_in_executor(loop, function: Callable, *args: Any) -> Any:
    """Run `function` in the default executor and wait until it has returned.

    A thread cannot be interrupted: if the caller is cancelled meanwhile,
    the cancellation is raised only once the call is over, so that nothing
    writes to the output after the COPY has ended.
    """
    job = loop.run_in_executor(None, function, *args)
    interrupted: Optional[BaseException] = None
    while not job.done():
        try:
            await waits.wait_done(loop, job, None)
        except asyncio.CancelledError as exc:
            interrupted = exc
    if interrupted is not None:
        if not job.cancelled():
            job.exception()     # retrieved: the cancellation wins
        raise interrupted
    return job.result()


def _uncancel_current_task(loop: Any) -> None:
    task = waits.caller_identity(loop)()
    if task is not None and hasattr(task, 'uncancel'):
        task.uncancel()


async def _iterate(iterable: Iterable) -> AsyncIterable:
    for item in iterable:
        yield item


class CopyMixin:
    """copy_to_table(), copy_from_table(), copy_from_query(), copy_records_to_table()."""

    __slots__ = ()

    # Connection's, declared without values so that type checkers know them.
    _session: Session
    _loop: asyncio.AbstractEventLoop

    # --- COPY ... TO STDOUT ---

    async def copy_from_table(self, table_name: str, *, output: Any,
                              columns: Optional[Iterable[str]] = None,
                              schema_name: Optional[str] = None,
                              timeout: Optional[float] = None, format: Optional[str] = None,
                              oids: Optional[bool] = None, delimiter: Optional[str] = None,
                              null: Optional[str] = None, header: Union[bool, str, None] = None,
                              quote: Optional[str] = None, escape: Optional[str] = None,
                              force_quote: Union[bool, Sequence[str], None] = None,
                              encoding: Optional[str] = None) -> str:
        """Copy the contents of a table to `output`; return the status, e.g. ``'COPY 100'``.

        `output` is a path (str or path-like object, the file is created or
        truncated), a file-like object with a ``write(bytes)`` method (called
        in the default executor unless it is a coroutine function), or a
        coroutine function taking each ``bytes`` chunk.  `columns` restricts
        the copy to those columns; the other keyword arguments are the COPY
        options of the same names (see PostgreSQL's COPY documentation).
        """
        deadline = self._copy_deadline(timeout)
        opts = copy_options(format=format, oids=oids, delimiter=delimiter, null=null,
                            header=header, quote=quote, escape=escape,
                            force_quote=force_quote, encoding=encoding)
        query = (f'COPY {_table_name(table_name, schema_name)}{_columns_clause(columns)} '
                 f'TO STDOUT{opts}')
        return await self._observed_copy(self._copy_out(query, output, deadline), query,
                                         table_name, schema_name)

    async def copy_from_query(self, query: str, *args: Any, output: Any,
                              timeout: Optional[float] = None, format: Optional[str] = None,
                              oids: Optional[bool] = None, delimiter: Optional[str] = None,
                              null: Optional[str] = None, header: Union[bool, str, None] = None,
                              quote: Optional[str] = None, escape: Optional[str] = None,
                              force_quote: Union[bool, Sequence[str], None] = None,
                              encoding: Optional[str] = None) -> str:
        """Copy the result of `query` to `output`; return the status, e.g. ``'COPY 10'``.

        COPY takes no bind parameters, so `args` are turned into SQL literals
        by the server (each cast to the type the server infers for its
        ``$n``) and written into the query text; ``$n`` inside string
        literals, quoted names and comments is left alone.  `output` and the
        options are as for :meth:`copy_from_table`.
        """
        deadline = self._copy_deadline(timeout)
        opts = copy_options(format=format, oids=oids, delimiter=delimiter, null=null,
                            header=header, quote=quote, escape=escape,
                            force_quote=force_quote, encoding=encoding)
        # (The span shows the query with its $n, not the values written into it.)
        return await self._observed_copy(
            self._copy_query_out(query, args, opts, output, deadline),
            f'COPY ({query}) TO STDOUT{opts}')

    async def _copy_query_out(self, query: str, args: Sequence[Any], opts: str, output: Any,
                              deadline: Deadline) -> str:
        if args:
            # Round trips before the COPY: it keeps its place in line.
            session = self._session
            async with session.admission.line(deadline):
                query = await self._inline_arguments(query, args, deadline)
                return await self._copy_out(f'COPY ({query}) TO STDOUT{opts}', output,
                                            deadline)
        return await self._copy_out(f'COPY ({query}) TO STDOUT{opts}', output, deadline)

    # --- COPY ... FROM STDIN ---

    async def copy_to_table(self, table_name: str, *, source: Any,
                            columns: Optional[Iterable[str]] = None,
                            schema_name: Optional[str] = None, timeout: Optional[float] = None,
                            format: Optional[str] = None, oids: Optional[bool] = None,
                            freeze: Optional[bool] = None, delimiter: Optional[str] = None,
                            null: Optional[str] = None, header: Union[bool, str, None] = None,
                            quote: Optional[str] = None, escape: Optional[str] = None,
                            force_quote: Union[bool, Sequence[str], None] = None,
                            force_not_null: Union[bool, Sequence[str], None] = None,
                            force_null: Union[bool, Sequence[str], None] = None,
                            encoding: Optional[str] = None,
                            where: Optional[str] = None) -> str:
        """Copy data from `source` into a table; return the status, e.g. ``'COPY 140000'``.

        `source` is a path (str, bytes or path-like object), a file-like
        object with ``read(n)`` (read in chunks, in the default executor
        unless it is a coroutine function), a bytearray or memoryview holding
        all the data, or an iterable or async iterable of bytes-like chunks
        (a generator streams: memory stays bounded).  As in asyncpg, a ``bytes`` source is a file name, not data:
        wrap data in a list (``[data]``) to send it.  `where` is an
        SQL expression filtering the rows (PostgreSQL 12+); the other keyword
        arguments are the COPY options of the same names.  ``force_quote``
        only exists for COPY TO and is rejected here.

        If the server rejects a row, or the source fails, nothing is copied:
        the source's exception is raised after the server ended the COPY, and
        the connection stays usable.
        """
        deadline = self._copy_deadline(timeout)
        if force_quote is not None:
            raise ValueError('force_quote applies only when copying out of the server '
                             '(copy_from_table, copy_from_query)')
        opts = copy_options(format=format, oids=oids, freeze=freeze, delimiter=delimiter,
                            null=null, header=header, quote=quote, escape=escape,
                            force_not_null=force_not_null, force_null=force_null,
                            encoding=encoding)
        query = (f'COPY {_table_name(table_name, schema_name)}{_columns_clause(columns)} '
                 f'FROM STDIN{opts}{_where_clause(where, self._session.server_version)}')
        return await self._observed_copy(self._copy_in(query, source, deadline), query,
                                         table_name, schema_name)

    async def copy_records_to_table(self, table_name: str, *, records: ArgumentRows,
                                    columns: Optional[Iterable[str]] = None,
                                    schema_name: Optional[str] = None,
                                    timeout: Optional[float] = None,
                                    where: Optional[str] = None) -> str:
        """Copy `records` (sequences of column values) into a table with binary COPY.

        Values are encoded by the same codecs as query arguments, for the
        types of the target columns.  `records` may be any iterable or
        async iterable; they are sent in chunks of about 256 KiB while
        more are being produced.  `where` is an SQL expression filtering the
        rows (PostgreSQL 12+).  Returns the status, e.g. ``'COPY 2'``.

        A record that cannot be encoded raises DataError naming its index
        (counting from 0) and column; then, as when the server rejects a
        row, nothing is copied and the connection stays usable.
        """
        deadline = self._copy_deadline(timeout)
        session = self._session
        tab = _table_name(table_name, schema_name)
        cols = _columns_clause(columns)
        query = (f'COPY {tab}{cols} FROM STDIN (FORMAT binary)'
                 f'{_where_clause(where, session.server_version)}')
        return await self._observed_copy(
            self._copy_records(query, tab, cols, records, deadline), query, table_name,
            schema_name)

    async def _copy_records(self, query: str, tab: str, cols: str, records: ArgumentRows,
                            deadline: Deadline) -> str:
        session = self._session
        select_list = cols[1:-1] if cols else '*'
        session.check_open()
        # The column types COPY expects are those of this SELECT; preparing it
        # also resolves their codecs (introspecting unknown types if needed).
        # A round trip before the COPY: it keeps its place in line.
        async with session.admission.line(deadline):
            intro = f'SELECT {select_list} FROM {tab} LIMIT 0'
            state = session.statements.cached(intro)
            if state is None:
                state = await session.prepare_state(intro, deadline)
            return await self._copy_records_in(query, state, records, deadline)

    # --- internals ---

    def _observed_copy(self, operation: Awaitable[str], query: str,
                       table_name: Optional[str] = None,
                       schema_name: Optional[str] = None) -> Awaitable[str]:
        """`operation`, in its span if tracing is live (see mypgdriver.tracing).

        A COPY of a table names it (``db.collection.name``, as given:
        ``schema.table`` with `schema_name`); the operation is ``COPY``.
        """
        if not TELEMETRY.live:
            return operation
        table = None
        if table_name is not None:
            table = f'{schema_name}.{table_name}' if schema_name else table_name
        return tracing.traced(operation, self._session.trace_attributes(), query,
                              operation_name='COPY', collection=table,
                              summary=f'COPY {table}' if table is not None else None)

    # Every COPY method turns its timeout into one deadline first (which also
    # checks the argument, before anything is opened or sent); the steps
    # below take the time left.

    def _copy_deadline(self, timeout: Optional[float]) -> Deadline:
        session = self._session
        return session.deadline(session.resolve_timeout(timeout))

    async def _copy_wait_in_sync(self, deadline: Deadline) -> None:
        session = self._session
        session.check_open()
        if session.admission.needs_sync():
            await session.admission.sync(deadline)

    async def _copy_hold(self, deadline: Optional[Deadline]) -> None:
        """Wait until the COPY can have the connection alone (release with session.admission.release()).

        (None: no deadline, for mypgdriver.dbapi's COPY, which has none.)
        """
        session = self._session
        session.check_open()
        await session.admission.hold(NO_DEADLINE if deadline is None else deadline)

    async def _inline_arguments(self, query: str, args: Sequence, deadline) -> str:
        """`query` with each ``$n`` replaced by its argument as a typed SQL literal."""
        session = self._session
        await self._copy_wait_in_sync(deadline)
        state = await session.prepare_state(query, deadline, cache=False)
        oids = state.param_oids
        if len(oids) != len(args):
            raise exceptions.InterfaceError(
                f'the server expects {len(oids)} argument{"s" if len(oids) != 1 else ""} '
                f'for this query, {len(args)} {"was" if len(args) == 1 else "were"} passed')
        names = {}
        for oid in oids:
            info = session.codecs.type_info(oid)
            if info is not None:
                names[oid] = quote_ident(info.schema) + '.' + quote_ident(info.name)
        missing = [oid for oid in oids if oid not in names]
        if missing:
            # A type the registry knows only by a user codec: ask the server for its name.
            rows = await session.execute(
                'SELECT t.oid, n.nspname, t.typname FROM pg_catalog.pg_type t '
                'JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace '
                'WHERE t.oid = ANY($1::oid[])', (missing,), 0,
                deadline.left(), False, Record, False)
            for oid, schema, name in rows:
                names[oid] = quote_ident(schema) + '.' + quote_ident(name)
        type_names = [names[oid] for oid in oids]
        # The server renders each value as a literal of its type: the text
        # form is then exactly what the type's input function reads back.
        select = ', '.join(f'pg_catalog.quote_literal(${i}::{name}::text)'
                           for i, name in enumerate(type_names, 1))
        rows = await session.execute(f'SELECT {select}', args, 1,
                                     deadline.left(), False, Record, False)
        literals = [f'({"NULL" if lit is None else lit}::{name})'
                    for lit, name in zip(rows[0], type_names)]
        scs = session.protocol.get_server_parameters().get('standard_conforming_strings', 'on')
        return substitute_parameters(query, literals, scs == 'on')

    async def _copy_out(self, query: str, output: Any, deadline: Deadline) -> str:
        loop = self._loop
        opened = None
        path = _fspath(output)
        if path is not None:
            opened = await loop.run_in_executor(None, open, path, 'wb')
            write = opened.write
        elif hasattr(output, 'write'):
            write = output.write
        elif callable(output):
            write = output
        else:
            raise TypeError('output must be a path, a file-like object or a coroutine '
                            f'function, not {type(output).__name__}')
        writer: Callable[[bytes], Awaitable[Any]]
        if inspect.iscoroutinefunction(write):
            writer = write
        elif write is output:
            async def writer(data: bytes) -> None:
                # A plain callable: await what it returns, if anything.
                result = write(data)
                if inspect.isawaitable(result):
                    await result
        else:
            async def writer(data: bytes) -> None:
                await _finish_in_executor(loop, write, data)
        try:
            return await self._copy_out_stream(query, writer, deadline)
        finally:
            if opened is not None:
                await loop.run_in_executor(None, opened.close)

    async def _copy_out_stream(self, query: str, writer: Callable[[bytes], Awaitable],
                               deadline: Deadline) -> str:
        session = self._session
        session.check_open()
        async with session.admission.held(deadline):
            return await self._copy_out_held(query, writer, deadline)

    async def _copy_out_held(self, query: str, writer: Callable[[bytes], Awaitable],
                             deadline: Deadline) -> str:
        session = self._session
        proto = session.protocol
        stream = _CopyOutStream(proto)
        fut = proto.copy_out(query, stream.feed, deadline.left())
        fut.add_done_callback(stream.wake)
        # The output runs in this task, so this task is the operation's
        # stream (as for COPY IN): on a timeout or cancel() the protocol
        # cancels it, and an output stuck in an await is interrupted on time.
        # Whatever the exit, the output is not running any more when this
        # returns, and is not called again.
        proto.begin_stream()
        try:
            while True:
                if stream.chunks:
                    if fut.done() and not fut.cancelled() and fut.exception() is not None:
                        break       # failed or timed out: the rest is not worth writing
                    await writer(stream.take())
                elif fut.done():
                    break
                else:
                    stream.waiter = self._loop.create_future()
                    await stream.waiter
        except BaseException as exc:
            replacement = session.stream_interrupted(exc, fut)
            if replacement is not None:
                await session.settle_after_interruption()
                raise replacement from None
            # The output failed, or we were cancelled: stop the COPY; the
            # protocol drains what is left before the next operation.
            session.abandon(fut)
            raise
        finally:
            stream.resume()
        if proto.end_stream():
            # The output swallowed the cancellation that interrupted it: the
            # operation's own outcome (its timeout or cancel error) follows.
            _uncancel_current_task(self._loop)
        return fut.result()

    async def _copy_in(self, query: str, source: Any, deadline: Deadline) -> str:
        loop = self._loop
        opened = None
        path = _fspath(source)
        if path is not None:
            opened = await loop.run_in_executor(None, open, path, 'rb')
            chunks = _read_chunks(loop, opened)
        elif hasattr(source, 'read'):
            chunks = _read_chunks(loop, source)
        elif isinstance(source, (bytearray, memoryview)):
            chunks = _iterate((source,))
        elif hasattr(source, '__aiter__'):
            chunks = source
        elif hasattr(source, '__iter__'):
            chunks = _iterate(source)
        else:
            raise TypeError('source must be a path, a file-like object, a bytearray or '
                            'memoryview, or an (async) iterable of bytes, '
                            f'not {type(source).__name__}')
        try:
            return await self._copy_in_stream(query, chunks, deadline)
        finally:
            if opened is not None:
                await loop.run_in_executor(None, opened.close)

    async def _copy_in_stream(self, query: str, chunks: AsyncIterable,
                              deadline: Deadline) -> str:
        proto = self._session.protocol

        async def send(fut) -> None:
            pending: list = []
            size = 0
            async for chunk in chunks:
                # (A synchronous source, or a file read without an event
                # loop, holds the thread: the deadline is checked here.)
                if proto.stream_overdue():
                    await interruption_point()
                if fut.done():
                    break       # the server failed the COPY (or it timed out)
                if not isinstance(chunk, (bytes, bytearray, memoryview)):
                    raise TypeError(f'COPY data must be bytes-like, not {type(chunk).__name__}')
                pending.append(chunk)
                size += chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)
                if size >= COPY_IN_CHUNK_BYTES:
                    await self._send_copy_data(
                        pending[0] if len(pending) == 1 else b''.join(pending), fut)
                    pending = []
                    size = 0
            if pending:
                await self._send_copy_data(b''.join(pending), fut)

        return await self._feed_copy_in(query, deadline, send)

    async def _feed_copy_in(self, query: str, deadline: Deadline, send) -> str:
        """Run COPY ... FROM STDIN, `await send(fut)` feeding it; the status tag.

        `send` stops early once `fut` (the operation) is done.  If it raises,
        the COPY is failed on the server so nothing is committed.
        """
        session = self._session
        session.check_open()
        async with session.admission.held(deadline):
            return await self._feed_copy_in_held(query, deadline, send)

    async def _feed_copy_in_held(self, query: str, deadline: Deadline, send) -> str:
        session = self._session
        proto = session.protocol
        fut = proto.copy_in(query, deadline.left())
        if not await self._copy_in_started(fut):
            return await session.wait(fut)
        proto.begin_stream()
        try:
            await send(fut)
            # The last point where a timeout means "nothing was written"
            # (past CopyDone the server commits): a source slow at its end
            # held the thread past the deadline with no chunk to check it.
            if proto.stream_overdue():
                await interruption_point()
            proto.end_stream()
            proto.copy_in_done()
        except BaseException as exc:
            replacement = session.stream_interrupted(exc, fut)
            if replacement is not None:
                await session.settle_after_interruption()
                raise replacement from None
            await self._fail_copy_in(fut, exc)
            await session.settle_after_interruption()
            raise
        return await session.wait(fut)

    async def _send_copy_data(self, data, fut) -> None:
        # A huge chunk goes as several messages (slices share its memory)
        # rather than being copied whole into one message.
        proto = self._session.protocol
        view = memoryview(data).cast('B')
        for start in range(0, len(view), COPY_IN_MESSAGE_BYTES):
            if fut.done():
                return
            proto.copy_in_data(view[start:start + COPY_IN_MESSAGE_BYTES])
            drain = proto.get_drain_waiter()
            if drain is not None:
                await drain

    async def _copy_records_in(self, query: str, state, records: Any,
                               deadline: Deadline) -> str:
        if hasattr(records, '__aiter__'):
            return await self._feed_copy_in(
                query, deadline, lambda fut: self._send_records_async(state, records, fut))
        return await self._feed_copy_in(
            query, deadline, lambda fut: self._send_records(state, records, fut))

    async def _send_records(self, state, records: Iterable, fut) -> None:
        proto = self._session.protocol
        take = _batch_taker(records, proto)
        batch = take(COPY_RECORDS_FIRST_BATCH)
        if proto.stream_overdue():
            await interruption_point()
        per_chunk = self._send_first_records(state, batch)
        base = len(batch)
        while not fut.done():
            batch = take(per_chunk)
            if proto.stream_overdue():
                await interruption_point()
            if not batch:
                break
            self._send_record_batch(state, batch, base)
            base += len(batch)
            drain = proto.get_drain_waiter()
            if drain is not None:
                await drain
        proto.copy_in_records(state, (), False, True)

    async def _send_records_async(self, state, records: AsyncIterable, fut) -> None:
        proto = self._session.protocol
        per_chunk = None
        base = 0
        batch: list = []
        async for record in records:
            batch.append(record)
            if per_chunk is None:
                if len(batch) < COPY_RECORDS_FIRST_BATCH:
                    continue
                per_chunk = self._send_first_records(state, batch)
            elif len(batch) < per_chunk:
                continue
            else:
                self._send_record_batch(state, batch, base)
            base += len(batch)
            batch = []
            if fut.done():
                break
            drain = proto.get_drain_waiter()
            if drain is not None:
                await drain
        if per_chunk is None:
            self._send_first_records(state, batch)
        elif batch:
            self._send_record_batch(state, batch, base)
        proto.copy_in_records(state, (), False, True)

    def _send_first_records(self, state, batch: Sequence) -> int:
        """Send the header and the first records; return how many records make a chunk."""
        buf = WriteBuffer()
        state.encode_copy_records(buf, batch, True, False, 0)
        data = buf.getvalue()
        self._session.protocol.copy_in_data(data)
        if not batch:
            return COPY_RECORDS_FIRST_BATCH
        per_record = max(1, (len(data) - 19) // len(batch))     # 19: the header
        return max(1, COPY_RECORDS_CHUNK_BYTES // per_record)

    def _send_record_batch(self, state, batch: Sequence, base: int) -> None:
        try:
            self._session.protocol.copy_in_records(state, batch, False, False)
        except exceptions.DataError:
            # copy_in_records() counts records from 0 in each batch; encode
            # the batch again (only on this error path) to name the record's
            # index in the whole input.
            state.encode_copy_records(WriteBuffer(), batch, False, False, base)
            raise

    async def _copy_in_started(self, fut) -> bool:
        """Wait until the server accepts COPY data (True) or the command ended (False)."""
        proto = self._session.protocol
        ready = proto.copy_ready

        def command_ended(_fut) -> None:
            if not ready.done():
                ready.set_result(False)

        fut.add_done_callback(command_ended)
        try:
            return await ready
        except BaseException:
            self._session.abandon(fut)
            raise

    async def _fail_copy_in(self, fut, exc: BaseException) -> None:
        """End a COPY FROM STDIN that our side cannot finish, so nothing is committed."""
        proto = self._session.protocol
        if isinstance(exc, Exception):
            # CopyFail makes the server abort the command and answer with
            # an error and ReadyForQuery; the caller raises `exc` instead.
            try:
                proto.copy_in_fail(copy_fail_reason(exc))
            except BaseException:
                # Not even CopyFail could be sent: close rather than leave
                # the server waiting for data that will never come.
                self._session.terminate()
                raise
            try:
                await fut
            except asyncio.CancelledError:
                proto.abandon(fut)
                raise
            except Exception:
                pass
            return
        # Cancelled (or interrupted): abandon() ends the COPY with CopyFail
        # and drains the rest before the next operation.
        self._session.abandon(fut)


def copy_fail_reason(exc: BaseException) -> str:
    """The reason CopyFail gives the server for `exc`: its type and message.

    Only the server's log sees it (the caller gets `exc` itself), so making
    it must not fail: a message that cannot be produced (a ``__str__`` that
    raises) is left out, and what a C string cannot carry (NUL, lone
    surrogates) is escaped.
    """
    name = type(exc).__name__
    try:
        text = f'{name}: {exc}'
    except Exception:
        text = f'{name} (its message could not be produced)'
    text = text[:1000].replace('\0', '\\0')
    return text.encode('utf-8', 'backslashreplace').decode('utf-8')


# --- COPY driven one call at a time (mypgdriver.core.session_api, for the DB-API) ------------

class StepwiseCopyIn:
    """A ``COPY ... FROM STDIN`` whose steps are separate calls: start, send..., finish or fail.

    For a face whose caller writes the data itself, block by block
    (psycopg's ``with cursor.copy(...) as copy: copy.write(...)``).  From
    start() to finish() or fail() the COPY holds the connection alone:
    other calls on it wait (in call order) until it ends.  Each step is one
    coroutine call; the caller must end every started COPY with exactly one
    of finish() or fail() (a ``with`` block's exit), else the connection
    stays held.
    """

    __slots__ = ('_connection', '_session', '_query', '_fut')

    def __init__(self, connection: Any, session: Session, query: str) -> None:
        self._connection = connection
        self._session = session
        self._query = query
        self._fut: Optional[asyncio.Future[Any]] = None

    async def start(self) -> None:
        """Hold the connection, send the COPY, wait until the server takes data.

        A statement that is not a COPY FROM STDIN raises the server's error,
        or ProgrammingError if it ran as something else; the connection is
        then released (nothing to finish).
        """
        session = self._session
        await self._connection._copy_hold(None)
        try:
            fut = session.protocol.copy_in(self._query, None)
            if not await self._connection._copy_in_started(fut):
                await session.wait(fut)     # the server's error (or a COPY of another kind)
                raise pep249.ProgrammingError('the statement did not start a COPY FROM STDIN')
        except BaseException:
            session.admission.release()
            raise
        self._fut = fut

    async def send(self, data: Union[bytes, memoryview]) -> None:
        """Send a block of data (nothing once the server failed the COPY: finish() says why)."""
        assert self._fut is not None
        await self._connection._send_copy_data(data, self._fut)

    async def finish(self) -> str:
        """End the COPY (CopyDone): its status tag, or the server's error; releases the connection."""
        session = self._session
        fut = self._fut
        assert fut is not None
        try:
            if not fut.done():
                session.protocol.copy_in_done()
            result: str = await session.wait(fut)
            return result
        finally:
            session.admission.release()

    async def fail(self, exc: BaseException) -> None:
        """Abort the COPY because of `exc` (CopyFail: nothing is copied); releases the connection."""
        assert self._fut is not None
        try:
            await self._connection._fail_copy_in(self._fut, exc)
        finally:
            self._session.admission.release()


class StepwiseCopyOut:
    """A ``COPY ... TO STDOUT`` read one call at a time: start, next()..., finish.

    The data streams: reading from the network pauses while
    COPY_OUT_PAUSE_BYTES wait unread.  From start() to finish() the COPY
    holds the connection alone; finish() before the end cancels the rest
    on the server (inside a transaction block, the block then fails).
    """

    __slots__ = ('_connection', '_session', '_query', '_fut', '_stream')

    def __init__(self, connection: Any, session: Session, query: str) -> None:
        self._connection = connection
        self._session = session
        self._query = query
        self._fut: Optional[asyncio.Future[Any]] = None
        self._stream = _CopyOutStream(session.protocol)

    async def start(self) -> None:
        """Hold the connection and send the COPY (the data is read by next())."""
        session = self._session
        await self._connection._copy_hold(None)
        try:
            stream = self._stream
            fut = session.protocol.copy_out(self._query, stream.feed, None)
            fut.add_done_callback(stream.wake)
        except BaseException:
            session.admission.release()
            raise
        self._fut = fut

    async def next(self) -> Optional[bytes]:
        """The data received since the last call (waiting for some), None at the end."""
        stream = self._stream
        fut = self._fut
        assert fut is not None
        while True:
            if stream.chunks:
                return stream.take()
            if fut.done():
                return None
            stream.waiter = self._session.loop.create_future()
            await stream.waiter

    async def finish(self) -> Optional[str]:
        """End the COPY: its status tag (None if left before the end); releases the connection.

        The server's error, if the COPY failed, is raised here.
        """
        session = self._session
        fut = self._fut
        assert fut is not None
        try:
            if fut.done():
                result: str = fut.result()
                return result
            # Left before the end: the protocol cancels the COPY on the server
            # and drains the rest before the next operation.
            session.abandon(fut)
            return None
        finally:
            self._stream.resume()
            session.admission.release()

"""The DB-API cursor: execute(), fetch*(), description, rowcount, nextset() (PEP 249).

A thin layer over the sync core: ``execute(query, params)`` converts the
placeholders once per query text (:mod:`mypgdriver.paramstyle`) and runs the
query through :mod:`mypgdriver.core.session_api` (the connection's
:class:`~mypgdriver.dbapi.link.ConnectionLink`): prepared and cached by the
Session's statement cache, one Bind/Execute/Sync once cached.  The cursor's row factory travels down with
the call (:mod:`mypgdriver.rows`): tuple rows (the default), ``dict_row`` and
``scalar_row`` are built by the decode loop in C straight from the binary
results; any other factory is called with the cursor itself (its
``description`` set to the new result's columns), as psycopg does, and its
row maker once per row as the rows arrive.
"""
from __future__ import annotations

import re
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Iterable,
    Iterator,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Union,
)

from mypgdriver import exceptions
from mypgdriver.core.session_api import Result
from mypgdriver.dbapi.cursorcore import CursorCore
from mypgdriver.exceptions import pep249
from mypgdriver.exceptions._hints import append_hint
from mypgdriver.paramstyle import PYFORMAT, convert, utility_statement_hint
from mypgdriver.rows import (
    Column,
    FactoryCall,
    ResultDescription,
    RowFactory,
    RowMaker,
    dict_row,
    scalar_row,
    tuple_row,
)
from mypgdriver.sql import first_keyword, skip_non_code

if TYPE_CHECKING:
    from typing_extensions import Self

    from mypgdriver.dbapi.connection import Connection
    from mypgdriver.dbapi.copy import Copy

__all__ = ('Cursor', 'Column', 'RowFactory', 'RowMaker', 'tuple_row', 'Params')

#: What execute() takes as parameters: a sequence for %s, a mapping for %(name)s.
Params = Union[Sequence[Any], Mapping[str, Any]]

# The factories the decode loop builds itself: passed down as they are.
_BUILT_IN_C = (tuple_row, dict_row, scalar_row)


class _CalledWithCursor:
    """A user's row factory as the core calls it: with the DB-API cursor (psycopg's meaning).

    The core calls a factory with a :class:`~mypgdriver.rows.ResultDescription`
    of the result about to arrive; code written for psycopg reads more than
    ``description`` from what it gets (``cursor.connection``...), so the
    cursor takes the new description and is passed instead.
    """

    __slots__ = ('cursor', 'factory')

    def __init__(self, cursor: Cursor, factory: RowFactory[Any]) -> None:
        self.cursor = cursor
        self.factory = factory

    def __call__(self, result: ResultDescription) -> RowMaker[Any]:
        cursor = self.cursor
        cursor.take_description(result.description)
        return self.factory(cursor)


def rows_as_for(cursor: Cursor, factory: RowFactory[Any]) -> Any:
    """What the core is given to make `cursor`'s rows with `factory` (see rows.choose_rows)."""
    if factory in _BUILT_IN_C:
        return factory
    return FactoryCall(_CalledWithCursor(cursor, factory))


# Commands whose tag ends with a row count (PostgreSQL docs, CommandComplete).
_COUNTED = frozenset(('INSERT', 'UPDATE', 'DELETE', 'MERGE', 'SELECT', 'COPY', 'FETCH',
                      'MOVE'))


def rowcount_of(status: Optional[str]) -> int:
    """The row count of a command tag ('INSERT 0 5' -> 5), -1 if it has none."""
    if status:
        head, _, count = status.rpartition(' ')
        if count.isdigit() and head.split(' ', 1)[0] in _COUNTED:
            return int(count)
    return -1


# Statements that go through the extended protocol (a prepared statement,
# binary results, the statement cache) when run without parameters; any
# other statement without parameters (DDL, SET, BEGIN, VACUUM...) runs with
# the simple query protocol, where DDL also tells the statement cache that
# the schema changed.
_PREPARED_KEYWORDS = frozenset(('select', 'values', 'table', 'with', 'insert', 'update',
                                'delete', 'merge', 'show', 'explain', 'fetch', 'call'))


def has_several_statements(query: str) -> bool:
    """True if `query` has SQL code after a top-level ';' (comments and strings skipped)."""
    i = query.find(';')
    if i < 0:
        return False
    n = len(query)
    i = 0
    seen_semicolon = False
    while i < n:
        end = skip_non_code(query, i)
        if end != i:
            if seen_semicolon and not query.startswith(('--', '/*'), i):
                return True
            i = end
            continue
        ch = query[i]
        if ch == ';':
            seen_semicolon = True
        elif seen_semicolon and not ch.isspace():
            return True
        i += 1
    return False


# First keywords that keep a multi-statement query in one simple Query: the
# script controls its own transaction (or runs COPY), which the statements
# run one by one inside a transaction of ours could not do.
_SCRIPT_KEYWORDS = frozenset(('begin', 'start', 'commit', 'end', 'rollback', 'abort',
                              'savepoint', 'release', 'prepare', 'copy'))
_BEGIN_ATOMIC = re.compile(r'\bbegin\s+atomic\b', re.IGNORECASE)


def split_statements(query: str) -> Optional[list[str]]:
    """The statements of a multi-statement `query`, or None if it runs as one simple Query.

    Split at the top-level semicolons (strings, quoted names and comments
    skipped); empty statements are dropped.  None when a statement controls
    transactions (BEGIN, COMMIT, SAVEPOINT...) or is a COPY, or when the
    text has a ``BEGIN ATOMIC ... END`` function body (its semicolons are
    not statement ends).
    """
    statements: list[str] = []
    code: list[str] = []        # the text with every non-code run blanked
    start = 0
    i = 0
    n = len(query)
    while i < n:
        end = skip_non_code(query, i)
        if end != i:
            code.append(' ')
            i = end
            continue
        ch = query[i]
        code.append(ch)
        if ch == ';':
            statements.append(query[start:i])
            start = i + 1
        i += 1
    statements.append(query[start:])
    if _BEGIN_ATOMIC.search(''.join(code)):
        return None
    kept = []
    for statement in statements:
        keyword = first_keyword(statement)
        if not keyword:
            continue
        if keyword in _SCRIPT_KEYWORDS:
            return None
        kept.append(statement.strip())
    return kept


def runs_as_script(query: str) -> bool:
    """True if a parameterless `query` runs with the simple query protocol (see above)."""
    return first_keyword(query) not in _PREPARED_KEYWORDS or has_several_statements(query)


class Cursor(CursorCore):
    """A DB-API cursor (client-side): the result of each execute is fetched whole.

    Made by :meth:`Connection.cursor`.  execute() runs the query and keeps
    its rows, made by the row factory (tuples by default) as they arrive;
    fetchone(), fetchmany(), fetchall() and iteration hand them out.  For results too big
    to hold in memory, use a server-side cursor (``conn.cursor(name=...)``).
    """

    # Its state, execute() and the fetches are CursorCore's (cursorcore.pyx).
    __slots__ = ()

    def __init__(self, connection: Connection, *,
                 row_factory: Optional[RowFactory[Any]] = None) -> None:
        """Use :meth:`Connection.cursor`."""
        super().__init__(connection.link)
        self._conn = connection
        #: The default number of rows fetchmany() returns (PEP 249; 1 by default).
        self.arraysize = 1
        factory = row_factory if row_factory is not None else connection.row_factory
        self.row_factory_: RowFactory[Any] = factory
        self._rows_as = rows_as_for(self, factory)

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'open'
        return f'<{type(self).__module__}.{type(self).__qualname__} {state}>'

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # --- attributes -----------------------------------------------------------------------

    @property
    def connection(self) -> Connection:
        """The connection this cursor runs on (PEP 249 extension)."""
        return self._conn

    @property
    def row_factory(self) -> RowFactory[Any]:
        """The row factory of the results (the connection's by default); settable.

        Rows are made as they arrive: a factory set after execute() makes
        the rows of the next execute(), not those of the current result.
        """
        return self.row_factory_

    @row_factory.setter
    def row_factory(self, factory: RowFactory[Any]) -> None:
        self.row_factory_ = factory
        self._rows_as = rows_as_for(self, factory)

    @property
    def description(self) -> Optional[tuple[Column, ...]]:
        """The columns of the current result (PEP 249), or None when it has no rows."""
        if self._pending is not None:
            self._wait_pending()
        return self._description

    @property
    def rowcount(self) -> int:
        """Rows returned or affected by the last command, -1 if unknown (PEP 249).

        Taken from the command tag: SELECT, INSERT, UPDATE, DELETE, MERGE,
        COPY, FETCH and MOVE; after executemany(), the sum over the runs.
        """
        if self._pending is not None:
            self._wait_pending()
        count = self._rowcount
        if count is None:
            # Parsed from the tag when asked for: most code never looks.
            count = self._rowcount = rowcount_of(self._status)
        return count

    @property
    def statusmessage(self) -> Optional[str]:
        """The command tag of the current result, e.g. ``'INSERT 0 1'`` (None before any)."""
        if self._pending is not None:
            self._wait_pending()
        return self._status

    @property
    def lastrowid(self) -> None:
        """Always None: PostgreSQL has no row ids to report (use ``RETURNING``)."""
        return None

    @property
    def query(self) -> Optional[str]:
        """The text of the last query sent (with ``$n`` placeholders), or None."""
        return self._query

    @property
    def rownumber(self) -> Optional[int]:
        """The index of the next row of the current result, or None without a result."""
        if self._pending is not None:
            self._wait_pending()
        return None if self._rows is None else self._pos

    @property
    def closed(self) -> bool:
        """True once close() was called (or the connection was closed)."""
        return self._closed or self._conn.closed

    # --- running --------------------------------------------------------------------------

    # execute()'s parts in Python (CursorCore.execute() calls them):

    def _ran_as_script(self, text: str) -> bool:
        """For an execute() without parameters: run `text` as a script if it is one; whether it was.

        A statement the cache holds is never a script.  A script is run as
        CursorCore.execute()'s docstring says: statement by statement,
        keeping every result, or whole as one simple query.
        """
        link = self._link
        if link.statements.is_cached(text) or not runs_as_script(text):
            return False
        several = split_statements(text) if has_several_statements(text) else None
        if several is not None:
            self._run_statements(several)
        else:
            self._set_command(link.simple(text))
        return True

    def _queue(self, text: str, args: Sequence[Any]) -> None:
        """execute() inside a pipeline: queue `text` with `args`; its result is read when needed.

        The cursor has no result until then: fetch*(), description,
        rowcount, statusmessage and nextset() wait for this statement's
        answer (CursorCore._wait_pending()) and raise its error.  A str
        that its parameter's binary codec refuses is queued as text
        instead, as execute() sends it outside a pipeline.
        """
        link = self._link
        pipeline = link.pipeline
        assert pipeline is not None
        link.begin_implicit()
        try:
            pending = pipeline.submit(text, args, self._rows_as)
        except exceptions.DataError as e:
            # Refused before anything was queued: a str goes as text.
            pending = pipeline.submit(text, link.str_as_text(args, e), self._rows_as)
        self._pending = pending
        self._results = []
        self._index = 0
        self._rows = None
        self._pos = 0
        self._description = None
        self._status = None
        self._rowcount = -1

    def _recover(self, error: Exception, text: str, args: Sequence[Any],
                 params: Optional[Params]) -> Result:
        """After execute()'s run of `text` raised `error`: the Result it recovers to, or the error.

        A value a codec refused (DataError, raised before anything was
        sent) goes again with a str bound as text, as psycopg binds it; an
        InterfaceError of a wrong parameter count says what the server
        expects; a server error on a statement that takes no parameters
        (SET, DDL) gets a hint.  Any other error is raised as it is.
        """
        link = self._link
        try:
            if isinstance(error, exceptions.DataError):
                # Refused by a codec: a str goes again as text, as in psycopg.
                return link.run_str_as_text(text, args, self._rows_as, error)
            raise error
        except exceptions.QueryParameterError:
            raise
        except exceptions.InterfaceError:
            expected = link.statements.parameter_count(text)
            if expected is None or expected == len(args):
                raise
            raise _parameter_count_error(text, len(args), expected) from None
        except exceptions.PostgresError as e:
            _add_parameter_hint(e, text, params)
            raise

    def executemany(self, query: str, params_seq: Iterable[Params], *,
                    returning: bool = False) -> None:
        """Run `query` once per parameter set, pipelined in one round trip; atomic.

        All runs travel in one pipeline (the sync core's executemany); if one
        fails, none is applied (the error is raised).  `rowcount` is then the
        sum of the runs' counts.  With `returning`, the rows of each run
        (``INSERT ... RETURNING``) are kept: the cursor is on the first run's
        result and nextset() moves to the next one, as in psycopg 3.
        """
        link = self._link
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        with link.lock:
            converted = convert(query, PYFORMAT)
            text = converted.text
            self._query = text
            arguments = converted.arguments
            link.begin_implicit()
            if link.pipeline is not None:
                self._executemany_queued(text, (arguments(params) for params in params_seq),
                                         returning)
                return
            try:
                groups, description = link.run(link.statements.run_each(
                    text, (arguments(params) for params in params_seq),
                    self._rows_as if returning else None))
            except exceptions.PostgresError as e:
                _add_parameter_hint(e, text, True)
                raise
            if returning:
                results = [Result(rows if description is not None else None, status,
                                  description) for rows, status in groups]
                self._load_results(results)
                if not results:
                    self._rowcount = 0
            else:
                self._load_results([])
                self._rowcount = sum(rowcount_of(status) for _, status in groups)

    def _executemany_queued(self, text: str, arguments: Iterable[Sequence[Any]],
                            returning: bool) -> None:
        # executemany() inside a pipeline: each run queued, then their
        # answers read (one flush, not a sync point: the pipeline's segment
        # goes on, so the runs are atomic only as the segment is).
        link = self._link
        pipeline = link.pipeline
        assert pipeline is not None
        rows_as = self._rows_as if returning else None
        pending = [pipeline.submit(text, args, rows_as) for args in arguments]
        results = [p.result() for p in pending]
        if returning:
            self._load_results(results)
            if not results:
                self._rowcount = 0
        else:
            self._load_results([])
            self._rowcount = sum(rowcount_of(result.status) for result in results)

    def callproc(self, procname: str, parameters: Sequence[Any] = ()) -> Sequence[Any]:
        """Call the function `procname` with `parameters` (``SELECT * FROM procname(...)``).

        PEP 249: the result is fetched like a query's; the parameters are
        returned unchanged (PostgreSQL functions have no output parameters
        to write back: their OUT values are the result's columns).
        `procname` is SQL text (a name, possibly schema-qualified), not quoted.
        """
        placeholders = ', '.join(['%s'] * len(parameters))
        self.execute(f'SELECT * FROM {procname}({placeholders})', parameters)
        return parameters

    def copy(self, statement: str, params: Optional[Params] = None) -> Copy:
        """A :class:`~mypgdriver.dbapi.Copy` for ``COPY ... FROM STDIN`` or ``TO STDOUT``.

        Use it as a context manager (psycopg 3's cursor.copy()): write()
        or write_row() for FROM STDIN, iteration, read() or rows() for TO
        STDOUT.  `params` are not supported (NotSupportedError): COPY takes
        no parameters on the server.
        """
        from mypgdriver.dbapi.copy import Copy

        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        if self._link.pipeline is not None:
            raise pep249.NotSupportedError(
                'COPY cannot run inside a pipeline (conn.pipeline()): run it after the block')
        if params is not None:
            raise pep249.NotSupportedError(
                'COPY takes no parameters: write the values into the statement as '
                'literals (mypgdriver.sql.quote_literal()), or filter in a query run '
                'with execute()')
        return Copy(self, statement)

    def copy_expert(self, sql: str, file: Any, size: int = 8192) -> None:
        """psycopg2's copy_expert(): run a COPY statement with `file` as its data.

        ``COPY ... FROM STDIN`` reads `file` (``read(size)``, str or bytes);
        ``COPY ... TO STDOUT`` writes to it (bytes, or str to a text file).
        """
        with self.copy(sql) as copy:
            if copy.direction == 'in':
                while True:
                    data = file.read(size)
                    if not data:
                        break
                    copy.write(data)
            else:
                text = _is_text_file(file)
                for block in copy:
                    file.write(block.decode() if text else block)

    def nextset(self) -> Optional[bool]:
        """Move to the next result; True, or None if there is none.

        Results come one per statement of a multi-statement execute(), and
        one per run of executemany(returning=True).
        """
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        if self._pending is not None:
            self._wait_pending()
        if self._index + 1 < len(self._results):
            self._index += 1
            self._select_result(self._results[self._index])
            return True
        return None

    def setinputsizes(self, sizes: Any) -> None:
        """Does nothing (PEP 249 allows it): parameter types come from the server."""

    def setoutputsize(self, size: Any, column: Optional[int] = None) -> None:
        """Does nothing (PEP 249 allows it)."""

    def close(self) -> None:
        """Close the cursor: its rows are dropped, and further use raises InterfaceError."""
        self._closed = True
        self._pending = None
        self._results = []
        self._rows = None
        self._description = None

    # --- fetching -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        rows = self._current_rows()
        while self._pos < len(rows):
            pos = self._pos
            self._pos = pos + 1
            yield rows[pos]

    def scroll(self, value: int, mode: str = 'relative') -> None:
        """Move the position in the current result (client-side: within the fetched rows).

        `mode` 'relative' (from the current position) or 'absolute' (from
        the first row).  Moving out of the result raises IndexError and
        leaves the position as it was.
        """
        rows = self._current_rows()
        if mode == 'relative':
            target = self._pos + value
        elif mode == 'absolute':
            target = value
        else:
            raise ValueError(f"mode must be 'relative' or 'absolute', not {mode!r}")
        if not 0 <= target <= len(rows):
            raise IndexError(f'position {target} is out of the result '
                             f'(0 to {len(rows)})')
        self._pos = target

    # --- internals ------------------------------------------------------------------------

    def _run_statements(self, statements: list[str]) -> None:
        """Run the statements of a multi-statement execute(), keeping every result.

        One after the other, each as execute() runs it alone (a prepared
        statement with binary results, or a simple Query for DDL, SET...).
        In autocommit mode they run inside BEGIN ... COMMIT, rolled back if
        one fails: the atomicity of a multi-statement simple Query.
        """
        link = self._link
        run = link.run
        runner = link.statements
        wrapped = link.autocommit and not link.in_transaction()
        if wrapped:
            link.simple('BEGIN')
        results: list[Result] = []
        try:
            for statement in statements:
                if first_keyword(statement) not in _PREPARED_KEYWORDS:
                    results.append(Result(None, link.simple(statement), None))
                    continue
                results.append(run(runner.run(statement, (), self._rows_as)))
        except BaseException:
            if wrapped and not link.is_closed() and link.in_transaction():
                link.simple('ROLLBACK')
            raise
        if wrapped:
            link.simple('COMMIT')
        self._load_results(results)

    def _current_rows(self) -> list[Any]:
        if self._pending is not None:
            self._wait_pending()
        rows = self._rows
        if rows is None:
            self._no_result()
        return rows

    def _no_result(self) -> NoReturn:
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        raise pep249.ProgrammingError(
            "no result to fetch from: the last operation did not return rows"
            if self._query is not None else 'no result to fetch from: nothing was executed')

    # For the row factories and COPY of this package (not the cursor's users):

    def take_description(self, description: Optional[tuple[Column, ...]]) -> None:
        """Show `description` as the current one (a row factory is about to be called)."""
        self._description = description

    def show_command(self, status: Optional[str]) -> None:
        """Make a command's status tag (no rows) the cursor's one result (COPY's end)."""
        self._set_command(status)

    def _set_command(self, status: Optional[str]) -> None:
        result = Result(None, status, None)
        self._results = [result]
        self._index = 0
        self._select_result(result)

    def _load_results(self, results: list[Result]) -> None:
        self._results = results
        self._index = 0
        if results:
            self._select_result(results[0])
        else:
            self._rows = None
            self._description = None
            self._status = None
            self._rowcount = -1


def _add_parameter_hint(error: exceptions.PostgresError, query: str, params: object) -> None:
    # Parameters where PostgreSQL takes none (SET, DDL): psycopg2 interpolated them.
    if params is not None and error.sqlstate in ('42601', '42P02'):
        hint = utility_statement_hint(query)
        if hint is not None and (error.hint is None or hint not in error.hint):
            append_hint(error, hint)


def _parameter_count_error(query: str, given: int,
                           expected: int) -> exceptions.QueryParameterError:
    # A utility statement (SET, DDL) is prepared with no parameters at all,
    # whatever $n it contains.
    hint = utility_statement_hint(query) if given and not expected else None
    return exceptions.QueryParameterError(
        f'the server expects {expected} parameter{"s" if expected != 1 else ""} for this '
        f'statement, {given} {"was" if given == 1 else "were"} given', hint=hint)


def _is_text_file(file: Any) -> bool:
    import io

    return isinstance(file, io.TextIOBase) or 'b' not in getattr(file, 'mode', 'b')

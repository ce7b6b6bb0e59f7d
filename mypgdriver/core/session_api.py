"""What the Session offers to the faces built on it (mypgdriver.dbapi first).

A face (the DB-API, psycopg-shaped) runs statements through one
:class:`StatementRunner` per connection and through public APIs only: it
never reaches into the Session, the protocol, a PreparedStatement or the
asyncio Connection.  Every method here is a coroutine of the Session's
kind: the asyncio face awaits it, the sync glue (``call_runner()`` of
:mod:`mypgdriver.sync.connection`) drives it without an event loop.

Promises shared by every method (they are the Session's, see
mypgdriver/core/session.py):

* **order**: a call's messages go out in call order, after those of every
  call made before it on the connection, and before those of any made after;
* **deadline**: one deadline per call, from the connection's
  ``command_timeout`` (these methods take no timeout of their own); a call
  past it raises TimeoutError once the server answered the cancel;
* **cancel**: a caller that stops waiting (cancelled task, timeout) abandons
  the operation: the server is asked to cancel it, what is left is drained
  before the next call, and the connection stays in sync;
* **errors and the transaction**: an exception raised before anything was
  sent (a DataError of a codec, a QueryParameterError, InterfaceError on a
  closed connection) applied nothing and leaves an open transaction as it
  was; an error of the server (a PostgresError) fails an open transaction
  block, as any failed statement does (roll it back); TimeoutError and
  ConnectionDoesNotExistError say the outcome is unknown only where their
  message says so (a COMMIT's answer lost with the connection).

Statements are prepared and cached by the Session's statement cache (the
one cache of the connection: ``statement_cache_size``, and its behaviour
through transaction-mode poolers); nothing here keeps a second one.

Where the other faces stand: the asyncio Connection and mypgdriver.sync
call the Session directly, with their own signatures (``fetch`` returns rows
only, ``execute`` a tag only); their hot paths cost one coroutine frame
fewer that way, so they do not go through this module, which exists for
faces that need the rows, the tag and the description of one run together.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from mypgdriver.connection import session_of
from mypgdriver.copy import StepwiseCopyIn, StepwiseCopyOut
from mypgdriver.core.result import Result, result_of
from mypgdriver.protocol.protocol import ROWS_PER_STATEMENT, WANT_RESULT
from mypgdriver.protocol.record import Record
from mypgdriver.rows import Column

if TYPE_CHECKING:
    from mypgdriver.connection import Connection
    from mypgdriver.core.session import Session
    from mypgdriver.protocol.statement import StatementState

__all__ = ('Result', 'StatementRunner', 'RowStream', 'StepwiseCopyIn', 'StepwiseCopyOut',
           'WANT_RESULT', 'result_of')

# Session.execute()'s `want_status` is annotated as a bool (rows or tag);
# the protocol's third answer, the whole result, is an int like the others.
_WANT_RESULT: Any = WANT_RESULT


class StatementRunner:
    """The statements of one connection as a face runs them (see the module docstring)."""

    __slots__ = ('connection', 'session')

    def __init__(self, connection: Connection) -> None:
        """For the asyncio `connection` (the sync face's: ``async_connection(conn)``)."""
        self.connection = connection
        self.session: Session = session_of(connection)

    # --- state ------------------------------------------------------------------------------

    def is_closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self.session.is_closed()

    def in_transaction(self) -> bool:
        """The server's transaction status (True while it is not known: the safe side)."""
        return self.session.is_in_transaction()

    def is_cached(self, query: str) -> bool:
        """Whether the statement cache holds an open statement of `query` (no round trip)."""
        return self.session.statements.cached(query) is not None

    def parameter_count(self, query: str) -> Optional[int]:
        """The parameter count of `query`'s cached statement, None if it is not cached."""
        state = self.session.statements.cached(query)
        return None if state is None else len(state.param_oids)

    # --- running ----------------------------------------------------------------------------

    async def run(self, query: str, args: Sequence[Any], rows_as: Any) -> Result:
        """Run `query` (``$n`` placeholders) with `args`, prepared: its one Result.

        The extended protocol, binary results, the statement cached by the
        Session (prepared at its first use; prepared again and run once more,
        in its place, after a schema change).  `rows_as` is what
        :func:`mypgdriver.rows.choose_rows` makes rows with (a row factory,
        a FactoryCall, a Record class).  `args` may be a
        :class:`~mypgdriver.protocol.statement.StrAsTextArguments` (a str
        refused by its binary codec, sent again as text).  One Bind/Execute/
        Sync per call once prepared; the query logger and tracing see it as
        any ``execute``.  A DataError raised by a codec was raised before
        anything was sent (see :func:`mypgdriver.protocol.statement.refused_argument`).
        """
        rows, status, state = await self.session.execute(query, args, 0, None, _WANT_RESULT,
                                                         rows_as)
        return result_of(rows, status, state)

    async def run_each(self, query: str, arguments: Iterable[Sequence[Any]],
                       rows_as: Any) -> tuple[list[tuple[list[Any], str]],
                                              Optional[tuple[Column, ...]]]:
        """Run `query` once per row of `arguments`: each run's (rows, tag), and the description.

        One pipeline, atomic: all runs or none are applied (the first error
        in row order is raised; inside a transaction block our own failure
        undoes the rows sent with a savepoint, a server error fails the
        block).  The connection is held alone while the rows stream.
        `rows_as` None: the rows are Records (to be ignored).  The
        description is None for a statement without rows; it comes from the
        statement cache, or (with the cache off) one more Parse/Describe.
        """
        session = self.session
        groups: list[tuple[list[Any], str]] = await session.executemany(
            query, arguments, None, return_rows=ROWS_PER_STATEMENT,
            rows_as=Record if rows_as is None else rows_as)
        state = session.statements.cached(query)
        if state is None:
            if not any(rows for rows, _ in groups):
                return groups, None
            state = await session.prepare_state(query, session.resolve_timeout(None),
                                                cache=False)
        return groups, result_of([], None, state).description

    async def simple(self, query: str) -> str:
        """Run `query` with the simple query protocol (several statements allowed): the last tag.

        For commands without parameters (DDL, SET, BEGIN, COMMIT...): no
        statement is prepared; DDL tells the statement cache that the schema
        may have changed.
        """
        return await self.connection.execute(query)

    async def value(self, query: str, *args: Any) -> Any:
        """The first column of the first row of `query` (a driver query, Records)."""
        return await self.connection.fetchval(query, *args)

    async def prepare_stream(self, query: str, name: str) -> RowStream:
        """Prepare `query` as the server statement `name`, outside the cache: a RowStream.

        For statements whose result depends on more than their text (a
        ``FETCH`` from a cursor that may be declared again for another
        query): the statement belongs to the RowStream, and is closed on
        the server once the RowStream is closed or garbage collected.
        """
        session = self.session
        session.check_open()
        state = await session.prepare_state(query, session.resolve_timeout(None), name=name,
                                            cache=False)
        return RowStream(session, state)

    # --- COPY -------------------------------------------------------------------------------

    def copy_in(self, query: str) -> StepwiseCopyIn:
        """A ``COPY ... FROM STDIN`` driven one call at a time (see StepwiseCopyIn)."""
        return StepwiseCopyIn(self.connection, self.session, query)

    def copy_out(self, query: str) -> StepwiseCopyOut:
        """A ``COPY ... TO STDOUT`` driven one call at a time (see StepwiseCopyOut)."""
        return StepwiseCopyOut(self.connection, self.session, query)


class RowStream:
    """A prepared statement run again and again for the next rows (server-side cursors).

    Made by :meth:`StatementRunner.prepare_stream`.  Each fetch() is one
    Bind/Execute/Sync of the statement, in call order with the connection's
    other calls.
    """

    __slots__ = ('session', 'state', 'description', '__weakref__')

    def __init__(self, session: Session, state: StatementState) -> None:
        self.session = session
        self.state: Optional[StatementState] = state
        session.statements.hold(state)
        session.statements.attach(state)
        #: The statement's result columns (None: it returns no rows).
        self.description = result_of([], None, state).description

    async def fetch(self, rows_as: Any) -> Result:
        """Run the statement once: its rows, status tag and description."""
        state = self.state
        if state is None:
            raise RuntimeError('the RowStream is closed')
        session = self.session
        deadline = session.deadline(session.resolve_timeout(None))
        if state.codecs_generation != session.codecs.generation:
            # A codec was set since the statement was prepared (as a
            # PreparedStatement's run does: the columns' codecs re-picked).
            await session.refresh_codecs(state, deadline)
        rows, status, state = await session.run_state(
            state, (), 0, deadline, WANT_RESULT, rows_as)
        return result_of(rows, status, state)

    def close(self) -> None:
        """Let the statement go: its Close is sent before the connection's next call."""
        state, self.state = self.state, None
        if state is not None:
            self.session.statements.detach(state)

    def __del__(self) -> None:
        if getattr(self, 'state', None) is not None:
            self.close()

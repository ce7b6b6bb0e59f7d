"""Pipeline mode: statements sent without waiting for their answers (Connection.pipeline()).

One mechanism for every face: the sync Connection's ``with conn.pipeline()``,
the asyncio Connection's ``async with conn.pipeline()`` and what the DB-API
builds on them run this code; the faces only give each result object its
way to wait (mypgdriver/sync/pipeline.py, mypgdriver/pipeline.py).

On the wire (PostgreSQL docs, "Pipelining"):

* each statement is ``Bind, Execute`` (a cached statement), with ``Parse,
  Describe`` in front when the statement cache says so (the unnamed
  statement, or a cached one not created on the server yet), and no Sync;
  a statement not in the cache is prepared inside the pipeline first
  (``Parse, Describe, Flush``: one round trip, no Sync, so the pipeline's
  transaction is not cut) and then goes into the cache;
* nothing is sent until a result is needed (``Flush`` then: the server
  sends what it has), a sync point is asked for (``Sync``) or the pipeline
  has written OUT_PENDING_LIMIT bytes (protocol.pyx);
* a *segment* is what lies between two Syncs: the server runs it as one
  implicit transaction unless it contains BEGIN; after an error it skips
  the rest of the segment.  The failed statement's result raises the
  server's error, every skipped one :exc:`~mypgdriver.exceptions.PipelineAborted`.

Where results live: the protocol answers each statement's Future at its
CommandComplete (or ErrorResponse), in order, and each result object holds
its Future.  ``segment`` lists the results since the last sync(), so that
sync() and the end of the block raise the first error nobody looked at.

The pipeline holds the connection alone (Admission.hold()) for its block:
other callers wait for its end, and a call of the pipeline's own caller on
the connection itself is refused (Admission.take_turn()), since it would
wait for the block it runs in.

Interruptions: a wait that times out or is cancelled (Ctrl-C in sync code)
aborts the open segment (a failing Execute and a Sync: nothing of it is
committed), sends a CancelRequest if a statement is running, and waits (at
most CANCEL_ANSWER_WAIT) for the sync point's answer before it raises; the
connection stays in sync and the pipeline usable.
"""
from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar

from mypgdriver import exceptions
from mypgdriver.codecs import introspection
from mypgdriver.core import deadlines, waits
from mypgdriver.core.admission import PIPELINE_REFUSED
from mypgdriver.core.deadlines import NO_DEADLINE, Deadline, check_timeout
from mypgdriver.core.result import result_of
from mypgdriver.protocol.protocol import (
    ABORT_PORTAL,
    WANT_ROWS,
    check_record_class,
    pipeline_aborted_error,
)
from mypgdriver.protocol.record import Record
from mypgdriver.protocol.statement import (
    StatementState,
    check_argument_count,
    missing_statement_types,
    resolve_statement_codecs,
)

if TYPE_CHECKING:
    from mypgdriver.core.session import Session

__all__ = ('PipelineCore', 'PendingResult', 'SHAPE_ROWS', 'SHAPE_ROW', 'SHAPE_VALUE',
           'SHAPE_STATUS', 'SHAPE_RESULT', 'PIPELINE_REFUSED')

T = TypeVar('T')

#: What a result object gives of its statement's answer.
SHAPE_ROWS = 0      # fetch(): the rows
SHAPE_ROW = 1       # fetchrow(): the first row or None
SHAPE_VALUE = 2     # fetchval(): one value of the first row, or None
SHAPE_STATUS = 3    # execute(): the status tag
SHAPE_RESULT = 4    # submit(): a Result (rows, status tag, description), for the DB-API

# Statements that cannot go into a pipeline: COPY switches the stream into
# copy mode (the messages behind it would be read as copy data), DISCARD
# ALL and DEALLOCATE drop the statements that the Binds behind them name.
_REFUSED_STATEMENT = re.compile(
    r'(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*(copy|discard|deallocate)\b',
    re.IGNORECASE | re.DOTALL).match


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class PendingResult(Generic[T]):
    """The result of one pipelined statement, answered in order (see the faces' PipelineResult)."""

    __slots__ = ('_core', '_fut', '_shape', '_column', '_seq', '_seen', '_deadline', '_error',
                 '__weakref__')

    def __init__(self, core: PipelineCore, fut: asyncio.Future[Any], shape: int, column: Any,
                 seq: int, deadline: Deadline) -> None:
        self._core = core
        self._fut = fut
        self._shape = shape
        self._column = column
        # The protocol's number of its operation (0: never sent).
        self._seq = seq
        # result() was asked (its error, if any, was raised to someone).
        self._seen = False
        self._deadline = deadline
        # What result() raises instead of the Future's outcome (a timeout).
        self._error: Optional[BaseException] = None

    def done(self) -> bool:
        """True once the statement's answer (its result, or its error) is in: result() does not wait."""
        return self._fut.done()

    def _value(self) -> T:
        # The answer, as the shape says; the Future is done.
        self._seen = True
        if self._error is not None:
            raise self._error
        fut = self._fut
        error = fut.exception()
        if error is not None:
            if isinstance(error, exceptions.ConnectionDoesNotExistError):
                self._error = error = self._core.lost_error(error, self._seq)
            raise error
        value = fut.result()
        shape = self._shape
        if shape == SHAPE_ROWS or shape == SHAPE_STATUS:
            return value      # type: ignore[no-any-return]
        if shape == SHAPE_RESULT:
            rows, status, state = value
            return result_of(rows, status, state)  # type: ignore[return-value]
        if not value:
            return None       # type: ignore[return-value]
        if shape == SHAPE_ROW:
            return value[0]   # type: ignore[no-any-return]
        return value[0][self._column]   # type: ignore[no-any-return]

    def __repr__(self) -> str:
        state = 'done' if self._fut.done() else 'pending'
        return f'<{type(self).__name__} {state}>'


class PipelineCore:
    """The pipeline of one connection, open from begin() to end() (see the module docstring)."""

    __slots__ = ('session', 'protocol', 'loop', 'cache', 'segment', 'checked', 'open',
                 'owner', 'face', 'failures', 'local_failures', 'unnamed')

    def __init__(self, session: Session) -> None:
        self.session = session
        self.protocol = session.protocol
        self.loop = session.loop
        self.cache = session.stmt_cache
        #: Results since the last sync(), in order.
        self.segment: list[PendingResult[Any]] = []
        #: Query texts checked for statements a pipeline refuses (_REFUSED_STATEMENT).
        self.checked: set[str] = set()
        #: Statements outside the statement cache (too long, or the cache
        #: off), described in this pipeline: the unnamed statement's.
        self.unnamed: dict[str, StatementState] = {}
        self.open = False
        #: The caller that opened it (Session.current_task()).
        self.owner: Any = None
        #: What the face keeps here (the sync face: its runner's run()).
        self.face: Any = None
        #: The protocol's count of failed pipelined statements at the last
        #: sync(), and the results failed here since (not sent, or their
        #: prepare failed): sync() looks for an unread error only if either moved.
        self.failures = self.protocol.pipe_failures
        self.local_failures = 0

    # --- opening and closing --------------------------------------------------------------

    async def begin(self, deadline: Deadline) -> None:
        """Take the connection alone (once what runs has finished) and enter pipeline mode."""
        session = self.session
        session.check_open()
        if session.pipeline is not None and self.protocol.pipeline_on:
            raise exceptions.InterfaceError(
                'a pipeline is already open on this connection: pipelines do not nest')
        await session.admission.hold(deadline)
        try:
            self.protocol.pipeline_begin()
        except BaseException:
            session.admission.release()
            raise
        self.owner = session.current_task()
        session.admission.pipeline_owner = self.owner
        session.pipeline = self
        self.open = True

    async def close(self, abort: bool, deadline: Deadline) -> None:
        """The end of the block: sync and raise the first error nobody read; or, with `abort`, abort.

        `abort`: the block is left by an interruption (KeyboardInterrupt,
        a cancelled task): the open segment is aborted instead of committed.
        """
        if not self.open:
            return
        try:
            if abort:
                await self.abort()
            else:
                await self.sync(deadline)
        finally:
            self.end()

    def end(self) -> None:
        """Leave pipeline mode (never with a segment left without its Sync) and give the connection back."""
        self.open = False
        proto = self.protocol
        if proto.pipeline_on:
            # (compiled: the abort of an open segment, leaving the mode and
            # the release of the connection happen together or not at all)
            proto.pipeline_end()
        self.tidy()

    def tidy(self) -> None:
        """After end(): the results' outcomes retrieved, the Session told (idempotent)."""
        segment = self.segment
        self.segment = []
        for result in segment:
            # Their outcomes are the results' to report, not the loop's
            # "exception never retrieved" (a result nobody read).
            fut = result._fut
            if fut.done():
                _retrieve(fut)
            else:
                fut.add_done_callback(_retrieve)
        session = self.session
        if session.pipeline is self:
            session.pipeline = None
            session.admission.pipeline_owner = None

    def check_usable(self) -> None:
        if not self.open or not self.protocol.pipeline_on:
            raise exceptions.InterfaceError('the pipeline is closed: its block has ended')
        if self.session.closed:
            self.session.check_open()

    # --- statements -----------------------------------------------------------------------

    def send(self, cls: type[PendingResult[Any]], query: str, args: Any, limit: int,
             timeout: Optional[float], want: int, rows_as: Any, shape: int,
             column: Any) -> Optional[PendingResult[Any]]:
        """Queue `query` with `args` if its statement is cached; its result object, or None.

        None: the slow path must run (send_slow(): a statement to prepare,
        a cancel to wait out, a query not checked yet).  A DataError of an
        argument is raised before anything is queued.
        """
        if not self.open:
            self.check_usable()
        session = self.session
        if session.closed:
            session.check_open()
        state = self.cache.get(query)
        if state is None:
            state = self.unnamed.get(query)
        proto = self.protocol
        if (state is None or state.closed or query not in self.checked
                or state.codecs_generation != session.codecs.generation
                or proto.gate() is not None or proto.pipeline_failed):
            return None
        timeout = session.command_timeout if timeout is None else check_timeout(timeout)
        deadline = NO_DEADLINE if timeout is None else Deadline(self.loop, timeout)
        if rows_as is None:
            rows_as = session.rows_default
        # _queue(), inline: the hot path of a pipelined statement.
        result = cls(self, proto.pipeline_bind_execute(state, args, limit, want, rows_as),
                     shape, column, proto.op_seq, deadline)
        self.segment.append(result)
        return result

    async def send_slow(self, cls: type[PendingResult[Any]], query: str, args: Any, limit: int,
                        timeout: Optional[float], want: int, rows_as: Any, shape: int,
                        column: Any) -> PendingResult[Any]:
        """send() when the statement must be prepared first (or a cancel waited out)."""
        self.check_usable()
        session = self.session
        timeout = session.command_timeout if timeout is None else check_timeout(timeout)
        deadline = session.deadline(timeout)
        if rows_as is None:
            rows_as = session.rows_default
        elif isinstance(rows_as, type):
            check_record_class(rows_as)
        if query not in self.checked:
            refused = _REFUSED_STATEMENT(query)
            if refused is not None:
                raise exceptions.InterfaceError(
                    f'{refused.group(1).upper()} cannot run inside a pipeline: '
                    + ('use the copy methods of the connection after the pipeline block'
                       if refused.group(1).lower() == 'copy' else
                       'it drops the prepared statements that the statements pipelined '
                       'behind it use; run it after the pipeline block'))
            self.checked.add(query)
        proto = self.protocol
        gate = proto.gate()
        if gate is not None and not gate.done():
            # A CancelRequest of an aborted segment is on its way: nothing is
            # sent before it was handled (it could hit this statement).
            if not await waits.wait_done(self.loop, gate, deadline.left()):
                raise deadline.error('pipelined statement', 'it was waiting for the cancel of '
                                     'the aborted pipeline to be answered, and nothing was sent')
        state = self.cache.get(query)
        if state is None:
            state = self.unnamed.get(query)
        try:
            if proto.pipeline_failed:
                raise pipeline_aborted_error()
            if state is None or state.closed:
                check_argument_count(len(args))
                state = await self.prepare(query, deadline)
            elif state.codecs_generation != session.codecs.generation:
                await self.refresh_codecs(state, deadline)
        except (exceptions.PostgresError, exceptions.PipelineAborted) as e:
            # The server failed (or skipped) the statement's Parse, in its
            # place in the pipeline: its result says so.
            fut = self.loop.create_future()
            fut.set_exception(e)
            self.local_failures += 1
            result = cls(self, fut, shape, column, 0, deadline)
            self.segment.append(result)
            return result
        return self._queue(cls, state, args, limit, deadline, want, rows_as, shape, column)

    def _queue(self, cls: type[PendingResult[Any]], state: StatementState, args: Any,
               limit: int, deadline: Deadline, want: int, rows_as: Any, shape: int,
               column: Any) -> PendingResult[Any]:
        proto = self.protocol
        if proto.pipeline_failed:
            # The server skips the rest of the segment: not sent.
            fut = self.loop.create_future()
            fut.set_exception(pipeline_aborted_error())
            self.local_failures += 1
            seq = 0
        else:
            fut = proto.pipeline_bind_execute(state, args, limit, want, rows_as)
            seq = proto.op_seq
        result = cls(self, fut, shape, column, seq, deadline)
        self.segment.append(result)
        return result

    async def prepare(self, query: str, deadline: Deadline) -> StatementState:
        """Parse and describe `query` inside the pipeline (a round trip, no Sync); cache it."""
        session = self.session
        statements = session.statements
        cacheable = statements.is_cacheable(query)
        state = StatementState(statements.new_name() if cacheable else '', query)
        state.schema_epoch = session.schema_sent
        fut = self.protocol.pipeline_prepare(state)
        await self.wait_for(fut, deadline)
        fut.result()
        try:
            missing = missing_statement_types(state, session.codecs)
            if missing:
                await session.introspect_types(missing, deadline, fetch=self.fetch_catalog)
            resolve_statement_codecs(state, session.codecs)
        except BaseException:
            statements.queue_close(state)
            raise
        if cacheable:
            statements.cache.put(query, state)
        else:
            # Unnamed: its Parse goes again in front of each Bind (with the
            # parameter types described here), so it is described once per
            # pipeline, not once per statement.
            self.unnamed[query] = state
        return state

    async def refresh_codecs(self, state: StatementState, deadline: Deadline) -> None:
        session = self.session
        missing = missing_statement_types(state, session.codecs)
        if missing:
            await session.introspect_types(missing, deadline, fetch=self.fetch_catalog)
        resolve_statement_codecs(state, session.codecs)

    async def fetch_catalog(self, query: str, args: tuple[Any, ...],
                            timeout: Any) -> list[Record]:
        """Session.fetch_catalog() inside the pipeline: the type introspection of a new statement."""
        deadline = timeout if isinstance(timeout, Deadline) else NO_DEADLINE
        state = self.cache.get(query)
        if state is None or state.closed:
            state = await self.prepare(query, deadline)
        if state.codecs_generation != introspection.CATALOG_CODECS.generation:
            resolve_statement_codecs(state, introspection.CATALOG_CODECS)
        proto = self.protocol
        if proto.pipeline_failed:
            raise pipeline_aborted_error()
        fut = proto.pipeline_bind_execute(state, args, 0, WANT_ROWS, Record)
        await self.wait_for(fut, deadline)
        return fut.result()  # type: ignore[no-any-return]

    # --- waiting --------------------------------------------------------------------------

    async def wait_result(self, result: PendingResult[Any]) -> None:
        """Until `result`'s answer is in, within its statement's deadline (see wait_for())."""
        if result._fut.done():
            return
        if not self.open:
            self.check_usable()
        try:
            await self.wait_for(result._fut, result._deadline)
        except asyncio.TimeoutError as e:
            result._error = e
            raise

    async def wait_for(self, fut: asyncio.Future[Any], deadline: Deadline) -> None:
        """Send what is written (with a Flush) and wait until `fut` is done, within `deadline`.

        A timeout or a cancellation (Ctrl-C) aborts the open segment first
        (abort()), then propagates.
        """
        if fut.done():
            return
        proto = self.protocol
        try:
            proto.pipeline_flush(True)
            if not await waits.wait_done(self.loop, fut, deadline.left()):
                raise deadline.error(
                    'pipelined statement',
                    'the pipeline was aborted up to its next sync point (what ran of it since '
                    'the last one is rolled back, unless a COMMIT among them had run) and the '
                    'statement was cancelled on the server')
        except (asyncio.CancelledError, asyncio.TimeoutError):
            await self.abort()
            raise

    async def abort(self) -> None:
        """Abort the open segment and cancel what runs; wait (bounded) for the answer.

        Each statement of the segment then has its outcome: its result if
        it finished before (rolled back with the segment, unless a COMMIT
        of the segment had run), QueryCanceledError if the cancel stopped
        it, PipelineAborted if the server skipped it.
        """
        proto = self.protocol
        tail = proto.pipeline_abort()
        if tail is not None and not tail.done():
            await waits.wait_done(self.loop, tail, deadlines.CANCEL_ANSWER_WAIT)
        gate = proto.gate()
        if gate is not None and not gate.done():
            await waits.wait_done(self.loop, gate, deadlines.CANCEL_ANSWER_WAIT)

    async def sync(self, deadline: Deadline) -> None:
        """A sync point: Sync, then wait for every answer before it; raise the first error unread.

        The statements since the last sync point are committed (unless a
        BEGIN left a block open, or one failed).  The error raised is the
        first one of a result that result() was not asked for (the
        statement that failed; not the PipelineAborted of those skipped
        behind it), else the sync point's own (a deferred constraint
        checked at the implicit COMMIT).
        """
        self.check_usable()
        proto = self.protocol
        if proto.pipe_unsynced:
            fut = proto.pipeline_sync(False)
        else:
            fut = proto.pipeline_last_sync()
        sync_error = None
        if fut is not None:
            await self.wait_for(fut, deadline)
            sync_error = fut.exception()
            if sync_error is not None and ABORT_PORTAL in str(sync_error):
                sync_error = None    # our own abort's failing Execute
        segment = self.segment
        self.segment = []
        failures = proto.pipe_failures
        if failures == self.failures and not self.local_failures:
            # No statement of these failed (the protocol counts them): no
            # error to look for.
            if sync_error is not None:
                raise sync_error
            return
        self.failures = failures
        self.local_failures = 0
        first = None
        for result in segment:
            if result._seen or not result._fut.done():
                continue
            error = result._fut.exception()
            if error is not None and not isinstance(error, exceptions.PipelineAborted):
                result._seen = True
                if first is None:
                    first = result
        if first is not None:
            first._value()
        if sync_error is not None:
            raise sync_error

    # --- errors ---------------------------------------------------------------------------

    def lost_error(self, error: BaseException, seq: int) -> BaseException:
        """The connection error of a statement whose answer was lost with the connection."""
        if seq and seq <= self.protocol.pipe_flushed_seq:
            outcome = ('the connection was lost before the pipelined statement\'s answer '
                       'arrived: whether it ran is unknown (what ran of a segment whose sync '
                       'point was not answered is committed only if a COMMIT of it ran or '
                       'its Sync was processed)')
        else:
            outcome = ('the connection was lost before the pipelined statement was sent: '
                       'it was not run')
        replacement = exceptions.ConnectionDoesNotExistError(outcome)
        replacement.__cause__ = error
        return replacement

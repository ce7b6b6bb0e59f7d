"""Session: the policy of every operation on one connection.

A Connection is the public face; the Session behind it decides whether an
operation may run and how it ends.  Its jobs have owners of their own:

* :class:`~mypgdriver.core.admission.Admission`: turns and call order (calls made
  concurrently are pipelined in call order), the line (a call that needs
  round trips before its own statement keeps its place), the connection
  held alone, the wait for the cleanup that runs before everyone;
* :class:`~mypgdriver.core.statement_registry.StatementRegistry`: the statement
  cache and every server-side statement's owner and Close;
* :class:`~mypgdriver.core.block_owner.BlockOwner`: which Transaction owns the open
  block, who may use the connection meanwhile, and the cleanup of a block
  whose statement was interrupted (started by settle_transaction());
* :mod:`mypgdriver.core.deadlines`: a call's timeout, validated once, as one
  deadline.

The Session itself keeps whether the connection (and a pool checkout's
handles) may be used, the statement-running paths, the schema-change retry
policy, the cleanup of an interrupted transaction block, and query logging
and tracing: the statement-running entry points (execute(), simple(),
run_prepared(), executemany(), the portal calls) wrap the call in its span
(mypgdriver/tracing.py) once ``TELEMETRY.live`` says tracing is on, the one
flag the hot paths read for it.

Every public call follows one template (run(), for one operation):

1. **check**: the connection is open (check_open()) or the handle's checkout
   is current (check_handle()); the transaction-block scope (in admission);
2. **one deadline**: the timeout resolved once (resolve_timeout()) into one
   :class:`~mypgdriver.core.deadlines.Deadline` (deadline()), handed down to
   every later step, which asks it for the time left (``deadline.left()``);
3. **turn**: admission (needs_sync()/sync(), held() for the connection
   alone, enter_line() to keep the place across round trips);
4. **send**: one protocol operation, which returns its Future;
5. **wait**: wait(); a caller that gives up (cancelled, or its timeout)
   *abandons* the operation: the protocol cancels it on the server and
   drains it, and the next caller's turn waits for that;
6. **retry**: a statement that failed before it ran (schema change, a
   statement dropped behind our back: may_retry_after()) runs once more, in
   its place (check_run_again(); execute_in_line(failed=)), else the error
   is raised; one that cannot run again there (a portal's) drops the stale
   caches first (run(stale=)).

The hot paths (execute() of a cached statement, run_prepared()) are that
template written out inline, so that a cached statement costs a few
attribute checks and one Bind/Execute/Sync; their slow halves go through
the same steps.  Nothing here depends on how bytes move: the asyncio glue
and mypgdriver.sync's blocking glue drive these same coroutines (see
mypgdriver/core/waits.py and docs/dev/sync-design.md).
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import re
import time
import warnings
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, NamedTuple, Optional, Union

from mypgdriver import exceptions, tracing
from mypgdriver.codecs import introspection
from mypgdriver.codecs.registry import CodecRegistry
from mypgdriver.core import deadlines, waits
from mypgdriver.core.admission import Admission
from mypgdriver.core.block_owner import BlockOwner
from mypgdriver.core.deadlines import NO_DEADLINE, Deadline, check_timeout
from mypgdriver.core.statement_registry import STATEMENT_PREFIX, StatementRegistry
from mypgdriver.core.waits import interruption_point
from mypgdriver.exceptions._hints import append_hint, in_list_hint
from mypgdriver.protocol.protocol import WANT_ROWS, check_record_class
from mypgdriver.protocol.record import Record
from mypgdriver.protocol.statement import (
    StatementState,
    check_argument_count,
    missing_statement_types,
    resolve_statement_codecs,
)
from mypgdriver.sql import is_plain_read
from mypgdriver.tracing import TELEMETRY

if TYPE_CHECKING:
    from mypgdriver.prepared import PreparedStatement

#: How long an interrupted transaction block may take to be cleaned up (the
#: interrupted statement drained, then ROLLBACK) before the connection is
#: closed instead: a connection is in sync or closed, never in doubt.
TRANSACTION_CLEANUP_TIMEOUT = 5.0


# Errors after which a statement may be prepared again and run once more
# (see Session.may_retry_after): the schema changed under a cached statement
# (0A000, or our own type knowledge is stale), or its name is unknown (26000:
# dropped behind our back, a pooler on a new server connection) or taken
# (42P05) on the server.
RETRYABLE_ERRORS = (exceptions.InvalidCachedStatementError,
                    exceptions.OutdatedSchemaCacheError,
                    exceptions.InvalidSQLStatementNameError,
                    exceptions.DuplicatePreparedStatementError)
#: The errors of a cached statement's run that send it to execute_in_line()
#: (its retry step): a schema change or a dropped statement (RETRYABLE_ERRORS),
#: or a codec's refusal of an argument (a client-side DataError: nothing was sent).
CACHED_RUN_RETRIES = (exceptions.DataError, *RETRYABLE_ERRORS)
_NAME_TROUBLE = (exceptions.InvalidSQLStatementNameError,
                 exceptions.DuplicatePreparedStatementError)
# What an open portal's fetch may find stale: a composite's fields changed.
_OUTDATED_ROWS = (exceptions.OutdatedSchemaCacheError,)

#: Prepares a PreparedStatement's statement again within a deadline (its _reprepare).
Reprepare = Callable[[Deadline], Awaitable[StatementState]]
#: What a step of a call is given for its time: the call's Deadline (made
#: once by the public call), or a number of seconds (None: none) from which
#: the step, called on its own, makes one.
Timeout = Union[float, None, Deadline]
class Stale(NamedTuple):
    """For Session.run(): the errors after which `query`'s cached knowledge is stale."""

    query: str
    errors: tuple[type[BaseException], ...]


#: Given the server's transaction status and an interrupted statement's tag,
#: the statement that ends its block (see Session.settle_transaction()).
FollowUp = Callable[[str, Optional[str]], Optional[str]]
#: A cached run that failed before it ran: its error, and its statement.
Failure = tuple[BaseException, StatementState]

# Tasks running async query loggers: the loop keeps only weak references.
_logger_tasks: set[asyncio.Future[Any]] = set()

# Simple queries that may switch the connection into COPY mode run alone:
# pipelined messages behind them would be read as a broken copy stream.  So
# do those that may drop every prepared statement (DISCARD ALL, DEALLOCATE):
# a Bind pipelined behind them could name a statement already gone (through
# pgbouncer 1.22+, that gets the connection closed).
_RUNS_ALONE = re.compile(r'\b(?:copy|discard|deallocate)\b', re.IGNORECASE).search

# Simple queries that may change the result types of cached statements.
_CHANGES_SCHEMA = re.compile(r'\b(?:alter|create|drop|search_path)\b', re.IGNORECASE).search


class SettledStatement(NamedTuple):
    """What the cleanup of an interrupted transaction statement found and did."""

    #: The server's transaction status once the statement had drained.
    xact_status: str
    #: Whether any operation was sent after the statement was (it may have been).
    sent: bool
    #: Whether the statement was the last operation (so tag/error are its own).
    last: bool
    #: Its command tag, if it was the last operation and succeeded.
    tag: Optional[str]
    #: Its error, if it was the last operation and failed.
    error: Optional[BaseException]
    #: The statement the cleanup ran to end the block (None: nothing needed).
    follow_up: Optional[str]


class LoggedQuery(NamedTuple):
    """What a query logger receives after each query (asyncpg 0.29+ fields)."""

    query: str
    args: Any
    timeout: Optional[float]
    elapsed: float
    exception: Optional[BaseException]
    conn_addr: Any
    conn_params: Any


def released_error(cls: str, method: str) -> exceptions.InterfaceError:
    """The error of a handle used after its pool checkout ended."""
    return exceptions.InterfaceError(
        f'cannot call {cls}.{method}(): the underlying connection has been released '
        f'back to the pool')


class Session:
    """The policy of one connection: every operation goes through it (see the module docstring)."""

    __slots__ = ('protocol', 'loop', 'addr', 'params', 'command_timeout', 'record_class',
                 'rows_default',
                 'statements', 'stmt_cache', 'closes', 'blocks', 'admission', 'codecs', 'query_loggers', 'closed',
                 'checkout', 'facade', 'server_version', 'introspection_query', 'conn_id',
                 'schema_sent', 'current_task', 'pipeline', '_portal_ids', '_savepoint_ids',
                 '_trace_attributes',
                 '__weakref__')

    def __init__(self, protocol: Any, loop: Any, addr: Any, params: Any, config: Any,
                 conn_id: int, server_version: Any) -> None:
        self.protocol = protocol
        self.loop = loop
        self.addr = addr
        self.params = params
        self.command_timeout: Optional[float] = config.command_timeout
        self.record_class: type[Record] = config.record_class
        # What rows are made as when a call passes None (rows_as): the
        # connection's row_factory (connect(row_factory=)) if it has one,
        # else its record_class.  Calls that need Records whatever the
        # default (execute, fetchval, the driver's own queries) pass Record.
        self.rows_default: Any = (config.record_class if config.row_factory is None
                                  else config.row_factory)
        self.statements = StatementRegistry(
            conn_id, cache_size=config.statement_cache_size,
            max_lifetime=config.max_cached_statement_lifetime,
            max_cacheable_size=config.max_cacheable_statement_size)
        # The registry's cache and Close queue themselves (objects that never
        # change), read on the hot paths without a second attribute lookup.
        self.stmt_cache = self.statements.cache
        self.closes = self.statements.to_close
        self.codecs = CodecRegistry(config.json)
        self.query_loggers: list[Callable[[LoggedQuery], Any]] = []
        self.closed = False
        # Pool checkouts: a handle remembers the value at its creation and
        # is refused once it changed (the pool bumps it at every release).
        self.checkout = 0
        # What callbacks receive as "the connection" during a pool checkout:
        # the proxy handed out (None: the Connection itself).
        self.facade: Any = None
        self.server_version = server_version
        self.introspection_query: Optional[str] = None
        self.conn_id = conn_id
        # protocol.schema_epoch counts the calls that may have changed the
        # schema under cached statements (DDL, search_path): a cached
        # statement's first run after one is run in line (execute_verified()),
        # so that the server's "cached plan must not change result type" is
        # retried in its place.  How many of those were sent (or gave up): a
        # statement described now knows the effect of that many
        # (StatementState.schema_epoch).
        self.schema_sent = 0
        self._portal_ids = itertools.count(1)
        # The attributes of every span of this connection (trace_attributes()).
        self._trace_attributes: Optional[dict[str, Any]] = None
        self._savepoint_ids = itertools.count(1)
        # Who "the caller" is (the line holder, the transaction block's
        # owner): the current asyncio task, or the caller that a glue driving
        # the Session's coroutines without an event loop (mypgdriver/sync)
        # names.  Not on the hot path.
        self.current_task: Callable[[], Any] = waits.caller_identity(loop)
        self.blocks = BlockOwner(self.current_task)
        # The open pipeline (mypgdriver/core/pipeline.py: PipelineCore), if any.
        self.pipeline: Any = None
        self.admission = Admission(protocol, loop, self.blocks, self.statements,
                                   self.current_task, self.check_open, self.is_closed)
        protocol.on_statements_dropped = self.statements.forget_server_statements
        protocol.on_statement_unusable = self.statements.statement_unusable

    # --- state ---------------------------------------------------------------------------

    def is_closed(self) -> bool:
        """True once the connection was closed or lost."""
        return self.closed or self.protocol.is_closed()

    def check_open(self) -> None:
        """Raise unless the connection is open (closed by the user, or lost)."""
        if self.closed:
            raise exceptions.InterfaceError('cannot perform operation: connection is closed')
        if self.protocol.is_closed():
            # Lost (server gone, backend terminated): say so even for calls
            # that need no round trip, such as prepare() of a cached statement.
            raise exceptions.ConnectionDoesNotExistError(
                'cannot perform operation: the connection was lost')

    def check_handle(self, checkout: int, cls: str, method: str) -> None:
        """Refuse a handle from an ended pool checkout, or on a closed connection."""
        if checkout != self.checkout:
            raise released_error(cls, method)
        if self.closed:
            raise exceptions.InterfaceError(
                f'cannot call {cls}.{method}(): the underlying connection is closed')
        if self.protocol.is_closed():
            # Lost rather than closed by the user: the same error as Connection's.
            raise exceptions.ConnectionDoesNotExistError(
                f'cannot call {cls}.{method}(): the connection was lost')

    def begin_checkout(self, facade: Any) -> None:
        """A pool hands the connection out as `facade` (its proxy)."""
        self.checkout += 1
        self.facade = facade

    def end_checkout(self) -> Any:
        """The checkout ended: every handle obtained during it is refused from now on.

        Returns the facade of the checkout that ended.
        """
        self.checkout += 1
        facade, self.facade = self.facade, None
        # The block belonged to the checkout; the reset rolls it back.
        self.blocks.end(self.blocks.top)
        return facade

    def is_in_transaction(self) -> bool:
        """The server's transaction status, from its last ReadyForQuery.

        While a cancelled statement is unanswered (calls that time out wait
        for that answer before they raise: settle_after_interruption), or an
        interrupted transaction block is being cleaned up, the status is not
        known yet: the answer is then True, the safe side (a caller that rolls back
        "just in case" does no harm; one that believes it is outside a
        transaction when it is not would lose its writes).
        """
        proto = self.protocol
        if self.blocks.cleanup is not None:
            return True
        if proto.pipeline_on and (proto.pipe_unsynced or proto.depth):
            # Statements of a pipeline since its last sync point: the server
            # runs them in a transaction (an implicit one, or a BEGIN's), whose
            # end the next ReadyForQuery will tell.
            return True
        if proto.depth and proto.gate() is not None:
            # A cancelled statement not answered yet.  (Once it is, the last
            # ReadyForQuery is the server's state, whatever became of the
            # CancelRequest: that only holds the next statement back.)
            return True
        return proto.is_in_transaction()

    def is_settled(self) -> bool:
        """True when nothing is in flight, draining or waiting to be cleaned up."""
        return not (self.blocks.cleanup is not None or self.protocol.is_busy())

    def terminate(self) -> None:
        """Close the connection at once (no Terminate message, nothing drained)."""
        self.closed = True
        self.protocol.abort()

    # --- the template's steps ----------------------------------------------------------------

    def resolve_timeout(self, timeout: Any) -> Optional[float]:
        """The call's timeout (validated), or the connection's command_timeout."""
        if timeout is None:
            return self.command_timeout
        return check_timeout(timeout)

    def deadline(self, timeout: Optional[float]) -> Deadline:
        """The one deadline of a call with the (checked) `timeout`, starting now (see mypgdriver.core.deadlines)."""
        return NO_DEADLINE if timeout is None else Deadline(self.loop, timeout)

    def deadline_of(self, timeout: Timeout) -> Deadline:
        """The Deadline a step runs within: the call's own, or one made now from seconds (None: none)."""
        if isinstance(timeout, Deadline):
            return timeout
        return NO_DEADLINE if timeout is None else Deadline(self.loop, timeout)

    async def run(self, send: Callable[[Optional[float]], asyncio.Future[Any]],
                  deadline: Deadline, *, alone: bool = False,
                  stale: Optional[Stale] = None) -> Any:
        """Run one protocol operation by the template: turn, send, wait (abandon if given up).

        `deadline` is the call's one deadline (made by the caller, with its
        own open or handle check); `send` sends the operation with the time
        left once the caller's turn came and returns its Future.  With
        `alone`, the operation runs with the connection held alone (nothing
        else in flight: a COPY, a query that may drop statements).

        `stale`: the operation runs a statement that is never run again in
        its place (a portal's, inside a transaction block): an error of
        ``stale.errors`` (the schema changed under it) drops the caches
        that knew the old schema (may_retry_after()) before it is raised, so
        that the next attempt prepares afresh.
        """
        try:
            admission = self.admission
            if alone:
                async with admission.held(deadline) as timeout:
                    return await self.wait(send(timeout))
            if admission.needs_sync():
                return await self.wait(send(await admission.sync(deadline)))
            return await self.wait(send(deadline.left()))
        except BaseException as e:
            if stale is not None and isinstance(e, stale.errors):
                self.may_retry_after(e, stale.query)
            raise

    #: (the name the template had before run(); kept for callers that use it)
    call = run

    async def wait(self, fut: asyncio.Future[Any]) -> Any:
        """Await a protocol operation; if the caller gives up, abandon it.

        Abandoning asks the server to cancel the operation and drains its
        messages; the next operation waits for that (Admission.sync()).
        """
        try:
            return await fut
        except (asyncio.CancelledError, asyncio.TimeoutError) as e:
            await self.interrupted(fut, e)
            raise

    async def interrupted(self, fut: asyncio.Future[Any], error: BaseException) -> None:
        """The wait for `fut` ended in `error`: a cancellation of the caller, or the timeout.

        A cancelled caller abandons the operation (CancelRequest and drain);
        either way, the caller gets its error once the server answered the
        cancel (settle_after_interruption), so that the connection is in
        sync and is_in_transaction() is the server's.  Only on the error
        path: the hot paths await their Future inline.
        """
        if isinstance(error, asyncio.CancelledError):
            self.protocol.abandon(fut)
        await self.settle_after_interruption()

    async def settle_after_interruption(self) -> None:
        """After a statement was abandoned with a CancelRequest: wait until it is answered.

        At most ``deadlines.CANCEL_ANSWER_WAIT`` seconds.  A statement abandoned
        behind others in a pipeline (no cancel sent: it would hit another
        caller's statement) is not waited for.  A second cancellation while
        waiting propagates at once.
        """
        gate = self.protocol.gate()
        if gate is not None and not gate.done():
            await waits.wait_done(self.loop, gate, deadlines.CANCEL_ANSWER_WAIT)

    def abandon(self, fut: asyncio.Future[Any]) -> None:
        """The caller stopped waiting for the operation whose Future is `fut` (see wait()).

        `fut` is cancelled so that its outcome is not reported as never
        retrieved.
        """
        if not fut.done():
            fut.cancel()
        self.protocol.abandon(fut)

    # --- running statements ----------------------------------------------------------------------

    async def execute(self, query: str, args: Any, limit: int, timeout: Optional[float],
                      want_status: bool, rows_as: Any,
                      log: bool = True) -> Any:
        """Run `query` with `args` (extended protocol): rows, or the status tag.

        The hot path: a cached statement costs one Bind/Execute/Sync.  Misses,
        logging and schema-change recovery live in other methods, so this one
        only pays for a few attribute checks.
        """
        if (self.query_loggers or TELEMETRY.live) and log:
            return await self.observed(
                self.execute(query, args, limit, timeout, want_status, rows_as, False),
                query, args, timeout)
        if self.closed:
            self.check_open()
        proto = self.protocol
        timeout = self.command_timeout if timeout is None else check_timeout(timeout)
        if rows_as is None:
            rows_as = self.rows_default
        # (bind_execute checks any other rows_as before it sends.)
        # The turn step, inline: admission is asked only while a transaction
        # block is open or being cleaned up (its scope is checked) or
        # statements wait for their Close; otherwise bind_execute() says
        # whether the caller may send now.
        if (self.blocks.active or self.closes) and self.admission.needs_sync():
            # Admitted by sync(): the rest runs in the caller's place in line.
            deadline = self.deadline(timeout)
            await self.admission.sync(deadline)
            self.admission.take_line_now()
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, True)
        state = self.stmt_cache.get(query)
        # self.deadline(), inline: this is the hot path (and an untimed call
        # allocates nothing).
        deadline = NO_DEADLINE if timeout is None else Deadline(self.loop, timeout)
        if state is None:
            # Refused before the Parse: the server's parameter count
            # would wrap around past the protocol limit.
            check_argument_count(len(args))
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, False)
        try:
            # Sent at once if the caller may send now (nobody waiting before
            # it, room in the pipeline, and no DDL called on the connection
            # since the statement was last known good: schema_epoch), else
            # None (the slow half: execute_declined()).
            fut = proto.bind_execute(state, args, limit, timeout, want_status, rows_as,
                                     True)
        except CACHED_RUN_RETRIES as e:
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, True, failed=(e, state))
        if fut is None:
            return await self.execute_declined(query, state, args, limit, deadline, want_status,
                                               rows_as)
        try:
            return await fut
        except (Exception, asyncio.CancelledError) as e:
            return await self.finish_cached(fut, e, query, args, limit, deadline, want_status,
                                            rows_as, state)

    async def finish_cached(self, fut: Any, error: BaseException, query: str, args: Any,
                            limit: int, deadline: Deadline, want_status: int, rows_as: Any,
                            state: StatementState) -> Any:
        """execute() of a cached statement whose wait for `fut` (its answer) ended in `error`.

        The one copy of what follows a failed or interrupted run of the hot
        path, for execute() and for the sync driver's compiled call path
        (mypgdriver/sync/driver/runner.pyx), which waits for the answer
        itself and hands over here on anything but a result: a cancellation
        (Ctrl-C) or a timeout abandons the operation and settles before the
        error is raised (interrupted()); a schema change, a dropped
        statement or a codec's refusal runs the statement in line
        (CACHED_RUN_RETRIES, execute_in_line()); any other error is raised.
        """
        try:
            if isinstance(error, (asyncio.CancelledError, asyncio.TimeoutError)):
                await self.interrupted(fut, error)
            raise error
        except CACHED_RUN_RETRIES as e:
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, True, failed=(e, state))

    async def execute_declined(self, query: str, state: StatementState, args: Any, limit: int,
                               deadline: Deadline, want_status: int, rows_as: Any) -> Any:
        """execute() of a cached statement that bind_execute() declined to send at once.

        Someone is before the caller, the pipeline is full, or DDL was called
        since the statement was last known good: the slow half, with its
        turn.
        """
        proto = self.protocol
        if state.schema_epoch != proto.schema_epoch:
            return await self.execute_verified(query, state, args, limit, deadline, want_status,
                                               rows_as, False)
        try:
            fut = await self.bind_after_turn(state, args, limit, deadline, want_status,
                                             rows_as)
            if fut is not None:
                return await self.wait(fut)
        except CACHED_RUN_RETRIES as e:
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, True, failed=(e, state))
        # The statement changed meaning while we waited for our turn (see
        # bind_after_turn, which took the line): prepare it again, in our place.
        return await self.execute_in_line(query, args, limit, deadline, want_status,
                                          rows_as, True)

    def retry_in_place(self, error: BaseException, query: str, *,
                       described: bool = False) -> None:
        """The template's retry step: raise `error`, or hold the line to run the statement again.

        The statement (of `query`; `described`: a PreparedStatement's) failed
        before it ran.  It may run once more if the retry policy allows it
        (may_retry_after()) and nothing was sent after it (check_run_again()):
        the caller then holds the line (take_line_now()), prepares it again
        and runs it, in its own place in call order.
        """
        if not self.may_retry_after(error, query, described=described):
            raise error
        self.check_run_again(error)
        self.admission.take_line_now()

    def check_run_again(self, error: BaseException) -> None:
        """Raise `error` unless the call whose operation failed with it may run again in its place."""
        if not self.admission.may_run_again(error):
            if isinstance(error, exceptions.PostgresError):
                _add_hint(error, 'It was not run again: calls made after it on this '
                          'connection had already been sent, and call order is '
                          'execution order. Run it again.')
            raise error

    async def execute_in_line(self, query: str, args: Any, limit: int, deadline: Deadline,
                              want_status: int, rows_as: Any, held: bool,
                              *, failed: Optional[Failure] = None) -> Any:
        """execute() when the statement must be prepared first: in the caller's place in line.

        With `held`, the caller already holds the line (take_line_now()).
        The cache is looked up again once the caller's turn came: a first use
        of the same query called before it prepared it meanwhile, so
        concurrent first uses share one statement.

        `failed`: the error and statement of a cached run that failed before
        it ran (the template's retry step): after a schema change or a
        dropped statement (RETRYABLE_ERRORS) it is prepared afresh and run
        once more, if nothing was sent after it (retry_in_place()); after an
        argument its codecs refused (a client-side DataError, nothing was
        sent) it is described again, in case the schema changed its types
        (redescribe_after_refusal()).  Either way once, holding the line.
        """
        proto = self.protocol
        retried = False
        refused: Optional[tuple[exceptions.DataError, StatementState]] = None
        if failed is not None:
            failure = failed[0]
            if isinstance(failure, exceptions.DataError) and not isinstance(
                    failure, RETRYABLE_ERRORS):
                if getattr(failure, 'severity', None) is not None:
                    raise failure
                self.admission.take_line_now()
                refused = (failure, failed[1])
            else:
                self.retry_in_place(failure, query)
                retried = True
            held = True
        if not held:
            await self.admission.enter_line(deadline)
        try:
            if refused is not None:
                error, stale = refused
                state = await self.redescribe_after_refusal(error, stale, query, deadline)
                if state is None:
                    if getattr(error, 'severity', None) is None:
                        # A list refused for the one value of IN ($1).
                        append_hint(error, in_list_hint(query, args))
                    raise error
            else:
                state = None if retried else self.statements.cache.get(query)
                if state is None or state.closed:
                    check_argument_count(len(args))
                    state = await self.prepare_state(query, deadline)
                elif state.schema_epoch != proto.schema_epoch:
                    # Cached meanwhile, before DDL called since.
                    self.admission.take_line_now()
                    return await self.execute_verified(query, state, args, limit, deadline,
                                                       want_status, rows_as, True)
            try:
                fut = await self.bind_in_line(state, args, limit, deadline,
                                              want_status, rows_as)
            except exceptions.DataError as e:
                if getattr(e, 'severity', None) is not None or refused is not None:
                    raise
                # Refused by the codecs of the statement just prepared (or
                # found cached): see whether a fresh description takes it.
                fresh = await self.redescribe_after_refusal(e, state, query, deadline)
                if fresh is None:
                    append_hint(e, in_list_hint(query, args))
                    raise
                fut = await self.bind_in_line(fresh, args, limit, deadline,
                                              want_status, rows_as)
        finally:
            self.admission.leave_line()
        try:
            return await fut
        except (asyncio.CancelledError, asyncio.TimeoutError) as e:
            await self.interrupted(fut, e)
            raise
        except RETRYABLE_ERRORS as e:
            if failed is not None:
                raise
            return await self.execute_in_line(query, args, limit, deadline, want_status,
                                              rows_as, True, failed=(e, state))

    async def execute_verified(self, query: str, state: StatementState, args: Any, limit: int,
                               deadline: Deadline, want_status: int,
                               rows_as: Any, held: bool) -> Any:
        """execute() of a cached statement whose schema may have changed since it was prepared.

        A call made after DDL on this connection (protocol.schema_epoch): the run
        holds the line until its answer is in, so that if the server refuses
        the statement (0A000: its result types changed) it is prepared again
        and run in its place, before any call made after it.
        """
        if not held:
            await self.admission.enter_line(deadline)
        try:
            if state.closed:
                cached = self.statements.cached(query)
                state = (cached if cached is not None
                         else await self.prepare_state(query, deadline))
            try:
                fut = await self.bind_in_line(state, args, limit, deadline,
                                              want_status, rows_as)
                # Run after every schema change sent so far.
                epoch = self.schema_sent
                result = await self.wait(fut)
            except RETRYABLE_ERRORS as e:
                if not self.may_retry_after(e, query):
                    raise
                state = await self.prepare_state(query, deadline)
                result = await self.wait(await self.bind_in_line(
                    state, args, limit, deadline, want_status, rows_as))
            except exceptions.DataError as e:
                fresh = await self.redescribe_after_refusal(e, state, query, deadline)
                if fresh is None:
                    if getattr(e, 'severity', None) is None:
                        append_hint(e, in_list_hint(query, args))
                    raise
                return await self.wait(await self.bind_in_line(
                    fresh, args, limit, deadline, want_status, rows_as))
            state.schema_epoch = epoch
            return result
        finally:
            self.admission.leave_line()

    async def bind_in_line(self, state: StatementState, args: Any, limit: int,
                           deadline: Deadline, want: int,
                           rows_as: Any,
                           sink: Any = None) -> asyncio.Future[Any]:
        """Send Bind/Execute of `state` for the caller holding the line; its Future."""
        if self.closed:
            # close() was called while the caller waited for an answer: what
            # was not sent before it is not sent (asyncpg's semantics).
            self.check_open()
        if self.admission.needs_sync():
            timeout = await self.sync_holding(state, deadline)
        else:
            timeout = deadline.left()
        if rows_as is None:
            rows_as = self.rows_default
        return self.protocol.bind_execute(state, args, limit, timeout, want, rows_as, False,
                                          sink)

    async def bind_after_turn(self, state: StatementState, args: Any, limit: int,
                              deadline: Deadline, want: int,
                              rows_as: Any,
                              sink: Any = None) -> Optional[asyncio.Future[Any]]:
        """Wait for the caller's turn (keeping `state` open), then send Bind/Execute; its Future.

        The slow half of the hot paths (execute(), run_prepared()), whose
        bind_execute(..., check_turn=True) returned None.
        """
        timeout = await self.sync_holding(state, deadline)
        if self.admission.holds_line():
            return self.protocol.bind_execute(state, args, limit, timeout, want, rows_as,
                                              False, sink)
        stale_entry = sink is None and (state.schema_epoch != self.protocol.schema_epoch
                                        or self.statements.cache.get(state.query) is not state)
        if (state.closed and state.name) or stale_entry or (
                state.codecs_generation != self.codecs.generation):
            # While we waited, a call made before ours changed what the
            # statement means: the server dropped it (DISCARD ALL), a codec
            # was set, or the cache let it go (a schema change).  The caller
            # gets None and, holding the line from here (still in its
            # place), prepares it again.
            self.admission.take_line_now()
            return None
        return self.protocol.bind_execute(state, args, limit, timeout, want, rows_as, False,
                                          sink)

    async def sync_holding(self, state: StatementState, deadline: Deadline) -> Optional[float]:
        """sync() when the caller is about to run `state`: it is not closed meanwhile.

        While the caller waits for its turn, other callers may evict `state`
        from the cache; the reference makes the eviction keep it (its Close
        is sent after the caller's operation).
        """
        if not self.admission.needs_sync():
            return deadline.left()
        state.refs += 1
        try:
            return await self.admission.sync(deadline)
        finally:
            self.statements.detach(state)

    async def simple(self, query: str, timeout: Timeout, log: bool = True) -> str:
        """Run `query` with the simple query protocol (several statements allowed); the last tag.

        `timeout`: seconds (None: the connection's command_timeout), or the
        Deadline of the call this query is a step of.
        """
        if (self.query_loggers or TELEMETRY.live) and log:
            return await self.observed(self.simple(query, timeout, False), query, (),
                                       _seconds(timeout))
        self.check_open()
        deadline = (timeout if isinstance(timeout, Deadline)
                    else self.deadline(self.resolve_timeout(timeout)))
        if _CHANGES_SCHEMA(query):
            return await self._simple_changing_schema(query, deadline)
        proto = self.protocol
        # One that may start a COPY or drop our statements runs alone.
        alone = _RUNS_ALONE(query) is not None
        return await self.run(lambda left: proto.simple_query(query, left, alone), deadline,
                               alone=alone)

    async def _simple_changing_schema(self, query: str, deadline: Deadline) -> str:
        # Calls made from now on may find cached statements whose result
        # types this query changes (schema_epoch); statements described once
        # it was sent know its effect (schema_sent).  A call that gives up
        # before sending counts as sent: nothing of it can reach the server.
        proto = self.protocol
        proto.schema_epoch += 1
        alone = _RUNS_ALONE(query) is not None
        sent = False

        def send(left: Optional[float]) -> asyncio.Future[Any]:
            nonlocal sent
            fut = proto.simple_query(query, left, alone)
            sent = True
            self.schema_sent += 1
            return fut

        try:
            return await self.run(send, deadline, alone=alone)
        except BaseException:
            if not sent:
                self.schema_sent += 1
            raise

    async def simple_held(self, query: str, timeout: Optional[float]) -> str:
        """simple() for a caller holding the connection (hold()); not logged."""
        return await self.wait(self.protocol.simple_query(query, timeout, True))

    async def run_prepared(self, stmt: PreparedStatement[Any], args: Any, limit: int,
                           timeout: Optional[float], method: str, rows_as: Any = None,
                           observed: bool = False) -> Any:
        """Run a PreparedStatement's statement: its rows ([] for a command).

        The hot path of PreparedStatement.fetch/fetchrow/fetchval, called
        directly by them so that a cached run costs one coroutine frame; the
        await, the abandon on cancel and the status are inline for that
        reason (see execute()).  Waiting for sync, codec refreshes and the
        retry after a schema change (run_prepared_in_line()) are the exceptions.
        The run's status tag is recorded on `stmt` (get_statusmsg()).
        `observed`: the call is already inside its span (see tracing).
        """
        if TELEMETRY.live and not observed:
            return await tracing.traced(
                self.run_prepared(stmt, args, limit, timeout, method, rows_as, True),
                self.trace_attributes(), stmt._state.query)
        state = stmt._state
        proto = self.protocol
        # A lost connection is refused by the protocol itself (the same
        # ConnectionDoesNotExistError), so it is not checked here.
        timeout = self.command_timeout if timeout is None else check_timeout(timeout)
        if rows_as is None:
            # The statement's default (prepare(record_class= / row_factory=)).
            rows_as = stmt._rows_as
            if rows_as is None:
                rows_as = self.rows_default
        if stmt._checkout != self.checkout or self.closed or state.closed:
            stmt._check_usable(method)
            # Still usable, yet closed: the server dropped it (DISCARD ALL).
            return await self.run_prepared_in_line(stmt, args, limit, self.deadline(timeout),
                                                   False, rows_as)
        if (((self.blocks.active or self.closes) and self.admission.needs_sync())
                or state.codecs_generation != self.codecs.generation):
            # After the wait for sync(), or type introspection first: in the
            # caller's place in line.
            return await self.run_prepared_in_line(stmt, args, limit, self.deadline(timeout),
                                                   False, rows_as)
        # self.deadline(), inline: hot (and an untimed call allocates nothing)
        deadline = NO_DEADLINE if timeout is None else Deadline(self.loop, timeout)
        # The status tag goes to the statement's sink (get_statusmsg()).
        sink = stmt._status
        fut = proto.bind_execute(state, args, limit, timeout, WANT_ROWS, rows_as,
                                 True, sink)
        if fut is None:
            return await self.run_prepared_declined(stmt, state, args, limit, deadline,
                                                    rows_as, sink)
        try:
            return await fut
        except (Exception, asyncio.CancelledError) as e:
            return await self.finish_prepared(fut, e, stmt, state, args, limit, deadline,
                                              rows_as)

    async def finish_prepared(self, fut: Any, error: BaseException,
                              stmt: PreparedStatement[Any], state: StatementState, args: Any,
                              limit: int, deadline: Deadline, rows_as: Any) -> Any:
        """run_prepared() of `state` whose wait for `fut` (its answer) ended in `error`.

        The one copy of what follows a failed or interrupted run, for
        run_prepared() and for the sync driver's compiled call path
        (CallRunner.run_prepared() of mypgdriver/sync/driver/runner.pyx): a
        cancellation (Ctrl-C) or a timeout abandons the operation and
        settles before the error is raised (interrupted()); a schema change
        or a dropped statement prepares it again and runs it in the
        caller's place (RETRYABLE_ERRORS, retry_in_place()); any other
        error is raised.
        """
        try:
            if isinstance(error, (asyncio.CancelledError, asyncio.TimeoutError)):
                await self.interrupted(fut, error)
            raise error
        except RETRYABLE_ERRORS as e:
            self.retry_in_place(e, state.query, described=True)
            return await self.run_prepared_in_line(stmt, args, limit, deadline, True,
                                                   rows_as, retry=True)

    async def run_prepared_declined(self, stmt: PreparedStatement[Any], state: StatementState,
                                    args: Any, limit: int, deadline: Deadline, rows_as: Any,
                                    sink: Any) -> Any:
        """run_prepared() of `state` when bind_execute() declined to send it at once.

        Someone is before the caller, or the pipeline is full: the slow
        half, with its turn (for run_prepared() and the compiled call path).
        """
        fut = await self.bind_after_turn(state, args, limit, deadline, WANT_ROWS,
                                         rows_as, sink)
        if fut is None:
            # (bind_after_turn took the line.)
            return await self.run_prepared_in_line(stmt, args, limit, deadline, True,
                                                   rows_as)
        try:
            return await fut
        except (Exception, asyncio.CancelledError) as e:
            return await self.finish_prepared(fut, e, stmt, state, args, limit, deadline,
                                              rows_as)

    async def run_prepared_in_line(self, stmt: PreparedStatement[Any], args: Any, limit: int,
                                   deadline: Deadline, held: bool, rows_as: Any, *,
                                   retry: bool = False) -> Any:
        """run_prepared() when something must happen first, in the caller's place in line.

        The statement is prepared again if the server dropped it (or, with
        `retry`, after a schema change), and its codecs are re-picked (type
        introspection) if the registry changed since it was prepared.
        """
        if not held:
            await self.admission.enter_line(deadline)
        try:
            state = stmt._state
            if retry or state.closed:
                state = await stmt._reprepare(deadline)
            elif state.codecs_generation != self.codecs.generation:
                await self.refresh_codecs(state, deadline)
            fut = await self.bind_in_line(state, args, limit, deadline,
                                          WANT_ROWS, rows_as, stmt._status)
        finally:
            self.admission.leave_line()
        return await self.wait(fut)

    async def run_state(self, state: StatementState, args: Any, limit: int,
                        timeout: Timeout, want: int, rows_as: Any,
                        sink: Any = None) -> Any:
        """Bind and execute `state` once: rows or tag as `want` says (and the tag to `sink`)."""
        deadline = self.deadline_of(timeout)
        await self.admission.enter_line(deadline)
        try:
            fut = await self.bind_in_line(state, args, limit, deadline, want, rows_as, sink)
        finally:
            self.admission.leave_line()
        return await self.wait(fut)

    # --- executemany / fetchmany ---------------------------------------------------------------

    async def executemany(self, query: str, args: Any, timeout: Optional[float], *,
                          return_rows: int = False, rows_as: Any = None,
                          state: Optional[StatementState] = None,
                          retry: Optional[Reprepare] = None) -> Any:
        """Run `query` (or the held `state`) once per row of `args`, pipelined and atomic."""
        if TELEMETRY.live:
            rows = tracing.RowCounter(args)
            return await tracing.traced(
                self._executemany(query, rows.rows, timeout, return_rows, rows_as, state,
                                  retry),
                self.trace_attributes(), query, batch_size=rows.count)
        return await self._executemany(query, args, timeout, return_rows, rows_as, state,
                                       retry)

    async def _executemany(self, query: str, args: Any, timeout: Optional[float],
                           return_rows: int, rows_as: Any,
                           state: Optional[StatementState], retry: Optional[Reprepare]) -> Any:
        self.check_open()
        timeout = self.resolve_timeout(timeout)
        if rows_as is None:
            rows_as = self.rows_default
        elif isinstance(rows_as, type):
            check_record_class(rows_as)     # (a row factory is checked when it is used)
        # In line from the prepare (if any) to the end of the stream, so that
        # neither the prepare nor a retry lets a later call overtake it.
        deadline = self.deadline(timeout)
        await self.admission.enter_line(deadline)
        try:
            return await self._executemany_in_line(query, args, deadline, return_rows,
                                                   rows_as, state, retry)
        finally:
            self.admission.leave_line()

    async def _executemany_in_line(self, query: str, args: Any, deadline: Deadline,
                                   return_rows: int, rows_as: Any,
                                   state: Optional[StatementState],
                                   retry: Optional[Reprepare]) -> Any:
        if state is None:
            cached = self.statements.cached(query)
            state = (cached if cached is not None
                     else await self.prepare_state(query, deadline))
        else:
            if retry is not None and state in self.statements.dropped:
                # A PreparedStatement's statement that DISCARD ALL dropped.
                state = await retry(deadline)
            if state.codecs_generation != self.codecs.generation:
                await self.refresh_codecs(state, deadline)
        try:
            return await self._executemany_state(state, args, deadline, return_rows,
                                                 rows_as)
        except exceptions.DataError as e:
            # Only a sequence can be sent again: an iterator is partly consumed.
            # (A PreparedStatement's types never change under it: no retry.)
            if not isinstance(args, (list, tuple)) or retry is not None:
                raise
            fresh = await self.redescribe_after_refusal(e, state, query, deadline)
            if fresh is None:
                raise
            return await self._executemany_state(fresh, args, deadline, return_rows,
                                                 rows_as)
        except RETRYABLE_ERRORS as e:
            # Only a sequence can be sent again: an iterator is partly consumed.
            if not isinstance(args, (list, tuple)) or not self.may_retry_after(
                    e, query, described=retry is not None):
                raise
            if retry is not None:
                state = await retry(deadline)
            else:
                state = await self.prepare_state(query, deadline)
            return await self._executemany_state(state, args, deadline, return_rows,
                                                 rows_as)

    async def _executemany_state(self, state: StatementState, args: Any, deadline: Deadline,
                                 return_rows: int, rows_as: Any) -> Any:
        # A stream fed batch by batch (waiting for the socket to drain in
        # between): it holds the connection alone.
        async with self.admission.held(deadline, keeping=state) as timeout:
            return await self._executemany_stream(state, args, timeout, return_rows,
                                                  rows_as)

    async def _executemany_stream(self, state: StatementState, args: Any, timeout: Optional[float],
                                  return_rows: int, rows_as: Any) -> Any:
        proto = self.protocol
        # Inside a transaction block, a savepoint (opened only if our side
        # may fail after rows were written) lets a failure of ours undo them
        # without failing the caller's block.
        savepoint = self.new_savepoint_name() if proto.xact_status == 'T' else None
        fut = proto.executemany_start(state, timeout, return_rows, rows_as)
        proto.begin_stream()
        try:
            if hasattr(args, '__aiter__'):
                await self._executemany_feed_async(state, args, savepoint)
            else:
                await self._executemany_feed(state, args, savepoint)
            # The last point where a timeout means "nothing was written":
            # past the Sync, the server commits (a source slow at its end
            # held the thread past the deadline without a row to check it).
            if proto.stream_overdue():
                await interruption_point()
            proto.end_stream()
            proto.executemany_finish(False)
        except asyncio.CancelledError as exc:
            # Our own timeout or cancel() interrupting a stalled async source
            # is a timeout / query cancel for the caller, not a cancellation.
            replacement = self.stream_interrupted(exc, fut)
            if replacement is not None:
                await self.settle_after_interruption()
                raise replacement from None
            proto.abandon(fut)
            await self.settle_after_interruption()
            raise
        except BaseException as exc:
            # Bad input (DataError naming the row) or a failing iterator:
            # make the server roll back what was already sent, then re-raise.
            self.abort_stream(lambda: proto.executemany_finish(True))
            try:
                await self.wait(fut)
            except Exception as server_error:
                # A row sent earlier failed on the server first: that error
                # comes first in row order, and is the one raised (and, as
                # for any server error, the transaction block stays failed).
                if isinstance(exc, Exception) and not _is_pipeline_abort(server_error):
                    raise
            if isinstance(exc, Exception):
                await self._executemany_undo_savepoint()
            raise
        return await self.wait(fut)

    async def _executemany_undo_savepoint(self) -> None:
        """After our abort of the pipeline: the block as it was before executemany.

        Still holding the connection, so nothing else ran in between.  It
        has a cleanup's own time limit, not what is left of the call's: at
        the call's deadline it would leave the caller's block failed.  If it
        fails, the block stays failed (as after a server error) and the
        caller gets its own error all the same.
        """
        proto = self.protocol
        savepoint = proto.executemany_savepoint()
        if savepoint is None or proto.xact_status != 'E':
            return
        with contextlib.suppress(Exception):
            await self.wait(proto.simple_query(
                f'ROLLBACK TO SAVEPOINT {savepoint}; RELEASE SAVEPOINT {savepoint}',
                TRANSACTION_CLEANUP_TIMEOUT, True))

    # The feeders send the rows batch by batch.  Once the server reported an
    # error it skips everything up to Sync, so they stop reading the
    # arguments: a generator is not run to its end, and neither its later
    # rows nor its own exception can hide the server's error.  When the
    # arguments fail, the rows read before the failing one are sent all the
    # same, so that an error of theirs on the server comes first, in row
    # order (see _executemany_stream).  `savepoint` goes with every write
    # that our side may still fail after (all but a last, short batch): the
    # first such write opens it.  A single batch needs none: it is encoded
    # whole before anything is written.

    async def _executemany_feed(self, state: StatementState, args: Any,
                                savepoint: Optional[str]) -> None:
        proto = self.protocol
        iterator = iter(args)
        # A source that computes its rows (a generator, an iterator over a
        # file or a socket) holds the thread while it does: neither the
        # event loop nor the sync glue can run the timeout's timer then.
        # So the deadline is checked after each of its rows.  A list or a
        # tuple is in memory already: its batches are taken whole.
        watched = not isinstance(args, (list, tuple))
        base = 0
        while not proto.executemany_failed():
            batch: list = []
            try:
                if watched:
                    if proto.fill_rows(batch, iterator, _EXECUTEMANY_BATCH):
                        await interruption_point()
                else:
                    # extend() keeps the rows read before an exception (a
                    # list built by list(islice()) would be lost with it).
                    batch.extend(itertools.islice(iterator, _EXECUTEMANY_BATCH))
            except Exception:
                if batch:
                    proto.executemany_write(state, batch, base, savepoint)
                raise
            if len(batch) < _EXECUTEMANY_BATCH:
                if batch:
                    proto.executemany_write(state, batch, base)
                return      # the arguments are exhausted
            proto.executemany_write(state, batch, base, savepoint)
            base += len(batch)
            # Yield to the loop between batches even when the socket takes
            # everything, so that the server's answers are read (and an
            # error noticed) while the rows are being produced.
            drain = proto.get_drain_waiter()
            await (drain if drain is not None else asyncio.sleep(0))

    async def _executemany_feed_async(self, state: StatementState, args: Any,
                                      savepoint: Optional[str]) -> None:
        proto = self.protocol
        rows = args.__aiter__()
        base = 0
        batch: list = []
        while not proto.executemany_failed():
            try:
                row = await rows.__anext__()
            except StopAsyncIteration:
                break
            except Exception:
                if batch:
                    proto.executemany_write(state, batch, base, savepoint)
                raise
            batch.append(row)
            if len(batch) >= _EXECUTEMANY_BATCH:
                proto.executemany_write(state, batch, base, savepoint)
                base += len(batch)
                batch = []
                drain = proto.get_drain_waiter()
                await (drain if drain is not None else asyncio.sleep(0))
        if batch:
            proto.executemany_write(state, batch, base)

    def abort_stream(self, finish: Callable[[], None]) -> None:
        """End a stream we fed from user data after a failure on our side.

        If even that fails (the transport refuses the write), the protocol is
        in an unknown state: the connection is closed rather than left
        believing an operation is running.
        """
        proto = self.protocol
        proto.end_stream()
        try:
            finish()
        except BaseException:
            self.terminate()
            raise

    def stream_interrupted(self, exc: BaseException,
                           fut: asyncio.Future[Any]) -> Optional[BaseException]:
        """After an exception while feeding user data: the error the caller should get.

        The protocol cancels the feeding task itself when the operation times
        out, or when cancel() is called while we wait on the caller's data
        (the server ignores a CancelRequest then).  That cancellation is ours,
        not the caller's: it is undone (uncancel) and replaced by TimeoutError
        or QueryCanceledError.  The protocol abandons the operation (CopyFail
        or an aborted pipeline, then a drain), so nothing is committed.
        Returns None when the exception is the caller's own.
        """
        proto = self.protocol
        reason = proto.end_stream()
        if not (reason and isinstance(exc, asyncio.CancelledError)):
            return None
        task = self.current_task()
        if task is not None and hasattr(task, 'uncancel'):
            task.uncancel()
        proto.abandon(fut)
        # The caller gets the replacement, not the operation's own outcome:
        # consume it so asyncio does not report it as never retrieved.
        error = None
        if fut.done():
            if not fut.cancelled():
                error = fut.exception()
        else:
            fut.cancel()
        if reason == 1:
            if isinstance(error, asyncio.TimeoutError):
                # The operation's own timeout, whose message says how long it had.
                return asyncio.TimeoutError(*error.args)
            return asyncio.TimeoutError('timed out while waiting for the rows to send; '
                                        'the operation was aborted and nothing was written')
        return exceptions.QueryCanceledError('canceling statement due to user request')

    # --- portals (cursors) ---------------------------------------------------------------------

    def new_portal_name(self) -> str:
        return f'__mypg_portal_{self.conn_id}_{next(self._portal_ids)}__'

    def new_savepoint_name(self) -> str:
        return f'mypg_savepoint_{next(self._savepoint_ids)}'

    async def bind_portal(self, state: StatementState, args: Any, portal: str, limit: int,
                          timeout: Timeout, rows_as: Any,
                          fetch: bool = True) -> Any:
        """Bind `args` to a named portal; with `fetch`, ``(rows, more_remain)`` of its first `limit` rows.

        Not retried (a portal lives in a transaction block); an error saying
        the schema changed under the statement drops the stale caches first.
        """
        proto = self.protocol
        if rows_as is None:
            rows_as = self.rows_default
        deadline = self.deadline_of(timeout)
        stale = Stale(state.query, RETRYABLE_ERRORS)
        if fetch:
            operation = self.run(lambda left: proto.bind_execute_portal(
                state, args, portal, limit, left, rows_as), deadline, stale=stale)
        else:
            operation = self.run(lambda left: proto.bind_portal(state, args, portal, left),
                                 deadline, stale=stale)
        if TELEMETRY.live:
            operation = tracing.traced(operation, self.trace_attributes(), state.query)
        result = await operation
        return result if fetch else None

    async def execute_portal(self, state: StatementState, portal: str, limit: int,
                             timeout: Timeout,
                             rows_as: Any) -> tuple[list[Any], bool]:
        """``(rows, more_remain)``: up to `limit` more rows of an open portal (0: all).

        A composite type that changed under the portal's rows
        (OutdatedSchemaCacheError) drops the stale caches before it is raised.
        """
        proto = self.protocol
        if rows_as is None:
            rows_as = self.rows_default
        operation = self.run(lambda left: proto.execute_portal(
            state, portal, limit, left, rows_as), self.deadline_of(timeout),
            stale=Stale(state.query, _OUTDATED_ROWS))
        if TELEMETRY.live:
            operation = tracing.traced(operation, self.trace_attributes(), state.query)
        return await operation

    async def close_portal(self, portal: str, timeout: Timeout) -> None:
        """Close the portal `portal` (nothing to do on a closed connection)."""
        if self.is_closed():
            return
        proto = self.protocol
        await self.run(lambda left: proto.close_portals([portal], left),
                        self.deadline_of(timeout))

    # --- statements ------------------------------------------------------------------------------

    async def prepare_state(self, query: str, timeout: Timeout, *,
                            name: Optional[str] = None, cache: bool = True, named: bool = False,
                            create_now: bool = False) -> StatementState:
        """Parse and describe `query`, learn its types and pick its codecs.

        With `cache` (and no `name`), a cacheable query gets a generated name
        and goes into the statement cache; otherwise the statement is unnamed
        unless `name` is given or `named` asks for a generated one.  The
        unnamed statement is parsed again in front of each Bind (see
        coreproto's _write_parse): it lives only until the next Parse of ''.

        A statement with a generated name (cached, or `named`) is described
        here as the unnamed statement, and created on the server by the
        Parse sent in front of its first Bind, with that Bind and its Sync
        (``parse_pending``): through a transaction-mode pooler, which may
        switch server connections at every Sync outside a transaction block,
        it is never created on one server connection and first bound on
        another.  `create_now` creates it here instead (Connection.prepare():
        the user asked for a statement on the server); so is a `name` of the
        user's.
        """
        use_cache = cache and name is None and self.statements.is_cacheable(query)
        generated = name is None and (use_cache or named)
        if name is None:
            name = self.statements.new_name() if generated else ''
        state = StatementState(name, query)
        state.parse_pending = generated and not create_now
        # One deadline for the Parse/Describe and the introspection after it
        # (the caller's, if this is a step of its call).
        deadline = self.deadline_of(timeout)
        # In line: a caller that needs this statement holds the line until
        # it sent its Bind (enter_line() is re-entrant); a bare prepare keeps
        # it for its introspection.
        timeout = await self.admission.enter_line(deadline)
        try:
            if self.closed:
                self.check_open()
            if self.admission.needs_sync():
                timeout = await self.admission.sync(deadline)
            fut = self.protocol.prepare(state, timeout)
            state.schema_epoch = self.schema_sent
            await self.wait(fut)
            try:
                missing = missing_statement_types(state, self.codecs)
                if missing:
                    await self.introspect_types(missing, deadline)
                resolve_statement_codecs(state, self.codecs)
            except BaseException:
                self.statements.queue_close(state)
                raise
        finally:
            self.admission.leave_line()
        if use_cache:
            self.statements.cache.put(query, state)
        return state

    async def introspect_types(self, oids: Iterable[int], timeout: Timeout,
                               fetch: Optional[Callable[..., Awaitable[list[Record]]]] = None
                               ) -> None:
        """Teach the codec registry about `oids` (and what they contain).

        `fetch`: what runs the catalog query (default fetch_catalog(); a
        pipeline's runs it inside the pipeline).
        """
        if fetch is None:
            fetch = self.fetch_catalog
        if self.introspection_query is None:
            version = self.server_version
            num = version.major * 10000 + version.micro if version.major >= 10 else (
                version.major * 10000 + version.minor * 100 + version.micro)
            self.introspection_query = introspection.introspection_query(num)
        oids = sorted(oids)
        rows = []
        # Chunks keep the query's estimated cost under jit_above_cost (see
        # introspection.py); one query covers every realistic statement.
        for start in range(0, len(oids), introspection.MAX_OIDS_PER_QUERY):
            rows.extend(await fetch(
                self.introspection_query,
                (oids[start:start + introspection.MAX_OIDS_PER_QUERY],), timeout))
        self.codecs.add_types(introspection.rows_to_type_info(rows))

    async def fetch_catalog(self, query: str, args: tuple[Any, ...],
                            timeout: Timeout) -> list[Record]:
        """Rows of one of the driver's own catalog queries, read with built-in codecs only.

        set_type_codec() changes how the application's values look, never
        how the driver reads pg_type: a user codec on oid or text would
        otherwise garble the type information itself.  The statement is
        prepared and cached like any other; its codecs are then re-picked
        from the built-in table.  Not logged, like the rest of introspection.
        """
        if isinstance(timeout, Deadline) and timeout is not NO_DEADLINE:
            deadline = timeout
        else:
            # (Called without a deadline, even by a step of an untimed call:
            # the connection's command_timeout.)
            deadline = self.deadline(self.resolve_timeout(
                None if timeout is NO_DEADLINE else timeout))
        await self.admission.enter_line(deadline)
        try:
            state = self.statements.cached(query)
            if state is None:
                state = await self.prepare_state(query, deadline)
            if state.codecs_generation != introspection.CATALOG_CODECS.generation:
                resolve_statement_codecs(state, introspection.CATALOG_CODECS)
            fut = await self.bind_in_line(state, args, 0, deadline, WANT_ROWS,
                                          Record)
        finally:
            self.admission.leave_line()
        return await self.wait(fut)

    async def refresh_codecs(self, state: StatementState, deadline: Deadline) -> None:
        """Re-pick the codecs of a held statement after the registry changed (in line)."""
        missing = missing_statement_types(state, self.codecs)
        if missing:
            await self.admission.enter_line(deadline)
            try:
                await self.introspect_types(missing, deadline)
            finally:
                self.admission.leave_line()
        resolve_statement_codecs(state, self.codecs)

    # --- the schema-change retry policy ------------------------------------------------------------

    def may_retry_after(self, error: BaseException, query: str, *,
                        described: bool = False) -> bool:
        """React to a statement that no longer matches the schema; True if a retry is safe.

        InvalidCachedStatementError (SQLSTATE 0A000, "cached plan must not
        change result type") comes from the server before the statement ran:
        re-preparing fixes it, but inside a transaction block the error has
        already failed the transaction, and a statement the user prepared
        (`described`: a PreparedStatement) keeps the result types it was
        described with, so it is never re-prepared behind the user's back
        (as in asyncpg).  OutdatedSchemaCacheError means our knowledge of a
        type (a composite's fields) is stale; the statement did run, so only
        a plain read is repeated.  So is an unnamed statement whose result
        types changed (InvalidCachedStatementError raised by the protocol,
        not the server, which ran the statement: see coreproto's
        _check_redescribed).

        SQLSTATE 26000 (the statement does not exist: dropped where we could
        not see it, or a pooler without statement tracking moved us to
        another server connection) and 42P05 (our Parse named a statement
        that already exists) also failed before anything ran: the statement
        is prepared again (under a new name, or, for a PreparedStatement,
        its own) and run once more, outside a transaction block.
        """
        if isinstance(error, _NAME_TROUBLE):
            if not described and STATEMENT_PREFIX not in (error.message or ''):
                # About a statement of the user's own SQL (EXECUTE x), not ours.
                return False
            if isinstance(error, exceptions.InvalidSQLStatementNameError):
                # Which of our statements are gone is unknown: all are suspect.
                self.statements.forget_server_statements()
            if self.protocol.is_in_transaction():
                _add_hint(error, 'The statement cache was cleared. Inside a transaction '
                          'block the statement cannot be retried: roll back and run the '
                          'transaction again.')
                return False
            return True
        if (isinstance(error, exceptions.InvalidCachedStatementError)
                and error.severity is not None):
            # The schema changed: other cached statements are suspect too.
            self.statements.cache.clear()
            if described:
                _add_hint(error, 'The result types of the prepared statement changed. '
                          'Prepare it again (Connection.prepare()) to use the new types.')
                return False
            if self.protocol.is_in_transaction():
                _add_hint(error, 'The statement cache was cleared. Inside a transaction '
                          'block the statement cannot be retried: roll back and run the '
                          'transaction again.')
                return False
            return True
        self.drop_schema_caches()
        if described and isinstance(error, exceptions.InvalidCachedStatementError):
            return False
        if self.protocol.is_in_transaction():
            return False
        return is_plain_read(query)

    async def redescribe_after_refusal(self, error: BaseException, state: StatementState,
                                       query: str,
                                       deadline: Deadline) -> Optional[StatementState]:
        """A cached statement's codecs refused an argument: did the schema change its types?

        After ``ALTER TABLE ... ALTER COLUMN ... TYPE`` a cached statement
        still has the parameter types it was prepared with (the server only
        re-plans it), so the now-correct argument is refused client-side,
        before anything is sent.  The query is described again, unnamed (no
        statement is left behind); if its parameter types changed, the
        statement cache is dropped like after any schema change and the new
        description is returned, to run once with.  None: raise `error`.

        Only on this error path, and only outside a transaction block: the
        Parse could fail (a dropped column) and must not fail the caller's
        transaction.  Errors of the server (`severity` set) are not argument
        refusals.
        """
        if (getattr(error, 'severity', None) is not None or not state.name
                or self.protocol.is_in_transaction() or self.is_closed()):
            return None
        try:
            if self.admission.needs_sync():
                await self.admission.sync(deadline)
            fresh = await self.prepare_state(query, deadline, cache=False)
        except exceptions.PostgresError:
            return None
        if fresh.param_oids == state.param_oids:
            return None
        self.statements.cache.clear()
        return fresh

    def drop_schema_caches(self) -> None:
        self.codecs.clear_introspected()
        self.statements.cache.clear()

    # --- query logging and tracing ---------------------------------------------------------------

    def observed(self, operation: Awaitable[Any], query: str, args: Any,
                 timeout: Optional[float]) -> Awaitable[Any]:
        """`operation` as the query loggers and tracing want it (each may be off).

        Called only once either is on (the hot paths check
        ``self.query_loggers or TELEMETRY.live`` first): reported to the
        query loggers (logged()), inside its span (tracing.traced()).
        """
        if self.query_loggers:
            operation = self.logged(operation, query, args, timeout)
        if TELEMETRY.live:
            operation = tracing.traced(operation, self.trace_attributes(), query)
        return operation

    def trace_attributes(self) -> dict[str, Any]:
        """The attributes every span of this connection has (made at its first span)."""
        attributes = self._trace_attributes
        if attributes is None:
            attributes = self._trace_attributes = tracing.connection_attributes(
                self.params, self.addr)
        return attributes


    async def logged(self, operation: Awaitable[Any], query: str, args: Any,
                     timeout: Optional[float]) -> Any:
        """Await `operation` and report it to the query loggers, failed or not."""
        if timeout is None:
            timeout = self.command_timeout
        started = time.monotonic()
        error = None
        try:
            return await operation
        except BaseException as e:
            error = e
            raise
        finally:
            record = LoggedQuery(query, args, timeout, time.monotonic() - started, error,
                                 self.addr, self.params)
            for callback in list(self.query_loggers):
                if inspect.iscoroutinefunction(callback):
                    task = self.loop.create_task(callback(record))
                    _logger_tasks.add(task)
                    task.add_done_callback(_logger_tasks.discard)
                else:
                    self.loop.call_soon(callback, record)

    # --- transaction blocks --------------------------------------------------------------------------

    def settle_transaction(self, top_level: bool, before: int,
                           follow_up: FollowUp) -> asyncio.Task[SettledStatement]:
        """Start finishing an interrupted transaction statement; a task giving the outcome.

        Registered at once as the connection's pending cleanup, so no other
        operation can run before it.  It waits (bounded) until the
        interrupted statement has drained, then asks
        ``follow_up(xact_status, tag)`` which statement, if any, ends the
        block on the server, and runs it.  `tag` is the interrupted
        statement's command tag if it was the last operation (the protocol's
        operation count was `before` when it was sent) and succeeded, else
        None.  A savepoint that cannot be undone alone makes the whole
        transaction roll back (``xact_broken`` tells its owner); a top-level
        block that cannot be ended, or a cleanup slower than
        TRANSACTION_CLEANUP_TIMEOUT, closes the connection.  The task's
        result is a SettledStatement.
        """
        task = self.loop.create_task(
            self._settle(self.blocks.cleanup, top_level, before, follow_up))
        self.blocks.begin_cleanup(task)

        def done(t: asyncio.Future[Any]) -> None:
            self.blocks.end_cleanup(t)
            if not t.cancelled():
                t.exception()   # retrieved: the caller may have gone
        task.add_done_callback(done)
        return task

    async def _settle(self, previous: Optional[asyncio.Future[Any]], top_level: bool, before: int,
                      follow_up: FollowUp) -> SettledStatement:
        deadline = Deadline(self.loop, TRANSACTION_CLEANUP_TIMEOUT)
        try:
            if previous is not None:
                await waits.wait_shielded(self.loop, previous, deadline.left())
            if self.is_closed():
                raise exceptions.ConnectionDoesNotExistError('the connection was lost')
            # Ahead of every caller waiting to send, once everything in flight
            # (the interrupted statement included) is answered.
            await self.admission.take_turn(True, True, deadline)
            try:
                return await self._end_block(before, follow_up, top_level, deadline)
            finally:
                self.admission.release()
        except BaseException:
            # In doubt: a connection is in sync or closed.  Closing ends the
            # server's transaction (rolled back) with the session.
            self.terminate()
            raise

    async def _end_block(self, before: int,
                         follow_up: FollowUp, top_level: bool,
                         deadline: Deadline) -> SettledStatement:
        proto = self.protocol
        if self.is_closed():
            raise exceptions.ConnectionDoesNotExistError('the connection was lost')
        status = proto.xact_status
        # The interrupted statement's own outcome, if it was the last
        # operation sent: its tag when it succeeded, else its error.
        outcome = proto.outcome(before + 1) if proto.op_seq == before + 1 else None
        ours = outcome is not None
        tag, error = outcome if outcome is not None else (None, None)
        if error is not None:
            tag = None
        statement = follow_up(status, tag)
        if statement is not None:
            # (the operation's own timeout: on expiry the connection is
            # closed by _settle(), as the outcome is then in doubt)
            try:
                await proto.simple_query(statement, deadline.left(), True)
            except exceptions.PostgresError:
                if top_level:
                    raise
                # The savepoint could not be undone alone: end the whole
                # transaction, and tell its owner it is gone.
                self.blocks.broken = 'an interrupted savepoint could not be undone alone'
                statement = 'ROLLBACK'
                await proto.simple_query(statement, deadline.left(), True)
        if top_level and proto.xact_status != 'I':
            raise exceptions.InterfaceError('the transaction block could not be ended')
        return SettledStatement(status, proto.op_seq > before, ours, tag, error, statement)


# Rows of executemany() encoded and sent at a time.
_EXECUTEMANY_BATCH = 1000

# The portal that executemany_finish(abort=True) executes so that the server
# fails the pipeline (coreproto's _finish_many); it does not exist.
_ABORT_PORTAL = '__mypgdriver_abort_pipeline__'


def _is_pipeline_abort(error: BaseException) -> bool:
    """True if `error` is the server's answer to our own abort of a pipeline."""
    return (isinstance(error, exceptions.InvalidCursorNameError)
            and _ABORT_PORTAL in str(error))


def _seconds(timeout: Timeout) -> Optional[float]:
    """A step's time as the query loggers report it: the call's timeout in seconds."""
    return timeout.timeout if isinstance(timeout, Deadline) else timeout


def _add_hint(error: exceptions.PostgresError, text: str) -> None:
    # Server errors are filled through __dict__ (see exceptions._base).
    hint = error.hint
    error.__dict__['hint'] = f'{hint}\n{text}' if hint else text


def warn_unclosed(obj: Any) -> None:
    """The ResourceWarning of a connection collected while still open."""
    warnings.warn(f'unclosed connection {obj!r}', ResourceWarning, source=obj, stacklevel=2)

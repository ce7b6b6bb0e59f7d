# cython: language_level=3
"""asyncio glue: the transport, futures, timeouts and cancellation.

Every operation returns a Future that its caller awaits.  Several may be in
flight at once (pipelining); they are answered in order.  An operation
that its caller abandons (task cancelled, timeout) is not forgotten: its
replies are still read (and dropped), and the server is asked to cancel it
only when the cancel cannot hit another caller's statement (see
_maybe_cancel), so a connection is always either in sync or closed.
"""

import asyncio
import collections
import socket

from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.ref cimport Py_REFCNT
from libc.stdint cimport int32_t
from mypgdriver.protocol.coreproto cimport (
    CoreProtocol, Operation, StatusSink, ProtocolState, STATE_PREPARE, STATE_BIND_EXECUTE,
    STATE_CLOSE_STATEMENTS, STATE_NEW, STATE_STARTUP, STATE_IDLE, STATE_CLOSED, STATE_COPY_IN,
    STATE_COPY_IN_WAIT, STATE_BIND_EXECUTE_MANY, STATE_SIMPLE_QUERY)
from mypgdriver.protocol.statement cimport (
    StatementState, ROW_RECORD, ROW_TUPLE, ROW_DICT, ROW_SCALAR, ROW_MAKER)
from mypgdriver.protocol.buffer cimport READ_BUFFER_KEEP, ReadBuffer, WriteBuffer

from mypgdriver import exceptions
from mypgdriver.core import deadlines, waits

cdef extern from *:
    """
    #if defined(__unix__) || defined(__APPLE__)
    #include <errno.h>
    #include <sys/types.h>
    #include <sys/socket.h>
    /* 1: bytes or the end of the stream wait to be read, or the socket
       failed; 0: nothing yet.  MSG_PEEK leaves the bytes for the reader. */
    static int mpg_input_waiting(int fd) {
        char byte;
        ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n >= 0) return 1;
        return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    #else
    static int mpg_input_waiting(int fd) { return 0; }
    #endif
    #include <time.h>
    /* Seconds on the monotonic clock, read once per row of a streamed
       source: the coarse clock (the tick's resolution, a few ms, is plenty
       for a timeout) costs a few loads, where the precise one reads the
       time-stamp counter.  A vDSO call either way, no system call. */
    #ifdef CLOCK_MONOTONIC_COARSE
    #define MPG_STREAM_CLOCK CLOCK_MONOTONIC_COARSE
    #else
    #define MPG_STREAM_CLOCK CLOCK_MONOTONIC
    #endif
    static double mpg_monotonic(void) {
        struct timespec ts;
        clock_gettime(MPG_STREAM_CLOCK, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
    """
    int mpg_input_waiting(int fd) nogil
    double mpg_monotonic() nogil

from cpython.list cimport PyList_Append
from mypgdriver.protocol.record import Record
from mypgdriver.rows import (
    FactoryCall, ResultDescription, dict_row, scalar_row, scalar_row_without_columns, tuple_row)


cdef enum OpKind:
    OP_NONE = 0
    OP_STARTUP = 1
    OP_PREPARE = 2
    OP_BIND_EXECUTE = 3
    OP_SIMPLE_QUERY = 4
    OP_CLOSE_STATEMENTS = 5
    OP_EXECUTE_MANY = 6
    OP_COPY = 7
    OP_PORTAL = 8
    OP_PIPELINE_SYNC = 9

# What a bind/execute operation gives its caller (C constants: compared per
# result; the Python names below are for the Session).
cdef enum Want:
    C_WANT_ROWS = 0
    C_WANT_STATUS = 1
    C_WANT_RESULT = 3

WANT_ROWS = C_WANT_ROWS
#: executemany_start()'s return_rows for one (rows, status tag) pair per statement.
ROWS_PER_STATEMENT = 2
WANT_STATUS = C_WANT_STATUS
#: A bind/execute's whole result as one value: ``(rows, status tag, StatementState)``
#: (mypgdriver.core.session_api: the DB-API's cursor needs all three of each run).
WANT_RESULT = C_WANT_RESULT


cdef str _op_name(int kind, int recv_state):
    """What an operation is called in a timeout's message."""
    if kind == OP_PREPARE:
        return 'prepare'
    if kind == OP_EXECUTE_MANY:
        return 'executemany'
    if kind == OP_COPY:
        return 'COPY'
    if kind == OP_PORTAL:
        return 'cursor fetch'
    if kind == OP_CLOSE_STATEMENTS:
        # bind_portal() shares the kind: a Bind with no rows to wait for.
        return 'cursor open' if recv_state == STATE_BIND_EXECUTE else 'close'
    if kind == OP_STARTUP:
        return 'connection startup'
    if kind == OP_PIPELINE_SYNC:
        return 'pipeline sync'
    return 'query'


#: The default depth limit of a connection's pipeline (connect(max_pipeline=)).
DEFAULT_MAX_PIPELINE = 256
# Messages held back behind operations in flight (see _write) are written
# as soon as they add up to this many bytes.
cdef Py_ssize_t OUT_PENDING_LIMIT = 65536

# An operation cancelled on timeout that is still running this long after
# its CancelRequest gets another one, then after twice as long, up to the
# maximum (see _cancel_and_wait).
# (deadlines.COMMIT_ANSWER_WAIT: see _time_out_committing)
cdef double LATE_ANSWER_GRACE = deadlines.COMMIT_ANSWER_WAIT

cdef double CANCEL_REPEAT_FIRST = 0.1
cdef double CANCEL_REPEAT_MAX = 2.0


cdef class BaseProtocol(CoreProtocol):

    def __init__(self, loop=None):
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self.transport = None
        self.resync_waiter = None
        self.cancel_target = None
        self.lost_exc = None
        self.cancel_done = True
        self.drain_waiter = None
        self.writing_paused = False
        self.out_pending = None
        self.out_pending_size = 0
        self.flush_scheduled = False
        self.copy_ready = None
        self.lost_handled = False
        self.stream_task = None
        self.stream_interrupt = 0
        self.cancel_gate = None
        self.answer_waiter = None
        self.closed_by_client = False
        self.max_pipeline = DEFAULT_MAX_PIPELINE
        self.turn_waiters = collections.deque()
        self.n_turn_waiters = 0
        self.reserved = 0
        self.exclusive = False
        self.line_held = False
        self.schema_epoch = 0
        self.on_statements_dropped = None
        self.on_statement_unusable = None
        self.pipeline_on = False
        self.pipeline_failed = False
        self.pipe_unsynced = 0
        self.pipe_flushed_seq = 0
        self.pipe_need_flush = False
        self.pipe_buf = WriteBuffer()

    # --- asyncio.Protocol interface ---

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info('socket')
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data):
        # uvloop hands us a fresh bytes object per read.  Messages are parsed
        # where they are, in that object; only a partial message is copied:
        # the unparsed tail of one read, and the bytes of the next read that
        # complete it.  (Measured with uvloop: this path has lower latency
        # per query than asyncio.BufferedProtocol's get_buffer/buffer_updated
        # on results of 60-100 KB: large_object c=1 pinned 146-159 us vs
        # 199-224 us per query.)
        cdef ReadBuffer rb = self.rbuf
        cdef Py_ssize_t offset = 0
        try:
            if type(data) is not bytes:
                rb._feed(data)
                self._process_messages()
            else:
                # At most two rounds: the header of the partial message, then its body.
                while rb.start != rb.end and offset < PyBytes_GET_SIZE(data):
                    offset = rb.fill_pending(data, offset)
                    self._process_messages()
                if offset < PyBytes_GET_SIZE(data):
                    rb.borrow(data, offset)
                    try:
                        self._process_messages()
                    finally:
                        rb.unborrow()
            if rb.capacity > READ_BUFFER_KEEP:
                rb.shrink()
        except BaseException as e:
            self._fatal(e)
            if not isinstance(e, Exception):
                raise

    def eof_received(self):
        return False

    def pause_writing(self):
        self.writing_paused = True

    def resume_writing(self):
        self.writing_paused = False
        waiter = self.drain_waiter
        self.drain_waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get_drain_waiter(self):
        """A Future to await before writing more (transport buffer full), or None."""
        if not self.writing_paused:
            return None
        if self.drain_waiter is None:
            self.drain_waiter = self.loop.create_future()
        return self.drain_waiter

    def pause_reading(self):
        if self.transport is not None and self.state != STATE_CLOSED:
            self.transport.pause_reading()

    def resume_reading(self):
        if self.transport is not None and self.state != STATE_CLOSED:
            self.transport.resume_reading()

    def connection_lost(self, exc):
        if self.lost_handled:
            return
        self.lost_handled = True
        if self.lost_exc is None:
            error = self.result_error
            if error is not None and isinstance(error, exceptions.PostgresError):
                # The server said why before closing (FATAL 57P01 from
                # pg_terminate_backend or a shutdown): as in asyncpg, the
                # caller gets a connection error, the server's as its cause,
                # so that retry handlers catching connection errors see it.
                self.lost_exc = exceptions.ConnectionDoesNotExistError(
                    f'connection was closed in the middle of operation: {error.message}')
                self.lost_exc.__cause__ = error
                self.lost_exc.__suppress_context__ = True
            else:
                self.lost_exc = exceptions.ConnectionDoesNotExistError(
                    'connection was closed in the middle of operation'
                    if self.cur is not None else 'connection is closed')
                if exc is not None:
                    self.lost_exc.__cause__ = exc
        self.state = STATE_CLOSED
        self.release_buffers()
        # Termination listeners are scheduled (call_soon, a task's first step
        # for a coroutine) before the waiters fail: the event loop runs them
        # in that order, so a failed call's caller sees their effects.
        try:
            if self.on_connection_lost is not None:
                self.on_connection_lost(self.lost_exc)
        finally:
            if (self.cur is not None and self.cur.kind == OP_STARTUP
                    and self.result_error is not None):
                self._fail_all(self.result_error)
            else:
                self._fail_all(self.lost_exc)

    cdef _fail_all(self, object exc):
        # The connection is gone: every operation in flight and every caller
        # waiting for its turn gets `exc`.
        cdef Operation op = self.cur
        cdef Operation nxt
        self.cur = None
        self.tail = None
        self.depth = 0
        self.excl_op = None
        self.cancel_target = None
        while op is not None:
            if op.timeout_handle is not None:
                op.timeout_handle.cancel()
                op.timeout_handle = None
            if op.waiter is not None and not op.waiter.done():
                op.waiter.set_exception(exc)
            nxt = op.next
            op.next = None
            op = nxt
        while self.n_turn_waiters:
            fut = self._pop_waiter()[0]
            if not fut.done():
                fut.set_exception(exc)
        self.reserved = 0
        self.exclusive = False
        if self.resync_waiter is not None and not self.resync_waiter.done():
            self.resync_waiter.set_result(None)
        self.resync_waiter = None
        self._wake_answer_waiter()
        self._wake_copy_and_drain()

    cdef object _closed_error(self):
        # After close(), as in asyncpg, a call is misuse (InterfaceError); a
        # lost connection is a connection error.
        if self.closed_by_client:
            return exceptions.InterfaceError('cannot perform operation: connection is closed')
        return exceptions.ConnectionDoesNotExistError(
            'cannot perform operation: connection is closed')

    cdef _wake_answer_waiter(self):
        waiter = self.answer_waiter
        self.answer_waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    cdef _wake_copy_and_drain(self):
        if self.copy_ready is not None and not self.copy_ready.done():
            self.copy_ready.set_result(False)
        if self.drain_waiter is not None and not self.drain_waiter.done():
            self.drain_waiter.set_result(None)
        self.drain_waiter = None

    # --- state ---

    def is_closed(self):
        return self.state == STATE_CLOSED

    def input_waiting(self):
        """True if an idle connection's socket holds bytes not read yet (or its end).

        A pool asks before the first statement of a checkout: what a server
        sends an idle connection unasked is mostly its goodbye (a FATAL and
        the end of the stream), which the caller then lets the glue read.
        One non-blocking peek at the socket; False while operations are in
        flight (their replies are expected) or when there is no socket.
        """
        if self.state != STATE_IDLE or self.cur is not None or self.transport is None:
            return False
        if self.peeked_transport is not self.transport:
            # (Looked up once per transport: TLS may replace it.  A peek at
            # a descriptor closed and reused since can only say True, and
            # cost the caller a few turns of its loop.)
            sock = self.transport.get_extra_info('socket')
            self.peeked_fd = -1 if sock is None else sock.fileno()
            self.peeked_transport = self.transport
        return self.peeked_fd >= 0 and mpg_input_waiting(self.peeked_fd) != 0

    def is_in_transaction(self):
        return self.xact_status != 'I'

    def is_busy(self):
        """True while an operation is in flight, a cancel is pending or a caller holds the connection."""
        return (self.cur is not None or self.cancel_gate is not None or self.exclusive
                or self.resync_waiter is not None)

    def get_backend_pid(self):
        return self.backend_pid

    def get_server_parameters(self):
        return self.server_parameters

    def in_sync(self):
        """False while an abandoned operation drains after a CancelRequest (or a cancel() runs)."""
        return self.resync_waiter is None and self.cancel_gate is None

    # --- admission: who may send next ---
    #
    # Operations are sent in call order.  A caller may send at once when
    # nobody waits before it (queued, or woken and not yet sent), no cancel
    # is pending, nobody holds the line or the connection alone, and fewer
    # than max_pipeline operations are in flight (may_send()); otherwise
    # turn() queues it.  Woken callers resume in the order they were woken
    # (each awaits its Future directly), and each sends at once when it
    # resumes.
    #
    # A caller that must wait for an answer before it can send its own
    # statement (a prepare, a re-prepare, type introspection) holds the
    # line (hold_line()) from its first message to its last: nobody else is
    # admitted meanwhile, and a caller woken before the line was taken
    # waits again at the head of the queue (took_turn() is false).  The
    # holder's own sends, and the cleanup of an interrupted transaction
    # block, pass the line (`bypass`).
    #
    # An exclusive caller (COPY, executemany, reset, that cleanup) waits
    # until nothing is in flight and then holds the connection until
    # release_exclusive(); only operations sent as exclusive go out
    # meanwhile.

    cdef bint _admits(self, bint exclusive, bint bypass):
        if self.resync_waiter is not None or self.cancel_gate is not None:
            return False
        if self.line_held and not bypass:
            return False
        if self.exclusive or self.excl_op is not None:
            return False
        if exclusive:
            return self.depth == 0 and self.reserved == 0
        return self.depth + self.reserved < self.max_pipeline

    def has_spare_slot(self):
        """True if an admitted caller may send one extra operation ahead of its own."""
        return self.depth + self.reserved + 1 < self.max_pipeline

    def may_send(self):
        """True when a caller may send an operation now, without waiting for its turn."""
        return not self.n_turn_waiters and not self.reserved and self._admits(False, False)

    def may_send_in_line(self):
        """may_send() for the caller holding the line: it is ahead of every waiter."""
        return self._admits(False, True)

    def hold_line(self):
        """The admitted caller keeps its turn: nobody else is admitted until release_line()."""
        self.line_held = True

    def release_line(self):
        """The line holder sent its last message: the callers behind it may send."""
        if self.line_held:
            self.line_held = False
            if self.n_turn_waiters:
                self._wake_turns()

    def turn(self, bint exclusive=False, bint first=False, bint bypass=False):
        """Ask to send: None if the caller may send now, else a Future to await first.

        Once the Future completes, call took_turn(): if it is true the
        caller sends; if false, the line was taken by a caller ahead of it
        and it asks again with `first`.  A caller that gives up calls
        give_back_turn().  An exclusive caller that is admitted holds the
        connection alone until release_exclusive().  `first` puts the
        caller ahead of those already waiting; `bypass` lets it pass a held
        line (the line holder itself, the cleanup of an interrupted
        transaction block).
        """
        if self.state == STATE_CLOSED:
            raise self._closed_error()
        if ((first or (not self.n_turn_waiters and not self.reserved))
                and self._admits(exclusive, bypass)):
            if exclusive:
                self.exclusive = True
            return None
        fut = self.loop.create_future()
        if first and bypass:
            self.turn_waiters.appendleft([fut, exclusive, True, False])
        elif first:
            # Woken, then sent back by a held line: at the head, behind the
            # line holder and the cleanup (queued first) and behind those
            # sent back before it (woken before it: earlier in call order).
            self.turn_waiters.insert(self._head_count(), [fut, exclusive, False, True])
        else:
            self.turn_waiters.append([fut, exclusive, False, False])
        self.n_turn_waiters += 1
        return fut

    def took_turn(self, bint exclusive, bint bypass=False):
        """The caller woken by turn()'s Future is about to send; False: it must ask again.

        False when the line was taken, after this caller was woken, by a
        caller ahead of it (woken earlier, resumed first): its slot is given
        back and it asks again at the head of the queue.
        """
        if self.line_held and not bypass:
            if exclusive:
                self.exclusive = False
            elif self.reserved > 0:
                self.reserved -= 1
            # The holder may be queued behind this caller's slot.
            if self.n_turn_waiters:
                self._wake_turns()
            return False
        if not exclusive and self.reserved > 0:
            self.reserved -= 1
            # A caller that takes its turn and then sends nothing (it goes
            # on to hold() the connection, say) must not strand an
            # exclusive waiter that waited for the reserved slots to clear;
            # the waiters are looked at again once this caller has sent (it
            # sends before the loop runs anything else).
            if self.reserved == 0 and self.n_turn_waiters:
                self.loop.call_soon(self._wake_turns_soon)
        return True

    def give_back_turn(self, fut, bint exclusive):
        """The caller stopped waiting on turn()'s Future (timeout, cancel)."""
        if not fut.done():
            fut.cancel()
        elif fut.cancelled() or fut.exception() is not None:
            pass
        # Woken, but it will not send: let the next caller in.
        elif exclusive:
            self.exclusive = False
        elif self.reserved > 0:
            self.reserved -= 1
        # A waiter that gave up may have been the one the next was behind.
        if self.n_turn_waiters:
            self._wake_turns()

    def release_exclusive(self):
        """The exclusive caller is done with the connection."""
        if self.exclusive:
            self.exclusive = False
            self._wake_turns()

    def _wake_turns_soon(self):
        if self.n_turn_waiters:
            self._wake_turns()

    cdef Py_ssize_t _head_count(self):
        # How many waiters lead the queue as bypassing or sent-back callers.
        cdef Py_ssize_t n = 0
        for entry in self.turn_waiters:
            if not (entry[2] or entry[3]):
                break
            n += 1
        return n

    cdef object _pop_waiter(self):
        self.n_turn_waiters -= 1
        return self.turn_waiters.popleft()

    cdef _wake_turns(self):
        cdef bint excl, bypass
        while self.n_turn_waiters:
            fut, excl, bypass, _ = self.turn_waiters[0]
            if fut.done():
                self._pop_waiter()
                continue
            if self.state == STATE_CLOSED or not self._admits(excl, bypass):
                break
            self._pop_waiter()
            if excl:
                self.exclusive = True
            else:
                self.reserved += 1
            fut.set_result(None)

    def request_cancel(self):
        """Send a CancelRequest for the running operation (public Connection.cancel()).

        Returns a Future that completes when the server has handled the
        request, or None if there is nothing to cancel.  Until then no new
        operation is sent, so that a cancel that arrives after its target
        finished cannot hit a later one.
        """
        if self.state == STATE_CLOSED or self.cancel_request is None:
            return None
        if self.cancel_gate is not None:
            return self.cancel_gate
        if self.cur is None and self.resync_waiter is None:
            return None
        self._flush_out()      # what was written reaches the server first
        self.cancel_gate = self.loop.create_future()
        self.loop.create_task(self._public_cancel())
        self._interrupt_stream(2)
        return self.cancel_gate

    async def _public_cancel(self):
        try:
            await self.cancel_request()
        except Exception:
            pass
        finally:
            gate = self.cancel_gate
            self.cancel_gate = None
            if gate is not None and not gate.done():
                gate.set_result(None)
            self._wake_turns()

    async def cancel_all(self):
        """close(): end what this connection runs before it says goodbye.

        Callers still waiting for their turn never sent anything: they get
        the InterfaceError of a call made after close(), as in asyncpg.
        While a caller still awaits an operation in flight, the one at the
        head is cancelled (a CancelRequest hits only what the backend runs
        when it arrives), then the next, so each caller gets the server's
        QueryCanceledError, or its result if it finished first.  Operations
        whose callers gave up already are not waited for.
        """
        while self.n_turn_waiters:
            fut = self._pop_waiter()[0]
            if not fut.done():
                fut.set_exception(exceptions.InterfaceError(
                    'cannot perform operation: connection is closed'))
        while self.state != STATE_CLOSED and self._awaited_in_flight():
            head = self.cur
            gate = self.request_cancel()
            if gate is not None:
                await waits.wait_shielded(self.loop, gate, None)
            while self.cur is head and self.state != STATE_CLOSED:
                if self.answer_waiter is None:
                    self.answer_waiter = self.loop.create_future()
                await self.answer_waiter

    def _awaited_in_flight(self):
        cdef Operation op = self.cur
        while op is not None:
            if not op.abandoned and op.waiter is not None and not op.waiter.done():
                return True
            op = op.next
        return False

    def gate(self):
        """A Future to await before sending (a cancel pending), or None."""
        if self.resync_waiter is not None:
            return self.resync_waiter
        return self.cancel_gate

    # --- operations in flight ---

    cdef Operation _make_op(self, int kind, int recv_state, object timeout, bint exclusive,
                            object waiter=None):
        # Everything that can fail comes before any change of state: a bad
        # timeout must leave the connection as it was.  `waiter`: what the
        # caller waits on (None: a Future of the loop; the sync call path
        # passes a Waiter, waiter.pyx).
        cdef Operation op
        cdef double delay = 0
        if self.state == STATE_CLOSED:
            raise self._closed_error()
        if self.excl_op is not None or (exclusive and self.cur is not None) or (
                self.exclusive and not exclusive and not self.pipeline_on):
            # The Session admits callers so that this never happens; the
            # protocol refuses anything that would interleave with a COPY or
            # executemany stream all the same.
            raise exceptions.InterfaceError(
                'cannot perform operation: another operation is in progress; use a pool '
                '(mypgdriver.create_pool) to run operations concurrently on several '
                'connections, or await the one in progress first')
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(f'timeout must be a number of seconds or None, '
                                f'not {type(timeout).__name__}')
            delay = timeout
            if delay != delay:
                raise ValueError('timeout must be a number of seconds, not NaN')
            if delay <= 0:
                raise asyncio.TimeoutError(
                    f'{_op_name(kind, recv_state)} timed out before it was sent '
                    f'(timeout={deadlines.format_seconds(delay)} s)')
        op = self.spare_op
        if op is not None:
            self.spare_op = None
        else:
            op = Operation.__new__(Operation)
        op.kind = kind
        op.recv_state = <ProtocolState>recv_state
        op.exclusive = exclusive
        op.timed = timeout is not None
        op.delay = delay
        op.end_sent = False
        op.late_timeout = False
        op.waiter = self.loop.create_future() if waiter is None else waiter
        return op

    cdef object _start_op(self, Operation op):
        # Called once the operation's messages are written (or, for a stream,
        # about to be): from now on its replies are expected.
        self.op_seq += 1
        op.seq = self.op_seq
        if op.timed:
            # On the monotonic clock, read in C by stream_overdue() and
            # fill_rows() (uvloop's loop.time() is cached per iteration).
            op.deadline = mpg_monotonic() + op.delay
            op.timeout_handle = self.loop.call_later(op.delay, self._on_timeout, op)
        self._push_op(op)
        return op.waiter

    def _on_timeout(self, Operation op):
        op.timeout_handle = None
        if op.waiter.done():
            return
        if op.end_sent:
            self._time_out_committing(op)
            return
        error = asyncio.TimeoutError()
        op.waiter.set_exception(error)
        try:
            self._abandon_op(op)
        finally:
            # The message says whether a CancelRequest went out, which is
            # known only once the operation was abandoned; the caller sees
            # the error later (Future callbacks run from the loop).
            error.args = deadlines.timeout_error(
                _op_name(op.kind, op.recv_state), op.delay, _abandoned_outcome(self, op)).args
        if op.exclusive:
            self._interrupt_stream(1)

    cdef _time_out_committing(self, Operation op):
        # A stream (executemany, COPY FROM STDIN) whose end is sent: the
        # server commits it unless the CancelRequest arrives first.  Raising
        # TimeoutError now would say "nothing was written" of rows that may
        # be committed, and an application retrying on it would write them
        # twice.  So the cancel is sent and the operation keeps its caller:
        # the server's answer is the outcome (its result if it committed; a
        # TimeoutError if the cancel stopped it, see _on_result).  A server
        # that does not answer within LATE_ANSWER_GRACE gets the connection
        # closed, the outcome reported unknown.
        op.late_timeout = True
        self._maybe_cancel(op)
        op.timeout_handle = self.loop.call_later(LATE_ANSWER_GRACE, self._on_late_answer_missing,
                                                 op)

    def _on_late_answer_missing(self, Operation op):
        op.timeout_handle = None
        waiter = op.waiter
        if waiter is None or waiter.done():
            return
        waiter.set_exception(deadlines.timeout_error(
            _op_name(op.kind, op.recv_state), op.delay,
            'its end had been sent, and the server did not answer the cancel in '
            f'{LATE_ANSWER_GRACE:g} s: whether it was committed is unknown; the connection '
            'was closed'))
        self._fatal(exceptions.ConnectionDoesNotExistError(
            'the connection was closed: the server did not answer after a timeout'))

    def stream_overdue(self):
        """For a feeder reading the caller's data: True once it must stop feeding.

        The operation timed out (its deadline passed while the caller's
        source held the thread: the event loop could not run its timer,
        and the sync glue runs timers only while it waits), or cancel() /
        the timer already interrupted it.  A timeout is handled here as its
        timer would have handled it (the stream aborted, nothing
        committed).  The feeder then awaits once, where the interruption is
        delivered (CancelledError, which the Session turns into the
        caller's TimeoutError).  Cheap when there is no timeout.
        """
        cdef Operation op
        if self.stream_interrupt != 0:
            return True
        op = self.excl_op
        if op is None or op.timeout_handle is None or op.end_sent:
            return False
        if mpg_monotonic() < op.deadline:
            return False
        op.timeout_handle.cancel()
        self._on_timeout(op)
        return self.stream_interrupt != 0

    def fill_rows(self, list batch, iterator, Py_ssize_t n):
        """Append up to `n` items of `iterator` to `batch`; True if the stream must stop.

        For a feeder reading a synchronous source (a generator, an
        iterator): the deadline is checked after each item, in C (a clock
        read per row rather than a Python call), and the batch ends at the
        first item past it, with the timeout handled as stream_overdue()
        does.  An exception of the iterator propagates, the items read
        before it staying in `batch`.  Fewer than `n` items and False: the
        source is exhausted.
        """
        cdef Operation op = self.excl_op
        cdef bint timed = op is not None and op.timeout_handle is not None and not op.end_sent
        cdef double deadline = op.deadline if timed else 0
        cdef Py_ssize_t count = 0
        if self.stream_interrupt != 0:
            return True
        if n <= 0:
            return False
        for item in iterator:   # (compiled to the iterator's own tp_iternext calls)
            PyList_Append(batch, item)
            if timed and mpg_monotonic() >= deadline:
                return self.stream_overdue()
            count += 1
            if count == n:
                break
        return False

    cdef _interrupt_stream(self, int reason):
        # The caller is waiting on its own data source, not on us: interrupt
        # it (a loop callback runs only while that task is suspended at an
        # await, so the cancellation lands there).  Needed for cancel() too:
        # the server ignores a CancelRequest while it waits for COPY data or
        # the next pipelined message, so the abort has to come from our side.
        if self.stream_task is not None and self.stream_interrupt == 0:
            self.stream_interrupt = reason
            self.stream_task.cancel()

    def begin_stream(self):
        """The current task now feeds this operation from user data (COPY IN, executemany)."""
        self.stream_task = waits.caller_identity(self.loop)()
        self.stream_interrupt = 0

    def end_stream(self):
        """Stop feeding; why the feeding task was interrupted: 0 it was not, 1 timeout, 2 cancel()."""
        reason = self.stream_interrupt
        self.stream_task = None
        self.stream_interrupt = 0
        return reason

    # --- hooks from CoreProtocol ---

    cdef int _write(self, object data) except -1:
        # A message for an idle connection goes out at once (the latency of
        # a lone query).  Behind operations in flight the server is busy
        # anyway: messages written in the same turn of the event loop (the
        # tasks a batch of results woke) are joined and sent with one write
        # at the loop's next turn, so the server reads them together instead
        # of being woken once per query.  COPY data and big batches are not
        # held beyond OUT_PENDING_LIMIT bytes.
        if self.transport is None:
            raise exceptions.ConnectionDoesNotExistError('connection is not open')
        if self.pipeline_on:
            # Behind the pipeline's statements, in order (see _flush_out).
            self.pipe_buf.write_bytes(data)
            if self.pipe_buf.length >= OUT_PENDING_LIMIT:
                self._flush_out()
            return 0
        if self.out_pending is None:
            if self.cur is None:
                self.transport.write(data)
                return 0
            self.out_pending = [data]
            self.out_pending_size = len(data)
            if not self.flush_scheduled:
                # Scheduled first, flagged after: an exception out of
                # call_soon (KeyboardInterrupt in a loop written in Python)
                # must not leave the flag set with no flush coming.
                self.loop.call_soon(self._flush_scheduled)
                self.flush_scheduled = True
        else:
            self.out_pending.append(data)
            self.out_pending_size += len(data)
        if self.out_pending_size >= OUT_PENDING_LIMIT:
            self._flush_out()
        return 0

    cdef int _flush_out(self) except -1:
        # Everything held back goes to the transport, in order: what was
        # held before a pipeline started, then the pipeline's messages.
        pending = self.out_pending
        if pending is not None:
            self.out_pending = None
            self.out_pending_size = 0
            if self.transport is not None and self.state != STATE_CLOSED:
                if len(pending) == 1:
                    self.transport.write(pending[0])
                else:
                    self.transport.write(b''.join(pending))
        if self.pipe_buf.length:
            self._pipe_send()
        return 0

    cdef int _pipe_send(self) except -1:
        cdef WriteBuffer buf = self.pipe_buf
        if self.transport is None or self.state == STATE_CLOSED:
            buf.reset()
            return 0
        data = buf.to_bytes()
        buf.reset()
        self.pipe_flushed_seq = self.op_seq
        self.pipe_sends += 1
        self.transport.write(data)
        return 0

    def _flush_scheduled(self):
        self.flush_scheduled = False
        try:
            self._flush_out()
        except Exception as e:
            self._fatal(e)

    cdef int _on_result(self) except -1:
        # ReadyForQuery: the head operation is answered.
        cdef Operation op = self.cur
        if op is None:
            return 0    # nothing was asked (a stray ReadyForQuery): nothing to answer
        if op.timeout_handle is not None:
            op.timeout_handle.cancel()
            op.timeout_handle = None
        if self.copy_ready is not None:
            if not self.copy_ready.done():
                self.copy_ready.set_result(False)
            self.copy_ready = None
        self.finished_seq = op.seq
        self.finished_error = self.result_error
        self.finished_status = self.result_status
        waiter = op.waiter
        op.waiter = None
        if op.abandoned or waiter.done():
            pass    # the caller gave up on it: its result is dropped
        elif self.result_error is not None:
            if op.late_timeout and isinstance(self.result_error,
                                              exceptions.QueryCanceledError):
                # Our cancel stopped it before the commit (_time_out_committing).
                error = deadlines.timeout_error(
                    _op_name(op.kind, op.recv_state), op.delay,
                    'the statement was cancelled on the server, and nothing was written')
                error.__cause__ = self.result_error
                waiter.set_exception(error)
            else:
                waiter.set_exception(self.result_error)
        elif op.kind == OP_BIND_EXECUTE:
            if op.status_sink is not None:
                op.status_sink.status = self.result_status
            if op.want == C_WANT_ROWS:
                waiter.set_result(self._take_rows())
            elif op.want == C_WANT_RESULT:
                waiter.set_result((self._take_rows(), self.result_status, op.statement))
            else:
                waiter.set_result(self.result_status)
        elif op.kind == OP_PORTAL:
            # A cursor step's result: the rows, and whether the portal has
            # more (PortalSuspended).
            waiter.set_result((self._take_rows(), self.portal_suspended))
        elif op.kind == OP_PREPARE:
            waiter.set_result(op.statement)
        elif op.kind == OP_EXECUTE_MANY:
            if op.row_ends is not None:
                waiter.set_result(_group_rows(self._take_rows(), op.row_ends))
            else:
                waiter.set_result(self._take_rows() if op.collecting_rows else None)
        elif op.kind == OP_SIMPLE_QUERY or op.kind == OP_COPY:
            waiter.set_result(self.result_status)
        else:
            waiter.set_result(None)
        self.result_error = None
        self._advance()
        if self.answer_waiter is not None:
            self._wake_answer_waiter()
        if op is self.cancel_target:
            self.cancel_target = None
            self._finish_resync()
        if self.cur is not None and self.cur.abandoned:
            self._maybe_cancel(self.cur)
        if self.n_turn_waiters:
            self._wake_turns()
        if Py_REFCNT(op) == 1:
            # Nothing but this function refers to it any more (no caller's
            # abandon, timer or cancel can reach it): the next _make_op
            # reuses it instead of allocating.
            self._recycle_op(op)
        return 0

    cdef _recycle_op(self, Operation op):
        op.statement = None
        op.record_class = None
        op.row_maker = None
        op.collecting_rows = False
        op.row_ends = None
        op.want = C_WANT_ROWS
        op.status_sink = None
        op.query_text = None
        op.copy_out_sink = None
        op.abandoned = False
        op.carries_parse = False
        op.pipelined = False
        op.seq = 0
        self.spare_op = op

    # --- pipeline mode (mypgdriver/core/pipeline.py) ---
    #
    # A pipelined statement is one operation with no Sync of its own: it is
    # answered at its CommandComplete (or EmptyQueryResponse, PortalSuspended,
    # ErrorResponse); a sync point is an operation of its own answered at
    # ReadyForQuery.  After a server error the server skips every message
    # up to the next Sync: the statements queued behind the failed one
    # before the next sync point are failed at once with PipelineAborted.

    cdef int _on_pipelined_end(self, bint server_error) except -1:
        cdef Operation op
        error = self.result_error
        if error is not None:
            self.pipe_failures += 1
        self._on_result()
        if not server_error:
            return 0
        op = self.cur
        while op is not None and op.pipelined:
            _fail_skipped(self, op, error)
            op = op.next
        if op is None and self.pipeline_on:
            # No Sync written after it yet: whatever is sent before the next
            # one would be skipped too.
            self.pipeline_failed = True
        return 0

    cdef int _on_pipeline_skipped(self) except -1:
        cdef Operation op = self.cur
        waiter = op.waiter
        op.waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(pipeline_aborted_error())
            self.pipe_failures += 1
        return self._advance()

    def pipeline_begin(self):
        """Enter pipeline mode; the caller holds the connection alone (Admission.hold())."""
        if self.state == STATE_CLOSED:
            raise self._closed_error()
        if not self.exclusive or self.cur is not None:
            raise exceptions.InternalClientError('pipeline_begin() without the connection held')
        self.pipeline_on = True
        self.pipeline_failed = False
        self.pipe_unsynced = 0
        self.pipe_need_flush = False

    def pipeline_end(self):
        """Leave pipeline mode and end the connection's hold (Admission.release()).

        A segment still open gets its sync point first, aborted (a failing
        Execute, then Sync): a pipeline never leaves statements without
        the Sync that ends them.  One compiled step, so that Ctrl-C cannot
        land between leaving pipeline mode and giving the connection back.
        """
        try:
            if self.pipe_unsynced and self.state != STATE_CLOSED:
                self._push_sync(True).add_done_callback(_retrieve_outcome)
            self._flush_out()
        finally:
            self.pipeline_on = False
            self.pipeline_failed = False
            self.pipe_unsynced = 0
            self.pipe_buf.reset()
            self.release_exclusive()

    def pipeline_bind_execute(self, StatementState st, args, int32_t limit, int want,
                              record_class):
        """Write Bind/Execute of `st` (Parse first if needed) with no Sync; the statement's Future.

        Its result is what bind_execute()'s is for `want`.  Nothing goes out
        until pipeline_flush() or a sync point (or OUT_PENDING_LIMIT bytes).
        """
        cdef int kind = ROW_RECORD
        cdef object maker = None
        if record_class is not Record and record_class is not None:
            kind = row_kind_of(st, record_class)
            if kind == ROW_MAKER:
                maker = make_row_maker(st, record_class)
        cdef Operation op = self._make_op(OP_BIND_EXECUTE, STATE_BIND_EXECUTE, None, False)
        op.want = want
        op.statement = st
        op.collecting_rows = True
        set_row_shape(op, record_class, kind, maker)
        op.pipelined = True
        op.carries_parse = st.parse_pending
        self._write_pipelined(self.pipe_buf, st, args, limit)
        self.pipe_unsynced += 1
        self.pipe_need_flush = True
        fut = self._start_op(op)
        if self.pipe_buf.length >= OUT_PENDING_LIMIT:
            self._flush_out()
        return fut

    def pipeline_prepare(self, StatementState st):
        """Write Parse/Describe of `st` (created under its own name) with no Sync; its Future.

        The Future gives `st`, described, once the answer to the Describe
        arrived (the caller flushes, with a Flush request, and waits).
        """
        cdef WriteBuffer buf = self.pipe_buf
        cdef Operation op = self._make_op(OP_PREPARE, STATE_PREPARE, None, False)
        op.statement = st
        op.pipelined = True
        buf.start_message(b'P')
        buf.write_cstr(st.name)
        buf.write_cstr(st.query)
        buf.write_int16(0)
        buf.end_message()
        buf.start_message(b'D')
        buf.write_byte(b'S')
        buf.write_cstr(st.name)
        buf.end_message()
        self.pipe_unsynced += 1
        self.pipe_need_flush = True
        return self._start_op(op)

    def pipeline_sync(self, bint abort=False):
        """Write a sync point (Sync; with `abort`, a failing Execute first) and send; its Future.

        The Future completes at the sync point's ReadyForQuery (with the
        error of the implicit commit, if that failed).  `abort` makes the
        server fail the segment if it gets that far, so nothing of it is
        committed (an explicit COMMIT inside it that already ran excepted).
        """
        return self._push_sync(abort)

    cdef object _push_sync(self, bint abort):
        cdef WriteBuffer buf = self.pipe_buf
        cdef Operation op = self._make_op(OP_PIPELINE_SYNC, STATE_BIND_EXECUTE, None, False)
        if abort:
            buf.start_message(b'E')
            buf.write_cstr(ABORT_PORTAL)
            buf.write_int32(0)
            buf.end_message()
        buf.start_message(b'S')
        buf.end_message()
        self.pipe_unsynced = 0
        self.pipe_need_flush = False
        self.pipeline_failed = False
        fut = self._start_op(op)
        self._flush_out()
        return fut

    def pipeline_flush(self, bint request=True):
        """Send what the pipeline wrote; with `request`, ask the server for its answers so far (Flush).

        Without a Flush (or a Sync) the server keeps its answers in its
        output buffer until the buffer fills.
        """
        cdef WriteBuffer buf = self.pipe_buf
        if request and self.pipe_need_flush:
            buf.start_message(b'H')
            buf.end_message()
            self.pipe_need_flush = False
        self._flush_out()

    def pipeline_last_sync(self):
        """The Future of the last sync point in flight, or None (nothing in flight ends with one)."""
        cdef Operation tail = self.tail
        if tail is None or tail.kind != OP_PIPELINE_SYNC:
            return None
        return tail.waiter

    def pipeline_abort(self):
        """Abort the pipeline's open segment and cancel what runs; the Future of its last sync point.

        The segment not synced yet gets a failing Execute and a Sync
        (nothing of it is committed); a statement the server is running
        gets a CancelRequest, sent only when it can hit nothing but a
        statement of the pipeline (until the CancelRequest was handled and
        the sync point answered, gate() holds every new send back).  None:
        nothing is in flight.
        """
        cdef Operation head, tail
        if self.state == STATE_CLOSED:
            return None
        if self.pipe_unsynced:
            self._push_sync(True).add_done_callback(_retrieve_outcome)
        head = self.cur
        tail = self.tail
        if tail is None:
            return None
        self._flush_out()
        if (head.pipelined and self.resync_waiter is None and self.cancel_gate is None
                and self.cancel_request is not None and self.backend_pid):
            self.resync_waiter = self.loop.create_future()
            self.cancel_target = tail
            self.cancel_done = False
            self.loop.create_task(self._cancel_and_wait())
        return tail.waiter

    cdef int _on_copy_in_ready(self) except -1:
        if self.copy_ready is not None and not self.copy_ready.done():
            self.copy_ready.set_result(True)
        return 0

    cdef int _on_notice(self, object message) except -1:
        if self.on_notice is not None:
            self.on_notice(message)
        return 0

    cdef int _on_notification(self, int32_t pid, str channel, str payload) except -1:
        if self.on_notification is not None:
            self.on_notification(pid, channel, payload)
        return 0

    cdef int _on_statements_dropped(self) except -1:
        if self.on_statements_dropped is not None:
            self.on_statements_dropped()
        return 0

    cdef int _on_goodbye(self, object error) except -1:
        # The server's FATAL to an idle connection (pg_terminate_backend(),
        # a shutdown, idle_session_timeout): the connection is over now,
        # not when the end of the stream is read after it.  So a pool's
        # check before the first call of a checkout sees it closed, and no
        # statement is sent to a backend that is going away.
        lost = exceptions.ConnectionDoesNotExistError(
            f'the server closed the connection: {error.message}')
        lost.__cause__ = error
        lost.__suppress_context__ = True
        raise lost

    cdef int _on_statement_unusable(self, StatementState st, object error) except -1:
        if self.on_statement_unusable is not None:
            self.on_statement_unusable(st, error)
        return 0

    cdef int _on_parameter_status(self, str name, str value) except -1:
        # Every text value is encoded and decoded as UTF-8.  A session that
        # switches client_encoding (SET, set_config(), a function) would
        # make the server convert text to and from another encoding behind
        # our back, corrupting it silently; refuse instead: the operation
        # fails and the connection is closed (see docs/guide/types.rst).
        if name == 'client_encoding' and not _is_utf8(value):
            raise exceptions.UnsupportedClientFeatureError(
                f'client_encoding was changed to {value!r}: mypgdriver exchanges text '
                f'in UTF8 only, so the connection was closed to keep text from being '
                f'corrupted; remove the SET client_encoding (the server converts '
                f'between UTF8 and the database encoding itself)')
        return 0

    cdef int _fatal(self, object exc) except -1:
        """Something we cannot recover from: fail every operation, drop the connection."""
        if self.lost_exc is None:
            self.lost_exc = exc
        self.state = STATE_CLOSED
        self._fail_all(exc)
        if self.transport is not None:
            self.transport.abort()
        return 0

    # --- cancellation ---

    def abandon(self, fut):
        """The caller stopped waiting for the operation whose Future is `fut`.

        Its remaining replies are drained and dropped.  A CancelRequest is
        sent only when it can hit nothing but this operation (see
        _maybe_cancel); otherwise it runs to completion.
        """
        cdef Operation op = self.cur
        while op is not None:
            if op.waiter is fut:
                self._abandon_op(op)
                return
            op = op.next

    cdef _abandon_op(self, Operation op):
        if op.abandoned or self.state == STATE_CLOSED:
            return
        op.abandoned = True
        if op.kind == OP_STARTUP:
            # Half-authenticated connections cannot be reused.
            self._fatal(exceptions.ConnectionDoesNotExistError(
                'connection attempt was cancelled'))
            return
        if op is self.cur:
            self.discard_rows = True
            if self.state == STATE_COPY_IN:
                # The server waits for copy data that will never come: end it.
                self._write_copy_message(b'f', 'COPY cancelled by the client')
            elif self.state == STATE_BIND_EXECUTE_MANY and op.kind == OP_EXECUTE_MANY \
                    and not self.sync_sent:
                self._finish_many(True)
                self.sync_sent = True
        self._maybe_cancel(op)

    cdef _maybe_cancel(self, Operation op):
        # A CancelRequest interrupts whatever the backend runs when it
        # arrives, so it is sent only when that can be nothing but `op`: op
        # is the head (everything before it is answered), nothing was sent
        # after it, and nobody may send until the cancel was handled and op
        # answered (resync_waiter holds every new operation back).  Otherwise
        # op runs to completion and its result is dropped; if it later
        # becomes the last one in flight, the cancel is sent then.
        if not self._only_running(op):
            return
        if self.resync_waiter is not None or self.cancel_gate is not None:
            return
        if self.cancel_request is None or not self.backend_pid:
            return
        # op's own messages go out before the CancelRequest can arrive.
        self._flush_out()
        self.resync_waiter = self.loop.create_future()
        self.cancel_target = op
        self.cancel_done = False
        self.loop.create_task(self._cancel_and_wait())

    cdef bint _only_running(self, Operation op):
        # True when a CancelRequest can hit nothing but `op`: it is the head
        # (everything before it is answered), nothing was sent or held after
        # it, and no caller may send (reserved slots, another exclusive holder).
        if op is not self.cur or op.next is not None or self.reserved != 0:
            return False
        return not self.exclusive or self.excl_op is op

    async def _cancel_and_wait(self):
        target = self.cancel_target
        delay = CANCEL_REPEAT_FIRST
        while True:
            try:
                await self.cancel_request()
            except Exception:
                pass    # best effort: draining to ReadyForQuery keeps us in sync regardless
            finally:
                self.cancel_done = True
                self._finish_resync()
            # The server ignores a CancelRequest that reaches the backend
            # while it is still reading the statement (the timeout fired
            # just after the statement was sent, on a busy machine): the
            # statement then runs to its end, maybe for minutes, and every
            # later call waits behind it.  Until the target is answered
            # nothing else is sent on this connection, so a repeated
            # request can only hit the target (or nothing): repeat it, less
            # and less often, while the target runs, and only while nothing
            # else was sent after it.
            if self.cancel_target is not target or self.state == STATE_CLOSED:
                return
            await waits.sleep(self.loop, delay)
            if (self.cancel_target is not target or self.state == STATE_CLOSED
                    or not self._only_running(target) or self.out_pending is not None):
                return
            delay = min(delay * 2, CANCEL_REPEAT_MAX)
            self.cancel_done = False

    cdef _finish_resync(self):
        # In sync only when the cancelled operation is answered *and* the
        # cancel request was handled: a late cancel could otherwise hit the
        # next query.
        if self.resync_waiter is None:
            return
        if self.cancel_target is not None or not self.cancel_done:
            return
        fut = self.resync_waiter
        self.resync_waiter = None
        if not fut.done():
            fut.set_result(None)
        self._wake_turns()

    # --- operations (each returns a Future) ---

    def start_startup(self):
        cdef Operation op = self._make_op(OP_STARTUP, STATE_STARTUP, None, True)
        self._write(self._build_startup_message())
        return self._start_op(op)

    def prepare(self, StatementState st, timeout=None):
        cdef Operation op = self._make_op(OP_PREPARE, STATE_PREPARE, timeout, False)
        op.statement = st
        self._send_prepare(st)
        return self._start_op(op)

    def bind_execute(self, StatementState st, args, int32_t limit=0, timeout=None,
                     int want=C_WANT_ROWS, record_class=None, bint check_turn=False,
                     StatusSink sink=None):
        """Bind `args`, execute, and give the rows, the status tag, or both (`want`).

        With `check_turn`, returns None instead (sending nothing) when the
        caller may not send now (may_send() is false), or when a statement
        of the statement cache (no `sink`) is stamped with another
        schema_epoch: the hot path's checks without a separate call.  A
        `sink` (a PreparedStatement's) also receives the status tag when the
        operation succeeds.
        """
        return self.send_bind_execute(st, args, limit, timeout, want, record_class, check_turn,
                                      sink, None)

    cdef object send_bind_execute(self, StatementState st, args, int32_t limit, timeout,
                                  int want, record_class, bint check_turn, StatusSink sink,
                                  object waiter):
        # bind_execute(), with the `waiter` the caller waits on (None: a Future).
        if check_turn and (self.n_turn_waiters or self.reserved
                           or not self._admits(False, False)
                           or (sink is None and st.schema_epoch != self.schema_epoch)):
            return None
        # Record rows (the default) cost two identity checks here; any other
        # choice is checked, and a factory called, before anything is sent.
        cdef int kind = ROW_RECORD
        cdef object maker = None
        if record_class is not Record and record_class is not None:
            kind = row_kind_of(st, record_class)
            if kind == ROW_MAKER:
                maker = make_row_maker(st, record_class)
        cdef Operation op = self._make_op(OP_BIND_EXECUTE, STATE_BIND_EXECUTE, timeout, False,
                                          waiter)
        op.want = want
        op.status_sink = sink
        op.statement = st
        op.collecting_rows = True
        # set_row_shape(), inline: this is the hot path (a recycled or new
        # op's row_maker is None already).
        op.row_kind = kind
        if kind == ROW_RECORD:
            op.record_class = record_class if record_class is not None else Record
        else:
            op.record_class = Record
            op.row_maker = maker
        op.carries_parse = st.parse_pending
        # Encoding may raise DataError: that happens before anything is
        # written, and nothing was queued.
        self._send_bind_execute(st, args, '', limit)
        return self._start_op(op)

    def bind_execute_portal(self, StatementState st, args, str portal, int32_t limit,
                            timeout=None, record_class=None):
        """Bind `args` to a named portal and fetch its first `limit` rows: (rows, more_remain)."""
        cdef int kind = ROW_RECORD
        cdef object maker = None
        if record_class is not Record and record_class is not None:
            kind = row_kind_of(st, record_class)
            if kind == ROW_MAKER:
                maker = make_row_maker(st, record_class)
        cdef Operation op = self._make_op(OP_PORTAL, STATE_BIND_EXECUTE, timeout, False)
        op.statement = st
        op.collecting_rows = True
        set_row_shape(op, record_class, kind, maker)
        op.carries_parse = st.parse_pending
        self._send_bind_execute(st, args, portal, limit)
        return self._start_op(op)

    def execute_portal(self, StatementState st, str portal, int32_t limit, timeout=None,
                       record_class=None):
        """Fetch up to `limit` more rows (0 = all) of an open portal: (rows, more_remain)."""
        cdef int kind = ROW_RECORD
        cdef object maker = None
        if record_class is not Record and record_class is not None:
            kind = row_kind_of(st, record_class)
            if kind == ROW_MAKER:
                maker = make_row_maker(st, record_class)
        cdef Operation op = self._make_op(OP_PORTAL, STATE_BIND_EXECUTE, timeout, False)
        op.statement = st
        op.collecting_rows = True
        set_row_shape(op, record_class, kind, maker)
        self._send_execute_portal(st, portal, limit)
        return self._start_op(op)

    def bind_portal(self, StatementState st, args, str portal, timeout=None):
        """Bind `args` to a named portal without fetching (rows come with execute_portal)."""
        cdef Operation op = self._make_op(OP_CLOSE_STATEMENTS, STATE_BIND_EXECUTE, timeout,
                                          False)
        op.statement = st
        op.carries_parse = st.parse_pending
        self._send_bind_portal(st, args, portal)
        return self._start_op(op)

    def last_sent_failed_with(self, error):
        """True if the last operation sent was answered, with `error`: nothing went out after it."""
        return (self.finished_seq == self.op_seq and self.finished_seq != 0
                and self.finished_error is error)

    def outcome(self, long seq):
        """(status tag, error) of operation number `seq` if it is the last one answered, else None."""
        if seq != self.finished_seq or seq == 0:
            return None
        return (self.finished_status, self.finished_error)

    def close_portals(self, list names, timeout=None):
        cdef Operation op = self._make_op(OP_CLOSE_STATEMENTS, STATE_CLOSE_STATEMENTS, timeout,
                                          False)
        self._send_close(b'P', names)
        return self._start_op(op)

    def close_statements(self, list names, timeout=None):
        cdef Operation op = self._make_op(OP_CLOSE_STATEMENTS, STATE_CLOSE_STATEMENTS, timeout,
                                          False)
        self._send_close(b'S', names)
        return self._start_op(op)

    # executemany: start, write batches, finish; the Future completes at
    # ReadyForQuery.  It is a stream: exclusive.

    def executemany_start(self, StatementState st, timeout=None, int return_rows=0,
                          record_class=None):
        """Start a pipeline; its Future gives None, or the rows with `return_rows`.

        `return_rows`: 0 (False) none, 1 (True) all rows in one list
        (fetchmany), ROWS_PER_STATEMENT one ``(rows, status tag)`` pair per
        statement run (the DB-API's executemany(returning=True)).
        """
        cdef int kind = ROW_RECORD
        cdef object maker = None
        if record_class is not Record and record_class is not None:
            kind = row_kind_of(st, record_class)
            if kind == ROW_MAKER and return_rows:
                maker = make_row_maker(st, record_class)
        cdef Operation op = self._make_op(OP_EXECUTE_MANY, STATE_BIND_EXECUTE_MANY, timeout,
                                          True)
        op.statement = st
        op.collecting_rows = return_rows != 0
        op.row_ends = [] if return_rows == ROWS_PER_STATEMENT else None
        set_row_shape(op, record_class, kind, maker)
        op.carries_parse = st.parse_pending
        self.sync_sent = False
        self._start_many(st)
        return self._start_op(op)

    def executemany_write(self, StatementState st, rows, Py_ssize_t base_index,
                          str savepoint=None):
        """Encode and send a batch of rows; DataError names the bad row's index.

        With `savepoint`, the first batch written opens that savepoint, and
        executemany_finish() releases it (see coreproto's _write_many).
        """
        if self.state != STATE_BIND_EXECUTE_MANY or self.sync_sent:
            return
        self._write_many(st, rows, base_index, savepoint)

    def executemany_failed(self):
        """True once the server reported an error: sending more rows is pointless."""
        return self.result_error is not None or self.state == STATE_CLOSED

    def executemany_savepoint(self):
        """The savepoint the current (or last) executemany opened, or None."""
        return self.many_savepoint

    def executemany_finish(self, bint abort=False):
        """Send Sync (after a failing message when `abort`: nothing is committed).

        If no row was sent yet and we abort, nothing reaches the server and
        the operation ends at once.
        """
        cdef Operation op
        if self.state != STATE_BIND_EXECUTE_MANY or self.sync_sent:
            return
        if abort and not self.many_sent_any:
            op = self.cur
            if op.timeout_handle is not None:
                op.timeout_handle.cancel()
                op.timeout_handle = None
            waiter = op.waiter
            self._advance()
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            if self.n_turn_waiters:
                self._wake_turns()
            return
        # Marked sent only once written: if the write fails, the caller's
        # abort path must still be able to send the Sync (else the server
        # waits for it for ever).
        self._finish_many(abort)
        self.sync_sent = True
        if not abort and self.cur is not None:
            self.cur.end_sent = True

    # COPY: exclusive.

    def copy_out(self, str query, sink, timeout=None):
        """Run COPY ... TO STDOUT; each data chunk goes to `sink(bytes)`."""
        cdef Operation op = self._make_op(OP_COPY, STATE_SIMPLE_QUERY, timeout, True)
        op.copy_out_sink = sink
        op.query_text = query
        self._send_copy_query(query, False)
        return self._start_op(op)

    def copy_in(self, str query, timeout=None):
        """Run COPY ... FROM STDIN.

        Returns the operation's Future (completes at ReadyForQuery with the
        status tag); `copy_ready` completes with True once the server accepts
        data (copy_in_data), or False if the command failed before that.
        """
        cdef Operation op = self._make_op(OP_COPY, STATE_COPY_IN_WAIT, timeout, True)
        op.query_text = query
        self._send_copy_query(query, True)
        self.copy_ready = self.loop.create_future()
        return self._start_op(op)

    def copy_in_data(self, data):
        if self.state == STATE_COPY_IN:
            self._write_copy_message(b'd', data)

    def copy_in_records(self, StatementState st, records, bint first, bint last,
                        Py_ssize_t base_index=0):
        """Encode records in binary COPY format with `st`'s column codecs and send them.

        `base_index` is the index of the first record in the whole input, so
        that a DataError names the right one.
        """
        if self.state != STATE_COPY_IN:
            return
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        buf.start_message(b'd')
        st.encode_copy_records(buf, records, first, last, base_index)
        buf.end_message()
        self._write(buf.to_bytes())

    def copy_in_done(self):
        if self.state == STATE_COPY_IN:
            self._write_copy_message(b'c', None)
            self.state = STATE_SIMPLE_QUERY
            if self.cur is not None:
                self.cur.end_sent = True

    def copy_in_fail(self, str message):
        if self.state == STATE_COPY_IN:
            self._write_copy_message(b'f', message)
            self.state = STATE_SIMPLE_QUERY

    def is_copy_in_active(self):
        return self.state == STATE_COPY_IN

    def simple_query(self, str query, timeout=None, bint exclusive=False):
        """Run `query` with the simple query protocol; the last command tag."""
        cdef Operation op = self._make_op(OP_SIMPLE_QUERY, STATE_SIMPLE_QUERY, timeout,
                                          exclusive)
        op.query_text = query
        self._send_simple_query(query)
        return self._start_op(op)

    def terminate(self):
        """Send Terminate (if possible) and close the transport."""
        if self.transport is None:
            self.state = STATE_CLOSED
            return
        if self.state != STATE_CLOSED:
            self.closed_by_client = True
            try:
                self._send_terminate()
                self._flush_out()
            except Exception:
                pass
        self.state = STATE_CLOSED
        self.transport.close()

    def abort(self):
        self.state = STATE_CLOSED
        if self.transport is not None:
            self.transport.abort()


#: The portal a pipeline's abort executes so that the server fails the
#: segment (it does not exist); the same name as executemany's abort.
ABORT_PORTAL = '__mypgdriver_abort_pipeline__'


def pipeline_aborted_error():
    """The PipelineAborted of a statement the server skipped after an earlier error."""
    return exceptions.PipelineAborted(
        'the statement was not run: an earlier statement of the pipeline failed, and the '
        'server skipped the rest of the pipeline up to its next sync point')


cdef _fail_skipped(BaseProtocol proto, Operation op, object error):
    # `op` comes after a failed statement before the next sync point: the
    # server will skip it.  Its caller learns that now; the operation stays
    # queued until the sync point's ReadyForQuery.
    waiter = op.waiter
    if waiter is not None and not waiter.done():
        waiter.set_exception(pipeline_aborted_error())
        proto.pipe_failures += 1
    if op.carries_parse and op.statement is not None:
        # The Parse in front of its Bind (parse_pending) is skipped too: the
        # statement was never created.
        proto._on_statement_unusable(op.statement, pipeline_aborted_error())


def _retrieve_outcome(fut):
    if not fut.cancelled():
        fut.exception()


cdef list _group_rows(list rows, list row_ends):
    # executemany's rows cut at each statement's CommandComplete; the
    # SAVEPOINT and RELEASE around a pipeline inside a block are not ours.
    cdef list groups = []
    cdef Py_ssize_t start = 0, end
    for end, tag in row_ends:
        if tag == 'SAVEPOINT' or tag == 'RELEASE':
            continue
        groups.append((rows[start:end], tag))
        start = end
    return groups


cdef str _abandoned_outcome(BaseProtocol proto, Operation op):
    """What became of an operation abandoned on timeout (see _maybe_cancel), for its message."""
    if proto.state == STATE_CLOSED:
        return 'the connection was closed'
    if proto.cancel_target is op:
        return 'the statement was cancelled on the server'
    if op.exclusive:
        return 'the operation was aborted on the server'
    return ('the statement was left to finish on the server behind the calls pipelined '
            'with it, and its result is discarded')


cdef bint _is_utf8(str name):
    # The server reports its canonical name ('UTF8'); aliases for safety.
    return name.replace('-', '').replace('_', '').upper() in ('UTF8', 'UNICODE')


cdef inline void set_row_shape(Operation op, object rows_as, int kind, object maker):
    # What the decode loop makes of the operation's rows (see row_kind_of).
    op.row_kind = kind
    op.row_maker = maker
    if kind == ROW_RECORD and rows_as is not None:
        op.record_class = <type>rows_as
    else:
        op.record_class = Record


cdef int row_kind_of(StatementState st, object rows_as) except -1:
    """How the rows of `st` are made for `rows_as`: a Record subclass or a row factory.

    `rows_as` is what the Session passes down: the record_class or the
    row_factory of the call (or of the connection), as rows.choose_rows()
    made it.  tuple_row, dict_row and scalar_row are recognised by identity
    and built by the decode loop itself; any other factory comes wrapped in
    a rows.FactoryCall and gets ROW_MAKER (see make_row_maker).
    """
    if rows_as is dict_row:
        return ROW_DICT
    if rows_as is tuple_row:
        return ROW_TUPLE
    if rows_as is scalar_row:
        if st.has_rows and not st.column_oids:
            raise scalar_row_without_columns()
        return ROW_SCALAR
    if type(rows_as) is FactoryCall:
        return ROW_MAKER
    # Anything else is a record_class: a subclass of Record, or an error.
    check_record_class(rows_as)
    return ROW_RECORD


cdef object make_row_maker(StatementState st, object call):
    """Call a row factory with the description of `st`'s result: its row maker.

    Once per result, before the operation is sent, so an error in the
    factory leaves nothing to clean up.  A statement without a result
    (no RowDescription, e.g. ``DO``) has no rows to make: None.
    """
    if not st.has_rows:
        return None
    description = st.result_description
    if description is None:
        description = ResultDescription.from_statement(
            st.column_names, st.column_oids, st.column_sizes, st.column_typmods)
        st.result_description = description
    factory = (<object>call).factory
    maker = factory(description)
    if not callable(maker):
        raise TypeError(
            f'the row factory {factory!r} returned {type(maker).__name__!r}, not a '
            f'callable making a row from a sequence of values')
    return maker


def check_record_class(record_class):
    """Raise InterfaceError unless `record_class` can be used for result rows."""
    if not (isinstance(record_class, type) and issubclass(record_class, Record)):
        raise exceptions.InterfaceError(
            f'record_class is expected to be a subclass of mypgdriver.Record, '
            f'got {record_class!r}')
    if record_class is not Record and (
            record_class.__new__ is not Record.__new__ or record_class.__init__ is not Record.__init__):
        # Rows are built without calling the class (that would cost a Python
        # call per row), so custom constructors would silently not run.
        raise exceptions.InterfaceError(
            f'record_class must not redefine __new__ or __init__ ({record_class.__name__} does)')


class Protocol(BaseProtocol, asyncio.Protocol):
    # A plain Protocol (data_received), not BufferedProtocol: see
    # BaseProtocol.data_received for the measurement.
    """The asyncio protocol of one PostgreSQL connection."""

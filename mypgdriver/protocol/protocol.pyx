# cython: language_level=3
"""asyncio glue: the transport, futures, timeouts and cancellation.

Every operation returns a Future that the Connection awaits.  An operation
that its caller abandons (task cancelled, timeout) is not forgotten: the
protocol asks the server to cancel it, keeps reading until ReadyForQuery
and only then lets the next operation start, so a connection is always
either in sync or closed.
"""

import asyncio
import socket

from cpython.bytes cimport PyBytes_GET_SIZE
from libc.stdint cimport int32_t
from mypgdriver.protocol.coreproto cimport (
    CoreProtocol, STATE_NEW, STATE_STARTUP, STATE_IDLE, STATE_CLOSED, STATE_COPY_IN,
    STATE_COPY_IN_WAIT, STATE_BIND_EXECUTE_MANY, STATE_SIMPLE_QUERY)
from mypgdriver.protocol.statement cimport StatementState
from mypgdriver.protocol.buffer cimport ReadBuffer, WriteBuffer

from mypgdriver import exceptions
from mypgdriver.protocol.record import Record


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


cdef class BaseProtocol(CoreProtocol):

    def __init__(self, loop=None):
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self.transport = None
        self.waiter = None
        self.timeout_handle = None
        self.resync_waiter = None
        self.op_kind = OP_NONE
        self.lost_exc = None
        self.cancel_done = True
        self.drain_waiter = None
        self.writing_paused = False
        self.copy_ready = None
        self.lost_handled = False
        self.stream_task = None
        self.stream_interrupt = 0
        self.cancel_gate = None

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
                return
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
            if self.result_error is not None and isinstance(self.result_error, exceptions.PostgresError):
                # e.g. AdminShutdownError: the server said why before closing.
                self.lost_exc = self.result_error
            else:
                self.lost_exc = exceptions.ConnectionDoesNotExistError(
                    'connection was closed in the middle of operation'
                    if self.waiter is not None else 'connection is closed')
                if exc is not None:
                    self.lost_exc.__cause__ = exc
        self.state = STATE_CLOSED
        self._cancel_timeout()
        waiter = self.waiter
        self.waiter = None
        if waiter is not None and not waiter.done():
            if self.op_kind == OP_STARTUP and self.result_error is not None:
                waiter.set_exception(self.result_error)
            else:
                waiter.set_exception(self.lost_exc)
        if self.resync_waiter is not None and not self.resync_waiter.done():
            self.resync_waiter.set_result(None)
        self.resync_waiter = None
        self._wake_copy_and_drain()
        if self.on_connection_lost is not None:
            self.on_connection_lost(self.lost_exc)

    cdef _wake_copy_and_drain(self):
        if self.copy_ready is not None and not self.copy_ready.done():
            self.copy_ready.set_result(False)
        if self.drain_waiter is not None and not self.drain_waiter.done():
            self.drain_waiter.set_result(None)
        self.drain_waiter = None

    # --- state ---

    def is_closed(self):
        return self.state == STATE_CLOSED

    def is_in_transaction(self):
        return self.xact_status != 'I'

    def is_busy(self):
        return self.waiter is not None or self.cancel_gate is not None or (
            self.state != STATE_IDLE and self.state != STATE_CLOSED)

    def get_backend_pid(self):
        return self.backend_pid

    def get_server_parameters(self):
        return self.server_parameters

    def get_resync_waiter(self):
        """A Future to await before the next operation, or None when in sync."""
        if self.resync_waiter is not None:
            return self.resync_waiter
        return self.cancel_gate

    def request_cancel(self):
        """Send a CancelRequest for the running operation (public Connection.cancel()).

        Returns a Future that completes when the server has handled the
        request, or None if there is nothing to cancel.  Until then the next
        operation waits (get_resync_waiter()), so that a cancel that arrives
        after its target finished cannot hit the next query.
        """
        if self.state == STATE_CLOSED or self.cancel_request is None:
            return None
        if self.cancel_gate is not None:
            return self.cancel_gate
        if self.waiter is None and self.resync_waiter is None:
            return None
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

    cdef object _new_waiter(self, object timeout, int op_kind):
        if self.state == STATE_CLOSED:
            raise exceptions.ConnectionDoesNotExistError(
                'cannot perform operation: connection is closed')
        # A pending public cancel (cancel_gate) does not block here: the
        # next step of the operation it targets (execute after prepare) may
        # go on; new operations wait for the gate in the Connection first.
        if self.waiter is not None or self.resync_waiter is not None or (
                self.state != STATE_IDLE and op_kind != OP_STARTUP):
            raise exceptions.InterfaceError(
                'cannot perform operation: another operation is in progress')
        # Everything that can fail comes before the first change of state:
        # a bad timeout must not leave a waiter behind (the connection would
        # refuse every later call as "another operation is in progress").
        cdef double delay = 0
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(f'timeout must be a number of seconds or None, '
                                f'not {type(timeout).__name__}')
            delay = timeout
            if delay != delay:
                raise ValueError('timeout must be a number of seconds, not NaN')
            if delay <= 0:
                raise asyncio.TimeoutError()
        fut = self.loop.create_future()
        if timeout is not None:
            self.timeout_handle = self.loop.call_later(delay, self._on_timeout, fut)
        self.waiter = fut
        self.op_kind = op_kind
        self.op_seq += 1
        self.result_status = None
        self.finished_error = None
        return fut

    cdef _cancel_timeout(self):
        if self.timeout_handle is not None:
            self.timeout_handle.cancel()
            self.timeout_handle = None

    def _on_timeout(self, fut):
        self.timeout_handle = None
        if fut is self.waiter and not fut.done():
            fut.set_exception(asyncio.TimeoutError())
            self.abandon()
            self._interrupt_stream(1)

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
        self.stream_task = asyncio.current_task(self.loop)
        self.stream_interrupt = 0

    def end_stream(self):
        """Stop feeding; why the feeding task was interrupted: 0 it was not, 1 timeout, 2 cancel()."""
        reason = self.stream_interrupt
        self.stream_task = None
        self.stream_interrupt = 0
        return reason

    # --- hooks from CoreProtocol ---

    cdef int _write(self, object data) except -1:
        if self.transport is None:
            raise exceptions.ConnectionDoesNotExistError('connection is not open')
        self.transport.write(data)
        return 0

    cdef int _on_result(self) except -1:
        cdef StatementState st
        self._cancel_timeout()
        waiter = self.waiter
        self.waiter = None
        op_kind = self.op_kind
        self.op_kind = OP_NONE
        if self.copy_ready is not None:
            if not self.copy_ready.done():
                self.copy_ready.set_result(False)
            self.copy_ready = None
        self.finished_error = self.result_error
        if waiter is None or waiter.done():
            # The caller gave up on this operation; we are in sync again.
            self.result_error = None
            self._finish_resync()
            return 0
        if self.result_error is not None:
            err = self.result_error
            self.result_error = None
            waiter.set_exception(err)
        elif op_kind == OP_BIND_EXECUTE:
            if self.want_status:
                waiter.set_result(self.result_status)
            else:
                waiter.set_result(self._take_rows())
        elif op_kind == OP_PORTAL:
            # A cursor step's result: the rows, and whether the portal has
            # more (PortalSuspended) -- one value, no side channel.
            waiter.set_result((self._take_rows(), self.portal_suspended))
        elif op_kind == OP_PREPARE:
            waiter.set_result(self.statement)
        elif op_kind == OP_EXECUTE_MANY:
            waiter.set_result(self._take_rows() if self.collecting_rows else None)
        elif op_kind == OP_SIMPLE_QUERY or op_kind == OP_COPY:
            waiter.set_result(self.result_status)
        else:
            waiter.set_result(None)
        self._drop_rows()
        self.collecting_rows = False
        self.statement = None
        self.copy_out_sink = None
        return 0

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
        """Something we cannot recover from: fail the operation, drop the connection."""
        self._cancel_timeout()
        if self.lost_exc is None:
            self.lost_exc = exc
        self.state = STATE_CLOSED
        waiter = self.waiter
        self.waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self._wake_copy_and_drain()
        if self.transport is not None:
            self.transport.abort()
        return 0

    # --- cancellation ---

    def abandon(self):
        """The caller stopped waiting for the current operation.

        Ask the server to cancel it and drain its remaining messages; the next
        operation waits for that (get_resync_waiter()).
        """
        if self.state == STATE_CLOSED or self.resync_waiter is not None:
            return
        if self.state == STATE_IDLE and self.waiter is None:
            return
        self.discard_rows = True
        self.resync_waiter = self.loop.create_future()
        if self.state == STATE_COPY_IN:
            # The server waits for copy data that will never come: end it.
            self._write_copy_message(b'f', 'COPY cancelled by the client')
        elif self.state == STATE_BIND_EXECUTE_MANY and self.op_kind == OP_EXECUTE_MANY \
                and not self.sync_sent:
            self._finish_many(True)
            self.sync_sent = True
        if self.op_kind == OP_STARTUP:
            # Half-authenticated connections cannot be reused.
            self._fatal(exceptions.ConnectionDoesNotExistError(
                'connection attempt was cancelled'))
            return
        if self.cancel_request is not None and self.backend_pid:
            self.cancel_done = False
            self.loop.create_task(self._cancel_and_wait())

    async def _cancel_and_wait(self):
        try:
            await self.cancel_request()
        except Exception:
            pass    # best effort: draining to ReadyForQuery keeps us in sync regardless
        finally:
            self.cancel_done = True
            if self.state == STATE_IDLE or self.state == STATE_CLOSED:
                self._finish_resync()

    cdef _finish_resync(self):
        # In sync only when ReadyForQuery arrived *and* the cancel request, if
        # any, was handled: a late cancel could otherwise hit the next query.
        if self.resync_waiter is None:
            return
        if self.state != STATE_IDLE and self.state != STATE_CLOSED:
            return
        if not self.cancel_done:
            return
        fut = self.resync_waiter
        self.resync_waiter = None
        self.discard_rows = False
        if not fut.done():
            fut.set_result(None)

    # --- operations (each returns a Future) ---

    def start_startup(self):
        fut = self._new_waiter(None, OP_STARTUP)
        self._write(self._build_startup_message())
        return fut

    def prepare(self, StatementState st, timeout=None):
        fut = self._new_waiter(timeout, OP_PREPARE)
        try:
            self._send_prepare(st)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def bind_execute(self, StatementState st, args, int32_t limit=0, timeout=None,
                     bint want_status=False, record_class=None):
        if record_class is not Record and record_class is not None:
            check_record_class(record_class)
        fut = self._new_waiter(timeout, OP_BIND_EXECUTE)
        self.want_status = want_status
        self.record_class = record_class if record_class is not None else Record
        try:
            self._send_bind_execute(st, args, '', limit)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def bind_execute_portal(self, StatementState st, args, str portal, int32_t limit,
                            timeout=None, type record_class=None):
        """Bind `args` to a named portal and fetch its first `limit` rows: (rows, more_remain)."""
        fut = self._new_waiter(timeout, OP_PORTAL)
        self.want_status = False
        self.record_class = record_class if record_class is not None else Record
        try:
            self._send_bind_execute(st, args, portal, limit)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def execute_portal(self, StatementState st, str portal, int32_t limit, timeout=None,
                       type record_class=None):
        """Fetch up to `limit` more rows (0 = all) of an open portal: (rows, more_remain)."""
        fut = self._new_waiter(timeout, OP_PORTAL)
        self.want_status = False
        self.record_class = record_class if record_class is not None else Record
        try:
            self._send_execute_portal(st, portal, limit)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def bind_portal(self, StatementState st, args, str portal, timeout=None):
        """Bind `args` to a named portal without fetching (rows come with execute_portal)."""
        fut = self._new_waiter(timeout, OP_CLOSE_STATEMENTS)
        try:
            self._send_bind_portal(st, args, portal)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def last_status(self):
        """The command tag of the last completed operation ('SELECT 2', 'INSERT 0 1', ...)."""
        return self.result_status

    def last_error(self):
        """The error the last finished operation ended with (None: it succeeded)."""
        return self.finished_error

    def close_portals(self, list names, timeout=None):
        fut = self._new_waiter(timeout, OP_CLOSE_STATEMENTS)
        try:
            self._send_close(b'P', names)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    # executemany: start, write batches, finish; the Future completes at
    # ReadyForQuery.

    def executemany_start(self, StatementState st, timeout=None, bint return_rows=False,
                          record_class=None):
        """Start a pipeline; its Future gives None, or all rows with `return_rows` (fetchmany)."""
        if record_class is not Record and record_class is not None:
            check_record_class(record_class)
        fut = self._new_waiter(timeout, OP_EXECUTE_MANY)
        self.sync_sent = False
        self._start_many(st)
        self.record_class = record_class if record_class is not None else Record
        self.collecting_rows = return_rows
        return fut

    def executemany_write(self, StatementState st, rows, Py_ssize_t base_index):
        """Encode and send a batch of rows; DataError names the bad row's index."""
        if self.state != STATE_BIND_EXECUTE_MANY or self.sync_sent:
            return
        self._write_many(st, rows, base_index)

    def executemany_failed(self):
        """True once the server reported an error: sending more rows is pointless."""
        return self.result_error is not None or self.state == STATE_CLOSED

    def executemany_finish(self, bint abort=False):
        """Send Sync (after a failing message when `abort`: nothing is committed).

        If no row was sent yet and we abort, nothing reaches the server and
        the connection is idle again at once.
        """
        if self.state != STATE_BIND_EXECUTE_MANY or self.sync_sent:
            return
        if abort and not self.many_sent_any:
            waiter = self.waiter
            self._clear_failed_send()
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return
        # Marked sent only once written: if the write fails, the caller's
        # abort path must still be able to send the Sync (else the server
        # waits for it for ever).
        self._finish_many(abort)
        self.sync_sent = True

    # COPY

    def copy_out(self, str query, sink, timeout=None):
        """Run COPY ... TO STDOUT; each data chunk goes to `sink(bytes)`."""
        fut = self._new_waiter(timeout, OP_COPY)
        self.copy_out_sink = sink
        try:
            self._send_copy_query(query, False)
        except BaseException:
            self.copy_out_sink = None
            self._clear_failed_send()
            raise
        return fut

    def copy_in(self, str query, timeout=None):
        """Run COPY ... FROM STDIN.

        Returns the operation's Future (completes at ReadyForQuery with the
        status tag); `copy_ready` completes with True once the server accepts
        data (copy_in_data), or False if the command failed before that.
        """
        fut = self._new_waiter(timeout, OP_COPY)
        self.copy_ready = self.loop.create_future()
        try:
            self._send_copy_query(query, True)
        except BaseException:
            self.copy_ready = None
            self._clear_failed_send()
            raise
        return fut

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

    def copy_in_fail(self, str message):
        if self.state == STATE_COPY_IN:
            self._write_copy_message(b'f', message)
            self.state = STATE_SIMPLE_QUERY

    def is_copy_in_active(self):
        return self.state == STATE_COPY_IN

    def simple_query(self, str query, timeout=None):
        fut = self._new_waiter(timeout, OP_SIMPLE_QUERY)
        try:
            self._send_simple_query(query)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    def close_statements(self, list names, timeout=None):
        fut = self._new_waiter(timeout, OP_CLOSE_STATEMENTS)
        try:
            self._send_close(b'S', names)
        except BaseException:
            self._clear_failed_send()
            raise
        return fut

    cdef _clear_failed_send(self):
        # Nothing reached the server (encoding failed before the write).
        self._cancel_timeout()
        self.result_status = None
        self.waiter = None
        self.op_kind = OP_NONE
        if self.state != STATE_CLOSED:
            self.state = STATE_IDLE

    def terminate(self):
        """Send Terminate (if possible) and close the transport."""
        if self.transport is None:
            self.state = STATE_CLOSED
            return
        if self.state != STATE_CLOSED:
            try:
                self._send_terminate()
            except Exception:
                pass
        self.state = STATE_CLOSED
        self.transport.close()

    def abort(self):
        self.state = STATE_CLOSED
        if self.transport is not None:
            self.transport.abort()


cdef bint _is_utf8(str name):
    # The server reports its canonical name ('UTF8'); aliases for safety.
    return name.replace('-', '').replace('_', '').upper() in ('UTF8', 'UNICODE')


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

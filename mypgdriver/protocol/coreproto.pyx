# cython: language_level=3
"""The PostgreSQL v3 protocol state machine, with no asyncio in it.

Bytes go in through the receive buffer and _process_messages(); requests
go out through _write().  The asyncio layer (protocol.pyx) subclasses this
and implements the hooks.  Message flow of one query, for the reader:

  prepare:      Parse, Describe(S), Sync -> ParseComplete, ParameterDescription,
                RowDescription | NoData, ReadyForQuery
  execute:      Bind, Execute, Sync      -> BindComplete, DataRow*,
                CommandComplete | PortalSuspended | EmptyQueryResponse,
                ReadyForQuery
  simple query: Query                    -> (RowDescription, DataRow*,
                CommandComplete)* ..., ReadyForQuery

Several operations may be in flight at once (pipelining): each one's
messages are written whole and end with its own Sync (or are one Query), so
the server answers them in order, each ending with a ReadyForQuery.  The
operations wait in a queue; the head's settings (statement, row class,
what to collect) are loaded when its first reply can arrive.

An ErrorResponse anywhere makes the server skip to the Sync; the error is
kept and reported when ReadyForQuery arrives, so the stream always ends an
operation in sync (PostgreSQL docs, "Extended Query", error handling).
"""

cimport cython
from libc.stdint cimport int16_t, int32_t, uint8_t, uint32_t
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Realloc, PyMem_Free
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.string cimport memcmp
from mypgdriver.protocol.buffer cimport (
    Frame, ReadBuffer, WriteBuffer, frame_read, frame_read_byte, frame_read_int32,
    frame_read_cstr, frame_read_cstr_bytes, unpack_int32)
from mypgdriver.protocol.statement cimport StatementState, ROW_RECORD

# COPY OUT: hand the sink what has arrived once this much is collected, even
# in the middle of a read.
cdef Py_ssize_t COPY_OUT_FLUSH_BYTES = 256 * 1024

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL

from mypgdriver import exceptions
from mypgdriver.protocol import auth
from mypgdriver.protocol.record import Record


# Protocol versions are (major << 16) | minor.  3.0 is what every server
# since 7.4 speaks; 3.2 (PostgreSQL 18) adds cancel keys of up to 256
# bytes.  3.1 is reserved and never sent ("Protocol versions" in the
# PostgreSQL docs), so the minors a client may use are 0 and 2.
cdef int32_t PROTOCOL_MAJOR = 3
SUPPORTED_PROTOCOL_MINORS = (0, 2)
# BackendKeyData's secret: exactly 4 bytes in 3.0, 4 to 256 bytes from 3.2 on.
cdef Py_ssize_t CANCEL_KEY_MAX_LENGTH = 256
# Request codes of the untyped start-up packets ("Message Formats").
cdef int32_t CANCEL_REQUEST_CODE = 80877102
cdef int32_t SSL_REQUEST_CODE = 80877103


def ssl_request_message():
    """The SSLRequest packet: length 8, code 1234.5679."""
    cdef WriteBuffer buf = WriteBuffer()
    buf.write_int32(8)
    buf.write_int32(SSL_REQUEST_CODE)
    return buf.to_bytes()

# The largest message length word accepted.  The server builds each message
# in a StringInfo, which cannot grow past MaxAllocSize (1 GiB - 1), so a
# longer claim is not PostgreSQL; refusing it early keeps a hostile length
# word from making us buffer up to 2 GiB.
cdef int32_t MAX_MESSAGE_LENGTH = 0x40000000

# AuthenticationRequest codes the driver does not implement, for the error text.
UNSUPPORTED_AUTH_METHODS = {
    2: 'Kerberos V5',
    6: 'SCM credentials',
    7: 'GSSAPI',
    8: 'GSSAPI',
    9: 'SSPI',
}


cdef dict read_fields(Frame *frame):
    # ErrorResponse / NoticeResponse body: (code byte, cstring)* terminated by 0.
    cdef dict fields = {}
    cdef char code
    while frame.remaining > 0:
        code = <char>frame_read_byte(frame)
        if code == 0:
            break
        fields[chr(<unsigned char>code)] = frame_read_cstr(frame)
    return fields


cdef bint _is_fatal(object err):
    severity = getattr(err, 'severity_en', None) or getattr(err, 'severity', None)
    return severity == 'FATAL' or severity == 'PANIC'


@cython.freelist(32)
@cython.final
cdef class Operation:
    """One request in flight (see coreproto.pxd)."""
    pass


@cython.final
cdef class StatusSink:
    """Where a bind/execute operation also leaves its status tag (a PreparedStatement's).

    A C slot that the protocol writes when the operation succeeds: cheaper
    than giving the caller a (rows, tag) tuple on every run.
    """

    def __init__(self):
        self.status = None


cdef class CoreProtocol:

    def __cinit__(self, *args, **kwargs):
        self.rbuf = ReadBuffer()
        self.wbuf = WriteBuffer()
        self.copy_out_buf = WriteBuffer()
        self.state = STATE_NEW
        self.xact_status = 'I'
        self.backend_pid = 0
        self.backend_secret = None
        self.server_parameters = {}
        self._startup_params = {}
        self.min_protocol_minor = 0
        self.max_protocol_minor = 0
        self.protocol_minor = 0
        self.protocol_negotiated = False
        self.record_class = Record
        self.row_kind = ROW_RECORD
        self.row_maker = None
        self.channel_binding = 'prefer'
        self.auth_method = None
        self.authenticated = False
        self.result_status = None
        self.result_error = None
        self.discard_rows = False
        self.portal_suspended = False
        self.rows = NULL
        self.rows_len = 0
        self.rows_cap = 0
        self.collecting_rows = False
        self.row_ends = None
        self.decoding_row = False
        self.cur = None
        self.tail = None
        self.depth = 0
        self.excl_op = None

    def __dealloc__(self):
        self._drop_rows()
        PyMem_Free(self.rows)
        self.rows = NULL

    cdef int release_buffers(self) except -1:
        """Free the send and receive storage of a closed connection.

        The protocol, session and Connection refer to each other, so a
        closed connection is freed by the cyclic garbage collector, dozens
        of connections later in a connect/close loop: its buffers should
        not wait for that.  Anything written later allocates again.
        """
        self.rbuf.release()
        self.wbuf.release()
        self.copy_out_buf.release()
        return 0

    cdef int _append_row(self, object row) except -1:
        cdef Py_ssize_t cap
        cdef PyObject **grown
        if self.rows_len == self.rows_cap:
            cap = self.rows_cap * 2 if self.rows_cap else 64
            grown = <PyObject**>PyMem_Realloc(self.rows, cap * sizeof(PyObject*))
            if grown == NULL:
                raise MemoryError
            self.rows = grown
            self.rows_cap = cap
        Py_INCREF(row)
        self.rows[self.rows_len] = <PyObject*>row
        self.rows_len += 1
        return 0

    cdef list _take_rows(self):
        # Moves the references into a new list: no increments, no copies.
        cdef Py_ssize_t i, n = self.rows_len
        cdef list result = PyList_New(n)
        for i in range(n):
            PyList_SET_ITEM(result, i, <object>self.rows[i])
        self.rows_len = 0
        if self.rows_cap > 65536:
            # Do not keep a huge array around after one big result.
            PyMem_Free(self.rows)
            self.rows = NULL
            self.rows_cap = 0
        return result

    cdef void _drop_rows(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.rows_len):
            Py_XDECREF(self.rows[i])
        self.rows_len = 0

    def cancel_request_message(self):
        """The CancelRequest packet for this session's backend (sent on a new connection).

        Carries the backend's process ID and its whole secret key, as the
        server sent them in BackendKeyData (4 bytes before protocol 3.2,
        up to 256 from 3.2 on).
        """
        cdef WriteBuffer buf = WriteBuffer()
        cdef bytes secret = self.backend_secret or b''
        buf.write_int32(<int32_t>(12 + len(secret)))
        buf.write_int32(CANCEL_REQUEST_CODE)
        buf.write_int32(self.backend_pid)
        buf.write_bytes(secret)
        return buf.to_bytes()

    def _configure_startup(self, str user, str password, dict params,
                           int min_protocol_minor=0, int max_protocol_minor=0):
        """Set who to log in as; `params` are the startup parameters.

        The StartupMessage asks for protocol 3.`max_protocol_minor`; a
        server that offers less in NegotiateProtocolVersion is accepted down
        to 3.`min_protocol_minor`.
        """
        for minor in (min_protocol_minor, max_protocol_minor):
            if minor not in SUPPORTED_PROTOCOL_MINORS:
                raise ValueError(f'unsupported protocol version 3.{minor}')
        if min_protocol_minor > max_protocol_minor:
            raise ValueError('the minimum protocol version is above the maximum')
        self._user = user
        self._password = password
        self._startup_params = dict(params)
        self._startup_params['user'] = user
        self.min_protocol_minor = min_protocol_minor
        self.max_protocol_minor = max_protocol_minor
        self.protocol_minor = max_protocol_minor
        self.protocol_negotiated = False

    # --- hooks (overridden by the asyncio layer; defaults serve tests) ---

    cdef int _write(self, object data) except -1:
        raise NotImplementedError

    cdef int _on_result(self) except -1:
        return self._advance()

    cdef int _on_notice(self, object message) except -1:
        return 0

    cdef int _on_notification(self, int32_t pid, str channel, str payload) except -1:
        return 0

    cdef int _on_parameter_status(self, str name, str value) except -1:
        return 0

    cdef int _on_statements_dropped(self) except -1:
        # DISCARD ALL / DEALLOCATE completed: see _command_tag.
        return 0

    cdef int _on_goodbye(self, object error) except -1:
        # An ErrorResponse while no operation is in flight: the server's
        # last word before it closes the connection (FATAL: a terminated
        # backend, a shutdown, idle_session_timeout).  The glue ends the
        # connection on it; here it is only recorded.
        if self.result_error is None:
            self.result_error = error
        return 0

    cdef int _on_pipelined_end(self, bint server_error) except -1:
        # A pipelined statement's last message arrived (CommandComplete,
        # EmptyQueryResponse, PortalSuspended, its ErrorResponse, or the
        # answer to its Describe): it is answered without a ReadyForQuery.
        # `server_error`: the server failed it, and skips every message up
        # to the next Sync (PostgreSQL docs, "Pipelining").
        return self._advance()

    cdef int _on_pipeline_skipped(self) except -1:
        # ReadyForQuery while the head is a pipelined statement: the server
        # skipped it after an earlier error of its pipeline.
        return self._advance()

    cdef int _on_statement_unusable(self, StatementState st, object error) except -1:
        # The Parse that was to create `st` on the server (carried in front
        # of its first Bind) failed, so no statement of that name exists; or
        # it created one whose result types are not those `st` decodes with
        # (the schema changed since the Describe), so binding it again would
        # decode rows with the wrong codecs.
        return 0

    # --- the queue of operations in flight ---

    cdef int _push_op(self, Operation op) except -1:
        """`op` was sent: it is answered after every operation before it."""
        op.next = None
        if self.cur is None:
            self.cur = op
            self.tail = op
            self._load_op(op)
        else:
            self.tail.next = op
            self.tail = op
        self.depth += 1
        if self.depth > self.max_depth:
            self.max_depth = self.depth
        if op.exclusive:
            self.excl_op = op
        return 0

    cdef int _load_op(self, Operation op) except -1:
        # The head's settings, read for every message until its ReadyForQuery.
        self._drop_rows()
        self.simple_query_text = op.query_text
        self.collecting_rows = op.collecting_rows
        self.row_ends = op.row_ends
        self.result_status = None
        self.result_error = None
        self.discard_rows = op.abandoned
        self.portal_suspended = False
        self.statement = op.statement
        self.record_class = op.record_class
        self.row_kind = op.row_kind
        self.row_maker = op.row_maker
        self.copy_out_sink = op.copy_out_sink
        self.parse_unconfirmed = op.carries_parse
        self.head_pipelined = op.pipelined
        if self.state != STATE_CLOSED:
            self.state = op.recv_state
        return 0

    cdef int _advance(self) except -1:
        """The head operation is answered: the next one's replies follow."""
        cdef Operation op = self.cur
        if op is None:
            return 0
        self.cur = op.next
        op.next = None
        self.depth -= 1
        if op is self.excl_op:
            self.excl_op = None
        if self.cur is not None:
            return self._load_op(self.cur)
        self.tail = None
        self._reset_result()
        if self.state != STATE_CLOSED:
            self.state = STATE_IDLE
        return 0

    # --- outgoing ---

    cdef int _reset_result(self) except -1:
        self.simple_query_text = None
        self._drop_rows()
        self.collecting_rows = False
        self.row_ends = None
        self.result_status = None
        self.result_error = None
        self.discard_rows = False
        self.portal_suspended = False
        self.statement = None
        self.row_maker = None
        self.parse_unconfirmed = False
        self.head_pipelined = False
        return 0

    cdef bytes _build_startup_message(self):
        cdef WriteBuffer buf = WriteBuffer()
        cdef Py_ssize_t off = buf.reserve_length()
        buf.write_int32((PROTOCOL_MAJOR << 16) | self.max_protocol_minor)
        for key, value in self._startup_params.items():
            buf.write_cstr(key)
            buf.write_cstr(str(value))
        buf.write_byte(0)
        buf.patch_length(off, <int32_t>buf.length)
        self.state = STATE_STARTUP
        return buf.to_bytes()

    cdef int _send_simple_query(self, str query) except -1:
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        buf.start_message(b'Q')
        buf.write_cstr(query)
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _send_prepare(self, StatementState st) except -1:
        # A statement whose Parse is pending is only described here, as the
        # unnamed statement: the named one is created by the Parse sent in
        # front of its first Bind, in the same Sync (_write_parse).  A
        # transaction-mode pooler may move us to another server connection
        # at every Sync outside a transaction block, so a statement created
        # in one Sync and bound in the next could be bound where it does not
        # exist; the unnamed statement leaves nothing behind to look for.
        cdef str name = '' if st.parse_pending else st.name
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        buf.start_message(b'P')
        buf.write_cstr(name)
        buf.write_cstr(st.query)
        buf.write_int16(0)          # let the server infer every parameter type
        buf.end_message()
        buf.start_message(b'D')
        buf.write_byte(b'S')
        buf.write_cstr(name)
        buf.end_message()
        buf.start_message(b'S')
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _write_parse(self, WriteBuffer buf, StatementState st) except -1:
        # The unnamed statement is parsed again in front of each Bind: another
        # Parse (type introspection, or another client's transaction behind
        # pgbouncer in transaction mode) may have replaced it since.  A named
        # statement is parsed here once, in front of its first Bind
        # (parse_pending, see _send_prepare).  The parameter types are the
        # ones our codecs were chosen for (but see statement.pyx's
        # inferred_again).
        buf.start_message(b'P')
        buf.write_cstr(st.name)
        buf.write_cstr(st.query)
        buf.write_int16(<int16_t>len(st.parse_oids))
        for oid in st.parse_oids:
            buf.write_int32(<int32_t><uint32_t>oid)
        buf.end_message()
        # Described again: the schema may have changed the result types since
        # our column codecs were picked (later runs of a named statement get
        # 0A000 from the server instead).  _dispatch compares the
        # RowDescription.
        buf.start_message(b'D')
        buf.write_byte(b'S')
        buf.write_cstr(st.name)
        buf.end_message()
        return 0

    cdef int _check_redescribed(self, Frame *frame, bint no_data) except -1:
        # The answer to _write_parse's Describe: if the result types are not
        # the ones the rows would be decoded with, the rows are not decoded
        # (they would be garbage) and the operation fails.  The server runs
        # the statement all the same: the error says so.
        cdef StatementState st = self.statement
        if st is None or self.result_error is not None:
            return 0
        if no_data:
            if not st.has_rows:
                return 0
        elif st.has_rows and st.same_column_types(frame):
            return 0
        self.result_error = exceptions.InvalidCachedStatementError(
            'the result types of the statement changed after it was prepared (the '
            'database schema changed); it was executed, but its rows were not decoded')
        self.discard_rows = True
        if st.name:
            # A named statement parsed here (parse_pending) now exists with
            # the new types: the server would not object to its next Bind.
            self._on_statement_unusable(st, self.result_error)
        return 0

    cdef int _send_bind_portal(self, StatementState st, object args, str portal) except -1:
        # Bind without Execute (an awaited cursor): the portal exists after
        # Sync inside the transaction block; rows come with later Executes.
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        if not st.name or st.parse_pending:
            self._write_parse(buf, st)
        st.encode_bind(buf, portal, args)
        buf.start_message(b'S')
        buf.end_message()
        self._write(buf.to_bytes())
        st.parse_pending = False
        return 0

    cdef int _write_pipelined(self, WriteBuffer buf, StatementState st, object args,
                              int32_t limit) except -1:
        # A pipeline's statement: [Parse + Describe] Bind Execute, appended
        # to `buf` with no Sync (the pipeline's sync point sends it).  A
        # DataError of the encoding leaves `buf` as it was.
        cdef Py_ssize_t mark = buf.length
        try:
            if not st.name or st.parse_pending:
                self._write_parse(buf, st)
            st.encode_bind(buf, '', args)
        except BaseException:
            buf.length = mark
            buf.msg_start = -1
            raise
        buf.start_message(b'E')
        buf.write_byte(0)
        buf.write_int32(limit)
        buf.end_message()
        st.parse_pending = False
        return 0

    cdef int _send_bind_execute(self, StatementState st, object args, str portal,
                                int32_t limit) except -1:
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        if not st.name or st.parse_pending:
            self._write_parse(buf, st)
        # Encoding may raise DataError: that happens before anything is
        # written to the transport, and the state stays idle (and the Parse
        # still pending).
        st.encode_bind(buf, portal, args)
        self._finish_execute(buf, st, portal, limit)
        st.parse_pending = False
        return 0

    cdef int _send_execute_portal(self, StatementState st, str portal, int32_t limit) except -1:
        # A named portal outlives Sync inside a transaction block, so each
        # cursor fetch is one Execute + Sync round trip.
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        return self._finish_execute(buf, st, portal, limit)

    cdef int _finish_execute(self, WriteBuffer buf, StatementState st, str portal,
                             int32_t limit) except -1:
        # Execute + Sync after whatever the caller put in `buf` (a Bind, or
        # nothing for a cursor fetch), then send it and expect rows.
        buf.start_message(b'E')
        buf.write_cstr(portal)
        buf.write_int32(limit)
        buf.end_message()
        buf.start_message(b'S')
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _send_close(self, char kind, list names) except -1:
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        for name in names:
            buf.start_message(b'C')
            buf.write_byte(kind)
            buf.write_cstr(name)
            buf.end_message()
        buf.start_message(b'S')
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    # executemany: many Bind/Execute pairs, one Sync.  Everything up to the
    # Sync is one implicit transaction, so one failing row undoes them all.
    # Inside a transaction block, though, a failed pipeline fails the whole
    # block.  So when our side may still fail after rows were written (a
    # later row that does not encode, a source that raises), the caller
    # passes a savepoint name: the first write opens that savepoint, Sync is
    # preceded by its RELEASE, and after an abort the caller rolls back to
    # it (executemany_savepoint()).

    cdef int _start_many(self, StatementState st) except -1:
        self.many_sent_any = False
        self.many_needs_parse = not st.name or st.parse_pending
        self.many_savepoint = None
        return 0

    cdef int _write_many(self, StatementState st, object rows, Py_ssize_t base_index,
                         str savepoint) except -1:
        cdef WriteBuffer buf = self.wbuf
        cdef Py_ssize_t i = base_index
        cdef bint opens = savepoint is not None and not self.many_sent_any
        if self.result_error is not None:
            return 0    # the server already failed: it skips to Sync anyway
        buf.reset()
        if opens and not st.name:
            # First: SAVEPOINT goes through the unnamed statement too, and
            # the rows' Parse below must be the one their Binds find.
            self._write_unnamed_command(buf, 'SAVEPOINT ' + savepoint)
        if self.many_needs_parse:
            self._write_parse(buf, st)
        if opens and st.name:
            # After a named statement's Parse, so that the first ParseComplete
            # is still that Parse's (parse_unconfirmed, _on_error_response).
            self._write_unnamed_command(buf, 'SAVEPOINT ' + savepoint)
        for args in rows:
            st.encode_bind(buf, '', args, i)
            buf.start_message(b'E')
            buf.write_byte(0)
            buf.write_int32(0)
            buf.end_message()
            i += 1
        if buf.length:
            self.many_sent_any = True
            self.many_needs_parse = False
            if opens:
                self.many_savepoint = savepoint
            self._write(buf.to_bytes())
            st.parse_pending = False
        return 0

    cdef int _finish_many(self, bint abort) except -1:
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        if abort:
            # Make the server fail the implicit transaction, so the rows
            # already sent are rolled back when Sync arrives.
            buf.start_message(b'E')
            buf.write_cstr('__mypgdriver_abort_pipeline__')
            buf.write_int32(0)
            buf.end_message()
        elif self.many_savepoint is not None:
            self._write_unnamed_command(buf, 'RELEASE SAVEPOINT ' + self.many_savepoint)
        buf.start_message(b'S')
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _write_unnamed_command(self, WriteBuffer buf, str command) except -1:
        # Parse/Bind/Execute of a command without parameters or rows, through
        # the unnamed statement and portal: never a cached statement.
        buf.start_message(b'P')
        buf.write_cstr('')
        buf.write_cstr(command)
        buf.write_int16(0)          # no parameter types
        buf.end_message()
        buf.start_message(b'B')
        buf.write_cstr('')          # portal
        buf.write_cstr('')          # statement
        buf.write_int16(0)          # no parameter formats
        buf.write_int16(0)          # no parameters
        buf.write_int16(0)          # no result formats
        buf.end_message()
        buf.start_message(b'E')
        buf.write_cstr('')
        buf.write_int32(0)
        buf.end_message()
        return 0

    # COPY: the command goes as a simple Query; CopyInResponse / CopyOutResponse
    # switch the stream into copy mode until CopyDone + CommandComplete.

    cdef int _send_copy_query(self, str query, bint copy_in) except -1:
        cdef WriteBuffer buf = self.wbuf
        buf.reset()
        buf.start_message(b'Q')
        buf.write_cstr(query)
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _write_copy_message(self, char mtype, object data) except -1:
        cdef WriteBuffer buf = WriteBuffer()
        buf.start_message(mtype)
        if data is not None:
            if isinstance(data, str):
                buf.write_cstr(data)
            else:
                buf.write_bytelike(data)
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _on_copy_in_ready(self) except -1:
        return 0

    cdef int _send_terminate(self) except -1:
        cdef WriteBuffer buf = WriteBuffer()
        buf.start_message(b'X')
        buf.end_message()
        self.state = STATE_CLOSED
        self._write(buf.to_bytes())
        return 0

    # --- incoming ---

    cdef int _process_messages(self) except -1:
        """Dispatch every complete message in the receive buffer."""
        # The per-row path has no try/except of its own (saving and restoring
        # the exception state for every row measured ~40 instructions a row);
        # a row that fails to decode lands here instead, is reported at
        # ReadyForQuery, and the rest of the result is drained undecoded.
        while True:
            try:
                return self._process_loop()
            except Exception as e:
                if not self.decoding_row:
                    raise
                self.decoding_row = False
                if self.result_error is None:
                    self.result_error = e
                self.discard_rows = True

    cdef int _process_loop(self) except -1:
        cdef ReadBuffer rb = self.rbuf
        cdef Py_ssize_t avail
        cdef int32_t mlen
        cdef const char *p
        cdef Frame frame
        while True:
            avail = rb.end - rb.start
            if avail < 5:
                rb.needed = 5
                break
            p = rb.data + rb.start
            mlen = unpack_int32(p + 1)
            if mlen < 4 or mlen > MAX_MESSAGE_LENGTH:
                raise exceptions.ProtocolError(
                    f'invalid message length {mlen} for message type {chr(<unsigned char>p[0])!r}')
            if avail < <Py_ssize_t>mlen + 1:
                rb.needed = <Py_ssize_t>mlen + 1
                break
            frame.ptr = p + 5
            frame.remaining = mlen - 4
            # Consume before dispatching: a handler that raises must not
            # leave the message to be parsed again.
            rb.start += <Py_ssize_t>mlen + 1
            if p[0] == b'D':
                if self.collecting_rows and not self.discard_rows:
                    self.decoding_row = True
                    if self.row_kind == ROW_RECORD:
                        row = self.statement.decode_row(&frame, self.record_class)
                    else:
                        row = self.statement.decode_row_as(&frame, self.row_kind,
                                                           self.row_maker)
                    self.decoding_row = False
                    self._append_row(row)
                else:
                    self._on_data_row(&frame)
            else:
                self._dispatch(p[0], &frame)
        if self.copy_out_buf.length:
            self._flush_copy_out()
        if rb.start == rb.end:
            rb.start = 0
            rb.end = 0
        return 0

    cdef str _command_tag(self, Frame *frame):
        # A statement run again and again ends with the same tag ('SELECT 1',
        # 'INSERT 0 1'): reuse the last str instead of decoding a new one.
        cdef str last = self.last_tag
        cdef const char *p
        cdef Py_ssize_t n
        if last is not None:
            p = PyUnicode_AsUTF8AndSize(last, &n)
            if n < frame.remaining and frame.ptr[n] == 0 and memcmp(p, frame.ptr, <size_t>n) == 0:
                frame.ptr += n + 1
                frame.remaining -= n + 1
                return last
        last = frame_read_cstr(frame)
        self.last_tag = last
        # DISCARD ALL and DEALLOCATE [ALL] drop prepared statements, ours
        # included, and a pooler tracking them (pgbouncer 1.22+) forgets
        # them too: binding one later would get the connection closed
        # there, not an ordinary error.  (DEALLOCATE of one name says
        # "DEALLOCATE" without the name: every statement is suspect.)
        self.last_tag_drops = last == 'DISCARD ALL' or last.startswith('DEALLOCATE')
        return last

    cdef int _flush_copy_out(self) except -1:
        # Called at the end of each read and before any message that is not
        # CopyData, so the sink has every row before the COPY completes or fails.
        cdef WriteBuffer buf = self.copy_out_buf
        if buf.length == 0:
            return 0
        data = buf.to_bytes()
        buf.reset()
        if self.copy_out_sink is not None:
            self.copy_out_sink(data)
        return 0

    cdef int _dispatch(self, char mtype, Frame *frame) except -1:
        if self.copy_out_buf.length and mtype != b'd':
            self._flush_copy_out()
        # DataRow first: it is most of the traffic.
        if mtype == b'D':
            return self._on_data_row(frame)
        elif mtype == b'C':
            self.result_status = self._command_tag(frame)
            if self.row_ends is not None:
                # executemany with grouped rows: where this statement's rows end.
                self.row_ends.append((self.rows_len, self.result_status))
            if self.last_tag_drops:
                self._on_statements_dropped()
            if self.head_pipelined:
                return self._on_pipelined_end(False)
        elif mtype == b'Z':
            return self._on_ready_for_query(frame)
        elif mtype == b'2' or mtype == b'3':
            pass    # BindComplete, CloseComplete
        elif mtype == b'1':
            self.parse_unconfirmed = False      # ParseComplete
        elif mtype == b'T':
            if self.state == STATE_PREPARE:
                if self.statement is not None:
                    self.statement.set_row_description(frame)
                if self.head_pipelined:
                    return self._on_pipelined_end(False)
            elif self.state != STATE_SIMPLE_QUERY:
                self._check_redescribed(frame, False)
            # In a simple query rows are not returned to the caller.
        elif mtype == b't':
            # Outside a prepare: an unnamed statement parsed again with the
            # parameter types we gave (_write_parse); nothing to learn.
            if self.state == STATE_PREPARE and self.statement is not None:
                self.statement.set_param_description(frame)
        elif mtype == b'n':
            if self.state == STATE_PREPARE:
                if self.statement is not None:
                    self.statement.set_no_data()
                if self.head_pipelined:
                    return self._on_pipelined_end(False)
            else:
                self._check_redescribed(frame, True)
        elif mtype == b's':
            self.portal_suspended = True
            if self.head_pipelined:
                return self._on_pipelined_end(False)
        elif mtype == b'I':
            if self.result_status is None:
                self.result_status = ''
            if self.head_pipelined:
                return self._on_pipelined_end(False)
        elif mtype == b'E':
            return self._on_error_response(frame)
        elif mtype == b'N':
            return self._on_notice(exceptions.make_server_message(read_fields(frame)))
        elif mtype == b'A':
            pid = frame_read_int32(frame)
            channel = frame_read_cstr(frame)
            payload = frame_read_cstr(frame)
            return self._on_notification(pid, channel, payload)
        elif mtype == b'S':
            name = frame_read_cstr(frame)
            value = frame_read_cstr(frame)
            self.server_parameters[name] = value
            return self._on_parameter_status(name, value)
        elif mtype == b'R':
            return self._on_authentication(frame)
        elif mtype == b'K':
            return self._on_backend_key_data(frame)
        elif mtype == b'G':
            return self._on_copy_in_response(frame)
        elif mtype == b'H':
            self.state = STATE_COPY_OUT
        elif mtype == b'd':
            # COPY OUT: the rows of one read go to the sink as one bytes
            # object (see _flush_copy_out), not one object and call per row.
            if self.copy_out_sink is not None and not self.discard_rows:
                self.copy_out_buf.write_raw(frame.ptr, frame.remaining)
                if self.copy_out_buf.length >= COPY_OUT_FLUSH_BYTES:
                    self._flush_copy_out()
        elif mtype == b'c':
            pass    # CopyDone: CommandComplete and ReadyForQuery follow
        elif mtype == b'v':
            return self._on_negotiate_protocol_version(frame)
        else:
            raise exceptions.ProtocolError(
                f'unexpected message type {chr(<unsigned char>mtype)!r} from server')
        return 0

    cdef int _on_backend_key_data(self, Frame *frame) except -1:
        self.backend_pid = frame_read_int32(frame)
        # The secret is the rest of the message and goes back whole in a
        # CancelRequest; a length outside the protocol's range would make
        # every CancelRequest malformed (or, at 3.0, be read by a pooler as
        # a 4-byte key followed by garbage).
        cdef Py_ssize_t n = frame.remaining
        if self.protocol_minor < 2 and n != 4:
            raise exceptions.ProtocolError(
                f'invalid BackendKeyData: a {n}-byte cancel key in protocol '
                f'3.{self.protocol_minor} (must be 4 bytes)')
        if n < 4 or n > CANCEL_KEY_MAX_LENGTH:
            raise exceptions.ProtocolError(
                f'invalid BackendKeyData: a {n}-byte cancel key '
                f'(must be 4 to {CANCEL_KEY_MAX_LENGTH} bytes)')
        self.backend_secret = PyBytes_FromStringAndSize(frame.ptr, n)
        frame_read(frame, n)
        return 0

    cdef int _on_negotiate_protocol_version(self, Frame *frame) except -1:
        # NegotiateProtocolVersion ("Message Formats"): the newest minor
        # version the server (or a pooler in front of it) supports, then the
        # protocol options (_pq_.*) of the StartupMessage it did not
        # recognise.  It comes once, before authentication, and only when
        # it changes something.  We send no protocol options, so any listed
        # option is a broken or hostile peer, as is a "downgrade" upwards.
        if self.state != STATE_STARTUP:
            raise exceptions.ProtocolError(
                'unexpected NegotiateProtocolVersion after the start of the session')
        if self.protocol_negotiated:
            raise exceptions.ProtocolError('a second NegotiateProtocolVersion')
        cdef int32_t newest = frame_read_int32(frame)
        cdef int32_t count = frame_read_int32(frame)
        # Each option name is at least its terminating NUL: a count above
        # the bytes left is a lie, refused before reading anything.
        if count < 0 or count > frame.remaining:
            raise exceptions.ProtocolError(
                f'invalid NegotiateProtocolVersion: {count} unrecognized options '
                f'in {frame.remaining} bytes')
        options = [frame_read_cstr(frame) for _ in range(count)]
        if frame.remaining:
            raise exceptions.ProtocolError(
                f'invalid NegotiateProtocolVersion: {frame.remaining} bytes after the options')
        if options:
            raise exceptions.ProtocolError(
                f'invalid NegotiateProtocolVersion: the server did not recognize protocol '
                f'options that were never requested ({", ".join(options)})')
        cdef int32_t major = newest >> 16
        cdef int32_t minor = newest & 0xFFFF
        if major != PROTOCOL_MAJOR or minor >= self.max_protocol_minor:
            raise exceptions.ProtocolError(
                f'invalid NegotiateProtocolVersion: the server offers protocol '
                f'{major}.{minor} in answer to a request for '
                f'{PROTOCOL_MAJOR}.{self.max_protocol_minor}')
        if minor < self.min_protocol_minor:
            raise exceptions.UnsupportedServerFeatureError(
                f'the server only supports protocol version {major}.{minor}, but '
                f'min_protocol_version is {PROTOCOL_MAJOR}.{self.min_protocol_minor}')
        if minor not in SUPPORTED_PROTOCOL_MINORS:
            # 3.1 is reserved: no server offers it, nothing defines it.
            raise exceptions.ProtocolError(
                f'invalid NegotiateProtocolVersion: protocol {major}.{minor} is not defined')
        self.protocol_minor = minor
        self.protocol_negotiated = True
        return 0

    cdef int _on_data_row(self, Frame *frame) except -1:
        # Rows that are not decoded (drained after a cancel, or of an
        # operation that returns none); decoded rows take the fast path in
        # _process_loop.
        if self.discard_rows or not self.collecting_rows:
            return 0
        self.decoding_row = True
        if self.row_kind == ROW_RECORD:
            row = self.statement.decode_row(frame, self.record_class)
        else:
            row = self.statement.decode_row_as(frame, self.row_kind, self.row_maker)
        self.decoding_row = False
        return self._append_row(row)

    cdef int _on_error_response(self, Frame *frame) except -1:
        err = exceptions.make_server_error(
            read_fields(frame),
            self.statement.query if self.statement is not None else self.simple_query_text)
        if self.cur is None and self.state == STATE_IDLE:
            # Nothing was asked: only a FATAL comes unasked (protocol docs,
            # "Asynchronous Operations"), and the server closes after it.
            return self._on_goodbye(err)
        if self.result_error is None:
            self.result_error = err
        if self.parse_unconfirmed:
            # The error is the Parse's (it comes first in its Sync): the
            # statement it was to create does not exist.
            self.parse_unconfirmed = False
            if self.statement is not None:
                self._on_statement_unusable(self.statement, err)
        if self.head_pipelined and not _is_fatal(err):
            # (A FATAL ends the session: the connection's loss answers the
            # statement, with the connection error that says so.)
            return self._on_pipelined_end(True)
        if self.state == STATE_STARTUP:
            # No ReadyForQuery follows a startup failure: the server closes.
            self.state = STATE_CLOSED
            self._on_result()
        elif self.state == STATE_COPY_OUT:
            self.state = STATE_SIMPLE_QUERY
        return 0

    cdef int _on_ready_for_query(self, Frame *frame) except -1:
        cdef uint8_t status = frame_read_byte(frame)
        if status != b'I' and status != b'T' and status != b'E':
            # is_in_transaction() and the pool's reset logic trust this byte.
            raise exceptions.ProtocolError(
                f'invalid transaction status {chr(status)!r} in ReadyForQuery')
        self.xact_status = chr(status)
        # Pipelined statements still queued before the sync point were
        # skipped by the server after an error (the failed one was
        # answered at its ErrorResponse).
        while self.cur is not None and self.cur.pipelined:
            self._on_pipeline_skipped()
        # The head operation is complete (_on_result hands out its result
        # and moves on to the next one).
        self._on_result()
        return 0

    cdef int _on_copy_in_response(self, Frame *frame) except -1:
        if self.state == STATE_COPY_IN_WAIT and not self.discard_rows:
            self.state = STATE_COPY_IN
            return self._on_copy_in_ready()
        # Reached through execute() of a COPY ... FROM STDIN (or an abandoned
        # copy): refuse it with CopyFail so the server ends the command and
        # we stay in sync.
        cdef WriteBuffer buf = WriteBuffer()
        if self.cur is not None and self.cur.next is not None:
            # Messages of later operations are already on their way; the
            # server would read them as a broken copy stream and skip past
            # their Syncs, so their replies could no longer be matched.
            # (Simple queries that mention COPY run alone, so this takes a
            # COPY reached through the extended protocol while others were
            # pipelined behind it.)
            raise exceptions.InterfaceError(
                'COPY FROM STDIN was started by a statement that was pipelined with others; '
                'the connection was closed to stay in sync; use copy_to_table() or '
                'copy_records_to_table()')
        buf.start_message(b'f')
        buf.write_cstr('COPY FROM STDIN is not supported by execute(); '
                       'use copy_to_table() or copy_records_to_table()')
        buf.end_message()
        self._write(buf.to_bytes())
        return 0

    cdef int _on_authentication(self, Frame *frame) except -1:
        cdef int32_t code = frame_read_int32(frame)
        cdef WriteBuffer buf
        cdef bytes payload
        if code == 0:           # AuthenticationOk
            # Refuse a server that skips SCRAM (or its channel binding) when
            # the settings demand it: an impostor could otherwise just say OK.
            auth.check_authentication_ok(self._sasl, channel_binding=self.channel_binding)
            self._sasl = None
            self.authenticated = True
            return 0
        buf = WriteBuffer()
        if code == 3:           # cleartext
            self.auth_method = 'password'
            auth.check_password_auth_allowed('password', channel_binding=self.channel_binding)
            buf.start_message(b'p')
            buf.write_cstr(self._require_password('password'))
            buf.end_message()
        elif code == 5:         # MD5
            self.auth_method = 'md5'
            auth.check_password_auth_allowed('md5', channel_binding=self.channel_binding)
            salt = PyBytes_FromStringAndSize(frame_read(frame, 4), 4)
            buf.start_message(b'p')
            buf.write_cstr_bytes(auth.md5_password(
                self._user, self._require_password('md5'), salt))
            buf.end_message()
        elif code == 10:        # SASL: list of mechanisms
            mechanisms = []
            while frame.remaining > 1:
                mechanisms.append(frame_read_cstr(frame))
            self.auth_method = 'sasl'
            self._sasl = auth.start_scram_exchange(
                mechanisms, self._require_password('SCRAM-SHA-256'),
                channel_binding=self.channel_binding,
                tls_cert_der=self.tls_server_cert_der)
            self.auth_method = self._sasl.mechanism
            payload = self._sasl.client_first_message()
            buf.start_message(b'p')
            buf.write_cstr(self._sasl.mechanism)
            buf.write_int32(<int32_t>len(payload))
            buf.write_bytes(payload)
            buf.end_message()
        elif code == 11:        # SASLContinue
            if self._sasl is None:
                raise exceptions.ProtocolError('unexpected SASLContinue message')
            payload = self._sasl.client_final_message(
                PyBytes_FromStringAndSize(frame.ptr, frame.remaining))
            frame_read(frame, frame.remaining)
            buf.start_message(b'p')
            buf.write_bytes(payload)
            buf.end_message()
        elif code == 12:        # SASLFinal
            if self._sasl is None:
                raise exceptions.ProtocolError('unexpected SASLFinal message')
            self._sasl.verify_server_final(
                PyBytes_FromStringAndSize(frame.ptr, frame.remaining))
            frame_read(frame, frame.remaining)
            return 0
        else:
            method = UNSUPPORTED_AUTH_METHODS.get(code, f'code {code}')
            raise exceptions.InterfaceError(
                f'the server requested {method} authentication, which mypgdriver '
                f'does not support (supported: trust, password, md5, SCRAM-SHA-256)')
        self._write(buf.to_bytes())
        return 0

    cdef str _require_password(self, str method):
        if self._password is None:
            raise exceptions.PasswordRequiredError(
                f'the server requested {method} authentication for user '
                f'{self._user!r}, but no password was provided')
        return self._password

    # --- test helpers: drive the state machine without a socket ---

    def _feed_for_tests(self, data):
        self.rbuf._feed(data)
        self._process_messages()

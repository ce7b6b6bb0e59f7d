from libc.stdint cimport int32_t
from cpython.object cimport PyObject
from mypgdriver.protocol.buffer cimport Frame, ReadBuffer, WriteBuffer
from mypgdriver.protocol.statement cimport StatementState


cdef enum ProtocolState:
    STATE_NEW = 0            # before the startup message
    STATE_STARTUP = 1        # startup and authentication, until the first ReadyForQuery
    STATE_IDLE = 2           # ready for a new operation
    STATE_SIMPLE_QUERY = 3
    STATE_PREPARE = 4
    STATE_BIND_EXECUTE = 5
    STATE_CLOSE_STATEMENTS = 6
    STATE_BIND_EXECUTE_MANY = 7
    STATE_COPY_OUT = 8
    STATE_COPY_IN = 9
    STATE_CLOSED = 10        # terminated or lost: nothing more can be sent
    STATE_COPY_IN_WAIT = 11  # COPY FROM STDIN sent, CopyInResponse not yet received


cdef class StatusSink:
    cdef:
        public object status          # the last successful run's status tag, or None


cdef class Operation:
    # One request in flight: what to do with its messages when it reaches the
    # head of the queue, and (opaque to the state machine) what its caller
    # waits on.  Operations are answered in the order they were sent, each
    # ending with its own ReadyForQuery.
    cdef:
        int kind                      # what the result is (the asyncio layer's OpKind)
        ProtocolState recv_state      # how its messages are read
        StatementState statement
        type record_class
        int row_kind                  # statement.RowKind: what rows are made as
        object row_maker              # ROW_MAKER: the factory's maker for this result
        bint collecting_rows          # DataRows are decoded and kept
        list row_ends                 # executemany grouped: (rows so far, tag) per CommandComplete
        int want                      # bind/execute: C_WANT_ROWS or C_WANT_STATUS (protocol.pyx)
        StatusSink status_sink        # bind/execute: also gets the status tag (or None)
        str query_text                # simple query text, for server errors
        object copy_out_sink
        bint exclusive                # nothing else may be in flight with it
        bint carries_parse            # it creates its named statement (parse_pending): Parse first
        bint abandoned                # its caller gave up: drain, discard the result
        bint pipelined                # a pipeline's statement (no Sync of its own): answered
                                      # at its CommandComplete / ErrorResponse, not at ReadyForQuery
        bint timed                    # `delay` is a timeout
        double delay
        double deadline               # when it times out (loop time), if timed
        bint end_sent                 # a stream's end (Sync, CopyDone) is written: it may commit
        bint late_timeout             # timed out after end_sent: the server's answer decides
        long seq                      # position in the connection's operation count
        object waiter                 # the caller's Future
        object timeout_handle
        Operation next                # the one sent after it


cdef class CoreProtocol:
    cdef:
        readonly ReadBuffer rbuf      # (readonly: tests read its _capacity())
        WriteBuffer wbuf
        ProtocolState state
        readonly str xact_status          # 'I' idle, 'T' in transaction, 'E' failed transaction
        readonly int32_t backend_pid
        readonly bytes backend_secret
        readonly dict server_parameters

        # startup
        # Protocol 3.x minor versions: the range the caller accepts
        # (min/max_protocol_version) and the one in use, which starts as the
        # maximum and drops to what a NegotiateProtocolVersion grants.
        int min_protocol_minor
        int max_protocol_minor
        readonly int protocol_minor
        bint protocol_negotiated
        str _user
        str _password
        dict _startup_params
        object _sasl                      # SCRAM exchange in progress
        public object tls_server_cert_der # for SCRAM channel binding
        public str channel_binding
        public str auth_method            # what the server asked for, for tests and errors
        # AuthenticationOk arrived: an error after it is not an authentication
        # failure, and an sslmode fallback must not retry on another transport.
        readonly bint authenticated

        # Operations in flight, oldest first (a linked list through .next):
        # `cur` is the one whose messages are arriving.
        Operation cur
        Operation tail
        readonly Py_ssize_t depth
        readonly Py_ssize_t max_depth     # the deepest the queue has been
        Operation excl_op                 # an exclusive operation in flight

        # the current operation (loaded from `cur`)
        StatementState statement
        public type record_class
        int row_kind
        object row_maker
        # Rows of the current result, kept in a C array and turned into a list
        # only at the end: a list growing row by row is a tracked container
        # that every young-generation GC pass (triggered by the row
        # allocations themselves) would walk again and again.
        PyObject **rows
        Py_ssize_t rows_len
        Py_ssize_t rows_cap
        bint collecting_rows
        list row_ends                     # the head's Operation.row_ends (or None)
        bint decoding_row                 # a DataRow is being decoded (for error routing)
        str result_status
        str last_tag            # the last CommandComplete tag, reused when it repeats
        bint last_tag_drops     # last_tag says every prepared statement was dropped
        object result_error               # first ErrorResponse (or client-side failure) of the operation
        bint discard_rows                 # after a cancel: drain without decoding
        bint portal_suspended
        object copy_out_sink              # callable(bytes) for COPY TO STDOUT, or None
        WriteBuffer copy_out_buf          # CopyData payloads not yet given to the sink
        str simple_query_text             # for the query attribute of server errors
        bint many_sent_any                # executemany: some rows already on the wire
        bint many_needs_parse             # executemany of the unnamed statement: Parse first
        str many_savepoint                # executemany: the savepoint its first write opened
        bint parse_unconfirmed            # the head carries a named Parse not yet answered
        bint head_pipelined               # the head is a pipelined statement (Operation.pipelined)

    # --- hooks the asyncio layer implements ---
    cdef int _write(self, object data) except -1
    cdef int _on_result(self) except -1
    cdef int _on_notice(self, object message) except -1
    cdef int _on_notification(self, int32_t pid, str channel, str payload) except -1
    cdef int _on_parameter_status(self, str name, str value) except -1
    cdef int _on_statements_dropped(self) except -1
    cdef int _on_statement_unusable(self, StatementState st, object error) except -1
    cdef int _on_goodbye(self, object error) except -1
    cdef int _on_pipelined_end(self, bint server_error) except -1
    cdef int _on_pipeline_skipped(self) except -1

    # --- operations ---
    cdef int _reset_result(self) except -1
    cdef int _push_op(self, Operation op) except -1
    cdef int _load_op(self, Operation op) except -1
    cdef int _advance(self) except -1
    cdef int _append_row(self, object row) except -1
    cdef list _take_rows(self)
    cdef void _drop_rows(self) noexcept
    cdef bytes _build_startup_message(self)
    cdef int release_buffers(self) except -1
    cdef int _send_simple_query(self, str query) except -1
    cdef int _send_prepare(self, StatementState st) except -1
    cdef int _send_bind_execute(self, StatementState st, object args, str portal, int32_t limit) except -1
    cdef int _send_execute_portal(self, StatementState st, str portal, int32_t limit) except -1
    cdef int _write_parse(self, WriteBuffer buf, StatementState st) except -1
    cdef int _check_redescribed(self, Frame *frame, bint no_data) except -1
    cdef int _finish_execute(self, WriteBuffer buf, StatementState st, str portal,
                             int32_t limit) except -1
    cdef int _send_bind_portal(self, StatementState st, object args, str portal) except -1
    cdef int _write_pipelined(self, WriteBuffer buf, StatementState st, object args,
                              int32_t limit) except -1
    cdef int _send_close(self, char kind, list names) except -1
    cdef int _start_many(self, StatementState st) except -1
    cdef int _write_many(self, StatementState st, object rows, Py_ssize_t base_index,
                         str savepoint) except -1
    cdef int _finish_many(self, bint abort) except -1
    cdef int _write_unnamed_command(self, WriteBuffer buf, str command) except -1
    cdef int _send_copy_query(self, str query, bint copy_in) except -1
    cdef int _write_copy_message(self, char mtype, object data) except -1
    cdef int _on_copy_in_ready(self) except -1
    cdef int _send_terminate(self) except -1

    # --- incoming ---
    cdef int _process_messages(self) except -1
    cdef int _process_loop(self) except -1
    cdef str _command_tag(self, Frame *frame)
    cdef int _flush_copy_out(self) except -1
    cdef int _dispatch(self, char mtype, Frame *frame) except -1
    cdef int _on_authentication(self, Frame *frame) except -1
    cdef int _on_negotiate_protocol_version(self, Frame *frame) except -1
    cdef int _on_backend_key_data(self, Frame *frame) except -1
    cdef int _on_error_response(self, Frame *frame) except -1
    cdef int _on_data_row(self, Frame *frame) except -1
    cdef int _on_ready_for_query(self, Frame *frame) except -1
    cdef int _on_copy_in_response(self, Frame *frame) except -1
    cdef str _require_password(self, str method)

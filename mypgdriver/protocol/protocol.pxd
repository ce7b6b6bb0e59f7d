from libc.stdint cimport int32_t
from mypgdriver.protocol.coreproto cimport CoreProtocol, Operation, StatusSink
from mypgdriver.protocol.statement cimport StatementState
from mypgdriver.protocol.buffer cimport WriteBuffer


cdef class BaseProtocol(CoreProtocol):
    cdef:
        object loop
        readonly object transport
        object resync_waiter        # set while an abandoned operation drains after a cancel
        Operation cancel_target     # the operation a CancelRequest was sent for
        public object on_notice
        public object on_notification
        public object on_connection_lost
        public object on_statements_dropped   # callable(): DISCARD ALL / DEALLOCATE completed
        public object on_statement_unusable   # callable(state, error): see _on_statement_unusable
        public object cancel_request   # async callable sending a CancelRequest
        readonly object lost_exc
        bint cancel_done
        bint lost_handled           # connection_lost() ran (it runs once)
        object stream_task          # task feeding a COPY IN / executemany from user data
        int stream_interrupt        # 0 none, 1 our timeout, 2 a public cancel()
        object cancel_gate          # a public cancel() in flight: the next operation waits
        object answer_waiter        # close(): woken when the next operation is answered
        bint closed_by_client       # terminate() (Connection.close()) ended the connection
        object drain_waiter         # set while the transport asks us to stop writing
        bint writing_paused
        list out_pending            # messages held for one write at the loop's next turn
        Py_ssize_t out_pending_size
        bint flush_scheduled
        bint sync_sent              # executemany: Sync already written
        public object copy_ready    # Future: CopyInResponse arrived (True) or not (False)
        readonly long op_seq        # operations sent so far
        object peeked_transport     # the transport whose socket peeked_fd is (input_waiting)
        int peeked_fd
        long finished_seq           # the last answered operation's number ...
        object finished_error       # ... the error it ended with ...
        object finished_status      # ... and its command tag

        # Admission: who may send next (see turn()).
        public Py_ssize_t max_pipeline
        object turn_waiters         # deque of [Future, exclusive, bypass, sent back], in call order
        Py_ssize_t n_turn_waiters   # len(turn_waiters), tested on every send and result
        Py_ssize_t reserved         # callers woken to send, not yet sent
        readonly bint exclusive     # a caller holds the connection alone
        readonly bint line_held     # a caller keeps its turn across round trips (hold_line())
        # Calls made so far that may change cached statements' result types
        # (DDL): bind_execute() declines a statement stamped with another value
        # (StatementState.schema_epoch), for the Session to run it in line.
        public long schema_epoch
        Operation spare_op          # an answered operation, reused by the next _make_op

        # Pipeline mode (Connection.pipeline(); mypgdriver/core/pipeline.py):
        # statements written with no Sync between them, into pipe_buf, sent
        # when a result is needed, at a sync point, or when pipe_buf is big.
        readonly bint pipeline_on
        # The server failed a statement of the segment open now (after the
        # last Sync written): it skips the rest of it, so nothing more is sent.
        readonly bint pipeline_failed
        # Statements written since the last Sync (0: the segment is closed).
        readonly Py_ssize_t pipe_unsynced
        # Operations numbered up to this one have been handed to the transport.
        readonly long pipe_flushed_seq
        readonly long pipe_sends     # writes of pipelined messages to the transport (tests count them)
        readonly long pipe_failures  # pipelined statements answered with an error or skipped
        bint pipe_need_flush         # statements written since the last Flush or Sync
        WriteBuffer pipe_buf

    cdef Operation _make_op(self, int kind, int recv_state, object timeout, bint exclusive,
                            object waiter=*)
    cdef object send_bind_execute(self, StatementState st, args, int32_t limit, timeout,
                                  int want, record_class, bint check_turn, StatusSink sink,
                                  object waiter)
    cdef object _start_op(self, Operation op)
    cdef bint _admits(self, bint exclusive, bint bypass)
    cdef _wake_turns(self)
    cdef _recycle_op(self, Operation op)
    cdef object _pop_waiter(self)
    cdef Py_ssize_t _head_count(self)
    cdef _abandon_op(self, Operation op)
    cdef _maybe_cancel(self, Operation op)
    cdef bint _only_running(self, Operation op)
    cdef _fail_all(self, object exc)
    cdef int _fatal(self, object exc) except -1
    cdef _finish_resync(self)
    cdef _wake_copy_and_drain(self)
    cdef _wake_answer_waiter(self)
    cdef object _closed_error(self)
    cdef _interrupt_stream(self, int reason)
    cdef _time_out_committing(self, Operation op)
    cdef int _flush_out(self) except -1
    cdef int _pipe_send(self) except -1
    cdef object _push_sync(self, bint abort)

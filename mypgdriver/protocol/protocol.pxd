from mypgdriver.protocol.coreproto cimport CoreProtocol


cdef class BaseProtocol(CoreProtocol):
    cdef:
        object loop
        readonly object transport
        object waiter               # Future of the operation in flight
        object timeout_handle
        object resync_waiter        # set while an abandoned operation drains
        bint want_status
        int op_kind
        public object on_notice
        public object on_notification
        public object on_connection_lost
        public object cancel_request   # async callable sending a CancelRequest
        readonly object lost_exc
        bint cancel_done
        bint lost_handled           # connection_lost() ran (it runs once)
        object stream_task          # task feeding a COPY IN / executemany from user data
        int stream_interrupt        # 0 none, 1 our timeout, 2 a public cancel()
        object cancel_gate          # a public cancel() in flight: the next operation waits
        object drain_waiter         # set while the transport asks us to stop writing
        bint writing_paused
        bint sync_sent              # executemany: Sync already written
        public object copy_ready    # Future: CopyInResponse arrived (True) or not (False)
        readonly long op_seq        # operations started so far (which one finished last)
        object finished_error       # the error the last finished operation ended with

    cdef object _new_waiter(self, object timeout, int op_kind)
    cdef int _fatal(self, object exc) except -1
    cdef _cancel_timeout(self)
    cdef _finish_resync(self)
    cdef _clear_failed_send(self)
    cdef _wake_copy_and_drain(self)
    cdef _interrupt_stream(self, int reason)

# cython: language_level=3
"""The ``with`` block of a sync pipeline (mypgdriver/sync/pipeline.py), compiled.

Entering the block takes the connection for the thread (CallRunner.hold())
and the Session's pipeline mode; leaving it syncs (or, after Ctrl-C,
aborts) and gives both back.  Compiled, as the runner and the transaction
block (blocks.pyx) are: a KeyboardInterrupt lands only inside the Python
code these steps call (the Session's coroutines, which the glue handles),
never between taking the connection and the ``try`` that gives it back, so
a block never leaves the connection held or in pipeline mode.
"""
import threading

from mypgdriver import exceptions
from mypgdriver.core.pipeline import PipelineCore

__all__ = ('PipelineBlock',)

_get_ident = threading.get_ident


cdef int _end(object core, object runner) except -1:
    # Leave pipeline mode (the protocol's one compiled step: an open segment
    # aborted, the connection's hold released), give the thread's hold of
    # the connection back, then the Python side's tidy-up.
    try:
        core.open = False
        proto = core.protocol
        if proto.pipeline_on:
            proto.pipeline_end()
    finally:
        runner.release()
    core.tidy()
    return 0


cdef class PipelineBlock:
    """What ``with conn.pipeline() as p:`` enters and leaves (the base of the sync Pipeline)."""

    cdef public object _session
    cdef public object _runner
    cdef public object _run
    cdef public object _core
    cdef public object _thread

    def __init__(self, session, runner):
        self._session = session
        self._runner = runner
        self._run = runner.run
        self._core = None
        self._thread = 0

    def __enter__(self):
        if self._core is not None:
            raise exceptions.InterfaceError('a Pipeline can be entered only once')
        session = self._session
        runner = self._runner
        if not runner.hold():
            raise exceptions.InterfaceError(
                'a pipeline is already open on this connection: pipelines do not nest')
        core = None
        try:
            core = PipelineCore(session)
            core.face = self._run
            self._core = core
            self._thread = _get_ident()
            self._run(core.begin(session.deadline(session.command_timeout)))
        except BaseException:
            if core is None:
                runner.release()
            else:
                _end(core, runner)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        core = self._core
        if core is None or not core.open:
            return False
        try:
            # Left by an interruption (Ctrl-C): the open segment is aborted,
            # not committed.  By an exception of the block's code: synced as
            # usual, and that exception is the one raised.
            abort = exc_type is not None and not issubclass(exc_type, Exception)
            session = self._session
            try:
                self._run(core.close(abort, session.deadline(session.command_timeout)))
            except Exception:
                if exc_type is None:
                    raise
        finally:
            _end(core, self._runner)
        return False

# cython: language_level=3
"""Waiter: the one-shot result of a protocol operation driven without an event loop.

An operation's caller waits on ``op.waiter`` for its outcome.  Under asyncio
it is an ``asyncio.Future`` (the event loop's Task awaits it).  The sync
driver's compiled call path (mypgdriver/sync/driver/runner.pyx) never hands
its waiter to a Task: it reads the socket until the operation is answered
and takes the outcome itself.  A Waiter is what it gives the protocol
instead: the part of the Future interface the protocol and the Session use
(``done``, ``result``, ``exception``, ``set_result``, ``set_exception``,
``cancel``, done callbacks scheduled on the loop, ``await``), in C, at a
fraction of a Future's cost, and readable without a method call by
compiled code (``state``, ``value``).

When the call path hands over to the policy (the Session's coroutines, on
an error, a timeout or Ctrl-C), the Waiter goes with it: the Session
compares it by identity (``protocol.abandon(fut)``) and awaits it like a
Future under the sync glue, which waits for anything with ``done()``.
"""
import asyncio

__all__ = ('Waiter',)

_CancelledError = asyncio.CancelledError
_InvalidStateError = asyncio.InvalidStateError


cdef class Waiter:
    """A Future-like one-shot outcome of one operation (see the module docstring)."""

    def __cinit__(self, loop):
        self.loop = loop
        self.state = PENDING
        self.value = None
        self.failed = False
        self.callbacks = None
        self._asyncio_future_blocking = False

    def get_loop(self):
        return self.loop

    def done(self):
        return self.state != PENDING

    def cancelled(self):
        return self.state == CANCELLED

    def result(self):
        if self.state == PENDING:
            raise _InvalidStateError('Result is not ready.')
        if self.state == CANCELLED:
            raise _CancelledError()
        if self.failed:
            raise self.value
        return self.value

    def exception(self):
        if self.state == PENDING:
            raise _InvalidStateError('Exception is not set.')
        if self.state == CANCELLED:
            raise _CancelledError()
        return self.value if self.failed else None

    def set_result(self, result):
        if self.state != PENDING:
            raise _InvalidStateError('invalid state')
        self.value = result
        self.state = FINISHED
        if self.callbacks is not None:
            self._schedule_callbacks()

    def set_exception(self, exception):
        if self.state != PENDING:
            raise _InvalidStateError('invalid state')
        if isinstance(exception, type):
            exception = exception()
        if isinstance(exception, StopIteration):
            raise TypeError('StopIteration interacts badly with generators '
                            'and cannot be raised into a Future')
        self.value = exception
        self.failed = True
        self.state = FINISHED
        if self.callbacks is not None:
            self._schedule_callbacks()

    def cancel(self, msg=None):
        if self.state != PENDING:
            return False
        self.state = CANCELLED
        if self.callbacks is not None:
            self._schedule_callbacks()
        return True

    def add_done_callback(self, fn, *, context=None):
        if self.state != PENDING:
            self.loop.call_soon(fn, self)
            return
        if self.callbacks is None:
            self.callbacks = []
        self.callbacks.append(fn)

    def remove_done_callback(self, fn):
        if self.callbacks is None:
            return 0
        kept = [cb for cb in self.callbacks if cb != fn]
        removed = len(self.callbacks) - len(kept)
        self.callbacks = kept
        return removed

    cdef int _schedule_callbacks(self) except -1:
        callbacks = self.callbacks
        self.callbacks = None
        for fn in callbacks:
            self.loop.call_soon(fn, self)
        return 0

    def __await__(self):
        if self.state == PENDING:
            self._asyncio_future_blocking = True
            yield self
        return self.result()

    __iter__ = __await__

    def __repr__(self):
        state = ('pending', 'finished', 'cancelled')[<int>self.state]
        return f'<mypgdriver Waiter {state}>'

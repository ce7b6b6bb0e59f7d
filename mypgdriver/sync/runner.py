"""CallRunner: the calls of one connection, run on its glue one thread at a time.

A SyncGlue is driven by whichever thread calls ``run()``; two threads must
never drive it at once (its ready queue, timers and the protocol are not
thread-safe).  Every call of the public sync API therefore goes through
one CallRunner, which holds a ``threading.Lock`` around ``glue.run(coro)``:
calls from several threads are serialized, in the order the lock grants
them (not pipelined).

A callback the driver runs inside a call (a notification listener, a log
listener, a query logger) runs in the thread that holds the lock.  If it
called the connection again it would wait for its own lock forever: such a
call is refused with :exc:`~mypgdriver.exceptions.InterfaceError`.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Coroutine, Generator, Optional, TypeVar, Union

from mypgdriver import exceptions

if TYPE_CHECKING:
    from mypgdriver.sync._prototype import SyncGlue

T = TypeVar('T')

#: What run() drives: a coroutine, or the generator an awaitable's __await__ returns.
Driven = Union[Coroutine[Any, Any, T], Generator[Any, None, T]]


class CallRunner:
    """Runs coroutines of one asyncio Connection on its SyncGlue, one thread at a time."""

    __slots__ = ('_glue', '_lock', '_owner', '_end_lock')

    def __init__(self, glue: SyncGlue) -> None:
        self._glue = glue
        self._lock = threading.Lock()
        # The thread running a call now (None: idle).  Read without the lock
        # by the same thread (re-entrance) and by cancel() (is a call running?).
        self._owner: Optional[int] = None
        # Taken to end a call and by a cross-thread cancel() while it sends:
        # a call does not return (and the next one does not start) while a
        # CancelRequest aimed at it is on its way (see cancel.py).
        self._end_lock = threading.Lock()

    def run(self, coro: Driven[T]) -> T:
        """Drive `coro` to its end on the glue, holding the connection's lock; its result."""
        me = threading.get_ident()
        if self._owner == me:
            coro.close()
            raise exceptions.InterfaceError(
                'cannot call the connection from inside one of its own calls: a '
                'listener, log listener, termination listener or query logger runs '
                'inside the call that received the event, while that call holds the '
                'connection; do the work after the call returns (e.g. queue it), or '
                'use another connection')
        with self._lock:
            self._owner = me
            try:
                return self._glue.run(coro)
            finally:
                with self._end_lock:
                    self._owner = None

    def is_running(self) -> bool:
        """True while some thread runs a call (a snapshot: it may end at once)."""
        return self._owner is not None

    def in_call(self) -> bool:
        """True when the current thread is inside a call (from a callback it runs)."""
        return self._owner == threading.get_ident()

    @property
    def end_lock(self) -> threading.Lock:
        """Held while a call ends; cancel.py holds it while it sends a CancelRequest."""
        return self._end_lock

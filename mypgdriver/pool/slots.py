"""The pool's core: what a slot holds, and the line of acquires waiting for one.

A pool has ``max_size`` slots; a slot is the right to have one connection
open or being opened.  When a connection is released or a slot is freed
while acquires wait, it is handed to exactly one of them (the first in
line): either the connection (a :class:`PooledConnection`) or the empty slot
itself (:data:`NEW_SLOT`), in which the waiter opens a connection.  So a
slot is never free while someone waits, and nobody is woken only to find
nothing there.  :class:`WaitQueue` is that line; the pool decides what to
hand over.
"""
from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Callable, Deque, Optional, Union

from mypgdriver import exceptions
from mypgdriver.connection import Connection

if TYPE_CHECKING:
    from mypgdriver.pool.proxy import PoolConnectionProxy

__all__ = ('NEW_SLOT', 'NewSlot', 'PooledConnection', 'Handoff', 'WaitQueue',
           'acquire_timed_out')


class NewSlot:
    """Handed to a waiter instead of a connection: open one in this slot."""

    __slots__ = ()

    def __repr__(self) -> str:
        return '<new slot>'


#: The one :class:`NewSlot`, compared by identity.
NEW_SLOT = NewSlot()


class PooledConnection:
    """A connection owned by the pool, with what the pool tracks about it."""

    __slots__ = ('con', 'generation', 'queries', 'idle_since', 'proxy', 'shared_calls')

    def __init__(self, con: Connection, generation: int) -> None:
        self.con = con
        self.generation = generation
        self.queries = 0
        self.idle_since = 0.0
        self.proxy: Optional[PoolConnectionProxy] = None
        # Shortcut calls (pool.fetch, ...) running on it; > 0 while it is
        # lent to them rather than acquired (see Pool._shortcut).
        self.shared_calls = 0


#: What a waiting acquire is handed.
Handoff = Union[PooledConnection, NewSlot]


class WaitQueue:
    """The acquires waiting for a connection or a slot, served first come, first served.

    Each waiter owns one future.  A waiter that times out or is cancelled
    leaves the line; if something was handed to it in the same instant, it
    passes that on (through the pool's `give_back`), so nothing handed over
    is ever lost.  ``len()`` counts the waiters not handed anything yet.
    """

    __slots__ = ('_futures', 'waiting')

    def __init__(self) -> None:
        # Only futures not done yet: the first is the next to be served.
        self._futures: Deque[asyncio.Future] = collections.deque()
        #: Acquires waiting right now (including one that was handed
        #: something and has not resumed yet).
        self.waiting = 0

    def __len__(self) -> int:
        return len(self._futures)

    async def wait(self, loop: asyncio.AbstractEventLoop, deadline: Optional[float],
                   timeout_error: Callable[[], BaseException],
                   give_back: Callable[[Handoff], None]) -> Handoff:
        """Wait in line until handed a connection or a slot.

        At `deadline` (loop time; None: never) the waiter leaves the line and
        raises ``timeout_error()``, built at that moment so that it can
        describe the pool as the waiter saw it.  If cancelled just after
        being handed something, the item goes to `give_back`.
        """
        fut = loop.create_future()
        self._futures.append(fut)
        self.waiting += 1
        timer = None
        if deadline is not None:
            timer = loop.call_at(deadline, self._time_out, fut, timeout_error)
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # Something was handed to us as we were cancelled: pass it on.
                give_back(fut.result())
            else:
                self._forget(fut)
            raise
        finally:
            self.waiting -= 1
            if timer is not None:
                timer.cancel()

    def _time_out(self, fut: asyncio.Future, timeout_error: Callable[[], BaseException]) -> None:
        if not fut.done():
            self._forget(fut)
            fut.set_exception(timeout_error())

    def _forget(self, fut: asyncio.Future) -> None:
        try:
            self._futures.remove(fut)
        except ValueError:
            pass

    def hand_over(self, item: Handoff) -> bool:
        """Give `item` to the first waiter; False if nobody waits."""
        futures = self._futures
        while futures:
            fut = futures.popleft()
            if not fut.done():
                fut.set_result(item)
                return True
        return False

    def fail_all(self, message: str) -> None:
        """Make every waiter raise InterfaceError(`message`) (the pool is closing)."""
        futures, self._futures = self._futures, collections.deque()
        for fut in futures:
            if not fut.done():
                fut.set_exception(exceptions.InterfaceError(message))


def acquire_timed_out(timeout: float, *, in_use: int, opening: int, max_size: int,
                      others: int, caller: str) -> asyncio.TimeoutError:
    """The error of an acquire that waited in line for `timeout` seconds in vain.

    It says what held the connections up at that moment: `in_use`
    connections held, `opening` slots still being opened, and `others`
    callers (each a `caller`: 'task' for the asyncio pool, 'thread' for
    mypgdriver.sync's) still waiting in line.  Both pools raise it.
    """
    if opening == 0 and in_use == max_size:
        if max_size == 1:
            held = 'the only connection (max_size=1) is in use and'
        else:
            held = f'all {max_size} connections (max_size={max_size}) are in use and'
    else:
        # Some slots are still being opened (or about to be, by the
        # waiters they were handed to).
        held = (f'{_count(in_use, "connection")} in use and {opening} being opened '
                f'(max_size={max_size}), and')
    if others == 0:
        waiting = f'no other {caller} is waiting'
    elif others == 1:
        waiting = f'1 other {caller} is waiting'
    else:
        waiting = f'{others} other {caller}s are waiting'
    return asyncio.TimeoutError(
        f'pool.acquire() timed out after {timeout:g} s: {held} {waiting}')


def _count(n: int, noun: str) -> str:
    return f'{n} {noun}' if n == 1 else f'{n} {noun}s'

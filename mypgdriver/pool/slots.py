"""How an asyncio acquire waits in the pool core's line: with a future.

The core (mypgdriver/pool/core.pyx) keeps the slots and the line and
decides who is served; this module is the asyncio pool's way to wait in
it: a :class:`FutureWaiter` completes its future when the core hands it a
connection or a slot, and :func:`wait_in_line` awaits it with a deadline.
The sync pool's waiter (mypgdriver/sync/driver/poolcore.pyx) releases a lock.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Optional, Union

from mypgdriver import exceptions
from mypgdriver.pool.core import NEW_SLOT, NewSlot, PoolCore, PooledConnection, Waiter
from mypgdriver.pool.timeouts import acquire_timed_out

__all__ = ('NEW_SLOT', 'NewSlot', 'PooledConnection', 'Handoff', 'FutureWaiter',
           'wait_in_line', 'acquire_timed_out')

#: What a waiting acquire is handed.
Handoff = Union[PooledConnection, NewSlot]


class FutureWaiter(Waiter):
    """A waiting acquire of the asyncio pool: served by completing its future."""

    __slots__ = ('future',)

    def __init__(self, future: asyncio.Future) -> None:
        self.future = future

    def deliver(self, item: Handoff) -> bool:
        # A future already done belongs to a waiter that timed out or was
        # cancelled in the same instant: the item goes to the next one.
        if self.future.done():
            return False
        self.future.set_result(item)
        return True

    def fail(self, message: str) -> None:
        if not self.future.done():
            self.future.set_exception(exceptions.InterfaceError(message))


async def wait_in_line(core: PoolCore, loop: asyncio.AbstractEventLoop,
                       deadline: Optional[float],
                       timeout_error: Callable[[], BaseException],
                       give_back: Callable[[Handoff], None]) -> Handoff:
    """Wait in the core's line until handed a connection or a slot.

    At `deadline` (loop time; None: never) the waiter leaves the line and
    raises ``timeout_error()``, built at that moment so that it can
    describe the pool as the waiter saw it.  If cancelled just after being
    handed something, the item goes to `give_back`, so nothing handed over
    is ever lost.
    """
    fut = loop.create_future()
    waiter = FutureWaiter(fut)
    core.join_line(waiter)
    timer = None
    if deadline is not None:
        timer = loop.call_at(deadline, _time_out, core, waiter, timeout_error)
    try:
        return await fut
    except asyncio.CancelledError:
        if fut.done() and not fut.cancelled():
            # Something was handed to us as we were cancelled: pass it on.
            give_back(fut.result())
        else:
            core.forget(waiter)
        raise
    finally:
        core.resumed()
        if timer is not None:
            timer.cancel()


def _time_out(core: PoolCore, waiter: FutureWaiter,
              timeout_error: Callable[[], BaseException]) -> None:
    if not waiter.future.done():
        core.forget(waiter)
        waiter.future.set_exception(timeout_error())

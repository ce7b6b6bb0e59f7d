"""Waiting without asyncio's module-level helpers: what the policy asks of its loop.

The protocol and the policy (session.py, transaction.py, copy.py, the
connector) wait for Futures, timers and background tasks.  They ask them of
the loop object they were given, and only of these methods: ``time()``,
``create_future()``, ``call_soon()``, ``call_later()`` (a handle with
``cancel()``), ``create_task()`` and ``run_in_executor()``.  An asyncio event
loop has them all; so does the blocking glue of ``mypgdriver.sync``, which
is not an event loop: it runs nothing by itself and waits for each Future by
reading the socket (docs/dev/sync-design.md).

asyncio's module-level helpers (``asyncio.sleep``, ``wait_for``, ``shield``,
``wait``, ``current_task``) need a *running* event loop, so the code waits
through the functions below instead, which need nothing but the loop
object.  For an asyncio loop they behave as the helpers they replace.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

__all__ = ('caller_identity', 'interruption_point', 'sleep', 'wait_done', 'wait_shielded')


def caller_identity(loop: Any) -> Callable[[], Any]:
    """The function telling who is calling (the current asyncio task, or the glue's caller).

    The transaction block's owner and the holder of the line are compared
    with what it returns.  A loop object that is not an event loop says it
    with a ``current_task()`` method of its own.
    """
    own = getattr(loop, 'current_task', None)
    return own if own is not None else asyncio.current_task


async def interruption_point() -> None:
    """Where a feeder of the caller's data receives the protocol's interruption.

    Called once the protocol cancelled the feeding caller (its timeout, a
    public cancel(); see ``BaseProtocol.stream_overdue``): one bare yield,
    at which the event loop (a cancelled task) and the sync glue (an
    interrupted caller) alike throw CancelledError into the coroutine, for
    the Session to turn into the caller's error.
    """
    await asyncio.sleep(0)
    # Not reached while the protocol's interruption is pending; if it was
    # withdrawn, the feeding still stops.
    raise asyncio.CancelledError()


async def sleep(loop: Any, delay: float) -> None:
    """``asyncio.sleep(delay)`` on `loop`."""
    waiter = loop.create_future()
    handle = loop.call_later(delay, _wake, waiter)
    try:
        await waiter
    finally:
        handle.cancel()


async def wait_done(loop: Any, fut: asyncio.Future[Any], timeout: Optional[float]) -> bool:
    """Wait until the Future `fut` is done, at most `timeout` seconds (None: no limit); never cancels it.

    True if it is done.  If the caller is cancelled meanwhile, the
    CancelledError propagates and `fut` goes on (as with ``asyncio.shield``).
    """
    if fut.done():
        return True
    if timeout is not None and timeout <= 0:
        return False
    waiter = loop.create_future()

    def on_done(_: Any) -> None:
        _wake(waiter)
    fut.add_done_callback(on_done)
    handle = None if timeout is None else loop.call_later(timeout, _wake, waiter)
    try:
        await waiter
    finally:
        fut.remove_done_callback(on_done)
        if handle is not None:
            handle.cancel()
    return fut.done()


async def wait_shielded(loop: Any, fut: asyncio.Future[Any], timeout: Optional[float]) -> Any:
    """``asyncio.wait_for(asyncio.shield(fut), timeout)`` for a Future: its result.

    Raises ``asyncio.TimeoutError`` when `timeout` passes first; `fut` is
    never cancelled by this wait.
    """
    if not await wait_done(loop, fut, timeout):
        raise asyncio.TimeoutError()
    return fut.result()


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)

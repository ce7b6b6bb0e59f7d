"""Waiting for state that something else settles, instead of sampling it once.

A backend leaves pg_stat_activity a moment after its client closed, a
proxy's thread closes its sockets after the driver did, a pool's
background thread opens its connection when it gets the CPU: right after
the test's own step the state may not be there yet, the more so on a
loaded machine.  A test polls such state until it holds, with a deadline
generous enough for any machine, then asserts the exact value it got: a
real defect (a leaked socket, a backend left behind) still fails, only
later, with the last value seen in the message.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from typing import Awaitable, Callable, TypeVar, Union

__all__ = ('SETTLE', 'apoll', 'poll')

T = TypeVar('T')

#: Seconds to wait for state to settle: far longer than it takes on a
#: loaded machine (a fraction of a second), and only spent when it never
#: settles, i.e. when the test fails anyway.
SETTLE = 30.0

_INTERVAL = 0.02


def poll(probe: Callable[[], T], until: Callable[[T], bool], *,
         timeout: float = SETTLE, interval: float = _INTERVAL) -> T:
    """Call `probe` until `until` holds for its value, or `timeout` s have passed.

    Returns the last value, for the caller to assert on.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(interval)


async def apoll(probe: Callable[[], Union[T, Awaitable[T]]], until: Callable[[T], bool], *,
                timeout: float = SETTLE, interval: float = _INTERVAL) -> T:
    """`poll` in a coroutine: `probe` may be a coroutine function (a query)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if until(value) or time.monotonic() > deadline:  # type: ignore[arg-type]
            return value  # type: ignore[return-value]
        await asyncio.sleep(interval)

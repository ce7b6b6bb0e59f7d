"""The message of an acquire that waited in line in vain, shared by both pools."""
from __future__ import annotations

import asyncio

__all__ = ('acquire_timed_out',)


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

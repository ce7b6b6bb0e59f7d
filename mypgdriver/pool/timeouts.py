"""How both pools time out: the errors of an acquire that ran out of time, what is retried."""
from __future__ import annotations

import asyncio
from typing import Optional

from mypgdriver import exceptions

__all__ = ('acquire_timed_out', 'opening_timed_out', 'TRANSIENT_CONNECT_ERRORS',
           'DEADLINE_SLACK')

#: Failures to open a connection that mean "the server is not there right
#: now" (refused, reset, starting up, shutting down, full), worth retrying;
#: anything else (bad password, no such database, bad arguments) is raised
#: at once.
TRANSIENT_CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # includes TimeoutError and the driver's ConnectionFailure
    asyncio.TimeoutError,  # an OSError from Python 3.11 on, not before
    exceptions.PostgresConnectionError,
    exceptions.CannotConnectNowError,
    exceptions.AdminShutdownError,
    exceptions.CrashShutdownError,
    exceptions.TooManyConnectionsError,
)

#: A TimeoutError this close to the acquire's deadline is the deadline's own.
DEADLINE_SLACK = 0.001


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


def opening_timed_out(timeout: Optional[float],
                       error: Optional[BaseException]) -> asyncio.TimeoutError:
    """The error of an acquire whose time ran out while opening a connection.

    `error` is the last failure: a refused or failed connection (the server
    away or starting), or None when connecting simply took too long.
    """
    after = '' if timeout is None else f' after {timeout:g} s'
    message = f'pool.acquire() timed out{after} while opening a new connection'
    if error is not None:
        message += f'; last error: {str(error) or type(error).__name__}'
    return asyncio.TimeoutError(message)

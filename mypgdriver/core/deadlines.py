"""Timeouts: how a call's timeout is checked, turned into a deadline, and spent.

Every layer uses these: the Session for operations on a connection, COPY,
cursors and transactions through the Session, and the pool for acquiring,
opening and resetting connections.  A timeout is checked once (before any
state changes), becomes one deadline on the event loop's clock, and each
step of the call gets the time left until that deadline.
"""
from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any, Awaitable, Callable, Optional

from mypgdriver.core import waits

#: How long a call that timed out (or was cancelled) waits, after its
#: deadline, for the server's answer to the CancelRequest sent for its
#: statement, before it raises: then the connection is in sync when the
#: caller gets the error, and ``is_in_transaction()`` is the server's
#: answer.  The answer takes a round trip; past this wait (a stalled
#: network) the call raises all the same and the drain goes on behind it.
CANCEL_ANSWER_WAIT = 0.5

#: How long a stream whose end was sent (executemany's Sync, COPY's
#: CopyDone) and which then timed out waits for the server's answer, which
#: says whether it committed: without one, the connection is closed and
#: the TimeoutError says the outcome is unknown.
COMMIT_ANSWER_WAIT = 1.0


def check_timeout(timeout: Any) -> Optional[float]:
    """`timeout` as a float (or None); TypeError/ValueError for anything else.

    Checked before any protocol state changes, so a bad value leaves the
    connection as it was.  Zero and negative values are valid and expire at
    once (asyncio.TimeoutError), as in asyncpg.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f'timeout must be a number of seconds or None, '
                        f'not {type(timeout).__name__}')
    timeout = float(timeout)
    if math.isnan(timeout):
        raise ValueError('timeout must be a number of seconds, not NaN')
    return timeout


#: The message of a call whose deadline passed between two of its steps (say,
#: after the prepare and before the execute): the step that used the time up
#: gave no error itself.
EXPIRED_BETWEEN_STEPS = 'timed out: the timeout expired before the next step of the call could start'


class Deadline:
    """One call's deadline: made once from its timeout, then asked at each step.

    A public call makes one (``Session.deadline()``, ``start()``) from its
    checked timeout and hands it down through the Session, the admission
    and its COPY, cursor or transaction steps; each step asks it how many
    seconds are left
    (``left()``, the timeout of the protocol operation it sends) instead of
    re-deriving them, so "one deadline per call" holds by construction.  A
    call without a timeout gets the shared NO_DEADLINE, so the common
    untimed call allocates nothing.
    """

    __slots__ = ('timeout', 'at', '_loop')

    def __init__(self, loop: Any, timeout: Optional[float]) -> None:
        #: The call's timeout as given (for messages); None: no deadline.
        self.timeout = timeout
        self._loop = loop
        #: The loop time at which it passes.
        self.at = math.inf if timeout is None else loop.time() + timeout

    def left(self) -> Optional[float]:
        """Seconds left (None: no deadline); TimeoutError once it passed.

        A timeout that was zero or negative from the start is answered as
        is: the protocol then refuses the operation itself, saying which
        operation timed out before it was sent (as in asyncpg).
        """
        timeout = self.timeout
        if timeout is None:
            return None
        if timeout <= 0:
            return timeout
        left = self.at - self._loop.time()
        if left <= 0:
            raise asyncio.TimeoutError(EXPIRED_BETWEEN_STEPS)
        return left

    def expired(self) -> bool:
        """True once the deadline passed (never without one)."""
        return self.timeout is not None and self._loop.time() >= self.at

    def error(self, what: str, outcome: str = '') -> asyncio.TimeoutError:
        """The TimeoutError of `what` timing out, naming the call's own timeout (see timeout_error())."""
        return timeout_error(what, self.timeout, outcome)

    def __repr__(self) -> str:
        return f'<Deadline timeout={self.timeout}>' if self.timeout is not None else (
            '<Deadline: none>')


#: The deadline of every call without a timeout (shared: nothing is allocated).
NO_DEADLINE = Deadline(None, None)


def start(loop: Any, timeout: Optional[float]) -> Deadline:
    """The deadline of a call with the (checked) `timeout`, starting now; NO_DEADLINE for None."""
    return NO_DEADLINE if timeout is None else Deadline(loop, timeout)


def deadline(loop: asyncio.AbstractEventLoop, timeout: Optional[float]) -> Optional[float]:
    """The loop time at which `timeout` seconds from now run out (None: no deadline).

    For the pool and the connector, which wait on loop timers (call_at);
    operations on a connection use a Deadline (start()).
    """
    return None if timeout is None else loop.time() + timeout


def time_left(loop: asyncio.AbstractEventLoop, deadline: Optional[float]) -> Optional[float]:
    """Seconds until `deadline` (None: no deadline); TimeoutError once it passed (see deadline())."""
    if deadline is None:
        return None
    left = deadline - loop.time()
    if left <= 0:
        raise asyncio.TimeoutError(EXPIRED_BETWEEN_STEPS)
    return left


def format_seconds(seconds: float) -> str:
    """`seconds` for a message: at most two decimals, no trailing zeros ('0.5', '2', '0.001')."""
    text = f'{seconds:.2f}'.rstrip('0').rstrip('.')
    if text in ('0', '-0') and seconds != 0:
        # Too small for two decimals: say how small, not "0".
        text = f'{seconds:.1g}'
    return text


def timeout_error(what: str, seconds: Optional[float], outcome: str = '') -> asyncio.TimeoutError:
    """The TimeoutError saying that `what` timed out after `seconds`, and what became of it.

    Built only when a timeout is raised, never on the way of a call that
    finishes in time.  ``timeout_error('query', 0.5, 'the statement was
    cancelled on the server')`` says ``query timed out after 0.5 s; the
    statement was cancelled on the server``.
    """
    text = f'{what} timed out' if seconds is None else (
        f'{what} timed out after {format_seconds(seconds)} s')
    if outcome:
        text = f'{text}; {outcome}'
    return asyncio.TimeoutError(text)


async def within(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[Any],
                 timeout: Optional[float],
                 on_late_result: Optional[Callable[[Any], None]] = None,
                 what: str = 'operation') -> Any:
    """Await something that is not an operation of ours, for at most `timeout` seconds.

    Operations on a connection carry their own timeout (the protocol cancels
    and drains them); this is for the rest: opening a connection, a user's
    reset callback.  Unlike ``asyncio.wait_for`` on Python < 3.12, a result
    that arrives just as the timeout fires is not lost: it is passed to
    `on_late_result` (to close a connection opened too late).  The
    TimeoutError names `what` and the timeout.
    """
    if timeout is None:
        return await awaitable
    if timeout <= 0:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise timeout_error(what, timeout)
    # (the loop's own create_task and a wait of waits.py: this runs on the
    # blocking glue of mypgdriver.sync too, which is not an event loop)
    if asyncio.isfuture(awaitable):
        task = awaitable
    else:
        task = loop.create_task(
            awaitable if inspect.iscoroutine(awaitable) else _awaited(awaitable))
    try:
        done = await waits.wait_done(loop, task, timeout)
    except asyncio.CancelledError:
        _give_up(task, on_late_result)
        raise
    if not done:
        _give_up(task, on_late_result)
        raise timeout_error(what, timeout)
    return task.result()


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _give_up(task: asyncio.Future, on_late_result: Optional[Callable[[Any], None]]) -> None:
    task.cancel()

    def check_late(task: asyncio.Future) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        if on_late_result is not None:
            on_late_result(task.result())
    task.add_done_callback(check_late)

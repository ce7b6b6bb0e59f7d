"""Notifications, server log messages and termination: the callbacks a Connection runs.

The protocol reports these events from inside its message loop.  Callbacks
never run there: each one is scheduled on the event loop (``call_soon``, in
arrival order; a coroutine function is started as a task), so a slow,
failing or re-entrant callback cannot disturb the connection.  A callback
may be a plain function or a coroutine function; an awaitable it returns
runs as a task.  Termination listeners are scheduled when the connection is
lost (before the calls in flight fail, so they run first), or by close() and
terminate() before they return, as in asyncpg.  Exceptions are passed to the
loop's exception handler, as for any other unhandled callback error.
"""
from __future__ import annotations

import asyncio
import inspect
import warnings
from typing import TYPE_CHECKING, Any, Callable

from mypgdriver import exceptions
from mypgdriver.sql import quote_ident

if TYPE_CHECKING:
    from mypgdriver.connection import Connection
    from mypgdriver.core.session import Session

# The first argument is the connection the callback was added on: a
# Connection, or the pool's proxy (which type checkers see as one).  The
# result is ignored unless it is awaitable (then it runs as a task).
NotificationCallback = Callable[['Connection', int, str, str], object]
LogCallback = Callable[['Connection', exceptions.PostgresLogMessage], object]
TerminationCallback = Callable[['Connection'], object]

# Tasks of async callbacks still running: the event loop holds tasks only
# weakly, and a callback must not vanish half-way through.
_running_callbacks: set = set()


def _check_callback(callback: Any) -> None:
    if not callable(callback):
        raise exceptions.InterfaceError(
            f'expected a callable or an async def function, got {callback!r}')


def _schedule(loop: asyncio.AbstractEventLoop, kind: str, callback: Callable,
              args: tuple) -> None:
    # A coroutine function is started as a task at once: calling it runs
    # none of its code, and its first step then runs in the same loop
    # iteration as the plain callbacks scheduled with it (as in asyncpg).
    if inspect.iscoroutinefunction(callback):
        _track(loop, kind, callback, asyncio.ensure_future(callback(*args), loop=loop))
    else:
        loop.call_soon(_run_callback, loop, kind, callback, args)


def _track(loop: asyncio.AbstractEventLoop, kind: str, callback: Callable,
           task: asyncio.Future) -> None:
    _running_callbacks.add(task)
    task.add_done_callback(lambda t: _callback_done(loop, kind, callback, t))


def _run_callback(loop: asyncio.AbstractEventLoop, kind: str, callback: Callable,
                  args: tuple) -> None:
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            _track(loop, kind, callback, asyncio.ensure_future(result, loop=loop))
    except Exception as exc:
        _report(loop, kind, callback, exc)


def _callback_done(loop: asyncio.AbstractEventLoop, kind: str, callback: Callable,
                   task: asyncio.Future) -> None:
    _running_callbacks.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        _report(loop, kind, callback, exc)


def _report(loop: asyncio.AbstractEventLoop, kind: str, callback: Callable,
            exc: BaseException) -> None:
    loop.call_exception_handler({
        'message': f'unhandled exception in {kind} callback {callback!r}',
        'exception': exc,
    })


class ListenersMixin:
    """add_listener() and friends (part of Connection).

    The protocol calls _dispatch_notice / _dispatch_notification /
    _dispatch_connection_lost; this mixin turns those into user callbacks.
    Each callback is stored with the object it receives as its first
    argument: the connection, or the pool proxy it was added through (a pool
    checkout's listeners are removed when it ends, see _end_checkout).
    """

    __slots__ = ()

    # Provided by Connection (its __slots__ and methods); declared here,
    # without values, so that type checkers know what the mixin uses.
    _session: Session
    _loop: asyncio.AbstractEventLoop
    # callback -> the object it receives first (the connection or a pool proxy)
    _listeners: dict[str, dict[Callable[..., Any], Any]]
    _log_listeners: dict[Callable[..., Any], Any]
    _termination_listeners: dict[Callable[..., Any], Any]

    if TYPE_CHECKING:
        def is_closed(self) -> bool: ...
        async def execute(self, query: str, *args: object,
                          timeout: float | None = None) -> str: ...

    def _sender(self) -> Any:
        facade = self._session.facade
        return self if facade is None else facade

    # --- LISTEN / NOTIFY ---

    async def add_listener(self, channel: str, callback: NotificationCallback) -> None:
        """Call `callback` for each notification sent on `channel`.

        The callback receives ``(connection, pid, channel, payload)``: the
        server process ID of the notifying session, the channel name and the
        payload string.  Notifications arrive whenever the server sends
        them, also while the connection is otherwise idle.  `channel` is an
        exact (case-sensitive) name; several callbacks may listen on one
        channel, and ``LISTEN`` is sent for the first only.
        """
        if self.is_closed():
            raise exceptions.InterfaceError('cannot perform operation: connection is closed')
        _check_callback(callback)
        sender = self._sender()
        callbacks = self._listeners.get(channel)
        if callbacks is None:
            await self.execute('LISTEN ' + quote_ident(channel))
            callbacks = self._listeners.setdefault(channel, {})
        callbacks[callback] = sender    # a dict: ordered, and a callback counts once

    async def remove_listener(self, channel: str, callback: NotificationCallback) -> None:
        """Stop calling `callback` for `channel`; ``UNLISTEN`` once no callback is left."""
        if self.is_closed():
            return
        callbacks = self._listeners.get(channel)
        if callbacks is None or callback not in callbacks:
            return
        del callbacks[callback]
        if not callbacks:
            del self._listeners[channel]
            await self.execute('UNLISTEN ' + quote_ident(channel))

    # --- NoticeResponse ---

    def add_log_listener(self, callback: LogCallback) -> None:
        """Call `callback` for each message the server logs to this session.

        The callback receives ``(connection, message)``, `message` being a
        :class:`~mypgdriver.exceptions.PostgresLogMessage` (a subclass per
        SQLSTATE, e.g. ``PostgresWarning``) for a WARNING, NOTICE, INFO,
        LOG or DEBUG message, such as ``RAISE NOTICE`` in PL/pgSQL.
        """
        if self.is_closed():
            raise exceptions.InterfaceError('connection is closed')
        _check_callback(callback)
        if callback not in self._log_listeners:
            self._log_listeners[callback] = self._sender()

    def remove_log_listener(self, callback: LogCallback) -> None:
        """Stop calling `callback` for log messages (no error if it was not added)."""
        self._log_listeners.pop(callback, None)

    # --- termination ---

    def add_termination_listener(self, callback: TerminationCallback) -> None:
        """Call ``callback(connection)`` once, when the connection is closed or lost."""
        _check_callback(callback)
        if callback not in self._termination_listeners:
            self._termination_listeners[callback] = self._sender()

    def remove_termination_listener(self, callback: TerminationCallback) -> None:
        """Forget a callback given to :meth:`add_termination_listener`."""
        self._termination_listeners.pop(callback, None)

    # --- pool checkouts ---

    def _end_checkout(self, facade: Any) -> None:
        """A pool checkout ended: forget the callbacks added through `facade`.

        UNLISTEN * (in the reset) stops the server's notifications, but the
        callbacks would otherwise fire for the next user's LISTEN on the same
        channel, with a released proxy.  Like asyncpg, say so: the code that
        added them probably meant to remove them.
        """
        left = []
        for channel, callbacks in list(self._listeners.items()):
            for callback, sender in list(callbacks.items()):
                if sender is facade:
                    del callbacks[callback]
                    left.append(f'notification listener {callback!r} on {channel!r}')
            if not callbacks:
                del self._listeners[channel]
        for kind, registry in (('log listener', self._log_listeners),
                               ('termination listener', self._termination_listeners)):
            for callback, sender in list(registry.items()):
                if sender is facade:
                    del registry[callback]
                    left.append(f'{kind} {callback!r}')
        if left:
            warnings.warn(exceptions.InterfaceWarning(
                f'{", ".join(left)} registered on a pooled connection {facade!r} '
                f'{"was" if len(left) == 1 else "were"} not removed before it was released '
                f'to the pool; removed now'), stacklevel=3)

    # --- from the protocol ---

    def _dispatch_notice(self, message: exceptions.PostgresLogMessage) -> None:
        for callback, sender in self._log_listeners.items():
            _schedule(self._loop, 'log listener', callback, (sender, message))

    def _dispatch_notification(self, pid: int, channel: str, payload: str) -> None:
        callbacks = self._listeners.get(channel)
        if callbacks:
            for callback, sender in callbacks.items():
                _schedule(self._loop, 'notification listener', callback,
                          (sender, pid, channel, payload))

    def _dispatch_connection_lost(self, exc: BaseException | None) -> None:
        self._session.blocks.connection_lost()
        callbacks = list(self._termination_listeners.items())
        # Cleared first: each callback runs once, however the end is reported.
        self._termination_listeners.clear()
        self._listeners.clear()
        self._log_listeners.clear()
        for callback, sender in callbacks:
            _schedule(self._loop, 'termination listener', callback, (sender,))

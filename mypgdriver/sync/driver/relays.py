"""Callbacks of the sync API, relayed from the asyncio Connection's listeners.

The asyncio Connection calls its listeners with itself as the first
argument; a sync callback must receive the sync Connection.  A relay holds
the sync connection weakly (the asyncio connection's listener tables must
not keep it alive) and the user's callback.  The driver runs the relays
in the thread of the call that received the event (see runner.py).
Coroutine functions are refused: nothing would run them.
"""
from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable, Generic, TypeVar

from mypgdriver import exceptions

C = TypeVar('C')


def check_plain_callback(callback: object, kind: str) -> None:
    """Refuse what is not a plain callable: mypgdriver.sync runs no coroutines for callbacks."""
    if not callable(callback):
        raise exceptions.InterfaceError(f'expected a callable {kind}, got {callback!r}')
    if inspect.iscoroutinefunction(callback):
        raise exceptions.InterfaceError(
            f'mypgdriver.sync calls {kind}s as plain functions: {callback!r} is an async '
            f'def function, which nothing would await')


class Relay(Generic[C]):
    """Calls ``callback(connection, *args)`` with the sync connection, while it exists."""

    __slots__ = ('_connection', 'callback')

    def __init__(self, connection: weakref.ref[Any], callback: Callable[..., object]) -> None:
        self._connection = connection
        self.callback = callback

    def __call__(self, _async_connection: Any, *args: Any) -> None:
        connection = self._connection()
        if connection is not None:
            self.callback(connection, *args)


class RelayTable(Generic[C]):
    """The relay of each (key, callback) pair, so that removing a callback finds it."""

    __slots__ = ('_connection', '_relays')

    def __init__(self, connection: C) -> None:
        self._connection = weakref.ref(connection)
        self._relays: dict[tuple[object, Callable[..., object]], Relay[C]] = {}

    def relay(self, key: object, callback: Callable[..., object]) -> Relay[C]:
        """The relay for `callback` under `key` (made once, reused after)."""
        relay = self._relays.get((key, callback))
        if relay is None:
            relay = self._relays[(key, callback)] = Relay(self._connection, callback)
        return relay

    def pop(self, key: object, callback: Callable[..., object]) -> Relay[C]:
        """Forget and return the relay for `callback` under `key`.

        A callback never added gets a relay never added either: removing it
        from the asyncio connection does nothing, as removing an unknown
        callback does.
        """
        relay = self._relays.pop((key, callback), None)
        if relay is None:
            return Relay(self._connection, callback)
        return relay

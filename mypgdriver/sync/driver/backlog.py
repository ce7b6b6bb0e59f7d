"""The notifications of one sync connection until ``notifies()`` yields them: a bounded backlog.

The protocol reports each NotificationResponse from inside the call that
reads it (``Protocol.on_notification``).  The backlog keeps every
notification from the moment the connection is opened, for every channel
the session LISTENs to, until ``notifies()`` yields it: one received
during another call, or between two iterations, is not lost.  It holds at
most NOTIFICATION_BACKLOG notifications; when full, the oldest is dropped
(counted in ``dropped``), so a connection whose notifications nobody
consumes through notifies() (say, one using add_listener() only) does not
grow without bound.

The wait is a coroutine driven by the glue like any call: a Future set by
the notification hook, and a timer (``glue.call_later``) for the timeout.
No thread, no polling: the driver blocks reading the socket.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Deque, Optional

from mypgdriver import exceptions
from mypgdriver.sync.notifications import Notification

if TYPE_CHECKING:
    import asyncio

    from mypgdriver.connection import Connection as AsyncConnection
    from mypgdriver.sync.driver.glue import SyncGlue

__all__ = ('NotificationBacklog', 'NOTIFICATION_BACKLOG')

#: How many notifications wait for notifies() at most (then the oldest go).
NOTIFICATION_BACKLOG = 10_000


class NotificationBacklog:
    """The notifications one connection received and notifies() has not yielded yet."""

    __slots__ = ('_glue', '_pending', '_waiter', 'dropped')

    def __init__(self, glue: SyncGlue, maxlen: int = NOTIFICATION_BACKLOG) -> None:
        self._glue = glue
        self._pending: Deque[Notification] = collections.deque(maxlen=maxlen)
        self._waiter: Optional[asyncio.Future[None]] = None
        #: How many notifications were dropped because the backlog was full.
        self.dropped = 0

    def attach(self, aconn: AsyncConnection) -> None:
        """Receive `aconn`'s notifications (ahead of its listeners, which still run)."""
        proto = aconn._protocol
        forward_notification = proto.on_notification
        forward_lost = proto.on_connection_lost

        def on_notification(pid: int, channel: str, payload: str) -> None:
            self.put(Notification(pid, channel, payload))
            if forward_notification is not None:
                forward_notification(pid, channel, payload)

        def on_connection_lost(exc: Optional[BaseException]) -> None:
            self._wake()
            if forward_lost is not None:
                forward_lost(exc)

        proto.on_notification = on_notification
        proto.on_connection_lost = on_connection_lost

    def put(self, notification: Notification) -> None:
        """Keep `notification` for notifies(); wake a waiting notifies()."""
        pending = self._pending
        if len(pending) == pending.maxlen:
            self.dropped += 1
        pending.append(notification)
        self._wake()

    def __len__(self) -> int:
        return len(self._pending)

    def clear(self) -> None:
        """Drop the notifications not yielded yet (a pool's release: they were the last user's)."""
        self._pending.clear()

    async def next(self, aconn: AsyncConnection, timeout: Optional[float]) -> Optional[Notification]:
        """The oldest notification, waiting up to `timeout` seconds (None: no limit) for one.

        None when the timeout passed first.  Raises
        ConnectionDoesNotExistError if the connection is lost meanwhile.
        """
        pending = self._pending
        if not pending:
            _check_open(aconn)
            glue = self._glue
            waiter: asyncio.Future[None] = glue.create_future()
            timer = None if timeout is None else glue.call_later(max(timeout, 0.0),
                                                                 _resolve, waiter)
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not pending:
                _check_open(aconn)
                return None
        return pending.popleft()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            _resolve(waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _check_open(aconn: AsyncConnection) -> None:
    if aconn.is_closed():
        raise exceptions.ConnectionDoesNotExistError(
            'cannot wait for notifications: the connection is closed')

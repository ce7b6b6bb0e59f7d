"""What ``Connection.notifies()`` yields: a Notification (the backlog is sync/driver/backlog.py)."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ('Notification',)


class Notification(NamedTuple):
    """A notification (``NOTIFY channel, 'payload'``), as ``notifies()`` yields it."""

    #: The server process ID of the session that sent it.
    pid: int
    #: The channel it was sent on.
    channel: str
    #: Its payload ('' when none was given).
    payload: str

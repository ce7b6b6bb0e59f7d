"""Notifications, server log messages and termination: the callbacks a Connection runs."""
from __future__ import annotations


class ListenersMixin:
    """add_listener() and friends (part of Connection).

    The protocol calls _dispatch_notice / _dispatch_notification /
    _dispatch_connection_lost; this mixin turns those into user callbacks.
    """

    __slots__ = ()

    def _dispatch_notice(self, message) -> None:
        pass

    def _dispatch_notification(self, pid: int, channel: str, payload: str) -> None:
        pass

    def _dispatch_connection_lost(self, exc) -> None:
        pass

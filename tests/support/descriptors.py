"""The file descriptors a test left open, counted without racing other threads.

A count of /proc/self/fd taken before and after a call is not a leak check
on its own: other threads (a TCP proxy's pumps, an earlier test's garbage
collected meanwhile) open and close descriptors at the same time, so the
count moves by one either way now and then.  What a test means is "every
descriptor opened since the snapshot is closed again": the descriptors
present now that were not in the snapshot (same number and same object:
a socket's inode, a file's path), less those a helper of the test still
owns, polled until there are none (``tests/support/waiting.py``).
"""
from __future__ import annotations

import os
from typing import Callable, Dict, Iterable

from tests.support.waiting import poll

__all__ = ('HAVE_PROC_FDS', 'Descriptors', 'open_descriptors', 'opened_since')

HAVE_PROC_FDS = os.path.isdir('/proc/self/fd')

#: Descriptor number -> what it is ('socket:[1234]', '/path', 'anon_inode:[eventpoll]').
Descriptors = Dict[int, str]


def open_descriptors() -> Descriptors:
    """The descriptors open in this process now (Linux: /proc/self/fd)."""
    found: Descriptors = {}
    for name in os.listdir('/proc/self/fd'):
        try:
            found[int(name)] = os.readlink(f'/proc/self/fd/{name}')
        except FileNotFoundError:
            pass  # closed meanwhile (by another thread, or listdir's own descriptor)
    return found


def opened_since(snapshot: Descriptors, owned: Callable[[], Iterable[int]] = tuple) -> Descriptors:
    """The descriptors opened since `snapshot` and still open, once none are left.

    `owned` gives the descriptors that something other than the code under
    test holds on purpose (a proxy's sockets): they are not counted.  Waits
    until the answer is empty (up to ``waiting.SETTLE`` s) and returns the
    last one: a test asserts ``opened_since(...) == {}`` and a descriptor
    that is never closed shows in the failure, with what it is.
    """
    def left_open() -> Descriptors:
        now = open_descriptors()
        skip = set(owned())
        return {fd: what for fd, what in now.items()
                if snapshot.get(fd) != what and fd not in skip}
    return poll(left_open, lambda left: not left)

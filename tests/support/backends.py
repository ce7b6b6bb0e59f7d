"""What a server backend is doing, seen from a monitor connection, waited for.

A test that ends a backend "while it runs a statement" must wait until it
does: a fixed sleep after starting the call is too short on a loaded
machine, and a pg_terminate_backend() that reaches a backend which has not
read the statement yet makes the server close the socket under the
client's next write; the client then reports a reset connection instead of
the server's FATAL message.  Likewise a backend leaves pg_stat_activity a
moment after its session ended.  These helpers poll pg_stat_activity (with
``tests/support/waiting.py``'s deadline) and fail with what they saw last.

Each has an asyncio form (an asyncio monitor connection) and a ``_sync``
one (a ``mypgdriver.sync`` monitor connection).
"""
from __future__ import annotations

import os
from typing import Any, Optional

from tests.support.waiting import apoll, poll

__all__ = ('HAVE_PROC_NET_TCP', 'wait_backend_gone', 'wait_backend_gone_sync',
           'wait_client_saw_eof', 'wait_sleeping', 'wait_sleeping_sync')

HAVE_PROC_NET_TCP = os.path.exists('/proc/net/tcp')

# Inside pg_sleep(): the statement has been read and is executing (the wait
# event exists from PostgreSQL 10 on).  'active' alone is not enough: a
# first use is parsed first, during which the backend is active too.
_SLEEPING = ("SELECT state = 'active' AND wait_event = 'PgSleep' "
             "FROM pg_stat_activity WHERE pid = $1")
_PRESENT = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"


def _is_true(value: Optional[bool]) -> bool:
    return value is True


def _is_zero(value: int) -> bool:
    return value == 0


async def wait_sleeping(monitor: Any, pid: int) -> None:
    """Until backend `pid` runs pg_sleep() (the statement started by the test)."""
    assert await apoll(lambda: monitor.fetchval(_SLEEPING, pid), _is_true), \
        f'backend {pid} never started its pg_sleep()'


def wait_sleeping_sync(monitor: Any, pid: int) -> None:
    """`wait_sleeping` with a mypgdriver.sync monitor."""
    assert poll(lambda: monitor.fetchval(_SLEEPING, pid), _is_true), \
        f'backend {pid} never started its pg_sleep()'


async def wait_backend_gone(monitor: Any, pid: int) -> None:
    """Until backend `pid` has left pg_stat_activity (its session ended)."""
    assert await apoll(lambda: monitor.fetchval(_PRESENT, pid), _is_zero) == 0, \
        f'backend {pid} is still there'


def wait_backend_gone_sync(monitor: Any, pid: int) -> None:
    """`wait_backend_gone` with a mypgdriver.sync monitor."""
    assert poll(lambda: monitor.fetchval(_PRESENT, pid), _is_zero) == 0, \
        f'backend {pid} is still there'


_ESTABLISHED = '01'     # the kernel's TCP state numbers (include/net/tcp_states.h)


def _established(local_port: int, remote_port: int) -> bool:
    """Whether this machine has an ESTABLISHED TCP socket local_port -> remote_port."""
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    local, remote, state = line.split()[1:4]
                    if (state == _ESTABLISHED and int(local.rsplit(':', 1)[1], 16) == local_port
                            and int(remote.rsplit(':', 1)[1], 16) == remote_port):
                        return True
        except FileNotFoundError:
            pass
    return False


def wait_client_saw_eof(client_port: int, server_port: int) -> None:
    """Until the client's socket (pg_stat_activity's client_port) got the server's FIN.

    A terminated backend leaves pg_stat_activity a moment before its
    process exits and its socket is closed: to test "a connection whose
    server ended long ago", wait for the end of the stream itself.  (Linux:
    the socket leaves ESTABLISHED for CLOSE_WAIT, or is gone.)
    """
    assert poll(lambda: _established(client_port, server_port), lambda up: not up) is False, \
        f'the connection from port {client_port} never saw the server close it'

"""cancel() and terminate() from any thread, while another thread runs a call.

The connection's glue belongs to the thread running the current call, so
another thread must not touch it (nor the protocol's state).  The
CancelRequest needs only what never changes after the startup: the
backend's process ID and secret key (``Protocol.cancel_request_message()``)
and the address the connection went to.  It is sent by the connector's own
sender (``connector._send_cancel_request``: the same transport kind, TLS
policy and message as the asyncio API's), driven to its end on a fresh
SyncGlue in the cancelling thread, as libpq's ``PQcancel`` does.

libpq's race (a cancel arriving late hits the next statement) is closed by
the CallRunner's end lock: the cancelling thread holds it from the moment it
saw a call running until the server has closed the cancel connection (by
then the backend has been signalled), and a call cannot end, nor the next
one start, meanwhile.  A signal that reaches an idle backend is ignored
by the server.

terminate() from another thread shuts the connection's socket down under
the running call (the only thing another thread may do to it: a system
call on the descriptor, no state of the glue or protocol touched).  The
running thread's wait returns at once with the end of the stream, the call
raises ConnectionDoesNotExistError as for any lost connection, and the
server ends the session (an open transaction rolled back).
"""
from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, cast

from mypgdriver.connecting import connector
from mypgdriver.sync.driver.glue import SyncGlue

if TYPE_CHECKING:
    from mypgdriver.connection import Connection as AsyncConnection
    from mypgdriver.sync.driver.runner import CallRunner


def cancel_running_call(aconn: AsyncConnection, runner: CallRunner) -> bool:
    """Ask the server to cancel the call `runner` is running; False if none runs.

    Blocks until the server has received the request (at most the cancel
    sender's 10 s, plus the time to connect).
    """
    with runner.end_lock:
        if not runner.is_running() or aconn.is_closed():
            return False
        glue = SyncGlue()
        glue.run(connector._send_cancel_request(
            cast(Any, glue), _host_of(aconn), aconn._params, aconn._protocol))
        return True


def shut_down_under_running_call(aconn: AsyncConnection, runner: CallRunner) -> bool:
    """Shut the socket of the call `runner` is running down; False if none runs.

    The call's thread then finds the connection lost and closes it.
    """
    with runner.end_lock:
        if not runner.is_running():
            return False
        transport = aconn._protocol.transport
        sock = getattr(transport, 'sock', None)
        if sock is None:
            return False
        try:
            # The plain socket's shutdown(), also under TLS: SSLSocket's own
            # would unwrap the SSL object under the thread reading it.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            return False    # closed meanwhile: nothing runs on it any more
        return True


def _host_of(aconn: AsyncConnection) -> Any:
    # The HostSpec the connection was opened to: of several hosts, the one
    # the connection describes itself by (Connection._addr).
    for hostspec in aconn._params.hosts:
        if connector.describe_host(hostspec) == aconn._addr:
            return hostspec
    raise RuntimeError(f'mypgdriver.sync: no host of the connection matches {aconn._addr!r}')

"""Opening sockets for the sync glue: TCP and Unix connects and the TLS handshake.

Non-blocking, waited for through the glue's ``wait_io`` so that its timers
(the connector's deadline) and Ctrl-C interrupt them as they do an asyncio
connect; the sockets block afterwards (mypgdriver/sync/driver/transport.pyx).
"""
from __future__ import annotations

import errno
import os
import socket
import ssl
from typing import Any, Awaitable, Callable, Optional

__all__ = ('IOWait', 'connect_tcp', 'connect_unix', 'wrap_tls')

# Waits until a socket is readable (False) or writable (True): the glue's.
IOWait = Callable[[socket.socket, bool], Awaitable[None]]


async def connect_tcp(host: str, port: int, wait_io: IOWait) -> socket.socket:
    """A blocking TCP socket connected to `host`:`port`.

    Each address of the name is tried in turn, as asyncio does.  The
    connect itself is non-blocking, waited for with `wait_io`, so that the
    glue's timers (the connector's deadline) and Ctrl-C interrupt it.  The
    name lookup blocks.
    """
    errors: list[OSError] = []
    for family, kind, proto, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            await _connect(sock, address, wait_io)
        except OSError as exc:
            sock.close()
            errors.append(exc)
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    if len(errors) == 1:
        raise errors[0]
    # asyncio's wording, which the connector recognises (_with_server_question).
    raise OSError(f'Multiple exceptions: {", ".join(str(e) for e in errors)}')


async def connect_unix(path: str, wait_io: IOWait) -> socket.socket:
    """A blocking socket connected to the Unix socket `path` (``\\0...``: abstract)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        await _connect(sock, path, wait_io)
    except BaseException:
        sock.close()
        raise
    return sock


async def _connect(sock: socket.socket, address: Any, wait_io: IOWait) -> None:
    sock.setblocking(False)
    err = sock.connect_ex(address)
    if err in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
        await wait_io(sock, True)
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        # (OSError picks the subclass: ConnectionRefusedError, ...)
        raise OSError(err, f'Connect call failed {address!r}: {os.strerror(err)}')
    sock.setblocking(True)


async def wrap_tls(sock: socket.socket, ctx: ssl.SSLContext, server_hostname: Optional[str],
                   wait_io: IOWait) -> ssl.SSLSocket:
    """Run the TLS handshake over the connected `sock`; the blocking SSLSocket.

    The handshake is non-blocking, waited for with `wait_io` (so the glue's
    timers bound it).  On failure the socket is closed and the error
    (``ssl.SSLCertVerificationError``, ...) raised: the same classes as
    from asyncio's ``start_tls``.
    """
    sock.setblocking(False)
    tls_sock = ctx.wrap_socket(sock, server_hostname=server_hostname,
                               do_handshake_on_connect=False)
    try:
        while True:
            try:
                tls_sock.do_handshake()
                break
            except ssl.SSLWantReadError:
                await wait_io(tls_sock, False)
            except ssl.SSLWantWriteError:
                await wait_io(tls_sock, True)
        tls_sock.setblocking(True)
    except BaseException:
        tls_sock.close()
        raise
    return tls_sock

"""Blocking transports for the sync glue (issue 24): what the protocol and the
connector ask of an asyncio transport, over a blocking socket.

The asyncio API gets its transports from the event loop; ``mypgdriver.sync``
has no event loop, so its glue (``SyncGlue``) opens sockets itself and wraps
them in the classes below.  They give the protocol and the connector the
part of ``asyncio.Transport`` they use (``write``, ``close``, ``abort``,
``is_closing``, ``set_protocol``, ``get_extra_info``, ``pause_reading`` /
``resume_reading``), and the glue the part of an event loop's reader:
``read()`` receives what the socket has and hands it to the protocol.

TLS uses a blocking ``ssl.SSLSocket`` rather than ``SSLObject`` over
``MemoryBIO``: the driver blocks in ``recv()`` anyway, and an SSLSocket
reads, decrypts, encrypts and sends in C with the same two calls as a plain
socket (``recv``, ``sendall``): a query over TLS costs the plain transport's
Python code plus OpenSSL's work.  A MemoryBIO transport needs, per read and
per write, Python code moving bytes between the socket and the BIOs (and a
raised ``SSLWantReadError`` to learn that a read is complete); it is only
worth it once writes become non-blocking (docs/dev/sync-design.md).  The
one thing to mind with an SSLSocket is that decrypted bytes can wait in the
SSL object (``pending()``) where ``select`` does not see them:
``buffered()`` tells the glue to read them before it selects.

Connecting and the TLS handshake are non-blocking, waited for through the
glue (``wait_io``), so that its timers (the connector's deadline) and
Ctrl-C interrupt them as they do an asyncio connect; the socket blocks
afterwards.
"""
from __future__ import annotations

import errno
import os
import socket
import ssl
from typing import Any, Awaitable, Callable, Optional, Protocol

__all__ = ('READ_SIZE', 'SocketTransport', 'TLSTransport', 'connect_tcp', 'connect_unix',
           'wrap_tls')

# Bytes asked of recv() per read (asyncio's selector loop reads 256 KiB).
READ_SIZE = 256 * 1024


class TransportOwner(Protocol):
    """What a transport asks of the glue that reads it."""

    def call_soon(self, callback: Any, *args: Any) -> Any: ...

    def forget_transport(self, transport: 'SocketTransport') -> None: ...


class SocketTransport:
    """An asyncio-like transport over a blocking, connected socket.

    Writes block until the kernel took the bytes (``sendall``): fine while
    the server reads what we send.  A COPY or executemany stream larger than
    both socket buffers could block here while the server blocks writing to
    us; non-blocking writes with a drain waiter are the remedy
    (docs/dev/sync-design.md, "COPY IN / executemany with large input").
    """

    def __init__(self, sock: socket.socket, glue: TransportOwner,
                 protocol: Any = None) -> None:
        self.sock = sock
        self.glue = glue
        self.protocol = protocol
        self.closed = False
        self.reading = True

    # --- what the protocol and the connector use (asyncio.Transport) ---

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == 'socket':
            return self.sock
        if name == 'peername':
            return self.sock.getpeername()
        return default

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_protocol(self) -> Any:
        return self.protocol

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.abort()

    def abort(self) -> None:
        """Close the socket now; the protocol hears of it (connection_lost) from the glue."""
        if self.closed:
            return
        self._finish()
        # The socket is closed at once, not when the glue next runs its
        # callbacks: a sync connection that is dropped must not keep it.
        self.sock.close()
        self.glue.call_soon(self._tell_lost, None)

    # --- what the glue uses ---

    def buffered(self) -> int:
        """Bytes received and not yet read that ``select`` cannot see (none on a plain socket)."""
        return 0

    def read(self) -> None:
        """Receive what the socket has (blocking until something comes) and hand it on.

        End of stream and socket errors close the transport and tell the
        protocol (``connection_lost``), as an event loop does.
        """
        try:
            data = self.sock.recv(READ_SIZE)
        except OSError as exc:     # ssl.SSLError too
            self._lose(exc)
            return
        if data:
            self.protocol.data_received(data)
        else:
            self._lose(None)

    def detach(self) -> socket.socket:
        """Hand the socket over (to a TLS transport, for ``start_tls``); this one is done.

        As with asyncio's ``start_tls``, the old transport is no longer
        usable; its protocol is not told anything.
        """
        self._finish()
        return self.sock

    def _lose(self, exc: Optional[BaseException]) -> None:
        if self.closed:
            return
        self._finish()
        self.sock.close()
        self._tell_lost(exc)

    def _finish(self) -> None:
        self.closed = True
        self.glue.forget_transport(self)

    def _tell_lost(self, exc: Optional[BaseException]) -> None:
        if self.protocol is not None:
            self.protocol.connection_lost(exc)


class TLSTransport(SocketTransport):
    """A SocketTransport over an ``ssl.SSLSocket`` whose handshake is done."""

    sock: ssl.SSLSocket

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        # The names asyncio's SSL transports answer.  The connector reads
        # 'ssl_object' (for the server certificate, SCRAM channel binding):
        # an SSLSocket has the SSLObject methods it calls.
        if name == 'ssl_object':
            return self.sock
        if name == 'sslcontext':
            return self.sock.context
        if name == 'peercert':
            return self.sock.getpeercert()
        if name == 'cipher':
            return self.sock.cipher()
        if name == 'compression':
            return self.sock.compression()
        return super().get_extra_info(name, default)

    def buffered(self) -> int:
        # Decrypted bytes waiting in OpenSSL: recv() returns them without a
        # read on the socket, and select() does not see them.
        return self.sock.pending()


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

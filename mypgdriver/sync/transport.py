"""Blocking transports for the sync glue (issue 24): what the protocol and the
connector ask of an asyncio transport, over a blocking socket.

The asyncio API gets its transports from the event loop; ``mypgdriver.sync``
has no event loop, so its glue (``SyncGlue``) opens sockets itself and wraps
them in the classes below.  They give the protocol and the connector the
part of ``asyncio.Transport`` they use (``write``, ``close``, ``abort``,
``is_closing``, ``set_protocol``, ``get_extra_info``, ``pause_reading`` /
``resume_reading``), and the glue the part of an event loop's reader:
``read()`` receives what the socket has and hands it to the protocol.

Writes never block.  ``write()`` sends what the socket takes at once and
keeps the rest in an output buffer; above ``WRITE_HIGH_WATER`` bytes it
calls the protocol's ``pause_writing()`` (the COPY and executemany feeders
then await the protocol's drain waiter), below ``WRITE_LOW_WATER`` its
``resume_writing()``.  The glue's driver, whenever it waits, waits for the
socket to be readable *or* (with output buffered) writable, flushes and
reads meanwhile: a stream larger than both socket buffers cannot deadlock
against a server that is itself blocked writing to us (notices, an early
error), as a blocking ``sendall`` did.

Reads block in the common case: a query is sent with one non-blocking
``send()`` and its answer awaited with one blocking ``recv()`` (the driver
polls only when a timer is pending, output is buffered or several sockets
are open).  A plain socket stays in blocking mode and is written with
``MSG_DONTWAIT``, so neither costs a mode switch.

TLS uses an ``ssl.SSLSocket`` rather than ``SSLObject`` over ``MemoryBIO``:
an SSLSocket reads, decrypts, encrypts and sends in C with the same calls as
a plain socket, where a MemoryBIO transport moves every record between the
socket and the BIOs in Python.  An SSLSocket takes no ``MSG_DONTWAIT``, so
the TLS transport switches the socket to non-blocking to write and back to
blocking for the driver's blocking read (one ``ioctl`` each, only when the
mode changes).  A non-blocking SSL write can want to read
(``SSLWantReadError``, e.g. a key update) or to write
(``SSLWantWriteError``); either way OpenSSL requires the same write to be
repeated, which the transport does (``_retry_size``) once the driver saw
the socket readable, or writable.  Decrypted bytes can wait in the SSL
object (``pending()``) where ``poll`` does not see them: ``buffered()``
tells the glue to read them before it polls.

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

__all__ = ('READ_SIZE', 'WRITE_HIGH_WATER', 'WRITE_LOW_WATER', 'SocketTransport',
           'TLSTransport', 'connect_tcp', 'connect_unix', 'wrap_tls')

# Bytes asked of recv() per read (asyncio's selector loop reads 256 KiB).
READ_SIZE = 256 * 1024

# Output buffered above which the protocol is told to pause writing, and
# below which to resume.  Higher than asyncio's 64 KiB / 16 KiB: the
# feeders write in chunks of 256 KiB to 1 MiB (copy.py), and each pause
# costs a wait of the driver.
WRITE_HIGH_WATER = 1024 * 1024
WRITE_LOW_WATER = 256 * 1024

# The largest write handed to OpenSSL at once (it makes 16 KiB records).
TLS_WRITE_SIZE = 256 * 1024

# send()/recv() flag "do not wait" (Linux, the BSDs, macOS); without it the
# socket is switched to non-blocking mode around the call instead.
_DONTWAIT = getattr(socket, 'MSG_DONTWAIT', 0)


class TransportOwner(Protocol):
    """What a transport asks of the glue that reads it."""

    def call_soon(self, callback: Any, *args: Any) -> Any: ...

    def forget_transport(self, transport: 'SocketTransport') -> None: ...


class SocketTransport:
    """An asyncio-like transport over a connected socket: reads may block, writes never do.

    What the socket does not take at once waits in ``out``, flushed by the
    glue's driver when the socket is writable (``flush()``).
    """

    def __init__(self, sock: socket.socket, glue: TransportOwner,
                 protocol: Any = None) -> None:
        self.sock = sock
        self.glue = glue
        self.protocol = protocol
        self.closed = False
        self.reading = True
        # Written and not yet taken by the socket, in order.  (A bytearray
        # drops sent bytes from its front without moving the rest.)
        self.out = bytearray()
        self.writing_paused = False
        # The buffered output waits for the socket to be readable, not
        # writable (a TLS write that wants to read first).
        self.flush_needs_read = False
        # The socket's mode: blocking unless a write or a polled read
        # switched it (only where MSG_DONTWAIT is missing, and for TLS).
        self.blocking = True

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

    def write(self, data: Any) -> None:
        """Send what the socket takes now; keep the rest for the driver to flush."""
        if self.closed:
            return
        out = self.out
        if out:
            out += data     # behind what waits already: order is kept
        else:
            try:
                sent = self._send(data)
            except OSError as exc:
                self._fail_later(exc)
                return
            if sent == len(data):
                return      # the usual case: one send(), nothing kept
            out += memoryview(data).cast('B')[sent:]
        if not self.writing_paused and len(out) > WRITE_HIGH_WATER:
            self.writing_paused = True
            self.protocol.pause_writing()

    def get_write_buffer_size(self) -> int:
        return len(self.out)

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        # What the socket takes now of the buffered output (a Terminate
        # behind it) goes; the rest is dropped with the connection.
        if self.out and not self.closed:
            self.flush()
        self.abort()

    def abort(self) -> None:
        """Close the socket now; the protocol hears of it (connection_lost) from the glue."""
        # The socket is closed at once, not when the glue next runs its
        # callbacks: a sync connection that is dropped must not keep it.
        self._fail_later(None)

    # --- what the glue uses ---

    def buffered(self) -> int:
        """Bytes received and not yet read that ``select`` cannot see (none on a plain socket)."""
        return 0

    def read(self) -> None:
        """Receive what the socket has (blocking until something comes) and hand it on.

        Only called with no output buffered.  End of stream and socket
        errors close the transport and tell the protocol
        (``connection_lost``), as an event loop does.
        """
        if not self.blocking:
            self._set_blocking(True)
        try:
            data = self.sock.recv(READ_SIZE)
        except OSError as exc:     # ssl.SSLError too
            self._lose(exc)
            return
        if data:
            self.protocol.data_received(data)
        else:
            self._lose(None)

    def read_ready(self) -> None:
        """Receive what the socket has without waiting (the driver saw it readable)."""
        try:
            if _DONTWAIT:
                data = self.sock.recv(READ_SIZE, _DONTWAIT)
            else:
                if self.blocking:
                    self._set_blocking(False)
                data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if data:
            self.protocol.data_received(data)
        else:
            self._lose(None)

    def flush(self) -> None:
        """Send what the socket takes now of the buffered output (the driver saw it writable).

        Below the low-water mark the protocol is told to resume writing
        (its drain waiter is woken).
        """
        out = self.out
        try:
            while out:
                sent = self._send(out)
                if not sent:
                    break
                del out[:sent]
        except OSError as exc:
            self._lose(exc)
            return
        if self.writing_paused and len(out) <= WRITE_LOW_WATER:
            self.writing_paused = False
            self.protocol.resume_writing()

    def _send(self, data: Any) -> int:
        # Bytes of `data` the socket took without waiting (0: none).
        try:
            if _DONTWAIT:
                return self.sock.send(data, _DONTWAIT)
            if self.blocking:
                self._set_blocking(False)
            return self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0

    def _set_blocking(self, blocking: bool) -> None:
        self.sock.setblocking(blocking)
        self.blocking = blocking

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

    def _fail_later(self, exc: BaseException | None) -> None:
        # A write failed: inside the protocol's own code, which must not
        # hear of it re-entrantly; it is told from the glue (as asyncio does).
        if self.closed:
            return
        self._finish()
        self.sock.close()
        self.glue.call_soon(self._tell_lost, exc)

    def _finish(self) -> None:
        self.closed = True
        self.glue.forget_transport(self)

    def _tell_lost(self, exc: Optional[BaseException]) -> None:
        if self.protocol is not None:
            self.protocol.connection_lost(exc)


class TLSTransport(SocketTransport):
    """A SocketTransport over an ``ssl.SSLSocket`` whose handshake is done."""

    sock: ssl.SSLSocket

    def __init__(self, sock: ssl.SSLSocket, glue: TransportOwner,
                 protocol: Any = None) -> None:
        super().__init__(sock, glue, protocol)
        # The size of an SSL write that wanted to read or write: OpenSSL
        # requires the same write again (the same bytes: those at the
        # front of `out`, which only grows at its end).
        self._retry_size = 0

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
        # read on the socket, and poll() does not see them.
        return self.sock.pending()

    def read_ready(self) -> None:
        if self.blocking:
            self._set_blocking(False)
        try:
            data = self.sock.recv(READ_SIZE)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return      # a partial record: the rest comes with the next poll
        except OSError as exc:
            self._lose(exc)
            return
        if data:
            self.protocol.data_received(data)
        else:
            self._lose(None)

    def _send(self, data: Any) -> int:
        if self.blocking:
            self._set_blocking(False)
        size = self._retry_size or min(len(data), TLS_WRITE_SIZE)
        try:
            sent = self.sock.send(data if size == len(data) else data[:size])
        except ssl.SSLWantWriteError:
            self._retry_size = size
            self.flush_needs_read = False
            return 0
        except ssl.SSLWantReadError:
            self._retry_size = size
            self.flush_needs_read = True
            return 0
        self._retry_size = 0
        self.flush_needs_read = False
        return sent


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

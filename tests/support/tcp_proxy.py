"""A TCP proxy that misbehaves on request, and a port that never answers.

The proxy runs in threads, independent of any event loop, so a test can
drive a driver connection through it while the proxy cuts or stalls the
stream underneath.  It forwards bytes unchanged, so TLS passes through too.
It can also hold a CancelRequest back (``hold_cancel``), like a slow
network in front of the cancel connection: it only delays bytes.
"""
from __future__ import annotations

import socket
import struct
import threading
from typing import Callable, Iterator

_CHUNK = 65536
# A CancelRequest opens its connection with its length and this code
# (PostgreSQL docs, "Message Formats": CancelRequest).
CANCEL_REQUEST_CODE = 80877102


class HeldCancel:
    """A CancelRequest connection seen by the proxy, and what became of it."""

    def __init__(self) -> None:
        self.forwarded = threading.Event()       # sent on to the server
        self.server_closed = threading.Event()   # the server closed it (it has handled it)


class _ProxiedConnection:
    """One client connection and its upstream socket, pumped by two threads."""

    def __init__(self, proxy: "TcpProxy", client: socket.socket, upstream: socket.socket,
                 index: int) -> None:
        self.proxy = proxy
        self.index = index
        self.client = client
        self.upstream = upstream
        self.first_bytes = b""
        # Set when the client opened with a CancelRequest (see TcpProxy.hold_cancel).
        self.cancel: HeldCancel | None = None
        # Bytes still allowed from server to client before the proxy cuts
        # the connection; None means no limit.
        self.cut_remaining: int | None = None
        self.cut_with_reset = False
        self.closed = threading.Event()         # closing has begun: the pumps stop
        self._sockets_closed = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        for src, dst, upstream_bound in ((self.client, self.upstream, True),
                                         (self.upstream, self.client, False)):
            threading.Thread(target=self._pump, args=(src, dst, upstream_bound),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, upstream_bound: bool) -> None:
        try:
            while not self.closed.is_set():
                data = src.recv(_CHUNK)
                if not data:
                    if not upstream_bound and self.cancel is not None:
                        self.proxy.log('cancel closed by the server')
                        self.cancel.server_closed.set()
                    break
                if upstream_bound and len(self.first_bytes) < 8:
                    self.first_bytes += data[:8 - len(self.first_bytes)]
                    if self.proxy.hold_cancel is not None:
                        data = self._hold_if_cancel(src, data, self.proxy.hold_cancel)
                elif upstream_bound and self.cancel is None:
                    self.proxy.log(f'client bytes on connection {self.index}')
                # A stalled proxy holds what it read: nothing moves, nothing closes.
                while not self.proxy._flowing.wait(0.05):
                    if self.closed.is_set():
                        return
                if not upstream_bound:
                    with self._lock:
                        limit = self.cut_remaining
                        if limit is not None:
                            data = data[:limit]
                            self.cut_remaining = limit - len(data)
                    if data:
                        dst.sendall(data)
                    if limit is not None and self.cut_remaining == 0:
                        break
                else:
                    dst.sendall(data)
        except OSError:
            pass
        self.close()

    def _hold_if_cancel(self, src: socket.socket, data: bytes,
                        hold: Callable[[], None]) -> bytes:
        """Read the whole 8-byte opening; hold it if it starts a CancelRequest.

        Returns the bytes read so far, to forward.
        """
        while len(self.first_bytes) < 8:
            more = src.recv(_CHUNK)
            if not more:
                break
            self.first_bytes += more[:8 - len(self.first_bytes)]
            data += more
        if len(self.first_bytes) == 8:
            length, code = struct.unpack("!ii", self.first_bytes)
            if code == CANCEL_REQUEST_CODE and length >= 16:
                self.cancel = HeldCancel()
                self.proxy.cancels.append(self.cancel)
                self.proxy.log('cancel received')
                hold()
                self.proxy.log('cancel forwarded')
                self.cancel.forwarded.set()
        return data

    def close(self) -> None:
        """Close both sockets; when this returns, they are closed.

        Whoever comes second (a pump thread and the test's thread may both
        close) waits for the first to finish: a proxy must not leave its
        sockets to be closed by a thread of a test that is over, in the
        middle of the next test's count of open descriptors.
        """
        with self._lock:
            first = not self.closed.is_set()
            self.closed.set()
        if not first:
            self._sockets_closed.wait()
            return
        try:
            for sock in (self.client, self.upstream):
                try:
                    if self.cut_with_reset and sock is self.client:
                        # Linger 0: the close sends RST instead of FIN.  SHUT_RD
                        # sends nothing but wakes the other pump thread out of
                        # recv(); until it leaves, the kernel would not close.
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        sock.shutdown(socket.SHUT_RD)
                    else:
                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
        finally:
            self._sockets_closed.set()


class TcpProxy:
    """Forwards 127.0.0.1:<port> to (target_host, target_port).

    - ``cut_after(n)``: every open connection forwards at most n more bytes
      from the server, then both sides are closed (mid-message, if n says so);
      ``cut_new_after`` does the same for connections accepted later;
    - ``drop()``: close every open connection at once;
    - ``stall()`` / ``resume()``: stop moving bytes in both directions while
      keeping every socket open, like a peer that stops answering;
    - ``first_bytes``: the first 8 bytes each client sent (e.g. an SSLRequest
      or a CancelRequest), in accept order;
    - ``hold_cancel``: called in the proxy's thread when a client opens with
      a CancelRequest (in plain text), before it is forwarded: the request
      reaches the server when it returns.  Each such connection is in
      ``cancels`` (a HeldCancel: when it was forwarded, when the server
      closed it), and ``events`` lists, in the order they happened, each
      CancelRequest received, forwarded and closed by the server, and each
      chunk of bytes other clients sent after their opening message.
    """

    def __init__(self, target_host: str, target_port: int, *,
                 cut_new_after: int | None = None,
                 hold_cancel: Callable[[], None] | None = None) -> None:
        self.target = (target_host, target_port)
        self.hold_cancel = hold_cancel
        self.cancels: list[HeldCancel] = []
        self.events: list[str] = []
        self._events_lock = threading.Lock()
        # Applied to connections accepted from now on (see cut_after).
        self.cut_new_after = cut_new_after
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self.connections: list[_ProxiedConnection] = []
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        # Orders close() with the accept loop's registering of a connection.
        self._accepting = threading.Lock()
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self._acceptor.start()

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def log(self, event: str) -> None:
        with self._events_lock:
            self.events.append(event)

    @property
    def first_bytes(self) -> list[bytes]:
        return [c.first_bytes for c in self.connections]

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._accepting:
                if self._closed:
                    # Accepted as the proxy closed: not forwarded, not left open.
                    client.close()
                    upstream.close()
                    return
                conn = _ProxiedConnection(self, client, upstream, len(self.connections))
                conn.cut_remaining = self.cut_new_after
                self.connections.append(conn)
            conn.start()

    def cut_after(self, nbytes: int, *, reset: bool = False) -> None:
        """Let each open connection pass `nbytes` more server bytes, then close it."""
        for conn in self.connections:
            with conn._lock:
                conn.cut_remaining = nbytes
                conn.cut_with_reset = reset

    def drop(self, *, reset: bool = False) -> None:
        """Close every open connection now (FIN, or RST with `reset`)."""
        for conn in self.connections:
            conn.cut_with_reset = reset
            conn.close()

    def stall(self) -> None:
        """Stop forwarding in both directions; sockets stay open."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        """Close the listener and every connection: when this returns, no socket is open.

        (The accept loop may be in accept() or connecting upstream: it is
        waited for, and closes what it gets from then on.)
        """
        with self._accepting:
            self._closed = True
        self._flowing.set()
        try:
            # shutdown() wakes a thread blocked in accept(); close() alone does not.
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        self._acceptor.join()
        for conn in self.connections:
            conn.close()


class SilentPort:
    """A listening port whose connections complete the TCP handshake (in the
    kernel backlog) and then never see a byte: a server that hangs."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port: int = self._sock.getsockname()[1]

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "SilentPort":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections (bound, never listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()

"""A tiny listener that records how a client opens a direct-TLS connection.

PostgreSQL 17 accepts TLS straight away, without an SSLRequest, when the
client offers the 'postgresql' ALPN protocol; the PostgreSQL 15 server the
tests run against cannot, so this listener stands in for it.  For each
connection it records the first bytes on the socket and the ClientHello's
ALPN list and server name; with `handshake=True` it then completes TLS,
reads the first message sent inside it (the StartupMessage), and closes.
"""
from __future__ import annotations

import dataclasses
import socket
import ssl
import struct
import threading
import time

_TLS_HANDSHAKE_RECORD = 0x16
_CLIENT_HELLO = 0x01
_EXT_SERVER_NAME = 0
_EXT_ALPN = 16


@dataclasses.dataclass
class ClientHelloInfo:
    """What one client sent first."""

    first_bytes: bytes
    is_client_hello: bool = False
    alpn: list[str] | None = None          # None: no ALPN extension
    server_name: str | None = None
    selected_alpn: str | None = None       # after a completed handshake
    first_message: bytes | None = None     # first bytes sent inside TLS
    error: str | None = None


def parse_client_hello(record: bytes) -> ClientHelloInfo:
    """Parse one TLS record holding a ClientHello (RFC 8446 section 4.1.2)."""
    info = ClientHelloInfo(first_bytes=record[:16])
    if len(record) < 9 or record[0] != _TLS_HANDSHAKE_RECORD or record[5] != _CLIENT_HELLO:
        return info
    info.is_client_hello = True
    body = record[9:]
    pos = 2 + 32                              # legacy_version, random
    pos += 1 + body[pos]                      # session id
    pos += 2 + struct.unpack_from("!H", body, pos)[0]   # cipher suites
    pos += 1 + body[pos]                      # compression methods
    if pos >= len(body):
        return info
    end = pos + 2 + struct.unpack_from("!H", body, pos)[0]
    pos += 2
    while pos + 4 <= end:
        ext_type, ext_len = struct.unpack_from("!HH", body, pos)
        data = body[pos + 4:pos + 4 + ext_len]
        pos += 4 + ext_len
        if ext_type == _EXT_ALPN:
            names, i = [], 2
            while i < len(data):
                n = data[i]
                names.append(data[i + 1:i + 1 + n].decode("ascii"))
                i += 1 + n
            info.alpn = names
        elif ext_type == _EXT_SERVER_NAME and len(data) > 5:
            n = struct.unpack_from("!H", data, 3)[0]
            info.server_name = data[5:5 + n].decode("ascii")
    return info


class DirectTlsListener:
    """Listens on 127.0.0.1; records each client's opening (see module doc)."""

    def __init__(self, *, certfile: str | None = None, keyfile: str | None = None,
                 handshake: bool = False) -> None:
        self.handshake = handshake
        self._ctx: ssl.SSLContext | None = None
        if handshake:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            ctx.set_alpn_protocols(["postgresql"])
            self._ctx = ctx
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        self.clients: list[ClientHelloInfo] = []
        self._done = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> "DirectTlsListener":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def wait_for_clients(self, count: int, timeout: float = 5.0) -> list[ClientHelloInfo]:
        """Block until `count` connections were fully recorded (or the timeout)."""
        with self._done:
            self._done.wait_for(lambda: len(self.clients) >= count, timeout)
            return list(self.clients)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            info = self._record(conn)
            with self._done:
                self.clients.append(info)
                self._done.notify_all()

    def _record(self, conn: socket.socket) -> ClientHelloInfo:
        conn.settimeout(5)
        try:
            record = self._peek_record(conn)
            info = parse_client_hello(record)
            if self.handshake and info.is_client_hello and self._ctx is not None:
                tls = self._ctx.wrap_socket(conn, server_side=True)
                info.selected_alpn = tls.selected_alpn_protocol()
                info.first_message = tls.recv(8192)
                tls.close()
        except (OSError, ValueError, IndexError, struct.error) as e:
            info = locals().get("info") or ClientHelloInfo(first_bytes=b"")
            info.error = f"{type(e).__name__}: {e}"
        finally:
            conn.close()
        return info

    @staticmethod
    def _peek_record(conn: socket.socket) -> bytes:
        # MSG_PEEK leaves the bytes in place for the TLS handshake that may follow.
        deadline = time.monotonic() + 5
        data = b""
        while time.monotonic() < deadline:
            data = conn.recv(16384, socket.MSG_PEEK)
            if not data:
                break
            if len(data) >= 5:
                if data[0] != _TLS_HANDSHAKE_RECORD:
                    return data
                if len(data) >= 5 + struct.unpack_from("!H", data, 3)[0]:
                    return data
            time.sleep(0.005)
        return data

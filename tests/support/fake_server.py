"""A fake PostgreSQL listener that answers the SSLRequest with scripted bytes.

For what a real server never does: accept TLS and then stall, or put
plaintext bytes right after its 'S' (CVE-2021-23222), or answer with
something that is neither 'S' nor 'N'.
"""
from __future__ import annotations

import socket
import threading


class ScriptedSslAnswer:
    """Reads the 8-byte SSLRequest, sends `answer`, then keeps the socket open
    (silent) until closed."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self._clients: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> "ScriptedSslAnswer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._clients.append(conn)
            try:
                conn.settimeout(5)
                request = b""
                while len(request) < 8:
                    chunk = conn.recv(8 - len(request))
                    if not chunk:
                        break
                    request += chunk
                self.requests.append(request)
                conn.sendall(self.answer)
            except OSError:
                pass

    def close(self) -> None:
        self._sock.close()
        for conn in self._clients:
            conn.close()


class StallingAuthServer:
    """Answers an SSLRequest with 'N', reads the StartupMessage, asks for a
    cleartext password, reads it, and then never answers again: a server
    that hangs in the middle of authentication."""

    def __init__(self) -> None:
        self.passwords: list[bytes] = []
        self._clients: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> "StallingAuthServer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def _read_exact(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("client went away")
            data += chunk
        return data

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._clients.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            length = int.from_bytes(self._read_exact(conn, 4), "big")
            body = self._read_exact(conn, length - 4)
            if body[:4] == (80877103).to_bytes(4, "big"):    # SSLRequest
                conn.sendall(b"N")
                length = int.from_bytes(self._read_exact(conn, 4), "big")
                self._read_exact(conn, length - 4)
            # AuthenticationCleartextPassword
            conn.sendall(b"R" + (8).to_bytes(4, "big") + (3).to_bytes(4, "big"))
            kind = self._read_exact(conn, 1)
            length = int.from_bytes(self._read_exact(conn, 4), "big")
            if kind == b"p":
                self.passwords.append(self._read_exact(conn, length - 4))
        except (OSError, ConnectionError):
            pass

    def close(self) -> None:
        self._sock.close()
        for conn in self._clients:
            conn.close()

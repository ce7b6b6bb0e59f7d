"""Fake PostgreSQL listeners that answer the SSLRequest with scripted bytes.

For what a real server never does: accept TLS and then stall, or put
plaintext bytes right after its 'S' (CVE-2021-23222), or answer with
something that is neither 'S' nor 'N'; and a recording server that shows
what each attempt of an sslmode allow/prefer connection sent.
"""
from __future__ import annotations

import dataclasses
import socket
import ssl
import struct
import threading
from collections.abc import Sequence


class _Listener:
    """A listening socket on 127.0.0.1 whose connections `_serve` handles, in a thread.

    Each accepted connection is passed to `_on_client` (in a thread of its
    own when `threaded`); close() closes the listener and every client.
    """

    threaded = True

    def __init__(self) -> None:
        self._clients: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> "_Listener":
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
            if self.threaded:
                threading.Thread(target=self._on_client, args=(conn,), daemon=True).start()
            else:
                self._on_client(conn)

    def _on_client(self, conn: socket.socket) -> None:
        raise NotImplementedError

    @staticmethod
    def _read_exact(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("client went away")
            data += chunk
        return data

    def close(self) -> None:
        self._sock.close()
        for conn in self._clients:
            try:
                conn.close()
            except OSError:
                pass


class ScriptedSslAnswer(_Listener):
    """Reads the 8-byte SSLRequest, sends `answer`, then keeps the socket open
    (silent) until closed."""

    threaded = False

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        super().__init__()

    def __enter__(self) -> "ScriptedSslAnswer":
        return self

    def _on_client(self, conn: socket.socket) -> None:
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


class StallingAuthServer(_Listener):
    """Answers an SSLRequest with 'N', reads the StartupMessage, asks for a
    cleartext password, reads it, and then never answers again: a server
    that hangs in the middle of authentication."""

    def __init__(self) -> None:
        self.passwords: list[bytes] = []
        super().__init__()

    def __enter__(self) -> "StallingAuthServer":
        return self

    def _on_client(self, conn: socket.socket) -> None:
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


#: A step of a RecordingStartupServer reply: ask for a cleartext password
#: (AuthenticationCleartextPassword) and read the client's PasswordMessage.
ASK_PASSWORD = "ask-password"
#: A step that closes the connection at once (a server that goes away).
HANG_UP = "hang-up"

_SSL_REQUEST_CODE = (80877103).to_bytes(4, "big")


@dataclasses.dataclass
class StartupAttempt:
    """What one client connection to a RecordingStartupServer did."""

    ssl_requested: bool = False
    tls: bool = False                       # the TLS handshake completed
    startup: bytes | None = None            # the StartupMessage's body
    passwords: list[bytes] = dataclasses.field(default_factory=list)   # 'p' bodies


class RecordingStartupServer(_Listener):
    """A fake server for the sslmode allow/prefer tests: it plays one reply per
    transport and records what every connection sent (StartupAttempt).

    An SSLRequest is answered 'S' when `tls_context` (a server SSLContext) is
    given, else 'N'.  After 'S', `tls_handshake` says what happens:
    'complete', or the server reads the ClientHello and closes ('eof') or
    resets the connection ('reset').  After the StartupMessage, the steps of
    `tls_reply` or `plain_reply` are played: bytes are sent, ASK_PASSWORD
    asks for a password and reads it, HANG_UP closes the connection.  Then
    the server reads until the client closes.
    """

    def __init__(self, *, tls_context: ssl.SSLContext | None = None,
                 tls_handshake: str = "complete", tls_reply: Sequence[object] = (),
                 plain_reply: Sequence[object] = ()) -> None:
        self.tls_context = tls_context
        self.tls_handshake = tls_handshake
        self.tls_reply = list(tls_reply)
        self.plain_reply = list(plain_reply)
        self.attempts: list[StartupAttempt] = []
        super().__init__()

    def __enter__(self) -> "RecordingStartupServer":
        return self

    def _on_client(self, conn: socket.socket) -> None:
        attempt = StartupAttempt()
        self.attempts.append(attempt)
        self._handle(conn, attempt)

    def _read_packet(self, conn: socket.socket) -> bytes:
        length = int.from_bytes(self._read_exact(conn, 4), "big")
        return self._read_exact(conn, length - 4)

    def _handle(self, conn: socket.socket, attempt: StartupAttempt) -> None:
        try:
            conn.settimeout(10)
            body = self._read_packet(conn)
            if body[:4] == _SSL_REQUEST_CODE:
                attempt.ssl_requested = True
                if self.tls_context is None:
                    conn.sendall(b"N")
                else:
                    conn.sendall(b"S")
                    if self.tls_handshake != "complete":
                        conn.recv(16384)        # the ClientHello
                        if self.tls_handshake == "reset":
                            # Linger 0: close() sends RST instead of FIN.
                            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                            struct.pack("ii", 1, 0))
                        conn.close()
                        return
                    conn = self.tls_context.wrap_socket(conn, server_side=True)
                    self._clients.append(conn)
                    attempt.tls = True
                body = self._read_packet(conn)
            attempt.startup = body
            for step in self.tls_reply if attempt.tls else self.plain_reply:
                if step == ASK_PASSWORD:
                    conn.sendall(b"R" + (8).to_bytes(4, "big") + (3).to_bytes(4, "big"))
                    kind = self._read_exact(conn, 1)
                    password = self._read_packet(conn)
                    if kind == b"p":
                        attempt.passwords.append(password)
                elif step == HANG_UP:
                    return
                else:
                    assert isinstance(step, bytes)
                    conn.sendall(step)
            while conn.recv(8192):
                pass
        except (OSError, ConnectionError, ValueError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

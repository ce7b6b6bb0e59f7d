"""pgbouncer for the tests: the 1.25 build (prepared statements in transaction mode).

``pgbouncer_125()`` gives the binary built by tools/pgbouncer.py, or skips
the test saying why when no source tarball is available.  With a tarball (as
in CI) a failed build fails the test instead: those tests must run there.

``ClientMessageRecorder`` is a TCP proxy that parses what the client sends
(message type and body), so a test can check which protocol messages the
driver used, e.g. Close rather than SQL DEALLOCATE.
"""
from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest

from tools.pgbouncer import PgbouncerUnavailable, build_pgbouncer, find_tarball

#: Server connections per (database, user) pool: the clients share these.
SERVER_POOL_SIZE = 10
#: Named statements pgbouncer keeps per server connection (max_prepared_statements).
MAX_PREPARED_STATEMENTS = 200

_built: dict[str, Path] = {}

# Request codes of the untyped packets that precede a StartupMessage.
_ENCRYPTION_REQUESTS = (80877103, 80877104)


def pgbouncer_125() -> Path:
    """The pgbouncer binary built from the source tarball; skips when there is none."""
    if "binary" not in _built:
        try:
            tarball = find_tarball()
        except PgbouncerUnavailable as e:
            pytest.fail(str(e))
        if tarball is None:
            pytest.skip("needs pgbouncer 1.21+ built from source (Debian's 1.18 cannot carry "
                        "prepared statements in transaction mode), and no tarball was found: "
                        "set MYPGDRIVER_PGBOUNCER_TARBALL to a pgbouncer-*.tar.gz")
        try:
            _built["binary"] = build_pgbouncer(tarball)
        except PgbouncerUnavailable as e:
            pytest.fail(f"pgbouncer could not be built from {tarball}: {e}")
    return _built["binary"]


def transaction_pool_settings(max_clients: int) -> dict[str, object]:
    """pgbouncer settings of the tests: transaction pooling with prepared statements."""
    return {
        "pool_mode": "transaction",
        "max_prepared_statements": MAX_PREPARED_STATEMENTS,
        "default_pool_size": SERVER_POOL_SIZE,
        "max_client_conn": max_clients,
        # Accepting 200+ clients in a burst is the point of the test.
        "listen_backlog": 1024,
    }


class ClientMessageRecorder:
    """A proxy to `target` that records each (type byte, body) the client sends.

    The untyped packets opening each connection (SSLRequest, StartupMessage)
    are skipped.
    Use as a context manager; ``port`` is where clients connect.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.messages: list[tuple[bytes, bytes]] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def __enter__(self) -> "ClientMessageRecorder":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        pending = b""
        startup_seen = False
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                if not record:
                    continue
                pending += data
                while True:
                    if not startup_seen:
                        if len(pending) < 4:
                            break
                        length = struct.unpack("!i", pending[:4])[0]
                        if len(pending) < length:
                            break
                        code = struct.unpack("!i", pending[4:8])[0] if length >= 8 else 0
                        pending = pending[length:]
                        # SSLRequest / GSSENCRequest come before the StartupMessage.
                        startup_seen = code not in _ENCRYPTION_REQUESTS
                        continue
                    if len(pending) < 5:
                        break
                    length = struct.unpack("!i", pending[1:5])[0]
                    if len(pending) < 1 + length:
                        break
                    with self._lock:
                        self.messages.append((pending[:1], pending[5:1 + length]))
                    pending = pending[1 + length:]
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def sent(self, kind: bytes) -> list[bytes]:
        """Bodies of the messages of type `kind` sent so far."""
        with self._lock:
            return [body for k, body in self.messages if k == kind]

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._sockets:
            sock.close()


def sql_sent(recorder: ClientMessageRecorder) -> list[str]:
    """The SQL of every Query and Parse message the clients sent."""
    texts = [body[:-1] for body in recorder.sent(b"Q")]
    texts += [body.split(b"\0", 2)[1] for body in recorder.sent(b"P")]
    return [t.decode(errors="replace") for t in texts]

"""pgbouncer for the tests: the binary installed on the machine (tools/pgbouncer.py).

``installed_pgbouncer()`` gives that binary with its version (found once per
test session: ``MYPGDRIVER_PGBOUNCER``, else ``pgbouncer`` on PATH, else
Debian's), or skips the test saying why when there is none (``./dev.sh``
installs Debian's package, so CI always has one).  ``require_pgbouncer()``
also skips a test of a behaviour that the pgbouncer found is too old for,
naming its version and how to give a newer one.  CI runs Debian's 1.18: the
tests of 1.21+ behaviour run where a newer binary is given, e.g.::

    MYPGDRIVER_PGBOUNCER=/path/to/pgbouncer ./dev.sh test tests/test_pooler_prepared.py

``ClientMessageRecorder`` is a TCP proxy that parses what the client sends
(message type and body), so a test can check which protocol messages the
driver used, e.g. Close rather than SQL DEALLOCATE.
"""
from __future__ import annotations

import socket
import struct
import threading
from typing import Optional

import pytest

from tools.pgbouncer import (
    PGBOUNCER_ENV,
    PREPARED_STATEMENTS,
    PgbouncerBinary,
    PgbouncerNotFound,
    PgbouncerUnavailable,
    find_pgbouncer,
)

#: Server connections per (database, user) pool: the clients share these.
SERVER_POOL_SIZE = 10
#: Named statements pgbouncer keeps per server connection (max_prepared_statements).
MAX_PREPARED_STATEMENTS = 200

# The binary found, or why there is none: looked up once per session.
_found: list[PgbouncerBinary | PgbouncerUnavailable] = []

# Request codes of the untyped packets that precede a StartupMessage.
_ENCRYPTION_REQUESTS = (80877103, 80877104)


def _version(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def installed_pgbouncer() -> PgbouncerBinary:
    """The pgbouncer binary the tests run; skips the test when there is none.

    A binary that is there but does not work (or a ``MYPGDRIVER_PGBOUNCER``
    that names no pgbouncer) fails the test instead: it must not turn the
    pooler tests into skips unnoticed.
    """
    if not _found:
        try:
            _found.append(find_pgbouncer())
        except PgbouncerUnavailable as e:
            _found.append(e)
    found = _found[0]
    if isinstance(found, PgbouncerNotFound):
        pytest.skip(str(found))
    if isinstance(found, PgbouncerUnavailable):
        pytest.fail(str(found))
    return found


def require_pgbouncer(version: tuple[int, ...], behaviour: str) -> PgbouncerBinary:
    """installed_pgbouncer() if it is `version` or newer; else skip, saying why.

    `behaviour` says what the test needs that version for, e.g.
    ``"max_prepared_statements"``.
    """
    binary = installed_pgbouncer()
    if not binary.at_least(version):
        pytest.skip(f"needs pgbouncer {_version(version)}+ ({behaviour}); the one found is "
                    f"{binary.describe()}: give a newer one with "
                    f"{PGBOUNCER_ENV}=/path/to/pgbouncer")
    return binary


def transaction_pool_settings(binary: PgbouncerBinary, max_clients: int,
                              max_prepared_statements: Optional[int] = None
                              ) -> dict[str, object]:
    """pgbouncer settings of the tests: transaction pooling, 10 server connections.

    With a pgbouncer that has ``max_prepared_statements`` (1.21+) it is set
    (to MAX_PREPARED_STATEMENTS unless given: 0 turns the tracking off);
    older ones do not know the setting and never carry statements.
    """
    settings: dict[str, object] = {
        "pool_mode": "transaction",
        "default_pool_size": SERVER_POOL_SIZE,
        "max_client_conn": max_clients,
        # Accepting 200+ clients in a burst is the point of the test.
        "listen_backlog": 1024,
    }
    if binary.at_least(PREPARED_STATEMENTS):
        settings["max_prepared_statements"] = (
            MAX_PREPARED_STATEMENTS if max_prepared_statements is None
            else max_prepared_statements)
    return settings


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

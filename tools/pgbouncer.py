"""pgbouncer for tests and benchmarks: the binary installed on the machine, run in front of a server.

Standard library only.

The project never builds a pooler: it runs the pgbouncer it finds, first
found wins:

1. ``MYPGDRIVER_PGBOUNCER``, the path of a pgbouncer binary (how to run the
   tests of 1.21+ behaviour with a pgbouncer newer than the system's);
2. ``pgbouncer`` on ``PATH``;
3. ``/usr/sbin/pgbouncer``, where Debian's package puts it (``./dev.sh``
   installs that package when neither of the above is there: 1.18 on
   Debian 12, which cannot carry prepared statements in transaction mode).

``find_pgbouncer()`` gives the binary with its version, read from
``pgbouncer --version``; ``PgbouncerBinary.at_least()`` compares it with the
first versions of the behaviours tests depend on (``PREPARED_STATEMENTS``,
``DROPS_STATEMENTS_ON_DISCARD``, ``NEGOTIATES_PROTOCOL_VERSION``)::

    python -m tools.pgbouncer            # prints the binary's path and version

``Pgbouncer`` runs a binary with a generated configuration in front of a
server, as the ``postgres`` user when root (pgbouncer refuses to run as
root), until ``stop()``.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

__all__ = [
    "DROPS_STATEMENTS_ON_DISCARD",
    "NEGOTIATES_PROTOCOL_VERSION",
    "PGBOUNCER_ENV",
    "PREPARED_STATEMENTS",
    "Pgbouncer",
    "PgbouncerBinary",
    "PgbouncerNotFound",
    "PgbouncerUnavailable",
    "find_pgbouncer",
    "main",
    "pgbouncer_version",
]

#: The environment variable naming the pgbouncer binary to use.
PGBOUNCER_ENV = "MYPGDRIVER_PGBOUNCER"
#: Where Debian's ``pgbouncer`` package installs the binary (not on a user's PATH).
DEBIAN_PGBOUNCER = Path("/usr/sbin/pgbouncer")

# The first version of each pgbouncer behaviour that tests and the benchmark
# depend on (pgbouncer's changelog).
#: ``max_prepared_statements``: named statements prepared with Parse are
#: tracked per client and carried across server connections in transaction mode.
PREPARED_STATEMENTS = (1, 21)
#: ``DISCARD ALL`` / ``DEALLOCATE ALL`` make pgbouncer forget the client's
#: tracked statements too (a later Bind of one closes the client connection).
DROPS_STATEMENTS_ON_DISCARD = (1, 22)
#: A StartupMessage asking for protocol 3.2 is answered with
#: NegotiateProtocolVersion 3.0 (pgbouncer pull request 1007, merged in May
#: 2024, first released in 1.23); older versions close the connection with
#: "bad packet header" (1.18 does; the 1.25 the tests ran with before negotiates).
NEGOTIATES_PROTOCOL_VERSION = (1, 23)

_VERSION = re.compile(r"PgBouncer\s+(\d+(?:\.\d+)*)", re.IGNORECASE)


class PgbouncerUnavailable(RuntimeError):
    """No usable pgbouncer binary, or it did not start; the message says which and why."""


class PgbouncerNotFound(PgbouncerUnavailable):
    """No pgbouncer binary anywhere it is looked for (as opposed to one that does not work)."""


@dataclass(frozen=True)
class PgbouncerBinary:
    """A pgbouncer binary and the version it reports."""

    path: Path
    #: The version as numbers, e.g. ``(1, 18, 0)``.
    version: tuple[int, ...]
    #: The first line of ``pgbouncer --version``, e.g. ``'PgBouncer 1.18.0'``.
    banner: str

    def at_least(self, version: tuple[int, ...]) -> bool:
        """Whether this pgbouncer is `version` (e.g. ``(1, 21)``) or newer."""
        return self.version >= version

    def describe(self) -> str:
        """What and where it is, for messages: ``'PgBouncer 1.18.0 (/usr/sbin/pgbouncer)'``."""
        return f"{self.banner} ({self.path})"


def pgbouncer_version(binary: os.PathLike[str] | str) -> tuple[str, tuple[int, ...]]:
    """(the first line of ``pgbouncer --version``, the version in it as numbers).

    Raises PgbouncerUnavailable when the binary does not run or does not
    say a version.
    """
    try:
        done = subprocess.run([os.fspath(binary), "--version"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PgbouncerUnavailable(f"{binary} --version: {e}") from e
    output = (done.stdout or done.stderr).strip()
    match = _VERSION.search(output)
    if done.returncode != 0 or match is None:
        raise PgbouncerUnavailable(
            f"{binary} --version said no pgbouncer version (exit status {done.returncode}): "
            f"{output[:300]!r}")
    return output.splitlines()[0].strip(), tuple(int(part) for part in match.group(1).split("."))


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_pgbouncer() -> PgbouncerBinary:
    """The pgbouncer to use (see the module's docstring), with its version.

    Raises PgbouncerNotFound saying where it looked when there is none, and
    PgbouncerUnavailable when the binary found does not say its version or
    ``MYPGDRIVER_PGBOUNCER`` names something that is not a pgbouncer binary:
    a binary asked for by name is never replaced by another one silently.
    """
    given = os.environ.get(PGBOUNCER_ENV)
    if given:
        path = Path(given).expanduser()
        if not _is_executable(path):
            raise PgbouncerUnavailable(f"{PGBOUNCER_ENV}={given} is not an executable file")
        banner, version = pgbouncer_version(path)
        return PgbouncerBinary(path.resolve(), version, banner)
    on_path = shutil.which("pgbouncer")
    candidates = [Path(on_path)] if on_path else []
    for path in (*candidates, DEBIAN_PGBOUNCER):
        if _is_executable(path):
            banner, version = pgbouncer_version(path)
            return PgbouncerBinary(path, version, banner)
    raise PgbouncerNotFound(
        f"no pgbouncer found: not {PGBOUNCER_ENV}, not on PATH, not {DEBIAN_PGBOUNCER}; "
        f"install Debian's package (apt-get install pgbouncer; ./dev.sh does it) or set "
        f"{PGBOUNCER_ENV}=/path/to/pgbouncer")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pgbouncer:
    """One pgbouncer process in front of the server at `host`:`port`, database `database`.

    `settings` are added to (and override) the ``[pgbouncer]`` section, e.g.
    ``pool_mode``, ``default_pool_size``, ``max_prepared_statements``.
    Clients connect to ``127.0.0.1``:``self.port`` as one of `users` (trust
    authentication, and pgbouncer logs in to the server as that user) with
    the same database name.  Use as a context manager,
    or call start() and stop().
    """

    def __init__(self, binary: PgbouncerBinary | os.PathLike[str] | str, host: str, port: int,
                 *, users: Sequence[str] = ("postgres",), database: str = "postgres",
                 settings: Optional[dict[str, object]] = None) -> None:
        self.binary = binary.path if isinstance(binary, PgbouncerBinary) else Path(binary)
        self.upstream = (host, port)
        self.users = tuple(users)
        self.database = database
        self.settings: dict[str, object] = {
            "listen_addr": "127.0.0.1",
            "unix_socket_dir": "",
            "auth_type": "trust",
            "pool_mode": "transaction",
            "server_reset_query": "",
            # A test's bursts of connections must not wait for the login rate limit.
            "server_login_retry": 1,
            **(settings or {}),
        }
        self.port = 0
        self.workdir: Optional[Path] = None
        self.logfile: Optional[Path] = None
        self._proc: Optional[subprocess.Popen[bytes]] = None

    def __enter__(self) -> "Pgbouncer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Write the configuration, start pgbouncer and wait until it accepts connections."""
        run_as = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        self.workdir = workdir = Path(tempfile.mkdtemp(prefix="mypg-pgbouncer-"))
        self.port = _free_port()
        self.logfile = workdir / "pgbouncer.log"
        host, port = self.upstream
        (workdir / "userlist.txt").write_text("".join(f'"{user}" ""\n' for user in self.users))
        settings = dict(self.settings, listen_port=self.port, logfile=self.logfile,
                        auth_file=workdir / "userlist.txt")
        (workdir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"{self.database} = host={host} port={port} dbname={self.database}\n\n"
            "[pgbouncer]\n"
            + "".join(f"{key} = {value}\n" for key, value in settings.items()))
        binary = self.binary
        if run_as is not None:
            # A binary given with MYPGDRIVER_PGBOUNCER may be under root's
            # home, which the postgres user cannot enter: it runs a copy.
            binary = workdir / "pgbouncer"
            shutil.copy2(self.binary, binary)
            for path in (workdir, *workdir.iterdir()):
                os.chown(path, run_as.pw_uid, run_as.pw_gid)
        # Its stderr goes to a file: a pipe nobody reads would fill and block it.
        with open(workdir / "stderr.log", "wb") as stderr:
            self._proc = subprocess.Popen(
                [str(binary), str(workdir / "pgbouncer.ini")],
                user=run_as.pw_uid if run_as else None, group=run_as.pw_gid if run_as else None,
                stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            self._wait_listening()
        except BaseException:
            self.stop()
            raise

    def _wait_listening(self) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        assert self.workdir is not None
        stderr = (self.workdir / "stderr.log").read_text(errors="replace")
        raise PgbouncerUnavailable(
            f"pgbouncer did not start listening on port {self.port}:\n"
            f"{stderr[-1000:]}{self.log_text()[-2000:]}")

    def log_text(self) -> str:
        """What pgbouncer wrote to its log so far."""
        if self.logfile is None or not self.logfile.exists():
            return ""
        return self.logfile.read_text(errors="replace")

    def stop(self) -> None:
        """Stop pgbouncer and remove its folder."""
        proc, self._proc = self._proc, None
        if proc is not None:
            # SIGINT, a safe shutdown on every version: it waits for the
            # transactions in progress only.  From 1.23 on, SIGTERM also waits
            # for every client to disconnect: a client a test left open kept
            # the shutdown waiting the whole 10 s below.
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def main(argv: Optional[list[str]] = None) -> int:
    """Print the pgbouncer binary's path and version; exit status 1 and the reason if there is none."""
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.parse_args(argv)
    try:
        binary = find_pgbouncer()
    except PgbouncerUnavailable as e:
        print(f"pgbouncer: {e}", file=sys.stderr)
        return 1
    print(f"{binary.path}\t{binary.banner}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

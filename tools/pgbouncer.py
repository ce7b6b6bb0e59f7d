"""pgbouncer for tests and benchmarks: built from a source tarball once, run in front of a server.

Standard library only.

Debian ships pgbouncer 1.18, which cannot carry prepared statements in
transaction mode (``max_prepared_statements`` came in 1.21).  The tests and
the benchmark of that mode build a newer pgbouncer from its source tarball::

    python -m tools.pgbouncer            # prints the binary's path

Where the tarball comes from, first found wins:

1. ``MYPGDRIVER_PGBOUNCER_TARBALL`` (a path to ``pgbouncer-<version>.tar.gz``);
2. ``<repository>/../shared/vendor/pgbouncer-*.tar.gz``;
3. ``/work/shared/vendor/pgbouncer-*.tar.gz`` (this machine's vendor folder:
   CI runs a clean clone of the repository at an unknown path).

The binary goes to ``${XDG_CACHE_HOME:-~/.cache}/mypgdriver/pgbouncer-<version>/bin/``,
next to a stamp holding the tarball's SHA-256: a later call with the same
tarball only checks the stamp, a different tarball of the same version is
rebuilt.  Missing build tools (meson, ninja-build, libevent-dev, libssl-dev,
pkg-config) are installed with apt-get when running as root.  A file lock
keeps concurrent callers (pytest workers, the benchmark) from building twice.

``Pgbouncer`` runs a binary (this one or Debian's) with a generated
configuration in front of a server, as the ``postgres`` user when root
(pgbouncer refuses to run as root), until ``stop()``.
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

__all__ = ["Pgbouncer", "PgbouncerUnavailable", "build_pgbouncer", "find_tarball", "main"]

TARBALL_ENV = "MYPGDRIVER_PGBOUNCER_TARBALL"

#: Debian packages the build needs, with what shows that each is there.
BUILD_DEPENDENCIES: dict[str, Callable[[], bool]] = {
    "meson": lambda: shutil.which("meson") is not None,
    "ninja-build": lambda: shutil.which("ninja") is not None,
    "pkg-config": lambda: shutil.which("pkg-config") is not None,
    "libevent-dev": lambda: _pkg_config_has("libevent"),
    "libssl-dev": lambda: _pkg_config_has("openssl"),
}

_REPO_ROOT = Path(__file__).resolve().parent.parent
_VENDOR_DIRS = (_REPO_ROOT.parent / "shared" / "vendor", Path("/work/shared/vendor"))
_TARBALL_NAME = re.compile(r"pgbouncer-(\d+(?:\.\d+)*)\.tar\.gz$")
# Each step of a build is given this long (the whole build takes about a minute).
_STEP_TIMEOUT = 900


class PgbouncerUnavailable(RuntimeError):
    """No tarball, or the build failed; the message says which and why."""


def _say(message: str) -> None:
    print(f"pgbouncer: {message}", file=sys.stderr, flush=True)


def _version_key(path: str) -> tuple[int, ...]:
    match = _TARBALL_NAME.search(os.path.basename(path))
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def find_tarball() -> Optional[Path]:
    """The pgbouncer source tarball to build (see the module's docstring), or None."""
    given = os.environ.get(TARBALL_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise PgbouncerUnavailable(f"{TARBALL_ENV}={given} is not a file")
        return path
    for folder in _VENDOR_DIRS:
        found = sorted(glob.glob(str(folder / "pgbouncer-*.tar.gz")), key=_version_key)
        if found:
            return Path(found[-1])
    return None


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/mypgdriver``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mypgdriver"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _pkg_config_has(module: str) -> bool:
    if shutil.which("pkg-config") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", module]).returncode == 0


def _run(cmd: list[str], cwd: Optional[Path] = None) -> None:
    _say("running " + " ".join(cmd))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=_STEP_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PgbouncerUnavailable(f"{' '.join(cmd)}: {e}") from e
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-3000:]
        raise PgbouncerUnavailable(f"{' '.join(cmd)} failed ({done.returncode}):\n{output}")


def ensure_build_dependencies() -> None:
    """Install the missing Debian build dependencies (root and apt-get only)."""
    missing = [name for name, present in BUILD_DEPENDENCIES.items() if not present()]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise PgbouncerUnavailable(
            f"building pgbouncer needs {', '.join(missing)}; install them "
            f"(apt-get install {' '.join(missing)}): that needs root and apt-get")
    _say(f"installing build dependencies: {' '.join(missing)}")
    try:
        _run(["apt-get", "install", "-y", "--no-install-recommends", *missing])
    except PgbouncerUnavailable:
        # A fresh machine may have no package lists yet.
        _run(["apt-get", "update"])
        _run(["apt-get", "install", "-y", "--no-install-recommends", *missing])


def _safe_extract(tarball: Path, dest: Path) -> Path:
    """Extract `tarball` into `dest`; the top folder it made."""
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
        for member in members:
            target = (dest / member.name).resolve()
            if not str(target).startswith(str(dest.resolve()) + os.sep):
                raise PgbouncerUnavailable(f"{tarball}: member {member.name!r} leaves the folder")
        # The 'data' filter (Python 3.12+, backported) also refuses links out of `dest`.
        options = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members, **options)
    tops = {m.name.split("/", 1)[0] for m in members}
    if len(tops) != 1:
        raise PgbouncerUnavailable(f"{tarball}: expected one top-level folder, found {tops}")
    return dest / tops.pop()


def build_pgbouncer(tarball: Optional[Path] = None) -> Path:
    """The path of a pgbouncer binary built from `tarball` (default: find_tarball()).

    Builds it only when the cache has no binary stamped with the tarball's
    hash.  Raises PgbouncerUnavailable saying why when there is no tarball
    or the build fails.
    """
    if tarball is None:
        tarball = find_tarball()
        if tarball is None:
            raise PgbouncerUnavailable(
                f"no pgbouncer source tarball: set {TARBALL_ENV} or put pgbouncer-*.tar.gz in "
                f"{' or '.join(str(d) for d in _VENDOR_DIRS)}")
    match = _TARBALL_NAME.search(tarball.name)
    if match is None:
        raise PgbouncerUnavailable(f"{tarball}: not named pgbouncer-<version>.tar.gz")
    home = cache_root() / f"pgbouncer-{match.group(1)}"
    binary = home / "bin" / "pgbouncer"
    stamp = home / "tarball.sha256"
    digest = _sha256(tarball)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
            return binary
        _say(f"building {tarball.name} into {home}")
        ensure_build_dependencies()
        with tempfile.TemporaryDirectory(dir=home, prefix="build-") as work:
            source = _safe_extract(tarball, Path(work))
            _run(["meson", "setup", "build", "-Dldap=disabled", "-Dpam=disabled",
                  "-Dsystemd=disabled", "-Dcares=disabled"], cwd=source)
            _run(["ninja", "-C", "build"], cwd=source)
            binary.parent.mkdir(exist_ok=True)
            # Replaced whole: a pgbouncer running from the old binary keeps it.
            staged = binary.with_suffix(".new")
            shutil.copy2(source / "build" / "pgbouncer", staged)
            os.replace(staged, binary)
        stamp.write_text(digest + "\n")
        _say(f"built {binary}")
        return binary


def pgbouncer_version(binary: Path) -> str:
    """What ``pgbouncer --version`` says first, e.g. 'PgBouncer 1.25.2'."""
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    return (done.stdout or done.stderr).splitlines()[0].strip()


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

    def __init__(self, binary: os.PathLike[str] | str, host: str, port: int, *,
                 users: Sequence[str] = ("postgres",), database: str = "postgres",
                 settings: Optional[dict[str, object]] = None) -> None:
        self.binary = Path(binary)
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
            # The build cache may be under root's home, which the postgres
            # user cannot enter: it runs a copy.
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
    """Build (if needed) and print the binary's path; exit status 1 and the reason if impossible."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", nargs="?", type=Path,
                        help=f"source tarball (default: ${TARBALL_ENV}, then the vendor folders)")
    args = parser.parse_args(argv)
    try:
        binary = build_pgbouncer(args.tarball)
    except PgbouncerUnavailable as e:
        _say(str(e))
        return 1
    _say(pgbouncer_version(binary))
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

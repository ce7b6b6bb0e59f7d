"""A streaming-replication standby of a tools.pgcluster.PgCluster, for failover tests.

The standby is a file-level copy of the running primary, taken while the
primary is in backup mode (the low-level base backup API: PostgreSQL's
"Making a Base Backup Using the Low Level API"), plus the WAL written
meanwhile, a backup_label, standby.signal and a primary_conninfo, so it
starts as a hot standby streaming from the primary.

This needs only the server's own binaries and a psql, so it works with every
major version of the test matrix, including the npm builds of
tools/pg_versions.py, which ship no pg_basebackup.  A pg_basebackup of
another major is no substitute: Debian's 15 copies a 13 server, but its -R
writes primary_conninfo options (sslsni) that 13's walreceiver rejects, so
that standby never streams; and it cannot copy 16 and later at all.
"""
from __future__ import annotations

import os
import pwd
import select
import shutil
import socket
import subprocess
import tempfile

from tests.support.waiting import poll
from tools.pgcluster import PgCluster, PgClusterError

BACKUP_LABEL = "mypgdriver standby"
_QUERY_TIMEOUT = 60  # seconds for pg_backup_start/stop to answer

# Left out of the copy (PostgreSQL's "Backing Up the Data Directory"): the
# running primary's own files, and directories whose contents the server
# recreates at startup.  pg_wal is filled afterwards with the backup's WAL.
_SKIPPED_TOP_FILES = frozenset({
    "postmaster.pid", "postmaster.opts", "backup_label", "tablespace_map",
    "server.log",  # tools/pgcluster.py's server log lives in the data directory
})
_EMPTIED_DIRS = frozenset({
    "pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial",
    "pg_snapshots", "pg_stat_tmp", "pg_subtrans",
})


def _clean_env() -> dict[str, str]:
    # Inherited PG* variables would change what psql and pg_ctl connect to.
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _is_wal_segment(name: str) -> bool:
    return len(name) == 24 and all(c in "0123456789ABCDEF" for c in name)


class _BackupSession:
    """One psql session on the primary, fed SQL through a pipe.

    Non-exclusive backup mode (the only one left since PostgreSQL 15) lasts
    as long as the session that started it, so the start and stop calls must
    share a connection; psql flushes each result, so a line can be read
    back after each statement.
    """

    def __init__(self, primary: PgCluster) -> None:
        env = _clean_env()
        env.update(PGHOST=primary.sockdir, PGPORT=str(primary.port), PGUSER="postgres",
                   PGDATABASE="postgres", PGCONNECT_TIMEOUT="10")
        self._proc = subprocess.Popen(
            [primary.psql_path, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env)

    def query_line(self, sql: str) -> str:
        """Run one statement returning one single-line value; return that line."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(sql + ";\n")
        self._proc.stdin.flush()
        # One line per statement, so nothing is left buffered behind it and
        # select() on the pipe is reliable; a stuck server fails the test.
        if not select.select([self._proc.stdout], [], [], _QUERY_TIMEOUT)[0]:
            self._proc.kill()
            raise PgClusterError(f"psql on the primary: no answer to {sql!r} "
                                 f"in {_QUERY_TIMEOUT}s")
        line = self._proc.stdout.readline()
        if not line:
            # ON_ERROR_STOP: psql quit, and said why on stderr.
            _, stderr = self._proc.communicate(timeout=30)
            raise PgClusterError(f"psql on the primary failed at {sql!r}:\n{stderr}")
        return line.rstrip("\n")

    def close(self) -> None:
        """End the session (which ends backup mode, if still on)."""
        if self._proc.poll() is None:
            self._proc.communicate(timeout=30)


def _copy_data_directory(source: str, target: str) -> None:
    """Copy a running server's data directory, leaving out what a backup must not hold.

    Files may change or vanish while we copy (a temporary file, a dropped
    table): backup mode makes the replay of the backup's WAL repair that, so
    a vanished file is skipped.  Tablespaces (symlinks in pg_tblspc) are not
    copied; the tests make none.
    """
    for dirpath, dirnames, filenames in os.walk(source):
        relative = os.path.relpath(dirpath, source)
        destination = target if relative == "." else os.path.join(target, relative)
        os.makedirs(destination, mode=0o700, exist_ok=True)
        if relative in _EMPTIED_DIRS:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if not d.startswith("pgsql_tmp")]
        for name in filenames:
            if (relative == "." and name in _SKIPPED_TOP_FILES) or name == "pg_internal.init":
                continue
            try:
                shutil.copy2(os.path.join(dirpath, name), os.path.join(destination, name))
            except FileNotFoundError:
                pass
    # pg_wal/archive_status as pg_basebackup leaves it; the server refuses a
    # data directory that others can read (0700 or 0750 only).
    os.makedirs(os.path.join(target, "pg_wal", "archive_status"), mode=0o700, exist_ok=True)
    os.chmod(target, 0o700)


def _copy_backup_wal(primary_wal: str, standby_wal: str, first: str, last: str) -> None:
    """Copy the WAL segments first..last (and timeline history files) of the primary.

    With them the copy reaches a consistent state on its own, even if the
    primary recycles those segments before the standby connects.
    """
    for name in sorted(os.listdir(primary_wal)):
        if (_is_wal_segment(name) and first <= name <= last) or name.endswith(".history"):
            try:
                shutil.copy2(os.path.join(primary_wal, name), os.path.join(standby_wal, name))
            except FileNotFoundError:
                pass


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
        try:
            self._copy_primary()
        except BaseException:
            shutil.rmtree(self.basedir, ignore_errors=True)
            shutil.rmtree(self.sockdir, ignore_errors=True)
            raise

    def __repr__(self) -> str:
        return f"<Standby of {self.primary.port} on {self.host}:{self.port}>"

    def _copy_primary(self) -> None:
        """Make the data directory: a backup-mode copy of the primary, set up as its standby."""
        if self.primary.version >= 150000:
            start = f"pg_backup_start('{BACKUP_LABEL}', true)"
            stop = "pg_backup_stop(false)"
        else:
            # 13 and 14 name them pg_start/stop_backup; exclusive => false is
            # the non-exclusive mode 15 kept (wait_for_archive: no archiving here).
            start = f"pg_start_backup('{BACKUP_LABEL}', true, false)"
            stop = "pg_stop_backup(false, false)"
        session = _BackupSession(self.primary)
        try:
            # pg_walfile_name: the segments the copy needs, from the backup's
            # checkpoint to its end.
            first_segment = session.query_line(f"SELECT pg_walfile_name({start})")
            _copy_data_directory(self.primary.datadir, self.datadir)
            last_segment, label_hex = session.query_line(
                "SELECT pg_walfile_name(lsn) || ' ' || encode(convert_to(labelfile, 'UTF8'), "
                f"'hex') FROM {stop}").split(" ")
        finally:
            session.close()
        _copy_backup_wal(os.path.join(self.primary.datadir, "pg_wal"),
                         os.path.join(self.datadir, "pg_wal"), first_segment, last_segment)
        # backup_label tells recovery where to start and that it is not
        # consistent before the backup's end record.
        with open(os.path.join(self.datadir, "backup_label"), "wb") as f:
            f.write(bytes.fromhex(label_hex))
        # What pg_basebackup -R writes: standby mode (12+), and where to stream from.
        open(os.path.join(self.datadir, "standby.signal"), "w").close()
        with open(os.path.join(self.datadir, "postgresql.auto.conf"), "a", encoding="utf-8") as f:
            f.write(f"primary_conninfo = 'host={self.primary.host} port={self.primary.port} "
                    f"user=postgres'\n")
        if self._run_as is not None:
            for dirpath, _, filenames in os.walk(self.datadir):
                for path in (dirpath, *(os.path.join(dirpath, n) for n in filenames)):
                    os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

    def _run(self, tool: str, *args: str) -> str:
        # `tool`: a name in the server's bin directory, or a path.
        cmd = [os.path.join(self.bindir, tool), *args]
        if self._run_as is not None:
            cmd = ["runuser", "-u", self._run_as.pw_name, "--", *cmd]
        env = _clean_env()
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
        env = _clean_env()
        env.update(PGHOST=self.host, PGPORT=str(self.port), PGUSER="postgres",
                   PGDATABASE="postgres", PGCONNECT_TIMEOUT="10")
        proc = subprocess.run([self.primary.psql_path, "-X", "-A", "-t", "-q", "-c", sql],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise PgClusterError(proc.stderr)
        return proc.stdout

    def wait_replayed(self, timeout: float = 30) -> None:
        """Wait until everything the primary wrote so far is replayed here."""
        # With synchronous_commit off (tools/pgcluster.py's FAST_SETTINGS) a
        # commit can still sit in the WAL buffers, past the write position,
        # and the insert position may be a page header no record ends at.
        # A synchronous commit of a transaction that wrote WAL (here a
        # logical message, which changes nothing) flushes everything before
        # it, and then the flush position is the end of a record to replay.
        target = self.primary.psql(
            "SET synchronous_commit = on; "
            "SELECT pg_logical_emit_message(true, 'mypgdriver', 'wait_replayed'); "
            "SELECT pg_current_wal_flush_lsn()").split()[-1]
        replayed = poll(lambda: self.psql(
            f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn").strip(),
            lambda answer: answer == "t", timeout=timeout, interval=0.05)
        if replayed != "t":
            raise PgClusterError(f"standby did not replay up to {target} in {timeout}s")

    def destroy(self) -> None:
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.basedir, ignore_errors=True)
            shutil.rmtree(self.sockdir, ignore_errors=True)

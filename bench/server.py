"""The PostgreSQL server the benchmark talks to, and pinning it to a core.

By default a throwaway server from tools/pgcluster.py; with
`MYPGDRIVER_BENCH_DSN` set, that server instead (nothing is started or
stopped, and pinning works only if it runs on this machine).

`tools` is a package beside `bench`: `python -m bench`, run from the
repository root, and pytest (`pythonpath` in pyproject.toml) both have the
root on sys.path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tools.pgcluster import ExternalCluster, PgCluster

REPO_ROOT = Path(__file__).resolve().parent.parent

DSN_ENV = "MYPGDRIVER_BENCH_DSN"

# On top of pgcluster's no-durability defaults: keep background work
# (autovacuum on the COPY tables, checkpoints, JIT compiling a big scan)
# from landing in random cells.
BENCH_SETTINGS: dict[str, Any] = {
    "autovacuum": False,
    "jit": False,
    "shared_buffers": "256MB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "1h",
    # The pool scenario's connect-per-query contender has up to 100 sessions
    # open while the backends of the ones it just closed are still exiting.
    "max_connections": 400,
}


class BenchServer:
    """A running server: how to connect to it, run SQL on it, and pin it."""

    def __init__(self, cluster: Any, params: dict[str, Any]) -> None:
        self.cluster = cluster
        self.params = params
        self.version = self.psql("SHOW server_version").strip()

    @classmethod
    def start(cls, dsn: str | None = None) -> "BenchServer":
        """Use `dsn`, else `$MYPGDRIVER_BENCH_DSN`, else start a throwaway server."""
        dsn = dsn or os.environ.get(DSN_ENV)
        if dsn:
            ext = ExternalCluster(dsn)
            params = {"host": ext.host, "port": ext.port, "user": ext.user, "database": ext.database}
            if ext.password is not None:
                params["password"] = ext.password
            return cls(ext, params)
        cluster = PgCluster(settings=BENCH_SETTINGS)
        cluster.init()
        cluster.start()
        try:
            return cls(cluster, {"host": cluster.host, "port": cluster.port,
                                 "user": "postgres", "database": "postgres"})
        except BaseException:
            cluster.destroy()
            raise

    def stop(self) -> None:
        """Stop and delete a server we started; leave a DSN's server alone."""
        self.cluster.destroy()

    @property
    def description(self) -> str:
        where = "throwaway local server" if self.cluster.is_local else f"${DSN_ENV}"
        return f"PostgreSQL {self.version} ({where})"

    def psql(self, sql: str) -> str:
        """Run SQL as the benchmark's user and return psql's unaligned output."""
        return self.cluster.psql(sql, user=self.params["user"], dbname=self.params["database"])

    def terminate_other_backends(self) -> None:
        """End sessions a failed cell left behind, so they cannot hold locks.

        Only the benchmark's own user and database: on a `$MYPGDRIVER_BENCH_DSN`
        server other people's sessions are not ours to end.
        """
        self.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND usename = current_user AND datname = current_database()"
        )

    def postmaster_pid(self) -> int | None:
        """The postmaster's pid if the server runs on this machine, else None."""
        # The checkpointer lives as long as the server; its parent is the postmaster.
        text = self.psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'").strip()
        if not text:
            return None
        try:
            with open(f"/proc/{int(text)}/stat") as f:
                # Field 4 is the parent pid; split after the ")" closing the name.
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{ppid}/comm") as f:
                return ppid if f.read().strip() in ("postgres", "postmaster") else None
        except (OSError, ValueError, IndexError):
            return None

    def pin(self, cpus: set[int]) -> bool:
        """Run the postmaster and all its children on `cpus`; False if not possible.

        Backends forked later inherit the postmaster's mask, so pinning once
        covers the connections a cell opens afterwards.
        """
        postmaster = self.postmaster_pid()
        if postmaster is None:
            return False
        pids = [postmaster] + children_of(postmaster)
        try:
            for pid in pids:
                try:
                    os.sched_setaffinity(pid, cpus)
                except ProcessLookupError:
                    pass  # a backend that just exited
        except PermissionError:
            return False
        return True


def children_of(parent: int) -> list[int]:
    """Pids whose parent is `parent`, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found

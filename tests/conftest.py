"""Shared fixtures: one throwaway PostgreSQL server per test session.

Set ``MYPGDRIVER_TEST_DSN=postgresql://user:pw@host:port/db`` to run against an
existing server instead; tests that need to change its pg_hba.conf (the
authentication-method roles) then skip via ``pg_cluster.require_local()``.
"""
from __future__ import annotations

import os
import signal
import threading
from typing import Any, AsyncIterator, Iterator

import hypothesis
import pytest

# The repository root is on sys.path by pyproject.toml's pytest `pythonpath`.
from tools.pgcluster import ExternalCluster, PgCluster

# Hypothesis's per-example deadline (200 ms by default) is a timing assertion:
# a loaded machine (a garbage collection of this big process, other work on
# the CPU) exceeds it now and then, and Hypothesis then fails the test as
# flaky.  No property here is about speed.
hypothesis.settings.register_profile('mypgdriver', deadline=None)
hypothesis.settings.load_profile('mypgdriver')

#: Login roles made in the session cluster: name -> (password, pg_hba.conf method).
#: The passwords are not ASCII so that SASLprep and the client encoding of the
#: password are exercised.
AUTH_ROLES: dict[str, tuple[str | None, str]] = {
    "mypg_trust": (None, "trust"),
    "mypg_md5": ("md5-pässword", "md5"),
    "mypg_scram": ("scram-pässword", "scram-sha-256"),
    "mypg_clear": ("clear-pässword", "password"),
}


def pytest_configure(config: pytest.Config) -> None:
    # -m memory: the slower memory-growth checks (tests/test_connect_memory.py).
    config.addinivalue_line("markers", "memory: a memory-growth check (a loop in a child process)")


class DsnCluster(ExternalCluster):
    """The server named by MYPGDRIVER_TEST_DSN; tests needing our own server skip."""

    def require_local(self) -> None:
        pytest.skip("needs a server started by the test suite, but MYPGDRIVER_TEST_DSN is set")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster | DsnCluster]:
    """The session's server: started with AUTH_ROLES, removed at the end."""
    dsn = os.environ.get("MYPGDRIVER_TEST_DSN")
    if dsn:
        yield DsnCluster(dsn)
        return
    cluster = PgCluster()
    try:
        cluster.init()
        cluster.start()
        for name, (password, method) in AUTH_ROLES.items():
            cluster.create_role(name, password, method=method)
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def server_version(pg_cluster: PgCluster | DsnCluster) -> int:
    """The server's server_version_num, e.g. 150004."""
    return pg_cluster.version


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread while the test runs, as in a terminal.

    A process started in the background by a non-interactive shell inherits
    SIGINT ignored, and Python leaves it so: tests that send real SIGINTs
    install Python's default handler themselves (and put back what was there).
    """
    if threading.current_thread() is not threading.main_thread():
        pytest.skip('signals are handled in the main thread')
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def connect_kwargs(pg_cluster: PgCluster | DsnCluster) -> dict[str, Any]:
    """Keyword arguments of ``mypgdriver.connect`` for the superuser over TCP."""
    if isinstance(pg_cluster, ExternalCluster):
        kwargs: dict[str, Any] = dict(
            host=pg_cluster.host, port=pg_cluster.port,
            user=pg_cluster.user, database=pg_cluster.database,
        )
        if pg_cluster.password is not None:
            kwargs["password"] = pg_cluster.password
        return kwargs
    return dict(host=pg_cluster.host, port=pg_cluster.port, user="postgres", database="postgres")


@pytest.fixture
def dsn(pg_cluster: PgCluster | DsnCluster) -> str:
    """The session server's DSN, for the superuser."""
    return pg_cluster.dsn()


@pytest.fixture
def sync_observer(dsn: str) -> Iterator[Any]:
    """A blocking connection of its own, to read the server's state from another session.

    Usable from asyncio tests too: its calls are short, and blocking the
    event loop for them is sometimes the point (a goodbye left unread).
    """
    import mypgdriver.sync  # imported here: the compiled modules may not be built yet

    with mypgdriver.sync.connect(dsn) as connection:
        yield connection


@pytest.fixture
async def conn(connect_kwargs: dict[str, Any]) -> AsyncIterator[Any]:
    """A connection as the superuser, closed after the test."""
    import mypgdriver  # imported here: the compiled modules may not be built yet

    connection = await mypgdriver.connect(**connect_kwargs)
    try:
        yield connection
    finally:
        if not connection.is_closed():
            await connection.close()

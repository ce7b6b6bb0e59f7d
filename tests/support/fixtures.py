"""The suite's shared fixtures, registered by tests/conftest.py's ``pytest_plugins``.

One throwaway PostgreSQL server per test session (or the server named by
``MYPGDRIVER_TEST_DSN``), and the connections tests take from it:

* ``conn`` / ``sync_conn`` / ``dbapi_conn``: one connection as the
  superuser, asyncio, ``mypgdriver.sync`` or ``mypgdriver.dbapi`` (the
  blocking ones with no event loop allowed, see ``no_event_loop``), closed
  after the test;
* ``open_conn`` / ``open_sync_conn`` / ``open_dbapi_conn``: a factory per
  API for tests that open connections of their own (other options, several
  at once); whatever it opened is closed at teardown;
* ``monitor`` (asyncio) and ``sync_observer`` (blocking, usable from
  asyncio tests too): a second session, to read pg_stat_activity or count
  rows as another client sees them;
* ``refused_port`` / ``silent_port``: a TCP port that refuses connections,
  and one that accepts them and never answers.

A test file that needs a connection with a different meaning (other
options, a table made in it) defines it under its own name, not as
``conn``: a reader then knows what ``conn`` is in any file.

The compiled modules are imported inside the fixtures: this module is
loaded before any test, also when they are not built yet.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import threading
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import hypothesis
import pytest

# The repository root is on sys.path by pyproject.toml's pytest `pythonpath`.
from tests.support import tcp_proxy
from tools.pgcluster import ExternalCluster, PgCluster

__all__ = (
    'AUTH_ROLES', 'DsnCluster', 'conn', 'connect_kwargs', 'dbapi_conn', 'default_sigint', 'dsn',
    'isolated_libpq_env',
    'monitor', 'no_event_loop', 'open_conn', 'open_dbapi_conn', 'open_sync_conn',
    'pg_cluster', 'refused_port', 'server_version', 'silent_port', 'sync_conn',
    'sync_observer',
)

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


# --- the server -------------------------------------------------------------------------

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


# --- the process ------------------------------------------------------------------------

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
def no_event_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every request for an event loop is recorded and refused.

    The blocking APIs (mypgdriver.sync, the DB-API) drive the asyncio core's
    coroutines without a loop: a code path that starts to need one fails
    the test.  Yields the names asked for; the test fails if any was.
    """
    asked: list[str] = []
    policy = asyncio.get_event_loop_policy()

    def refuse(name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            raise AssertionError(f'an event loop was asked for: {name}')
        return method
    for name in ('get_event_loop', 'new_event_loop', 'set_event_loop'):
        monkeypatch.setattr(policy, name, refuse(name))
    assert asyncio._get_running_loop() is None
    yield asked
    assert not asked, asked


@pytest.fixture
def isolated_libpq_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """No PG* variables from outside, and an empty home: no ~/.pgpass, no ~/.postgresql.

    For tests of what connect() takes from the environment: each sets what
    it needs.  Returns the home directory.
    """
    for name in list(os.environ):
        if name.startswith("PG"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


# --- ports ------------------------------------------------------------------------------

@pytest.fixture
def refused_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that refuses connections (bound, not listening)."""
    yield from tcp_proxy.refused_port()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (in the kernel backlog), never answering."""
    with tcp_proxy.SilentPort() as silent:
        yield silent.port


# --- asyncio connections ----------------------------------------------------------------

async def _close_async(connection: Any) -> None:
    """Close `connection` if the test left it open.

    A failing goodbye still fails the test (at teardown), as it did when
    each file closed its own connection; the socket is freed first.
    """
    if connection.is_closed():
        return
    try:
        await connection.close()
    except BaseException:
        connection.terminate()
        raise


#: ``await open_conn(dsn=None, **kwargs)``: see the fixture.
AsyncConnect = Callable[..., Awaitable[Any]]


@pytest.fixture
async def open_conn(connect_kwargs: dict[str, Any]) -> AsyncIterator[AsyncConnect]:
    """A factory of asyncio connections, each closed after the test.

    It keeps each connection until then: a test about a connection being
    garbage-collected opens it with ``mypgdriver.connect`` itself.

    ``await open_conn(**options)`` connects as the superuser with `options`
    added (or overriding host, port, user...); ``await open_conn(dsn,
    **options)`` connects to exactly what `dsn` and `options` say.
    """
    import mypgdriver  # imported here: the compiled modules may not be built yet

    opened: list[Any] = []

    async def connect(dsn: str | None = None, **options: Any) -> Any:
        if dsn is None:
            options = {**connect_kwargs, **options}
        connection = await mypgdriver.connect(dsn, **options)
        opened.append(connection)
        return connection
    try:
        yield connect
    finally:
        for connection in reversed(opened):
            await _close_async(connection)


@pytest.fixture
async def conn(open_conn: AsyncConnect) -> Any:
    """A connection as the superuser, closed after the test."""
    return await open_conn()


@pytest.fixture
async def monitor(open_conn: AsyncConnect) -> Any:
    """A second connection, for pg_stat_activity and for row visibility."""
    return await open_conn()


# --- blocking connections ---------------------------------------------------------------

def _close_blocking(connection: Any) -> None:
    """Close a mypgdriver.sync or DB-API connection if the test left it open."""
    closed = connection.closed if hasattr(connection, 'closed') else connection.is_closed()
    if not closed:
        connection.close()


#: ``open_sync_conn(dsn=None, **kwargs)``: see the fixture.
SyncConnect = Callable[..., Any]


def _blocking_factory(open_one: Any, dsn: str) -> Iterator[SyncConnect]:
    """The connect factory of a blocking API (`open_one`), closing what it opened at the end."""
    opened: list[Any] = []

    def connect(target: str | None = None, **options: Any) -> Any:
        connection = open_one(dsn if target is None else target, **options)
        opened.append(connection)
        return connection
    try:
        yield connect
    finally:
        for connection in reversed(opened):
            _close_blocking(connection)


@pytest.fixture
def open_sync_conn(dsn: str) -> Iterator[SyncConnect]:
    """A factory of ``mypgdriver.sync`` connections, each closed after the test.

    ``open_sync_conn(**options)`` connects to the session server's DSN with
    `options`; ``open_sync_conn(other_dsn, **options)`` to `other_dsn`.
    """
    import mypgdriver.sync  # imported here: the compiled modules may not be built yet

    yield from _blocking_factory(mypgdriver.sync.connect, dsn)


@pytest.fixture(params=['compiled', 'policy'])
def sync_conn(request: pytest.FixtureRequest, open_sync_conn: SyncConnect,
              no_event_loop: list[str]) -> Any:
    """A ``mypgdriver.sync`` connection as the superuser, with no event loop allowed.

    Each test runs twice: with the compiled call path of cached statements
    (runner.pyx), and with every call through the Session's coroutines
    (``compiled = False``): the two must behave the same.
    """
    conn = open_sync_conn()
    conn._runner.compiled = request.param == 'compiled'
    return conn


@pytest.fixture
def sync_observer(open_sync_conn: SyncConnect) -> Any:
    """A blocking connection of its own, to read the server's state from another session.

    Usable from asyncio tests too: its calls are short, and blocking the
    event loop for them is sometimes the point (a goodbye left unread).
    """
    return open_sync_conn()


@pytest.fixture
def open_dbapi_conn(dsn: str) -> Iterator[SyncConnect]:
    """A factory of ``mypgdriver.dbapi`` connections, each closed after the test.

    ``open_dbapi_conn(**options)`` connects to the session server's DSN;
    ``open_dbapi_conn(other_dsn, **options)`` to `other_dsn`.
    """
    import mypgdriver.dbapi  # imported here: the compiled modules may not be built yet

    yield from _blocking_factory(mypgdriver.dbapi.connect, dsn)


@pytest.fixture
def dbapi_conn(open_dbapi_conn: SyncConnect, no_event_loop: list[str]) -> Any:
    """A ``mypgdriver.dbapi`` connection (autocommit off) as the superuser, no event loop allowed."""
    return open_dbapi_conn()

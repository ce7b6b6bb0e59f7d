"""The first call of a pool checkout: repeated on a new connection only if it was never sent.

Both pools (asyncio and mypgdriver.sync) replace a connection whose backend
died while it sat idle, and make the checkout's first call on the new one.
A statement that was sent and then lost its connection (the backend
terminated while running it, the network cut before the answer) raises
ConnectionDoesNotExistError instead: it may have run, or committed, and is
never run a second time.  Executions are counted on the server with a
sequence, which a rollback does not undo: its last value is the number of
times the statement ran.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver import exceptions
from tests.support.tcp_proxy import TcpProxy

LOST = exceptions.ConnectionDoesNotExistError

# How long after the statement is seen running the backend is terminated.
KILL_DELAYS = [0.0, 0.02, 0.1, 0.3]

STATEMENTS = {
    # A read that takes long: it is killed half-way.
    # (A select list is evaluated left to right: the count comes first.)
    'read': "SELECT nextval('{seq}'), pg_sleep(3)",
    # A write that takes long: killed before its commit.
    'write': "INSERT INTO {table} SELECT v FROM (SELECT nextval('{seq}') AS v, pg_sleep(3)) s "
             "RETURNING v",
}


class Counter:
    """A sequence and a table on the server, read from another session."""

    def __init__(self, sync_observer: mypgdriver.sync.Connection) -> None:
        self.sync_observer = sync_observer
        suffix = uuid.uuid4().hex[:10]
        self.seq = f'first_call_seq_{suffix}'
        self.table = f'first_call_t_{suffix}'
        sync_observer.execute(f'CREATE SEQUENCE {self.seq}; CREATE TABLE {self.table} (v bigint)')

    def executions(self) -> int:
        last, called = self.sync_observer.fetchrow(f'SELECT last_value, is_called FROM {self.seq}')
        return int(last) if called else 0

    def rows(self) -> int:
        return int(self.sync_observer.fetchval(f'SELECT count(*) FROM {self.table}'))

    def query(self, kind: str) -> str:
        return STATEMENTS[kind].format(seq=self.seq, table=self.table)

    def drop(self) -> None:
        self.sync_observer.execute(f'DROP SEQUENCE {self.seq}; DROP TABLE {self.table}')


@pytest.fixture
def app_name() -> str:
    return f'firstcall-{uuid.uuid4().hex[:12]}'


@pytest.fixture
def counter(sync_observer: mypgdriver.sync.Connection) -> Iterator[Counter]:
    counter = Counter(sync_observer)
    yield counter
    counter.drop()


def wait_running(sync_observer: mypgdriver.sync.Connection, pid: int, text: str) -> None:
    """Until the backend `pid` runs a statement containing `text`."""
    deadline = time.monotonic() + 10
    while not sync_observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active' "
            "AND position($2 in query) > 0", pid, text):
        assert time.monotonic() < deadline, 'the statement never started'
        time.sleep(0.005)


def wait_settled(sync_observer: mypgdriver.sync.Connection, pid: int) -> None:
    """Until backend `pid` has exited or sits idle: a statement it was sent has run or never will.

    A cut connection's backend may run the statement it received after the
    client saw the cut (nothing stops it): count executions only after.
    """
    deadline = time.monotonic() + 10
    while sync_observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state <> 'idle'", pid):
        assert time.monotonic() < deadline, 'the backend never settled'
        time.sleep(0.005)


def wait_exited(sync_observer: mypgdriver.sync.Connection, pid: int) -> None:
    """Until backend `pid` has exited: what it received before its connection was cut has run.

    A backend whose connection the proxy cut may still hold the client's last
    messages unread (the proxy forwarded them just before the cut): it sits
    "idle" until it reads them, runs them, and only then sees the end of the
    stream.  Its exit is the one sign that nothing of it is still to run.
    """
    deadline = time.monotonic() + 10
    while sync_observer.fetchval('SELECT count(*) FROM pg_stat_activity WHERE pid = $1', pid):
        assert time.monotonic() < deadline, 'the cut backend never exited'
        time.sleep(0.005)


def terminate_and_wait(sync_observer: mypgdriver.sync.Connection, pid: int) -> None:
    """Terminate backend `pid` and wait until it has exited (its goodbye is sent)."""
    assert sync_observer.fetchval('SELECT pg_terminate_backend($1, 10000)', pid) is True


# --- a backend terminated while it runs the first call ---------------------------------------

@pytest.mark.parametrize('delay', KILL_DELAYS)
@pytest.mark.parametrize('kind', sorted(STATEMENTS))
def test_sync_pool_first_call_killed_mid_statement_raises_and_runs_once(
        dsn: str, app_name: str, sync_observer: mypgdriver.sync.Connection, counter: Counter,
        kind: str, delay: float) -> None:
    import threading
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=1,
                                     server_settings={'application_name': app_name}) as pool:
        with pool.acquire() as conn:
            pid = conn.get_server_pid()

            def kill() -> None:
                wait_running(observer_of_killer, pid, counter.seq)
                time.sleep(delay)
                terminate_and_wait(observer_of_killer, pid)

            with mypgdriver.sync.connect(dsn) as observer_of_killer:
                killer = threading.Thread(target=kill)
                killer.start()
                started = time.monotonic()
                with pytest.raises(LOST) as caught:
                    conn.fetchval(counter.query(kind))
                elapsed = time.monotonic() - started
                killer.join()
            # Not run again (which would take its 3 s once more).
            assert elapsed < 2.5, elapsed
            assert isinstance(caught.value.__cause__, exceptions.AdminShutdownError)
            assert conn.is_closed()
        assert counter.executions() == 1
        assert counter.rows() == 0
        assert pool.get_stats().connections_closed == 1
        # The pool goes on with a new connection.
        assert pool.fetchval('SELECT 7') == 7


@pytest.mark.parametrize('delay', KILL_DELAYS)
@pytest.mark.parametrize('kind', sorted(STATEMENTS))
async def test_pool_first_call_killed_mid_statement_raises_and_runs_once(
        dsn: str, app_name: str, counter: Counter, kind: str, delay: float) -> None:
    async with mypgdriver.create_pool(dsn, min_size=1, max_size=1,
                                      server_settings={'application_name': app_name}) as pool:
        async with pool.acquire() as con:
            pid = con.get_server_pid()
            call = asyncio.ensure_future(con.fetchval(counter.query(kind)))
            killer = await mypgdriver.connect(dsn)
            try:
                deadline = time.monotonic() + 10
                while not await killer.fetchval(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 "
                        "AND state = 'active' AND position($2 in query) > 0",
                        pid, counter.seq):
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.005)
                await asyncio.sleep(delay)
                started = time.monotonic()
                assert await killer.fetchval('SELECT pg_terminate_backend($1, 10000)', pid)
            finally:
                await killer.close()
            with pytest.raises(LOST) as caught:
                await asyncio.wait_for(call, 10)
            assert time.monotonic() - started < 2.5
            assert isinstance(caught.value.__cause__, exceptions.AdminShutdownError)
            assert con.is_closed()
        assert counter.executions() == 1
        assert counter.rows() == 0
        assert pool.get_stats().connections_closed == 1
        assert await pool.fetchval('SELECT 7') == 7


# --- a backend terminated while the connection sat idle in the pool --------------------------

def test_sync_pool_connection_killed_while_idle_is_replaced_for_the_first_call(
        dsn: str, app_name: str, sync_observer: mypgdriver.sync.Connection,
        counter: Counter) -> None:
    # The sync API reads nothing between calls: the goodbye waits in the
    # socket until the first call of the next checkout reads it, before
    # sending its statement, which then goes to a new connection.
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=1,
                                     server_settings={'application_name': app_name}) as pool:
        for attempt in range(1, 11):
            with pool.acquire() as conn:
                old_pid = conn.get_server_pid()
            terminate_and_wait(sync_observer, old_pid)
            with pool.acquire() as conn:
                assert conn.fetchval(
                    f"INSERT INTO {counter.table} VALUES (nextval('{counter.seq}')) "
                    f"RETURNING v") == attempt
                assert conn.get_server_pid() not in (0, old_pid)
        assert counter.executions() == counter.rows() == 10
        stats = pool.get_stats()
        assert (stats.connections_opened, stats.connections_closed) == (11, 10)


async def test_pool_connection_killed_while_idle_is_replaced_for_the_first_call(
        dsn: str, app_name: str, sync_observer: mypgdriver.sync.Connection,
        counter: Counter) -> None:
    # The sync_observer blocks the event loop: the pool has not read the
    # goodbye when acquire() hands the connection out.
    async with mypgdriver.create_pool(dsn, min_size=1, max_size=1,
                                      server_settings={'application_name': app_name}) as pool:
        for attempt in range(1, 11):
            async with pool.acquire() as con:
                old_pid = con.get_server_pid()
            terminate_and_wait(sync_observer, old_pid)
            async with pool.acquire() as con:
                assert not con.is_closed()      # not read yet
                assert await con.fetchval(
                    f"INSERT INTO {counter.table} VALUES (nextval('{counter.seq}')) "
                    f"RETURNING v") == attempt
                assert con.get_server_pid() not in (0, old_pid)
        assert counter.executions() == counter.rows() == 10
        stats = pool.get_stats()
        assert (stats.connections_opened, stats.connections_closed) == (11, 10)


# --- the connection cut at every point of the first call's answer ---------------------------

# Bytes of the server's answer let through before the cut: the prepare's
# answer, the execution's, the last ReadyForQuery, and past the end.
CUT_OFFSETS = list(range(0, 140, 3))

INSERT = "INSERT INTO {table} VALUES (nextval('{seq}')) RETURNING v"


def test_sync_pool_first_call_cut_anywhere_runs_at_most_once(
        pg_cluster: Any, sync_observer: mypgdriver.sync.Connection, counter: Counter) -> None:
    query = INSERT.format(table=counter.table, seq=counter.seq)
    outcomes = set()
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        with mypgdriver.sync.create_pool(host='127.0.0.1', port=proxy.port, user='postgres',
                                         database='postgres', ssl='disable',
                                         min_size=1, max_size=1) as pool:
            for offset in CUT_OFFSETS:
                before = counter.executions()
                with pool.acquire() as conn:
                    pid = conn.get_server_pid()
                    proxy.cut_after(offset)
                    try:
                        conn.fetchval(query)
                        outcomes.add('returned')
                    except LOST:
                        outcomes.add('lost')
                        # Cut: its backend may still run what it was sent.
                        wait_exited(sync_observer, pid)
                    # (a replacement's backend, if the call was made again)
                    pids = {pid, conn.get_server_pid()}
                for each in pids:
                    wait_settled(sync_observer, each)
                ran = counter.executions() - before
                assert ran <= 1, (offset, ran)
                assert counter.rows() == counter.executions(), offset
    # Both outcomes were reached: the cut landed before and after the answer.
    assert outcomes == {'returned', 'lost'}


async def test_pool_first_call_cut_anywhere_runs_at_most_once(
        pg_cluster: Any, sync_observer: mypgdriver.sync.Connection, counter: Counter) -> None:
    query = INSERT.format(table=counter.table, seq=counter.seq)
    outcomes = set()
    with TcpProxy(pg_cluster.host, pg_cluster.port) as proxy:
        async with mypgdriver.create_pool(host='127.0.0.1', port=proxy.port, user='postgres',
                                          database='postgres', ssl='disable',
                                          min_size=1, max_size=1) as pool:
            for offset in CUT_OFFSETS:
                before = counter.executions()
                async with pool.acquire() as con:
                    pid = con.get_server_pid()
                    proxy.cut_after(offset)
                    try:
                        await con.fetchval(query)
                        outcomes.add('returned')
                    except LOST:
                        outcomes.add('lost')
                        # Cut: its backend may still run what it was sent.
                        wait_exited(sync_observer, pid)
                    pids = {pid, con.get_server_pid()}
                for each in pids:
                    wait_settled(sync_observer, each)
                ran = counter.executions() - before
                assert ran <= 1, (offset, ran)
                assert counter.rows() == counter.executions(), offset
    assert outcomes == {'returned', 'lost'}

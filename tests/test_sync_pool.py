"""mypgdriver.sync.create_pool: the thread-safe pool, against a real server."""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver import exceptions
from mypgdriver.pool import PoolStats
from mypgdriver.sync import Connection, Pool
from tests.support.backends import HAVE_PROC_NET_TCP, wait_client_saw_eof
from tests.support.waiting import SETTLE

#: Upper bound of a call that must end at its (short) timeout, or at once:
#: a loaded machine adds a fraction of it, a wait that is not bounded never ends.
PROMPT = 5.0


@pytest.fixture
def dsn(pg_cluster: Any) -> str:
    return pg_cluster.dsn()


@pytest.fixture
def app_name() -> str:
    return f'syncpool-{uuid.uuid4().hex[:12]}'


@pytest.fixture
def observer(dsn: str, no_event_loop: list[str]) -> Iterator[Connection]:
    with mypgdriver.sync.connect(dsn) as conn:
        yield conn


@pytest.fixture
def make_pool(dsn: str, app_name: str, no_event_loop: list[str]) -> Iterator[Callable[..., Pool]]:
    pools: list[Pool] = []

    def make(**kwargs: Any) -> Pool:
        kwargs.setdefault('server_settings', {'application_name': app_name})
        pool = mypgdriver.sync.create_pool(dsn, **kwargs)
        pools.append(pool)
        return pool
    yield make
    for pool in pools:
        pool.terminate()


def backends(observer: Connection, app_name: str) -> list[int]:
    return sorted(observer.fetchval(
        'SELECT coalesce(array_agg(pid), ARRAY[]::int[]) FROM pg_stat_activity '
        'WHERE application_name = $1', app_name))


def wait_until(condition: Callable[[], bool], timeout: float = SETTLE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'condition not met in time'
        time.sleep(0.02)


# --- opening, sizes, closing ---

def test_create_pool_opens_min_size_and_with_closes(dsn: str, app_name: str,
                                                    observer: Connection) -> None:
    with mypgdriver.sync.create_pool(dsn, min_size=2, max_size=4,
                                     server_settings={'application_name': app_name}) as pool:
        assert isinstance(pool, Pool)
        assert (pool.get_size(), pool.get_idle_size(), pool.get_min_size(),
                pool.get_max_size()) == (2, 2, 2, 4)
        assert len(backends(observer, app_name)) == 2
        assert not pool.is_closing()
        with pool.acquire() as a, pool.acquire() as b, pool.acquire() as c:
            assert {a.fetchval('SELECT 1'), b.fetchval('SELECT 2'), c.fetchval('SELECT 3')} == {
                1, 2, 3}
            assert (pool.get_size(), pool.get_idle_size()) == (3, 0)
            assert len(backends(observer, app_name)) == 3
        assert (pool.get_size(), pool.get_idle_size()) == (3, 3)
    assert pool.is_closing()
    wait_until(lambda: backends(observer, app_name) == [])
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='pool is closed'):
        pool.acquire()


def test_init_size_connections_are_open_when_create_pool_returns(
        dsn: str, app_name: str, observer: Connection) -> None:
    # More than min_size at start (as the asyncio pool's init_size); the
    # ones above min_size are not refilled once closed.
    with mypgdriver.sync.create_pool(dsn, init_size=3, min_size=1, max_size=4,
                                     server_settings={'application_name': app_name}) as pool:
        assert (pool.get_init_size(), pool.get_size(), pool.get_idle_size()) == (3, 3, 3)
        assert len(backends(observer, app_name)) == 3
    with mypgdriver.sync.create_pool(dsn, min_size=2, max_size=4) as pool:
        assert pool.get_init_size() == 2        # defaults to min_size


def test_invalid_sizes(dsn: str) -> None:
    with pytest.raises(ValueError, match='min_size is greater than max_size'):
        mypgdriver.sync.create_pool(dsn, min_size=3, max_size=2)
    with pytest.raises(ValueError, match='max_size'):
        mypgdriver.sync.create_pool(dsn, max_size=0)
    with pytest.raises(ValueError, match='init_size is smaller than min_size'):
        mypgdriver.sync.create_pool(dsn, init_size=1, min_size=2, max_size=3)
    with pytest.raises(ValueError, match='init_size is greater than max_size'):
        mypgdriver.sync.create_pool(dsn, init_size=4, min_size=2, max_size=3)
    with pytest.raises(TypeError, match='subclass of mypgdriver.sync.Connection'):
        mypgdriver.sync.create_pool(dsn, connection_class=mypgdriver.Connection)


def test_acquire_by_hand_and_release(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    conn = pool.acquire()
    pid = conn.get_server_pid()
    assert conn.fetchval('SELECT $1::int + 1', 41) == 42
    assert pool.get_idle_size() == 0
    pool.release(conn)
    pool.release(conn)  # a second release does nothing
    assert pool.get_idle_size() == 1
    with pool.acquire() as again:
        assert again.get_server_pid() == pid
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='not a member of this pool'):
        pool.release(object())  # type: ignore[arg-type]


# --- handles die with the checkout ---

def test_released_connection_and_its_handles_refuse_to_work(
        make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        fetchval = conn.fetchval
        stmt = conn.prepare('SELECT $1::int * 2')
        assert stmt.fetchval(21) == 42
        cursor_factory = conn.cursor('SELECT generate_series(1, 3)')
        xact = conn.transaction()
        xact_inside = conn.transaction()
    released = 'released back to the pool'
    for call in (lambda: conn.fetchval('SELECT 1'), lambda: fetchval('SELECT 1'),
                 lambda: conn.execute('SELECT 1'), lambda: conn.get_server_pid(),
                 lambda: stmt.fetchval(1), lambda: list(cursor_factory),
                 lambda: cursor_factory.fetch(1), lambda: cursor_factory.fetchrow(),
                 lambda: cursor_factory.forward(1), lambda: xact.start(),
                 lambda: conn.is_closed()):
        with pytest.raises(mypgdriver.exceptions.InterfaceError, match=released):
            call()
    del xact_inside
    # The next user's checkout is not disturbed.
    with pool.acquire() as conn2:
        assert conn2.fetchval('SELECT 7') == 7
        with pytest.raises(mypgdriver.exceptions.InterfaceError, match=released):
            stmt.fetch(1)


def test_a_pooled_connections_cursor_is_used_without_open(
        make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        with conn.transaction():
            cur = conn.cursor('SELECT g FROM generate_series(1, 5) g')
            assert [r['g'] for r in cur.fetch(2)] == [1, 2]
            assert cur.forward(1) == 1
            row = cur.fetchrow()
            assert row is not None and row['g'] == 4
            used = conn.cursor('SELECT 1')
            assert used.fetch(1)[0][0] == 1
        with pytest.raises(mypgdriver.exceptions.NoActiveSQLTransactionError):
            conn.cursor('SELECT 1').fetch(1)
    # Bound during the checkout, it dies with it as every handle does.
    with pytest.raises(mypgdriver.exceptions.InterfaceError, match='released back to the pool'):
        used.fetch(1)


def test_transaction_left_open_is_rolled_back(make_pool: Callable[..., Pool],
                                              observer: Connection,
                                              caplog: pytest.LogCaptureFixture) -> None:
    observer.execute('DROP TABLE IF EXISTS sync_pool_rows; CREATE TABLE sync_pool_rows (n int)')
    pool = make_pool(min_size=1, max_size=1)
    conn = pool.acquire()
    conn.transaction().start()
    conn.execute('INSERT INTO sync_pool_rows VALUES (1)')
    assert conn.is_in_transaction()
    with caplog.at_level('WARNING', logger='mypgdriver.pool'):
        pool.release(conn)
    assert [r.getMessage().split(':')[1].strip() for r in caplog.records] == [
        'a connection was released inside an open transaction, which is rolled back']
    assert observer.fetchval('SELECT count(*) FROM sync_pool_rows') == 0
    with pool.acquire() as conn2:
        assert not conn2.is_in_transaction()
        conn2.execute('INSERT INTO sync_pool_rows VALUES (2)')
    assert observer.fetch('SELECT n FROM sync_pool_rows') == [(2,)]
    observer.execute('DROP TABLE sync_pool_rows')


def test_session_state_is_reset_on_release(make_pool: Callable[..., Pool],
                                           observer: Connection) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        pid = conn.get_server_pid()
        conn.execute("SET search_path = 'nowhere'")
        conn.execute("SELECT set_config('myapp.user', 'alice', false)")
        conn.execute('CREATE TEMP TABLE mine (n int)')
        conn.execute('LISTEN sync_pool_channel')
        conn.execute('SELECT pg_advisory_lock(424242)')
        assert observer.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid) == 1
    with pool.acquire() as conn:
        assert conn.get_server_pid() == pid
        assert conn.fetchval('SHOW search_path') == '"$user", public'
        assert conn.fetchval("SELECT current_setting('myapp.user', true)") in ('', None)
        assert conn.fetchval("SELECT to_regclass('pg_temp.mine')") is None
        assert conn.fetch('SELECT pg_listening_channels()') == []
    assert observer.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid) == 0


def test_listener_added_during_a_checkout_is_removed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    seen: list[str] = []
    with pool.acquire() as conn:
        conn.add_listener('sync_pool_ch', lambda c, pid, ch, payload: seen.append(payload))
        conn.execute("NOTIFY sync_pool_ch, 'one'")
        with pytest.warns(mypgdriver.exceptions.InterfaceWarning, match='not removed'):
            pool.release(conn)
    with pool.acquire() as conn:
        conn.execute('LISTEN sync_pool_ch')
        conn.execute("NOTIFY sync_pool_ch, 'two'")
        conn.execute('SELECT 1')
    assert seen == ['one']


def test_notifications_do_not_outlive_the_checkout(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        conn.execute('LISTEN sync_pool_backlog')
        conn.execute("NOTIFY sync_pool_backlog, 'mine'")
        conn.execute('SELECT 1')  # received, kept for notifies(), never read
    with pool.acquire() as conn:
        conn.execute('LISTEN sync_pool_backlog')
        assert list(conn.notifies(timeout=0.2)) == []
        conn.execute("NOTIFY sync_pool_backlog, 'theirs'")
        assert [n.payload for n in conn.notifies(timeout=0.2)] == ['theirs']


# --- broken connections ---

@pytest.mark.skipif(not HAVE_PROC_NET_TCP, reason='reads /proc/net/tcp')
def test_backend_terminated_while_idle_is_never_handed_out(
        make_pool: Callable[..., Pool], observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        old_pid = conn.get_server_pid()
    client_port, server_port = observer.fetchrow(
        'SELECT client_port, inet_server_port() FROM pg_stat_activity WHERE pid = $1', old_pid)
    assert observer.fetchval('SELECT pg_terminate_backend($1)', old_pid) is True
    # The case of a connection terminated long before the next acquire: the
    # end of the stream has reached the pool's socket.
    wait_client_saw_eof(client_port, server_port)
    with pool.acquire() as conn:
        new_pid = conn.get_server_pid()
        assert new_pid != old_pid
        assert conn.fetchval('SELECT pg_backend_pid()') == new_pid
    assert backends(observer, app_name) == [new_pid]
    stats = pool.get_stats()
    assert (stats.connections_opened, stats.connections_closed, stats.size) == (2, 1, 1)


def test_first_call_on_a_connection_lost_just_before_acquire_is_repeated_on_a_new_one(
        make_pool: Callable[..., Pool], observer: Connection, app_name: str) -> None:
    # The backend has exited (its goodbye is sent) but the sync API reads
    # nothing between calls: the acquire finds the connection still open;
    # its first call reads the goodbye before sending its statement, and
    # makes the call on a new connection (as in the asyncio pool).
    pool = make_pool(min_size=1, max_size=1)
    for _ in range(20):
        with pool.acquire() as conn:
            old_pid = conn.get_server_pid()
        assert observer.fetchval('SELECT pg_terminate_backend($1, 5000)', old_pid) is True
        with pool.acquire() as conn:
            new_pid = conn.fetchval('SELECT pg_backend_pid()')
            assert new_pid != old_pid
            assert conn.get_server_pid() == new_pid
        wait_until(lambda pid=old_pid: pid not in backends(observer, app_name))
    assert pool.get_size() == 1
    # A later call on a lost connection is not repeated (session state may exist).
    with pool.acquire() as conn:
        conn.fetchval('SELECT 1')
        observer.fetchval('SELECT pg_terminate_backend($1)', conn.get_server_pid())
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            conn.fetchval('SELECT pg_sleep(5)')


def test_connection_closed_by_its_user_is_replaced(make_pool: Callable[..., Pool],
                                                   observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=1, max_size=1)
    with pool.acquire() as conn:
        old_pid = conn.get_server_pid()
        conn.terminate()
    assert pool.get_stats().broken_on_release == 1
    with pool.acquire() as conn:
        assert conn.get_server_pid() != old_pid
        assert conn.fetchval('SELECT 1') == 1


# --- opening connections while the server is away (the asyncio pool's retries) ---

def test_acquire_with_timeout_gives_up_while_server_is_down(refused_port: int) -> None:
    kwargs = dict(min_size=0, max_size=2, host='127.0.0.1', port=refused_port,
                  user='postgres', database='postgres')
    with mypgdriver.sync.create_pool(**kwargs) as pool:  # type: ignore[arg-type]
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError) as info:
            pool.acquire(timeout=0.3)
        assert 0.25 < time.monotonic() - started < 0.3 + PROMPT
        # The refusal's own wording belongs to connect(); the pool says the rest.
        assert str(info.value).startswith(
            'pool.acquire() timed out after 0.3 s while opening a new connection; '
            'last error: ')
        stats = pool.get_stats()
        assert stats.timeouts == 1
        assert stats.connections_failed >= 2      # it retried
        assert pool.get_size() == 0
    # Without a timeout it retries for connect_retry_timeout, then raises the cause.
    with mypgdriver.sync.create_pool(connect_retry_timeout=0.2,  # type: ignore[arg-type]
                                     **kwargs) as pool:
        started = time.monotonic()
        with pytest.raises(OSError):
            pool.acquire()
        assert 0.15 < time.monotonic() - started < 0.2 + PROMPT
        assert pool.get_stats().timeouts == 0
        assert pool.get_size() == 0


def test_acquire_timeout_bounds_a_connect_nobody_answers(silent_port: int) -> None:
    # The server accepts the TCP connection and never answers: the attempt's
    # connect timeout is cut to what is left of the acquire's.
    with mypgdriver.sync.create_pool(min_size=0, max_size=1, host='127.0.0.1',
                                     port=silent_port, user='postgres',
                                     database='postgres', timeout=60) as pool:
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError) as info:
            pool.acquire(timeout=0.3)
        assert 0.25 < time.monotonic() - started < 0.3 + PROMPT
        assert str(info.value) == (
            'pool.acquire() timed out after 0.3 s while opening a new connection')
        assert pool.get_stats().timeouts == 1
        assert pool.get_size() == 0


def test_a_refused_connect_is_retried_and_a_bad_database_is_not(
        dsn: str, make_pool: Callable[..., Pool]) -> None:
    refusals = [ConnectionRefusedError('refused (1)'), ConnectionRefusedError('refused (2)')]

    def flaky_connect(*args: Any, **kwargs: Any) -> Connection:
        if refusals:
            raise refusals.pop(0)
        return mypgdriver.sync.connect(*args, **kwargs)
    pool = make_pool(min_size=0, max_size=1, connect=flaky_connect)
    with pool.acquire(timeout=PROMPT) as conn:
        assert conn.fetchval('SELECT 41 + 1') == 42
    assert pool.get_stats().connections_failed == 2
    # Not a server away: raised at once, whatever the retry budget.
    with mypgdriver.sync.create_pool(dsn, min_size=0, max_size=1, database='no_such_db_here',
                                     connect_retry_timeout=30) as pool:
        started = time.monotonic()
        with pytest.raises(mypgdriver.exceptions.InvalidCatalogNameError):
            pool.acquire()
        assert time.monotonic() - started < PROMPT
        assert pool.get_stats().connections_failed == 1


# --- limits ---

def test_acquire_timeout_says_who_holds_and_who_waits(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    held = pool.acquire()
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError) as info:
        pool.acquire(timeout=0.2)
    assert 0.15 < time.monotonic() - started < 0.2 + PROMPT
    assert isinstance(info.value, TimeoutError) or asyncio.TimeoutError is not TimeoutError
    assert str(info.value) == ('pool.acquire() timed out after 0.2 s: the only connection '
                               '(max_size=1) is in use and no other thread is waiting')
    # Another thread waiting (without a timeout) is counted.
    waiter_done = threading.Event()

    def other() -> None:
        with pool.acquire() as c:
            assert c.fetchval('SELECT 5') == 5
        waiter_done.set()
    thread = threading.Thread(target=other)
    thread.start()
    wait_until(lambda: pool.get_stats().waiters == 1)
    with pytest.raises(asyncio.TimeoutError, match=r'is in use and 1 other thread is waiting$'):
        pool.acquire(timeout=0.1)
    pool.release(held)
    thread.join(5)
    assert waiter_done.is_set()
    assert pool.get_stats().timeouts == 2


def test_max_queries_replaces_the_connection(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1, max_queries=3)
    with pool.acquire() as conn:
        first = conn.get_server_pid()
        conn.fetchval('SELECT 1')
        conn.execute('SELECT 1')
    with pool.acquire() as conn:
        assert conn.get_server_pid() == first  # 2 queries: kept
        conn.fetch('SELECT 1')
    with pool.acquire() as conn:
        assert conn.get_server_pid() != first  # 3 queries: replaced


def test_max_inactive_connection_lifetime(make_pool: Callable[..., Pool],
                                          observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=1, max_size=3, max_inactive_connection_lifetime=0.3)
    a, b, c = pool.acquire(), pool.acquire(), pool.acquire()
    for conn in (a, b, c):
        pool.release(conn)
    assert pool.get_size() == 3
    # The background thread closes the two above min_size, not the caller.
    wait_until(lambda: pool.get_size() == 1, timeout=3)
    wait_until(lambda: len(backends(observer, app_name)) == 1)


def test_min_size_is_refilled_in_the_background(make_pool: Callable[..., Pool],
                                                observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=2, max_size=2)
    with pool.acquire() as conn:
        conn.terminate()
    # Nobody acquires: the pool's thread opens the replacement.
    wait_until(lambda: pool.get_size() == 2 and pool.get_idle_size() == 2)
    wait_until(lambda: len(backends(observer, app_name)) == 2)


def test_expire_connections_and_set_connect_args(make_pool: Callable[..., Pool], dsn: str,
                                                 observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=1, max_size=2)
    with pool.acquire() as conn:
        old_pid = conn.get_server_pid()
        new_name = app_name + '-2'
        pool.set_connect_args(dsn, server_settings={'application_name': new_name})
        pool.expire_connections()
        assert conn.fetchval('SELECT 1') == 1  # in use: kept until released
    with pool.acquire() as conn:
        assert conn.get_server_pid() != old_pid
        assert conn.fetchval("SELECT current_setting('application_name')") == new_name
    wait_until(lambda: backends(observer, app_name) == [])


# --- 200 threads, 4 connections ---

def test_200_threads_share_4_connections(make_pool: Callable[..., Pool],
                                         observer: Connection, app_name: str, dsn: str) -> None:
    pool = make_pool(min_size=4, max_size=4)
    most = [0]
    stop = threading.Event()

    def watch() -> None:
        with mypgdriver.sync.connect(dsn) as watcher:
            while not stop.is_set():
                most[0] = max(most[0], len(backends(watcher, app_name)))
                time.sleep(0.005)
    watcher_thread = threading.Thread(target=watch)
    watcher_thread.start()

    def work(i: int) -> list[Any]:
        out = []
        for j in range(3):
            with pool.acquire(timeout=60) as conn:
                # Never the state another checkout left behind.
                out.append(conn.fetchval("SELECT current_setting('myapp.worker', true)"))
                conn.execute(f"SET myapp.worker = 'w{i}-{j}'")
                out.append(conn.fetchval("SELECT current_setting('myapp.worker')"))
                out.append(conn.fetchrow('SELECT $1::int AS i, $2::int * 10 AS j', i, j)[:])
                out.append(conn.fetchval('SELECT sum(x) FROM generate_series(1, $1) x', i))
        return out

    try:
        with ThreadPoolExecutor(200) as executor:
            results = list(executor.map(work, range(200)))
    finally:
        stop.set()
        watcher_thread.join()
    for i, out in enumerate(results):
        expected: list[Any] = []
        for j in range(3):
            expected += [out[4 * j] if out[4 * j] in ('', None) else 'not reset',
                         f'w{i}-{j}', (i, j * 10), i * (i + 1) // 2 if i else None]
        assert out == expected
    assert 1 <= most[0] <= 4
    stats = pool.get_stats()
    assert (stats.size, stats.max_size, stats.acquires, stats.resets) == (4, 4, 600, 600)
    assert stats.connections_opened == 4
    assert len(backends(observer, app_name)) == 4


# --- closing ---

def test_close_waits_for_connections_in_use_then_terminates(
        make_pool: Callable[..., Pool], observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=2, max_size=2)
    held = pool.acquire()
    released_in_time = pool.acquire()
    threading.Timer(0.2, lambda: pool.release(released_in_time)).start()
    started = time.monotonic()
    pool.close(timeout=1.0)
    elapsed = time.monotonic() - started
    # One came back in time; the other was terminated at the timeout.
    assert 0.9 < elapsed < 1.0 + PROMPT
    assert pool.is_closing()
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        held.fetchval('SELECT 1')
    wait_until(lambda: backends(observer, app_name) == [])
    pool.release(held)  # nothing to do


def test_close_returns_when_the_last_connection_comes_back(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    held = pool.acquire()
    threading.Timer(0.3, lambda: pool.release(held)).start()
    started = time.monotonic()
    pool.close()
    assert 0.25 < time.monotonic() - started < 0.3 + PROMPT
    assert pool.get_stats().connections_closed == 1


def test_close_fails_waiting_acquires(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=1)
    held = pool.acquire()
    errors: list[BaseException] = []

    def wait_for_one() -> None:
        try:
            pool.acquire()
        except BaseException as e:
            errors.append(e)
    thread = threading.Thread(target=wait_for_one)
    thread.start()
    wait_until(lambda: pool.get_stats().waiters == 1)
    threading.Timer(0.2, lambda: pool.release(held)).start()
    pool.close()
    thread.join(5)
    assert [str(e) for e in errors] == ['pool is closing']


def test_terminate_cancels_and_closes_everything(make_pool: Callable[..., Pool],
                                                 observer: Connection, app_name: str) -> None:
    pool = make_pool(min_size=2, max_size=2)
    errors: list[BaseException] = []
    started = threading.Event()

    def sleeper() -> None:
        conn = pool.acquire()
        started.set()
        try:
            conn.fetchval('SELECT pg_sleep(30)')
        except BaseException as e:
            errors.append(e)
        pool.release(conn)
    thread = threading.Thread(target=sleeper)
    thread.start()
    started.wait(5)
    wait_until(lambda: observer.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
        "AND query LIKE '%pg_sleep(30)%' AND state = 'active'", app_name) == 1)
    t0 = time.monotonic()
    pool.terminate()
    thread.join(10)
    assert time.monotonic() - t0 < PROMPT      # not after the statement (30 s)
    assert len(errors) == 1
    assert isinstance(errors[0], (mypgdriver.exceptions.QueryCanceledError,
                                  mypgdriver.exceptions.InterfaceError,
                                  mypgdriver.exceptions.ConnectionDoesNotExistError))
    assert pool.is_closing() and pool.get_size() == 0
    wait_until(lambda: backends(observer, app_name) == [])


# --- callbacks, shortcuts, stats ---

def test_connect_init_setup_reset_callbacks(make_pool: Callable[..., Pool], dsn: str) -> None:
    calls: list[str] = []

    def connect(dsn: str | None, **kwargs: Any) -> Connection:
        calls.append('connect')
        return mypgdriver.sync.connect(dsn, **kwargs)

    def init(conn: Connection) -> None:
        calls.append('init')
        conn.execute("SELECT set_config('myapp.init', 'yes', false)")

    def setup(conn: Connection) -> None:
        calls.append('setup')

    def reset(conn: Connection) -> None:
        assert not conn.is_in_transaction()  # rolled back before the callback
        calls.append('reset')
        conn.execute('DISCARD TEMP')

    pool = make_pool(min_size=1, max_size=1, connect=connect, init=init, setup=setup,
                     reset=reset)
    assert calls == ['connect', 'init']
    with pool.acquire() as conn:
        conn.execute('BEGIN')
        # reset= replaces RESET ALL: the setting made by init stays.
        assert conn.fetchval("SELECT current_setting('myapp.init')") == 'yes'
    assert calls == ['connect', 'init', 'setup', 'reset']


def test_setup_failure_discards_the_connection(make_pool: Callable[..., Pool]) -> None:
    def setup(conn: Connection) -> None:
        raise RuntimeError('no')
    pool = make_pool(min_size=1, max_size=1, setup=setup)
    with pytest.raises(RuntimeError, match='no'):
        pool.acquire()
    assert pool.get_stats().connections_closed == 1


def test_shortcuts(make_pool: Callable[..., Pool], observer: Connection) -> None:
    observer.execute('DROP TABLE IF EXISTS sync_pool_sc; CREATE TABLE sync_pool_sc (n int)')
    pool = make_pool(min_size=1, max_size=2)
    assert pool.execute('INSERT INTO sync_pool_sc VALUES ($1)', 1) == 'INSERT 0 1'
    assert pool.executemany('INSERT INTO sync_pool_sc VALUES ($1)', [(2,), (3,)]) is None
    assert pool.copy_records_to_table('sync_pool_sc', records=[(4,)]) == 'COPY 1'
    assert pool.copy_to_table('sync_pool_sc', source=[b'5\n']) == 'COPY 1'
    assert [r['n'] for r in pool.fetch('SELECT n FROM sync_pool_sc ORDER BY n')] == [1, 2, 3, 4, 5]
    row = pool.fetchrow('SELECT max(n) AS m FROM sync_pool_sc')
    assert row is not None and row['m'] == 5
    assert pool.fetchval('SELECT count(*) FROM sync_pool_sc') == 5
    assert pool.fetchmany('SELECT $1::int * 2', [(1,), (2,)]) == [(2,), (4,)]
    chunks: list[bytes] = []
    assert pool.copy_from_query('SELECT n FROM sync_pool_sc ORDER BY n', output=chunks.append) \
        == 'COPY 5'
    assert b''.join(chunks) == b'1\n2\n3\n4\n5\n'
    chunks.clear()
    assert pool.copy_from_table('sync_pool_sc', output=chunks.append) == 'COPY 5'
    assert pool.get_idle_size() == pool.get_size()
    observer.execute('DROP TABLE sync_pool_sc')


def test_stats(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(min_size=1, max_size=2)
    with pool.acquire():
        with pool.acquire():
            pass
    stats = pool.get_stats()
    assert isinstance(stats, PoolStats)
    assert (stats.size, stats.idle, stats.min_size, stats.max_size) == (2, 2, 1, 2)
    assert (stats.connections_opened, stats.connections_closed, stats.connections_failed) == (
        2, 0, 0)
    assert (stats.acquires, stats.acquires_waited, stats.waiters, stats.timeouts) == (2, 1, 0, 0)
    assert (stats.resets, stats.reset_failures, stats.broken_on_release) == (2, 0, 0)
    assert sum(n for _, n in stats.wait_histogram) == 2
    assert stats.shortcuts_pipelined == 0
    assert stats.pipeline_depths == ((0, 1), (0, 1)) or len(stats.pipeline_depths) == 2

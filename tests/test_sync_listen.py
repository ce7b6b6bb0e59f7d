"""mypgdriver.sync: notifies() as a thread-free LISTEN worker, and listeners."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection, Notification

#: How late a wait may end after its timeout, or a wake-up after its cause: a
#: loaded machine adds a fraction of it, a missed wake-up waits out the timeout.
PROMPT = 5.0


def test_notifies_returns_after_the_timeout_with_nothing(sync_conn: Connection) -> None:
    sync_conn.execute('LISTEN idle_channel')
    started = time.monotonic()
    assert list(sync_conn.notifies(timeout=0.3)) == []
    elapsed = time.monotonic() - started
    assert 0.29 <= elapsed < 0.3 + PROMPT
    assert sync_conn.fetchval('SELECT 1') == 1


def test_notifications_received_during_other_calls_are_yielded_first(sync_conn: Connection,
                                                                     dsn: str) -> None:
    sync_conn.execute('LISTEN a; LISTEN b')
    with mypgdriver.sync.connect(dsn) as other:
        other.execute("NOTIFY a, '1'; NOTIFY b, '2'")
        other_pid = other.get_server_pid()
    sync_conn.fetchval('SELECT pg_sleep(0.1)')          # receives them
    got = list(sync_conn.notifies(timeout=0.2))
    assert got == [Notification(other_pid, 'a', '1'), Notification(other_pid, 'b', '2')]


def test_listener_callbacks_are_called_from_notifies(sync_conn: Connection) -> None:
    seen: list[str] = []
    sync_conn.add_listener('cb', lambda c, pid, ch, payload: seen.append(payload))
    sync_conn.execute("NOTIFY cb, 'x'")
    # own notifications arrive at the end of the NOTIFY's transaction: already in
    assert seen == ['x']
    assert [n.payload for n in sync_conn.notifies(timeout=0.1)] == ['x']


WORKER = textwrap.dedent('''
    import sys, time, mypgdriver.sync
    with mypgdriver.sync.connect(sys.argv[1]) as conn:
        conn.execute("LISTEN jobs")
        print("ready", flush=True)
        for n in conn.notifies(timeout=10):
            print(n.channel, n.payload, flush=True)
            if n.payload == "stop":
                break
        import threading
        print("threads", threading.active_count(), flush=True)
''')


def test_a_thread_free_worker_wakes_on_notify_from_another_connection(dsn: str) -> None:
    # In a process of its own: a real worker, which must need no thread.
    worker = subprocess.Popen([sys.executable, '-c', WORKER, dsn], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline() == 'ready\n'
        with mypgdriver.sync.connect(dsn) as sender:
            started = time.monotonic()
            sender.execute("NOTIFY jobs, 'job 1'")
            assert worker.stdout.readline() == 'jobs job 1\n'
            assert time.monotonic() - started < PROMPT     # (not at its timeout, 10 s)
            sender.execute("SELECT pg_notify('jobs', 'stop')")
        assert worker.stdout.readline() == 'jobs stop\n'
        assert worker.stdout.readline() == 'threads 1\n'
        assert worker.wait(10) == 0
    finally:
        worker.kill()
        worker.wait()


def test_notifies_on_a_closed_connection_raises(dsn: str) -> None:
    conn = mypgdriver.sync.connect(dsn)
    conn.close()
    with pytest.raises(mypgdriver.exceptions.ConnectionDoesNotExistError):
        next(conn.notifies(timeout=0.1))


def test_a_backend_killed_while_waiting_raises_instead_of_hanging(sync_conn: Connection,
                                                                  dsn: str) -> None:
    sync_conn.execute('LISTEN k')
    pid = sync_conn.get_server_pid()
    with mypgdriver.sync.connect(dsn) as killer:
        killer.execute('SELECT pg_terminate_backend($1)', pid)
    with pytest.raises(mypgdriver.exceptions.PostgresError):
        list(sync_conn.notifies(timeout=5))


def test_calls_between_iterations_and_the_bounded_backlog(sync_conn: Connection, dsn: str) -> None:
    sync_conn.execute('LISTEN work')
    sync_conn.execute("NOTIFY work, 'first'")
    got = []
    with mypgdriver.sync.connect(dsn) as other:
        for note in sync_conn.notifies(timeout=0.5):
            got.append(note.payload)
            if note.payload == 'first':
                other.execute("NOTIFY work, 'second'")
                # a call between iterations receives it; the next iteration yields it
                assert sync_conn.fetchval('SELECT pg_sleep(0.1)::text') == ''
    assert got == ['first', 'second']

    from mypgdriver.sync.driver.backlog import NOTIFICATION_BACKLOG, NotificationBacklog
    assert NOTIFICATION_BACKLOG == 10_000
    backlog = NotificationBacklog(sync_conn._runner._glue, maxlen=2)
    for payload in 'abc':
        backlog.put(Notification(1, 'c', payload))
    assert len(backlog) == 2 and backlog.dropped == 1

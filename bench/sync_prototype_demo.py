"""Issue 24 prototype: the asyncio Connection/Session driven without an event loop.

    .venv/bin/python -m bench.sync_prototype_demo

Connects, runs fetchval/fetch, a transaction block, a timeout (CancelRequest
and drain, then the next call) and a Ctrl-C, all through
mypgdriver.sync._prototype, and checks that no event loop was ever running or
asked for.
"""
from __future__ import annotations

import asyncio
import asyncio.events
import os
import signal
import threading
import time

from mypgdriver.sync import _prototype as sync
from tools.pgcluster import PgCluster


def _forbid_loops() -> list:
    # Any attempt to get or make an event loop is recorded (and fails).
    asked: list = []
    policy = asyncio.get_event_loop_policy()

    def refuse(name):
        def method(*args, **kwargs):
            asked.append(name)
            raise AssertionError(f'event loop asked for: {name}')
        return method
    for name in ('get_event_loop', 'new_event_loop', 'set_event_loop'):
        setattr(policy, name, refuse(name))
    return asked


def main() -> None:
    asked = _forbid_loops()
    with PgCluster() as pg:
        conn = sync.connect(pg.dsn())
        checks = []

        def no_loop(label, value):
            assert asyncio._get_running_loop() is None
            checks.append(label)
            return value

        value = conn.fetchval('SELECT 1+1')
        print('fetchval(SELECT 1+1) =', no_loop('fetchval', value))
        rows = conn.fetch('SELECT * FROM pg_type')
        print('fetch(SELECT * FROM pg_type):', len(rows), 'rows; first:', rows[0]['typname'])
        print('fetchval with args:', conn.fetchval('SELECT $1::int + $2', 40, 2))

        # A loop-free check from inside the call itself: the server answers,
        # the glue is running the call, and asyncio sees no running loop.
        conn._aconn._session.query_loggers.append(
            lambda record: no_loop('inside-call', None))
        conn.fetchval('SELECT 3')
        conn._aconn._session.query_loggers.clear()

        with conn.transaction():
            conn.execute('CREATE TEMP TABLE t (x int)')
            conn.execute('INSERT INTO t VALUES ($1)', 1)
            print('in transaction:', conn._aconn.is_in_transaction())
        print('after block, in transaction:', conn._aconn.is_in_transaction(),
              'rows:', conn.fetchval('SELECT count(*) FROM t'))

        started = time.monotonic()
        try:
            conn.fetchval('SELECT pg_sleep(5)', timeout=0.3)
        except asyncio.TimeoutError as exc:
            print(f'timeout after {time.monotonic() - started:.2f} s: {exc}')
        started = time.monotonic()
        print('next call after the timeout:', conn.fetchval('SELECT 1+1'),
              f'({time.monotonic() - started:.3f} s: it waited for the drain)')

        # Ctrl-C during a blocking read.
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        try:
            conn.fetchval('SELECT pg_sleep(5)')
        except KeyboardInterrupt:
            print(f'KeyboardInterrupt after {time.monotonic() - started:.2f} s')
        started = time.monotonic()
        print('next call after Ctrl-C:', conn.fetchval('SELECT 1+1'),
              f'({time.monotonic() - started:.3f} s)')
        print('backend still the same, in sync:', conn.fetchval('SELECT pg_backend_pid()')
              == conn._aconn.get_server_pid())

        conn.close()
        print('closed:', conn._aconn.is_closed())
    assert not asked, asked
    assert asyncio._get_running_loop() is None
    print('no event loop was asked for; checks:', checks)


if __name__ == '__main__':
    main()

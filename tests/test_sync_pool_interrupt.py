"""Ctrl-C in a sync pool call: the pool's accounting stays right (issue 24).

A KeyboardInterrupt is delivered, without signals (tests/support/interrupts.py),
at every line run of the pool's Python code (mypgdriver/sync/pool.py,
pooled.py and the mypgdriver/pool/ helpers they call) and before every
blocking wait (the pool's own waits and those of its connections), one
point per run, for each kind of pool call:

* acquire() taking an idle connection, opening one in a free slot, or
  waiting in line until another thread releases one;
* release() of a connection whose session was changed (the reset runs);
* a ``with pool.acquire() as conn:`` block, a shortcut (pool.fetchval);
* close() while a connection is still in use.

After each point, with nothing held any more: no acquire is left waiting;
get_size() is the number of the pool's backends the server lists
(pg_stat_activity, by application_name) and equals get_idle_size(); two
acquires (max_size=2) succeed at once, the connections they return are in
sync and reset, and a third times out with the pool's message "all 2
connections are in use" (no slot leaked, none counted twice).  After an
interrupted close(): the pool is closed, no backend is left, close()
(again, or for the first time if the interrupt came before it began)
returns at once and acquire() is refused.
"""
from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
import uuid
from typing import Any, Callable, Iterator, Optional

import pytest

import mypgdriver
import mypgdriver.sync as sync
from mypgdriver.sync import Connection, Pool
from tests.support.interrupts import Bomb, LineTrace
from tests.support.waiting import SETTLE

pytestmark = pytest.mark.usefixtures('no_event_loop')

PACKAGE_DIR = os.path.dirname(mypgdriver.__file__)
TRACED = (
    os.path.join(PACKAGE_DIR, 'sync', 'pool.py'),
    os.path.join(PACKAGE_DIR, 'sync', 'pooled.py'),
    os.path.join(PACKAGE_DIR, 'pool', ''),
)
MAX_SIZE = 2
DEFAULT_SEARCH_PATH = '"$user", public'
FULL = r'all 2 connections \(max_size=2\) are in use and no other thread is waiting'


def traced(filename: str) -> bool:
    return filename.startswith(TRACED)


def set_pool_wait_hook(pool: Pool, hook: Optional[Callable[[], None]]) -> None:
    """Called before each of the pool's own blocking waits (in line, in close())."""
    pool._core.wait_hook = hook


def wait_until(condition: Callable[[], bool], what: Callable[[], str],
               timeout: float = SETTLE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.005)


class Harness:
    """Fresh pools (max_size=2, min_size=0) whose calls can be interrupted at one point."""

    def __init__(self, dsn: str, observer: Connection) -> None:
        self.dsn = dsn
        self.observer = observer
        self.prefix = f'syncpoolintr-{uuid.uuid4().hex[:8]}'
        self.app_name = ''
        self.bomb: Optional[Bomb] = None
        self.pools: list[Pool] = []

    def _wait_tick(self) -> None:
        # Only the interrupted call's thread (KeyboardInterrupt reaches the
        # main thread only): not a releasing thread's reset.
        if self.bomb is not None and threading.current_thread() is threading.main_thread():
            self.bomb.tick()

    def _connect(self, dsn: Optional[str], **kwargs: Any) -> Connection:
        con = sync.connect(dsn, **kwargs)
        # (the connection's own waits: the reset's queries, a shortcut's)
        con._runner._glue.wait_hook = self._wait_tick
        return con

    def new_pool(self, label: str) -> Pool:
        self.app_name = f'{self.prefix}-{label}'
        pool = sync.create_pool(self.dsn, min_size=0, max_size=MAX_SIZE, connect=self._connect,
                                server_settings={'application_name': self.app_name})
        set_pool_wait_hook(pool, self._wait_tick)
        self.pools.append(pool)
        return pool

    def backends(self) -> int:
        return int(self.observer.fetchval(
            'SELECT count(*) FROM pg_stat_activity WHERE application_name = $1', self.app_name))

    def run(self, bomb: Bomb, call: Callable[[], Any]) -> tuple[bool, Any]:
        """(interrupted, result) of `call` with `bomb` armed at every line and wait."""
        self.bomb = bomb
        try:
            with LineTrace(bomb, traced):
                try:
                    return False, call()
                except KeyboardInterrupt:
                    assert bomb.fired, 'a KeyboardInterrupt nobody delivered'
                    return True, None
        finally:
            self.bomb = None

    def check_usable(self, pool: Pool) -> None:
        """Nothing held: the accounting is right and max_size connections can be had."""
        assert pool.get_stats().waiters == 0, 'an acquire is still counted as waiting'
        wait_until(lambda: self.backends() == pool.get_size(),
                   lambda: f'get_size() {pool.get_size()} != backends {self.backends()}')
        assert pool.get_idle_size() == pool.get_size(), (
            f'{pool.get_size() - pool.get_idle_size()} connection(s) still checked out')
        stats = pool.get_stats()
        assert (stats.size, stats.idle, stats.waiters) == (pool.get_size(), pool.get_size(), 0)
        held = [pool.acquire(timeout=1), pool.acquire(timeout=1)]
        try:
            with pytest.raises(asyncio.TimeoutError, match=FULL):
                pool.acquire(timeout=0.02)
            for con in held:
                assert con.fetchval('SELECT $1::int + 1', 41) == 42
                assert con.fetchval('SHOW search_path') == DEFAULT_SEARCH_PATH
                assert not con.is_in_transaction()
            assert (pool.get_size(), pool.get_idle_size()) == (MAX_SIZE, 0)
            wait_until(lambda: self.backends() == MAX_SIZE,
                       lambda: f'{self.backends()} backends, not max_size')
        finally:
            for con in held:
                pool.release(con)
        assert pool.get_idle_size() == pool.get_size() == MAX_SIZE

    def check_closed(self, pool: Pool) -> None:
        # (an interrupt before close() began leaves the pool open: closed here)
        started = time.monotonic()
        pool.close()
        # (waiting for a slot nobody holds never ends; a loaded machine adds
        # a fraction of a second)
        assert time.monotonic() - started < 5, 'close() waited for slots nobody holds'
        assert (pool.get_size(), pool.get_idle_size(), pool.get_stats().waiters) == (0, 0, 0)
        wait_until(lambda: self.backends() == 0, lambda: 'a backend outlived the closed pool')
        with pytest.raises(mypgdriver.exceptions.InterfaceError, match='pool is closed'):
            pool.acquire(timeout=1)

    def close(self) -> None:
        for pool in self.pools:
            pool.terminate()


@pytest.fixture
def harness(pg_cluster: Any, no_event_loop: list[str]) -> Iterator[Harness]:
    with sync.connect(pg_cluster.dsn()) as observer:
        h = Harness(pg_cluster.dsn(), observer)
        try:
            yield h
        finally:
            h.close()


class Scenario:
    """One kind of pool call: its set-up, the call, and what is given back after it."""

    closes = False

    def prepare(self, pool: Pool) -> None:
        pass

    def call(self, pool: Pool) -> Any:
        raise NotImplementedError

    def settle(self, pool: Pool, result: Any) -> None:
        """After the call, interrupted or not: give back whatever the test still holds."""


def sweep(h: Harness, scenario: Scenario) -> int:
    """Interrupt the scenario at each point in turn; the number of interrupts delivered."""
    pool = h.new_pool('count')
    scenario.prepare(pool)
    counter = Bomb(None)
    _, result = h.run(counter, lambda: scenario.call(pool))
    scenario.settle(pool, result)
    pool.terminate()
    assert counter.count > 0
    delivered = 0
    failures = []
    for at in range(counter.count + 1):
        pool = h.new_pool(str(at))
        try:
            scenario.prepare(pool)
            interrupted, result = h.run(Bomb(at), functools.partial(scenario.call, pool))
            delivered += interrupted
            scenario.settle(pool, result)
            if scenario.closes:
                h.check_closed(pool)
            else:
                h.check_usable(pool)
        except Exception as e:
            failures.append(f'#{at}/{counter.count}: {type(e).__name__}: {e}')
        finally:
            while ReleasedByAnotherThread.running:
                ReleasedByAnotherThread.running.pop().join()
            pool.terminate()
    print(f'{type(scenario).__name__}: {delivered} interrupts, {len(failures)} failed')
    assert not failures, '\n'.join(failures)
    assert delivered > 0
    return delivered


def release_if_held(pool: Pool, con: Any) -> None:
    if con is not None and con._con is not None:
        pool.release(con)


class ReleasedByAnotherThread:
    """Releases `con` from another thread once an acquire waits (or the call is over)."""

    running: list[ReleasedByAnotherThread] = []

    def __init__(self, pool: Pool, con: Any, when: Callable[[], bool]) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(pool, con, when))
        self.thread.start()
        self.running.append(self)

    def _run(self, pool: Pool, con: Any, when: Callable[[], bool]) -> None:
        while not self.done.is_set() and not when():
            time.sleep(0.0005)
        pool.release(con)

    def join(self) -> None:
        self.done.set()
        self.thread.join()


def _make_idle(pool: Pool, n: int) -> None:
    held = [pool.acquire() for _ in range(n)]
    for con in held:
        pool.release(con)


class AcquireIdle(Scenario):
    def prepare(self, pool: Pool) -> None:
        _make_idle(pool, 1)

    def call(self, pool: Pool) -> Any:
        return pool.acquire(timeout=5)

    def settle(self, pool: Pool, result: Any) -> None:
        release_if_held(pool, result)


class AcquireOpening(AcquireIdle):
    def prepare(self, pool: Pool) -> None:
        pass


class AcquireWaiting(Scenario):
    def prepare(self, pool: Pool) -> None:
        self.held = [pool.acquire(), pool.acquire()]
        self.releaser = ReleasedByAnotherThread(
            pool, self.held[0], lambda: pool.get_stats().waiters > 0)

    def call(self, pool: Pool) -> Any:
        return pool.acquire(timeout=5)

    def settle(self, pool: Pool, result: Any) -> None:
        self.releaser.join()
        pool.release(self.held[1])
        release_if_held(pool, result)


class ReleaseWithReset(Scenario):
    def prepare(self, pool: Pool) -> None:
        self.con = pool.acquire()
        self.con.execute('SET search_path TO pg_catalog')

    def call(self, pool: Pool) -> Any:
        pool.release(self.con)

    def settle(self, pool: Pool, result: Any) -> None:
        # An interrupt before the release began leaves the connection held.
        release_if_held(pool, self.con)


class WithBlock(Scenario):
    def prepare(self, pool: Pool) -> None:
        _make_idle(pool, 1)

    def call(self, pool: Pool) -> Any:
        with pool.acquire(timeout=5) as con:
            con.execute('SET search_path TO pg_catalog')
            return con.fetchval('SELECT 1')


class Shortcut(Scenario):
    def prepare(self, pool: Pool) -> None:
        _make_idle(pool, 1)

    def call(self, pool: Pool) -> Any:
        return pool.fetchval('SELECT $1::int', 7)


class CloseWithOneInUse(Scenario):
    closes = True

    def prepare(self, pool: Pool) -> None:
        _make_idle(pool, 1)
        con = pool.acquire()
        self.releaser = ReleasedByAnotherThread(pool, con, pool.is_closing)

    def call(self, pool: Pool) -> Any:
        pool.close(timeout=5)

    def settle(self, pool: Pool, result: Any) -> None:
        self.releaser.join()


@pytest.mark.parametrize('scenario', [
    AcquireIdle, AcquireOpening, AcquireWaiting, ReleaseWithReset, WithBlock, Shortcut,
    CloseWithOneInUse,
], ids=lambda s: s.__name__)
def test_interrupted_pool_call_keeps_the_accounting(harness: Harness,
                                                    scenario: type[Scenario]) -> None:
    sweep(harness, scenario())

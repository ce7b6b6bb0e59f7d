"""The pool core (mypgdriver/pool/core.pyx) driven directly: both pools' decisions, no server.

The core does no I/O: stand-in connections and waiters are enough to check
every promise it keeps for both pools (slots, FIFO line, nothing broken
handed out, lifetimes, refill, close and terminate, the timeout message).
The sync pool's thread driver is driven too, with stand-in hooks, for the
promises it keeps with threads (reset on release, FIFO across threads,
close and terminate).  The same promises are tested through each pool, with
a server, in tests/test_pool*.py and tests/test_sync_pool*.py.
"""
from __future__ import annotations

import threading
import time
from typing import Any, List, Optional

import pytest

from mypgdriver import exceptions
from mypgdriver.pool.core import (
    BROKEN,
    CLOSING,
    GONE,
    HANDED,
    IDLE,
    NEW_SLOT,
    RELEASED_CLOSING,
    RESET_FAILED,
    RETIRED,
    RETRY_DELAY_FIRST,
    RETRY_DELAY_MAX,
    REUSABLE,
    Backoff,
    PoolCore,
    PooledConnection,
    Waiter,
)
from mypgdriver.pool.stats import PoolCounters


class StandInConnection:
    """What the core sees of a connection: nothing (it never touches one)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False

    def __repr__(self) -> str:
        return f'<con {self.name}>'


class ListWaiter(Waiter):
    """A waiter that records what it was handed; `gone` ones refuse (timed out meanwhile)."""

    def __init__(self, gone: bool = False) -> None:
        self.gone = gone
        self.items: List[Any] = []
        self.failures: List[str] = []

    def deliver(self, item: Any) -> bool:
        if self.gone:
            return False
        self.items.append(item)
        return True

    def fail(self, message: str) -> None:
        self.failures.append(message)


def make_core(min_size: int = 0, max_size: int = 2, max_queries: int = 100,
              max_inactive: float = 0.0) -> PoolCore:
    return PoolCore(PoolCounters(), min_size=min_size, max_size=max_size,
                    max_queries=max_queries, max_inactive=max_inactive)


def open_one(core: PoolCore, name: str = 'c') -> PooledConnection:
    """What a driver does with a free slot: open a connection in it and register it."""
    assert core.take() is NEW_SLOT
    entry = PooledConnection(StandInConnection(name), core.generation)
    assert core.register(entry)
    return entry


# --- slots and the idle list ---

def test_take_opens_new_slots_up_to_max_size_then_says_wait() -> None:
    core = make_core(max_size=2)
    assert core.take() is NEW_SLOT
    assert core.take() is NEW_SLOT
    assert core.take() is None
    assert core.slots == 2


def test_take_gives_the_most_recently_released_idle_connection() -> None:
    core = make_core(max_size=2)
    a, b = open_one(core, 'a'), open_one(core, 'b')
    assert core.make_available(a, 1.0) == IDLE
    assert core.make_available(b, 2.0) == IDLE
    assert core.take() is b
    assert core.take() is a
    assert core.take() is None


def test_take_never_passes_waiters_even_with_a_free_slot() -> None:
    core = make_core(max_size=2)
    open_one(core)
    waiter = ListWaiter()
    core.join_line(waiter)
    assert core.take() is None
    assert not core.take_slot()
    assert core.slots == 1


def test_a_freed_slot_goes_to_the_first_waiter_not_back_to_the_pool() -> None:
    core = make_core(max_size=1)
    entry = open_one(core)
    waiter = ListWaiter()
    core.join_line(waiter)
    assert core.retire(entry)
    assert core.slot_freed()            # handed over
    assert waiter.items == [NEW_SLOT]
    assert core.slots == 1              # the waiter holds it now
    assert core.counters.closed == 1


def test_a_slot_freed_with_nobody_waiting_is_free_again() -> None:
    core = make_core(max_size=1)
    entry = open_one(core)
    assert core.retire(entry)
    assert not core.slot_freed()
    assert core.slots == 0
    assert core.take() is NEW_SLOT


# --- the line: first come, first served ---

def test_waiters_are_served_first_come_first_served() -> None:
    core = make_core(max_size=1)
    entry = open_one(core)
    first, second = ListWaiter(), ListWaiter()
    core.join_line(first)
    core.join_line(second)
    assert core.waiting == 2
    assert core.make_available(entry, 0.0) == HANDED
    assert (first.items, second.items) == ([entry], [])
    assert core.line_length() == 1


def test_a_waiter_gone_in_the_same_instant_passes_its_turn_on() -> None:
    core = make_core(max_size=1)
    entry = open_one(core)
    gone, next_one = ListWaiter(gone=True), ListWaiter()
    core.join_line(gone)
    core.join_line(next_one)
    assert core.make_available(entry, 0.0) == HANDED
    assert next_one.items == [entry]


def test_a_forgotten_waiter_is_never_served() -> None:
    core = make_core(max_size=1)
    entry = open_one(core)
    waiter = ListWaiter()
    core.join_line(waiter)
    core.forget(waiter)
    core.resumed()
    assert core.make_available(entry, 0.0) == IDLE
    assert waiter.items == []
    assert core.waiting == 0


def test_timeout_message_says_how_many_are_in_use_and_how_many_wait() -> None:
    core = make_core(max_size=2)
    open_one(core)
    open_one(core)
    me, other = ListWaiter(), ListWaiter()
    core.join_line(me)
    core.join_line(other)
    core.forget(me)
    error = core.timeout_error(0.5, 'thread')
    assert isinstance(error, TimeoutError)
    assert str(error) == ('pool.acquire() timed out after 0.5 s: all 2 connections '
                          '(max_size=2) are in use and 1 other thread is waiting')


def test_timeout_message_counts_slots_still_being_opened() -> None:
    core = make_core(max_size=2)
    open_one(core)
    assert core.take() is NEW_SLOT      # being opened
    error = core.timeout_error(1, 'task')
    assert str(error) == ('pool.acquire() timed out after 1 s: 1 connection in use and 1 being '
                          'opened (max_size=2), and no other task is waiting')


# --- release: nothing broken is handed out, max_queries, expiry ---

def test_a_connection_in_an_unknown_state_is_never_reused() -> None:
    core = make_core()
    entry = open_one(core)
    assert core.release_verdict(entry, True) == BROKEN
    core.count_release(BROKEN)
    assert core.counters.broken == 1


def test_a_connection_past_max_queries_is_retired() -> None:
    core = make_core(max_queries=3)
    entry = open_one(core)
    entry.queries = 2
    assert core.release_verdict(entry, False) == REUSABLE
    entry.queries = 3
    assert core.release_verdict(entry, False) == RETIRED


def test_expire_closes_idle_connections_now_and_retires_the_others_on_release() -> None:
    core = make_core(max_size=2)
    idle, in_use = open_one(core, 'idle'), open_one(core, 'in use')
    core.make_available(idle, 0.0)
    assert core.expire() == [idle]
    assert not core.fresh(in_use)
    assert core.release_verdict(in_use, False) == RETIRED
    fresh = PooledConnection(StandInConnection('new'), core.generation)
    assert core.fresh(fresh)


def test_a_release_while_closing_resets_nothing() -> None:
    core = make_core()
    entry = open_one(core)
    core.begin_close('pool is closing')
    assert core.release_verdict(entry, False) == RELEASED_CLOSING


def test_release_outcomes_are_counted() -> None:
    core = make_core()
    for verdict in (REUSABLE, REUSABLE, RESET_FAILED, BROKEN, RETIRED):
        core.count_release(verdict)
    counters = core.counters
    assert (counters.resets, counters.reset_failures, counters.broken) == (2, 1, 1)


def test_acquires_are_counted_with_their_wait() -> None:
    core = make_core()
    core.count_acquire(0.0, False)
    core.count_acquire(0.05, True)
    stats = core.snapshot()
    assert (stats.acquires, stats.acquires_waited) == (2, 1)
    assert stats.wait_time_max == 0.05
    assert dict(stats.wait_histogram)[0.001] == 1
    assert dict(stats.wait_histogram)[0.1] == 1


# --- lifetimes and min_size ---

def test_idle_connections_above_min_size_expire_after_the_lifetime() -> None:
    core = make_core(min_size=1, max_size=3, max_inactive=10.0)
    a, b, c = open_one(core, 'a'), open_one(core, 'b'), open_one(core, 'c')
    core.make_available(a, 0.0)
    core.make_available(b, 5.0)
    core.make_available(c, 8.0)
    assert core.next_expiry() == 10.0
    assert core.take_expired(9.0) == []
    # The oldest first, and never below min_size (c stays although old enough).
    assert core.take_expired(100.0) == [a, b]


def test_no_lifetime_keeps_idle_connections() -> None:
    core = make_core(min_size=0, max_size=1, max_inactive=0.0)
    core.make_available(open_one(core), 0.0)
    assert core.next_expiry() is None
    assert core.take_expired(1e9) == []


def test_refill_reserves_the_slots_missing_to_min_size() -> None:
    core = make_core(min_size=3, max_size=5)
    open_one(core)
    assert core.reserve_refill(10) == 2
    assert core.slots == 3
    assert core.reserve_refill(10) == 0
    core.begin_close('pool is closing')
    assert core.reserve_refill(10) == 0


def test_backoff_doubles_up_to_its_cap_and_starts_over_after_success() -> None:
    backoff = Backoff(0.05, 0.3)
    assert backoff.first_failure
    assert [backoff.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    assert not backoff.first_failure
    backoff.reset()
    assert backoff.next() == 0.05


def test_backoff_defaults_are_the_pools_delays() -> None:
    backoff = Backoff()
    assert (backoff.first, backoff.cap) == (RETRY_DELAY_FIRST, RETRY_DELAY_MAX)


class EntrySubclass(PooledConnection):
    """Not exactly a PooledConnection: the core falls back to attribute look-ups."""

    __slots__ = ()


def test_the_core_reads_and_sets_an_entrys_attributes_whatever_its_class() -> None:
    # The core reads an exact PooledConnection's slots at their offsets
    # (pool/slotaccess.pxd) and anything else by name: the same outcome.
    for cls in (PooledConnection, EntrySubclass):
        core = make_core(max_size=1, max_queries=2)
        assert core.take() is NEW_SLOT
        entry = cls(StandInConnection('c'), core.generation)
        assert core.register(entry)
        assert core.fresh(entry)
        assert core.release_verdict(entry, False) == REUSABLE
        entry.queries = 2
        assert core.release_verdict(entry, False) == RETIRED
        entry.queries = 0
        assert core.make_available(entry, 12.5) == IDLE
        assert entry.idle_since == 12.5
        core.expire()
        assert not core.fresh(entry)
        assert core.release_verdict(entry, False) == RETIRED


def test_the_core_raises_attribute_error_for_an_unset_slot() -> None:
    core = make_core()
    entry = PooledConnection.__new__(PooledConnection)   # no __init__: no slot set
    with pytest.raises(AttributeError):
        core.fresh(entry)


# --- close and terminate ---

def test_close_fails_the_waiters_and_returns_the_idle_connections() -> None:
    core = make_core(max_size=2)
    idle, in_use = open_one(core, 'idle'), open_one(core, 'in use')
    core.make_available(idle, 0.0)
    waiter = ListWaiter()
    core.join_line(waiter)
    assert core.begin_close('pool is closing') == [idle]
    assert waiter.failures == ['pool is closing']
    assert core.make_available(in_use, 0.0) == CLOSING
    # Closing the two: close() waits until no slot is left.
    for entry in (idle, in_use):
        assert core.retire(entry)
        assert not core.slot_freed()
    assert core.drained()
    core.finish_close()
    assert (core.closing, core.closed) == (False, True)


def test_a_connection_opened_while_closing_is_not_kept() -> None:
    core = make_core()
    assert core.take() is NEW_SLOT
    core.begin_close('pool is closing')
    assert not core.register(PooledConnection(StandInConnection('late'), 0))


def test_terminate_takes_every_connection_and_its_slot_at_once() -> None:
    core = make_core(max_size=2)
    a, b = open_one(core, 'a'), open_one(core, 'b')
    core.make_available(a, 0.0)
    waiter = ListWaiter()
    core.join_line(waiter)
    assert set(core.terminate('pool is closed')) == {a, b}
    assert waiter.failures == ['pool is closed']
    assert (core.slots, len(core.all), len(core.idle)) == (0, 0, 0)
    assert core.counters.closed == 2
    # A release or replacement in flight finds its connection gone: no slot
    # is freed twice.
    assert not core.retire(b)
    assert core.make_available(b, 0.0) == GONE
    assert core.drained()


def test_a_dead_idle_connection_leaves_the_idle_list() -> None:
    core = make_core(max_size=2)
    a, b = open_one(core, 'a'), open_one(core, 'b')
    core.make_available(a, 0.0)
    assert core.remove_idle(a)
    assert not core.remove_idle(a)
    assert not core.remove_idle(b)      # in use: dealt with on release


# --- the thread driver (mypgdriver/sync/driver/poolcore.pyx), with stand-in hooks ---

class StandInHooks:
    """The hooks a sync Pool gives its thread driver, recording what is done."""

    def __init__(self, reset_ok: bool = True) -> None:
        self.log: List[str] = []
        self.reset_ok = reset_ok
        self.opened = 0
        self._core: Any = None

    def open_connection(self, dsn: Optional[str], kwargs: dict,
                        time_left: Optional[float]) -> StandInConnection:
        self.opened += 1
        return StandInConnection(str(self.opened))

    def idle_connection_alive(self, con: StandInConnection) -> bool:
        return not con.closed

    def begin_checkout(self, con: StandInConnection, proxy: Any) -> None:
        self.log.append(f'checkout {con.name}')

    def end_checkout(self, con: StandInConnection, core: Any, entry: Any,
                     timeout: Optional[float]) -> int:
        self.log.append(f'checkin {con.name}')
        verdict: int = core.release_verdict(entry, con.closed)
        if verdict != REUSABLE:
            return verdict
        self.log.append(f'reset {con.name}')
        return REUSABLE if self.reset_ok else RESET_FAILED

    def close_connection(self, con: StandInConnection, graceful: bool) -> None:
        con.closed = True
        self.log.append(f'{"close" if graceful else "terminate"} {con.name}')

    def terminate_connection(self, con: StandInConnection, in_use: bool) -> None:
        con.closed = True
        self.log.append(f'terminate {con.name}')

    def log_close_timeout(self, timeout: float, in_use: int) -> None:
        self.log.append(f'close timed out with {in_use}')

    def join(self) -> None:
        pass    # no background thread here


def make_driver(hooks: StandInHooks, max_size: int = 1, max_queries: int = 100) -> Any:
    from mypgdriver.sync.driver.poolcore import ThreadDriver
    from mypgdriver.sync.pooled import PoolConnectionProxy

    driver = ThreadDriver(hooks, hooks, PoolConnectionProxy, PoolCounters(), min_size=0,
                          max_size=max_size, max_queries=max_queries, max_inactive=0.0,
                          connect_dsn=None, connect_kwargs={})
    hooks._core = driver
    return driver


def test_thread_driver_resets_a_released_connection_before_reuse() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks)
    proxy = driver.acquire(None)
    driver.release(proxy, None)
    again = driver.acquire(None)
    assert again is not proxy
    assert hooks.log == ['checkout 1', 'checkin 1', 'reset 1', 'checkout 1']
    assert driver.core.counters.resets == 1


def test_thread_driver_replaces_a_connection_whose_reset_failed() -> None:
    hooks = StandInHooks(reset_ok=False)
    driver = make_driver(hooks)
    driver.release(driver.acquire(None), None)
    assert hooks.log[-1] == 'terminate 1'
    driver.acquire(None)
    assert hooks.log[-1] == 'checkout 2'
    assert driver.core.counters.reset_failures == 1


def test_thread_driver_never_hands_out_a_connection_found_dead() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks)
    proxy = driver.acquire(None)
    driver.release(proxy, None)
    proxy._entry.con.closed = True      # the server dropped it while idle
    driver.acquire(None)
    assert hooks.log[-2:] == ['close 1', 'checkout 2']


def test_thread_driver_retires_a_connection_past_max_queries() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks, max_queries=1)
    proxy = driver.acquire(None)
    proxy._entry.queries = 1
    driver.release(proxy, None)
    assert hooks.log[-1] == 'close 1'
    assert 'reset 1' not in hooks.log


def test_thread_driver_serves_waiting_threads_in_order() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks)
    held = driver.acquire(None)
    served: List[int] = []

    def wait(n: int) -> None:
        proxy = driver.acquire(5.0)
        served.append(n)
        driver.release(proxy, None)

    threads = []
    for n in range(3):
        thread = threading.Thread(target=wait, args=(n,))
        thread.start()
        threads.append(thread)
        while driver.core.waiting < n + 1:  # in line before the next one comes
            time.sleep(0.001)
    driver.release(held, None)
    for thread in threads:
        thread.join(5)
    assert served == [0, 1, 2]


def test_thread_driver_times_out_saying_what_holds_the_connections() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks)
    driver.acquire(None)
    with pytest.raises(TimeoutError, match='the only connection .* no other thread'):
        driver.acquire(0.01)
    assert driver.core.counters.timeouts == 1
    assert driver.core.waiting == 0


def test_thread_driver_close_waits_for_releases_and_terminate_takes_all() -> None:
    hooks = StandInHooks()
    driver = make_driver(hooks, max_size=2)
    proxy = driver.acquire(None)
    assert driver.close(0.01)                   # not released in time: terminated
    assert hooks.log[-2:] == ['close timed out with 1', 'terminate 1']
    assert proxy._con is None                   # the handle died with the pool
    with pytest.raises(exceptions.InterfaceError, match='closed'):
        driver.acquire(None)

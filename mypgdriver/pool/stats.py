"""Pool statistics: the counters a pool keeps as it runs, and the snapshot users get."""
from __future__ import annotations

import bisect
import dataclasses
from typing import List, Tuple

__all__ = ('WAIT_HISTOGRAM_BOUNDS', 'PoolStats', 'PoolCounters')

#: Upper bounds (seconds) of the acquire wait-time histogram buckets.
WAIT_HISTOGRAM_BOUNDS: Tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, float('inf'))


@dataclasses.dataclass(frozen=True)
class PoolStats:
    """A snapshot of a pool's counters, from :meth:`Pool.get_stats`.

    Counters run from the pool's creation.  Wait times are measured from the
    call to ``acquire()`` until a connection is obtained (including opening
    one when needed, excluding the ``setup`` callback); an acquire served
    from an idle connection waited exactly ``0.0`` seconds.
    """

    #: Open connections (idle and in use).
    size: int
    #: Open connections nobody holds.
    idle: int
    min_size: int
    max_size: int
    #: Connections opened successfully (including by ``init``).
    connections_opened: int
    #: Connections the pool closed, terminated or found dead.
    connections_closed: int
    #: Failed attempts to open a connection (connect or ``init`` failed).
    connections_failed: int
    #: Successful acquires.
    acquires: int
    #: Acquires that found no idle connection (they queued or connected).
    acquires_waited: int
    #: Acquires waiting right now.
    waiters: int
    #: Sum and maximum of the wait times of successful acquires, in seconds.
    wait_time_total: float
    wait_time_max: float
    #: Acquires that raised asyncio.TimeoutError.
    timeouts: int
    #: Releases whose reset succeeded (the connection went back for reuse).
    resets: int
    #: Releases whose reset failed or was interrupted (connection terminated).
    reset_failures: int
    #: Connections replaced on release because they were unusable: closed,
    #: busy or released in the middle of an operation.
    broken_on_release: int
    #: ``(upper bound in seconds, count)`` of successful acquires per wait time.
    wait_histogram: Tuple[Tuple[float, int], ...]
    #: Shortcut calls (``pool.fetch()`` ...) that shared a connection with
    #: other shortcut calls in flight (pipelined onto it).
    shortcuts_pipelined: int = 0
    #: ``(in flight now, most ever in flight)`` per open connection.
    pipeline_depths: Tuple[Tuple[int, int], ...] = ()


class PoolCounters:
    """What a pool counts while it runs; :meth:`snapshot` turns it into a :class:`PoolStats`.

    The attributes are the running totals behind the :class:`PoolStats`
    fields of the same meaning; the pool adds to them directly.
    """

    __slots__ = ('opened', 'closed', 'failed', 'acquires', 'waited', 'wait_total', 'wait_max',
                 'timeouts', 'resets', 'reset_failures', 'broken', 'pipelined', 'histogram')

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0
        self.failed = 0
        self.acquires = 0
        self.waited = 0
        self.wait_total = 0.0
        self.wait_max = 0.0
        self.timeouts = 0
        self.resets = 0
        self.reset_failures = 0
        self.broken = 0
        self.pipelined = 0
        self.histogram: List[int] = [0] * len(WAIT_HISTOGRAM_BOUNDS)

    def count_acquire(self, waited: float) -> None:
        """A successful acquire that waited `waited` seconds (0.0: an idle connection)."""
        self.acquires += 1
        if waited:
            self.wait_total += waited
            if waited > self.wait_max:
                self.wait_max = waited
            self.histogram[bisect.bisect_left(WAIT_HISTOGRAM_BOUNDS, waited)] += 1
        else:
            self.histogram[0] += 1

    def snapshot(self, *, size: int, idle: int, min_size: int, max_size: int, waiters: int,
                 pipeline_depths: Tuple[Tuple[int, int], ...]) -> PoolStats:
        """These counters with the pool's current sizes, as a :class:`PoolStats`."""
        return PoolStats(
            size=size,
            idle=idle,
            min_size=min_size,
            max_size=max_size,
            connections_opened=self.opened,
            connections_closed=self.closed,
            connections_failed=self.failed,
            acquires=self.acquires,
            acquires_waited=self.waited,
            waiters=waiters,
            wait_time_total=self.wait_total,
            wait_time_max=self.wait_max,
            timeouts=self.timeouts,
            resets=self.resets,
            reset_failures=self.reset_failures,
            broken_on_release=self.broken,
            wait_histogram=tuple(zip(WAIT_HISTOGRAM_BOUNDS, self.histogram)),
            shortcuts_pipelined=self.pipelined,
            pipeline_depths=pipeline_depths,
        )

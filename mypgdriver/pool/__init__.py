"""Connection pool with asyncpg's API: create_pool(), Pool, acquire/release.

One job per module:

* ``pool``: :class:`Pool`, :func:`create_pool` and :class:`PoolAcquireContext`
  (acquire, release, refill, expiry, close, and the shortcut methods);
* ``core``: the pool core shared with mypgdriver.sync's pool (slots, idle
  list, the first-come-first-served line, lifetimes, what a release does),
  without I/O; ``pool`` is its asyncio driver;
* ``slots``: how an asyncio acquire waits in the core's line (a future);
* ``timeouts``: the message of an acquire that timed out in line;
* ``proxy``: :class:`PoolConnectionProxy`, the connection an acquire hands
  out, and its one retry of a first call on a connection lost while idle;
* ``reset``: what a released connection goes through before reuse;
* ``shortcuts``: which ``pool.fetch()``-style calls may share a connection;
* ``stats``: the counters and :class:`PoolStats`.
"""
from mypgdriver.pool.pool import Pool, PoolAcquireContext, create_pool
from mypgdriver.pool.proxy import PoolConnectionProxy

# Imported from here by the tests since before the pool was a package.
from mypgdriver.pool.shortcuts import may_share as _may_share  # noqa: F401
from mypgdriver.pool.stats import WAIT_HISTOGRAM_BOUNDS, PoolStats

__all__ = ('Pool', 'PoolAcquireContext', 'PoolConnectionProxy', 'PoolStats',
           'WAIT_HISTOGRAM_BOUNDS', 'create_pool')

"""The pool of mypgdriver.sync: create_pool() and a thread-safe Pool.

The asyncio pool's promises, kept with threads instead of tasks: both
pools share one core (mypgdriver/pool/core.pyx: slots, the idle list, the
waiting line, lifetimes, what a release does, the counters), the reset of
a released connection (pool/reset.py) and the end of a checkout
(pool/proxy.py).  The sync pool's driver is in mypgdriver/sync/driver/:
the core under a lock with waiting threads (poolcore.pyx), and the Python
steps it calls to open, check, reset and close a connection, with the
background thread (pool_hooks.py).  This module is the public API.

* **Slots.**  At most ``max_size`` connections exist or are being opened:
  a slot is taken (under the pool's lock) before a connection is opened
  and given up when it is closed.  A released connection, or a freed slot,
  is handed to the first waiting thread, so nobody is woken to find nothing.
* **Nothing broken is handed out.**  A sync connection reads its socket
  only during calls, so a backend terminated while idle is not noticed by
  itself: acquire() reads what the server sent meanwhile (one non-blocking
  poll) and replaces a connection found closed.  On release the connection
  is reset (an open transaction rolled back first, and notifications not
  yet yielded by notifies() dropped); one whose reset fails,
  or that is closed or not settled, is terminated and its slot refilled.
* **Background work** (opening connections up to ``min_size``, closing those
  idle past ``max_inactive_connection_lifetime``) is done by one daemon
  thread per pool, which close() and terminate() stop.  Acquires never wait
  for it: an acquire that finds no idle connection and a free slot opens
  one itself.
* **Ctrl-C.**  The slots, the idle list and the line of waiting acquires
  are kept by the compiled core, driven under a lock by a compiled driver
  (poolcore.pyx), which a KeyboardInterrupt cannot cut in the middle of a
  step; the Python code (opening, checking, resetting, closing a
  connection) runs as its hooks, and the driver puts back or closes what
  a step held when a hook raises.
"""
from __future__ import annotations

from types import TracebackType
from typing import Any, Optional

from mypgdriver.connecting.connector import resolve_json_option
from mypgdriver.pool.arguments import check_pool_arguments
from mypgdriver.pool.sizes import PoolSizes
from mypgdriver.pool.stats import PoolCounters
from mypgdriver.sync._pool_methods import PoolMethods
from mypgdriver.sync._pool_shortcuts import PoolShortcuts
from mypgdriver.sync.connection import Connection
from mypgdriver.sync.driver.pool_hooks import PoolHooks
from mypgdriver.sync.driver.poolcore import ThreadDriver
from mypgdriver.sync.pooled import PoolConnectionProxy

__all__ = ('Pool', 'PoolConnectionProxy', 'opened')


class Pool(PoolMethods, PoolShortcuts, PoolSizes[ThreadDriver]):
    """A thread-safe pool of :class:`mypgdriver.sync.Connection` (see :func:`create_pool`).

    ``with pool.acquire() as conn:`` takes a connection and gives it back at
    the end of the block; ``conn = pool.acquire()`` ... ``pool.release(conn)``
    does the same by hand.  Any thread may acquire and release; a connection
    is used by the thread that holds it (or shared, as any sync connection
    may be).  Waiting threads are served first come, first served.

    Opening connections up to ``min_size`` and closing those idle longer
    than ``max_inactive_connection_lifetime`` is done by a background
    daemon thread of the pool (stopped by :meth:`close` and
    :meth:`terminate`), never in the threads that call the pool.  An
    ``acquire()`` that finds no idle connection and a free slot opens one
    in its own thread, as the asyncio pool does in its task.

    A sync connection reads its socket only during calls: ``acquire()``
    reads what the server sent to an idle connection meanwhile (one
    non-blocking poll), so a backend terminated while idle is found closed
    and replaced before it is handed out.
    """

    def _configure(self, arguments: dict[str, Any]) -> None:
        """Set the pool up from its __init__'s arguments (by name: PoolMethods.__init__)."""
        self._init_size = check_pool_arguments(Connection, 'mypgdriver.sync.Connection', arguments)
        self._min_size = min_size = arguments['min_size']
        self._max_size = max_size = arguments['max_size']
        self._counters = PoolCounters()
        # How connections are opened, checked, reset and closed (Python),
        # and the background thread.
        self._hooks = PoolHooks(
            connect=arguments['connect'], setup=arguments['setup'], init=arguments['init'],
            reset=arguments['reset'], connection_class=arguments['connection_class'],
            record_class=arguments['record_class'], json=resolve_json_option(arguments['json']),
            min_size=min_size)
        # The pool core (slots, idle connections, waiting acquires) under its
        # lock, driven with threads (compiled: Ctrl-C safe).
        self._core = ThreadDriver(
            self, self._hooks, PoolConnectionProxy, self._counters, min_size=min_size,
            max_size=max_size, max_queries=arguments['max_queries'],
            max_inactive=arguments['max_inactive_connection_lifetime'],
            connect_dsn=arguments['dsn'], connect_kwargs=arguments['connect_kwargs'],
            connect_retry_timeout=arguments['connect_retry_timeout'])
        # db.client.connection.pool.name (tracing.name_pool(), once tracing is live).
        self._otel_pool_name: Optional[str] = None

    def __repr__(self) -> str:
        core = self._core
        state = 'closed' if core.closed else 'closing' if core.closing else 'open'
        size, idle = core.sizes()
        return (f'<mypgdriver.sync.Pool {state} size={size} idle={idle} '
                f'min={self._min_size} max={self._max_size}>')

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # (get_stats(), acquire(), release(), close() ...: PoolMethods, and the shortcuts,
    # pool.fetch() ...: PoolShortcuts, both generated by tools/gen_sync.py.)


def opened(pool: Pool) -> Pool:
    """`pool` with its first connections open and its background thread started (create_pool())."""
    pool._core.start(pool._init_size, f'mypgdriver.sync.Pool-{id(pool):#x}')
    return pool

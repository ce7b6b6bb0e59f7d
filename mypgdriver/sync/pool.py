"""The pool of mypgdriver.sync: create_pool() and a thread-safe Pool.

The asyncio pool's promises, kept with threads instead of tasks: both
pools share one core (mypgdriver/pool/core.pyx: slots, the idle list, the
waiting line, lifetimes, what a release does, the counters), the reset of
a released connection (pool/reset.py) and the end of a checkout
(pool/proxy.py).  This module is the sync pool's own part: how to open,
check, reset and close a connection (the hooks of its thread driver,
poolcore.pyx), the background thread, and the public API.

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
  step; the Python code here (opening,
  checking, resetting, closing a connection) runs as its hooks, and the
  core puts back or closes what a step held when a hook raises.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from types import TracebackType
from typing import (
    Any,
    Callable,
    Optional,
    Union,
)

from mypgdriver import exceptions, tracing
from mypgdriver.connecting.connector import resolve_json_option
from mypgdriver.pool.core import Backoff
from mypgdriver.pool.pool import with_json
from mypgdriver.pool.proxy import begin_checkout, end_checkout
from mypgdriver.pool.reset import default_reset, end_open_transaction, in_unknown_state
from mypgdriver.pool.stats import PoolCounters, PoolStats
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows
from mypgdriver.sync._pool_shortcuts import PoolShortcuts
from mypgdriver.sync.connect import connect as sync_connect
from mypgdriver.sync.connection import (
    Connection,
    async_connection,
    forget_notifications,
    read_pending_input,
    run_async,
)
from mypgdriver.sync.poolcore import RESET_FAILED, REUSABLE, ThreadDriver
from mypgdriver.sync.pooled import PoolConnectionProxy
from mypgdriver.tracing import TELEMETRY
from mypgdriver.types import JsonCodec

__all__ = ('Pool', 'create_pool', 'PoolConnectionProxy')

logger = logging.getLogger('mypgdriver.pool')

# How often the background thread wakes with nothing to do (it is also woken
# whenever a slot is freed below min_size or a connection goes idle).
_MAINTENANCE_INTERVAL = 1.0


class Pool(PoolShortcuts):
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

    def __init__(self, dsn: Optional[str] = None, *,
                 min_size: int,
                 max_size: int,
                 max_queries: int,
                 max_inactive_connection_lifetime: float,
                 connect: Optional[Callable[..., Connection]] = None,
                 setup: Optional[Callable[[Connection], object]] = None,
                 init: Optional[Callable[[Connection], object]] = None,
                 reset: Optional[Callable[[Connection], object]] = None,
                 connection_class: type[Connection] = Connection,
                 record_class: type[Record] = Record,
                 row_factory: Optional[RowFactory[Any]] = None,
                 json: Union[bool, JsonCodec] = False,
                 **connect_kwargs: Any) -> None:
        if max_size <= 0:
            raise ValueError('max_size is expected to be greater than zero')
        if min_size < 0:
            raise ValueError('min_size is expected to be greater or equal to zero')
        if min_size > max_size:
            raise ValueError('min_size is greater than max_size')
        if max_queries <= 0:
            raise ValueError('max_queries is expected to be greater than zero')
        if max_inactive_connection_lifetime < 0:
            raise ValueError(
                'max_inactive_connection_lifetime is expected to be greater or equal to zero')
        if not (isinstance(connection_class, type) and issubclass(connection_class, Connection)):
            raise TypeError(f'connection_class is expected to be a subclass of '
                            f'mypgdriver.sync.Connection, got {connection_class!r}')
        if not (isinstance(record_class, type) and issubclass(record_class, Record)):
            raise TypeError(f'record_class is expected to be a subclass of '
                            f'mypgdriver.Record, got {record_class!r}')
        if row_factory is not None:
            if record_class is not Record:
                raise TypeError('pass record_class or row_factory to the pool, not both')
            choose_rows(None, row_factory)      # (refuses what is not callable)
            # Passed on to connect() only when given (a `connect` callback
            # may not know the argument).
            connect_kwargs['row_factory'] = row_factory
        self._min_size = min_size
        self._max_size = max_size
        self._max_queries = max_queries
        self._max_inactive = max_inactive_connection_lifetime
        self._connect_fn = connect
        self._setup = setup
        self._init = init
        self._reset = reset
        self._connection_class = connection_class
        self._record_class = record_class
        # json=: given to every connection the pool opens (see with_json()).
        self._json = resolve_json_option(json)

        self._counters = PoolCounters()
        # The pool core (slots, idle connections, waiting acquires) under its
        # lock, driven with threads (compiled: Ctrl-C safe).
        self._core = ThreadDriver(self, PoolConnectionProxy, self._counters, min_size=min_size,
                              max_size=max_size, max_queries=max_queries,
                              max_inactive=max_inactive_connection_lifetime,
                              connect_dsn=dsn, connect_kwargs=connect_kwargs)
        self._thread: Optional[threading.Thread] = None
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

    # --- start-up ---

    def _start(self) -> None:
        """Open min_size connections (in the creating thread) and start the background thread."""
        try:
            for _ in range(self._min_size):
                self._core.reserve_slot()
                self._core.make_available(self._core.open_in_slot())
        except BaseException:
            self.terminate()
            raise
        if TELEMETRY.live:
            # Reported in the connection metrics from now on.
            tracing.name_pool(self, self._core.connect_dsn, self._core.connect_kwargs)
        self._thread = threading.Thread(target=self._maintain, daemon=True,
                                        name=f'mypgdriver.sync.Pool-{id(self):#x}')
        self._thread.start()

    # --- information ---

    def get_size(self) -> int:
        """The number of open connections, idle and in use."""
        return self._core.sizes()[0]

    def get_min_size(self) -> int:
        """The number of connections the pool keeps open, refilling in the background."""
        return self._min_size

    def get_max_size(self) -> int:
        """The most connections the pool opens at the same time."""
        return self._max_size

    def get_idle_size(self) -> int:
        """The number of open connections nobody holds."""
        return self._core.sizes()[1]

    def is_closing(self) -> bool:
        """True once :meth:`close` or :meth:`terminate` was called."""
        return self._core.closing or self._core.closed

    def get_stats(self) -> PoolStats:
        """A snapshot of the pool's counters (the asyncio pool's :class:`~mypgdriver.pool.PoolStats`).

        ``shortcuts_pipelined`` is always 0: the sync pool does not pipeline
        shortcut calls of several threads onto one connection.
        """
        entries, stats = self._core.stats()
        return dataclasses.replace(stats, pipeline_depths=tuple(
            (pipeline.in_flight, pipeline.max_in_flight) for pipeline in (
                entry.con.get_pipeline_stats() for entry in entries)))

    # --- configuration ---

    def set_connect_args(self, dsn: Optional[str] = None, **connect_kwargs: Any) -> None:
        """Use these connection arguments for every connection opened from now on.

        Arguments are those of :func:`mypgdriver.sync.connect`.  Open
        connections stay until they are replaced; call
        :meth:`expire_connections` to replace them soon.
        """
        self._core.set_connect_args(dsn, connect_kwargs)

    def expire_connections(self) -> None:
        """Replace every open connection with a new one.

        Idle connections are closed now (and refilled in the background up
        to ``min_size``); connections in use are closed when released.
        """
        self._core.expire_connections()

    # --- acquire ---

    def acquire(self, *, timeout: Optional[float] = None) -> PoolConnectionProxy:
        """Take a connection from the pool, waiting up to `timeout` seconds (None: no limit).

        Use as ``with pool.acquire() as conn:`` (released at the end of the
        block) or as ``conn = pool.acquire()`` followed by
        :meth:`release`.  Waiting threads are served first come, first
        served.  If no connection is available within `timeout` seconds,
        :exc:`TimeoutError` (:exc:`asyncio.TimeoutError`) is raised, saying
        how many connections were in use and how many other threads waited.
        """
        if TELEMETRY.live:
            core = self._core
            return tracing.run_acquire(
                lambda: core.acquire(timeout),
                tracing.name_pool(self, core.connect_dsn, core.connect_kwargs))
        return self._core.acquire(timeout)

    # --- hooks of the thread driver (poolcore.pyx): the Python steps of a checkout ---

    def _idle_connection_alive(self, con: Connection) -> bool:
        """Read what the server sent to an idle connection meanwhile; False if it is closed."""
        if con.is_closed():
            return False
        read_pending_input(con)
        return not con.is_closed()

    def _open_connection(self, dsn: Optional[str], kwargs: dict[str, Any]) -> Connection:
        connect = self._connect_fn if self._connect_fn is not None else sync_connect
        con = connect(dsn, connection_class=self._connection_class,
                      record_class=self._record_class, **with_json(kwargs, self._json))
        if not isinstance(con, self._connection_class):
            bad = type(con)
            con_close = getattr(con, 'close', None)
            if con_close is not None:
                con_close()
            raise exceptions.InterfaceError(
                f'expected the pool connect callback to return an instance of '
                f'{self._connection_class.__module__}.{self._connection_class.__qualname__}, '
                f'got {bad.__module__}.{bad.__qualname__}')
        if self._init is not None:
            try:
                self._init(con)
            except BaseException:
                # Whatever init left behind is unknown; do not reuse it.
                con.terminate()
                raise
        return con

    def _replace_lost_connection(self, proxy: PoolConnectionProxy,
                                 error: BaseException) -> Connection:
        """Give `proxy` a new connection after its first call found the old one dead.

        As in the asyncio pool (mypgdriver/pool/proxy.py): the server may
        have dropped an idle connection just before acquire() checked it
        (its goodbye not yet read); the first call of a checkout is the only
        one safe to repeat, no session state of the user's existing yet.
        """
        logger.debug('pool: connection lost before its first query (%s), replacing', error)
        con: Connection = self._core.replace_lost_connection(proxy, error)
        return con

    def _begin_checkout(self, con: Connection, proxy: PoolConnectionProxy) -> None:
        """Hand `con` out as `proxy`: handles belong to this checkout; `setup` runs."""
        run_async(con, _begin_checkout(con, proxy))
        if self._setup is not None:
            self._setup(proxy)

    # --- release ---

    def release(self, connection: PoolConnectionProxy, *,
                timeout: Optional[float] = None) -> None:
        """Give a connection back to the pool.

        The connection is reset (see :func:`create_pool`'s `reset`) before
        anyone else gets it; `timeout` bounds the default reset and defaults
        to the timeout given to :meth:`acquire`.  A connection that cannot
        be reused (closed, reset failed) is terminated and replaced rather
        than reported.  Releasing an already released connection does
        nothing.
        """
        self._core.release(connection, timeout)

    def _end_checkout(self, con: Connection) -> bool:
        """The hook of release(): end the checkout; True if the connection's state is unknown."""
        run_async(con, _checkout_ended(con))
        return in_unknown_state(async_connection(con))

    def _reset_connection(self, con: Connection, timeout: Optional[float]) -> int:
        """The hook of release() for a connection the core would reuse: reset it (REUSABLE or not)."""
        aconn = async_connection(con)
        if con.is_in_transaction():
            logger.warning('pool: a connection was released inside an open transaction, '
                           'which is rolled back: %r', con)
        try:
            if self._reset is None:
                run_async(con, default_reset(aconn, timeout))
            else:
                run_async(con, end_open_transaction(aconn))
                self._reset(con)
        except Exception as e:
            log = logger.debug if con.is_closed() else logger.warning
            log('pool: resetting a released connection failed, replacing it: %r', e)
            return RESET_FAILED
        if in_unknown_state(aconn) or con.is_in_transaction():
            return RESET_FAILED
        # Received before UNLISTEN *: the last user's, never the next one's.
        forget_notifications(con)
        return REUSABLE

    def _close_connection(self, con: Connection, graceful: bool) -> None:
        """The hook that closes a connection the pool gave up."""
        if graceful and not con.is_closed():
            _close_quietly(con)
        else:
            con.terminate()

    def _terminate_connection(self, con: Connection, in_use: bool) -> None:
        """The hook of terminate(): a call running on a connection in use is cancelled first."""
        if in_use:
            con.cancel()
        con.terminate()

    def _log_close_timeout(self, timeout: float, in_use: int) -> None:
        logger.warning('pool: close() timed out after %.1fs with %d connection(s) '
                       'still in use; terminating them', timeout, in_use)

    # --- the background thread ---

    def _maintain(self) -> None:
        """Keep min_size connections open; close those idle past the lifetime."""
        core = self._core
        backoff = Backoff()
        while True:
            work = core.maintenance()
            if work is None:
                return
            expired, refill = work
            if expired:
                core.discard_all(expired, True)
            elif not refill:
                core.sleep(core.next_wake(_MAINTENANCE_INTERVAL))
                continue
            if refill:
                try:
                    entry = core.open_in_slot()
                except Exception as e:
                    if backoff.first_failure:  # once per outage, not per attempt
                        logger.warning('pool: cannot open connections to keep min_size=%d '
                                       '(%r); retrying in the background', self._min_size, e)
                    core.sleep(backoff.next())
                    continue
                backoff.reset()
                core.make_available(entry)

    # --- closing ---

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Close the pool gracefully.

        New acquires fail with :exc:`~mypgdriver.exceptions.InterfaceError`
        at once, and so do those waiting.  Idle connections are closed now;
        connections in use are closed as they are released, and ``close()``
        returns when all are.  After `timeout` seconds (if given) those still
        out are terminated (and a warning is logged).
        """
        # (interrupted, the core terminates the pool; the thread then stops by itself)
        self._core.close(timeout)
        self._join_thread()

    def terminate(self) -> None:
        """Close every connection at once, including those in use, and the pool.

        A call running on a connection in use is cancelled on the server
        first; the threads holding connections get InterfaceError at their
        next use.
        """
        self._core.terminate()
        self._join_thread()

    def _join_thread(self) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # (The shortcuts, pool.fetch() ...: PoolShortcuts, generated by tools/gen_sync.py.)


async def _begin_checkout(con: Connection, proxy: PoolConnectionProxy) -> None:
    begin_checkout(async_connection(con), proxy)


async def _checkout_ended(con: Connection) -> None:
    end_checkout(async_connection(con))


def _close_quietly(con: Connection) -> None:
    """Close `con` gracefully, or terminate it if that fails."""
    try:
        con.close()
    except Exception:
        con.terminate()


def create_pool(dsn: Optional[str] = None, *,
                min_size: int = 10,
                max_size: int = 10,
                max_queries: int = 50000,
                max_inactive_connection_lifetime: float = 300.0,
                connect: Optional[Callable[..., Connection]] = None,
                setup: Optional[Callable[[Connection], object]] = None,
                init: Optional[Callable[[Connection], object]] = None,
                reset: Optional[Callable[[Connection], object]] = None,
                connection_class: type[Connection] = Connection,
                record_class: type[Record] = Record,
                row_factory: Optional[RowFactory[Any]] = None,
                json: Union[bool, JsonCodec] = False,
                **connect_kwargs: Any) -> Pool:
    """Create a thread-safe connection pool, open it, and return it.

    ``min_size`` connections are opened before this returns (an error
    opening one is raised).  Use as ``with create_pool(...) as pool:``
    (closed at the end of the block) or call :meth:`Pool.close`.  The
    arguments are those of :func:`mypgdriver.create_pool`, with plain
    functions where that takes coroutine functions:

    * `dsn` and `connect_kwargs`: how to connect, as for :func:`mypgdriver.sync.connect`.
    * `min_size`: connections kept open; one that is closed is replaced by
      the pool's background thread.
    * `max_size`: the most connections open at the same time.
    * `max_queries`: after this many queries a connection is replaced (on release).
    * `max_inactive_connection_lifetime`: connections above `min_size` idle
      for this many seconds are closed; ``0`` keeps them.
    * `connect`: a function called instead of :func:`mypgdriver.sync.connect`
      (with `dsn`, `connection_class`, `record_class` and `connect_kwargs`);
      it must return an instance of `connection_class`.
    * `setup`: a function called with the connection (the proxy handed
      out) at every acquire, before it is returned.  If it raises, the
      connection is terminated and the error raised by acquire().
    * `init`: a function called with each new connection, once.
    * `reset`: a function called with the connection at every release
      instead of the default reset (:meth:`Connection.reset` and ``DISCARD
      TEMP``); an open transaction is rolled back first in any case.
    * `connection_class`, `record_class`: passed on to ``connect``.
    * `row_factory` (:mod:`mypgdriver.rows`): every connection's default row
      factory, passed on to ``connect`` (not with a `record_class`).
    * `json`: ``True`` or a :class:`~mypgdriver.types.JsonCodec`, passed on
      to ``connect`` for every connection the pool opens, also later ones
      and those opened after :meth:`Pool.set_connect_args` (unless its
      arguments name a `json` of their own); a reset leaves it in place.
    """
    pool = Pool(dsn, min_size=min_size, max_size=max_size, max_queries=max_queries,
                max_inactive_connection_lifetime=max_inactive_connection_lifetime,
                connect=connect, setup=setup, init=init, reset=reset,
                connection_class=connection_class, record_class=record_class,
                row_factory=row_factory, json=json, **connect_kwargs)
    pool._start()
    return pool

"""The Python steps of the sync pool: opening, checking, resetting and closing a connection.

The sync pool's thread driver (poolcore.pyx) keeps the pool core under its
lock and calls these hooks for the steps that run Python code; it puts
back or closes what a step held when a hook raises.  The decisions stay
the core's (mypgdriver/pool/core.pyx); what a hook does to a connection is
the asyncio pool's own code where there is one (pool/reset.py,
pool/proxy.py), run as a call of the sync connection.  The background
thread that keeps ``min_size`` connections open is here too.

Not an API: mypgdriver.sync.Pool (pool.py) makes one PoolHooks per pool.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from mypgdriver import exceptions
from mypgdriver.pool.core import RESET_FAILED, REUSABLE, Backoff, PoolCore, PooledConnection
from mypgdriver.pool.pool import with_json
from mypgdriver.pool.proxy import begin_checkout, end_checkout
from mypgdriver.pool.reset import default_reset, end_open_transaction, in_unknown_state
from mypgdriver.sync.connect import connect as sync_connect
from mypgdriver.sync.connection import (
    Connection,
    async_connection,
    call_runner,
    forget_notifications,
)
from mypgdriver.types import JsonCodec

if TYPE_CHECKING:
    from mypgdriver.connection import Connection as AsyncConnection
    from mypgdriver.protocol.record import Record
    from mypgdriver.sync.driver.poolcore import ThreadDriver

__all__ = ('PoolHooks',)

logger = logging.getLogger('mypgdriver.pool')

# connect()'s own default `timeout` (read from it, not written again).
CONNECT_TIMEOUT: Optional[float] = inspect.signature(sync_connect).parameters['timeout'].default

# How often the background thread wakes with nothing to do (it is also woken
# whenever a slot is freed below min_size or a connection goes idle).
_MAINTENANCE_INTERVAL = 1.0


class PoolHooks:
    """The hooks one sync pool gives its thread driver, and its background thread."""

    __slots__ = ('_connect', '_setup', '_init', '_reset', '_connection_class', '_record_class',
                 '_json', '_min_size', '_thread')

    def __init__(self, *, connect: Optional[Callable[..., Connection]],
                 setup: Optional[Callable[[Any], object]],
                 init: Optional[Callable[[Connection], object]],
                 reset: Optional[Callable[[Connection], object]],
                 connection_class: type[Connection], record_class: type[Record],
                 json: Optional[JsonCodec], min_size: int) -> None:
        self._connect = connect if connect is not None else sync_connect
        self._setup = setup
        self._init = init
        self._reset = reset
        self._connection_class = connection_class
        self._record_class = record_class
        self._json = json
        self._min_size = min_size
        self._thread: Optional[threading.Thread] = None

    # --- a connection's life in the pool ---

    def open_connection(self, dsn: Optional[str], kwargs: dict[str, Any],
                        time_left: Optional[float]) -> Connection:
        """Open a connection and run ``init`` on it (the driver holds its slot).

        `time_left` (an acquire's timeout, what is left of it) bounds the
        connect: it is passed on as connect's `timeout` when shorter than
        the pool's own.  (A thread cannot be stopped from outside, as a task
        is cancelled: a `connect` callback that ignores `timeout` is not
        bounded.)
        """
        cls = self._connection_class
        if time_left is not None:
            own = kwargs.get('timeout', CONNECT_TIMEOUT)
            if own is None or time_left < own:
                kwargs = {**kwargs, 'timeout': max(time_left, 0.001)}
        con = self._connect(dsn, connection_class=cls, record_class=self._record_class,
                            **with_json(kwargs, self._json))
        if not isinstance(con, cls):
            bad = type(con)
            con_close = getattr(con, 'close', None)
            if con_close is not None:
                con_close()
            raise exceptions.InterfaceError(
                f'expected the pool connect callback to return an instance of '
                f'{cls.__module__}.{cls.__qualname__}, got {bad.__module__}.{bad.__qualname__}')
        if self._init is not None:
            try:
                self._init(con)
            except BaseException:
                # Whatever init left behind is unknown; do not reuse it.
                con.terminate()
                raise
        return con

    def idle_connection_alive(self, con: Connection) -> bool:
        """Read what the server sent to an idle connection meanwhile; False if it is closed.

        A sync connection reads its socket only during calls: a backend
        terminated while the connection was idle is noticed here, before
        the connection is handed out.
        """
        if con.is_closed():
            return False
        call_runner(con)(_two_turns())
        return not con.is_closed()

    def begin_checkout(self, con: Connection, proxy: Any) -> None:
        """Hand `con` out as `proxy`: handles belong to this checkout; ``setup`` runs."""
        call_runner(con)(_checkout_begun(async_connection(con), proxy))
        if self._setup is not None:
            self._setup(proxy)

    def end_checkout(self, con: Connection, core: PoolCore, entry: PooledConnection,
                     timeout: Optional[float]) -> int:
        """End the checkout of `con` and reset it if the core would reuse it; the verdict.

        The core's :meth:`~PoolCore.release_verdict` decides, from the
        state the end of the checkout leaves; REUSABLE is then confirmed by
        the reset or turned into RESET_FAILED.  Without a ``reset``
        callback the whole release is one call of the connection (one
        lock, one run of the glue).
        """
        aconn = async_connection(con)
        if self._reset is None:
            return call_runner(con)(_released(con, aconn, core, entry, timeout))
        call_runner(con)(_checkout_ended(aconn))
        verdict = core.release_verdict(entry, in_unknown_state(aconn))
        if verdict != REUSABLE:
            return verdict
        _warn_if_in_transaction(con)
        try:
            call_runner(con)(end_open_transaction(aconn))
            self._reset(con)
        except Exception as e:
            _log_reset_failure(aconn, e)
            return RESET_FAILED
        return _reused(aconn, con)

    def close_connection(self, con: Connection, graceful: bool) -> None:
        """Close a connection the pool gave up: gracefully if asked and possible."""
        if graceful and not con.is_closed():
            try:
                con.close()
                return
            except Exception:
                pass
        con.terminate()

    def terminate_connection(self, con: Connection, in_use: bool) -> None:
        """terminate(): a call running on a connection in use is cancelled first."""
        if in_use:
            con.cancel()
        con.terminate()

    def log_close_timeout(self, timeout: float, in_use: int) -> None:
        """close(timeout=) ran out with connections still in use."""
        logger.warning('pool: close() timed out after %.1fs with %d connection(s) '
                       'still in use; terminating them', timeout, in_use)

    # --- the background thread ---

    def start(self, driver: ThreadDriver, name: str) -> None:
        """Start the thread that keeps min_size connections open and closes expired ones."""
        self._thread = threading.Thread(target=self._maintain, args=(driver,), daemon=True,
                                        name=name)
        self._thread.start()

    def join(self) -> None:
        """Wait for the background thread to stop (after the driver's close or terminate)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _maintain(self, driver: ThreadDriver) -> None:
        backoff = Backoff()
        while True:
            work = driver.maintenance()
            if work is None:
                return
            expired, refill = work
            if expired:
                driver.discard_all(expired, True)
            elif not refill:
                driver.sleep(driver.next_wake(_MAINTENANCE_INTERVAL))
                continue
            if refill:
                try:
                    entry = driver.open_in_slot()
                except Exception as e:
                    if backoff.first_failure:  # once per outage, not per attempt
                        logger.warning('pool: cannot open connections to keep min_size=%d '
                                       '(%r); retrying in the background', self._min_size, e)
                    driver.sleep(backoff.next())
                    continue
                backoff.reset()
                driver.make_available(entry)


async def _two_turns() -> None:
    # Two turns of the glue (each a poll of the socket with no wait): the
    # first reads what was sent (a goodbye, a FATAL), the second the end
    # of the stream after it.
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def _checkout_begun(aconn: AsyncConnection, proxy: Any) -> None:
    begin_checkout(aconn, proxy)


async def _checkout_ended(aconn: AsyncConnection) -> None:
    end_checkout(aconn)


async def _released(con: Connection, aconn: AsyncConnection, core: PoolCore,
                    entry: PooledConnection, timeout: Optional[float]) -> int:
    # The release without a reset callback, as one call: the end of the
    # checkout, the core's verdict, then the default reset.
    end_checkout(aconn)
    verdict = core.release_verdict(entry, in_unknown_state(aconn))
    if verdict != REUSABLE:
        return verdict
    _warn_if_in_transaction(con)
    try:
        await default_reset(aconn, timeout)
    except Exception as e:
        _log_reset_failure(aconn, e)
        return RESET_FAILED
    return _reused(aconn, con)


def _warn_if_in_transaction(con: Connection) -> None:
    # (is_in_transaction() reads a field: no call of the connection, so it
    # may run inside one)
    if con.is_in_transaction():
        logger.warning('pool: a connection was released inside an open transaction, '
                       'which is rolled back: %r', con)


def _log_reset_failure(aconn: AsyncConnection, error: Exception) -> None:
    log = logger.debug if aconn.is_closed() else logger.warning
    log('pool: resetting a released connection failed, replacing it: %r', error)


def _reused(aconn: AsyncConnection, con: Connection) -> int:
    """REUSABLE if the reset left the connection settled and outside a transaction."""
    if in_unknown_state(aconn) or aconn.is_in_transaction():
        return RESET_FAILED
    # Received before UNLISTEN *: the last user's, never the next one's.
    forget_notifications(con)
    return REUSABLE

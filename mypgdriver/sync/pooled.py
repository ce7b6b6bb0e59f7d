"""The connection a sync pool's acquire() hands out: a proxy that ends with the checkout."""
from __future__ import annotations

import functools
import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional

from mypgdriver.pool.proxy import CONNECTION_LOST_ERRORS, read_idle_input, released_error
from mypgdriver.sync.connection import Connection
from mypgdriver.sync.driver.poolcore import enter_checkout, exit_checkout

if TYPE_CHECKING:
    from mypgdriver.pool.core import PooledConnection as PoolEntry
    from mypgdriver.sync.pool import Pool

__all__ = ('PoolConnectionProxy',)

logger = logging.getLogger('mypgdriver.pool')

#: The methods whose calls count toward the pool's ``max_queries`` (each
#: sends at least one statement).
COUNTED_METHODS = frozenset((
    'execute', 'executemany', 'fetch', 'fetchrow', 'fetchval', 'fetchmany', 'prepare',
    'cursor', 'copy_from_table', 'copy_from_query', 'copy_to_table', 'copy_records_to_table',
))


if TYPE_CHECKING:
    # To type checkers a proxy is a sync Connection (as the asyncio pool's
    # proxy is an asyncio Connection): calls through it are checked against
    # Connection's own signatures and overloads.
    _ProxyBase = Connection
else:
    _ProxyBase = object


class PoolConnectionProxy(_ProxyBase):
    """A pooled connection as seen by the thread that acquired it.

    Attribute access is forwarded to the underlying
    :class:`mypgdriver.sync.Connection`.  Once the connection is released,
    every use of the proxy, of methods taken from it earlier, and of the
    prepared statements, cursors and transactions obtained through it
    raises :exc:`~mypgdriver.exceptions.InterfaceError`: code holding on to
    a released connection cannot disturb its next user.

    ``with pool.acquire() as conn:`` releases the connection at the end of
    the block (the proxy's ``__exit__`` releases; it does not close).  Each
    query method called through the proxy counts toward ``max_queries``.

    **A connection that died while idle.**  As in the asyncio pool: the
    *first* ``execute``, ``fetch``, ``fetchrow`` or ``fetchval`` of a
    checkout first reads what the server sent the idle connection (its
    goodbye, if the backend was terminated meanwhile); if the connection is
    then closed, before the statement was sent, the proxy replaces it with
    a new one (running ``setup`` again) and makes the call there, once.  A
    statement that was sent and then lost its connection raises
    ``ConnectionDoesNotExistError``: it may have run, and is never run a
    second time behind the caller's back.
    """

    __slots__ = ('_con', '_entry', '_pool', '_timeout', '_ops', '__weakref__')

    # Made and ended by the pool's core (poolcore.pyx), never by __init__.
    _pool: Pool
    _entry: PoolEntry
    _con: Optional[Connection]
    _timeout: Optional[float]
    # Query calls made through this proxy (the first gets the retry).
    _ops: int

    def __repr__(self) -> str:
        if self._con is None:
            return f'<{type(self).__name__} [released] {id(self):#x}>'
        return f'<{type(self).__name__} {self._con!r} {id(self):#x}>'

    if TYPE_CHECKING:
        def __enter__(self) -> PoolConnectionProxy: ...

        def __exit__(self, exc_type: Optional[type[BaseException]],
                     exc: Optional[BaseException], tb: Optional[TracebackType]) -> None: ...
    else:
        # Compiled: a Ctrl-C cannot land between acquire() returning and
        # the block being entered, nor before the release at its end.
        __enter__ = enter_checkout
        __exit__ = exit_checkout

    def is_closed(self) -> bool:
        """True if the connection is closed; see :meth:`Connection.is_closed`."""
        return self._connection('is_closed').is_closed()

    def _connection(self, name: str) -> Connection:
        con = self._con
        if con is None:
            raise released_error(name)
        return con

    def _wrap_method(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        counted = name in COUNTED_METHODS

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            con = self._connection(name)
            if counted:
                self._entry.queries += 1
            return getattr(con, name)(*args, **kwargs)
        return call

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            # Only reached for names not defined on the proxy itself.
            con = self._connection(name)
            value = getattr(con, name)
            if callable(value) and getattr(value, '__self__', None) is con:
                return self._wrap_method(name, value)
            return value

        # The hot path, spelled out (no wrapper made per call).

        def execute(self, query: str, *args: Any, **kwargs: Any) -> str:
            """Run a command; see :meth:`Connection.execute`."""
            return self._call('execute', query, args, kwargs)

        def fetch(self, query: str, *args: Any, **kwargs: Any) -> list[Any]:
            """Run a query and return all rows; see :meth:`Connection.fetch`."""
            return self._call('fetch', query, args, kwargs)

        def fetchrow(self, query: str, *args: Any, **kwargs: Any) -> Any:
            """Run a query and return its first row; see :meth:`Connection.fetchrow`."""
            return self._call('fetchrow', query, args, kwargs)

        def fetchval(self, query: str, *args: Any, **kwargs: Any) -> Any:
            """Run a query and return one value; see :meth:`Connection.fetchval`."""
            return self._call('fetchval', query, args, kwargs)

    def _call(self, name: str, query: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # The hot path (no wrapper made per call), and the first-call retry.
        con = self._connection(name)
        self._entry.queries += 1
        self._ops += 1
        if self._ops != 1:
            return getattr(con, name)(query, *args, **kwargs)
        aconn = con._aconn
        protocol = aconn._session.protocol
        if protocol.input_waiting():
            con._run(read_idle_input(aconn))
        sent = protocol.op_seq
        try:
            return getattr(con, name)(query, *args, **kwargs)
        except CONNECTION_LOST_ERRORS as e:
            if protocol.op_seq != sent or self._con is not con or not con.is_closed():
                raise   # sent (it may have run, so it is not run again), or not ours
            logger.debug('pool: connection lost before its first query (%s), replacing', e)
            con = self._pool._core.replace_lost_connection(self, e)
            return getattr(con, name)(query, *args, **kwargs)

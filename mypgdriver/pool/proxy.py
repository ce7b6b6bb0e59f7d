"""The connection an acquire() hands out: a proxy that ends with the checkout."""
from __future__ import annotations

import asyncio
import functools
import inspect
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Coroutine,
    Dict,
    List,
    Optional,
    Tuple,
    Type,
)

from mypgdriver import exceptions
from mypgdriver.connection import Connection
from mypgdriver.pool.slots import PooledConnection

if TYPE_CHECKING:
    from mypgdriver.pool.pool import Pool

__all__ = ('PoolConnectionProxy', 'begin_checkout', 'end_checkout', 'released_error')

# What a query raises when the connection was already dead: the socket was
# found closed, or the server's goodbye (FATAL 57P01/57P02) was read (it is
# then the cause of the ConnectionDoesNotExistError raised).
CONNECTION_LOST_ERRORS: Tuple[Type[BaseException], ...] = (
    exceptions.ConnectionDoesNotExistError,
    exceptions.AdminShutdownError,
    exceptions.CrashShutdownError,
)

#: The calls repeated on a new connection when they are the first of a
#: checkout and find the connection dead (see PoolConnectionProxy).
RETRIED_WHEN_LOST = frozenset(('execute', 'fetch', 'fetchrow', 'fetchval'))

#: Turns of the loop a checkout's first call gives the glue to read what
#: an idle connection received (a FATAL, then the end of the stream: two
#: or three turns of asyncio's loop; one of the sync glue's).
_IDLE_INPUT_TURNS = 8


def protocol_of(con: Connection) -> Any:
    """The protocol of `con`: a first call reads its input and its count of operations sent."""
    return con._session.protocol


async def read_idle_input(con: Connection) -> None:
    """Let the glue read what the server sent `con` while it sat idle in the pool.

    Before the first statement of a checkout.  An idle connection is sent
    nothing unasked but notices, parameter changes, notifications and the
    server's goodbye (a FATAL and the end of the stream).  The goodbye of a
    backend terminated while idle may still sit in the socket (the sync
    API reads nothing between calls, the event loop may not have run since
    it arrived); read now, it closes the connection before the statement is
    sent, so that the statement can be sent to a new one instead: it
    provably never reached a server.  Costs one peek at the socket when
    nothing is there.
    """
    protocol = protocol_of(con)
    for _ in range(_IDLE_INPUT_TURNS):
        if not protocol.input_waiting():
            return
        await asyncio.sleep(0)


if TYPE_CHECKING:
    # To type checkers a proxy is a Connection: it forwards every attribute
    # to one (and isinstance(proxy, Connection) is true at runtime), so it
    # can be passed wherever a Connection is expected.
    _ProxyBase = Connection
else:
    _ProxyBase = object


class PoolConnectionProxy(_ProxyBase):
    """A pooled connection as seen by the code that acquired it.

    ``isinstance(proxy, Connection)`` is true, as in asyncpg, and so is
    ``isinstance(proxy, C)`` for the pool's ``connection_class`` C and its
    bases (also after release).  Methods of ``connection_class`` are called
    through the proxy like Connection's.

    Attribute access is forwarded to the underlying :class:`Connection`.  Once
    the connection is released, every use of the proxy (and of methods taken
    from it earlier) raises :exc:`~mypgdriver.exceptions.InterfaceError`, so
    that code holding on to a released connection cannot disturb its next
    user.

    Each query method called through the proxy counts toward ``max_queries``.

    Methods are called with exactly the arguments given to the proxy, never
    with added defaults: a ``connection_class`` whose ``fetchval(self,
    query)`` takes no ``column`` or ``timeout`` works through the proxy too.

    A proxy whose connection was closed because the pool's ``setup``
    callback failed answers ``is_closed()`` with True; its other methods
    raise :exc:`~mypgdriver.exceptions.InterfaceError`.

    **A connection that died while idle.**  The pool checks ``is_closed()``
    before handing a connection out, but the server may have dropped it just
    before (its goodbye not yet read).  So the *first* ``execute``,
    ``fetch``, ``fetchrow`` or ``fetchval`` after acquire first reads what
    the server sent the idle connection (one peek at the socket when it sent
    nothing); if the connection turns out to be closed before the statement
    was sent, the proxy replaces it with a new one (running ``setup``
    again) and makes the call there, once.  Only then: a statement that was
    sent and lost its connection (the backend terminated while running it,
    a failover between the commit and its acknowledgement) raises
    ``ConnectionDoesNotExistError`` as asyncpg does, since it may have run
    or even committed; it is never run a second time behind the caller's
    back.
    """

    __slots__ = ('_con', '_entry', '_pool', '_timeout', '_ops', '_active', '_closed_by_setup',
                 '__weakref__')

    def __init__(self, pool: Pool, entry: PooledConnection,
                 timeout: Optional[float]) -> None:
        self._pool = pool
        self._entry = entry
        self._con: Optional[Connection] = entry.con
        self._timeout = timeout
        self._ops = 0  # operations started through this proxy
        self._active = 0  # operations running right now
        self._closed_by_setup = False

    def __repr__(self) -> str:
        if self._con is None:
            return f'<{type(self).__name__} [released] {id(self):#x}>'
        return f'<{type(self).__name__} {self._con!r} {id(self):#x}>'

    def _wrap_method(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):
            @functools.wraps(method)
            async def call_coroutine(*args: Any, **kwargs: Any) -> Any:
                return await self._call(name, args, kwargs)
            return call_coroutine

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            con = self._con
            if con is None:
                raise self._detached_error(name)
            return getattr(con, name)(*args, **kwargs)
        return call

    def _proxied_class(self) -> Type[Connection]:
        """The pool's connection_class: what isinstance() checks against (see Connection)."""
        return self._pool._connection_class

    def is_closed(self) -> bool:
        """True if the connection is closed; see :meth:`Connection.is_closed`."""
        con = self._con
        if con is None:
            if self._closed_by_setup:
                return True
            raise released_error('is_closed')
        return con.is_closed()

    # Type checkers see neither __getattr__ nor the spelled-out query methods
    # below: to them the proxy is a Connection (its base under TYPE_CHECKING),
    # so a call through it is checked against Connection's own signatures and
    # overloads, and a misspelt name or keyword is an error.  A __getattr__
    # returning Any, or methods taking **kwargs, would accept any mistake
    # (tests/typing/pooled.py).  At run time the class is unchanged.
    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            # Only reached for names not defined on the proxy itself.
            con = self._con
            if con is None:
                raise self._detached_error(name)
            value = getattr(con, name)
            if inspect.ismethod(value) and value.__self__ is con:
                return self._wrap_method(name, value)
            return value

        # The query methods are spelled out (rather than forwarded through
        # __getattr__) because they are the hot path, and because they are
        # the calls the first-call retry applies to.  They return _call()'s
        # coroutine instead of awaiting it in one of their own: one coroutine
        # frame per call, not two (asyncpg's proxy methods are plain
        # functions returning the connection's coroutine too).  They pass the
        # caller's arguments on exactly as given (see the class docstring).

        def execute(self, query: str, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, str]:
            """Run a command; see :meth:`Connection.execute`."""
            return self._call('execute', (query, *args), kwargs)

        def fetch(self, query: str, *args: Any,
                  **kwargs: Any) -> Coroutine[Any, Any, List[Any]]:
            """Run a query and return all rows; see :meth:`Connection.fetch`."""
            return self._call('fetch', (query, *args), kwargs)

        def fetchrow(self, query: str, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
            """Run a query and return its first row; see :meth:`Connection.fetchrow`."""
            return self._call('fetchrow', (query, *args), kwargs)

        def fetchval(self, query: str, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
            """Run a query and return one value of its first row; see :meth:`Connection.fetchval`."""
            return self._call('fetchval', (query, *args), kwargs)

    # --- the checkout, for the pool ---

    async def _call(self, name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        """Run the coroutine method Connection.`name` as an operation of this checkout.

        Every coroutine call through the proxy comes here: it is refused
        after release, counted (``max_queries``, and as running while it
        runs, so that a release in the middle is noticed), and the calls in
        RETRIED_WHEN_LOST get the first-call retry, when the connection was
        found closed before the statement was sent (see the class docstring).
        """
        con = self._begin(name)
        try:
            if self._ops != 1 or name not in RETRIED_WHEN_LOST:
                return await getattr(con, name)(*args, **kwargs)
            protocol = protocol_of(con)
            if protocol.input_waiting():
                await read_idle_input(con)
            sent = protocol.op_seq
            try:
                return await getattr(con, name)(*args, **kwargs)
            except CONNECTION_LOST_ERRORS as e:
                if protocol.op_seq != sent:
                    raise   # sent: it may have run, so it is not run again
                con = await self._retry_target(con, e)
                return await getattr(con, name)(*args, **kwargs)
        finally:
            self._active -= 1

    def _begin(self, name: str) -> Connection:
        con = self._con
        if con is None:
            raise self._detached_error(name)
        self._ops += 1
        self._active += 1
        self._entry.queries += 1
        return con

    async def _retry_target(self, con: Connection, error: BaseException) -> Connection:
        """The connection to repeat a failed first call on, or re-raise `error`."""
        if self._ops != 1 or self._con is not con or not con.is_closed():
            raise error
        return await self._pool._replace_lost_connection(self, error)

    def _detached_error(self, name: str) -> exceptions.InterfaceError:
        if self._closed_by_setup:
            return exceptions.InterfaceError(
                f'cannot call Connection.{name}(): the connection was closed because the '
                f"pool's setup callback failed")
        return released_error(name)

    def _detach(self) -> Optional[Connection]:
        """End this checkout: the proxy, and every handle obtained through it, is refused."""
        con, self._con = self._con, None
        if con is not None:
            end_checkout(con)
        return con


def released_error(name: str) -> exceptions.InterfaceError:
    return exceptions.InterfaceError(
        f'cannot call Connection.{name}(): connection has been released back to the pool')


def begin_checkout(con: Connection, facade: object) -> None:
    """A pool hands `con` out as `facade`: handles obtained from now on belong to this checkout."""
    con._session.begin_checkout(facade)


def end_checkout(con: Connection) -> None:
    """A checkout of `con` ended: refuse its handles, drop the callbacks added through it.

    UNLISTEN * (in the reset) stops the server's notifications, but the
    callbacks would otherwise fire for the next user's LISTEN on the same
    channel.  The pool's own termination listener stays.
    """
    facade = con._session.end_checkout()
    if facade is not None:
        con._end_checkout(facade)

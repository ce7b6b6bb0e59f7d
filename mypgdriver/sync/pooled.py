"""The connection a sync pool's acquire() hands out: a proxy that ends with the checkout."""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Optional

from mypgdriver.sync.connection import Connection
from mypgdriver.sync.driver import poolcore

__all__ = ('PoolConnectionProxy',)


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

    # Set and read by the pool's thread driver (poolcore.pyx), which makes
    # the proxies (never __init__) and ends them: the connection (None once
    # released), its pool entry, the pool, the acquire's timeout, and the
    # count of query calls made through it (the first gets the retry).
    __slots__ = ('_con', '_entry', '_pool', '_timeout', '_ops', '__weakref__')


    if TYPE_CHECKING:
        def __enter__(self) -> PoolConnectionProxy: ...

        def __exit__(self, exc_type: Optional[type[BaseException]],
                     exc: Optional[BaseException], tb: Optional[TracebackType]) -> None: ...
    else:
        # Compiled (sync/driver/poolcore.pyx): a Ctrl-C cannot land between
        # acquire() returning and the block being entered, nor before the
        # release at its end; the query methods, the hot path, count the
        # call and give the first of a checkout its retry there.
        __enter__ = poolcore.enter_checkout
        __exit__ = poolcore.exit_checkout
        __getattr__ = poolcore.proxy_getattr
        __repr__ = poolcore.proxy_repr
        is_closed = poolcore.proxy_is_closed
        execute = poolcore.proxy_execute
        fetch = poolcore.proxy_fetch
        fetchrow = poolcore.proxy_fetchrow
        fetchval = poolcore.proxy_fetchval

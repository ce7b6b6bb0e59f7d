"""PROTOTYPE (issue 24): the Session's coroutines driven without an event loop.

Not an API.  It measures whether a blocking ``mypgdriver.sync`` can be served
by the same protocol (protocol.pyx) and the same policy (session.py) by
driving their native coroutines by hand:

* ``SyncGlue`` is passed where the asyncio code takes a loop.  It gives the
  protocol and the Session what they ask of a loop (``time``,
  ``create_future``, ``call_soon``, ``call_later``, ``create_task``) and a
  caller identity (``current_task``), and runs nothing by itself.  The
  connector (every sslmode, direct TLS, channel binding, the CancelRequest)
  runs unchanged on its ``create_connection``, ``create_unix_connection``
  and ``start_tls``, which open the blocking transports of
  mypgdriver/sync/transport.py (plain, or TLS over an ``ssl.SSLSocket``).
* ``SyncGlue.run(coro)`` drives one call: ``coro.send(None)`` until the
  coroutine awaits a Future that is not done; then blocking reads on the
  socket (``poll`` while a timer is pending, output is buffered or several
  sockets are open, e.g. a CancelRequest's) are fed to ``data_received``,
  buffered output is flushed when the socket is writable (a COPY or
  executemany stream: the socket is read meanwhile, so a server blocked
  writing to us cannot deadlock the stream), callbacks scheduled with
  ``call_soon`` and due timers run, and the coroutine is resumed once its
  Future is done.  Ctrl-C is thrown into the coroutine as
  ``CancelledError`` (the Session's abandon path: CancelRequest, drain
  before the next call), then re-raised.

No asyncio event loop is created, set or running at any point: asyncio's
Future is used as a plain object (its ``loop`` is the glue, whose
``call_soon`` receives the done callbacks).
"""
from __future__ import annotations

import asyncio
import collections
import functools
import heapq
import itertools
import math
import select
import selectors
import socket
import ssl as ssl_module
import sys
import time
from typing import Any, Callable, Iterable, Optional, Union, cast

from mypgdriver import connector
from mypgdriver.sync.transport import (
    SocketTransport,
    TLSTransport,
    connect_tcp,
    connect_unix,
    wrap_tls,
)

# Waiting for several sockets: poll(), not select().  select() refuses file
# descriptors >= FD_SETSIZE (1024), which a process with many files or
# connections open reaches.  poll() has no such limit and is one syscall
# per wait with no set-up in the kernel; an epoll selector
# (selectors.DefaultSelector) made per wait costs epoll_create,
# one epoll_ctl per socket and a close on top of the wait, and one kept
# per connection would need an epoll_ctl each time the interest changes
# (writable wanted only while output is buffered).  The waits are few
# anyway (the usual one is a blocking recv()); where poll() is missing
# (Windows) a selector is used.
_READABLE = getattr(select, 'POLLIN', 1)
_WRITABLE = getattr(select, 'POLLOUT', 4)
# Error and hang-up: the next read or send tells what happened.
_BROKEN = (getattr(select, 'POLLERR', 8) | getattr(select, 'POLLHUP', 16)
           | getattr(select, 'POLLNVAL', 32))


def _poll(interest: dict[int, int], timeout: Optional[float]) -> Iterable[tuple[int, int]]:
    """(fd, events) of the file descriptors in `interest` (fd -> events) that are ready."""
    if hasattr(select, 'poll'):
        poller = select.poll()
        for fd, events in interest.items():
            poller.register(fd, events)
        # poll() counts whole milliseconds: rounded up, so that a timer is
        # due when it returns rather than a spin of waits of 0 ms before.
        return poller.poll(None if timeout is None else math.ceil(timeout * 1000))
    with selectors.DefaultSelector() as selector:
        for fd, events in interest.items():
            selector.register(fd, (selectors.EVENT_READ if events & _READABLE else 0)
                              | (selectors.EVENT_WRITE if events & _WRITABLE else 0))
        return [(key.fd, (_READABLE if mask & selectors.EVENT_READ else 0)
                 | (_WRITABLE if mask & selectors.EVENT_WRITE else 0))
                for key, mask in selector.select(timeout)]


class _Handle:
    """What call_soon()/call_later() return: cancel() is all the callers use."""

    __slots__ = ('when', 'seq', 'callback', 'args', 'cancelled')

    def __init__(self, when: float, seq: int, callback: Callable, args: tuple) -> None:
        self.when = when
        self.seq = seq
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: '_Handle') -> bool:
        return (self.when, self.seq) < (other.when, other.seq)


class _Caller:
    """The identity of the code calling the sync API (Session.current_task()).

    The transaction owner and the line holder are compared with it; the
    Session asks the owner whether it finished (done()): the caller of a
    sync connection never does while the connection is in use.

    The protocol interrupts the caller feeding a COPY or executemany from
    its own data (on a timeout or cancel(), ``cancel()``), as it cancels an
    asyncio task: the driver throws ``CancelledError`` into the call where
    it waits, as the event loop would into the task.
    """

    __slots__ = ('interrupted',)

    def __init__(self) -> None:
        self.interrupted = False

    def done(self) -> bool:
        return False

    def cancel(self, msg: Any = None) -> bool:
        self.interrupted = True
        return True

    def uncancel(self) -> int:
        self.interrupted = False
        return 0


class _BackgroundTask(asyncio.Future):
    """A coroutine the protocol or the Session starts and does not await (create_task()).

    Stepped from the glue's ready queue, like asyncio.Task steps itself from
    the loop's: the CancelRequest sender, the cleanup of an interrupted
    transaction block, async query loggers.  It only advances while a sync
    call drives the glue (or at close()).
    """

    def __init__(self, coro, glue: 'SyncGlue') -> None:
        super().__init__(loop=cast(Any, glue))
        self._coro = coro
        glue.call_soon(self._step, None)

    def _step(self, _fut) -> None:
        if self.done():
            return
        try:
            awaited = self._coro.send(None)
        except StopIteration as stop:
            self.set_result(stop.value)
        except (KeyboardInterrupt, SystemExit) as exc:
            # As asyncio.Task: recorded, and re-raised to whoever runs the
            # step (the driver), not swallowed: a Ctrl-C landing while a
            # background step runs (the blocking CancelRequest send) reaches
            # the caller, and the driver throws CancelledError into the
            # call's coroutine if it is still suspended.
            self.set_exception(exc)
            raise
        except asyncio.CancelledError:
            self.cancel()
        except BaseException as exc:
            self.set_exception(exc)
        else:
            if awaited is None:
                self._loop.call_soon(self._step, None)     # a bare yield (asyncio.sleep(0))
            else:
                awaited.add_done_callback(self._step)


class SyncGlue:
    """Stands in for the event loop of one connection; driven by run(), one call at a time."""

    def __init__(self) -> None:
        self.time = time.monotonic
        self.ready: collections.deque = collections.deque()
        self.timers: list = []
        self.seq = itertools.count()
        self.caller = _Caller()
        # The connection's protocol, once open (connect()).
        self.protocol: Any = None
        # The open transports the driver reads: the connection's, and
        # briefly a CancelRequest's or an SSLRequest's.
        self.transports: list[SocketTransport] = []
        # Sockets being connected or shaken hands with: (socket, writable, Future).
        self.io_waiters: list[tuple[socket.socket, bool, asyncio.Future]] = []
        # Hot: one Future per operation.  Bound as C callables, so that
        # making one runs no Python frame (asyncio.Future asks its loop
        # get_debug() at creation; bool() is False).
        self.get_debug: Callable[[], bool] = bool
        self.create_future: Callable[[], asyncio.Future] = functools.partial(
            asyncio.Future, loop=cast(Any, self))

    # --- what asyncio.Future asks of its loop ---

    def call_exception_handler(self, context: dict) -> None:
        print(f'mypgdriver.sync prototype: {context.get("message")}: '
              f'{context.get("exception")!r}', file=sys.stderr)

    # --- what the protocol and the Session ask of a loop ---

    def call_soon(self, callback: Callable, *args: Any, context: Any = None) -> _Handle:
        handle = _Handle(0.0, 0, callback, args)
        self.ready.append(handle)
        return handle

    def call_later(self, delay: float, callback: Callable, *args: Any,
                   context: Any = None) -> _Handle:
        handle = _Handle(self.time() + delay, next(self.seq), callback, args)
        heapq.heappush(self.timers, handle)
        return handle

    def create_task(self, coro) -> _BackgroundTask:
        return _BackgroundTask(coro, self)

    def run_in_executor(self, executor: Any, function: Callable, *args: Any) -> asyncio.Future:
        """Calls `function` at once; a done Future of its result (the caller blocks anyway).

        copy.py reads and writes file objects, and opens and closes files,
        through an executor so as not to block the event loop; sync code
        has no loop to keep running.
        """
        fut = self.create_future()
        try:
            fut.set_result(function(*args))
        except Exception as exc:
            fut.set_exception(exc)
        return fut

    def current_task(self) -> _Caller:
        return self.caller

    # --- opening connections (what the connector and tls.py ask of a loop) ---
    #
    # The connect and the TLS handshake wait through the driver
    # (wait_io()), so the connector's deadline timer and Ctrl-C interrupt
    # them as they do with asyncio; then the sockets block.

    async def create_connection(self, protocol_factory: Callable, host: str, port: int, *,
                                ssl: Union[ssl_module.SSLContext, bool, None] = None,
                                server_hostname: Optional[str] = None) -> tuple[Any, Any]:
        """``loop.create_connection``: TCP, with TLS from the first byte when `ssl` is given.

        The connector passes `ssl` for direct TLS (``sslnegotiation=direct``:
        its context offers the ALPN protocol ``postgresql``).
        """
        sock = await connect_tcp(host, port, self.wait_io)
        if not ssl:
            return self._attach(SocketTransport(sock, self), protocol_factory)
        ctx = ssl_module.create_default_context() if ssl is True else ssl
        tls_sock = await wrap_tls(sock, ctx, host if server_hostname is None else server_hostname,
                                  self.wait_io)
        return self._attach(TLSTransport(tls_sock, self), protocol_factory)

    async def create_unix_connection(self, protocol_factory: Callable,
                                     path: str) -> tuple[Any, Any]:
        """``loop.create_unix_connection``."""
        sock = await connect_unix(path, self.wait_io)
        return self._attach(SocketTransport(sock, self), protocol_factory)

    async def start_tls(self, transport: SocketTransport, protocol: Any,
                        sslcontext: ssl_module.SSLContext, *,
                        server_hostname: Optional[str] = None) -> TLSTransport:
        """``loop.start_tls``: the TLS handshake over `transport` (after the server's 'S').

        Returns the new transport, with `protocol` set and not told
        (asyncio does not call ``connection_made`` either); `transport` is
        no longer usable.
        """
        sock = transport.detach()
        tls_sock = await wrap_tls(sock, sslcontext, server_hostname, self.wait_io)
        tls = TLSTransport(tls_sock, self, protocol)
        self.transports.append(tls)
        return tls

    def _attach(self, transport: SocketTransport, protocol_factory: Callable) -> tuple[Any, Any]:
        protocol = protocol_factory()
        transport.protocol = protocol
        self.transports.append(transport)
        protocol.connection_made(transport)
        return transport, protocol

    def forget_transport(self, transport: SocketTransport) -> None:
        """A transport closed or handed its socket on: the driver no longer reads it."""
        try:
            self.transports.remove(transport)
        except ValueError:
            pass

    async def wait_io(self, sock: socket.socket, writable: bool) -> None:
        """Until `sock` is writable (or readable): the driver selects on it meanwhile."""
        waiter = self.create_future()
        entry = (sock, writable, waiter)
        self.io_waiters.append(entry)
        try:
            await waiter
        finally:
            self.io_waiters.remove(entry)

    # --- the driver ---

    def run(self, coro) -> Any:
        """Drive `coro` (a call of the asyncio API) to its end, blocking; its result."""
        send = coro.send
        caller = self.caller
        interrupted: Optional[BaseException] = None
        try:
            awaited = send(None)
            while True:
                try:
                    if awaited is not None:
                        self.wait_for(awaited)
                    else:
                        # A bare yield (asyncio.sleep(0)): one turn of a
                        # loop.  The executemany feeder yields so between
                        # batches, for the server's answers (an early
                        # error) to be read and the output to move on while
                        # it produces rows: the sockets are polled, not
                        # waited for.
                        self.run_ready()
                        if self.transports:
                            self._wait_io(0)
                except KeyboardInterrupt as exc:
                    # Delivered while the coroutine is suspended (in the
                    # wait, a read, a callback or a background step run by
                    # the driver): thrown into it as a cancellation, where
                    # it awaits: the Session abandons the operation
                    # (CancelRequest, and the drain that the next call
                    # waits for).  (Only here: a KeyboardInterrupt raised
                    # by the coroutine itself ended it; see below.)
                    if interrupted is None:
                        interrupted = exc
                    awaited = coro.throw(asyncio.CancelledError())
                    continue
                if caller.interrupted:
                    # The protocol interrupted the feeding of a stream.
                    caller.interrupted = False
                    awaited = coro.throw(asyncio.CancelledError())
                    continue
                awaited = send(None)
        except StopIteration as stop:
            if self.ready:
                self.run_ready()
            if interrupted is not None:
                # The call finished in spite of the cancellation (it was
                # past the point of no return): Ctrl-C still reaches the caller.
                raise interrupted from None
            return stop.value
        except asyncio.CancelledError:
            self.run_ready()
            if interrupted is not None:
                raise interrupted from None
            raise
        except KeyboardInterrupt:
            # Raised inside the coroutine itself, between two awaits (the
            # Session's or the protocol's Python code, a callback it ran):
            # it ended the call without the Session's abandon path.
            self._after_lost_call()
            raise
        except BaseException:
            # What the failed call left to do at once: the CancelRequest
            # of a timed-out statement (sent before the call returns).
            self.run_ready()
            raise

    def _after_lost_call(self) -> None:
        """A call ended by a KeyboardInterrupt from inside it: in sync, or closed.

        The Session's cleanups (``finally``, ``except BaseException``) ran,
        but it abandons an operation only on ``CancelledError``: an
        operation whose caller is gone may still be awaited, with nobody to
        cancel it or to read its answer in the caller's stead.  Its outcome
        is unknown, so the connection is closed (never left in doubt).
        """
        try:
            self.run_ready()
        finally:
            proto = self.protocol
            if proto is not None and not proto.is_closed() and proto._awaited_in_flight():
                proto.abort()
                self.run_ready()

    def blocking(self, coroutine_function: Callable[[], Any]) -> Callable[[], Any]:
        """`coroutine_function` made to finish before it returns to its awaiter.

        For the connector's CancelRequest sender (its transport kind, its
        TLS policy): run as the protocol's background task, it would only
        advance while a later call drives the glue, and the statement it
        cancels would run on meanwhile.  Driven at once instead, it is
        sent before the call that timed out returns, as libpq's PQcancel
        does.  (The main connection is read meanwhile, as by an event loop.)
        """
        async def run_at_once() -> Any:
            return self.run(coroutine_function())
        return run_at_once

    def run_ready(self) -> None:
        ready = self.ready
        for _ in range(len(ready)):
            if not ready:
                break       # a callback drove the glue (blocking()) and ran the rest
            handle = ready.popleft()
            if not handle.cancelled:
                handle.callback(*handle.args)

    def wait_for(self, fut: asyncio.Future) -> None:
        """Read, flush, run callbacks and fire timers until `fut` is done (or the caller is interrupted)."""
        caller = self.caller
        while not fut.done() and not caller.interrupted:
            if self.ready:
                self.run_ready()
                continue
            timeout = self._fire_timers() if self.timers else None
            if fut.done() or self.ready:
                continue
            # (read each time: a background task may have opened or closed one)
            transports = self.transports
            if (len(transports) == 1 and not self.io_waiters and not transports[0].out
                    and (timeout is None or transports[0].buffered())):
                # The usual case, one connection, nothing to send and no
                # timer: a blocking recv(), no poll() (one syscall per wait).
                transports[0].read()
            else:
                self._wait_io(timeout)

    def _wait_io(self, timeout: Optional[float]) -> None:
        # Several sockets (a CancelRequest's while the connection is open, a
        # connect or handshake in progress), output buffered or a timer
        # pending: wait until a socket is ready or `timeout` passes.  A
        # transport with output buffered is waited for readable *or*
        # writable, and both are served: a server blocked writing to us
        # (notices during a COPY) is read while our stream waits to go out.
        transports = self.transports
        buffered = [t for t in transports if t.buffered()]
        if buffered:
            # Already received (decrypted bytes in an SSLSocket): poll()
            # would not see them.
            for transport in buffered:
                if not transport.closed:
                    transport.read_ready()
            return
        interest: dict[int, int] = {}
        targets: dict[int, Any] = {}
        for transport in transports:
            fd = transport.sock.fileno()
            interest[fd] = (_READABLE | _WRITABLE if transport.out and not transport.flush_needs_read
                            else _READABLE)
            targets[fd] = transport
        for sock, writable, waiter in self.io_waiters:
            fd = sock.fileno()
            interest[fd] = _WRITABLE if writable else _READABLE
            targets[fd] = waiter
        if not interest:
            if timeout is None:
                raise RuntimeError('prototype: waiting with no connection to read from')
            time.sleep(timeout)
            return
        for fd, events in _poll(interest, timeout):
            target = targets[fd]
            if not isinstance(target, SocketTransport):
                _wake(target)
                continue
            # Read first: what the server said before a hang-up is kept.
            if events & (_READABLE | _BROKEN) and not target.closed:
                target.read_ready()
            if target.out and not target.closed and (
                    events & (_WRITABLE | _BROKEN)
                    or (events & _READABLE and target.flush_needs_read)):
                target.flush()

    def _fire_timers(self) -> Optional[float]:
        # Runs the timers that are due; the seconds until the next one (None: none).
        timers = self.timers
        while timers:
            first = timers[0]
            if first.cancelled:
                heapq.heappop(timers)
                continue
            left = first.when - self.time()
            if left > 0:
                return left
            heapq.heappop(timers)
            first.callback(*first.args)
        return None


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Connection:
    """A blocking connection: the asyncio Connection, its calls driven by a SyncGlue."""

    def __init__(self, aconn: Any, glue: SyncGlue) -> None:
        self._aconn = aconn
        self._glue = glue
        self._run = glue.run

    def fetchval(self, query: str, *args: Any, **kw: Any) -> Any:
        return self._run(self._aconn.fetchval(query, *args, **kw))

    def fetchval_direct(self, query: str, *args: Any, timeout: Optional[float] = None) -> Any:
        # Measured variant: the Session's coroutine without Connection.fetchval's frame.
        rows = self._run(self._aconn._session.execute(query, args, 1, timeout, False, None))
        return rows[0][0] if rows else None

    def fetch(self, query: str, *args: Any, **kw: Any) -> list:
        return self._run(self._aconn.fetch(query, *args, **kw))

    def fetchrow(self, query: str, *args: Any, **kw: Any) -> Any:
        return self._run(self._aconn.fetchrow(query, *args, **kw))

    def execute(self, query: str, *args: Any, **kw: Any) -> str:
        return self._run(self._aconn.execute(query, *args, **kw))

    def executemany(self, command: str, args: Any, **kw: Any) -> None:
        return self._run(self._aconn.executemany(command, args, **kw))

    def copy_to_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_to_table(table_name, **kw))

    def copy_records_to_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_records_to_table(table_name, **kw))

    def copy_from_table(self, table_name: str, **kw: Any) -> str:
        return self._run(self._aconn.copy_from_table(table_name, **kw))

    def copy_from_query(self, query: str, *args: Any, **kw: Any) -> str:
        return self._run(self._aconn.copy_from_query(query, *args, **kw))

    def transaction(self, **kw: Any) -> 'Transaction':
        return Transaction(self, self._aconn.transaction(**kw))

    def close(self) -> None:
        self._run(self._aconn.close())
        self._glue.run_ready()


class Transaction:
    """``with conn.transaction():`` over the asyncio Transaction."""

    def __init__(self, conn: Connection, axact: Any) -> None:
        self._run = conn._run
        self._axact = axact

    def __enter__(self) -> 'Transaction':
        self._run(self._axact.__aenter__())
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        return self._run(self._axact.__aexit__(*exc_info))


def connect(dsn: Optional[str] = None, **kw: Any) -> Connection:
    """Open a connection with the asyncio connector's own coroutine, driven by a SyncGlue.

    Every sslmode, direct TLS and channel binding work as in the asyncio
    API: the connector's code runs unchanged on the glue's transports
    (mypgdriver/sync/transport.py).
    """
    glue = SyncGlue()
    kw.setdefault('timeout', None)
    aconn = glue.run(connector.connect(dsn, loop=cast(Any, glue), **kw))
    aconn._session.current_task = glue.current_task
    proto = aconn._protocol
    proto.cancel_request = glue.blocking(proto.cancel_request)
    glue.protocol = proto
    return Connection(aconn, glue)

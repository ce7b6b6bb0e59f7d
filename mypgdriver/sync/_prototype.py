"""PROTOTYPE (issue 24): the Session's coroutines driven without an event loop.

Not an API.  It measures whether a blocking ``mypgdriver.sync`` can be served
by the same protocol (protocol.pyx) and the same policy (session.py) by
driving their native coroutines by hand:

* ``SyncGlue`` is passed where the asyncio code takes a loop.  It gives the
  protocol and the Session what they ask of a loop (``time``,
  ``create_future``, ``call_soon``, ``call_later``, ``create_task``,
  ``create_connection``) and a caller identity (``current_task``), and runs
  nothing by itself.
* ``SyncGlue.run(coro)`` drives one call: ``coro.send(None)`` until the
  coroutine awaits a Future that is not done; then blocking reads on the
  socket (``select`` with a timeout while a timer is pending) are fed to
  ``data_received``, callbacks scheduled with ``call_soon`` and due timers
  run, and the coroutine is resumed once its Future is done.  Ctrl-C is
  thrown into the coroutine as ``CancelledError`` (the Session's abandon
  path: CancelRequest, drain before the next call), then re-raised.

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
import select
import socket
import sys
import time
from typing import Any, Callable, Optional, cast

from mypgdriver import connector

# Bytes asked of recv() per read (asyncio's selector loop reads 256 KiB).
READ_SIZE = 256 * 1024


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
    """

    __slots__ = ()

    def done(self) -> bool:
        return False


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
        except BaseException as exc:
            self.set_exception(exc)
        else:
            if awaited is None:
                self._loop.call_soon(self._step, None)     # a bare yield (asyncio.sleep(0))
            else:
                awaited.add_done_callback(self._step)


class _SocketTransport:
    """The part of asyncio.Transport the protocol and the connector use, over a blocking socket."""

    def __init__(self, sock: socket.socket, glue: 'SyncGlue') -> None:
        self.sock = sock
        self.glue = glue
        self.protocol: Any = None
        self.closed = False
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == 'socket':
            return self.sock
        return default

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def write(self, data: bytes) -> None:
        # Blocking: fine while the server reads what we send.  A COPY or
        # executemany stream larger than both socket buffers would block here
        # while the server blocks writing to us (see docs/dev/sync-design.md).
        self.sock.sendall(data)

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.abort()

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.glue.call_soon(self._lost)

    def _lost(self) -> None:
        self.sock.close()
        if self.protocol is not None:
            self.protocol.connection_lost(None)


class SyncGlue:
    """Stands in for the event loop of one connection; driven by run(), one call at a time."""

    def __init__(self) -> None:
        self.time = time.monotonic
        self.ready: collections.deque = collections.deque()
        self.timers: list = []
        self.seq = itertools.count()
        self.caller = _Caller()
        self.transport: Optional[_SocketTransport] = None
        self.protocol: Any = None
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

    def current_task(self) -> _Caller:
        return self.caller

    async def create_connection(self, protocol_factory: Callable, host: str, port: int, **kw):
        if kw:
            raise NotImplementedError(f'prototype: create_connection(**{kw!r})')
        sock = socket.create_connection((host, port))
        return self._attach(sock, protocol_factory)

    async def create_unix_connection(self, protocol_factory: Callable, path: str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        return self._attach(sock, protocol_factory)

    def _attach(self, sock: socket.socket, protocol_factory: Callable):
        protocol = protocol_factory()
        transport = _SocketTransport(sock, self)
        transport.protocol = protocol
        self.transport = transport
        self.protocol = protocol
        protocol.connection_made(transport)
        return transport, protocol

    # --- the driver ---

    def run(self, coro) -> Any:
        """Drive `coro` (a call of the asyncio API) to its end, blocking; its result."""
        send = coro.send
        interrupted: Optional[BaseException] = None
        try:
            awaited = send(None)
            while True:
                try:
                    if awaited is not None:
                        self.wait_for(awaited)
                    else:
                        self.run_ready()
                    awaited = send(None)
                except KeyboardInterrupt as exc:
                    # Delivered where the caller awaits, as a cancellation:
                    # the Session abandons the operation (CancelRequest, and
                    # the drain that the next call waits for).
                    interrupted = exc
                    awaited = coro.throw(asyncio.CancelledError())
        except StopIteration as stop:
            if self.ready:
                self.run_ready()
            return stop.value
        except asyncio.CancelledError:
            self.run_ready()
            if interrupted is not None:
                raise interrupted from None
            raise

    def run_ready(self) -> None:
        ready = self.ready
        for _ in range(len(ready)):
            handle = ready.popleft()
            if not handle.cancelled:
                handle.callback(*handle.args)

    def wait_for(self, fut: asyncio.Future) -> None:
        """Read, run callbacks and fire timers until `fut` is done."""
        while not fut.done():
            if self.ready:
                self.run_ready()
                continue
            timeout = self._fire_timers() if self.timers else None
            if fut.done() or self.ready:
                continue
            # (read each time: a background task may be opening it)
            transport = self.transport
            if transport is None or transport.closed:
                raise RuntimeError('prototype: waiting with no connection to read from')
            sock = transport.sock
            if timeout is not None:
                readable, _, _ = select.select([sock], [], [], timeout)
                if not readable:
                    continue
            try:
                data = sock.recv(READ_SIZE)
            except OSError as exc:
                transport.closed = True
                self.protocol.connection_lost(exc)
                continue
            if data:
                self.protocol.data_received(data)
            else:
                transport.closed = True
                self.protocol.connection_lost(None)

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


async def _blocking_cancel_request(host: str, port: int, message: bytes) -> None:
    """The CancelRequest, sent with a blocking socket (as libpq's PQcancel does)."""
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(message)
        while sock.recv(16):
            pass


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


def connect(dsn: str, **kw: Any) -> Connection:
    """Open a connection with the asyncio connector's own coroutine, driven by a SyncGlue.

    Plain TCP or a Unix socket only (TLS needs an SSLObject/MemoryBIO
    transport, see the design note).
    """
    glue = SyncGlue()
    kw.setdefault('timeout', None)
    aconn = glue.run(connector.connect(dsn, loop=cast(Any, glue), ssl=False, **kw))
    aconn._session.current_task = glue.current_task
    # The connector's CancelRequest sender uses an asyncio.Protocol and
    # asyncio.wait_for(): replaced by a blocking one.
    params = aconn._params
    host = params.hosts[0]
    proto = aconn._protocol
    proto.cancel_request = lambda: _blocking_cancel_request(
        host.host, host.port, proto.cancel_request_message())
    return Connection(aconn, glue)

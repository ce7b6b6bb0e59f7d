# cython: language_level=3
"""The sync glue: the Session's coroutines driven without an event loop (issue 24).

``mypgdriver.sync`` is served by the same protocol (protocol.pyx) and the
same policy (session.py) as the asyncio API, by driving their native
coroutines by hand (docs/dev/sync-design.md):

* ``SyncGlue`` is passed where the asyncio code takes a loop.  It gives the
  protocol and the Session what they ask of a loop (``time``,
  ``create_future``, ``call_soon``, ``call_later``, ``create_task``,
  ``run_in_executor``) and a caller identity (``current_task``), and runs
  nothing by itself.  The connector (every sslmode, direct TLS, channel
  binding, the CancelRequest) runs unchanged on its
  ``create_connection``, ``create_unix_connection`` and ``start_tls``,
  which open the blocking transports of transport.pyx.
* ``SyncGlue.run(coro)`` drives one call: ``coro.send(None)`` until the
  coroutine awaits a Future that is not done; then blocking reads on the
  socket (``poll`` while a timer is pending, output is buffered or several
  sockets are open, e.g. a CancelRequest's) are fed to ``data_received``,
  buffered output is flushed when the socket is writable (a COPY or
  executemany stream: the socket is read meanwhile, so a server blocked
  writing to us cannot deadlock the stream), callbacks scheduled with
  ``call_soon`` and due timers run, and the coroutine is resumed once its
  Future is done.

Ctrl-C.  Python raises KeyboardInterrupt where Python code runs or where a
system call is interrupted by the signal.  This module is compiled, as are
the transport and the protocol, so the signal cannot land inside the
driver's bookkeeping or half-way through a protocol step.  It lands either

* in the blocking wait (``recv``, ``poll``, a sleep, or the check of
  pending signals the driver makes before each wait): nothing was
  received, every step before it finished.  This is a *clean*
  interruption: it is thrown into the coroutine as ``CancelledError``, so
  the Session's own abandon path runs (CancelRequest, and the drain that
  the next call waits for), then re-raised;
* or in Python code run during the call: the Session's, the connection's,
  a callback (listeners, loggers), ``ssl.SSLSocket``'s methods.  What that
  code was doing is unknown (a turn taken and not yet released, bytes
  decrypted and not yet handed on), so the connection is *closed* (a
  CancelRequest first if the server is running something), never left in
  doubt; then the exception propagates.

No asyncio event loop is created, set or running at any point: asyncio's
Future is used as a plain object (its ``loop`` is the glue, whose
``call_soon`` receives the done callbacks).
"""
import asyncio
import functools
import heapq
import math
import select
import selectors
import logging
import ssl as ssl_module
import time

from cpython.exc cimport PyErr_CheckSignals

cdef extern from *:
    """
    /* One step of a coroutine: what it awaits (*done = 0), or what it
       returned (*done = 1), without the StopIteration that coro.send()
       raises at the end of every call (its exception object, traceback
       and frame cost some 2,400 instructions per call).  NULL: it raised. */
    static PyObject *mpg_coro_send(PyObject *coro, int *done) {
    #if PY_VERSION_HEX >= 0x030A0000
        PyObject *result = NULL;
        PySendResult r = PyIter_Send(coro, Py_None, &result);
        if (r == PYGEN_ERROR) return NULL;
        *done = (r == PYGEN_RETURN);
        return result;
    #else
        PyObject *result = PyObject_CallMethod(coro, "send", "O", Py_None);
        if (result != NULL) { *done = 0; return result; }
        if (!PyErr_ExceptionMatches(PyExc_StopIteration)) return NULL;
        if (_PyGen_FetchStopIterationValue(&result) < 0) return NULL;
        *done = 1;
        return result;
    #endif
    }
    """
    object mpg_coro_send(object coro, int *done)

from mypgdriver import exceptions
from mypgdriver.connecting import connector
from mypgdriver.core.waits import wait_done
from mypgdriver.sync.driver.sockets import connect_tcp, connect_unix, wrap_tls
from mypgdriver.sync.driver.transport import SocketTransport, TLSTransport

__all__ = ('SyncGlue', 'open_connection')

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
cdef int _READABLE = getattr(select, 'POLLIN', 1)
cdef int _WRITABLE = getattr(select, 'POLLOUT', 4)
# Error and hang-up: the next read or send tells what happened.
cdef int _BROKEN = (getattr(select, 'POLLERR', 8) | getattr(select, 'POLLHUP', 16)
                    | getattr(select, 'POLLNVAL', 32))
cdef bint _HAVE_POLL = hasattr(select, 'poll')

_CancelledError = asyncio.CancelledError

#: How long a call that timed out (or was interrupted) drives its
#: CancelRequest before it returns: enough for the request to be through on
#: any working network; beyond it, the request goes on in the background.
CANCEL_SEND_WAIT = 0.25
_logger = logging.getLogger('mypgdriver.sync')
# Errors of operations whose caller gave up (logged at debug level).
_QUIET = (exceptions.PostgresError, exceptions.InterfaceError, _CancelledError)


def _poll(dict interest, timeout):
    """(fd, events) of the file descriptors in `interest` (fd -> events) that are ready."""
    if _HAVE_POLL:
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


cdef class Handle:
    """What call_soon()/call_later() return: cancel() is all the callers use."""

    def __init__(self, double when, unsigned long long seq, callback, tuple args):
        self.when = when
        self.seq = seq
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self):
        self.cancelled = True

    def __lt__(self, Handle other):
        return (self.when, self.seq) < (other.when, other.seq)


cdef class Caller:
    """The identity of the code calling the sync API (Session.current_task()).

    The transaction owner and the line holder are compared with it; the
    Session asks the owner whether it finished (done()): the caller of a
    sync connection never does while the connection is in use.

    The protocol interrupts the caller feeding a COPY or executemany from
    its own data (on a timeout or cancel(), ``cancel()``), as it cancels an
    asyncio task: the driver throws ``CancelledError`` into the call where
    it waits, as the event loop would into the task.
    """

    def done(self):
        return False

    def cancel(self, msg=None):
        self.interrupted = True
        return True

    def uncancel(self):
        self.interrupted = False
        return 0


class BackgroundTask(asyncio.Future):
    """A coroutine the protocol or the Session starts and does not await (create_task()).

    Stepped from the glue's ready queue, like asyncio.Task steps itself from
    the loop's: the CancelRequest sender, the cleanup of an interrupted
    transaction block, async query loggers.  It only advances while a sync
    call drives the glue (or at close()).
    """

    def __init__(self, coro, glue):
        super().__init__(loop=glue)
        self._coro = coro
        glue.call_soon(self._step, None)

    def _step(self, _fut):
        if self.done():
            return
        try:
            awaited = self._coro.send(None)
        except StopIteration as stop:
            self.set_result(stop.value)
        except (KeyboardInterrupt, SystemExit) as exc:
            # As asyncio.Task: recorded, and re-raised to whoever runs the
            # step (the driver), not swallowed.
            self.set_exception(exc)
            raise
        except _CancelledError:
            self.cancel()
        except BaseException as exc:
            self.set_exception(exc)
        else:
            if awaited is None:
                self._loop.call_soon(self._step, None)     # a bare yield (asyncio.sleep(0))
            else:
                awaited.add_done_callback(self._step)


cdef class SyncGlue:
    """Stands in for the event loop of one connection; driven by run(), one call at a time."""

    def __init__(self):
        import collections
        self.time = time.monotonic
        self.ready = collections.deque()
        self.timers = []
        self.seq = 0
        self.caller = Caller()
        self.protocol = None
        self.transports = []
        self.io_waiters = []
        self.interrupted_cleanly = False
        self.depth = 0
        self.wait_hook = None
        # Hot: one Future per operation.  Bound as C callables, so that
        # making one runs no Python frame (asyncio.Future asks its loop
        # get_debug() at creation; bool() is False).
        self.get_debug = bool
        self.create_future = functools.partial(asyncio.Future, loop=self)

    # --- what asyncio.Future asks of its loop ---

    def call_exception_handler(self, context):
        """What asyncio's loop logs: an exception nobody retrieved.

        An operation abandoned by a Ctrl-C or a close ends with an error
        that its caller, gone, never reads: the driver's own errors are
        logged at debug level; anything else is an error.
        """
        exc = context.get('exception')
        level = logging.DEBUG if isinstance(exc, _QUIET) else logging.ERROR
        _logger.log(level, 'mypgdriver.sync: %s: %r', context.get('message'), exc)

    # --- what the protocol and the Session ask of a loop ---

    def call_soon(self, callback, *args, context=None):
        handle = Handle(0.0, 0, callback, args)
        self.ready.append(handle)
        return handle

    def call_later(self, double delay, callback, *args, context=None):
        self.seq += 1
        handle = Handle(self.time() + delay, self.seq, callback, args)
        heapq.heappush(self.timers, handle)
        return handle

    def create_task(self, coro):
        return BackgroundTask(coro, self)

    def run_in_executor(self, executor, function, *args):
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

    def current_task(self):
        return self.caller

    # --- opening connections (what the connector and tls.py ask of a loop) ---
    #
    # The connect and the TLS handshake wait through the driver
    # (wait_io()), so the connector's deadline timer and Ctrl-C interrupt
    # them as they do with asyncio; then the sockets block.

    async def create_connection(self, protocol_factory, host, port, *, ssl=None,
                                server_hostname=None):
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

    async def create_unix_connection(self, protocol_factory, path):
        """``loop.create_unix_connection``."""
        sock = await connect_unix(path, self.wait_io)
        return self._attach(SocketTransport(sock, self), protocol_factory)

    async def start_tls(self, transport, protocol, sslcontext, *, server_hostname=None):
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

    def _attach(self, transport, protocol_factory):
        protocol = protocol_factory()
        transport.protocol = protocol
        self.transports.append(transport)
        protocol.connection_made(transport)
        return transport, protocol

    def forget_transport(self, transport):
        """A transport closed or handed its socket on: the driver no longer reads it."""
        try:
            self.transports.remove(transport)
        except ValueError:
            pass

    async def wait_io(self, sock, writable):
        """Until `sock` is writable (or readable): the driver polls it meanwhile."""
        waiter = self.create_future()
        entry = (sock, writable, waiter)
        self.io_waiters.append(entry)
        try:
            await waiter
        finally:
            self.io_waiters.remove(entry)

    # --- the driver ---

    def run(self, coro):
        """Drive `coro` (a call of the asyncio API) to its end, blocking; its result."""
        try:
            # A signal that came while the caller's own code ran is raised
            # here, before anything is sent.
            PyErr_CheckSignals()
        except BaseException:
            coro.close()
            raise
        return self.drive(coro, None)

    def run_interrupted(self, coro, interrupted):
        """Drive `coro` for a call that the KeyboardInterrupt `interrupted` reached; then raise it.

        For the compiled call path (runner.pyx), which waits for its answer
        outside any coroutine: when Ctrl-C lands in that wait, on_interrupt()
        was called (as run() does), and `coro` is the policy's handling of
        the interruption (it abandons the operation, as a CancelledError
        thrown into the Session's await does under run()).  Whatever `coro`
        ends with, the caller gets `interrupted`, as from run().
        """
        return self.drive(coro, interrupted)

    cdef int on_interrupt(self) except -1:
        # A KeyboardInterrupt came out of a wait of a call: in a blocking
        # wait, nothing was received (clean); anywhere else (Python code the
        # driver ran, or a wait nested in another call's), the connection
        # is closed first, never left in doubt.
        if not self.interrupted_cleanly or self.depth > 1:
            self._close_in_doubt()
        self.interrupted_cleanly = False
        return 0

    cdef object drive(self, coro, object interrupted):
        # run()'s loop.  `interrupted`: a KeyboardInterrupt that already
        # reached the call (run_interrupted()), raised at the end.
        cdef Caller caller = self.caller
        cdef int done = 0
        self.depth += 1
        try:
            awaited = mpg_coro_send(coro, &done)
            while not done:
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
                    # Delivered while the coroutine is suspended.  Clean (in
                    # a wait): thrown into it as a cancellation, where it
                    # awaits, so the Session abandons the operation
                    # (CancelRequest, and the drain that the next call waits
                    # for).  Not clean (in Python code run by the driver):
                    # the connection is closed first.
                    if interrupted is None:
                        interrupted = exc
                    self.on_interrupt()
                    awaited = coro.throw(_CancelledError())
                    continue
                if caller.interrupted:
                    # The protocol interrupted the feeding of a stream.
                    caller.interrupted = False
                    awaited = coro.throw(_CancelledError())
                    continue
                awaited = mpg_coro_send(coro, &done)
        except StopIteration as stop:
            # (the end of a coroutine that a throw() resumed)
            awaited = stop.value
        except _CancelledError:
            self.run_ready()
            if interrupted is not None:
                raise interrupted from None
            raise
        except KeyboardInterrupt:
            # Raised inside the coroutine itself, between two awaits (the
            # Session's, the connection's or a callback's Python code): what
            # it was doing is unknown.
            self.interrupted_cleanly = False
            self._close_in_doubt()
            raise
        except BaseException:
            # What the failed call left to do at once: the CancelRequest
            # of a timed-out statement (sent before the call returns).
            self.run_ready()
            raise
        finally:
            self.depth -= 1
        if self.ready:
            self.run_ready()
        if interrupted is not None:
            # The call finished in spite of the cancellation (it was past
            # the point of no return): Ctrl-C still reaches the caller.
            raise interrupted from None
        return awaited

    cpdef _close_in_doubt(self):
        """Ctrl-C landed in Python code during a call: close the connection (never in doubt).

        If the server is running something, a CancelRequest goes first, so
        that the statement stops now rather than when the server next
        writes to the closed socket.
        """
        proto = self.protocol
        if proto is None or proto.is_closed():
            return
        try:
            if proto.request_cancel() is not None:
                self.run_ready()      # the blocking CancelRequest sender
        except Exception:
            pass
        finally:
            proto.abort()
            self.run_ready()

    def blocking(self, coroutine_function):
        """`coroutine_function` driven at once, for at most CANCEL_SEND_WAIT seconds.

        For the connector's CancelRequest sender (its transport kind, its
        TLS policy): run as the protocol's background task, it would only
        advance while a later call drives the glue, and the statement it
        cancels would run on meanwhile.  Driven at once instead, it is sent
        before the call that timed out returns, as libpq's PQcancel does
        (the main connection is read meanwhile, as by an event loop).  But
        the call's timeout bounds the call: if the request is not through
        (the server has not closed the cancel connection) within
        CANCEL_SEND_WAIT, the rest goes on in the background, as with
        asyncio, and the next call waits for it (the protocol's cancel gate).
        """
        async def run_at_once():
            task = BackgroundTask(coroutine_function(), self)
            if self.run(wait_done(self, task, CANCEL_SEND_WAIT)):
                return task.result()
            return await task
        return run_at_once

    cpdef run_ready(self):
        """Run the callbacks scheduled so far (not those they schedule)."""
        cdef Handle handle
        ready = self.ready
        for _ in range(len(ready)):
            if not ready:
                break       # a callback drove the glue (blocking()) and ran the rest
            handle = ready.popleft()
            if not handle.cancelled:
                handle.callback(*handle.args)

    cpdef wait_for(self, fut):
        """Read, flush, run callbacks and fire timers until `fut` is done (or the caller is interrupted)."""
        cdef Caller caller = self.caller
        while not fut.done() and not caller.interrupted:
            if self.ready:
                self.run_ready()
                continue
            timeout = self._fire_timers() if self.timers else None
            if fut.done() or self.ready:
                continue
            self._clean_point()
            # (read each time: a background task may have opened or closed one)
            transports = self.transports
            if (len(transports) == 1 and not self.io_waiters and not transports[0].out
                    and (timeout is None or transports[0].buffered())):
                # The usual case, one connection, nothing to send and no
                # timer: a blocking recv(), no poll() (one syscall per wait).
                transports[0].read()
            else:
                self._wait_io(timeout)

    cdef int _clean_point(self) except -1:
        # Before a blocking wait: a signal that arrived meanwhile (it could
        # not be raised inside compiled code) is raised here, where every
        # step before it finished.
        try:
            PyErr_CheckSignals()
            if self.wait_hook is not None:
                self.wait_hook()
        except BaseException:
            self.interrupted_cleanly = True
            raise
        return 0

    def _wait_io(self, timeout):
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
        interest = {}
        targets = {}
        for transport in transports:
            fd = transport.sock.fileno()
            interest[fd] = (_READABLE | _WRITABLE if transport.out and not transport.flush_needs_read
                            else _READABLE)
            targets[fd] = transport
        for sock, writable, waiter in self.io_waiters:
            fd = sock.fileno()
            interest[fd] = _WRITABLE if writable else _READABLE
            targets[fd] = waiter
        try:
            if not interest:
                if timeout is None:
                    raise RuntimeError('mypgdriver.sync: waiting with no connection to read from')
                time.sleep(timeout)
                return
            ready = _poll(interest, timeout)
        except KeyboardInterrupt:
            self.interrupted_cleanly = True     # nothing was read
            raise
        for fd, events in ready:
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

    def _fire_timers(self):
        # Runs the timers that are due; the seconds until the next one (None: none).
        cdef Handle first
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

    def run_pending(self):
        """Run what is ready now (close(): the callbacks the call left behind)."""
        self.run_ready()


def _wake(waiter):
    if not waiter.done():
        waiter.set_result(None)


def open_connection(dsn=None, **kw):
    """Open a connection with the asyncio connector's own coroutine, driven by a SyncGlue.

    Returns the asyncio ``Connection`` and the glue whose ``run(coro)``
    drives its calls.  Every sslmode, direct TLS and channel binding work
    as in the asyncio API: the connector's code runs unchanged on the
    glue's transports (transport.pyx).
    """
    glue = SyncGlue()
    kw.setdefault('timeout', None)
    aconn = glue.run(connector.connect(dsn, loop=glue, **kw))
    aconn._session.current_task = glue.current_task
    proto = aconn._protocol
    proto.cancel_request = glue.blocking(proto.cancel_request)
    glue.protocol = proto
    return aconn, glue

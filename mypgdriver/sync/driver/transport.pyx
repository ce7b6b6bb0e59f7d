# cython: language_level=3
"""Blocking transports for the sync glue (issue 24): what the protocol and the
connector ask of an asyncio transport, over a blocking socket.

The asyncio API gets its transports from the event loop; ``mypgdriver.sync``
has no event loop, so its glue (``SyncGlue``) opens sockets itself and wraps
them in the classes below.  They give the protocol and the connector the
part of ``asyncio.Transport`` they use (``write``, ``close``, ``abort``,
``is_closing``, ``set_protocol``, ``get_extra_info``, ``pause_reading`` /
``resume_reading``), and the glue the part of an event loop's reader:
``read()`` receives what the socket has and hands it to the protocol.

Writes never block.  ``write()`` sends what the socket takes at once and
keeps the rest in an output buffer; above ``WRITE_HIGH_WATER`` bytes it
calls the protocol's ``pause_writing()`` (the COPY and executemany feeders
then await the protocol's drain waiter), below ``WRITE_LOW_WATER`` its
``resume_writing()``.  The glue's driver, whenever it waits, waits for the
socket to be readable *or* (with output buffered) writable, flushes and
reads meanwhile: a stream larger than both socket buffers cannot deadlock
against a server that is itself blocked writing to us (notices, an early
error), as a blocking ``sendall`` did.

Reads block in the common case: a query is sent with one non-blocking
``send()`` and its answer awaited with one blocking ``recv()`` (the driver
polls only when a timer is pending, output is buffered or several sockets
are open).  A plain socket stays in blocking mode and is written with
``MSG_DONTWAIT``, so neither costs a mode switch.

TLS uses an ``ssl.SSLSocket`` rather than ``SSLObject`` over ``MemoryBIO``:
an SSLSocket reads, decrypts, encrypts and sends in C with the same calls as
a plain socket, where a MemoryBIO transport moves every record between the
socket and the BIOs in Python.  An SSLSocket takes no ``MSG_DONTWAIT``, so
the TLS transport switches the socket to non-blocking to write and back to
blocking for the driver's blocking read (one ``ioctl`` each, only when the
mode changes).  A non-blocking SSL write can want to read
(``SSLWantReadError``, e.g. a key update) or to write
(``SSLWantWriteError``); either way OpenSSL requires the same write to be
repeated, which the transport does (``_retry_size``) once the driver saw
the socket readable, or writable.  Decrypted bytes can wait in the SSL
object (``pending()``) where ``poll`` does not see them: ``buffered()``
tells the glue to read them before it polls.

Connecting and the TLS handshake are in mypgdriver/sync/driver/sockets.py.

A plain socket is read and written with ``recv()`` and ``send()`` called
on its descriptor from here, not through the socket object's methods
(whose lookup and argument parsing cost more than the system call on a
``SELECT 1``); the send, which never waits, keeps the GIL.  They behave as
the socket methods do: a read interrupted by a signal runs the signal's
handler (raising KeyboardInterrupt) or is retried, errors raise the
OSError subclass of their errno.

Compiled (Cython) for Ctrl-C as much as for speed: a KeyboardInterrupt is
raised only where Python code runs or a system call is interrupted, so
none can land inside these methods between two steps of their state (the
protocol's ``data_received`` and ``write`` are compiled too).  The one
place it is expected, a blocking ``recv()`` interrupted by the signal, is
reported to the glue as a clean interruption (``interrupted_cleanly``):
nothing was received, the connection is in sync.  A TLS read goes through
``ssl.SSLSocket``'s Python methods, where the signal can also land after
bytes were decrypted: that one is not clean.
"""

import os
import socket
import ssl
from typing import Any

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport EAGAIN, EINTR, errno

cdef extern from "<errno.h>":
    const int EWOULDBLOCK

cdef extern from *:
    """
    #ifdef _WIN32
    #define MPG_RAW_SOCKETS 0
    static Py_ssize_t mpg_recv(int fd, void *buf, size_t n, int dontwait) { return -1; }
    static Py_ssize_t mpg_send(int fd, const void *buf, size_t n) { return -1; }
    #else
    #include <sys/types.h>
    #include <sys/socket.h>
    #ifndef MSG_NOSIGNAL
    #define MSG_NOSIGNAL 0
    #endif
    #ifdef MSG_DONTWAIT
    #define MPG_RAW_SOCKETS 1
    static Py_ssize_t mpg_recv(int fd, void *buf, size_t n, int dontwait) {
        return recv(fd, buf, n, dontwait ? MSG_DONTWAIT : 0);
    }
    static Py_ssize_t mpg_send(int fd, const void *buf, size_t n) {
        return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    #else
    #define MPG_RAW_SOCKETS 0
    static Py_ssize_t mpg_recv(int fd, void *buf, size_t n, int dontwait) { return -1; }
    static Py_ssize_t mpg_send(int fd, const void *buf, size_t n) { return -1; }
    #endif
    #endif
    """
    const int MPG_RAW_SOCKETS
    Py_ssize_t mpg_recv(int fd, void *buf, size_t n, int dontwait) nogil
    Py_ssize_t mpg_send(int fd, const void *buf, size_t n) nogil

__all__ = ('READ_SIZE', 'WRITE_HIGH_WATER', 'WRITE_LOW_WATER', 'SocketTransport',
           'TLSTransport')

# Bytes asked of recv() per read (asyncio's selector loop reads 256 KiB).
# Read into one buffer per transport (recv_into), not a new bytes object per
# read: glibc serves a 256 KiB allocation with mmap, and recv()'s shrinking
# of it to the bytes received and its freeing cost an mremap and a munmap
# per read (measured: 3 syscalls and some 35 us of CPU per query).
READ_SIZE = 256 * 1024

# Output buffered above which the protocol is told to pause writing, and
# below which to resume.  Higher than asyncio's 64 KiB / 16 KiB: the
# feeders write in chunks of 256 KiB to 1 MiB (copy.py), and each pause
# costs a wait of the driver.
WRITE_HIGH_WATER = 1024 * 1024
WRITE_LOW_WATER = 256 * 1024

# The largest write handed to OpenSSL at once (it makes 16 KiB records).
TLS_WRITE_SIZE = 256 * 1024

# send()/recv() flag "do not wait" (Linux, the BSDs, macOS); without it the
# socket is switched to non-blocking mode around the call instead.
cdef int _DONTWAIT = getattr(socket, 'MSG_DONTWAIT', 0)
cdef Py_ssize_t _READ_SIZE = READ_SIZE
cdef Py_ssize_t _HIGH = WRITE_HIGH_WATER
cdef Py_ssize_t _LOW = WRITE_LOW_WATER


cdef class SocketTransport:
    """An asyncio-like transport over a connected socket: reads may block, writes never do.

    What the socket does not take at once waits in ``out``, flushed by the
    glue's driver when the socket is writable (``flush()``).
    """

    cdef public object sock
    # The glue: call_soon(), forget_transport(), interrupted_cleanly.
    cdef public object glue
    cdef public object protocol
    cdef public bint closed
    cdef public bint reading
    # Written and not yet taken by the socket, in order.  (A bytearray
    # drops sent bytes from its front without moving the rest.)
    cdef public bytearray out
    cdef public bint writing_paused
    # The buffered output waits for the socket to be readable, not
    # writable (a TLS write that wants to read first).
    cdef public bint flush_needs_read
    # The socket's mode: blocking unless a write or a polled read
    # switched it (only where MSG_DONTWAIT is missing, and for TLS).
    cdef public bint blocking
    # A blocking recv() interrupted by a signal is a clean interruption.
    cdef public bint clean_reads
    # What recv_into() fills; handed to the protocol as a memoryview slice
    # (it copies what it keeps: ReadBuffer._feed).
    cdef readonly bytearray rbuf
    cdef readonly object rview
    # A plain socket: read and written with recv()/send() on `fd` here.
    cdef readonly bint raw
    cdef int fd
    cdef object __weakref__

    def __init__(self, sock, glue, protocol=None):
        self.sock = sock
        self.glue = glue
        self.protocol = protocol
        self.closed = False
        self.reading = True
        self.out = bytearray()
        self.writing_paused = False
        self.flush_needs_read = False
        self.blocking = True
        self.clean_reads = True
        self.rbuf = bytearray(_READ_SIZE)
        self.rview = memoryview(self.rbuf)
        self.raw = MPG_RAW_SOCKETS and not isinstance(sock, ssl.SSLSocket)
        self.fd = sock.fileno() if self.raw else -1

    # --- what the protocol and the connector use (asyncio.Transport) ---

    def get_extra_info(self, name, default=None):
        if name == 'socket':
            return self.sock
        if name == 'peername':
            return self.sock.getpeername()
        return default

    def set_protocol(self, protocol):
        self.protocol = protocol

    def get_protocol(self):
        return self.protocol

    def write(self, data):
        """Send what the socket takes now; keep the rest for the driver to flush."""
        cdef Py_ssize_t sent
        if self.closed:
            return
        out = self.out
        if out:
            out += data     # behind what waits already: order is kept
        else:
            try:
                sent = self._send_raw(data) if self.raw else self._send(data)
            except OSError as exc:
                self._fail_later(exc)
                return
            if sent == len(data):
                return      # the usual case: one send(), nothing kept
            out += memoryview(data).cast('B')[sent:]
        if not self.writing_paused and len(out) > _HIGH:
            self.writing_paused = True
            self.protocol.pause_writing()

    def get_write_buffer_size(self):
        return len(self.out)

    def is_closing(self):
        return self.closed

    def pause_reading(self):
        self.reading = False

    def resume_reading(self):
        self.reading = True

    def close(self):
        # What the socket takes now of the buffered output (a Terminate
        # behind it) goes; the rest is dropped with the connection.
        if self.out and not self.closed:
            self.flush()
        self.abort()

    def abort(self):
        """Close the socket now; the protocol hears of it (connection_lost) from the glue."""
        # The socket is closed at once, not when the glue next runs its
        # callbacks: a sync connection that is dropped must not keep it.
        self._fail_later(None)

    # --- what the glue uses ---

    def buffered(self):
        """Bytes received and not yet read that ``select`` cannot see (none on a plain socket)."""
        return 0

    def read(self):
        """Receive what the socket has (blocking until something comes) and hand it on.

        Only called with no output buffered.  End of stream and socket
        errors close the transport and tell the protocol
        (``connection_lost``), as an event loop does.  A signal that
        interrupts the wait raises its exception (KeyboardInterrupt) here,
        before anything was received: the glue is told it was clean.
        """
        cdef Py_ssize_t n
        if not self.blocking:
            self._set_blocking(True)
        try:
            n = self._recv_raw(False) if self.raw else self.sock.recv_into(self.rbuf)
        except OSError as exc:     # ssl.SSLError too
            self._lose(exc)
            return
        except BaseException:
            if self.clean_reads:
                self.glue.interrupted_cleanly = True
            raise
        if n:
            self.protocol.data_received(self.rview[:n])
        else:
            self._lose(None)

    def read_ready(self):
        """Receive what the socket has without waiting (the driver saw it readable)."""
        cdef Py_ssize_t n
        try:
            if self.raw:
                n = self._recv_raw(True)
                if n < 0:
                    return      # nothing after all
            elif _DONTWAIT:
                n = self.sock.recv_into(self.rbuf, 0, _DONTWAIT)
            else:
                if self.blocking:
                    self._set_blocking(False)
                n = self.sock.recv_into(self.rbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if n:
            self.protocol.data_received(self.rview[:n])
        else:
            self._lose(None)

    def flush(self):
        """Send what the socket takes now of the buffered output (the driver saw it writable).

        Below the low-water mark the protocol is told to resume writing
        (its drain waiter is woken).
        """
        cdef Py_ssize_t sent
        out = self.out
        try:
            while out:
                sent = self._send_raw(out) if self.raw else self._send(out)
                if not sent:
                    break
                del out[:sent]
        except OSError as exc:
            self._lose(exc)
            return
        if self.writing_paused and len(out) <= _LOW:
            self.writing_paused = False
            self.protocol.resume_writing()

    cdef Py_ssize_t _recv_raw(self, bint dontwait) except -2:
        # Bytes received into rbuf (0: end of stream; -1: none, `dontwait`).
        cdef Py_ssize_t n
        cdef int err
        cdef char *buf = PyByteArray_AS_STRING(self.rbuf)
        cdef int fd = self.fd
        while True:
            with nogil:
                n = mpg_recv(fd, buf, _READ_SIZE, dontwait)
                err = errno
            if n >= 0:
                return n
            if err == EINTR:
                # As socket.recv_into: the signal's handler runs (Ctrl-C
                # raises here), else the read is retried.
                PyErr_CheckSignals()
                continue
            if err == EAGAIN or err == EWOULDBLOCK:
                if dontwait:
                    return -1
                continue    # (a blocking socket does not say this)
            raise OSError(err, os.strerror(err))

    cdef Py_ssize_t _send_raw(self, data) except -1:
        # Bytes of `data` the socket took without waiting (0: none).  The
        # call never waits, but the kernel's work for it (on loopback: the
        # receiving side's too, waking the server) is a good part of a small
        # query's cost: other threads run Python meanwhile, as libpq's
        # callers (psycopg2) let them.  The buffer is held (its view) and
        # the connection is this thread's (CallRunner's lock).
        cdef Py_buffer view
        cdef Py_ssize_t n
        cdef int err
        cdef int fd = self.fd
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            while True:
                with nogil:
                    n = mpg_send(fd, view.buf, <size_t>view.len)
                    err = errno
                if n >= 0:
                    return n
                if err == EINTR:
                    PyErr_CheckSignals()
                    continue
                if err == EAGAIN or err == EWOULDBLOCK:
                    return 0
                raise OSError(err, os.strerror(err))
        finally:
            PyBuffer_Release(&view)

    def _send(self, data):
        # Bytes of `data` the socket took without waiting (0: none).
        try:
            if _DONTWAIT:
                return self.sock.send(data, _DONTWAIT)
            if self.blocking:
                self._set_blocking(False)
            return self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0

    def _set_blocking(self, bint blocking):
        self.sock.setblocking(blocking)
        self.blocking = blocking

    def detach(self):
        """Hand the socket over (to a TLS transport, for ``start_tls``); this one is done.

        As with asyncio's ``start_tls``, the old transport is no longer
        usable; its protocol is not told anything.
        """
        self._finish()
        return self.sock

    def _lose(self, exc):
        if self.closed:
            return
        self._finish()
        self.sock.close()
        self._tell_lost(exc)

    def _fail_later(self, exc):
        # A write failed: inside the protocol's own code, which must not
        # hear of it re-entrantly; it is told from the glue (as asyncio does).
        if self.closed:
            return
        self._finish()
        self.sock.close()
        self.glue.call_soon(self._tell_lost, exc)

    def _finish(self):
        self.closed = True
        self.glue.forget_transport(self)

    def _tell_lost(self, exc):
        if self.protocol is not None:
            self.protocol.connection_lost(exc)


class TLSTransport(SocketTransport):
    """A SocketTransport over an ``ssl.SSLSocket`` whose handshake is done."""

    def __init__(self, sock, glue, protocol=None):
        super().__init__(sock, glue, protocol)
        # ssl.SSLSocket.recv is Python code: a signal can land in it after
        # bytes were decrypted, which would then be lost.
        self.clean_reads = False
        # The size of an SSL write that wanted to read or write: OpenSSL
        # requires the same write again (the same bytes: those at the
        # front of `out`, which only grows at its end).
        self._retry_size = 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        # The names asyncio's SSL transports answer.  The connector reads
        # 'ssl_object' (for the server certificate, SCRAM channel binding):
        # an SSLSocket has the SSLObject methods it calls.
        if name == 'ssl_object':
            return self.sock
        if name == 'sslcontext':
            return self.sock.context
        if name == 'peercert':
            return self.sock.getpeercert()
        if name == 'cipher':
            return self.sock.cipher()
        if name == 'compression':
            return self.sock.compression()
        return super().get_extra_info(name, default)

    def buffered(self) -> int:
        # Decrypted bytes waiting in OpenSSL: recv() returns them without a
        # read on the socket, and poll() does not see them.
        return self.sock.pending()

    def read_ready(self) -> None:
        if self.blocking:
            self._set_blocking(False)
        try:
            n = self.sock.recv_into(self.rbuf)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return      # a partial record: the rest comes with the next poll
        except OSError as exc:
            self._lose(exc)
            return
        if n:
            self.protocol.data_received(self.rview[:n])
        else:
            self._lose(None)

    def _send(self, data: Any) -> int:
        if self.blocking:
            self._set_blocking(False)
        size = self._retry_size or min(len(data), TLS_WRITE_SIZE)
        try:
            sent = self.sock.send(data if size == len(data) else data[:size])
        except ssl.SSLWantWriteError:
            self._retry_size = size
            self.flush_needs_read = False
            return 0
        except ssl.SSLWantReadError:
            self._retry_size = size
            self.flush_needs_read = True
            return 0
        self._retry_size = 0
        self.flush_needs_read = False
        return sent

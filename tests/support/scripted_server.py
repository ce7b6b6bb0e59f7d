"""A scripted fake PostgreSQL server (asyncio, in the test process).

It completes a plausible startup, then answers the extended-query messages a
fetch sends (Parse/Describe/Sync, then Bind/Execute/Sync) from a script:
the column types to describe and, for each Execute, the raw bytes to send
back.  That lets a test play what no real server sends -- a composite that
claims 2**31-1 fields, a length word of -2, a message length of 2**31-1 with
no body -- and check how the driver reacts.

Only the built-in OIDs given in `columns` are described, so the driver never
needs its catalog introspection query.
"""
from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable, Sequence

SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104

TEXT_OID = 25
BYTEA_OID = 17
INT4_OID = 23
INT4_ARRAY_OID = 1007
TEXT_ARRAY_OID = 1009
RECORD_OID = 2249
INT4RANGE_OID = 3904
INT4MULTIRANGE_OID = 4451


def message(mtype: bytes, body: bytes = b"") -> bytes:
    """One backend message: type byte, int32 length (itself included), body."""
    return mtype + struct.pack("!i", len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", cstr(name) + cstr(value))


def ready_for_query(status: bytes = b"I") -> bytes:
    return message(b"Z", status)


def authentication_ok() -> bytes:
    return message(b"R", struct.pack("!i", 0))


def startup_reply(server_version: str = "15.4", *, auth: bytes | None = None) -> bytes:
    """AuthenticationOk (or `auth`), the usual ParameterStatus set, BackendKeyData, ReadyForQuery."""
    params = {
        "server_version": server_version,
        "server_encoding": "UTF8",
        "client_encoding": "UTF8",
        "DateStyle": "ISO, MDY",
        "integer_datetimes": "on",
        "standard_conforming_strings": "on",
        "TimeZone": "UTC",
    }
    return ((authentication_ok() if auth is None else auth)
            + b"".join(parameter_status(k, v) for k, v in params.items())
            + message(b"K", struct.pack("!ii", 4242, 0x5EC12E7))
            + ready_for_query())


def row_description(oids: Sequence[int]) -> bytes:
    body = struct.pack("!h", len(oids))
    for i, oid in enumerate(oids):
        # name, table oid, column number, type oid, typlen, typmod, format
        body += cstr(f"c{i + 1}") + struct.pack("!ihihih", 0, 0, oid, -1, -1, 0)
    return message(b"T", body)


def data_row(values: Iterable[bytes | None | int]) -> bytes:
    """A DataRow; an int stands for a bare length word (e.g. -2) with no bytes after it."""
    body = b""
    values = list(values)
    body += struct.pack("!h", len(values))
    for value in values:
        if value is None:
            body += struct.pack("!i", -1)
        elif isinstance(value, int):
            body += struct.pack("!i", value)
        else:
            body += struct.pack("!i", len(value)) + value
    return message(b"D", body)


def command_complete(tag: str = "SELECT 1") -> bytes:
    return message(b"C", cstr(tag))


class ScriptedServer:
    """Accepts connections and plays the script; use as ``async with``.

    `startup`: bytes sent after the StartupMessage (default: a trusting
    server's reply).  `columns`: type OIDs described for every prepared
    statement.  `executes`: one reply per Execute, in order: the raw bytes
    sent before the Sync's ReadyForQuery (rows and CommandComplete, or
    whatever the test plays); once they run out, Execute gets an empty
    result, so a later query shows whether the connection still works.
    """

    def __init__(self, *, startup: bytes | None = None, columns: Sequence[int] = (TEXT_OID,),
                 executes: Sequence[bytes] = ()) -> None:
        self.startup = startup_reply() if startup is None else startup
        self.columns = list(columns)
        self.executes = list(executes)
        self.received: list[bytes] = []     # message types seen, in order
        self.closed_by_client = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._handlers: list[asyncio.Task] = []
        self.port = 0

    async def __aenter__(self) -> "ScriptedServer":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        self._handlers.append(task)
        try:
            await self._startup(reader, writer)
            await self._queries(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            # Cancelled by __aexit__: end quietly (a handler task that ends
            # cancelled makes asyncio's stream callback log a traceback).
            pass
        finally:
            self.closed_by_client.set()
            writer.close()

    async def _startup(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            packet = await reader.readexactly(length - 4)
            (code,) = struct.unpack("!i", packet[:4])
            if code in (SSL_REQUEST_CODE, GSSENC_REQUEST_CODE):
                writer.write(b"N")      # no TLS, no GSS encryption: go on in plaintext
                continue
            break
        writer.write(self.startup)
        await writer.drain()

    async def _queries(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            mtype = await reader.readexactly(1)
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            body = await reader.readexactly(length - 4)
            self.received.append(mtype)
            if mtype == b"X":
                return
            if mtype == b"P":
                writer.write(message(b"1"))
            elif mtype == b"D":
                if body[:1] == b"S":
                    writer.write(message(b"t", struct.pack("!h", 0)))
                    writer.write(row_description(self.columns) if self.columns
                                 else message(b"n"))
                else:
                    writer.write(row_description(self.columns))
            elif mtype == b"B":
                writer.write(message(b"2"))
            elif mtype == b"E":
                if self.executes:
                    writer.write(self.executes.pop(0))
                else:
                    writer.write(command_complete("SELECT 0"))
            elif mtype == b"C":
                writer.write(message(b"3"))
            elif mtype == b"S":
                writer.write(ready_for_query())
            elif mtype == b"Q":
                writer.write(command_complete("SELECT 0") + ready_for_query())
            await writer.drain()

"""A hostile or broken server cannot exhaust memory, block the loop or leak CPython internals.

Every length and count the server sends is a claim, checked against the
bytes actually present.  Two kinds of failure, by where the damage is:

* A malformed *value* inside a well-framed DataRow (a field length of -2,
  an array header claiming 2**31-1 elements, ...) fails that query with
  ProtocolError, reported at ReadyForQuery after the rest of the result is
  drained; the message stream is still in step, so the connection stays
  usable.
* A malformed *message* (a length word of 2**31-1 or below 4, an unknown
  type, a message whose fields run past its end, a bad BackendKeyData or
  ReadyForQuery) fails the operation with ProtocolError and closes the
  connection: nothing after it can be trusted to be in step.

No PostgreSQL server is needed: tests.support.scripted_server plays the
server.  Each step runs under asyncio.wait_for, so a hang fails the test.
"""
from __future__ import annotations

import asyncio
import base64
import struct
import time

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.server_info import UNKNOWN_SERVER_VERSION
from tests.support.scripted_server import (
    BYTEA_OID,
    INT4_ARRAY_OID,
    INT4_OID,
    INT4MULTIRANGE_OID,
    INT4RANGE_OID,
    RECORD_OID,
    TEXT_ARRAY_OID,
    TEXT_OID,
    ScriptedServer,
    command_complete,
    data_row,
    message,
    parameter_status,
    ready_for_query,
    startup_reply,
)

STEP_TIMEOUT = 5
INT32_MAX = 2**31 - 1
INT32_MIN = -2**31


async def connect(fake: ScriptedServer, **kwargs):
    return await asyncio.wait_for(
        mypgdriver.connect(host="127.0.0.1", port=fake.port, user="u", database="d", **kwargs),
        STEP_TIMEOUT)


async def fetch(conn, query: str = "SELECT hostile"):
    return await asyncio.wait_for(conn.fetch(query), STEP_TIMEOUT)


def array_header(elem_oid: int, dims: list[int]) -> bytes:
    header = struct.pack("!iiI", len(dims), 0, elem_oid)
    return header + b"".join(struct.pack("!ii", d, 1) for d in dims)


def element(length: int, data: bytes = b"") -> bytes:
    return struct.pack("!i", length) + data


# --- malformed values: the query fails, the connection stays usable -------------

MALFORMED_VALUES = {
    # DataRow column length words below -1 and past the end of the message
    "text column length -2": (TEXT_OID, -2),
    "text column length -2**31": (TEXT_OID, INT32_MIN),
    "bytea column length -2": (BYTEA_OID, -2),
    "bytea column length -2**31": (BYTEA_OID, INT32_MIN),
    "int4 column length -2": (INT4_OID, -2),
    "text column longer than the message": (TEXT_OID, INT32_MAX),
    # text that is not UTF-8 (a broken server, or an SQL_ASCII database)
    "text that is not UTF-8": (TEXT_OID, b"caf\xe9"),
    # arrays: headers claiming elements that are not there, bad element lengths
    "int4[] of 2**31-1 elements and no data": (
        INT4_ARRAY_OID, array_header(INT4_OID, [INT32_MAX])),
    "text[] of 2**31-1 elements and no data": (
        TEXT_ARRAY_OID, array_header(TEXT_OID, [INT32_MAX])),
    "int4[] whose dimensions multiply to 2**48": (
        INT4_ARRAY_OID, array_header(INT4_OID, [65536, 65536, 65536])),
    "int4[] of six dimensions of 2**31-1": (
        INT4_ARRAY_OID, array_header(INT4_OID, [INT32_MAX] * 6)),
    "text[] element length -2": (
        TEXT_ARRAY_OID, array_header(TEXT_OID, [1]) + element(-2)),
    "text[] element length -2**31": (
        TEXT_ARRAY_OID, array_header(TEXT_OID, [1]) + element(INT32_MIN)),
    "int4[] element length -2**31": (
        INT4_ARRAY_OID, array_header(INT4_OID, [2]) + element(4, b"\0\0\0\1")
        + element(INT32_MIN)),
    "text[] element that is not UTF-8": (
        TEXT_ARRAY_OID, array_header(TEXT_OID, [1]) + element(2, b"\xff\xfe")),
    "int4[] element longer than the value": (
        INT4_ARRAY_OID, array_header(INT4_OID, [1]) + element(1000, b"\0\0\0\1")),
    # anonymous records (binary composite format)
    "record of 2**31-1 fields and no data": (RECORD_OID, struct.pack("!i", INT32_MAX)),
    "record of -1 fields": (RECORD_OID, struct.pack("!i", -1)),
    "record field length -2": (RECORD_OID, struct.pack("!iIi", 1, TEXT_OID, -2)),
    "record field length -2**31": (RECORD_OID, struct.pack("!iIi", 1, BYTEA_OID, INT32_MIN)),
    "record of more fields than PostgreSQL allows": (
        RECORD_OID, struct.pack("!i", 2000) + struct.pack("!Ii", INT4_OID, -1) * 2000),
    # ranges and multiranges
    "int4range bound length -2": (INT4RANGE_OID, b"\x00" + element(-2)),
    "int4range bound length -2**31": (INT4RANGE_OID, b"\x00" + element(INT32_MIN)),
    "int4multirange of 2**31-1 ranges": (INT4MULTIRANGE_OID, struct.pack("!i", INT32_MAX)),
    "int4multirange range length -2**31": (
        INT4MULTIRANGE_OID, struct.pack("!i", 1) + element(INT32_MIN)),
}


@pytest.mark.parametrize("oid,value", list(MALFORMED_VALUES.values()),
                         ids=list(MALFORMED_VALUES))
async def test_malformed_value_fails_the_query_and_the_connection_stays_usable(oid, value):
    # An int value is a bare DataRow length word with nothing after it.
    rows = data_row([value]) + data_row([None]) + command_complete("SELECT 2")
    async with ScriptedServer(columns=[oid], executes=[rows]) as fake:
        conn = await connect(fake)
        try:
            with pytest.raises(exceptions.ProtocolError):
                await fetch(conn)
            assert not conn.is_closed()
            assert await fetch(conn) == []      # the next query works
        finally:
            await asyncio.wait_for(conn.close(), STEP_TIMEOUT)


async def test_invalid_utf8_error_names_the_type_and_keeps_the_cause():
    rows = data_row([b"caf\xe9"]) + command_complete()
    async with ScriptedServer(columns=[TEXT_OID], executes=[rows]) as fake:
        conn = await connect(fake)
        with pytest.raises(exceptions.ProtocolError, match="type text: invalid UTF-8") as info:
            await fetch(conn)
        assert isinstance(info.value.__cause__, UnicodeDecodeError)
        await asyncio.wait_for(conn.close(), STEP_TIMEOUT)


async def test_datarow_with_a_wrong_column_count_fails_the_query():
    rows = data_row([b"a", b"b"]) + command_complete()
    async with ScriptedServer(columns=[TEXT_OID], executes=[rows]) as fake:
        conn = await connect(fake)
        with pytest.raises(exceptions.ProtocolError, match="number of columns"):
            await fetch(conn)
        assert await fetch(conn) == []
        await asyncio.wait_for(conn.close(), STEP_TIMEOUT)


async def test_array_with_a_zero_length_dimension_is_the_empty_array():
    # As array_recv() reads it; the other dimension's 2**31-1 is never allocated.
    value = array_header(INT4_OID, [INT32_MAX, 0])
    rows = data_row([value]) + command_complete()
    async with ScriptedServer(columns=[INT4_ARRAY_OID], executes=[rows]) as fake:
        conn = await connect(fake)
        assert [tuple(r) for r in await fetch(conn)] == [([],)]
        await asyncio.wait_for(conn.close(), STEP_TIMEOUT)


# --- malformed messages: ProtocolError, and the connection is closed ----------------

MALFORMED_MESSAGES = {
    "message length 2**31-1 and no body": b"D" + struct.pack("!i", INT32_MAX),
    "message length just over 1 GiB": b"D" + struct.pack("!i", 2**30 + 1),
    "message length 3": b"C" + struct.pack("!i", 3),
    "message length -2**31": b"C" + struct.pack("!i", INT32_MIN),
    "unknown message type": message(b"~", b"whatever"),
    "CommandComplete without its terminator": message(b"C", b"SELECT 1"),
    "NotificationResponse cut short": message(b"A", b"\0\0"),
    "ParameterStatus without a value": message(b"S", b"name\0"),
    "ErrorResponse field without its terminator": message(b"E", b"SERROR"),
    "ReadyForQuery with an invalid status": message(b"Z", b"X"),
    "ReadyForQuery with no status": message(b"Z"),
}


@pytest.mark.parametrize("reply", list(MALFORMED_MESSAGES.values()), ids=list(MALFORMED_MESSAGES))
async def test_malformed_message_is_a_protocol_error_and_closes_the_connection(reply):
    async with ScriptedServer(columns=[TEXT_OID], executes=[reply]) as fake:
        conn = await connect(fake)
        with pytest.raises(exceptions.ProtocolError):
            await fetch(conn)
        assert conn.is_closed()
        await asyncio.wait_for(fake.closed_by_client.wait(), STEP_TIMEOUT)


async def test_message_cut_off_by_the_server_closing_does_not_hang():
    # A header promising 100 bytes, 10 of them, then EOF: the connection is
    # lost, not waited on forever.
    reply = b"D" + struct.pack("!i", 104) + b"x" * 10

    class ClosingServer(ScriptedServer):
        async def _queries(self, reader, writer):
            while (mtype := await reader.readexactly(1)) != b"E":
                (length,) = struct.unpack("!i", await reader.readexactly(4))
                await reader.readexactly(length - 4)
                if mtype == b"S":
                    writer.write(message(b"1") + message(b"t", b"\0\0")
                                 + message(b"n") + ready_for_query())
            writer.write(reply)
            await writer.drain()

    async with ClosingServer(columns=[]) as fake:
        conn = await connect(fake)
        with pytest.raises(exceptions.ConnectionDoesNotExistError):
            await fetch(conn)
        assert conn.is_closed()


# --- startup ----------------------------------------------------------------------

@pytest.mark.parametrize("key", [b"", b"\0\0", b"k" * 257], ids=["empty", "2 bytes", "257 bytes"])
async def test_invalid_backend_key_fails_connect_with_protocol_error(key):
    startup = (message(b"R", struct.pack("!i", 0))
               + message(b"K", struct.pack("!i", 4242) + key) + ready_for_query())
    async with ScriptedServer(startup=startup) as fake:
        with pytest.raises(exceptions.ProtocolError, match="BackendKeyData"):
            await connect(fake)


async def test_huge_message_length_during_startup_fails_connect():
    startup = message(b"R", struct.pack("!i", 0)) + b"S" + struct.pack("!i", INT32_MAX)
    async with ScriptedServer(startup=startup) as fake:
        with pytest.raises(exceptions.ProtocolError, match="invalid message length"):
            await connect(fake)


@pytest.mark.parametrize("version", [
    "garbage", "PostgreSQL", "9" * 5000, "\ufffd\ufffd", "v."])
async def test_unreadable_server_version_is_tolerated(version):
    rows = data_row([b"ok"]) + command_complete()
    async with ScriptedServer(startup=startup_reply(version), executes=[rows]) as fake:
        conn = await connect(fake)
        assert conn.get_server_version() == UNKNOWN_SERVER_VERSION
        assert conn.get_settings().server_version == version
        assert [tuple(r) for r in await fetch(conn)] == [("ok",)]
        await asyncio.wait_for(conn.close(), STEP_TIMEOUT)


# --- SCRAM --------------------------------------------------------------------------

class ScramServer(ScriptedServer):
    """Asks for SCRAM-SHA-256 and answers the client-first message with `iterations`."""

    def __init__(self, iterations: bytes) -> None:
        super().__init__()
        self.iterations = iterations

    async def _startup(self, reader, writer):
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            packet = await reader.readexactly(length - 4)
            if struct.unpack("!i", packet[:4])[0] not in (80877103, 80877104):
                break
            writer.write(b"N")
        writer.write(message(b"R", struct.pack("!i", 10) + b"SCRAM-SHA-256\0\0"))
        await writer.drain()
        assert await reader.readexactly(1) == b"p"
        (length,) = struct.unpack("!i", await reader.readexactly(4))
        body = await reader.readexactly(length - 4)
        client_first = body[body.index(b"\0") + 5:]           # mechanism, int32 length
        client_nonce = client_first.split(b"r=", 1)[1]
        server_first = (b"r=" + client_nonce + b"servernonce,s="
                        + base64.b64encode(b"salt-salt") + b",i=" + self.iterations)
        writer.write(message(b"R", struct.pack("!i", 11) + server_first))
        await writer.drain()
        await reader.read()     # whatever the client says next, until it hangs up


@pytest.mark.parametrize("iterations", [b"2147483647", b"1000001", b"9" * 5000])
async def test_absurd_scram_iteration_count_fails_connect_quickly(iterations):
    async with ScramServer(iterations) as fake:
        started = time.monotonic()
        with pytest.raises(exceptions.InterfaceError, match="SCRAM iterations"):
            await asyncio.wait_for(
                mypgdriver.connect(host="127.0.0.1", port=fake.port, user="u", database="d",
                                   password="pw", timeout=3),
                STEP_TIMEOUT)
        # No PBKDF2 of two billion rounds ran on the loop (nor anywhere else).
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("iterations", [b"0", b"-5", b"4096x", b""])
async def test_invalid_scram_iteration_count_fails_connect(iterations):
    async with ScramServer(iterations) as fake:
        with pytest.raises(exceptions.InterfaceError, match="iteration count"):
            await connect(fake, password="pw", timeout=3)


def test_parameter_status_helper_is_well_formed():
    # Guard for the helpers themselves: a fixture bug would hide real failures.
    assert parameter_status("a", "b") == b"S\0\0\0\x08a\0b\0"

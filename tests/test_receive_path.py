"""The receive path: messages split anywhere across reads parse the same (no server needed)."""
import asyncio
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mypgdriver.protocol.protocol import Protocol


def parameter_status(name: str, value: str) -> bytes:
    body = name.encode() + b"\0" + value.encode() + b"\0"
    return b"S" + struct.pack("!i", len(body) + 4) + body


STREAM = b"".join(parameter_status(f"p{i}", "v" * (i * 37 % 300)) for i in range(40))
EXPECTED = {f"p{i}": "v" * (i * 37 % 300) for i in range(40)}


async def feed(chunks) -> dict:
    proto = Protocol(asyncio.get_running_loop())
    for chunk in chunks:
        proto.data_received(bytes(chunk))
    return dict(proto.get_server_parameters())


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 64, 1000, len(STREAM)])
async def test_stream_split_into_equal_reads(step):
    chunks = [STREAM[i:i + step] for i in range(0, len(STREAM), step)]
    assert await feed(chunks) == EXPECTED


async def test_stream_split_at_every_offset_in_two_reads():
    for cut in range(0, len(STREAM) + 1, 11):
        assert await feed([STREAM[:cut], STREAM[cut:]]) == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=30))
def test_stream_split_at_random_offsets(cuts):
    # Reads of any sizes: each may complete a partial message and go on
    # with whole ones, end inside a header, or hold no message boundary.
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in zip(bounds, bounds[1:])]
    assert asyncio.run(feed(chunks)) == EXPECTED


async def test_message_larger_than_the_receive_buffer():
    big = parameter_status("big", "x" * (600 * 1024))
    chunks = [big[i:i + 70000] for i in range(0, len(big), 70000)]
    assert (await feed(chunks))["big"] == "x" * (600 * 1024)


async def test_bytearray_and_memoryview_reads_are_accepted():
    proto = Protocol(asyncio.get_running_loop())
    proto.data_received(bytearray(STREAM[:100]))
    proto.data_received(memoryview(STREAM[100:]))
    assert dict(proto.get_server_parameters()) == EXPECTED


@pytest.mark.parametrize("kind", [bytes, bytearray])
async def test_storage_grown_for_a_huge_message_is_given_back(kind):
    # A 5 MB message arriving in 64 KB reads grows the buffer's own storage
    # to hold it; once it is parsed, the storage goes back to at most 1 MiB
    # (READ_BUFFER_KEEP), also when the next message has started arriving.
    proto = Protocol(asyncio.get_running_loop())
    big = parameter_status("big", "x" * (5 * 1024 * 1024))
    small = parameter_status("after", "y")
    stream = big + small[:3]           # the next message's first bytes
    for i in range(0, len(stream), 65536):
        proto.data_received(kind(stream[i:i + 65536]))
        if i + 65536 < len(big):       # still inside the big message: it needs the room
            assert proto.rbuf._capacity() >= i
    assert dict(proto.get_server_parameters())["big"] == "x" * (5 * 1024 * 1024)
    assert 0 < proto.rbuf._capacity() <= 1024 * 1024
    proto.data_received(small[3:])
    assert dict(proto.get_server_parameters())["after"] == "y"
    assert proto.rbuf._capacity() <= 1024 * 1024


async def test_a_huge_row_does_not_pin_its_memory_on_the_connection(conn):
    value = await conn.fetchval("SELECT repeat('x', 8 * 1024 * 1024)")
    assert len(value) == 8 * 1024 * 1024
    assert conn._protocol.rbuf._capacity() <= 1024 * 1024
    assert await conn.fetchval("SELECT 1") == 1

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

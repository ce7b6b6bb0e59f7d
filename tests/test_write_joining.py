"""How pipelined messages reach the socket (protocol.pyx `_write`).

A message for an idle connection is written at once; messages written while
operations are in flight are held and joined into one write at the event
loop's next turn, and never held beyond 64 KiB.  Counting the transport's
write() calls shows the mechanism; every caller's own result shows that
joining changes nothing they can see.
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest

OUT_PENDING_LIMIT = 65536   # protocol.pyx


@pytest.fixture
def writes(conn: Any) -> Iterator[list[int]]:
    """The sizes of the connection's transport.write() calls from now on."""
    transport = conn._protocol.transport
    sizes: list[int] = []
    real_write = transport.write

    def counting_write(data: bytes) -> None:
        sizes.append(len(data))
        real_write(data)

    transport.write = counting_write
    try:
        yield sizes
    finally:
        del transport.write


async def test_idle_connection_writes_at_once_and_the_rest_is_joined(conn, writes):
    await conn.fetchval("SELECT $1::int", 0)        # prepared and cached
    writes.clear()
    results = await asyncio.gather(*(conn.fetchval("SELECT $1::int", i) for i in range(50)))
    assert results == list(range(50))
    # The first call found the connection idle and wrote its Bind/Execute/Sync
    # at once; the 49 calls made in the same turn went out as one write.
    assert len(writes) == 2
    assert writes[1] == 49 * writes[0]


async def test_held_messages_are_written_at_the_limit(conn, writes):
    text = "x" * 1000
    await conn.fetchval("SELECT $1::text || $2::int", text, 0)
    writes.clear()
    results = await asyncio.gather(
        *(conn.fetchval("SELECT $1::text || $2::int", text, i) for i in range(100)))
    assert results == [f"{text}{i}" for i in range(100)]
    one = writes[0]
    assert one > 1000
    # 99 held messages are more than 64 KiB: the batch is written as soon as
    # it reaches the limit, and the remainder at the loop's next turn.
    assert len(writes) == 3
    assert writes[1] >= OUT_PENDING_LIMIT
    assert writes[1] < OUT_PENDING_LIMIT + one
    assert writes[1] + writes[2] == 99 * one


async def test_a_sequential_caller_is_never_held(conn, writes):
    for i in range(20):
        assert await conn.fetchval("SELECT $1::int", i) == i
    # Each call found the connection idle: one write per query.  (The first
    # call's statement was not cached yet: Parse/Describe are one more write.)
    assert len(writes) in (20, 21)

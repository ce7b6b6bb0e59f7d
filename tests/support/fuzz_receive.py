"""Fuzz the receive path: run as a child process by tests/test_fuzz_receive_path.py.

    python -m tests.support.fuzz_receive MODE MAX_EXAMPLES    # from the repository root

The process limits its own address space first (RLIMIT_AS), so a huge
allocation fails as a MemoryError here instead of taking the machine's
memory; the parent's wall-clock timeout turns a hang into a failure and a
crash shows as a signal exit code.  Bytes go through Protocol.data_received
(the real entry point, with a fake transport), split at random points.

Every input must end in one of the allowed outcomes: processed, or the
operation (or the connection) failed with ProtocolError, an InterfaceError
or a PostgresError.  Anything else -- SystemError, MemoryError, IndexError,
ValueError, OverflowError from the internals -- fails the run, and
hypothesis prints the smallest input that does it.

Modes:
  bytes_at_startup     random bytes as the answer to the StartupMessage
  bytes_in_query       random bytes as the answer to Bind/Execute/Sync
  messages_in_query    well-framed messages of random type and contents
  datarows             DataRows with random values for a row of many types
  huge_claims          fixed length words near and above the 1 GiB limit
"""
from __future__ import annotations

import asyncio
import resource
import struct
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mypgdriver import exceptions
from mypgdriver.codecs.registry import CodecRegistry
from mypgdriver.protocol.protocol import Protocol
from mypgdriver.protocol.statement import StatementState, resolve_statement_codecs
from tests.support.scripted_server import (
    command_complete,
    data_row,
    message,
    ready_for_query,
    row_description,
    startup_reply,
)

ADDRESS_SPACE_LIMIT = 1024 * 1024 * 1024

ALLOWED = (exceptions.ProtocolError, exceptions.InterfaceError, exceptions.PostgresError)


def is_documented_range_error(exc: BaseException) -> bool:
    # Valid PostgreSQL dates, times and intervals that Python's datetime
    # cannot hold raise ValueError / OverflowError on purpose, as asyncpg
    # does (documented in codecs/datetime.pyx); those are not leaks.
    return type(exc) in (ValueError, OverflowError) and "out of" in str(exc) \
        and "range" in str(exc)

# Column types of the fuzzed statement: the built-in families whose binary
# decoders read lengths and counts from the wire, and a few fixed-size ones.
COLUMN_OIDS = [
    25,     # text
    17,     # bytea
    23,     # int4
    1007,   # int4[]
    1009,   # text[]
    1016,   # int8[]
    1022,   # float8[]
    2249,   # record
    2287,   # record[]
    3904,   # int4range
    4451,   # int4multirange
    1700,   # numeric
    1114,   # timestamp
    1184,   # timestamptz
    1082,   # date
    1186,   # interval
    1560,   # bit
    869,    # inet
    2950,   # uuid
    114,    # json
    3802,   # jsonb
    600,    # point
    604,    # polygon
    2970,   # txid_snapshot
]

# Backend message types the driver knows, and one it does not.
MESSAGE_TYPES = b"DCZ123tTnsIENASRKGHdcvW~"

# Length words and counts that sit on the edges.
EDGE_INT32 = [-2**31, -2, -1, 0, 1, 2, 3, 4, 8, 16, 255, 2**16, 2**30, 2**31 - 1]


class FakeTransport:
    def __init__(self) -> None:
        self.written = bytearray()
        self.aborted = False

    def write(self, data) -> None:
        self.written += data

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted

    def get_extra_info(self, name, default=None):
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


LOOP = asyncio.new_event_loop()
REGISTRY = CodecRegistry()


INPUTS_TRIED = 0


def check_outcome(proto: Protocol, *futures) -> None:
    global INPUTS_TRIED
    INPUTS_TRIED += 1
    for fut in futures:
        if fut.done() and not fut.cancelled() and fut.exception() is not None:
            exc = fut.exception()
            assert isinstance(exc, ALLOWED) or is_documented_range_error(exc), \
                f"operation failed with {exc!r}"
    lost = getattr(proto, "lost_exc", None)
    if lost is not None:
        assert isinstance(lost, ALLOWED), f"connection failed with {lost!r}"


def feed(proto: Protocol, data: bytes, cuts: list[int]) -> None:
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    for a, b in zip(bounds, bounds[1:]):
        if a < b and not proto.is_closed():
            proto.data_received(data[a:b])


def new_protocol() -> tuple[Protocol, object]:
    proto = Protocol(LOOP)
    proto.connection_made(FakeTransport())
    proto._configure_startup("u", None, {"database": "d"})
    return proto, proto.start_startup()


def protocol_in_query(oids: list[int]) -> tuple[Protocol, object]:
    """A protocol that has sent Bind/Execute/Sync for a statement with columns `oids`."""
    proto, startup = new_protocol()
    proto.data_received(startup_reply())
    assert startup.done() and startup.exception() is None
    state = StatementState("", "SELECT fuzz")
    prepared = proto.prepare(state)
    proto.data_received(message(b"1") + message(b"t", b"\0\0") + row_description(oids)
                        + ready_for_query())
    assert prepared.done() and prepared.exception() is None
    resolve_statement_codecs(state, REGISTRY)
    fut = proto.bind_execute(state, ())
    proto.data_received(message(b"2"))
    return proto, fut


cuts_strategy = st.lists(st.integers(min_value=0, max_value=10**6), max_size=4)

# A value or message body: a mix of edge-case int32s, int16s and random bytes,
# so that length words and counts land on the interesting values often.
piece = st.one_of(
    st.sampled_from(EDGE_INT32).map(lambda v: struct.pack("!i", v)),
    st.integers(min_value=-2**15, max_value=2**15 - 1).map(lambda v: struct.pack("!h", v)),
    st.binary(max_size=24),
    st.sampled_from([b"\0", b"I", b"T", b"E", b"SCRAM-SHA-256\0"]),
)
body_strategy = st.lists(piece, max_size=10).map(b"".join)


def run_bytes_at_startup(max_examples: int) -> None:
    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.binary(max_size=300), cuts_strategy)
    def fuzz(data: bytes, cuts: list[int]) -> None:
        proto, startup = new_protocol()
        feed(proto, data, cuts)
        check_outcome(proto, startup)

    fuzz()


def run_bytes_in_query(max_examples: int) -> None:
    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(COLUMN_OIDS), min_size=1, max_size=4),
           st.binary(max_size=300), cuts_strategy)
    def fuzz(oids: list[int], data: bytes, cuts: list[int]) -> None:
        proto, fut = protocol_in_query(oids)
        feed(proto, data + command_complete() + ready_for_query(), cuts)
        check_outcome(proto, fut)

    fuzz()


def run_messages_in_query(max_examples: int) -> None:
    framed = st.tuples(st.sampled_from(MESSAGE_TYPES).map(lambda b: bytes([b])),
                       body_strategy).map(lambda m: message(*m))

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(COLUMN_OIDS), min_size=1, max_size=4),
           st.lists(framed, max_size=8), cuts_strategy)
    def fuzz(oids: list[int], messages: list[bytes], cuts: list[int]) -> None:
        proto, fut = protocol_in_query(oids)
        feed(proto, b"".join(messages) + command_complete() + ready_for_query(), cuts)
        check_outcome(proto, fut)

    fuzz()


def run_datarows(max_examples: int) -> None:
    column = st.one_of(
        st.none(),
        body_strategy,
        st.sampled_from(EDGE_INT32),    # a bare length word, nothing after it
    )

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data) -> None:
        oids = data.draw(st.lists(st.sampled_from(COLUMN_OIDS), min_size=1, max_size=3))
        rows = data.draw(st.lists(st.lists(column, min_size=len(oids), max_size=len(oids)),
                                  min_size=1, max_size=4))
        proto, fut = protocol_in_query(oids)
        stream = b"".join(data_row(r) for r in rows) + command_complete() + ready_for_query()
        feed(proto, stream, [])
        check_outcome(proto, fut)
        # A bad value fails its query, not the connection (the framing held).
        assert not proto.is_closed()

    fuzz()


def run_huge_claims(max_examples: int) -> None:
    # Not random: the claims that used to allocate gigabytes, each under the
    # address-space limit.  A message of just under 1 GiB is allowed, but
    # only the bytes that arrived may be buffered.
    proto, fut = protocol_in_query([25])
    proto.data_received(b"D" + struct.pack("!i", 2**30 - 1) + b"\0\1" + b"x" * 100_000)
    for _ in range(16):
        proto.data_received(b"x" * 65536)
    assert not fut.done() and not proto.is_closed()
    check_outcome(proto, fut)
    proto, fut = protocol_in_query([25])
    proto.data_received(b"D" + struct.pack("!i", 2**31 - 1))
    assert isinstance(fut.exception(), exceptions.ProtocolError)
    check_outcome(proto, fut)


MODES = {
    "huge_claims": run_huge_claims,
    "bytes_at_startup": run_bytes_at_startup,
    "bytes_in_query": run_bytes_in_query,
    "messages_in_query": run_messages_in_query,
    "datarows": run_datarows,
}


def main() -> None:
    mode, max_examples = sys.argv[1], int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    MODES[mode](max_examples)
    print(f"{mode}: {INPUTS_TRIED} inputs, all handled")


if __name__ == "__main__":
    main()

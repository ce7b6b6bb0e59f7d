"""Type introspection: unknown type OIDs cost one catalog query per statement, then none.

Introspection queries are not reported to query loggers (by design), so they
are counted on the wire: the connection goes through `WireTap`, a small relay
in the test's event loop that decodes the frontend messages (Parse, Bind,
Execute, Query) and records the text of every statement the server executes.
A catalog query is an executed statement that reads ``pg_type``; the tests'
own statements never name it.  Counting executions rather than Parse messages
keeps the count independent of how the driver prepares the query (named,
unnamed, re-parsed in the Bind batch, cached).
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

from mypgdriver import exceptions
from mypgdriver.protocol.record import Record
from mypgdriver.types import Range

pytestmark = pytest.mark.asyncio

SCHEMA_SQL = """
DROP SCHEMA IF EXISTS itest CASCADE;
CREATE SCHEMA itest;
CREATE TYPE itest.mood AS ENUM ('happy', 'sad');
CREATE DOMAIN itest.mood_d AS itest.mood;
CREATE DOMAIN itest.posint AS int4 CHECK (VALUE > 0);
CREATE TYPE itest.posrange AS RANGE (subtype = itest.posint);
CREATE TYPE itest.inner_t AS (moods itest.mood_d[], r itest.posrange);
CREATE TYPE itest.outer_t AS (id int4, inner_v itest.inner_t, inners itest.inner_t[]);
CREATE DOMAIN itest.outer_d AS itest.outer_t;
CREATE TYPE itest.color AS ENUM ('red', 'green');
CREATE TYPE itest.pair AS (a int4, b text);
CREATE DOMAIN itest.code AS text;
CREATE TABLE itest.orders (id int4, who itest.outer_d, c itest.color);
"""

# Frontend messages without a type byte come first: SSLRequest,
# GSSENCRequest, then the StartupMessage (protocol 3.x), after which every
# message is type byte + int32 length (PostgreSQL docs, "Message Formats").
_PROTOCOL_3_MAJOR = 3


class WireTap:
    """A TCP relay to the server that records which statements clients execute."""

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writers: list[asyncio.StreamWriter] = []
        #: Texts of executed statements, per client connection (in order of connecting).
        self.executed: list[list[str]] = []
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, '127.0.0.1', 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        # Closing both ends makes every relay loop see EOF and return; a
        # cancelled handler task would be reported by asyncio as an error.
        for writer in self._writers:
            writer.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        await self._server.wait_closed()

    def catalog_queries(self, client: int = -1) -> int:
        """How many statements reading pg_type the given client has executed."""
        return sum('pg_type' in query for query in self.executed[client])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        self._writers += [writer, up_writer]
        executed: list[str] = []
        self.executed.append(executed)
        down = asyncio.ensure_future(self._pump(up_reader, writer))
        self._tasks.add(down)
        try:
            await self._relay_frontend(reader, up_writer, executed)
        except (ConnectionError, OSError):
            pass
        finally:
            up_writer.close()
            await asyncio.gather(down, return_exceptions=True)
            writer.close()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()

    async def _relay_frontend(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                              executed: list[str]) -> None:
        statements: dict[bytes, str] = {}
        portals: dict[bytes, str] = {}
        pending = b''
        started = False
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
            pending += data
            while True:
                if not started:
                    if len(pending) < 8:
                        break
                    length, code = struct.unpack('!ii', pending[:8])
                    if len(pending) < length:
                        break
                    started = code >> 16 == _PROTOCOL_3_MAJOR
                    pending = pending[length:]
                    continue
                if len(pending) < 5:
                    break
                length = struct.unpack('!i', pending[1:5])[0]
                if len(pending) < 1 + length:
                    break
                kind, body = pending[:1], pending[5:1 + length]
                pending = pending[1 + length:]
                if kind == b'P':
                    name, query = body.split(b'\0', 2)[:2]
                    statements[name] = query.decode()
                elif kind == b'B':
                    portal, statement = body.split(b'\0', 2)[:2]
                    portals[portal] = statements.get(statement, '')
                elif kind == b'E':
                    executed.append(portals.get(body.split(b'\0', 1)[0], ''))
                elif kind == b'Q':
                    executed.append(body.rstrip(b'\0').decode())


@pytest.fixture
async def schema(conn) -> None:
    """Fresh user types in schema itest (made over a connection of its own)."""
    await conn.execute(SCHEMA_SQL)


@pytest.fixture
async def tap(pg_cluster, connect_kwargs, schema) -> AsyncIterator[WireTap]:
    """A started WireTap in front of the session's server."""
    host = connect_kwargs['host']
    if str(host).startswith('/'):
        pytest.skip('the wire tap relays TCP only')
    relay = WireTap(host, connect_kwargs['port'])
    await relay.start()
    try:
        yield relay
    finally:
        await relay.close()


@pytest.fixture
async def connect_tapped(tap, connect_kwargs) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """Open connections through the tap (without TLS, so that it can read them)."""
    import mypgdriver

    opened: list = []

    async def connect(**options: Any) -> Any:
        kwargs = dict(connect_kwargs, host='127.0.0.1', port=tap.port, ssl=False, **options)
        connection = await mypgdriver.connect(**kwargs)
        opened.append(connection)
        return connection

    try:
        yield connect
    finally:
        for connection in opened:
            if not connection.is_closed():
                await connection.close()


@pytest.fixture
async def tconn(connect_tapped) -> Any:
    """One connection through the tap."""
    return await connect_tapped()


def assert_record(value: Any, names: list[str], values: tuple) -> None:
    """A Record with exactly these field names and values."""
    assert type(value) is Record
    assert list(value.keys()) == names
    assert tuple(value) == values


OUTER_ARG = (1, (['happy', None], (1, 3)), [(['sad'], None), None])


def check_outer(value: Any) -> None:
    """`value` is OUTER_ARG decoded: Records all the way down, exact values."""
    # A range over a domain has no canonical function: (1, 3) stays [1,3].
    posrange = Range(1, 3, upper_inc=True)
    assert_record(value, ['id', 'inner_v', 'inners'],
                  (1, (['happy', None], posrange), [(['sad'], None), None]))
    assert_record(value['inner_v'], ['moods', 'r'], (['happy', None], posrange))
    assert_record(value['inners'][0], ['moods', 'r'], (['sad'], None))


# --- one catalog query per statement ------------------------------------------------------


async def test_connecting_costs_no_catalog_query(tap, tconn) -> None:
    assert tap.executed and tap.catalog_queries() == 0


async def test_builtin_types_and_their_arrays_cost_no_catalog_query(tap, tconn,
                                                                   server_version) -> None:
    # Multirange types exist from PostgreSQL 14.
    multirange = "'{[1,2)}'::int4multirange" if server_version >= 140000 else "NULL"
    row = await tconn.fetchrow(
        "SELECT $1::int4[], $2::text[], '{\"(1,2)\"}'::point[], '{(1,1),(0,0)}'::box[],"
        " '{1.5}'::money[], '{a}'::tsvector[], '{pg_class}'::regclass[],"
        f" '{{\"[1,2)\"}}'::int4range[], {multirange}, '{{}}'::jsonb[], '{{}}'::uuid[],"
        " '{}'::numeric[], '{}'::timestamptz[], '{}'::inet[], '{}'::varbit[], '{}'::interval[]",
        [1, None], ['x'])
    assert row[0] == [1, None] and row[1] == ['x'] and row[7] == [Range(1, 2)]
    assert tap.catalog_queries() == 0


async def test_nested_user_types_cost_exactly_one_catalog_query(tap, tconn) -> None:
    # outer_t -> inner_t[] -> inner_t -> mood_d[] -> mood_d -> mood, and
    # inner_t -> posrange -> posint -> int4: six unknown types, one query.
    value = await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG)
    check_outer(value)
    assert tap.catalog_queries() == 1


async def test_many_unrelated_unknown_types_in_one_statement_cost_one_query(tap, tconn) -> None:
    row = await tconn.fetchrow(
        "SELECT $1::itest.color, $2::itest.pair, $3::itest.code,"
        " 'sad'::itest.mood_d, '[2,5)'::itest.posrange, ARRAY['red']::itest.color[],"
        " NULL::itest.outer_d, o FROM itest.orders o",
        'green', (1, 'x'), 'c')
    assert row is None
    row = await tconn.fetchrow(
        "SELECT $1::itest.color, $2::itest.pair, $3::itest.code, 'sad'::itest.mood_d,"
        " '[2,5)'::itest.posrange, ARRAY['red']::itest.color[], $4::itest.outer_d",
        'green', (1, 'x'), 'c', OUTER_ARG)
    assert tuple(row)[:6] == ('green', (1, 'x'), 'c', 'sad', Range(2, 5), ['red'])
    check_outer(row[6])
    # The first statement learnt every type of the second.
    assert tap.catalog_queries() == 1


async def test_table_row_type_with_nested_user_types_costs_one_query(tap, tconn, conn) -> None:
    await conn.execute("INSERT INTO itest.orders VALUES (7, $1, 'red')", OUTER_ARG)
    order = await tconn.fetchval("SELECT o FROM itest.orders o")
    assert_record(order, ['id', 'who', 'c'], (7, order['who'], 'red'))
    check_outer(order['who'])
    assert tap.catalog_queries() == 1


@pytest.mark.parametrize('depth', [1, 5, 20])
async def test_deep_type_chains_cost_one_query(conn, tap, tconn, depth: int) -> None:
    # level_k is a composite holding an array of a domain over level_{k-1}.
    statements = ["DROP SCHEMA IF EXISTS ideep CASCADE", "CREATE SCHEMA ideep",
                  "CREATE TYPE ideep.level_0 AS ENUM ('leaf')"]
    for k in range(1, depth + 1):
        statements.append(f"CREATE DOMAIN ideep.d_{k} AS ideep.level_{k - 1}")
        statements.append(f"CREATE TYPE ideep.level_{k} AS (n int4, items ideep.d_{k}[])")
    await conn.execute(';'.join(statements))
    value: Any = 'leaf'
    for k in range(1, depth + 1):
        value = (k, [value, None])
    got = await tconn.fetchval(f"SELECT $1::ideep.level_{depth}", value)
    assert got == value
    for _ in range(depth):
        assert type(got) is Record and list(got.keys()) == ['n', 'items']
        got = got['items'][0]
    assert got == 'leaf'
    assert tap.catalog_queries() == 1
    # Any level on its own is now known.
    middle = max(depth // 2, 1)
    assert await tconn.fetchval(f"SELECT NULL::ideep.level_{middle}") is None
    assert tap.catalog_queries() == 1


async def test_multirange_over_user_range_costs_one_query(tap, tconn, server_version) -> None:
    if server_version < 140000:
        pytest.skip('multiranges need PostgreSQL 14')
    value = await tconn.fetchval("SELECT $1::itest.posmultirange", [Range(1, 3), (5, 6)])
    assert value == [Range(1, 3), Range(5, 6, upper_inc=True)]
    assert tap.catalog_queries() == 1


# --- the cache --------------------------------------------------------------------------


async def test_second_execution_and_other_statements_cost_no_query(tap, tconn) -> None:
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert tap.catalog_queries() == 1
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    # Other statements over the same types, and over the types found inside them.
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t AS again", OUTER_ARG))
    assert await tconn.fetchval("SELECT $1::itest.mood_d[]", ['sad']) == ['sad']
    assert await tconn.fetchval("SELECT '[3,4]'::itest.posrange") == Range(3, 4, upper_inc=True)
    assert await tconn.fetchval("SELECT 'happy'::itest.mood") == 'happy'
    value = await tconn.fetchval("SELECT $1::itest.inner_t[]", [(['happy'], Range(1, 2))])
    assert value == [(['happy'], Range(1, 2))]
    assert tap.catalog_queries() == 1


async def test_statement_cache_off_still_costs_one_query(tap, connect_tapped) -> None:
    # Without the statement cache every call prepares again; the types stay
    # cached by the connection.
    uncached = await connect_tapped(statement_cache_size=0)
    for _ in range(3):
        check_outer(await uncached.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert tap.catalog_queries() == 1


async def test_prepared_statement_costs_one_query_then_none(tap, tconn) -> None:
    statement = await tconn.prepare("SELECT $1::itest.outer_t, $2::itest.color")
    assert tap.catalog_queries() == 1
    for _ in range(3):
        value, color = await statement.fetchrow(OUTER_ARG, 'red')
        check_outer(value)
        assert color == 'red'
    assert [t.name for t in statement.get_parameters()] == ['outer_t', 'color']
    assert tap.catalog_queries() == 1


async def test_executemany_and_cursor_cost_one_query(tap, tconn) -> None:
    await tconn.execute("CREATE TEMP TABLE tmp_orders (o itest.outer_t, c itest.color)")
    await tconn.executemany("INSERT INTO tmp_orders VALUES ($1, $2)",
                            [(OUTER_ARG, 'red'), (None, 'green')])
    assert tap.catalog_queries() == 1
    async with tconn.transaction():
        rows = [row async for row in tconn.cursor("SELECT o, c FROM tmp_orders ORDER BY c")]
    check_outer(rows[0][0])
    assert [r[1] for r in rows] == ['red', 'green'] and rows[1][0] is None
    assert tap.catalog_queries() == 1


async def test_new_connection_introspects_again(tap, connect_tapped) -> None:
    first = await connect_tapped()
    check_outer(await first.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    second = await connect_tapped()
    check_outer(await second.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    check_outer(await first.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert [tap.catalog_queries(i) for i in range(len(tap.executed))] == [1, 1]


async def test_reload_schema_state_forgets_introspected_types(tap, tconn) -> None:
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert await tconn.fetchval("SELECT 'red'::itest.color") == 'red'
    assert tap.catalog_queries() == 2
    await tconn.reload_schema_state()
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert tap.catalog_queries() == 3
    assert await tconn.fetchval("SELECT 'red'::itest.color") == 'red'
    assert tap.catalog_queries() == 4
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    assert tap.catalog_queries() == 4


async def test_reload_schema_state_picks_up_a_changed_composite(tap, tconn, conn) -> None:
    assert await tconn.fetchval("SELECT ROW(1, 'x')::itest.pair") == (1, 'x')
    await conn.execute("ALTER TYPE itest.pair ADD ATTRIBUTE c itest.color")
    await tconn.reload_schema_state()
    value = await tconn.fetchval("SELECT ROW(1, 'x', 'red')::itest.pair")
    assert_record(value, ['a', 'b', 'c'], (1, 'x', 'red'))
    assert tap.catalog_queries() == 2


async def test_introspection_is_not_reported_to_query_loggers(tap, tconn) -> None:
    logged: list = []
    tconn.add_query_logger(logged.append)
    check_outer(await tconn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    # (query loggers run as callbacks after the call)
    await asyncio.sleep(0.01)
    assert [entry.query for entry in logged] == ["SELECT $1::itest.outer_t"]
    assert tap.catalog_queries() == 1


async def test_introspection_error_leaves_connection_usable(tap, tconn, conn) -> None:
    # A type dropped between two uses: the statement fails on the server,
    # and the connection goes on.
    await conn.execute("CREATE TYPE itest.gone AS ENUM ('x')")
    assert await tconn.fetchval("SELECT 'x'::itest.gone") == 'x'
    await conn.execute("DROP TYPE itest.gone")
    with pytest.raises(exceptions.PostgresError):
        await tconn.fetchval("SELECT 'x'::itest.gone")
    assert await tconn.fetchval("SELECT 'sad'::itest.mood") == 'sad'


# --- the driver's own queries ignore the user's codecs -----------------------------------------


def _garble(value: Any) -> str:
    raise AssertionError(f'a user codec was called for {value!r}')


@pytest.mark.parametrize('typename', ['oid', 'text', '"char"', 'name'])
async def test_user_codecs_do_not_reach_introspection(conn, schema, typename) -> None:
    # The catalog query has oid, text, "char", oid[] and text[] columns and an
    # oid[] argument; a user codec on any of them must not change what the
    # driver reads (asyncpg: ignore_custom_codec).
    await conn.set_type_codec(typename, schema='pg_catalog', format='text',
                              encoder=_garble, decoder=_garble)
    value = await conn.fetchval("SELECT ROW(7, NULL)::itest.pair")
    assert_record(value, ['a', 'b'], (7, None))
    assert await conn.fetchval("SELECT 'happy'::itest.mood_d") == 'happy'
    assert await conn.fetchval("SELECT '[2,5)'::itest.posrange") == Range(2, 5)


async def test_text_codec_does_not_leak_into_composite_field_names(conn, schema) -> None:
    await conn.set_type_codec('text', schema='pg_catalog', format='text',
                              encoder=lambda s: s.lower(), decoder=lambda s: f'<{s}>')
    value = await conn.fetchval("SELECT ROW(1, 'x')::itest.pair")
    assert_record(value, ['a', 'b'], (1, '<x>'))
    # A composite with a text[] field: the names stay plain too.
    nested = await conn.fetchval("SELECT ROW(ARRAY['happy']::itest.mood_d[], NULL)::itest.inner_t")
    assert_record(nested, ['moods', 'r'], (['happy'], None))


async def test_oid_codec_does_not_break_introspection_or_type_lookup(conn, schema) -> None:
    await conn.set_type_codec('oid', schema='pg_catalog', format='text',
                              encoder=lambda v: str(int(v, 16)), decoder=lambda s: hex(int(s)))
    # Introspection (oid[] argument, oid columns) and set_type_codec's own
    # lookup by name both still work, and the user's codec still applies.
    check_outer(await conn.fetchval("SELECT $1::itest.outer_t", OUTER_ARG))
    await conn.set_type_codec('pair', schema='itest', format='tuple',
                              encoder=lambda p: p, decoder=lambda t: ('pair',) + tuple(t))
    assert await conn.fetchval("SELECT ROW(1, 'a')::itest.pair") == ('pair', 1, 'a')
    await conn.reset_type_codec('pair', schema='itest')
    assert await conn.fetchval("SELECT 26::oid") == '0x1a'
    assert await conn.fetchval("SELECT $1::oid::int", '0x1a') == 26


async def test_type_lookup_by_name_ignores_a_text_codec(conn, schema) -> None:
    # The name is sent as text: a user's text encoder must not rewrite it.
    await conn.set_type_codec('text', schema='pg_catalog', format='text',
                              encoder=lambda s: s.upper(), decoder=str)
    await conn.set_type_codec('name', schema='pg_catalog', format='text',
                              encoder=lambda s: s.upper(), decoder=str)
    await conn.set_type_codec('mood', schema='itest', format='text',
                              encoder=str, decoder=lambda s: s * 2)
    assert await conn.fetchval("SELECT 'sad'::itest.mood") == 'sadsad'


# --- the query's cost on the server ----------------------------------------------------------
# --- the query's cost on the server ----------------------------------------------------------


async def test_introspection_query_is_not_jit_compiled(conn, schema) -> None:
    # With JIT on (the server default when built with LLVM), a statement with
    # four or more unknown types makes the planner's estimate for the
    # recursive catalog query pass jit_above_cost: compiling then takes tens
    # of milliseconds for a query that runs in under one.  auto_explain with
    # client_min_messages = log shows each plan, JIT section included.
    if not await conn.fetchval("SELECT pg_jit_available()"):
        pytest.skip('the server has no JIT')
    try:
        await conn.execute("LOAD 'auto_explain'")
    except exceptions.PostgresError as e:
        pytest.skip(f'auto_explain not loadable: {e}')
    await conn.execute("SET jit = on; SET auto_explain.log_min_duration = 0;"
                       " SET auto_explain.log_analyze = on; SET client_min_messages = log")
    plans: list[str] = []
    conn.add_log_listener(lambda _conn, message: plans.append(message.message))
    await conn.fetchval("SELECT NULL::itest.outer_d, NULL::itest.color, NULL::itest.pair,"
                        " NULL::itest.code, NULL::itest.orders")
    # (log listeners run as callbacks after the call)
    await asyncio.sleep(0.01)
    catalog_plans = [p for p in plans if 'pg_type' in p]
    assert catalog_plans, plans
    assert not any('JIT:' in p for p in catalog_plans), catalog_plans

"""The pool behaves as asyncpg's where applications can tell: connection_class
overrides, the proxy given to a failing setup, releasing inside a transaction."""
from __future__ import annotations

import asyncio
import collections
from typing import Any

import pytest

from mypgdriver import exceptions
from mypgdriver.connection import Connection
from mypgdriver.pool import PoolConnectionProxy, create_pool
from tests.test_pool import app_name, backends, observer, pool_kwargs, wait_until, watchdog  # noqa: F401 (fixtures)


class NarrowConnection(Connection):
    """Overrides the query methods with fewer parameters than Connection's."""

    async def execute(self, query):
        return ('execute', await super().execute(query))

    async def fetch(self, query):
        return ('fetch', await super().fetch(query))

    async def fetchrow(self, query):
        return ('fetchrow', await super().fetchrow(query))

    async def fetchval(self, query):
        return ('fetchval', await super().fetchval(query))


class RecordingConnection(Connection):
    """Records the keyword arguments its query methods receive, and how many run at once."""

    calls: list[tuple[str, dict[str, Any]]] = []
    running: collections.Counter = collections.Counter()
    most_at_once: collections.Counter = collections.Counter()

    async def _record(self, name: str, kwargs: dict[str, Any]) -> None:
        cls = RecordingConnection
        cls.calls.append((name, kwargs))
        cls.running[id(self)] += 1
        cls.most_at_once[id(self)] = max(cls.most_at_once[id(self)], cls.running[id(self)])
        try:
            # Long enough for other calls to be lent this connection if it were shared.
            await asyncio.sleep(0.02)
        finally:
            cls.running[id(self)] -= 1

    async def execute(self, query, *args, **kwargs):
        await self._record('execute', kwargs)
        return await super().execute(query, *args, **kwargs)

    async def executemany(self, query, args, **kwargs):
        await self._record('executemany', kwargs)
        return await super().executemany(query, args, **kwargs)

    async def fetch(self, query, *args, **kwargs):
        await self._record('fetch', kwargs)
        return await super().fetch(query, *args, **kwargs)

    async def fetchrow(self, query, *args, **kwargs):
        await self._record('fetchrow', kwargs)
        return await super().fetchrow(query, *args, **kwargs)

    async def fetchval(self, query, *args, **kwargs):
        await self._record('fetchval', kwargs)
        return await super().fetchval(query, *args, **kwargs)


@pytest.fixture
def recording() -> type[RecordingConnection]:
    RecordingConnection.calls = []
    RecordingConnection.running = collections.Counter()
    RecordingConnection.most_at_once = collections.Counter()
    return RecordingConnection


# --- connection_class overrides ---


async def test_proxy_calls_overrides_with_only_the_arguments_given(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, connection_class=NarrowConnection,
                           **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert await con.execute('SELECT 1') == ('execute', 'SELECT 1')
            assert await con.fetch('SELECT 2 AS a') == ('fetch', [(2,)])
            assert await con.fetchrow('SELECT 3 AS a') == ('fetchrow', (3,))
            assert await con.fetchval('SELECT 4') == ('fetchval', 4)


class ExtendedConnection(Connection):
    """A connection_class with methods and an attribute of its own."""

    greeting = 'hello'

    async def answer(self):
        return await self.fetchval('SELECT 42')

    def doubled_pid(self):
        return 2 * self.get_server_pid()


async def test_proxy_is_an_instance_of_the_connection_class_and_calls_its_methods(pool_kwargs):
    async with create_pool(min_size=1, max_size=1, connection_class=ExtendedConnection,
                           **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert isinstance(con, ExtendedConnection)
            assert isinstance(con, Connection)
            assert not isinstance(con, NarrowConnection)
            assert await con.answer() == 42
            assert con.doubled_pid() == 2 * con.get_server_pid()
            assert con.greeting == 'hello'
            answer, doubled_pid = con.answer, con.doubled_pid
        # Still an instance after release; its handles end with the checkout.
        assert isinstance(con, ExtendedConnection)
        with pytest.raises(exceptions.InterfaceError, match='released'):
            await answer()
        with pytest.raises(exceptions.InterfaceError, match='released'):
            await con.answer()
        with pytest.raises(exceptions.InterfaceError, match='released'):
            doubled_pid()
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert isinstance(con, Connection)
            assert not isinstance(con, ExtendedConnection)


async def test_proxy_passes_keyword_arguments_exactly_as_given(pool_kwargs, recording):
    async with create_pool(min_size=1, max_size=1, connection_class=recording,
                           **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert await con.fetchval('SELECT $1::int', 7) == 7
            assert await con.fetchval('SELECT 1, 2', column=1, timeout=5) == 2
            assert await con.fetch('SELECT 1 AS a', timeout=None) == [(1,)]
            assert await con.fetchrow('SELECT 1 AS a') == (1,)
            assert await con.execute('SELECT 1', timeout=3) == 'SELECT 1'
    assert recording.calls == [
        ('fetchval', {}),
        ('fetchval', {'column': 1, 'timeout': 5}),
        ('fetch', {'timeout': None}),
        ('fetchrow', {}),
        ('execute', {'timeout': 3}),
    ]


async def test_pool_shortcuts_pass_the_same_arguments_as_asyncpg(pool_kwargs, recording):
    # asyncpg's Pool.fetchval(q) calls the connection's fetchval(q, column=0,
    # timeout=None): an override written for asyncpg's pool accepts them.
    async with create_pool(min_size=1, max_size=1, connection_class=recording,
                           **pool_kwargs) as pool:
        assert await pool.fetchval('SELECT 5') == 5
        assert await pool.fetch('SELECT 6 AS a') == [(6,)]
        assert await pool.fetchrow('SELECT 7 AS a') == (7,)
        assert await pool.execute('SELECT 8') == 'SELECT 1'
        assert await pool.executemany('SELECT $1::int', [(1,), (2,)]) is None
    assert recording.calls == [
        ('fetchval', {'column': 0, 'timeout': None}),
        ('fetch', {'timeout': None, 'record_class': None}),
        ('fetchrow', {'timeout': None, 'record_class': None}),
        ('execute', {'timeout': None}),
        ('executemany', {'timeout': None}),
    ]


async def test_pool_shortcut_to_an_override_without_those_parameters_fails_as_in_asyncpg(
        pool_kwargs):
    async with create_pool(min_size=1, max_size=1, connection_class=NarrowConnection,
                           **pool_kwargs) as pool:
        with pytest.raises(TypeError, match="unexpected keyword argument 'column'"):
            await pool.fetchval('SELECT 1')
        # The connection went back to the pool in a usable state.
        async with pool.acquire() as con:
            assert await con.fetchval('SELECT 1') == ('fetchval', 1)
        assert pool.get_stats().broken_on_release == 0


@pytest.mark.parametrize('method, query, args', [
    ('fetchval', 'SELECT $1::int', (1,)),
    ('fetch', 'SELECT $1::int', (1,)),
    ('fetchrow', 'SELECT $1::int', (1,)),
    ('execute', 'SELECT $1::int', (1,)),
    ('executemany', 'SELECT $1::int', ([(1,), (2,)],)),
])
async def test_overridden_shortcuts_run_alone_on_their_connection(
        pool_kwargs, recording, method, query, args):
    # An override may do anything (several statements, a transaction), so it
    # is never pipelined onto a connection that other shortcut calls use.
    async with create_pool(min_size=2, max_size=2, connection_class=recording,
                           **pool_kwargs) as pool:
        await asyncio.gather(*(getattr(pool, method)(query, *args) for _ in range(20)))
        assert len(recording.calls) == 20
        assert set(recording.most_at_once.values()) == {1}
        assert pool.get_stats().shortcuts_pipelined == 0
        assert pool.get_stats().acquires == 20


async def test_shortcuts_without_overrides_still_share_connections(pool_kwargs):
    class OtherOverride(Connection):
        def get_reset_query(self) -> str:
            return super().get_reset_query()

    async with create_pool(min_size=2, max_size=2, connection_class=OtherOverride,
                           **pool_kwargs) as pool:
        results = await asyncio.gather(
            *(pool.fetchval('SELECT $1::int, pg_sleep(0.01)', i) for i in range(20)))
        assert results == list(range(20))
        assert pool.get_stats().shortcuts_pipelined > 0


# --- a failing setup ---


async def test_proxy_given_to_a_failing_setup_answers_is_closed(pool_kwargs, observer, app_name):
    handed: list[PoolConnectionProxy] = []
    pids: list[int] = []

    async def setup(con: PoolConnectionProxy) -> None:
        handed.append(con)
        pids.append(await con.fetchval('SELECT pg_backend_pid()'))
        raise RuntimeError('setup failed')

    async with create_pool(min_size=1, max_size=1, setup=setup, **pool_kwargs) as pool:
        with pytest.raises(RuntimeError, match='setup failed'):
            await pool.acquire()
        proxy = handed[0]
        assert proxy.is_closed() is True
        with pytest.raises(exceptions.InterfaceError, match='setup callback failed'):
            await proxy.fetchval('SELECT 1')
        with pytest.raises(exceptions.InterfaceError, match='setup callback failed'):
            proxy.get_server_pid()
        # The server side of that connection is gone too.
        await wait_until(lambda: observer.fetchval(
            'SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $1', pids[0]))


async def test_released_proxy_still_refuses_is_closed(pool_kwargs):
    # As in asyncpg: only the proxy of a failed setup answers after the fact.
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            assert con.is_closed() is False
        with pytest.raises(exceptions.InterfaceError, match='released back to the pool'):
            con.is_closed()


# --- releasing inside a transaction ---


@pytest.fixture
async def loop_reports() -> Any:
    """What the loop's exception handler receives during the test."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    reports: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        yield reports
    finally:
        loop.set_exception_handler(previous)


async def _begin_with_sql(con: Any) -> None:
    await con.execute('BEGIN')


async def _begin_with_transaction(con: Any) -> None:
    await con.transaction().start()


@pytest.mark.parametrize('begin', [_begin_with_sql, _begin_with_transaction])
@pytest.mark.parametrize('with_reset_callback', [False, True])
async def test_release_inside_a_transaction_is_reported_and_rolled_back(
        pool_kwargs, observer, loop_reports, begin, with_reset_callback):
    resets: list[bool] = []

    async def reset(con: Connection) -> None:
        resets.append(con.is_in_transaction())

    await observer.execute('DROP TABLE IF EXISTS released_in_xact; '
                           'CREATE TABLE released_in_xact (n int)')
    kwargs: dict[str, Any] = dict(reset=reset) if with_reset_callback else {}
    try:
        async with create_pool(min_size=1, max_size=1, **kwargs, **pool_kwargs) as pool:
            async with pool.acquire() as con:
                await begin(con)
                await con.execute('INSERT INTO released_in_xact VALUES (1)')
                pid = con.get_server_pid()
            assert len(loop_reports) == 1
            report = loop_reports[0]
            assert report['message'] == ('pool: a connection was released inside an open '
                                         'transaction, which is rolled back')
            assert isinstance(report['connection'], Connection)
            assert report['connection'].get_server_pid() == pid
            # Rolled back, and the connection is reused as it is.
            assert await observer.fetchval('SELECT count(*) FROM released_in_xact') == 0
            async with pool.acquire() as con:
                assert con.get_server_pid() == pid
                assert con.is_in_transaction() is False
            assert resets == ([False, False] if with_reset_callback else [])
            assert pool.get_stats().reset_failures == 0
            assert len(loop_reports) == 1
    finally:
        await observer.execute('DROP TABLE released_in_xact')


async def test_release_after_the_transaction_ended_is_not_reported(pool_kwargs, loop_reports):
    async with create_pool(min_size=1, max_size=1, **pool_kwargs) as pool:
        async with pool.acquire() as con:
            async with con.transaction():
                await con.execute('SELECT 1')
        async with pool.acquire() as con:
            await con.execute('BEGIN; SELECT 1; COMMIT')
        async with pool.acquire() as con:
            tr = con.transaction()
            await tr.start()
            await tr.rollback()
        await pool.fetchval('SELECT 1')
    assert loop_reports == []

"""Notifications (LISTEN/NOTIFY), log messages (NoticeResponse) and termination
listeners on a live server."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_sleeping
from tests.support.waiting import apoll


async def _listening(conn) -> list[str]:
    return sorted(await conn.fetchval('SELECT array_agg(c) FROM pg_listening_channels() c')
                  or [])


class Collector:
    """A plain callback that records its calls and lets a test wait for N of them."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self._changed = asyncio.Event()

    def __call__(self, *args: Any) -> None:
        self.calls.append(args)
        self._changed.set()

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[tuple]:
        async def wait() -> None:
            while len(self.calls) < count:
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(wait(), timeout)
        return self.calls


@pytest.fixture
async def other(open_conn):
    """A second connection, to send notifications from."""
    return await open_conn()


async def _capture_loop_errors() -> tuple[list[dict], Any]:
    loop = asyncio.get_running_loop()
    errors: list[dict] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    return errors, previous


# --- notifications --------------------------------------------------------------------

async def test_notifications_arrive_in_order_while_idle(conn, other):
    got = Collector()
    await conn.add_listener('jobs', got)
    assert await _listening(conn) == ['jobs']
    # Sent from another session while `conn` runs no query at all.
    for i in range(200):
        await other.execute(f"NOTIFY jobs, 'payload {i}'")
    calls = await got.wait_for(200)
    pid = other.get_server_pid()
    assert calls == [(conn, pid, 'jobs', f'payload {i}') for i in range(200)]


async def test_notification_fields_and_own_notifications(conn):
    got = Collector()
    await conn.add_listener('self', got)
    await conn.execute("SELECT pg_notify('self', 'ünï \"x\"'), pg_notify('self', '')")
    assert await got.wait_for(2) == [
        (conn, conn.get_server_pid(), 'self', 'ünï "x"'),
        (conn, conn.get_server_pid(), 'self', '')]


async def test_notifications_in_a_transaction_arrive_at_commit(conn, other):
    got = Collector()
    await conn.add_listener('tx', got)
    await other.execute('BEGIN')
    await other.execute("NOTIFY tx, 'a'; NOTIFY tx, 'b'")
    # (a window in which nothing may arrive: not committed yet)
    await asyncio.sleep(0.1)
    assert got.calls == []
    await other.execute('COMMIT')
    assert [c[3] for c in await got.wait_for(2)] == ['a', 'b']


@pytest.mark.parametrize('channel', ['MixedCase', 'with space', 'quo"te', "apo'strophe",
                                     'ünïcødé', 'select'])
async def test_channel_names_are_quoted_exactly(conn, other, channel):
    got = Collector()
    await conn.add_listener(channel, got)
    assert await _listening(conn) == [channel]
    await other.execute('SELECT pg_notify($1, $2)', channel, 'hi')
    assert await got.wait_for(1) == [(conn, other.get_server_pid(), channel, 'hi')]
    if channel == 'MixedCase':
        # An unquoted NOTIFY folds to lower case: a different channel.
        await other.execute('NOTIFY MixedCase')
        # (a window in which nothing may arrive)
        await asyncio.sleep(0.1)
        assert len(got.calls) == 1


async def test_async_callbacks_and_several_callbacks_per_channel(conn, other):
    plain = Collector()
    seen: list[tuple] = []
    done = asyncio.Event()

    async def async_cb(connection, pid, channel, payload):
        await asyncio.sleep(0)
        seen.append((connection, pid, channel, payload))
        if len(seen) == 3:
            done.set()

    await conn.add_listener('multi', plain)
    await conn.add_listener('multi', async_cb)
    await conn.add_listener('multi', plain)        # the same callback counts once
    for i in range(3):
        await other.execute('SELECT pg_notify($1, $2)', 'multi', str(i))
    await asyncio.wait_for(done.wait(), 5)
    await plain.wait_for(3)
    expected = [(conn, other.get_server_pid(), 'multi', str(i)) for i in range(3)]
    assert seen == expected
    # (a window in which no call may come twice)
    await asyncio.sleep(0.05)
    assert plain.calls == expected


async def test_remove_listener_unlistens_after_the_last_callback(conn, other):
    first, second = Collector(), Collector()
    await conn.add_listener('ch', first)
    await conn.add_listener('ch', second)
    await conn.add_listener('other ch', first)
    await conn.remove_listener('ch', first)
    assert await _listening(conn) == ['ch', 'other ch']
    await other.execute("NOTIFY ch, '1'")
    await second.wait_for(1)
    await conn.remove_listener('ch', second)
    assert await _listening(conn) == ['other ch']
    await conn.remove_listener('ch', second)        # not registered any more: no-op
    await conn.remove_listener('never', second)
    await other.execute("NOTIFY ch, '2'; NOTIFY \"other ch\", '3'")
    await first.wait_for(1)
    # (a window in which nothing more may arrive)
    await asyncio.sleep(0.05)
    assert [c[3] for c in first.calls] == ['3']
    assert [c[3] for c in second.calls] == ['1']


async def test_notification_callback_errors_go_to_the_loop_handler(conn, other):
    errors, previous = await _capture_loop_errors()
    good = Collector()

    def bad(*args):
        raise ValueError('plain callback failed')

    async def bad_async(*args):
        raise KeyError('async callback failed')

    try:
        await conn.add_listener('err', bad)
        await conn.add_listener('err', bad_async)
        await conn.add_listener('err', good)
        await other.execute("NOTIFY err, 'x'")
        await good.wait_for(1)
        await apoll(lambda: len(errors), lambda n: n >= 2)
    finally:
        asyncio.get_running_loop().set_exception_handler(previous)
    assert sorted(type(e['exception']).__name__ for e in errors) == ['KeyError', 'ValueError']
    assert all('notification listener' in e['message'] for e in errors)
    # The connection carries on.
    assert await conn.fetchval('SELECT 1') == 1
    await other.execute("NOTIFY err, 'y'")
    await good.wait_for(2)


async def test_callbacks_may_use_the_connection(conn, other):
    results: list[int] = []
    done = asyncio.Event()

    async def cb(connection, pid, channel, payload):
        results.append(await connection.fetchval('SELECT $1::int * 2', int(payload)))
        done.set()

    await conn.add_listener('use', cb)
    await other.execute("NOTIFY use, '21'")
    await asyncio.wait_for(done.wait(), 5)
    assert results == [42]


async def test_add_listener_checks(conn):
    with pytest.raises(exceptions.InterfaceError):
        await conn.add_listener('x', 'not callable')
    assert await _listening(conn) == []
    await conn.close()
    with pytest.raises(exceptions.InterfaceError):
        await conn.add_listener('x', Collector())
    await conn.remove_listener('x', Collector())     # closed: silently nothing


# --- log messages ---------------------------------------------------------------------

async def test_log_listener_receives_notices_and_warnings(conn):
    got = Collector()
    conn.add_log_listener(got)
    await conn.execute("""DO $$ BEGIN
        RAISE NOTICE 'notice %', 1 USING DETAIL = 'the detail', HINT = 'the hint';
        RAISE WARNING 'careful' USING ERRCODE = '01007';
        RAISE INFO 'info';
    END $$""")
    calls = await got.wait_for(3)
    assert [c[0] for c in calls] == [conn, conn, conn]
    notice, warning, info = (c[1] for c in calls)
    assert type(notice) is exceptions.PostgresLogMessage
    assert isinstance(notice, exceptions.PostgresLogMessage)
    assert (notice.severity, notice.sqlstate, notice.message, notice.detail, notice.hint) == (
        'NOTICE', '00000', 'notice 1', 'the detail', 'the hint')
    assert 'PL/pgSQL function inline_code_block' in notice.context
    assert isinstance(warning, exceptions.PostgresWarning)
    assert (warning.severity, warning.sqlstate, warning.message) == ('WARNING', '01007', 'careful')
    assert (info.severity, info.message) == ('INFO', 'info')


async def test_log_listener_server_warning_and_async_callback(conn):
    seen: list = []
    done = asyncio.Event()

    async def cb(connection, message):
        seen.append((connection, message))
        done.set()

    conn.add_log_listener(cb)
    await conn.execute('ROLLBACK')   # "there is no transaction in progress"
    await asyncio.wait_for(done.wait(), 5)
    assert seen[0][0] is conn
    assert isinstance(seen[0][1], exceptions.PostgresWarning)
    assert seen[0][1].sqlstate == '25P01'
    assert seen[0][1].message == 'there is no transaction in progress'


async def test_log_message_as_dict_uses_asyncpgs_keys(conn):
    got = Collector()
    conn.add_log_listener(got)
    await conn.execute("""DO $$ BEGIN
        RAISE NOTICE 'n' USING DETAIL = 'd', HINT = 'h', TABLE = 't', CONSTRAINT = 'k';
    END $$""")
    (_, notice), = await got.wait_for(1)
    fields = notice.as_dict()
    assert list(fields)[:6] == ['severity', 'severity_en', 'sqlstate', 'message', 'detail',
                                'hint']
    assert fields['context'] == 'PL/pgSQL function inline_code_block line 2 at RAISE'
    assert 'where' not in fields
    assert (fields['table_name'], fields['constraint_name']) == ('t', 'k')
    assert notice.where == notice.context == fields['context']


async def test_remove_log_listener(conn):
    got = Collector()
    conn.add_log_listener(got)
    conn.add_log_listener(got)          # counts once
    await conn.execute("DO $$ BEGIN RAISE NOTICE 'one'; END $$")
    await got.wait_for(1)
    conn.remove_log_listener(got)
    conn.remove_log_listener(got)       # no error when absent
    await conn.execute("DO $$ BEGIN RAISE NOTICE 'two'; END $$")
    # (a window in which a removed listener must not be called)
    await asyncio.sleep(0.05)
    assert [c[1].message for c in got.calls] == ['one']


async def test_add_log_listener_on_closed_connection(conn):
    await conn.close()
    with pytest.raises(exceptions.InterfaceError):
        conn.add_log_listener(Collector())


# --- termination ----------------------------------------------------------------------

async def test_termination_listener_on_close_runs_once(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs)
    got = Collector()
    removed = Collector()
    conn.add_termination_listener(got)
    conn.add_termination_listener(removed)
    conn.remove_termination_listener(removed)
    await conn.close()
    assert await got.wait_for(1) == [(conn,)]
    await conn.close()
    # (a window in which a second close must not call the listener again)
    await asyncio.sleep(0.05)
    assert got.calls == [(conn,)]
    assert removed.calls == []


async def test_termination_listener_on_terminate_and_async(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs)
    done = asyncio.Event()
    seen = []

    async def cb(connection):
        seen.append(connection)
        done.set()

    conn.add_termination_listener(cb)
    conn.terminate()
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [conn]


async def test_termination_listener_when_the_server_ends_the_session(conn, other):
    got = Collector()
    conn.add_termination_listener(got)
    assert await other.fetchval('SELECT pg_terminate_backend($1)', conn.get_server_pid())
    assert await got.wait_for(1) == [(conn,)]
    assert conn.is_closed()
    with pytest.raises(exceptions.InterfaceError):
        conn.add_log_listener(Collector())
    with pytest.raises(exceptions.InterfaceError):
        await conn.add_listener('late', Collector())


def _recording_listener(kind: str) -> tuple[list[str], Any]:
    """A plain or async termination listener that appends 'listener' to the list returned."""
    events: list[str] = []
    if kind == 'async':
        async def listener(connection):
            events.append('listener')
    else:
        def listener(connection):
            events.append('listener')
    return events, listener


@pytest.mark.parametrize('kind', ['plain', 'async'])
@pytest.mark.parametrize('how', ['close', 'terminate'])
async def test_termination_listener_runs_on_the_first_tick_after_closing(
        connect_kwargs, how, kind):
    # asyncpg schedules termination listeners inside close()/terminate():
    # they have run by the caller's first await after it.
    conn = await mypgdriver.connect(**connect_kwargs)
    events, listener = _recording_listener(kind)
    conn.add_termination_listener(listener)
    if how == 'close':
        await conn.close()
    else:
        conn.terminate()
    events.append('returned')
    await asyncio.sleep(0)
    events.append('first tick')
    assert events == ['returned', 'listener', 'first tick']


async def test_termination_listener_runs_before_the_terminated_query_fails(conn, other):
    events: list = []
    conn.add_termination_listener(lambda connection: events.append('listener'))
    pending = asyncio.ensure_future(conn.fetchval('SELECT pg_sleep(30)'))
    pending.add_done_callback(lambda fut: events.append('query failed'))
    await wait_sleeping(other, conn.get_server_pid())
    assert await other.fetchval('SELECT pg_terminate_backend($1)', conn.get_server_pid())
    with pytest.raises(exceptions.ConnectionDoesNotExistError):
        await asyncio.wait_for(pending, 5)
    assert events == ['listener', 'query failed']


@pytest.mark.parametrize('kind', ['plain', 'async'])
async def test_termination_listener_has_run_when_the_failed_call_raises(conn, other, kind):
    # The guide promises that a listener has run before the failed call's
    # exception reaches its caller: the caller's except block sees its
    # effect.  A coroutine listener has run up to its first await by then.
    events, listener = _recording_listener(kind)
    conn.add_termination_listener(listener)

    async def terminate_soon() -> None:
        await wait_sleeping(other, conn.get_server_pid())
        assert await other.fetchval('SELECT pg_terminate_backend($1)', conn.get_server_pid())

    terminator = asyncio.ensure_future(terminate_soon())
    try:
        await conn.fetchval('SELECT pg_sleep(30)')
    except exceptions.ConnectionDoesNotExistError:
        events.append('except')
    await terminator
    assert events == ['listener', 'except']

"""mypgdriver.sync: connecting, queries of every codec family, statements, callbacks."""
from __future__ import annotations

import asyncio
import datetime
import decimal
import json
import uuid
from typing import Any

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection
from tests.support.backends import wait_backend_gone_sync


def test_connect_returns_a_sync_connection_and_with_closes_it(dsn: str,
                                                              no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn) as conn:
        assert type(conn) is mypgdriver.sync.Connection
        pid = conn.get_server_pid()
        assert conn.fetchval('SELECT pg_backend_pid()') == pid
    assert conn.is_closed()
    with mypgdriver.sync.connect(dsn) as other:
        # the server saw the backend go (Terminate is processed at once, but
        # the backend's exit is asynchronous: allow it a moment)
        wait_backend_gone_sync(other, pid)


def test_values_of_each_codec_family(sync_conn: Connection) -> None:
    assert sync_conn.fetchval('SELECT $1::int8 * 2', 21) == 42
    assert sync_conn.fetchval("SELECT $1::text || 'b'", 'a') == 'ab'
    assert sync_conn.fetchval('SELECT $1::numeric + 1', decimal.Decimal('1.25')) == decimal.Decimal('2.25')
    ts = datetime.datetime(2024, 2, 29, 12, 30, 1, 5, tzinfo=datetime.timezone.utc)
    assert sync_conn.fetchval('SELECT $1::timestamptz', ts) == ts
    assert sync_conn.fetchval("SELECT '2024-01-02'::date + 1") == datetime.date(2024, 1, 3)
    assert json.loads(sync_conn.fetchval("SELECT '{\"a\": [1, 2]}'::jsonb")) == {'a': [1, 2]}
    assert sync_conn.fetchval('SELECT $1::int4[]', [1, None, 3]) == [1, None, 3]
    rng = sync_conn.fetchval("SELECT int4range(1, 5)")
    assert (rng.lower, rng.upper, rng.lower_inc, rng.upper_inc) == (1, 5, True, False)
    u = uuid.UUID(int=7)
    assert sync_conn.fetchval('SELECT $1::uuid', u) == u
    sync_conn.execute("CREATE TYPE pg_temp.mood AS ENUM ('sad', 'ok')")
    sync_conn.execute('CREATE TEMP TABLE pair (a int, b text)')
    assert sync_conn.fetchval("SELECT 'ok'::pg_temp.mood") == 'ok'
    row = sync_conn.fetchval("SELECT ROW(1, 'x')::pair")
    assert tuple(row) == (1, 'x') and row['b'] == 'x'


def test_fetch_fetchrow_execute_and_record(sync_conn: Connection) -> None:
    rows = sync_conn.fetch('SELECT g AS n, g * 2 AS d FROM generate_series(1, $1) g', 3)
    assert [tuple(r) for r in rows] == [(1, 2), (2, 4), (3, 6)]
    assert isinstance(rows[0], mypgdriver.sync.Record) and rows[0]['d'] == 2
    row = sync_conn.fetchrow('SELECT 1 AS a, 2 AS b')
    assert row is not None and dict(row) == {'a': 1, 'b': 2}
    assert sync_conn.fetchrow('SELECT 1 WHERE false') is None
    assert sync_conn.fetchval('SELECT 1 AS a, 2 AS b', column='b') == 2
    assert sync_conn.execute('CREATE TEMP TABLE t (x int); INSERT INTO t VALUES (1), (2)') == 'INSERT 0 2'
    assert sync_conn.execute('UPDATE t SET x = x + $1', 10) == 'UPDATE 2'


class Pair(mypgdriver.Record):
    pass


def test_record_class_and_fetchmany_executemany(sync_conn: Connection) -> None:
    sync_conn.execute('CREATE TEMP TABLE m (x int PRIMARY KEY, y text)')
    sync_conn.executemany('INSERT INTO m VALUES ($1, $2)', [(1, 'a'), (2, 'b'), (3, 'c')])
    rows = sync_conn.fetchmany('UPDATE m SET y = y || $2 WHERE x = $1 RETURNING x, y',
                           ((i, '!') for i in (3, 1)), record_class=Pair)
    assert [type(r) for r in rows] == [Pair, Pair]
    assert [tuple(r) for r in rows] == [(3, 'c!'), (1, 'a!')]
    # atomic: a failing row applies nothing
    with pytest.raises(mypgdriver.sync.UniqueViolationError):
        sync_conn.executemany('INSERT INTO m VALUES ($1, $2)', [(4, 'd'), (1, 'dup')])
    assert sync_conn.fetchval('SELECT count(*) FROM m') == 3
    assert [type(r) for r in sync_conn.fetch('SELECT 1', record_class=Pair)] == [Pair]


def test_exceptions_are_the_asyncio_classes(sync_conn: Connection) -> None:
    assert mypgdriver.sync.UniqueViolationError is mypgdriver.UniqueViolationError
    assert mypgdriver.sync.PostgresError is mypgdriver.exceptions.PostgresError
    sync_conn.execute('CREATE TEMP TABLE u (x int UNIQUE)')
    sync_conn.execute('INSERT INTO u VALUES (1)')
    with pytest.raises(mypgdriver.UniqueViolationError) as info:
        sync_conn.execute('INSERT INTO u VALUES ($1)', 1)
    assert info.value.sqlstate == '23505' and info.value.constraint_name == 'u_x_key'
    with pytest.raises(mypgdriver.exceptions.UndefinedTableError):
        sync_conn.fetch('SELECT * FROM no_such_table')
    assert sync_conn.fetchval('SELECT 1') == 1


def test_prepared_statement_every_method(sync_conn: Connection) -> None:
    sync_conn.execute('CREATE TEMP TABLE p (x int, y text)')
    ins = sync_conn.prepare('INSERT INTO p VALUES ($1, $2) RETURNING x')
    assert isinstance(ins, mypgdriver.sync.PreparedStatement)
    assert ins.get_query() == 'INSERT INTO p VALUES ($1, $2) RETURNING x'
    assert ins.get_statusmsg() is None
    assert [t.name for t in ins.get_parameters()] == ['int4', 'text']
    assert [(a.name, a.type.name) for a in ins.get_attributes()] == [('x', 'int4')]
    ins.executemany([(1, 'a'), (2, 'b')])
    assert [r['x'] for r in ins.fetchmany([(3, 'c'), (4, 'd')])] == [3, 4]
    assert [tuple(r) for r in ins.fetch(5, 'e')] == [(5,)]
    assert ins.get_statusmsg() == 'INSERT 0 1'
    assert ins.fetchval(6, 'e') == 6
    sync_conn.execute('DELETE FROM p WHERE x = 6')
    sel = sync_conn.prepare('SELECT x, y FROM p WHERE x >= $1 ORDER BY x', name='sel_p',
                        record_class=Pair)
    assert sel.get_name() == 'sel_p'
    assert sync_conn.fetchval("SELECT count(*) FROM pg_prepared_statements WHERE name = 'sel_p'") == 1
    rows = sel.fetch(4)
    assert [tuple(r) for r in rows] == [(4, 'd'), (5, 'e')] and type(rows[0]) is Pair
    row = sel.fetchrow(5)
    assert row is not None and row['y'] == 'e'
    assert sel.fetchrow(99) is None
    plan = sel.explain(1)
    assert plan[0]['Plan']['Node Type'] in ('Sort', 'Seq Scan')
    analyzed = ins.explain(6, 'f', analyze=True)
    assert 'Actual Rows' in analyzed[0]['Plan']
    assert sync_conn.fetchval('SELECT count(*) FROM p WHERE x = 6') == 0   # rolled back
    with sync_conn.transaction():
        assert [tuple(r) for r in sel.cursor(3, prefetch=1)] == [(3, 'c'), (4, 'd'), (5, 'e')]


def test_timeouts_cancel_on_the_server_and_keep_the_backend(dsn: str,
                                                            no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn, command_timeout=0.2) as conn, \
            mypgdriver.sync.connect(dsn) as observer:
        pid = conn.get_server_pid()
        with pytest.raises(asyncio.TimeoutError):
            conn.fetchval('SELECT pg_sleep(5)')
        with pytest.raises(asyncio.TimeoutError):
            conn.execute('SELECT pg_sleep(5)', timeout=0.1)
        assert conn.fetchval('SELECT pg_backend_pid()', timeout=5) == pid
        assert observer.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1', pid) == 'idle'
        # the server's own statement_timeout: the server's error class
        conn.execute("SET statement_timeout = '50ms'")
        with pytest.raises(mypgdriver.exceptions.QueryCanceledError):
            conn.fetchval('SELECT pg_sleep(5)', timeout=5)
        assert conn.fetchval('SELECT 2', timeout=5) == 2


def test_listener_log_and_termination_callbacks_receive_the_sync_connection(
        dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    seen: list[Any] = []
    conn = mypgdriver.sync.connect(dsn)

    def on_note(c: Connection, pid: int, channel: str, payload: str) -> None:
        seen.append(('notify', c, channel, payload))

    def on_log(c: Connection, message: Any) -> None:
        seen.append(('log', c, message.message))

    def on_end(c: Connection) -> None:
        seen.append(('end', c))

    conn.add_listener('chan', on_note)
    conn.add_log_listener(on_log)
    conn.add_termination_listener(on_end)
    conn.execute("NOTIFY chan, 'hi'")
    conn.execute("DO $$ BEGIN RAISE NOTICE 'careful'; END $$")
    assert seen == [('notify', conn, 'chan', 'hi'), ('log', conn, 'careful')]
    conn.remove_listener('chan', on_note)
    assert conn.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0
    conn.remove_log_listener(on_log)
    conn.execute("NOTIFY chan, 'again'")
    conn.execute("DO $$ BEGIN RAISE NOTICE 'again'; END $$")
    assert len(seen) == 2
    conn.close()
    assert seen[2:] == [('end', conn)]


def test_query_logger_and_async_callbacks_refused(sync_conn: Connection) -> None:
    logged: list[str] = []
    with sync_conn.query_logger(lambda q: logged.append(q.query)):
        sync_conn.fetchval('SELECT 41 + $1', 1)
    sync_conn.fetchval('SELECT 0')
    assert logged == ['SELECT 41 + $1']

    async def coroutine_listener(*args: Any) -> None:
        pass

    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        sync_conn.add_listener('c', coroutine_listener)
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        sync_conn.add_query_logger(coroutine_listener)


def test_type_codecs_reset_and_information(sync_conn: Connection) -> None:
    sync_conn.set_type_codec('int4', schema='pg_catalog', encoder=str,
                         decoder=lambda s: f'<{s}>', format='text')
    assert sync_conn.fetchval('SELECT 7::int4') == '<7>'
    sync_conn.reset_type_codec('int4', schema='pg_catalog')
    assert sync_conn.fetchval('SELECT 7::int4') == 7
    sync_conn.set_builtin_type_codec('oid', schema='pg_catalog', codec_name='int4')
    assert sync_conn.fetchval('SELECT 5::oid') == 5
    sync_conn.reload_schema_state()
    assert sync_conn.get_server_version().major >= 10
    assert sync_conn.get_protocol_version() == (3, 0)
    assert sync_conn.get_settings().server_encoding == 'UTF8'
    assert sync_conn.get_pipeline_stats().in_flight == 0
    sync_conn.execute("SET application_name = 'changed'")
    sync_conn.execute('LISTEN x')
    assert 'UNLISTEN *' in sync_conn.get_reset_query()
    sync_conn.reset()
    assert sync_conn.fetchval('SHOW application_name') == ''
    assert sync_conn.fetchval('SELECT count(*) FROM pg_listening_channels()') == 0
    assert not sync_conn.is_in_transaction() and not sync_conn.is_closed()


def test_terminate_and_calls_after_close(dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    conn = mypgdriver.sync.connect(dsn)
    ended: list[Connection] = []
    conn.add_termination_listener(ended.append)
    conn.terminate()
    assert conn.is_closed() and ended == [conn]
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        conn.fetchval('SELECT 1')


@pytest.mark.usefixtures('default_sigint')
def test_ctrl_c_during_a_call_cancels_the_statement_and_propagates(
        dsn: str, no_event_loop: list[str]) -> None:  # noqa: F811
    import signal
    import threading
    import time
    main = threading.main_thread().ident
    assert main == threading.get_ident()
    with mypgdriver.sync.connect(dsn) as conn, mypgdriver.sync.connect(dsn) as observer:
        pid = conn.get_server_pid()
        timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            conn.fetchval('SELECT pg_sleep(10)')
        timer.join()
        assert time.monotonic() - started < 3
        assert conn.fetchval('SELECT pg_backend_pid()') == pid
        assert observer.fetchval('SELECT state FROM pg_stat_activity WHERE pid = $1',
                                 pid) == 'idle'
        with pytest.raises(KeyboardInterrupt):
            with conn.transaction():
                conn.execute('CREATE TEMP TABLE interrupted (x int)')
                threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
                conn.execute('SELECT pg_sleep(10)')
        assert not conn.is_in_transaction()
        assert conn.fetchval("SELECT to_regclass('pg_temp.interrupted') IS NULL") is True


class AppConnection(mypgdriver.sync.Connection):
    def answer(self) -> int:
        return int(self.fetchval('SELECT 42'))


def test_connection_class_and_arguments_of_connect(pg_cluster: Any, connect_kwargs: dict[str, Any],
                                                   no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(connection_class=AppConnection,
                                 server_settings={'application_name': 'sync-test'},
                                 statement_cache_size=0, **connect_kwargs) as conn:
        assert type(conn) is AppConnection and conn.answer() == 42
        assert conn.fetchval('SHOW application_name') == 'sync-test'
        conn.fetchval('SELECT $1::int', 1)
        assert conn.fetchval('SELECT count(*) FROM pg_prepared_statements') == 0
    with pytest.raises(mypgdriver.exceptions.InterfaceError):
        mypgdriver.sync.connect(pg_cluster.dsn(), connection_class=mypgdriver.Connection)  # type: ignore[arg-type]

"""The messages a newcomer meets say what went wrong and what to do about it.

A refused connection asks whether the server is running there (as libpq
does), a syntax error at ``%s`` or ``IN $1`` points at ``$n`` and
``= ANY($1)``, a timeout says what timed out, after how long and what became
of the statement, and a call refused because another task owns the
connection suggests a pool.  The exception classes stay what they were.
"""
from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

import pytest

import mypgdriver
from mypgdriver import exceptions
from mypgdriver.core.deadlines import NO_DEADLINE
from mypgdriver.exceptions import _hints
from tests.support.waiting import apoll


async def _assert_usable(conn: Any) -> None:
    assert await conn.fetchval("SELECT 1") == 1


# --- refused connections ---------------------------------------------------------------

async def test_refused_connection_asks_whether_the_server_runs_there(refused_port):
    with pytest.raises(ConnectionRefusedError) as info:
        await mypgdriver.connect(host="127.0.0.1", port=refused_port, user="postgres",
                                 password="x", timeout=5)
    assert (f"Connection refused: is the server running on 127.0.0.1:{refused_port} "
            f"and accepting TCP/IP connections?") in str(info.value)
    assert info.value.errno is not None


async def test_missing_unix_socket_asks_whether_the_server_runs_locally(tmp_path):
    path = tmp_path / ".s.PGSQL.5999"
    with pytest.raises(FileNotFoundError) as info:
        await mypgdriver.connect(host=str(tmp_path), port=5999, user="postgres",
                                 password="x", timeout=5)
    assert (f'is the server running locally and accepting connections on socket '
            f'"{path}"?') in str(info.value)


async def test_every_refused_host_is_named_with_the_question(refused_port):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other_port = other.getsockname()[1]
        dsn = f"postgresql://postgres:x@127.0.0.1:{refused_port},127.0.0.1:{other_port}/postgres"
        with pytest.raises(OSError) as info:
            await mypgdriver.connect(dsn, timeout=5)
    text = str(info.value)
    assert text.startswith("cannot connect to any host:")
    for port in (refused_port, other_port):
        assert (f"is the server running on 127.0.0.1:{port} and accepting TCP/IP "
                f"connections?") in text, text


async def test_connect_timeout_names_the_host_and_the_time(silent_port):
    with pytest.raises(asyncio.TimeoutError) as info:
        await mypgdriver.connect(host="127.0.0.1", port=silent_port, user="postgres",
                                 password="x", timeout=0.5)
    assert f"connection to 127.0.0.1:{silent_port} timed out after 0.5 s" in str(info.value)


# --- placeholders of other drivers --------------------------------------------------------

@pytest.mark.parametrize("query", [
    "SELECT relname FROM pg_class WHERE relname = %s",
    "SELECT relname FROM pg_class WHERE relname = %(name)s",
])
async def test_syntax_error_at_a_percent_placeholder_hints_at_numbered_ones(conn, query):
    with pytest.raises(exceptions.PostgresSyntaxError) as info:
        await conn.fetch(query, "pg_class")
    assert "write $1, $2, ... instead of %s or %(name)s" in info.value.hint
    assert "HINT:  mypgdriver sends the query to PostgreSQL as it is" in str(info.value)
    await _assert_usable(conn)


async def test_syntax_error_at_a_percent_placeholder_of_a_simple_query(conn):
    with pytest.raises(exceptions.PostgresSyntaxError) as info:
        await conn.execute("CREATE TEMP TABLE t AS SELECT 1 AS a WHERE 1 = %s")
    assert "write $1, $2, ... instead of %s or %(name)s" in info.value.hint


async def test_in_followed_by_a_parameter_hints_at_any(conn):
    with pytest.raises(exceptions.PostgresSyntaxError) as info:
        await conn.fetch("SELECT 1 WHERE 1 IN $1", [1, 2])
    assert "use = ANY($1) with a list" in info.value.hint
    await _assert_usable(conn)


async def test_a_list_for_in_one_parameter_hints_at_any(conn):
    with pytest.raises(exceptions.DataError) as info:
        await conn.fetch("SELECT 1 WHERE 1 IN ($1)", [1, 2])
    assert "use = ANY($1) with a list" in info.value.hint
    assert "HINT:  IN compares with a parenthesised list" in str(info.value)
    # The hint's advice works.
    assert await conn.fetchval("SELECT count(*) FROM generate_series(1, 5) AS g "
                               "WHERE g = ANY($1)", [1, 2]) == 2


async def test_other_syntax_errors_get_no_hint(conn):
    with pytest.raises(exceptions.PostgresSyntaxError) as info:
        await conn.fetch("SELECT 'a %s' FROM WHERE")
    assert info.value.hint is None


def test_hint_only_where_the_error_points() -> None:
    query = "SELECT '%s', x FROM t WHERE a = %s"
    assert _hints.syntax_error_hint(query, str(query.rindex("%") + 1)) is not None
    assert _hints.syntax_error_hint(query, str(query.index("FROM") + 1)) is None
    assert _hints.syntax_error_hint("SELECT $1 IN $2", "14") is not None
    assert _hints.syntax_error_hint("SELECT $1 IN $2", "8") is None
    assert _hints.syntax_error_hint(query, None) is None
    assert _hints.in_list_hint("SELECT 1 WHERE x IN ( $2 )", (1, (2, 3))) is not None
    assert _hints.in_list_hint("SELECT 1 WHERE x IN ($1)", (1,)) is None


# --- timeouts ----------------------------------------------------------------------------

async def test_query_timeout_says_what_and_how_long(conn):
    query = "SELECT pg_sleep($1)"
    await conn.fetch(query, 0)      # cached: the timed call gets its whole timeout
    with pytest.raises(asyncio.TimeoutError) as info:
        await conn.fetch(query, 5, timeout=0.5)
    assert type(info.value) is asyncio.TimeoutError
    assert str(info.value) == ("query timed out after 0.5 s; the statement was cancelled "
                               "on the server")
    await _assert_usable(conn)


async def test_command_timeout_is_the_time_in_the_message(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs, command_timeout=0.3)
    try:
        await conn.execute("SELECT pg_sleep($1)", 0)
        with pytest.raises(asyncio.TimeoutError) as info:
            await conn.execute("SELECT pg_sleep($1)", 5)
        assert "query timed out after 0.3 s" in str(info.value)
    finally:
        await conn.close()


async def test_prepared_statement_timeout_message(conn):
    stmt = await conn.prepare("SELECT pg_sleep($1)")
    with pytest.raises(asyncio.TimeoutError) as info:
        await stmt.fetchval(5, timeout=0.3)
    assert "query timed out after 0.3 s; the statement was cancelled" in str(info.value)
    await _assert_usable(conn)


async def test_expired_timeout_says_nothing_was_sent(conn):
    await conn.fetchval("SELECT 2")
    with pytest.raises(asyncio.TimeoutError) as info:
        await conn.fetchval("SELECT 2", timeout=0)
    assert "query timed out before it was sent" in str(info.value)
    await _assert_usable(conn)


async def test_cursor_fetch_timeout_message(conn):
    async with conn.transaction():
        cur = await conn.cursor("SELECT pg_sleep(5)")
        with pytest.raises(asyncio.TimeoutError) as info:
            await cur.fetch(1, timeout=0.3)
    assert "cursor fetch timed out after 0.3 s" in str(info.value)
    await _assert_usable(conn)


async def test_copy_timeout_message(conn, tmp_path):
    with pytest.raises(asyncio.TimeoutError) as info:
        await conn.copy_from_query("SELECT pg_sleep(5)", output=str(tmp_path / "out"),
                                   timeout=0.5)
    # The COPY's own time: what was left of the call's 0.5 s once the query
    # was built (see docs/guide/timeouts.rst).
    assert re.search(r"^COPY timed out after 0\.\d+ s; the statement was cancelled on the "
                     r"server$", str(info.value)), str(info.value)
    await _assert_usable(conn)


async def test_waiting_for_a_turn_times_out_with_its_own_message(connect_kwargs):
    conn = await mypgdriver.connect(**connect_kwargs, max_pipeline=1)
    try:
        slow = asyncio.ensure_future(conn.fetchval("SELECT 1 FROM pg_sleep(1)"))
        # until `slow` is sent: it holds the only turn
        await apoll(lambda: conn.get_pipeline_stats().in_flight, lambda n: n == 1)
        with pytest.raises(asyncio.TimeoutError) as info:
            await conn.fetchval("SELECT 2", timeout=0.3)
        assert "it was still waiting for its turn behind the calls made before it" \
            in str(info.value)
        assert await slow == 1
        await _assert_usable(conn)
    finally:
        await conn.close()


# --- one connection, several tasks ----------------------------------------------------------

async def test_foreign_task_inside_a_transaction_is_told_to_use_a_pool(conn):
    opened, done = asyncio.Event(), asyncio.Event()

    async def owner() -> None:
        async with conn.transaction():
            opened.set()
            await done.wait()

    task = asyncio.ensure_future(owner())
    await opened.wait()
    try:
        with pytest.raises(exceptions.InterfaceError) as info:
            await conn.fetchval("SELECT 1")
        assert ("use a pool (mypgdriver.create_pool) to give each task its own connection "
                "and run them concurrently") in str(info.value)
    finally:
        done.set()
        await task
    await _assert_usable(conn)


async def test_operation_beside_an_exclusive_one_is_told_to_use_a_pool(conn):
    # The Session queues callers, so only a caller bypassing it meets the
    # protocol's own refusal.
    session = conn._session
    await session.admission.hold(NO_DEADLINE)
    try:
        with pytest.raises(exceptions.InterfaceError) as info:
            conn._protocol.simple_query("SELECT 1")
        assert ("another operation is in progress; use a pool (mypgdriver.create_pool) "
                "to run operations concurrently") in str(info.value)
    finally:
        session.admission.release()
    await _assert_usable(conn)

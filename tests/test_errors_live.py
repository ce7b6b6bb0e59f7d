"""Errors from a live server: exception classes and attributes, the connection
surviving every error, and client-side errors (argument encoding, argument
count, concurrent use, closed connections)."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.backends import wait_sleeping
from tests.support.waiting import apoll

SCHEMA = "mypg_errors_live"


@pytest.fixture
async def table(conn) -> AsyncIterator[str]:
    """A real (not temporary) table, so that schema_name is predictable."""
    await conn.execute(
        f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}; "
        f"CREATE TABLE {SCHEMA}.items ("
        "  id int CONSTRAINT items_pkey PRIMARY KEY,"
        "  label text NOT NULL,"
        "  qty int CONSTRAINT qty_positive CHECK (qty > 0));"
        f"INSERT INTO {SCHEMA}.items VALUES (1, 'one', 1)")
    try:
        yield f"{SCHEMA}.items"
    finally:
        if conn.is_in_transaction():
            await conn.execute("ROLLBACK")
        await conn.execute(f"DROP SCHEMA {SCHEMA} CASCADE")


async def _assert_usable(conn) -> None:
    assert conn.is_closed() is False
    assert await conn.fetchval("SELECT $1::int + 1", 41) == 42
    assert await conn.execute("SELECT 1; SELECT 2") == "SELECT 1"


# --- server errors and their attributes ---------------------------------------------------

@pytest.mark.parametrize("with_args", [True, False], ids=["extended", "simple"])
async def test_unique_violation_attributes(conn, table, with_args):
    with pytest.raises(exceptions.UniqueViolationError) as info:
        if with_args:
            await conn.execute(f"INSERT INTO {table} VALUES ($1, $2, $3)", 1, "dup", 5)
        else:
            await conn.execute(f"INSERT INTO {table} VALUES (1, 'dup', 5)")
    err = info.value
    assert type(err) is exceptions.UniqueViolationError
    assert isinstance(err, exceptions.IntegrityConstraintViolationError)
    assert isinstance(err, exceptions.PostgresError)
    assert err.sqlstate == "23505"
    assert err.severity == "ERROR"
    assert err.message == 'duplicate key value violates unique constraint "items_pkey"'
    assert err.detail == "Key (id)=(1) already exists."
    assert err.hint is None
    assert err.constraint_name == "items_pkey"
    assert err.table_name == "items"
    assert err.schema_name == SCHEMA
    assert err.column_name is None
    assert str(err) == (
        'duplicate key value violates unique constraint "items_pkey"\n'
        "DETAIL:  Key (id)=(1) already exists.")
    await _assert_usable(conn)


async def test_not_null_violation_names_the_column(conn, table):
    with pytest.raises(exceptions.NotNullViolationError) as info:
        await conn.execute(f"INSERT INTO {table} (id, label) VALUES ($1, $2)", 2, None)
    err = info.value
    assert err.sqlstate == "23502"
    assert err.column_name == "label"
    assert err.table_name == "items"
    assert err.schema_name == SCHEMA
    assert err.message == (
        'null value in column "label" of relation "items" violates not-null constraint')
    assert err.detail == "Failing row contains (2, null, null)."
    await _assert_usable(conn)


async def test_check_violation_names_the_constraint(conn, table):
    with pytest.raises(exceptions.CheckViolationError) as info:
        await conn.execute(f"UPDATE {table} SET qty = $1 WHERE id = 1", -3)
    assert info.value.sqlstate == "23514"
    assert info.value.constraint_name == "qty_positive"
    assert info.value.table_name == "items"
    await _assert_usable(conn)


async def test_domain_check_violation_names_the_data_type(conn):
    await conn.execute("CREATE DOMAIN pg_temp.mypg_posint AS int CHECK (VALUE > 0)")
    with pytest.raises(exceptions.CheckViolationError) as info:
        await conn.fetchval("SELECT $1::int::pg_temp.mypg_posint", -1)
    assert info.value.data_type_name == "mypg_posint"
    assert info.value.constraint_name == "mypg_posint_check"
    assert info.value.schema_name.startswith("pg_temp_")
    await _assert_usable(conn)


@pytest.mark.parametrize("with_args", [True, False], ids=["extended", "simple"])
async def test_syntax_error_position(conn, with_args):
    query = "SELECT 1 + FROM generate_series(1, 2)"
    with pytest.raises(exceptions.PostgresSyntaxError) as info:
        if with_args:
            await conn.fetch(query + " WHERE $1::int > 0", 1)
        else:
            await conn.execute(query)
    err = info.value
    assert err.sqlstate == "42601"
    assert err.message == 'syntax error at or near "FROM"'
    # Position is 1-based, in characters, as a string (as asyncpg gives it).
    assert err.position == str(query.index("FROM") + 1)
    await _assert_usable(conn)


async def test_undefined_table_position_counts_characters_not_bytes(conn):
    query = "SELECT 'ééé', x FROM mypg_no_such_table"
    with pytest.raises(exceptions.UndefinedTableError) as info:
        await conn.fetch(query)
    assert info.value.message == 'relation "mypg_no_such_table" does not exist'
    assert info.value.position == str(query.index("mypg_no_such_table") + 1)
    await _assert_usable(conn)


async def test_plpgsql_raise_with_detail_and_hint(conn):
    with pytest.raises(exceptions.RaiseError) as info:
        await conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'boom %', 42 "
            "USING DETAIL = 'the détail', HINT = 'the hint'; END $$")
    err = info.value
    assert isinstance(err, exceptions.PLPGSQLError)
    assert err.sqlstate == "P0001"
    assert err.message == "boom 42"
    assert err.detail == "the détail"
    assert err.hint == "the hint"
    assert err.where == "PL/pgSQL function inline_code_block line 1 at RAISE"
    assert str(err) == "boom 42\nDETAIL:  the détail\nHINT:  the hint"
    await _assert_usable(conn)


async def test_plpgsql_raise_with_chosen_sqlstate(conn):
    with pytest.raises(exceptions.DivisionByZeroError) as info:
        await conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'custom' USING ERRCODE = 'division_by_zero'; END $$")
    assert info.value.sqlstate == "22012"
    assert info.value.message == "custom"
    await _assert_usable(conn)


async def test_unlisted_sqlstate_keeps_its_code(conn):
    with pytest.raises(exceptions.PostgresError) as info:
        await conn.execute("DO $$ BEGIN RAISE EXCEPTION 'odd' USING ERRCODE = '23Q99'; END $$")
    assert info.value.sqlstate == "23Q99"
    assert info.value.message == "odd"
    await _assert_usable(conn)


async def test_error_in_the_middle_of_a_result_set(conn):
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.fetch("SELECT 1 / (g - 3000) FROM generate_series(1, 5000) g")
    await _assert_usable(conn)


async def test_error_from_a_cached_statement_then_success(conn):
    query = "SELECT 10 / $1::int"
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.fetchval(query, 0)
    assert await conn.fetchval(query, 2) == 5
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.fetchval(query, 0)
    assert await conn.fetchval(query, 5) == 2


async def test_error_in_second_statement_of_simple_query(conn):
    with pytest.raises(exceptions.UndefinedColumnError):
        await conn.execute("SELECT 1; SELECT mypg_no_such_column; SELECT 3")
    await _assert_usable(conn)


async def test_every_error_leaves_connection_usable(conn):
    failing: list[tuple[str, tuple[Any, ...], type]] = [
        ("SELEC 1", (), exceptions.PostgresSyntaxError),
        ("SELECT $1::int / 0", (1,), exceptions.DivisionByZeroError),
        ("SELECT 'x'::int", (), exceptions.InvalidTextRepresentationError),
        ("SELECT $1::text::int", ("x",), exceptions.InvalidTextRepresentationError),
        ("SELECT * FROM mypg_no_such_table WHERE 1 = $1", (1,), exceptions.UndefinedTableError),
        ("SELECT mypg_no_such_function()", (), exceptions.UndefinedFunctionError),
    ]
    for query, args, cls in failing:
        for _ in range(2):  # the second time may use a cached statement
            with pytest.raises(cls):
                await conn.fetch(query, *args)
            await _assert_usable(conn)


# --- failed transactions -------------------------------------------------------------

async def test_failed_transaction_then_rollback(conn):
    assert await conn.execute("BEGIN") == "BEGIN"
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.fetchval("SELECT 1 / $1::int", 0)
    assert conn.is_in_transaction() is True
    for attempt in (lambda: conn.fetchval("SELECT 1"),
                    lambda: conn.fetchval("SELECT $1::int", 1),
                    lambda: conn.execute("SELECT 1")):
        with pytest.raises(exceptions.InFailedSQLTransactionError) as info:
            await attempt()
        assert info.value.sqlstate == "25P02"
        assert conn.is_in_transaction() is True
    assert await conn.execute("ROLLBACK") == "ROLLBACK"
    assert conn.is_in_transaction() is False
    await _assert_usable(conn)


async def test_failed_transaction_in_one_simple_query(conn, table):
    with pytest.raises(exceptions.UniqueViolationError):
        await conn.execute(f"BEGIN; INSERT INTO {table} VALUES (1, 'dup', 1); ")
    assert conn.is_in_transaction() is True
    with pytest.raises(exceptions.InFailedSQLTransactionError):
        await conn.execute(f"INSERT INTO {table} VALUES (2, 'two', 1)")
    assert await conn.execute("ROLLBACK") == "ROLLBACK"
    assert conn.is_in_transaction() is False
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 1
    await _assert_usable(conn)


async def test_commit_of_failed_transaction_reports_rollback(conn):
    await conn.execute("BEGIN")
    with pytest.raises(exceptions.DivisionByZeroError):
        await conn.execute("SELECT 1 / 0")
    assert await conn.execute("COMMIT") == "ROLLBACK"
    assert conn.is_in_transaction() is False
    await _assert_usable(conn)


# --- argument encoding errors -------------------------------------------------------------

async def test_int4_overflow_raises_data_error_naming_argument(conn):
    with pytest.raises(exceptions.DataError) as info:
        await conn.fetchval("SELECT $1::int4", 2**31)
    assert type(info.value) is exceptions.DataError
    assert str(info.value).startswith("invalid input for query argument $1: 2147483648 (")
    await _assert_usable(conn)


async def test_encoding_error_names_the_right_argument(conn):
    with pytest.raises(exceptions.DataError) as info:
        await conn.fetchval("SELECT $1::int4 + $2::int4 + $3::int4", 1, 2, -2**31 - 1)
    assert str(info.value).startswith("invalid input for query argument $3: -2147483649 (")
    await _assert_usable(conn)


async def test_encoding_error_inside_transaction_does_not_abort_it(conn, table):
    await conn.execute("BEGIN")
    await conn.execute(f"INSERT INTO {table} VALUES ($1, $2, $3)", 2, "two", 1)
    with pytest.raises(exceptions.DataError):
        await conn.execute(f"INSERT INTO {table} VALUES ($1, $2, $3)", 3, "three", 2**40)
    # Nothing reached the server, so the transaction is still healthy.
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 2
    assert await conn.execute("COMMIT") == "COMMIT"
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 2


# --- argument count -----------------------------------------------------------------

@pytest.mark.parametrize("query,args,message", [
    ("SELECT $1::int, $2::int", (1,),
     "the server expects 2 arguments for this query, 1 was passed"),
    ("SELECT $1::int", (1, 2),
     "the server expects 1 argument for this query, 2 were passed"),
    ("SELECT $1::int", (),
     "the server expects 1 argument for this query, 0 were passed"),
    ("SELECT 1", (5,),
     "the server expects 0 arguments for this query, 1 was passed"),
])
async def test_wrong_argument_count_raises_interface_error(conn, query, args, message):
    with pytest.raises(exceptions.InterfaceError) as info:
        await conn.fetch(query, *args)
    assert str(info.value) == (
        f"{message}\nHINT:  Check the query against the arguments passed.")
    assert info.value.args == (message,)
    assert info.value.hint == "Check the query against the arguments passed."
    assert info.value.detail is None
    await _assert_usable(conn)


async def test_wrong_argument_count_of_a_prepared_statement_has_the_hint(conn):
    stmt = await conn.prepare("SELECT $1::int")
    with pytest.raises(exceptions.InterfaceError) as info:
        await stmt.fetchval(1, 2)
    assert info.value.hint == "Check the query against the arguments passed."
    with pytest.raises(exceptions.InterfaceError) as info:
        await conn.executemany("SELECT $1::int", [(1,), (2, 3)])
    assert info.value.args == (
        "the server expects 1 argument for this query, 2 were passed (row 1)",)
    assert info.value.hint == "Check the query against the arguments passed."
    await _assert_usable(conn)


# --- the protocol's parameter limit -------------------------------------------------

def _int_array_query(count: int) -> str:
    # An array, not a select list: select lists stop at 1,664 entries.
    return ("SELECT cardinality(ARRAY["
            + ",".join(f"${i}::int4" for i in range(1, count + 1)) + "])")


async def test_more_than_65535_arguments_are_refused_before_anything_is_sent(conn):
    query = _int_array_query(65536)
    written = []
    transport = conn._protocol.transport
    original = transport.write
    transport.write = lambda data: (written.append(bytes(data)), original(data))[1]
    try:
        with pytest.raises(exceptions.InterfaceError) as info:
            await conn.fetchval(query, *range(65536))
    finally:
        del transport.write
    assert written == []
    assert info.value.args == (
        "65536 query arguments were passed, but the protocol limit is 65,535 "
        "parameters per statement",)
    assert info.value.hint.startswith("Split the statement")
    await _assert_usable(conn)
    # Prepared (the server's count wraps around to 0): the same error.
    stmt = await conn.prepare(query)
    with pytest.raises(exceptions.InterfaceError, match=r"protocol limit is 65,535"):
        await stmt.fetchval(*range(65536))
    await _assert_usable(conn)


async def test_65535_arguments_are_the_most_that_work(conn):
    assert await conn.fetchval(_int_array_query(65535), *range(65535)) == 65535
    stmt = await conn.prepare(_int_array_query(65535))
    assert len(stmt.get_parameters()) == 65535
    await _assert_usable(conn)


# --- concurrent use -------------------------------------------------------------------

async def test_concurrent_calls_are_pipelined_not_refused(conn, monitor):
    # asyncpg raises "another operation is in progress" here; mypgdriver
    # queues the later calls behind the running one.
    slow = asyncio.ensure_future(conn.fetchval("SELECT 7 FROM pg_sleep(0.3)"))
    await wait_sleeping(monitor, conn.get_server_pid())
    results = await asyncio.gather(conn.fetchval("SELECT 1"),
                                   conn.fetchval("SELECT $1::int", 2),
                                   conn.execute("SELECT 1"),
                                   conn.fetch("SELECT 3 AS x"))
    assert results[0] == 1
    assert results[1] == 2
    assert results[2] == "SELECT 1"
    assert [tuple(r) for r in results[3]] == [(3,)]
    assert slow.done() and slow.result() == 7
    await _assert_usable(conn)


async def test_gathered_queries_each_get_their_own_result(conn):
    results = await asyncio.gather(conn.fetchval("SELECT 1"), conn.fetchval("SELECT 2"),
                                   conn.fetchval("SELECT 1/0"), conn.fetchval("SELECT 4"),
                                   return_exceptions=True)
    assert results[0] == 1
    assert results[1] == 2
    assert type(results[2]) is exceptions.DivisionByZeroError
    assert results[3] == 4
    await _assert_usable(conn)


# --- closed connections ------------------------------------------------------------------

CLOSED_OPERATIONS = [
    ("fetch", lambda c: c.fetch("SELECT 1")),
    ("fetch_args", lambda c: c.fetch("SELECT $1::int", 1)),
    ("fetchrow", lambda c: c.fetchrow("SELECT 1")),
    ("fetchval", lambda c: c.fetchval("SELECT 1")),
    ("execute", lambda c: c.execute("SELECT 1")),
    ("execute_args", lambda c: c.execute("SELECT $1::int", 1)),
]


@pytest.mark.parametrize("name,operation", CLOSED_OPERATIONS, ids=[n for n, _ in CLOSED_OPERATIONS])
async def test_operation_after_close_raises_interface_error(connect_kwargs, name, operation):
    conn = await mypgdriver.connect(**connect_kwargs)
    await conn.fetchval("SELECT $1::int", 1)  # a cached statement exists
    await conn.close()
    with pytest.raises(exceptions.InterfaceError, match="connection is closed"):
        await operation(conn)


@pytest.mark.parametrize("name,operation", CLOSED_OPERATIONS, ids=[n for n, _ in CLOSED_OPERATIONS])
async def test_operation_after_terminate_raises_interface_error(connect_kwargs, name, operation):
    conn = await mypgdriver.connect(**connect_kwargs)
    conn.terminate()
    with pytest.raises(exceptions.InterfaceError, match="connection is closed"):
        await operation(conn)


async def test_operation_after_server_ended_session(connect_kwargs, conn):
    victim = await mypgdriver.connect(**connect_kwargs)
    assert await conn.fetchval("SELECT pg_terminate_backend($1)", victim.get_server_pid()) is True
    assert await apoll(victim.is_closed, bool) is True
    with pytest.raises((exceptions.InterfaceError, exceptions.ConnectionDoesNotExistError),
                       match="connection is closed"):
        await victim.fetchval("SELECT 1")


async def test_server_ending_session_during_query_raises_a_connection_error(
        connect_kwargs, conn):
    # The server says why it ends the session (57P01 admin_shutdown) before
    # closing; as in asyncpg, the call raises ConnectionDoesNotExistError (so
    # that handlers of connection errors see it) with the server's error as
    # its cause, and the connection is closed afterwards.
    victim = await mypgdriver.connect(**connect_kwargs)
    running = asyncio.ensure_future(victim.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(conn, victim.get_server_pid())
    await conn.fetchval("SELECT pg_terminate_backend($1)", victim.get_server_pid())
    try:
        with pytest.raises(exceptions.ConnectionDoesNotExistError,
                           match="^connection was closed in the middle of operation: "
                                 "terminating connection due to administrator command$") as info:
            await asyncio.wait_for(running, 3)
        assert type(info.value) is exceptions.ConnectionDoesNotExistError
        assert type(info.value.__cause__) is exceptions.AdminShutdownError
        assert info.value.__cause__.sqlstate == "57P01"
        assert isinstance(info.value, exceptions.PostgresConnectionError)
        assert victim.is_closed()
        with pytest.raises((exceptions.InterfaceError, exceptions.ConnectionDoesNotExistError)):
            await victim.fetchval("SELECT 1")
    finally:
        victim.terminate()


async def test_server_ending_session_during_query_closes_connection(connect_kwargs, conn):
    victim = await mypgdriver.connect(**connect_kwargs)
    running = asyncio.ensure_future(victim.fetchval("SELECT pg_sleep(30)"))
    await wait_sleeping(conn, victim.get_server_pid())
    await conn.fetchval("SELECT pg_terminate_backend($1)", victim.get_server_pid())
    with pytest.raises(exceptions.PostgresError):
        await asyncio.wait_for(running, 3)
    assert victim.is_closed() is True


async def test_terminate_during_query_fails_the_query(connect_kwargs, monitor):
    victim = await mypgdriver.connect(**connect_kwargs)
    running = asyncio.ensure_future(victim.fetchval("SELECT pg_sleep(5)"))
    await wait_sleeping(monitor, victim.get_server_pid())
    victim.terminate()
    with pytest.raises(exceptions.ConnectionDoesNotExistError,
                       match="connection was closed in the middle of operation"):
        await asyncio.wait_for(running, 3)

"""A bad argument never wedges the connection.

Each call below gets one bad argument (a timeout that is not a number or is
NaN, a column that does not exist, a record_class that is not a Record
subclass, a prefetch that is not a positive int, a COPY option the server
would never accept).  It must raise at once (TypeError / ValueError, or the
InterfaceError / DataError asyncpg raises), and afterwards the connection
answers the next query, and the same bad call raises the same class again,
not "another operation is in progress".

The second half injects a failure into the transport's write() at the
N-th call during an operation: the connection must end up closed or fully
usable, never stuck, and never in a transaction the caller did not open.
"""
from __future__ import annotations

import asyncio
import io
import math
from typing import Any, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.session_state import backend_state, shared_table  # noqa: F401  (fixtures)

REFUSALS = (TypeError, ValueError, exceptions.InterfaceError, exceptions.DataError)

BAD_TIMEOUTS = {"str": "a", "list": [], "nan": math.nan}

Call = Callable[[Any, str], Awaitable[Any]]


async def _in_transaction(conn: Any, body: Callable[[], Awaitable[Any]]) -> Any:
    async with conn.transaction():
        return await body()


async def _iterate(factory: Any) -> list:
    return [row async for row in factory]


async def _prepared_fetch(conn: Any, timeout: Any) -> Any:
    stmt = await conn.prepare("SELECT $1::int")
    return await stmt.fetch(1, timeout=timeout)


def timeout_calls(timeout: Any) -> dict[str, Call]:
    """Every call that takes a timeout, given `timeout`; `t` is a table (block int, i int)."""
    return {
        "execute": lambda c, t: c.execute("SELECT 1", timeout=timeout),
        "execute with args": lambda c, t: c.execute("SELECT $1::int", 1, timeout=timeout),
        "fetch": lambda c, t: c.fetch("SELECT $1::int", 1, timeout=timeout),
        "fetchrow": lambda c, t: c.fetchrow("SELECT $1::int", 1, timeout=timeout),
        "fetchval": lambda c, t: c.fetchval("SELECT $1::int", 1, timeout=timeout),
        "executemany": lambda c, t: c.executemany(
            f"INSERT INTO {t} (block, i) VALUES ($1, $2)", [(1, 1), (1, 2)], timeout=timeout),
        "fetchmany": lambda c, t: c.fetchmany(
            f"INSERT INTO {t} (block, i) VALUES ($1, $2) RETURNING i", [(1, 1)],
            timeout=timeout),
        "prepare": lambda c, t: c.prepare("SELECT $1::int + 100", timeout=timeout),
        "cursor, iterated": lambda c, t: _in_transaction(
            c, lambda: _iterate(c.cursor("SELECT generate_series(1, 5)", timeout=timeout))),
        "cursor, awaited": lambda c, t: _in_transaction(
            c, lambda: c.cursor("SELECT generate_series(1, 5)", timeout=timeout)),
        "PreparedStatement.fetch": lambda c, t: _prepared_fetch(c, timeout),
        "copy_from_query": lambda c, t: c.copy_from_query(
            "SELECT 1", output=io.BytesIO(), timeout=timeout),
        "copy_to_table": lambda c, t: c.copy_to_table(
            t, source=io.BytesIO(b"1\t2\n"), timeout=timeout),
        "copy_records_to_table": lambda c, t: c.copy_records_to_table(
            t, records=[(1, 2)], timeout=timeout),
    }


TIMEOUT_CASES = [(call, kind) for call in timeout_calls(None) for kind in BAD_TIMEOUTS]


async def _raised(call: Call, conn: Any, table: str, where: str) -> BaseException:
    try:
        result = await asyncio.wait_for(call(conn, table), 10)
    except asyncio.TimeoutError as e:
        # NaN or a non-number must not be taken for a (tiny or endless) deadline.
        raise AssertionError(f"{where}: the call timed out instead of refusing the argument "
                             f"({e!r})") from e
    except Exception as e:  # noqa: BLE001 - the class is checked by the caller
        return e
    raise AssertionError(f"{where}: the call was accepted and returned {result!r}")


async def assert_refused_without_harm(conn: Any, call: Call, table: str, where: str,
                                      accepted: tuple[type[BaseException], ...] = REFUSALS
                                      ) -> None:
    first = await _raised(call, conn, table, where)
    assert isinstance(first, accepted), f"{where}: raised {first!r}"
    assert "another operation" not in str(first), f"{where}: {first!r}"
    assert not conn.is_closed(), f"{where}: a bad argument closed the connection"
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 41), 10) == 41, where
    assert conn.is_in_transaction() is False, f"{where}: a transaction was left open"
    second = await _raised(call, conn, table, f"{where} (again)")
    assert type(second) is type(first) and "another operation" not in str(second), \
        f"{where}: the second call raised {second!r}, the first {first!r}"
    assert await asyncio.wait_for(conn.fetchval("SELECT $1::int", 42), 10) == 42, where


@pytest.mark.parametrize("call, kind", TIMEOUT_CASES)
async def test_bad_timeout_is_refused_and_the_connection_stays_usable(
        shared_table, conn, call, kind):
    timeout = BAD_TIMEOUTS[kind]
    await assert_refused_without_harm(conn, timeout_calls(timeout)[call], shared_table.name,
                                      f"{call}(timeout={timeout!r})")


#: Other bad arguments; the second item is what may be raised besides REFUSALS.
OTHER_CASES: dict[str, tuple[Call, tuple[type[BaseException], ...]]] = {
    "fetchval(column=99)": (lambda c, t: c.fetchval("SELECT 1", column=99), (IndexError,)),
    "fetchval(column='nope')": (lambda c, t: c.fetchval("SELECT 1 AS a", column="nope"),
                                (KeyError,)),
    "fetch(record_class=int)": (lambda c, t: c.fetch("SELECT 1", record_class=int), ()),
    "fetchrow(record_class=int)": (lambda c, t: c.fetchrow("SELECT 1", record_class=int), ()),
    "prepare(record_class=int)": (lambda c, t: c.prepare("SELECT 1", record_class=int), ()),
    "cursor(record_class=int), iterated": (
        lambda c, t: _in_transaction(c, lambda: _iterate(c.cursor("SELECT 1", record_class=int))),
        ()),
    "cursor(prefetch='x'), iterated": (
        lambda c, t: _in_transaction(
            c, lambda: _iterate(c.cursor("SELECT generate_series(1, 5)", prefetch="x"))), ()),
    "cursor(prefetch=0), iterated": (
        lambda c, t: _in_transaction(
            c, lambda: _iterate(c.cursor("SELECT generate_series(1, 5)", prefetch=0))), ()),
    "copy_from_query(format='xml')": (
        lambda c, t: c.copy_from_query("SELECT 1", output=io.BytesIO(), format="xml"), ()),
    "copy_from_table(format='xml')": (
        lambda c, t: c.copy_from_table(t, output=io.BytesIO(), format="xml"), ()),
    "copy_to_table(format='xml')": (
        lambda c, t: c.copy_to_table(t, source=io.BytesIO(b"1\t2\n"), format="xml"), ()),
    "copy_to_table(delimiter=5)": (
        lambda c, t: c.copy_to_table(t, source=io.BytesIO(b"1\t2\n"), delimiter=5), ()),
    "copy_from_query(delimiter=5)": (
        lambda c, t: c.copy_from_query("SELECT 1", output=io.BytesIO(), delimiter=5), ()),
}


@pytest.mark.parametrize("case", list(OTHER_CASES))
async def test_bad_argument_is_refused_and_the_connection_stays_usable(shared_table, conn, case):
    call, also_accepted = OTHER_CASES[case]
    await assert_refused_without_harm(conn, call, shared_table.name, case,
                                      REFUSALS + also_accepted)


# --- fault injection: the N-th transport write raises ---------------------------------------

class InjectedFault(RuntimeError):
    pass


async def _cursor_fetch(conn: Any, table: str) -> None:
    async with conn.transaction():
        cur = await conn.cursor("SELECT generate_series(1, 100)")
        assert len(await cur.fetch(10)) == 10


async def _transaction_block(conn: Any, table: str) -> None:
    async with conn.transaction():
        await conn.execute(f"INSERT INTO {table} (block, i) VALUES (7, 7)")


FAULTY_OPERATIONS: dict[str, Call] = {
    "fetch": lambda c, t: c.fetch("SELECT generate_series(1, $1::int)", 50),
    "execute with args": lambda c, t: c.execute(
        f"INSERT INTO {t} (block, i) VALUES ($1, $2)", 5, 5),
    "executemany": lambda c, t: c.executemany(
        f"INSERT INTO {t} (block, i) VALUES ($1, $2)", [(6, i) for i in range(3000)]),
    "copy_records_to_table": lambda c, t: c.copy_records_to_table(
        t, records=[(8, i) for i in range(3000)]),
    "prepare": lambda c, t: c.prepare(f"SELECT count(*) FROM {t} WHERE block = $1"),
    "cursor fetch": _cursor_fetch,
    "transaction start": _transaction_block,
}


def _fail_nth_write(transport: Any, n: int) -> Callable[[], None]:
    """Make the transport's n-th write() raise InjectedFault; return the undo function."""
    real_write = transport.write
    calls = 0

    def write(data: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == n:
            raise InjectedFault("injected")
        real_write(data)

    transport.write = write

    def undo() -> None:
        try:
            del transport.write
        except AttributeError:
            pass
    return undo


@pytest.mark.parametrize("operation", list(FAULTY_OPERATIONS))
async def test_failing_transport_write_leaves_connection_closed_or_usable(
        shared_table, connect_kwargs, operation):
    op = FAULTY_OPERATIONS[operation]
    conn = await mypgdriver.connect(**connect_kwargs)
    try:
        for n in range(1, 6):
            where = f"{operation}, write #{n} raises"
            # The brief allows these two private attributes for this test only.
            transport = conn._protocol.transport
            assert transport is conn._transport
            undo = _fail_nth_write(transport, n)
            try:
                outcome = await asyncio.wait_for(
                    asyncio.gather(op(conn, shared_table.name), return_exceptions=True), 10)
            except asyncio.TimeoutError:
                raise AssertionError(f"{where}: the operation hangs") from None
            finally:
                undo()
            if conn.is_closed():
                conn = await mypgdriver.connect(**connect_kwargs)
                continue
            try:
                value = await asyncio.wait_for(conn.fetchval("SELECT $1::int", 100 + n), 10)
            except Exception as e:  # noqa: BLE001
                raise AssertionError(f"{where} ({outcome[0]!r}): the connection is open but "
                                     f"not usable: {e!r}") from e
            assert value == 100 + n, f"{where}: got another query's result {value!r}"
            assert conn.is_in_transaction() is False, \
                f"{where} ({outcome[0]!r}): a transaction stayed open"
            seen = await backend_state(shared_table.monitor, conn.get_server_pid())
            assert seen.state == "idle", f"{where}: the server says {seen.state!r}"
    finally:
        if not conn.is_closed():
            await conn.close()

"""Transaction blocks are never left dangling, whatever path leaves them.

A block (``async with conn.transaction()``, explicit start/commit/rollback,
or a savepoint inside another block) may end normally, by an exception in
its body, by task.cancel() at any point, by asyncio.wait_for, or by a
failing COMMIT.  Right after the caller gets the result or the exception:

* ``conn.is_in_transaction()`` is False;
* the server agrees: pg_stat_activity shows the backend 'idle' with no
  backend_xid (checked from a second connection);
* an autocommit INSERT on the connection is visible from the other session
  at once -- the user-visible data loss is an INSERT silently swallowed by a
  transaction that nobody will commit;
* the connection is open and answers.

The block's own rows are all visible or none; when the interruption hit the
COMMIT, the exception the caller gets says whether it committed, and that
must be the truth.
"""
from __future__ import annotations

import asyncio
import itertools
from typing import Any, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.session_state import (  # noqa: F401  (fixtures)
    SharedTable,
    assert_session_clean,
    backend_state,
    commit_claim,
    run_cancelled,
    run_timed_out,
    settle,
    settled_backend_state,
    shared_table,
)
from tests.support.waiting import SETTLE, apoll

#: Rows the block writes (block=<id>, i=0..BLOCK_ROWS-1).
BLOCK_ROWS = 3
#: Cancel after 0..MAX_SPINS event-loop iterations: covers BEGIN, the body and COMMIT.
MAX_SPINS = 40
#: In the wait_for test each INSERT of the block sleeps this long on the server, so
#: that the block lasts a few milliseconds and the timeouts below land anywhere in it.
TIMED_PAUSE = 0.001
#: wait_for timeouts: 10-50 us (the timeout fires while BEGIN is in flight, the
#: point where blocks are left open most often), then geometric up to 20 ms (the
#: body, the COMMIT, and after the block is done).
TIMEOUTS = (0.00001, 0.000015, 0.00002, 0.000025, 0.00003, 0.000035, 0.00004, 0.00005,
            *(round(0.00006 * 1.2 ** n, 6) for n in range(33)))
#: Each timeout is tried this many times per block shape.
TIMEOUT_ROUNDS = 2

_block_ids = itertools.count(1)


async def _insert(conn: Any, table: str, block: int, i: int, pause: float) -> None:
    """One row of the block; `pause` > 0 makes the statement take that long on the server."""
    if pause:
        status = await conn.execute(
            f"INSERT INTO {table} (block, i) SELECT $1, $2 FROM pg_sleep($3)", block, i, pause)
    else:
        status = await conn.execute(f"INSERT INTO {table} (block, i) VALUES ($1, $2)", block, i)
    assert status == "INSERT 0 1"


async def _insert_rows(conn: Any, table: str, block: int, pause: float = 0.0) -> None:
    for i in range(BLOCK_ROWS):
        await _insert(conn, table, block, i, pause)


async def block_async_with(conn: Any, table: str, block: int, pause: float = 0.0) -> None:
    async with conn.transaction():
        await _insert_rows(conn, table, block, pause)


async def block_explicit(conn: Any, table: str, block: int, pause: float = 0.0) -> None:
    tr = conn.transaction()
    await tr.start()
    try:
        await _insert_rows(conn, table, block, pause)
    except BaseException:
        await tr.rollback()
        raise
    await tr.commit()


async def block_nested(conn: Any, table: str, block: int, pause: float = 0.0) -> None:
    async with conn.transaction():
        await _insert(conn, table, block, 0, pause)
        async with conn.transaction():          # a savepoint
            for i in range(1, BLOCK_ROWS):
                await _insert(conn, table, block, i, pause)


async def block_nested_explicit(conn: Any, table: str, block: int, pause: float = 0.0) -> None:
    outer = conn.transaction()
    await outer.start()
    try:
        await _insert(conn, table, block, 0, pause)
        inner = conn.transaction()          # a savepoint
        await inner.start()
        try:
            for i in range(1, BLOCK_ROWS):
                await _insert(conn, table, block, i, pause)
        except BaseException:
            await inner.rollback()
            raise
        await inner.commit()
    except BaseException:
        await outer.rollback()
        raise
    await outer.commit()


BLOCK_SHAPES: dict[str, Callable[..., Awaitable[None]]] = {
    "async_with": block_async_with,
    "explicit": block_explicit,
    "nested": block_nested,
    "nested_explicit": block_nested_explicit,
}


async def check_block_outcome(conn: Any, table: SharedTable, block: int, result: Any,
                              where: str, *, interrupt: type[BaseException]) -> str:
    """Assert the invariants after an interrupted block; return how it ended."""
    if result is not None and not isinstance(result, interrupt):
        raise AssertionError(f"{where}: the block ended with {result!r}, "
                             f"not completion or {interrupt.__name__}") from result
    rows = await table.count(block, bulk_only=True)
    assert rows in (0, BLOCK_ROWS), f"{where}: {rows} of the block's {BLOCK_ROWS} rows committed"
    if result is None:
        assert rows == BLOCK_ROWS, f"{where}: the block completed but its rows are not visible"
    claim = commit_claim(result)
    if claim is not None:
        assert (claim == "committed") == (rows == BLOCK_ROWS), \
            f"{where}: the exception says {claim!r} ({result!r}) but {rows} rows are visible"
    await assert_session_clean(conn, table, -block, where)
    return "completed" if result is None else f"interrupted, {rows and 'committed' or 'none'}"


# --- cancellation and timeouts at every point -------------------------------------------------

@pytest.mark.parametrize("shape", list(BLOCK_SHAPES))
async def test_cancelled_transaction_block_leaves_no_open_transaction(shared_table, conn, shape):
    body = BLOCK_SHAPES[shape]
    outcomes = set()
    for spins in range(MAX_SPINS + 1):
        block = next(_block_ids)
        where = f"{shape}, cancelled after {spins} loop iterations"
        result = await run_cancelled(lambda block=block: body(conn, shared_table.name, block), spins, where)
        outcomes.add(await check_block_outcome(conn, shared_table, block, result, where,
                                               interrupt=asyncio.CancelledError))
    # Sanity check of the loop itself (how many blocks complete depends on the
    # machine's speed, so only the interrupted ones are required).
    assert any(o.startswith("interrupted") for o in outcomes), outcomes


@pytest.mark.parametrize("shape", list(BLOCK_SHAPES))
async def test_timed_out_transaction_block_leaves_no_open_transaction(shared_table, conn, shape):
    body = BLOCK_SHAPES[shape]
    outcomes = set()
    for round_ in range(TIMEOUT_ROUNDS):
        for timeout in TIMEOUTS:
            block = next(_block_ids)
            where = f"{shape}, wait_for(timeout={timeout}) round {round_}"
            result = await run_timed_out(
                lambda block=block: body(conn, shared_table.name, block, TIMED_PAUSE), timeout, where)
            outcomes.add(await check_block_outcome(conn, shared_table, block, result, where,
                                                   interrupt=asyncio.TimeoutError))
    assert any(o.startswith("interrupted") for o in outcomes), outcomes


@pytest.mark.parametrize("shape", list(BLOCK_SHAPES))
async def test_transaction_block_ending_normally_or_by_exception_leaves_no_open_transaction(
        shared_table, conn, shape):
    body = BLOCK_SHAPES[shape]
    block = next(_block_ids)
    await body(conn, shared_table.name, block)
    await check_block_outcome(conn, shared_table, block, None, f"{shape}, normal exit",
                              interrupt=asyncio.CancelledError)

    class Boom(Exception):
        pass

    async def failing(block: int) -> None:
        async with conn.transaction():
            await conn.execute(f"INSERT INTO {shared_table.name} (block, i) VALUES ($1, 0)",
                               block)
            raise Boom()

    block = next(_block_ids)
    with pytest.raises(Boom):
        await failing(block)
    assert await shared_table.count(block) == 0
    await assert_session_clean(conn, shared_table, -block, f"{shape}, exception in the body")


async def test_block_whose_statement_hits_its_own_timeout_leaves_no_open_transaction(
        shared_table, conn):
    block = next(_block_ids)
    with pytest.raises(asyncio.TimeoutError):
        async with conn.transaction():
            await conn.execute(f"INSERT INTO {shared_table.name} (block, i) VALUES ($1, 0)",
                               block)
            await conn.execute("SELECT pg_sleep(2)", timeout=0.05)
    assert await shared_table.count(block) == 0
    await assert_session_clean(conn, shared_table, -block, "statement timeout inside the block")


# --- a failing COMMIT ----------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["async_with", "explicit"])
async def test_failing_commit_leaves_no_open_transaction(shared_table, conn, shape):
    await shared_table.monitor.execute(
        f"ALTER TABLE {shared_table.name} ADD CONSTRAINT {shared_table.name}_once "
        f"UNIQUE (block, i) DEFERRABLE INITIALLY DEFERRED")
    block = next(_block_ids)
    insert = f"INSERT INTO {shared_table.name} (block, i) VALUES ($1, 0)"
    with pytest.raises(exceptions.UniqueViolationError):
        if shape == "async_with":
            async with conn.transaction():
                await conn.execute(insert, block)
                await conn.execute(insert, block)   # checked only at COMMIT
        else:
            tr = conn.transaction()
            await tr.start()
            await conn.execute(insert, block)
            await conn.execute(insert, block)
            await tr.commit()
    assert await shared_table.count(block) == 0
    await assert_session_clean(conn, shared_table, -block, f"{shape}, failing COMMIT")


# --- an interrupted COMMIT says whether it committed ---------------------------------------

async def _make_commit_slow(table: SharedTable, seconds: float) -> None:
    """A deferred trigger on rows with i = 0: COMMIT of a block takes `seconds`."""
    await table.monitor.execute(f"""
        CREATE FUNCTION {table.name}_slow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$;
        CREATE CONSTRAINT TRIGGER {table.name}_slow AFTER INSERT ON {table.name}
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.i = 0)
        EXECUTE FUNCTION {table.name}_slow();""")


async def _drop_slow_commit(table: SharedTable) -> None:
    await table.monitor.execute(f"DROP TABLE IF EXISTS {table.name}; "
                                f"DROP FUNCTION IF EXISTS {table.name}_slow()")


class BodyDone:
    """Set (with the loop time) when the block's body is done and only its COMMIT is left."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.at: float | None = None

    def set(self) -> None:
        self.at = asyncio.get_running_loop().time()
        self.event.set()


def _signalling(shape: str, done: BodyDone) -> Callable[[Any, str, int], Awaitable[None]]:
    """A block of `shape` that sets `done` right before its COMMIT is sent."""
    async def shaped(conn: Any, table: str, block: int) -> None:
        if shape == "async_with":
            async with conn.transaction():
                await _insert_rows(conn, table, block)
                done.set()
        elif shape == "explicit":
            tr = conn.transaction()
            await tr.start()
            try:
                await _insert_rows(conn, table, block)
            except BaseException:
                await tr.rollback()
                raise
            done.set()
            await tr.commit()
        else:
            async with conn.transaction():
                async with conn.transaction():      # RELEASE SAVEPOINT comes before `done`
                    await _insert_rows(conn, table, block)
                done.set()
    return shaped


async def _wait_until_commit_runs(monitor: Any, pid: int, where: str) -> None:
    """Wait until backend `pid` sleeps in the deferred trigger, i.e. inside its COMMIT."""
    # (a short interval: the trigger's sleep is the whole window to act in)
    if not await apoll(lambda: monitor.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE pid = $1 AND state = 'active' AND wait_event = 'PgSleep'", pid),
            bool, timeout=SETTLE, interval=0.002):
        raise AssertionError(f"{where}: the COMMIT never started running its trigger")


@pytest.mark.parametrize("shape", ["async_with", "explicit", "nested"])
async def test_cancel_during_commit_says_truthfully_whether_it_committed(
        shared_table, conn, shape):
    # 1 s: the monitor sees the COMMIT run, and the cancel lands in it
    # `delay` later, even when a loaded machine is slow to do either.
    await _make_commit_slow(shared_table, 1.0)
    try:
        for delay in (0.0, 0.05, 0.2):
            block = next(_block_ids)
            where = f"{shape}, cancelled {delay}s after a 1s COMMIT started on the server"
            task = asyncio.ensure_future(
                _signalling(shape, BodyDone())(conn, shared_table.name, block))
            await _wait_until_commit_runs(shared_table.monitor, conn.get_server_pid(), where)
            await asyncio.sleep(delay)
            task.cancel()
            result = await settle(task, where)
            assert isinstance(result, asyncio.CancelledError), \
                f"{where}: expected CancelledError, got {result!r}"
            assert commit_claim(result) is not None, (
                f"{where}: the CancelledError ({str(result)!r}) does not say whether the "
                f"transaction was committed or rolled back")
            await check_block_outcome(conn, shared_table, block, result, where,
                                      interrupt=asyncio.CancelledError)
    finally:
        await _drop_slow_commit(shared_table)


#: A timeout that fires less than this after the body was done may have hit the
#: moment before COMMIT was sent: the commit message is only required otherwise.
COMMIT_SENT_MARGIN = 0.05


@pytest.mark.parametrize("shape", ["async_with", "explicit", "nested"])
async def test_wait_for_timeout_during_commit_says_truthfully_whether_it_committed(
        shared_table, conn, shape):
    await _make_commit_slow(shared_table, 0.4)
    try:
        block = next(_block_ids)
        done = BodyDone()
        where = f"{shape}, wait_for(0.2) around a 0.4s COMMIT"
        started = asyncio.get_running_loop().time()
        result = await run_timed_out(
            lambda: _signalling(shape, done)(conn, shared_table.name, block), 0.2, where)
        assert isinstance(result, asyncio.TimeoutError), f"{where}: got {result!r}"
        if done.at is not None and done.at - started < 0.2 - COMMIT_SENT_MARGIN:
            # The body was done well before the timeout: it hit the COMMIT.
            assert commit_claim(result) is not None, (
                f"{where}: no exception in the chain of {result!r} says whether the "
                f"transaction was committed or rolled back")
        await check_block_outcome(conn, shared_table, block, result, where,
                                  interrupt=asyncio.TimeoutError)
    finally:
        await _drop_slow_commit(shared_table)


async def test_command_timeout_during_commit_raises_at_its_deadline_saying_the_outcome_is_unknown(
        shared_table, connect_kwargs):
    await _make_commit_slow(shared_table, 0.5)
    conn = await mypgdriver.connect(**connect_kwargs, command_timeout=0.2)
    try:
        block = next(_block_ids)
        done = BodyDone()
        where = "command_timeout=0.2 around a 0.5s COMMIT"
        task = asyncio.ensure_future(_signalling("async_with", done)(
            conn, shared_table.name, block))
        result = await settle(task, where)
        ended = asyncio.get_running_loop().time()
        assert isinstance(result, asyncio.TimeoutError), f"{where}: got {result!r}"
        assert done.at is not None, f"{where}: a statement of the body timed out: {result!r}"
        # The COMMIT's own timeout bounds the call: the caller hears at its
        # deadline that the outcome is not known yet (the block is ended in
        # the background, before the next call on the connection runs).
        assert ended - done.at < 0.2 + 0.5, f"{where}: returned {ended - done.at:.2f} s after COMMIT"
        assert "not known" in str(result), (
            f"{where}: the TimeoutError ({str(result)!r}) does not say that the outcome "
            f"is not known yet")
        assert commit_claim(result) is None
        # The next call waits for the block to be ended on the server.
        assert await conn.fetchval("SELECT 1") == 1
        await check_block_outcome(conn, shared_table, block, result, where,
                                  interrupt=asyncio.TimeoutError)
    finally:
        await conn.close()
        await _drop_slow_commit(shared_table)


# --- is_in_transaction() follows the server ------------------------------------------------

async def test_is_in_transaction_follows_manual_begin_and_commit(monitor, conn):
    await conn.execute("BEGIN")
    assert conn.is_in_transaction() is True
    assert await settled_backend_state(monitor, conn.get_server_pid()) == "idle in transaction"
    await conn.execute("COMMIT")
    assert conn.is_in_transaction() is False
    assert (await backend_state(monitor, conn.get_server_pid())).state == "idle"


async def test_is_in_transaction_after_cancelled_begin_matches_the_server(monitor, conn):
    pid = conn.get_server_pid()
    for spins in range(MAX_SPINS // 2):
        where = f"execute('BEGIN') cancelled after {spins} loop iterations"
        result = await run_cancelled(lambda: conn.execute("BEGIN"), spins, where)
        assert result == "BEGIN" or isinstance(result, asyncio.CancelledError), \
            f"{where}: {result!r}"
        assert await asyncio.wait_for(conn.fetchval("SELECT 1"), 10) == 1
        state = await settled_backend_state(monitor, pid)
        assert conn.is_in_transaction() == (state == "idle in transaction"), \
            f"{where}: is_in_transaction() is {conn.is_in_transaction()}, the server says {state!r}"
        if state == "idle in transaction":
            await conn.execute("ROLLBACK")


# --- the pool hands out connections outside any transaction --------------------------------

@pytest.fixture
async def one_connection_pool(connect_kwargs):
    pool = await mypgdriver.create_pool(**connect_kwargs, min_size=1, max_size=1)
    try:
        yield pool
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_connection_released_inside_manual_begin_comes_back_outside_transaction(
        shared_table, one_connection_pool):
    pool = one_connection_pool
    async with pool.acquire() as con:
        await con.execute("BEGIN")
        await con.execute(f"INSERT INTO {shared_table.name} (block, i) VALUES (1, 0)")
    con = await pool.acquire()
    try:
        assert con.is_in_transaction() is False
        await assert_session_clean(con, shared_table, 2, "next user after a released BEGIN")
    finally:
        await pool.release(con)
    # The first user's uncommitted row never became visible.
    assert await shared_table.count(1) == 0


async def test_connection_released_after_cancelled_block_comes_back_outside_transaction(
        shared_table, one_connection_pool):
    pool = one_connection_pool
    for spins in range(0, MAX_SPINS + 1, 2):
        block = next(_block_ids)
        where = f"pool user cancelled after {spins} loop iterations"
        async with pool.acquire() as con:
            await run_cancelled(lambda block=block: block_async_with(con, shared_table.name, block),
                                spins, where)
        assert await shared_table.count(block, bulk_only=True) in (0, BLOCK_ROWS)
        async with pool.acquire() as con:
            await assert_session_clean(con, shared_table, -block, f"next user, {where}")

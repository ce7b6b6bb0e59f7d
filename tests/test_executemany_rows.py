"""executemany / fetchmany never bind a mapping's keys (or a string's characters).

A row of arguments must be a sequence in the sense of "positional values":
tuple, list, Record, or any collections.abc.Sequence.  A dict iterates over
its keys, a str over its characters, bytes over integers, a set in no
particular order: binding those silently writes the wrong data.  Such a row
raises DataError naming the row index and its type, nothing of the call is
written (also not the good rows before it), and the connection stays usable.
"""
from __future__ import annotations

import collections.abc
import re
from typing import Any, AsyncIterator, Callable

import pytest

from mypgdriver import exceptions
from tests.support.session_state import unique_table_name


class PeopleTable:
    def __init__(self, name: str, monitor: Any) -> None:
        self.name = name
        self.monitor = monitor
        self.insert = f"INSERT INTO {name} (name, email) VALUES ($1, $2)"
        self.insert_returning = self.insert + " RETURNING name"

    async def rows(self) -> list[tuple]:
        """Committed rows, as another session sees them."""
        return [tuple(r) for r in await self.monitor.fetch(
            f"SELECT name, email FROM {self.name} ORDER BY name")]


@pytest.fixture
async def people(monitor) -> AsyncIterator[PeopleTable]:
    name = unique_table_name("people")
    await monitor.execute(f"CREATE TABLE {name} (name text, email text)")
    try:
        yield PeopleTable(name, monitor)
    finally:
        await monitor.execute(f"DROP TABLE IF EXISTS {name}")


def _generator() -> Any:
    return (v for v in ("gen", "g@x"))


#: Rows that are not sequences of positional values: (the row, its type name).
BAD_ROWS: dict[str, tuple[Callable[[], Any], str]] = {
    "dict": (lambda: {"name": "ada", "email": "a@x"}, "dict"),
    "str": (lambda: "ab", "str"),
    "bytes": (lambda: b"ab", "bytes"),
    "set": (lambda: {"ada", "a@x"}, "set"),
    "frozenset": (lambda: frozenset({"ada", "a@x"}), "frozenset"),
    "int": (lambda: 5, "int"),
    "generator": (_generator, "generator"),
}

GOOD_ROWS = [("bob", "b@x"), ("cy", "c@x")]


async def _run(conn: Any, people: PeopleTable, method: str, rows: list) -> Any:
    if method == "Connection.executemany":
        return await conn.executemany(people.insert, rows)
    if method == "Connection.fetchmany":
        return await conn.fetchmany(people.insert_returning, rows)
    if method == "PreparedStatement.executemany":
        stmt = await conn.prepare(people.insert)
        return await stmt.executemany(rows)
    if method == "PreparedStatement.fetchmany":
        stmt = await conn.prepare(people.insert_returning)
        return await stmt.fetchmany(rows)
    raise AssertionError(method)


METHODS = ["Connection.executemany", "Connection.fetchmany",
           "PreparedStatement.executemany", "PreparedStatement.fetchmany"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", list(BAD_ROWS))
@pytest.mark.parametrize("good_rows_before", [0, 2])
async def test_row_that_is_not_a_sequence_is_refused_and_nothing_is_written(
        people, conn, method, kind, good_rows_before):
    make_row, type_name = BAD_ROWS[kind]
    rows = GOOD_ROWS[:good_rows_before] + [make_row()]
    index = good_rows_before
    with pytest.raises(exceptions.DataError) as caught:
        await _run(conn, people, method, rows)
    message = str(caught.value)
    assert re.search(rf"\b{index}\b", message), f"the message does not name row {index}: {message!r}"
    assert re.search(rf"\b{type_name}\b", message), \
        f"the message does not name the type {type_name!r}: {message!r}"
    assert await people.rows() == [], "rows were written by a call that raised"
    assert conn.is_in_transaction() is False
    assert await conn.fetchval("SELECT $1::int", 7) == 7
    # The same call with good rows only works afterwards.
    await _run(conn, people, method, list(GOOD_ROWS))
    assert await people.rows() == GOOD_ROWS


async def test_dict_row_from_the_bug_report_is_refused(people, conn):
    with pytest.raises(exceptions.DataError, match=r"\bdict\b"):
        await conn.executemany(people.insert, [{"name": "ada", "email": "a@x"}])
    assert await people.rows() == []
    with pytest.raises(exceptions.DataError, match=r"\b2\b") as caught:
        await conn.executemany(people.insert, [("a", "b"), ("c", "d"), {"x": 1, "y": 2}])
    assert re.search(r"\bdict\b", str(caught.value)), str(caught.value)
    assert await people.rows() == []
    assert await conn.fetchval("SELECT 1") == 1


class Pair(collections.abc.Sequence):
    """A user-defined sequence: accepted like a tuple."""

    def __init__(self, *items: Any) -> None:
        self._items = items

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)


@pytest.mark.parametrize("method", METHODS)
async def test_tuple_list_record_and_sequence_rows_are_accepted(people, conn, method):
    record = await conn.fetchrow("SELECT 'dee'::text AS name, 'd@x'::text AS email")
    rows = [("ada", "a@x"), ["bob", "b@x"], Pair("cy", "c@x"), record]
    result = await _run(conn, people, method, rows)
    if method.endswith("fetchmany"):
        assert [r[0] for r in result] == ["ada", "bob", "cy", "dee"]
    assert await people.rows() == [("ada", "a@x"), ("bob", "b@x"), ("cy", "c@x"),
                                   ("dee", "d@x")]

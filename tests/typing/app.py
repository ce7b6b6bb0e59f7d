"""A small inventory application written against mypgdriver's public API.

It exists to be type-checked: tools/check_types.sh runs ``mypy --strict``
and pyright in strict mode on it, so every public call an application
makes (connect, fetch, fetchrow, fetchval, execute, transaction, prepare,
cursor, create_pool, acquire, copy_records_to_table, add_listener) must be
visible to both with precise types, with no ``Any`` leaking in where a
Record is meant.  It is not collected by pytest, but it runs::

    python tests/typing/app.py postgresql://user@localhost/db

Its tables are temporary, so it leaves nothing behind.
"""
from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Optional

import mypgdriver
from mypgdriver import Connection, Record
from mypgdriver.exceptions import PostgresLogMessage, UniqueViolationError
from mypgdriver.types import JsonCodec

SCHEMA = """
    CREATE TEMPORARY TABLE items (
        id serial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        quantity integer NOT NULL CHECK (quantity >= 0)
    )
"""


class ItemRecord(Record):
    """Rows of ``items`` with a derived field; chosen per call with ``record_class=``."""

    @property
    def label(self) -> str:
        """``name x quantity``, as shown to users."""
        return f"{self['name']} x{self['quantity']}"


@dataclass(frozen=True)
class Item:
    """An item as the rest of the application sees it."""

    id: int
    name: str
    quantity: int

    @classmethod
    def from_record(cls, row: Record) -> Item:
        """Build an Item from a row of ``items``."""
        return cls(id=row['id'], name=row['name'], quantity=row['quantity'])


async def create_schema(conn: Connection) -> None:
    """Create the (temporary) table; takes a Connection or a pooled one."""
    await conn.execute(SCHEMA)


async def add_item(conn: Connection, name: str, quantity: int) -> int:
    """Insert one item and return its id."""
    item_id: int = await conn.fetchval(
        'INSERT INTO items (name, quantity) VALUES ($1, $2) RETURNING id', name, quantity)
    return item_id


async def find_item(conn: Connection, name: str) -> Optional[Item]:
    """The item called `name`, if there is one."""
    row: Optional[Record] = await conn.fetchrow(
        'SELECT id, name, quantity FROM items WHERE name = $1', name)
    return None if row is None else Item.from_record(row)


async def all_items(conn: Connection) -> list[Item]:
    """Every item, in id order."""
    rows: list[Record] = await conn.fetch('SELECT id, name, quantity FROM items ORDER BY id')
    return [Item.from_record(row) for row in rows]


async def items_named(conn: Connection, low: int, high: int) -> list[Record]:
    """Items with a quantity in a range, the query written with named parameters."""
    return await conn.fetch(*mypgdriver.named(
        'SELECT id, name, quantity FROM items WHERE quantity BETWEEN :low AND :high',
        low=low, high=high), timeout=5)


async def labels(conn: Connection) -> list[str]:
    """Labels of the items in stock, through a custom record class."""
    rows: list[ItemRecord] = await conn.fetch(
        'SELECT name, quantity FROM items WHERE quantity > $1 ORDER BY name', 0,
        record_class=ItemRecord)
    return [row.label for row in rows]


async def restock(conn: Connection, amounts: dict[str, int]) -> dict[str, int]:
    """Add to several items' quantities atomically; the new quantities by name."""
    update = await conn.prepare(
        'UPDATE items SET quantity = quantity + $2 WHERE name = $1 RETURNING quantity')
    result: dict[str, int] = {}
    async with conn.transaction():
        for name, amount in amounts.items():
            row = await update.fetchrow(name, amount)
            if row is not None:
                result[name] = row['quantity']
    return result


async def bulk_load(conn: Connection, items: list[tuple[str, int]]) -> str:
    """Load many items with binary COPY; the status tag, e.g. ``'COPY 3'``."""
    return await conn.copy_records_to_table('items', records=items,
                                            columns=['name', 'quantity'])


async def names_in_batches(conn: Connection) -> list[str]:
    """Read the names through a server-side cursor, both ways a cursor is used."""
    names: list[str] = []
    async with conn.transaction(readonly=True):
        async for row in conn.cursor('SELECT name FROM items ORDER BY id', prefetch=2):
            names.append(row['name'])
        cursor = await conn.cursor('SELECT id FROM items ORDER BY id')
        first: Optional[Record] = await cursor.fetchrow()
        rest: list[Record] = await cursor.fetch(100)
        assert first is not None and len(rest) == len(names) - 1
    return names


class ChangeWatcher:
    """LISTENs on a channel while started; each payload lands in `received`."""

    channel = 'items_changed'

    def __init__(self) -> None:
        self.received: asyncio.Queue[str] = asyncio.Queue()

    def on_notification(self, connection: Connection, pid: int, channel: str,
                        payload: str) -> None:
        """Notification callback: queue the payload."""
        self.received.put_nowait(payload)

    def on_log(self, connection: Connection, message: PostgresLogMessage) -> None:
        """Log-message callback: show what the server said."""
        print(f'server says: {message.message}')

    async def start(self, conn: Connection) -> None:
        """Listen on `conn` (a pooled connection must stop before its release)."""
        await conn.add_listener(self.channel, self.on_notification)
        conn.add_log_listener(self.on_log)

    async def stop(self, conn: Connection) -> None:
        """Stop listening on `conn`."""
        await conn.remove_listener(self.channel, self.on_notification)
        conn.remove_log_listener(self.on_log)


async def run_on_connection(conn: Connection) -> None:
    """The whole application, on one connection (plain or pooled)."""
    await create_schema(conn)
    await add_item(conn, 'bolt', 10)
    print(await bulk_load(conn, [('nut', 5), ('washer', 0), ('screw', 7)]))
    try:
        await add_item(conn, 'bolt', 1)
    except UniqueViolationError as error:
        print(f'duplicate refused by {error.constraint_name}')
    print(await restock(conn, {'washer': 3, 'nut': 1}))
    print(await labels(conn))
    print(await find_item(conn, 'screw'), len(await all_items(conn)))
    print(await names_in_batches(conn))

    watcher = ChangeWatcher()
    await watcher.start(conn)
    try:
        await conn.execute("SELECT pg_notify('items_changed', 'restocked')")
        print('notified:', await asyncio.wait_for(watcher.received.get(), 5))
    finally:
        await watcher.stop(conn)


async def main(dsn: str) -> None:
    """Run the application on a connection, then on one from a pool."""
    conn = await mypgdriver.connect(dsn, timeout=None, command_timeout=30, server_settings={
        'application_name': 'typed-example'})
    try:
        await run_on_connection(conn)
    finally:
        await conn.close()

    async with mypgdriver.create_pool(dsn, min_size=1, max_size=2, json=True) as pool:
        async with pool.acquire() as pooled:
            # A pooled connection is accepted wherever a Connection is.
            await run_on_connection(pooled)
        version: str = await pool.fetchval('SHOW server_version')
        rows = await pool.fetch('SELECT generate_series(1, $1) AS n', 3)
        print(version, [row['n'] for row in rows])
        # json=True: jsonb values as Python objects
        print(await pool.fetchval('SELECT $1::jsonb', {'tags': ['a', 'b']}))

    # Another JSON library's functions (dumps may return bytes).
    codec = JsonCodec(loads=json.loads, dumps=lambda v: json.dumps(v).encode(),
                      loads_bytes=True)
    conn = await mypgdriver.connect(dsn, json=codec)
    try:
        print(await conn.fetchval("SELECT '[1, 2]'::json"))
    finally:
        await conn.close()


if __name__ == '__main__':
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else 'postgresql:///postgres'))

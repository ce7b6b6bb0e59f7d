"""The inventory application of app.py, written against the blocking API (mypgdriver.sync).

Type-checked by tools/check_types.sh (mypy --strict and pyright strict, as
every file of tests/typing/); it also runs::

    python tests/typing/sync_app.py postgresql://user@localhost/db
"""
from __future__ import annotations

import io
import sys
from typing import Optional

import mypgdriver.sync
from mypgdriver.exceptions import PostgresLogMessage, UniqueViolationError
from mypgdriver.pool import PoolStats
from mypgdriver.sync import (
    Connection,
    Cursor,
    CursorFactory,
    Notification,
    Pool,
    PreparedStatement,
    Record,
)

SCHEMA = """
    CREATE TEMPORARY TABLE items (
        id serial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        quantity integer NOT NULL CHECK (quantity >= 0)
    )
"""


class ItemRecord(Record):
    """Rows of ``items`` with a derived field."""

    @property
    def label(self) -> str:
        """``name x quantity``."""
        return f"{self['name']} x{self['quantity']}"


def add_item(conn: Connection, name: str, quantity: int) -> int:
    """Insert one item and return its id."""
    item_id: int = conn.fetchval(
        'INSERT INTO items (name, quantity) VALUES ($1, $2) RETURNING id', name, quantity)
    return item_id


def labels(conn: Connection) -> list[str]:
    """Labels of the items in stock, through a custom record class."""
    rows: list[ItemRecord] = conn.fetch(
        'SELECT name, quantity FROM items WHERE quantity > $1 ORDER BY name', 0,
        record_class=ItemRecord)
    return [row.label for row in rows]


def restock(conn: Connection, amounts: dict[str, int]) -> dict[str, int]:
    """Add to several items' quantities atomically; the new quantities by name."""
    update: PreparedStatement[Record] = conn.prepare(
        'UPDATE items SET quantity = quantity + $2 WHERE name = $1 RETURNING quantity')
    result: dict[str, int] = {}
    with conn.transaction():
        for name, amount in amounts.items():
            row: Optional[Record] = update.fetchrow(name, amount)
            if row is not None:
                result[name] = row['quantity']
    return result


def names_in_batches(conn: Connection) -> list[str]:
    """Read the names through a server-side cursor, each way a cursor is used."""
    names: list[str] = []
    with conn.transaction(readonly=True):
        for row in conn.cursor('SELECT name FROM items ORDER BY id', prefetch=2):
            names.append(row['name'])
        cursor: Cursor[ItemRecord] = conn.cursor(
            'SELECT name, quantity FROM items ORDER BY id', record_class=ItemRecord).open()
        first: Optional[ItemRecord] = cursor.fetchrow()
        rest: list[ItemRecord] = cursor.fetch(100)
        assert first is not None and len(rest) == len(names) - 1
        # `await conn.cursor(q)` of the asyncio API, without the await.
        unopened: CursorFactory[ItemRecord] = conn.cursor(
            'SELECT name, quantity FROM items ORDER BY id', record_class=ItemRecord)
        skipped: int = unopened.forward(1)
        second: Optional[ItemRecord] = unopened.fetchrow()
        others: list[ItemRecord] = unopened.fetch(100)
        assert skipped + len(others) + (second is not None) == len(names)
    return names


def export_csv(conn: Connection) -> bytes:
    """The table as CSV, through COPY into a file object."""
    buffer = io.BytesIO()
    conn.copy_from_table('items', output=buffer, format='csv')
    return buffer.getvalue()


def on_log(connection: Connection, message: PostgresLogMessage) -> None:
    """Log-message callback: show what the server said."""
    print(f'server says: {message.message}')


def wait_for_change(conn: Connection) -> Optional[Notification]:
    """The first notification on ``items_changed`` within a second, if any."""
    for notification in conn.notifies(timeout=1.0):
        if notification.channel == 'items_changed':
            return notification
    return None


def prepare_session(conn: Connection) -> None:
    """The pool's setup callback: run at every acquire."""
    conn.execute("SET application_name = 'inventory'")


def stock_report(pool: Pool) -> list[str]:
    """Labels and totals from pooled connections, shared by several threads."""
    with pool.acquire(timeout=5) as conn:
        conn.execute(SCHEMA.replace('TEMPORARY TABLE items', 'TEMPORARY TABLE report'))
        found: list[str] = labels_or_empty(conn)
    rows: list[ItemRecord] = pool.fetch('SELECT $1::text AS name, 1 AS quantity', 'gear',
                                        record_class=ItemRecord)
    total: Optional[int] = pool.fetchval('SELECT 41 + 1')
    conn = pool.acquire()
    try:
        one: Optional[Record] = conn.fetchrow('SELECT 1 AS one')
        assert one is not None and one['one'] == 1
    finally:
        pool.release(conn)
    stats: PoolStats = pool.get_stats()
    return found + [row.label for row in rows] + [f'{total} of {stats.acquires}']


def labels_or_empty(conn: Connection) -> list[str]:
    """Labels of a session without the items table: none."""
    exists: Optional[str] = conn.fetchval("SELECT to_regclass('items')::text")
    return labels(conn) if exists else []


def main(dsn: str) -> None:
    """Run the application on one blocking connection."""
    with mypgdriver.sync.connect(dsn, command_timeout=30) as conn:
        conn.execute(SCHEMA)
        add_item(conn, 'bolt', 10)
        status: str = conn.copy_records_to_table(
            'items', records=[('nut', 5), ('washer', 0)], columns=['name', 'quantity'])
        print(status)
        try:
            add_item(conn, 'bolt', 1)
        except UniqueViolationError as error:
            print(f'duplicate refused by {error.constraint_name}')
        print(restock(conn, {'washer': 3}), labels(conn), names_in_batches(conn))
        print(export_csv(conn).decode())
        conn.add_log_listener(on_log)
        conn.execute('LISTEN items_changed')
        conn.execute("SELECT pg_notify('items_changed', 'restocked')")
        change = wait_for_change(conn)
        print('notified:', None if change is None else change.payload)
    with mypgdriver.sync.create_pool(dsn, min_size=1, max_size=4,
                                     setup=prepare_session, json=True) as pool:
        print(stock_report(pool), pool.get_size(), pool.get_idle_size())
    with mypgdriver.sync.connect(dsn, json=mypgdriver.JsonCodec()) as conn:
        print(conn.fetchval('SELECT $1::jsonb', {'a': [1]}))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'postgresql:///postgres')

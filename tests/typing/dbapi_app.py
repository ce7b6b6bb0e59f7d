"""The inventory application written against the DB-API (mypgdriver.dbapi), as psycopg code is.

Type-checked by tools/check_types.sh (mypy --strict and pyright strict, as
every file of tests/typing/); it also runs::

    python tests/typing/dbapi_app.py postgresql://user@localhost/db
"""
from __future__ import annotations

import io
import sys
from typing import Any, Optional

import mypgdriver.dbapi as dbapi
from mypgdriver.dbapi import Column, Connection, Cursor, RowMaker


def dict_row(cursor: Cursor) -> RowMaker[dict[str, Any]]:
    """Rows as dicts keyed by column name."""
    description: Optional[tuple[Column, ...]] = cursor.description
    names = [column.name for column in description or ()]

    def make(values: Any) -> dict[str, Any]:
        return dict(zip(names, values))

    return make


def add_items(conn: Connection, items: list[tuple[str, int]]) -> list[int]:
    """Insert items in one pipeline; their ids."""
    cur = conn.cursor()
    cur.executemany('INSERT INTO items (name, quantity) VALUES (%s, %s) RETURNING id', items,
                    returning=True)
    ids: list[int] = []
    while True:
        row = cur.fetchone()
        if row is not None:
            ids.append(row[0])
        if not cur.nextset():
            return ids


def main(dsn: str) -> None:
    """Run the application against `dsn`."""
    with dbapi.connect(dsn) as conn:
        conn.execute('CREATE TEMPORARY TABLE items (id serial PRIMARY KEY, name text UNIQUE, '
                     'quantity int)')
        ids = add_items(conn, [('bolt', 10), ('nut', 5)])
        try:
            with conn.transaction():
                conn.execute('INSERT INTO items (name, quantity) VALUES (%(n)s, %(q)s)',
                             {'n': 'bolt', 'q': 1})
        except dbapi.IntegrityError as e:
            print('duplicate:', e)
        cur = conn.cursor(row_factory=dict_row)
        cur.execute('SELECT * FROM items WHERE id = ANY(%s) ORDER BY id', (ids,))
        for row in cur.fetchall():
            print(row)
        count: int = cur.rowcount
        print(count, cur.statusmessage)
        with conn.cursor(name='all_items') as server:
            server.itersize = 1
            for item in server.execute('SELECT name FROM items'):
                print(item)
        out = io.BytesIO()
        conn.cursor().copy_expert('COPY items TO STDOUT', out)
        with conn.cursor().copy('COPY items (name) TO STDOUT') as copy:
            for line in copy.rows():
                print(line[0])
        conn.commit()


if __name__ == '__main__':
    main(sys.argv[1])

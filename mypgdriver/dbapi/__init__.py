"""mypgdriver.dbapi: the DB-API 2.0 (PEP 249) on mypgdriver's sync core.

>>> import mypgdriver.dbapi as pgdb
>>> with pgdb.connect('postgresql://user@localhost/db') as conn:
...     cur = conn.cursor()
...     cur.execute('SELECT * FROM t WHERE id = %s', (10,))
...     cur.fetchall()

Written for code that uses psycopg 3 or psycopg2: ``%s`` and ``%(name)s``
placeholders (bound on the server, never interpolated), transactions opened
by the first statement, ``with conn.transaction():`` blocks, server-side
cursors (``conn.cursor(name=...)``), ``cursor.copy()`` and
``copy_expert()``.  The exceptions are the PEP 249 classes, which are also
base classes of every exception of :mod:`mypgdriver` (an
``except mypgdriver.dbapi.IntegrityError`` catches the
``UniqueViolationError`` of any API).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Optional

from mypgdriver import sync
from mypgdriver._version import __version__
from mypgdriver.dbapi._connect_options import ConnectOptions
from mypgdriver.dbapi.connection import Connection, IsolationLevel, Transaction
from mypgdriver.dbapi.copy import Copy
from mypgdriver.dbapi.cursor import Cursor
from mypgdriver.dbapi.server_cursor import ServerCursor
from mypgdriver.dbapi.types import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Date,
    DateFromTicks,
    DBAPITypeObject,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
)
from mypgdriver.exceptions.pep249 import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)
from mypgdriver.rows import Column, RowFactory, RowMaker, tuple_row

if TYPE_CHECKING:
    # typing.Unpack is Python 3.11's; only type checkers read it here.
    from typing_extensions import Unpack

__all__ = [
    '__version__', 'apilevel', 'threadsafety', 'paramstyle', 'connect',
    'Connection', 'Cursor', 'ServerCursor', 'Copy', 'Column', 'Transaction', 'IsolationLevel',
    'RowFactory', 'RowMaker', 'tuple_row',
    'Warning', 'Error', 'InterfaceError', 'DatabaseError', 'DataError', 'OperationalError',
    'IntegrityError', 'InternalError', 'ProgrammingError', 'NotSupportedError',
    'DBAPITypeObject', 'STRING', 'BINARY', 'NUMBER', 'DATETIME', 'ROWID',
    'Date', 'Time', 'Timestamp', 'DateFromTicks', 'TimeFromTicks', 'TimestampFromTicks',
    'Binary',
]

#: PEP 249: the DB-API version implemented.
apilevel: Final = '2.0'
#: PEP 249: threads may share the module and connections (not cursors).
threadsafety: Final = 2
#: PEP 249: ``%(name)s`` placeholders; ``%s`` (``format``) is accepted too.
paramstyle: Final = 'pyformat'


def connect(dsn: Optional[str] = None, *, autocommit: bool = False,
            row_factory: Optional[RowFactory[Any]] = None,
            **options: Unpack[ConnectOptions]) -> Connection:
    """Open a DB-API connection to a PostgreSQL server.

    The arguments are those of :func:`mypgdriver.sync.connect` (a libpq
    DSN or URI, host, port, user, password, database, TLS, timeouts, the
    statement cache, server settings...: each of its keywords is passed on
    through `options`, which type checkers check as its parameters), plus:

    * `autocommit`: False by default (PEP 249): the first statement opens a
      transaction, which lasts until commit() or rollback().
    * `row_factory`: the rows of the connection's cursors (tuples by
      default); a callable taking the cursor and returning a function from
      a row's values to a row (psycopg 3's meaning).

    A connection that cannot be made raises :exc:`OperationalError` (the
    server's own error, such as a wrong password, keeps its class, which is
    an OperationalError too).
    """
    try:
        conn = sync.connect(dsn, **options)
    except (OSError, TimeoutError) as e:
        raise OperationalError(f'cannot connect: {e}') from e
    return Connection(conn, autocommit=autocommit, row_factory=row_factory)

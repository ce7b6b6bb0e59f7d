"""mypgdriver.sync: the blocking API, on the same protocol, codecs and policy as the asyncio one.

>>> with mypgdriver.sync.connect('postgresql://user@localhost/db') as conn:
...     conn.fetch('SELECT * FROM t WHERE id = $1', 10)

Same method names, arguments, results, exceptions and Record as
:mod:`mypgdriver`, without ``await``.
"""
from mypgdriver import exceptions
from mypgdriver.exceptions import *  # noqa: F401,F403  (the same classes as mypgdriver's)

# The same classes again from the modules that list them literally (see
# mypgdriver/__init__.py: mypy reads no "__all__ += module.__all__").
from mypgdriver.exceptions._base import *  # noqa: F401,F403
from mypgdriver.exceptions._generated import *  # noqa: F401,F403
from mypgdriver.paramstyle import named, named_many
from mypgdriver.protocol.record import Record
from mypgdriver.sync._create_pool import create_pool
from mypgdriver.sync.connect import connect
from mypgdriver.sync.connection import Connection
from mypgdriver.sync.cursor import Cursor, CursorFactory
from mypgdriver.sync.notifications import Notification
from mypgdriver.sync.pool import Pool, PoolConnectionProxy
from mypgdriver.sync.prepared import PreparedStatement
from mypgdriver.sync.transaction import Transaction

__all__ = ['connect', 'Connection', 'PreparedStatement', 'Cursor', 'CursorFactory', 'named',
           'named_many',
           'Transaction', 'Record', 'Notification', 'create_pool', 'Pool',
           'PoolConnectionProxy']
__all__ += exceptions.__all__

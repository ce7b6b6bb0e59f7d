"""mypgdriver: a PostgreSQL driver for Python; this module is its asyncio API.

Its blocking API is mypgdriver.sync, its DB-API 2.0 mypgdriver.dbapi.

>>> conn = await mypgdriver.connect('postgresql://user@localhost/db')
>>> await conn.fetch('SELECT * FROM t WHERE id = $1', 10)
"""
from . import exceptions, types
from ._version import __version__
from .connecting.connector import connect
from .connection import Connection
from .exceptions import *  # noqa: F401,F403  (asyncpg exposes its exceptions at the top too)

# The same classes again from the modules that list them literally: mypy reads
# no "__all__ += module.__all__", so through the line above it would see only
# the three names exceptions/__init__.py lists itself.
from .exceptions._base import *  # noqa: F401,F403
from .exceptions._generated import *  # noqa: F401,F403
from .paramstyle import named, named_many
from .pool import Pool, create_pool
from .protocol.record import Record
from .types import *  # noqa: F401,F403  (Range, Point, BitString ... as in asyncpg)

# Only the forms the typing spec lists for a library's interface (a literal
# list, "+= submodule.__all__"): type checkers read the exported names from
# them, and treat every name missing from __all__ as private.
__all__ = ['__version__', 'connect', 'create_pool', 'Pool', 'Record', 'Connection',
           'named', 'named_many']
__all__ += types.__all__
__all__ += exceptions.__all__

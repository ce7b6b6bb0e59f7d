"""asyncpg's ``asyncpg.pgproto`` import path, for code that names it.

Some libraries written for asyncpg import ``asyncpg.pgproto.pgproto.UUID``
(to recognise UUID values) at import time; with ``mypgdriver`` in place of
``asyncpg`` the same import works.  Only that name is provided.
"""

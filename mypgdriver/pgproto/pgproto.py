"""``UUID``, at the path asyncpg's ``asyncpg.pgproto.pgproto`` has it.

mypgdriver decodes ``uuid`` values to :class:`uuid.UUID` itself (asyncpg has
a faster subclass of it), so ``isinstance(value, UUID)`` holds for every
decoded UUID, and ``UUID('...')`` makes one.
"""
from __future__ import annotations

from uuid import UUID

__all__ = ('UUID',)

"""Which shortcut calls (pool.fetch() ...) may share a connection with others.

Each shortcut runs one statement outside any transaction, so the pool lends
one connection to several of them at once and pipelines their statements
(see Pool._shortcut).  That is safe only for statements that leave the
session as they found it, and only for the Connection methods whose
behaviour the pool knows and which send one operation among the others.
executemany and COPY stream with the connection held alone (Admission.hold()):
they never share one, they take a connection of their own.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, Type

from mypgdriver.connection import Connection
from mypgdriver.pool.slots import PooledConnection

__all__ = ('SHORTCUT_METHODS', 'may_share', 'overridden_shortcuts', 'shared_load')

#: The methods behind the pool's shareable shortcuts (Pool.execute, ...).  Not
#: executemany: on a shared connection it must wait until the others' pipeline
#: has drained, and every call lent after it waits behind its stream; calls
#: waiting for that turn among pipelined callers hung for ever (issue 22).  On
#: a connection of its own it streams at once, as in asyncpg.
SHORTCUT_METHODS = ('execute', 'fetch', 'fetchrow', 'fetchval')

# Statements after which a connection could not be shared by other shortcut
# calls: they open a transaction, change settings or session state, take a
# session-level lock, or start COPY.  Matched as whole words anywhere, in
# strings and comments too (a false match only costs the sharing; a missed
# one would let a statement change the session under other callers).
_SESSION_WORDS = re.compile(
    r'\b(begin|start|commit|rollback|abort|end|savepoint|set|reset|set_config|listen|unlisten|'
    r'notify|prepare|deallocate|declare|discard|lock|copy|temp|temporary|do|call|'
    r'pg_advisory_lock|pg_advisory_lock_shared|pg_try_advisory_lock|'
    r'pg_try_advisory_lock_shared|pg_advisory_unlock|pg_advisory_unlock_shared|'
    r'pg_advisory_unlock_all|dblink_connect)\b', re.IGNORECASE).search

# UPDATE ... SET is the one common use of a listed word that is harmless.
_UPDATE_SET = re.compile(r'\b(update\b[^;]*?)\bset\b', re.IGNORECASE)

_shareable_cache: Dict[str, bool] = {}


def may_share(query: str) -> bool:
    """True if `query` may run on a connection shared with other shortcut calls."""
    if not isinstance(query, str):
        return False
    shareable = _shareable_cache.get(query)
    if shareable is None:
        text = _UPDATE_SET.sub(' ', query)
        shareable = _SESSION_WORDS(text) is None
        if len(_shareable_cache) >= 1024:
            _shareable_cache.clear()
        _shareable_cache[query] = shareable
    return shareable


def overridden_shortcuts(connection_class: Type[Connection]) -> FrozenSet[str]:
    """The shortcut methods that `connection_class` defines differently from Connection."""
    return frozenset(name for name in SHORTCUT_METHODS
                     if getattr(connection_class, name) is not getattr(Connection, name))


def shared_load(entry: PooledConnection) -> int:
    """How busy a lent connection is: the shortcut calls running on it."""
    return entry.shared_calls

"""The per-connection LRU cache of prepared statements."""
from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from mypgdriver.protocol.statement import StatementState


class StatementCache:
    """Maps query text to its prepared StatementState, least recently used first out.

    Statements that fall out (size limit, age limit, clear()) are handed to
    `on_remove`, which arranges for them to be closed on the server.
    """

    __slots__ = ('_entries', '_max_size', '_max_lifetime', '_on_remove')

    def __init__(self, *, max_size: int, max_lifetime: float,
                 on_remove: Callable[[StatementState], None]) -> None:
        self._entries: collections.OrderedDict[str, StatementState] = collections.OrderedDict()
        self._max_size = max_size
        self._max_lifetime = max_lifetime
        self._on_remove = on_remove

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def max_size(self) -> int:
        return self._max_size

    def get(self, query: str) -> Optional[StatementState]:
        entries = self._entries
        state = entries.get(query)
        if state is None:
            return None
        if self._max_lifetime and time.monotonic() - state.created_at > self._max_lifetime:
            del entries[query]
            self._on_remove(state)
            return None
        entries.move_to_end(query)
        return state

    def put(self, query: str, state: StatementState) -> None:
        if self._max_size <= 0:
            return
        state.created_at = time.monotonic()
        entries = self._entries
        old = entries.pop(query, None)
        if old is not None and old is not state:
            self._on_remove(old)
        entries[query] = state
        while len(entries) > self._max_size:
            _, evicted = entries.popitem(last=False)
            self._on_remove(evicted)

    def discard(self, query: str, state: Optional[StatementState] = None) -> None:
        """Remove the entry of `query` (only if it is `state`, when given)."""
        entries = self._entries
        current = entries.get(query)
        if current is None or (state is not None and current is not state):
            return
        del entries[query]
        self._on_remove(current)

    def clear(self) -> None:
        entries = list(self._entries.values())
        self._entries.clear()
        for state in entries:
            self._on_remove(state)

    def states(self) -> list[StatementState]:
        return list(self._entries.values())

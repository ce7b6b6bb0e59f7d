"""The statement registry: which prepared statements of a connection exist, who owns them, when they close.

One owner for the server-side statements of a session:

* the statement cache (query text to StatementState, LRU with an age limit)
  owns the statements it holds;
* a PreparedStatement or cursor adds a reference (StatementState.refs); a
  statement that leaves the cache while referenced is *held* and closed on
  the server when its last reference goes;
* a statement nobody references any more is queued for Close, sent ahead
  of the next operation (Session's admission step takes the queue);
* statements the server dropped behind our back (DISCARD ALL, DEALLOCATE,
  a failed first Parse) are marked closed; the held ones are *dropped* and
  prepared again before their next use.

It sends nothing itself: it says what must be closed, and the caller
sends it in its turn.
"""
from __future__ import annotations

import itertools
import secrets
from typing import TYPE_CHECKING, Optional

from mypgdriver import exceptions
from mypgdriver.core.statement_cache import StatementCache

if TYPE_CHECKING:
    from mypgdriver.protocol.statement import StatementState

#: How the names of the statements the driver generates begin.
STATEMENT_PREFIX = '__mypg_'

#: Part of every generated statement name: random per process.  Connection
#: numbers restart in every process, and a pooler that passes statement names
#: through unchanged (pgbouncer without max_prepared_statements, older
#: poolers) lets several processes share a server connection: with equal
#: names, one process's Bind could run another's statement with its
#: arguments.  With this token it gets "does not exist" instead.
PROCESS_TOKEN = secrets.token_hex(4)


class StatementRegistry:
    """The prepared statements of one connection: cached, held, dropped and to be closed."""

    __slots__ = ('cache', 'to_close', 'held', 'dropped', 'conn_id', 'max_cacheable_size',
                 '_ids')

    def __init__(self, conn_id: int, *, cache_size: int, max_lifetime: float,
                 max_cacheable_size: int) -> None:
        self.cache = StatementCache(max_size=cache_size, max_lifetime=max_lifetime,
                                    on_remove=self._on_removed)
        #: Names of statements to close on the server before the next operation
        #: (always this list, emptied in place: the Session's hot paths read it).
        self.to_close: list[str] = []
        #: Named statements that no cache owns, kept alive by PreparedStatement
        #: and cursor references (StatementState.refs); closed when refs drop to 0.
        self.held: set[StatementState] = set()
        #: Held statements the server dropped (see forget_server_statements):
        #: prepared again before their next use.
        self.dropped: set[StatementState] = set()
        self.conn_id = conn_id
        self.max_cacheable_size = max_cacheable_size
        self._ids = itertools.count(1)

    def is_cacheable(self, query: str) -> bool:
        """True if a statement of `query` goes into the cache (cache on, query not too long)."""
        limit = self.max_cacheable_size
        return self.cache.max_size > 0 and (not limit or len(query) <= limit)

    def new_name(self) -> str:
        """A statement name of the driver's own, unique in this process and connection."""
        return f'{STATEMENT_PREFIX}{PROCESS_TOKEN}_{self.conn_id}_{next(self._ids)}__'

    # --- references ---------------------------------------------------------------------------

    def attach(self, state: StatementState) -> None:
        """A PreparedStatement or cursor uses `state`: it stays open while referenced."""
        state.refs += 1

    def hold(self, state: StatementState) -> None:
        """Keep a statement no cache owns (a named or re-prepared one) until unreferenced."""
        self.held.add(state)

    def detach(self, state: StatementState) -> None:
        """A reference to `state` went; the last one of a held statement queues its Close."""
        state.refs -= 1
        if state.refs <= 0 and state in self.held:
            self.held.discard(state)
            self.dropped.discard(state)
            self.queue_close(state)

    def is_dropped(self, state: StatementState) -> bool:
        """True if the server dropped `state` while a PreparedStatement or cursor held it."""
        return state in self.dropped

    # --- closing ---------------------------------------------------------------------------------

    def queue_close(self, state: StatementState) -> None:
        """Mark `state` closed; a named one is closed on the server before the next operation."""
        if state.name and not state.closed:
            state.closed = True
            self.to_close.append(state.name)

    def take_closes(self) -> list[str]:
        """The names queued for Close, handed to the caller that sends them (queue emptied)."""
        names = self.to_close[:]
        self.to_close.clear()
        return names

    def _on_removed(self, state: StatementState) -> None:
        # The cache let `state` go (evicted, expired, cleared).
        if state.refs > 0:
            self.held.add(state)
        else:
            self.queue_close(state)

    # --- what the server did ------------------------------------------------------------------

    def forget_server_statements(self) -> None:
        """The server dropped every prepared statement of the session (DISCARD ALL, DEALLOCATE).

        Called by the protocol when such a command completes, wherever it
        came from (the user, a pool's reset, a multi-statement query).  The
        cache is emptied without sending Close (there is nothing left to
        close), and statements held by PreparedStatement objects are prepared
        again before their next use.  A DEALLOCATE run inside a function,
        where no command tag reaches us, is not seen: the next use of a
        cached statement then gets SQLSTATE 26000 and the retry policy
        (Session.may_retry_after) takes over, except through a pooler that
        closes the connection instead (see docs/guide/poolers.rst).
        """
        in_use = [state for state in self.held if not state.closed]
        for state in self.cache.states():
            if state.refs > 0:
                in_use.append(state)
            state.closed = True
        self.cache.clear()
        for state in in_use:
            state.closed = True
            self.dropped.add(state)
        self.to_close.clear()

    def statement_unusable(self, state: StatementState, error: BaseException) -> None:
        """The Parse carried in front of `state`'s first Bind did not create `state` (the protocol's call).

        Either the Parse failed (in an aborted transaction, the schema
        changed since the statement was described, or the name is taken),
        or it created a statement whose result types differ from the ones
        `state` was described with.  The state leaves the cache, and a
        PreparedStatement or cursor holding it prepares it again at its next
        run, as after DISCARD ALL.  Its Close goes out, unless the name
        belongs to someone else (42P05): a statement of that name may exist,
        and a pooler that tracks statements (pgbouncer 1.21+) registered the
        name at the Parse, failed or not, and would close the connection on
        a second Parse of it.
        """
        if state.closed:
            return
        if isinstance(error, exceptions.DuplicatePreparedStatementError):
            state.closed = True
        else:
            self.queue_close(state)
        self.cache.discard(state.query, state)
        if state.refs > 0:
            self.held.add(state)
            self.dropped.add(state)

    def cached(self, query: str) -> Optional[StatementState]:
        """The cache's open statement of `query`, if any (None for a closed one too)."""
        state = self.cache.get(query)
        return None if state is None or state.closed else state

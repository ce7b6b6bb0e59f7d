# cython: language_level=3
"""The per-connection LRU cache of prepared statements.

Compiled: get() is on the hot path of every cached call (the asyncio
Session's execute() and the sync driver's compiled call path), where a
Python method and its ``time.monotonic()`` call cost some 2,500
instructions per query.
"""
import collections

from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject

from mypgdriver.protocol.statement cimport StatementState

cdef extern from *:
    """
    #include <time.h>
    static double mpg_cache_clock(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
    """
    double mpg_cache_clock() nogil

__all__ = ('StatementCache', 'use_clock')

# The clock of the ages (None: CLOCK_MONOTONIC read in C, time.monotonic()'s).
cdef object _clock = None


def use_clock(clock):
    """Read ages on `clock` (a function returning seconds; None: the monotonic clock).

    For tests, whose clock must not move on its own.
    """
    global _clock
    _clock = clock


cdef inline double _now() except? -1.0:
    if _clock is None:
        return mpg_cache_clock()
    return _clock()


cdef class StatementCache:
    """Maps query text to its prepared StatementState, least recently used first out.

    Statements that fall out (size limit, age limit, clear()) are handed to
    `on_remove`, which arranges for them to be closed on the server.  Ages
    are on the monotonic clock (``time.monotonic()``'s, read in C).
    """

    # query -> StatementState, in order of use.  An OrderedDict is a dict
    # underneath: looked up with PyDict_GetItem, no method call.
    cdef object _entries
    cdef int _max_size
    cdef double _max_lifetime
    cdef object _on_remove

    def __init__(self, *, max_size, max_lifetime, on_remove):
        self._entries = collections.OrderedDict()
        self._max_size = max_size
        self._max_lifetime = max_lifetime or 0.0
        self._on_remove = on_remove

    def __len__(self):
        return len(self._entries)

    @property
    def max_size(self):
        return self._max_size

    cpdef object get(self, str query):
        """The statement of `query` (now the most recently used), or None (absent, or too old)."""
        cdef PyObject *found = PyDict_GetItem(self._entries, query)
        if found == NULL:
            return None
        cdef StatementState state = <StatementState>found
        if self._max_lifetime and _now() - state.created_at > self._max_lifetime:
            del self._entries[query]
            self._on_remove(state)
            return None
        self._entries.move_to_end(query)
        return state

    def put(self, str query, state):
        if self._max_size <= 0:
            return
        state.created_at = _now()
        entries = self._entries
        old = entries.pop(query, None)
        if old is not None and old is not state:
            self._on_remove(old)
        entries[query] = state
        while len(entries) > self._max_size:
            _, evicted = entries.popitem(last=False)
            self._on_remove(evicted)

    def discard(self, str query, state=None):
        """Remove the entry of `query` (only if it is `state`, when given)."""
        current = self._entries.get(query)
        if current is None or (state is not None and current is not state):
            return
        del self._entries[query]
        self._on_remove(current)

    def clear(self):
        states = list(self._entries.values())
        self._entries.clear()
        for state in states:
            self._on_remove(state)

    def states(self):
        return list(self._entries.values())

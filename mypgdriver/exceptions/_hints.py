"""Client hints for the placeholder mistakes of code written for other drivers.

PostgreSQL numbers query parameters (``$1``, ``$2``, ...) and matches a
value against a list with ``= ANY($1)``.  Code written for psycopg or the
DB-API (``%s``, ``%(name)s``), or for drivers that expand ``IN %s`` into a
list of values, meets a syntax error or an argument that cannot be encoded,
and the server's message alone ("syntax error at or near "%"") does not say
why.  These functions recognise those cases from the query text and the
error's position; they run only on the error path.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from ._base import PostgresMessage

#: For a syntax error at a psycopg-style placeholder.
PLACEHOLDER_HINT = (
    'mypgdriver sends the query to PostgreSQL as it is, and PostgreSQL numbers its '
    'parameters: write $1, $2, ... instead of %s or %(name)s, and pass the values as '
    "separate arguments, e.g. conn.fetch('SELECT * FROM t WHERE id = $1', id).")

#: For ``IN $1`` (a syntax error) and ``IN ($1)`` given a list.
ANY_HINT = (
    'IN compares with a parenthesised list of separate values. To match any element '
    'of a list, use = ANY($1) with a list: write = ANY($1) and pass the list as one '
    "argument, e.g. conn.fetch('SELECT * FROM t WHERE id = ANY($1)', [1, 2, 3]).")

# %s, %(name)s: the pyformat and format paramstyles of the DB-API.
_PYFORMAT = re.compile(r'%(?:\([^()]*\))?s')
_NUMBERED_PARAMETER = re.compile(r'\$\d+')
# IN right before the error's position (searched with endpos: "$" is there).
_ENDS_WITH_IN = re.compile(r'\bIN\s*$', re.IGNORECASE)
_IN_ONE_PARAMETER = re.compile(r'\bIN\s*\(\s*\$(\d+)\s*\)', re.IGNORECASE)


def syntax_error_hint(query: Optional[str], position: Optional[str]) -> Optional[str]:
    """Our hint for a syntax error (42601) at `position` of `query`, or None.

    `position` is the server's 1-based character offset (a string).  The
    hint is given only when the error points at a ``%s``/``%(name)s``
    placeholder or at a ``$n`` right after ``IN``: a query that is wrong for
    another reason gets none, even if it has a ``%s`` elsewhere (in a string
    literal, where the server never points).
    """
    if not query or not position:
        return None
    try:
        index = int(position) - 1
    except ValueError:
        return None
    if not 0 <= index < len(query):
        return None
    for match in _PYFORMAT.finditer(query):
        if match.start() <= index < match.end():
            return PLACEHOLDER_HINT
    if _NUMBERED_PARAMETER.match(query, index) and _ENDS_WITH_IN.search(query, 0, index):
        return ANY_HINT
    return None


def in_list_hint(query: str, args: Sequence[Any]) -> Optional[str]:
    """Our hint for an argument refused by its codec, when it is a list given to ``IN ($n)``."""
    for match in _IN_ONE_PARAMETER.finditer(query):
        number = int(match.group(1))
        if 1 <= number <= len(args) and isinstance(
                args[number - 1], (list, tuple, set, frozenset)):
            return ANY_HINT
    return None


def append_hint(error: PostgresMessage, text: Optional[str]) -> None:
    """Add `text` (if any) to `error`'s hint, after the server's own hint."""
    if not text:
        return
    # Server errors are filled through __dict__ (see PostgresMessage._fill).
    hint = error.hint
    error.__dict__['hint'] = f'{hint}\n{text}' if hint else text

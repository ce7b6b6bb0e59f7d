"""SQL text: quoting identifiers and literals, and the little lexing the driver needs.

The driver never parses SQL; it only has to tell code from the parts of a
query that are not code (PostgreSQL docs, "Lexical Structure"): string
constants (plain, ``E''``, dollar-quoted), quoted identifiers and comments.
:func:`skip_non_code` knows those, once, and everything that reads query
text goes through it:

* :func:`substitute_parameters` replaces ``$n`` references with literals
  (COPY (query) TO STDOUT cannot take parameters);
* :func:`is_plain_read` looks at the first keyword (whether a statement may
  be repeated after a schema change).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from mypgdriver import exceptions

__all__ = ('quote_ident', 'quote_literal', 'skip_non_code', 'substitute_parameters',
           'first_keyword', 'is_plain_read')


# --- quoting ----------------------------------------------------------------------------

def quote_ident(name: str) -> str:
    """Quote `name` as an SQL identifier: exact case, embedded quotes doubled."""
    if not isinstance(name, str):
        raise TypeError(f'an identifier must be a str, not {type(name).__name__}')
    if not name:
        raise ValueError('an identifier cannot be empty')
    if '\x00' in name:
        raise ValueError('an identifier cannot contain NUL characters')
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """Quote `value` as an SQL string literal.

    A value with backslashes uses the E'' form with the backslashes doubled,
    which means the same whatever standard_conforming_strings is set to (as
    PostgreSQL's own quote_literal() does).
    """
    if not isinstance(value, str):
        raise TypeError(f'expected a str, not {type(value).__name__}')
    if '\x00' in value:
        raise ValueError('a string literal cannot contain NUL characters')
    quoted = value.replace("'", "''")
    if '\\' in quoted:
        return "E'" + quoted.replace('\\', '\\\\') + "'"
    return "'" + quoted + "'"


# --- lexing -----------------------------------------------------------------------------

def _is_ident_start(ch: str) -> bool:
    return ch.isalpha() or ch == '_' or ch >= '\x80'


def _is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in '_$' or ch >= '\x80'


def _dollar_quote_tag(query: str, i: int) -> Optional[str]:
    """The ``$tag$`` opening a dollar-quoted string at `i`, or None."""
    j = i + 1
    n = len(query)
    if j < n and query[j] == '$':
        return '$$'
    if j < n and _is_ident_start(query[j]):
        j += 1
        while j < n and (_is_ident_char(query[j]) and query[j] != '$'):
            j += 1
        if j < n and query[j] == '$':
            return query[i:j + 1]
    return None


def _skip_string(query: str, i: int, standard_conforming_strings: bool) -> int:
    # A backslash escapes the next character in E'...', and in '...' too
    # when standard_conforming_strings is off.  The E must be a word of its
    # own: in name'...' (not valid SQL anyway) it is part of the name.
    n = len(query)
    escapes = not standard_conforming_strings or (
        i > 0 and query[i - 1] in 'eE' and (i < 2 or not _is_ident_char(query[i - 2])))
    i += 1
    while i < n:
        c = query[i]
        if c == '\\' and escapes:
            i += 2
        elif c == "'":
            if i + 1 < n and query[i + 1] == "'":
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return n


def _skip_quoted_identifier(query: str, i: int) -> int:
    n = len(query)
    end = query.find('"', i + 1)
    while end != -1 and end + 1 < n and query[end + 1] == '"':
        end = query.find('"', end + 2)
    return n if end == -1 else end + 1


def _skip_comment(query: str, i: int) -> int:
    """Past the comment starting at `i` (`i` itself if none does); block comments nest."""
    if query.startswith('--', i):
        end = query.find('\n', i)
        return len(query) if end == -1 else end + 1
    if query.startswith('/*', i):
        n = len(query)
        depth = 1
        i += 2
        while i < n and depth:
            if query.startswith('/*', i):
                depth += 1
                i += 2
            elif query.startswith('*/', i):
                depth -= 1
                i += 2
            else:
                i += 1
        return i
    return i


def skip_non_code(query: str, i: int, standard_conforming_strings: bool = True) -> int:
    """The index just past the string, quoted identifier or comment starting at `i`.

    Returns `i` itself when none starts there, and ``len(query)`` when one
    is not terminated.  `standard_conforming_strings` is the server setting:
    off, a backslash escapes a quote in a plain ``'...'`` string too.
    """
    ch = query[i]
    if ch == "'":
        return _skip_string(query, i, standard_conforming_strings)
    if ch == '"':
        return _skip_quoted_identifier(query, i)
    if ch == '-' or ch == '/':
        return _skip_comment(query, i)
    if ch == '$':
        tag = _dollar_quote_tag(query, i)
        if tag is not None:
            end = query.find(tag, i + len(tag))
            return len(query) if end == -1 else end + len(tag)
    return i


def substitute_parameters(query: str, values: Sequence[str],
                          standard_conforming_strings: bool = True) -> str:
    """Replace each ``$n`` of `query` with ``values[n - 1]`` (SQL text).

    Only real parameter references are replaced: ``$1`` inside string
    literals (plain, E'', dollar-quoted), quoted identifiers, comments, or
    as part of an identifier such as ``a$1`` stays as it is.
    """
    out = []
    n = len(query)
    i = 0
    start = 0      # query[start:i] is copied unchanged
    while i < n:
        ch = query[i]
        if ch == '$':
            j = i + 1
            while j < n and query[j].isdigit() and query[j].isascii():
                j += 1
            if j > i + 1:
                number = int(query[i + 1:j])
                if not 1 <= number <= len(values):
                    raise exceptions.InterfaceError(
                        f'the query refers to ${number}, but {len(values)} '
                        f'argument{"s were" if len(values) != 1 else " was"} given')
                out.append(query[start:i])
                out.append(values[number - 1])
                start = i = j
                continue
        end = skip_non_code(query, i, standard_conforming_strings)
        if end != i:
            i = end
        elif _is_ident_start(ch):
            # Identifiers may contain '$' (a$1 is one name, not a parameter).
            i += 1
            while i < n and _is_ident_char(query[i]):
                i += 1
        elif ch.isdigit():
            i += 1
            while i < n and (query[i].isalnum() or query[i] in '._'):
                i += 1
        else:
            i += 1
    out.append(query[start:])
    return ''.join(out)


_WORD = re.compile(r'[A-Za-z]+')


def first_keyword(query: str) -> str:
    """The first word of `query` in lower case ('' if none).

    White space, comments and opening parentheses before it are skipped, so
    ``/* why */ (SELECT ...)`` gives ``'select'``.
    """
    i = 0
    n = len(query)
    while i < n:
        ch = query[i]
        if ch.isspace() or ch == '(':
            i += 1
            continue
        end = _skip_comment(query, i)
        if end == i:
            break
        i = end
    word = _WORD.match(query, i)
    return '' if word is None else word.group().lower()


_READ_KEYWORDS = frozenset(('select', 'values', 'table', 'show'))


def is_plain_read(query: str) -> bool:
    """True if `query` starts like a read (SELECT, VALUES, TABLE, SHOW), comments skipped."""
    return first_keyword(query) in _READ_KEYWORDS

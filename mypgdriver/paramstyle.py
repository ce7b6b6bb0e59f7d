"""Query parameters written as ``%s``, ``%(name)s`` or ``:name``, turned into PostgreSQL's ``$n``.

PostgreSQL numbers the parameters of a statement (``$1``, ``$2``...).  Code
written for the DB-API uses the ``format`` (``%s``) and ``pyformat``
(``%(name)s``) styles, SQLAlchemy's ``text()`` and many tools the ``named``
style (``:name``).  This module rewrites such a query into ``$n`` form once,
and says how to turn the caller's parameters into the ``$n`` argument tuple.
The values are always sent separately and bound on the server: nothing is
ever interpolated into the SQL text.

>>> q = convert('SELECT * FROM t WHERE a = %(a)s AND b > %(a)s', PYFORMAT)
>>> q.text, q.arguments({'a': 1, 'other': 2})
('SELECT * FROM t WHERE a = $1 AND b > $1', (1,))

The conversion is cached (a bounded dict per style, keyed by the text), so a
query run again costs one dictionary lookup.

The placeholders are recognised only in SQL code: string constants (also
``E''`` and dollar-quoted), quoted identifiers and comments are skipped by the
driver's one lexer (:func:`mypgdriver.sql.skip_non_code`).

``format``/``pyformat`` (the DB-API's; one style here, a query uses either
kind but not both):

* ``%s`` is the next value of a sequence, ``%(name)s`` the value of `name` in
  a mapping (the same name used twice is one ``$n``); psycopg 3's ``%b`` and
  ``%t`` (binary, text) are accepted as ``%s`` (the driver picks the format);
* ``%%`` is a percent sign, also inside string constants (as in psycopg,
  whose users escape every percent sign of a query that has parameters);
  any other ``%`` in SQL code is an error (as in psycopg), while a single
  ``%`` or a ``%s`` inside a string constant, quoted identifier or comment
  is left as it is (psycopg would take it for a placeholder).

``named``: ``:name`` is the value of `name`; ``::`` is a cast and ``x[1:2]``
or ``x[lo:hi]`` a slice, not a parameter; ``%`` has no special meaning.

Errors are :exc:`~mypgdriver.exceptions.QueryParameterError`, which is a
DB-API ``ProgrammingError`` and mypgdriver's ``InterfaceError``: a missing
name, a wrong number of values, a sequence for named placeholders or a
mapping for positional ones, a stray ``%``, ``%s`` mixed with
``%(name)s``, and ``IN %s`` (psycopg2 expanded a tuple there on the client;
PostgreSQL's form is ``= ANY(%s)`` with a list).  Names of a mapping that
the query does not use are ignored, as psycopg and psycopg2 do (code passes
``locals()`` or a row dict); :meth:`ConvertedQuery.arguments` refuses them
when asked to (``allow_unused=False``).
"""
from __future__ import annotations

import re
import threading
from typing import Any, Final, Iterable, Iterator, Mapping, Optional, Sequence

from mypgdriver.exceptions import QueryParameterError
from mypgdriver.query_arguments import ConvertedQuery
from mypgdriver.sql import first_keyword, skip_non_code

__all__ = ('FORMAT', 'PYFORMAT', 'NAMED', 'ConvertedQuery', 'convert', 'named', 'named_many',
           'utility_statement_hint', 'CACHE_SIZE')

#: ``%s`` / ``%(name)s`` (also ``%b``, ``%t``); the DB-API's ``format`` and ``pyformat``.
PYFORMAT: Final = 'pyformat'
#: The same style as :data:`PYFORMAT` (a query may use either kind of placeholder).
FORMAT: Final = 'format'
#: ``:name``.
NAMED: Final = 'named'

#: How many converted queries each style keeps (the oldest is dropped first).
CACHE_SIZE: Final = 512

ANY_INSTEAD_OF_IN = (
    'PostgreSQL does not expand a tuple into a list of values (psycopg2 did that on the '
    'client). Write "= ANY(%s)" and pass the values as one list, e.g. '
    "cur.execute('SELECT * FROM t WHERE id = ANY(%s)', ([1, 2, 3],)); "
    "'NOT IN %s' becomes '<> ALL(%s)'.")

UTILITY_STATEMENT_HINT = (
    'PostgreSQL accepts parameters only in SELECT, INSERT, UPDATE, DELETE, MERGE and '
    'VALUES (and in EXPLAIN, DECLARE and CREATE TABLE AS of those): SET, SHOW, DDL and '
    "other utility statements take none. For a setting, run "
    "\"SELECT set_config('name', %s, false)\" with the value as its parameter (true: for "
    'the current transaction only). For a name or a constant in DDL, build the text '
    'with mypgdriver.sql.quote_ident() and mypgdriver.sql.quote_literal().')

# Statements whose parameters the server binds (see UTILITY_STATEMENT_HINT).
_TAKES_PARAMETERS = frozenset(('select', 'insert', 'update', 'delete', 'merge', 'values',
                               'with', 'table', 'explain', 'declare', 'call', 'do'))

# Where the lexer must look: a possible placeholder, or the start of
# something that is not code; a word or a number is passed over whole
# (identifiers may contain '$': a$1 is one name).
_FORMAT_STOP = re.compile(r"""[^\W\d][\w$]*|\d[\w.]*|[%'"$/-]""")
_NAMED_STOP = re.compile(r"""[^\W\d][\w$]*|\d[\w.]*|[:'"$/-]""")
_NAME = re.compile(r'[^\W\d]\w*')
_PYFORMAT_NAME = re.compile(r'\(([^()]*)\)([sbt])')
_DOLLAR_PARAMETER = re.compile(r'\$\d+')
# IN right before a placeholder (at the end of the text searched).
_ENDS_WITH_IN = re.compile(r'(?<![\w$])in\s*$', re.IGNORECASE)


# --- conversion ---------------------------------------------------------------------------

_caches: dict[str, dict[str, ConvertedQuery]] = {PYFORMAT: {}, NAMED: {}}
#: convert()'s pyformat conversions by query text (standard_conforming_strings on):
#: the DB-API cursor's compiled execute() reads it in place, a miss calls convert().
PYFORMAT_CONVERSIONS: Final[dict[str, ConvertedQuery]] = _caches[PYFORMAT]
_cache_lock = threading.Lock()


def convert(query: str, style: str = PYFORMAT,
            standard_conforming_strings: bool = True) -> ConvertedQuery:
    """`query` with its `style` placeholders rewritten as ``$n`` (cached).

    `style` is :data:`PYFORMAT` (or :data:`FORMAT`, the same) or
    :data:`NAMED`.  `standard_conforming_strings` is the server setting (on
    since PostgreSQL 9.1); off, a backslash escapes a quote in ``'...'``.
    Raises :exc:`~mypgdriver.exceptions.QueryParameterError` for a query
    whose placeholders are wrong whatever the values.
    """
    if style == FORMAT:
        style = PYFORMAT
    try:
        cache = _caches[style]
    except KeyError:
        raise ValueError(f'unknown parameter style {style!r}: expected {PYFORMAT!r}, '
                         f'{FORMAT!r} or {NAMED!r}') from None
    key = query if standard_conforming_strings else '\x00' + query
    converted = cache.get(key)
    if converted is None:
        if style == PYFORMAT:
            converted = _convert_pyformat(query, standard_conforming_strings)
        else:
            converted = _convert_named(query, standard_conforming_strings)
        # Threads share the caches (mypgdriver.sync, the DB-API): the
        # eviction iterates the dict, which another thread's insertion
        # would break.  Only a miss takes the lock.
        with _cache_lock:
            if len(cache) >= CACHE_SIZE:
                del cache[next(iter(cache))]
            cache[key] = converted
    return converted


def named(query: str, params: Optional[Mapping[str, Any]] = None, /,
          **values: Any) -> tuple[Any, ...]:
    """`query` written with ``:name`` placeholders, as ``(text, *values)`` for the asyncpg-style API.

    An opt-in for named parameters that leaves every method as it is: unpack
    the result into the call, which then gets ``$n`` text and positional
    values (the conversion is done once per query text and cached)::

        rows = await conn.fetch(*named('SELECT * FROM t WHERE a = :a AND b > :a', a=1))
        row = conn.fetchrow(*named('SELECT * FROM t WHERE id = :id', {'id': 5}), timeout=2)

    The values come from `params` (a mapping) or from keyword arguments.
    ``::`` is a cast and ``x[1:2]`` a slice, not placeholders; string
    constants, quoted identifiers and comments are left alone.  A name the
    query uses and that has no value, a value the query does not use, and
    ``$n`` mixed with ``:name`` raise
    :exc:`~mypgdriver.exceptions.QueryParameterError`.
    """
    if params is None:
        params = values
    elif values:
        raise TypeError('named() takes the values as one mapping or as keyword arguments, '
                        'not both')
    converted = convert(query, NAMED)
    return (converted.text, *converted.arguments(params, allow_unused=False))


def named_many(query: str, rows: Iterable[Mapping[str, Any]]) -> tuple[str, Iterator[Sequence[Any]]]:
    """`query` with ``:name`` placeholders and one mapping per run, for executemany()/fetchmany().

    ``await conn.executemany(*named_many('INSERT INTO t VALUES (:id, :name)', rows))``.
    The rows are read as the pipeline sends them (an iterator is not read
    ahead); errors as in :func:`named`, raised for the first row that has
    one (executemany() is atomic: nothing is applied).
    """
    converted = convert(query, NAMED)
    arguments = converted.arguments
    return converted.text, (arguments(row, allow_unused=False) for row in rows)


def _check_no_dollar_parameters(query: str, scs: bool) -> None:
    # $n of the query itself would be numbered like ours: refuse the mix.
    i, n = 0, len(query)
    while i < n:
        end = skip_non_code(query, i, scs)
        if end != i:
            i = end
            continue
        if query[i] == '$' and _DOLLAR_PARAMETER.match(query, i) and (
                i == 0 or not (query[i - 1].isalnum() or query[i - 1] in '_$')):
            raise QueryParameterError(
                'the query mixes $n parameters with %s or :name placeholders: use one kind')
        i += 1


def _convert_pyformat(query: str, scs: bool) -> ConvertedQuery:
    out: list[str] = []
    names: dict[str, int] = {}
    positional = 0
    start = 0           # query[start:i] is copied as it is
    i = 0
    n = len(query)
    search = _FORMAT_STOP.search
    while True:
        m = search(query, i)
        if m is None:
            break
        i = m.start()
        ch = query[i]
        if ch != '%':
            if m.end() - i > 1 or ch.isalnum() or ch == '_':
                i = m.end()                 # a word or a number
                continue
            end = skip_non_code(query, i, scs)
            if end == i:
                i += 1
                continue
            if '%%' in query[i:end]:
                # psycopg code escapes every percent sign when it passes
                # parameters, in string constants too: '100%%' means '100%'.
                out.append(query[start:i])
                out.append(query[i:end].replace('%%', '%'))
                start = end
            i = end
            continue
        # A placeholder, or %%.
        nxt = query[i + 1] if i + 1 < n else ''
        if nxt == '%':
            out.append(query[start:i + 1])
            start = i = i + 2
            continue
        if nxt in ('s', 'b', 't'):
            if names:
                raise _mixed()
            _check_not_after_in(query, i)
            positional += 1
            out.append(query[start:i])
            out.append(f'${positional}')
            start = i = i + 2
            continue
        if nxt == '(':
            named = _PYFORMAT_NAME.match(query, i + 1)
            if named is None:
                raise QueryParameterError(
                    f'incomplete placeholder at character {i + 1}: {query[i:i + 20]!r}; '
                    f'write %(name)s, with a name and no parentheses in it')
            if positional:
                raise _mixed()
            _check_not_after_in(query, i)
            name = named.group(1)
            number = names.get(name)
            if number is None:
                number = names[name] = len(names) + 1
            out.append(query[start:i])
            out.append(f'${number}')
            start = i = named.end()
            continue
        shown = query[i:i + 2] if nxt else '%'
        raise QueryParameterError(
            f'unexpected {shown!r} at character {i + 1} of the query: the placeholders are '
            f'%s and %(name)s (also %b, %t), and a literal percent sign is written %%')
    if not out:
        return ConvertedQuery(query, None, 0)
    out.append(query[start:])
    if positional or names:
        _check_no_dollar_parameters(query, scs)
    text = ''.join(out)
    if names:
        return ConvertedQuery(text, tuple(names), len(names))
    return ConvertedQuery(text, None, positional)


def _convert_named(query: str, scs: bool) -> ConvertedQuery:
    out: list[str] = []
    names: dict[str, int] = {}
    start = 0
    i = 0
    n = len(query)
    search = _NAMED_STOP.search
    while True:
        m = search(query, i)
        if m is None:
            break
        i = m.start()
        ch = query[i]
        if ch != ':':
            if m.end() - i > 1 or ch.isalnum() or ch == '_':
                i = m.end()
            else:
                end = skip_non_code(query, i, scs)
                i = end if end != i else i + 1
            continue
        if i + 1 < n and query[i + 1] == ':':
            i += 2                          # a cast: x::int
            continue
        before = query[i - 1] if i else ''
        name = _NAME.match(query, i + 1)
        if name is None or before.isalnum() or before in ('_', '$', ']', ')', '"'):
            i += 1                          # a slice x[1:2], x[lo:hi], := ...
            continue
        _check_not_after_in(query, i)
        number = names.get(name.group())
        if number is None:
            number = names[name.group()] = len(names) + 1
        out.append(query[start:i])
        out.append(f'${number}')
        start = i = name.end()
    if not out:
        return ConvertedQuery(query, (), 0)
    out.append(query[start:])
    _check_no_dollar_parameters(query, scs)
    return ConvertedQuery(''.join(out), tuple(names), len(names))


def _mixed() -> QueryParameterError:
    return QueryParameterError(
        'the query mixes positional (%s) and named (%(name)s) placeholders: use one kind')


def _check_not_after_in(query: str, i: int) -> None:
    # (A window before the placeholder: the search stays O(1) per placeholder.)
    if _ENDS_WITH_IN.search(query, max(0, i - 256), i):
        raise QueryParameterError(
            f'a placeholder right after IN (at character {i + 1}) cannot take a list of values',
            hint=ANY_INSTEAD_OF_IN)


def utility_statement_hint(query: str) -> Optional[str]:
    """The hint for a syntax error in `query` run with parameters, if it is a utility statement.

    PostgreSQL answers ``syntax error at or near "$1"`` (42601) or ``there
    is no parameter $1`` (42P02) to parameters in SET, DDL and the like,
    which psycopg2 interpolated on the client.
    """
    if first_keyword(query) in _TAKES_PARAMETERS:
        return None
    return UTILITY_STATEMENT_HINT

"""mypgdriver.paramstyle on its own (no server): %s, %(name)s and :name turned into $n."""
from __future__ import annotations

import pytest

from mypgdriver import paramstyle
from mypgdriver.exceptions import QueryParameterError
from mypgdriver.exceptions.pep249 import InterfaceError, ProgrammingError
from mypgdriver.paramstyle import NAMED, PYFORMAT, convert


def text(query: str, style: str = PYFORMAT) -> str:
    return convert(query, style).text


# --- format / pyformat --------------------------------------------------------------------

def test_positional_placeholders_are_numbered_in_order():
    q = convert('SELECT %s, %s FROM t WHERE a = %s', PYFORMAT)
    assert q.text == 'SELECT $1, $2 FROM t WHERE a = $3'
    assert q.names is None and q.count == 3
    assert q.arguments((1, 2, 3)) == (1, 2, 3)
    assert q.arguments([1, 2, 3]) == [1, 2, 3]


def test_named_placeholder_used_twice_is_one_parameter():
    q = convert('SELECT %(a)s, %(b)s, %(a)s', 'pyformat')
    assert q.text == 'SELECT $1, $2, $1'
    assert q.names == ('a', 'b')
    assert q.arguments({'b': 2, 'a': 1}) == (1, 2)


def test_extra_mapping_keys_are_ignored_unless_refused():
    q = convert('SELECT %(a)s', PYFORMAT)
    assert q.arguments({'a': 1, 'unused': 2}) == (1,)
    with pytest.raises(QueryParameterError, match="does not use the parameter 'unused'"):
        q.arguments({'a': 1, 'unused': 2}, allow_unused=False)


def test_percent_percent_is_a_literal_percent():
    assert text("SELECT 'a' LIKE 'x' || %s || '%%', 10 %% 3") == \
        "SELECT 'a' LIKE 'x' || $1 || '%', 10 % 3"
    assert text('SELECT 10 %% 3') == 'SELECT 10 % 3'
    # in a string constant too (psycopg code escapes them there), but a lone
    # % there is left alone
    assert text("SELECT '100%%', 'a%', %s") == "SELECT '100%', 'a%', $1"


def test_format_is_the_same_style_as_pyformat():
    assert convert('SELECT %s', 'format').text == 'SELECT $1'


def test_psycopg3_binary_and_text_placeholders_are_accepted():
    assert text('SELECT %b, %t, %s') == 'SELECT $1, $2, $3'
    assert text('SELECT %(x)b, %(y)t') == 'SELECT $1, $2'


@pytest.mark.parametrize('query', [
    "SELECT '%s', %s",
    "SELECT E'\\'%s', %s",
    'SELECT $$ %s $$, %s',
    'SELECT $tag$ %(x)s $tag$, %s',
    'SELECT "%s" FROM t WHERE a = %s',
    'SELECT 1 -- %s\n, %s',
    'SELECT /* %s /* nested %s */ */ %s',
])
def test_placeholders_in_literals_identifiers_and_comments_are_left_alone(query):
    q = convert(query, PYFORMAT)
    assert q.count == 1
    assert q.text.count('$1') == 1
    assert q.text.endswith('$1')


def test_no_placeholders_keeps_the_text():
    q = convert("SELECT 'a%b'", PYFORMAT)
    assert q.text == "SELECT 'a%b'"
    assert q.arguments(()) == ()
    assert q.arguments({'anything': 1}) == ()


@pytest.mark.parametrize('query, shown', [
    ('SELECT %d', "'%d'"),
    ('SELECT 10 % 3', "'% '"),
    ('SELECT 1 %', "'%'"),
])
def test_a_stray_percent_is_an_error(query, shown):
    with pytest.raises(QueryParameterError, match=f'unexpected {shown}') as info:
        convert(query, PYFORMAT)
    assert 'written %%' in str(info.value)


def test_incomplete_named_placeholder_is_an_error():
    with pytest.raises(QueryParameterError, match='incomplete placeholder'):
        convert('SELECT %(a)d', PYFORMAT)
    with pytest.raises(QueryParameterError, match='incomplete placeholder'):
        convert('SELECT %(a', PYFORMAT)


def test_mixing_positional_and_named_is_an_error():
    with pytest.raises(QueryParameterError, match=r'mixes positional \(%s\) and named'):
        convert('SELECT %s, %(a)s', PYFORMAT)
    with pytest.raises(QueryParameterError, match='mixes positional'):
        convert('SELECT %(a)s, %s', PYFORMAT)


def test_mixing_dollar_parameters_is_an_error():
    with pytest.raises(QueryParameterError, match=r'mixes \$n parameters'):
        convert('SELECT $1, %s', PYFORMAT)
    # ... but a$1 is a name and '$1' a string
    assert text("SELECT a$1, '$1', %s") == "SELECT a$1, '$1', $1"


def test_wrong_number_of_values():
    q = convert('SELECT %s, %s', PYFORMAT)
    with pytest.raises(QueryParameterError,
                       match='the query has 2 placeholders but 1 parameter was given'):
        q.arguments((1,))
    with pytest.raises(QueryParameterError,
                       match='the query has 2 placeholders but 3 parameters were given'):
        q.arguments([1, 2, 3])
    with pytest.raises(QueryParameterError, match='0 placeholders but 1 parameter'):
        convert('SELECT 1', PYFORMAT).arguments((1,))


def test_mapping_for_positional_and_sequence_for_named():
    with pytest.raises(QueryParameterError, match='pass the values in a sequence'):
        convert('SELECT %s', PYFORMAT).arguments({'a': 1})
    with pytest.raises(QueryParameterError, match='pass the values in a mapping, not a tuple'):
        convert('SELECT %(a)s', PYFORMAT).arguments((1,))


def test_a_string_is_not_a_sequence_of_parameters():
    with pytest.raises(QueryParameterError, match='not a str') as info:
        convert('SELECT %s', PYFORMAT).arguments('abc')
    assert info.value.hint == 'A single value is written as a tuple of one: (value,).'


def test_missing_name_is_named_in_the_error():
    with pytest.raises(QueryParameterError,
                       match=r"no value for the query parameter 'b': the mapping given has 'a'"):
        convert('SELECT %(a)s, %(b)s', PYFORMAT).arguments({'a': 1})


def test_in_followed_by_a_placeholder_says_to_use_any():
    with pytest.raises(QueryParameterError, match='right after IN') as info:
        convert('SELECT * FROM t WHERE id IN %s', PYFORMAT)
    assert info.value.hint == paramstyle.ANY_INSTEAD_OF_IN
    assert '= ANY(%s)' in info.value.hint
    with pytest.raises(QueryParameterError, match='right after IN'):
        convert('SELECT * FROM t WHERE id not in %(ids)s', PYFORMAT)
    # IN (%s) is valid SQL (one value); "main %s" is not IN
    assert text('SELECT * FROM t WHERE id IN (%s)') == 'SELECT * FROM t WHERE id IN ($1)'
    assert text('SELECT domain %s') == 'SELECT domain $1'


def test_errors_are_dbapi_programming_errors_and_interface_errors():
    with pytest.raises(ProgrammingError):
        convert('SELECT %d', PYFORMAT)
    assert issubclass(QueryParameterError, InterfaceError)     # the DB-API's
    import mypgdriver
    assert issubclass(QueryParameterError, mypgdriver.InterfaceError)   # asyncpg's


def test_conversions_are_cached():
    first = convert('SELECT %s /* cached */', PYFORMAT)
    assert convert('SELECT %s /* cached */', PYFORMAT) is first
    assert convert('SELECT %s /* cached */', 'format') is first


def test_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(paramstyle, 'CACHE_SIZE', 4)
    monkeypatch.setitem(paramstyle._caches, PYFORMAT, {})
    for i in range(10):
        convert(f'SELECT {i}, %s', PYFORMAT)
    assert list(paramstyle._caches[PYFORMAT]) == [f'SELECT {i}, %s' for i in range(6, 10)]


def test_standard_conforming_strings_off_changes_the_lexing():
    query = "SELECT 'a\\' %s', %s"
    assert convert(query, PYFORMAT, standard_conforming_strings=False).text == \
        "SELECT 'a\\' %s', $1"
    # on: the string ends at the second quote, the first %s is code
    assert convert(query, PYFORMAT).text == "SELECT 'a\\' $1', %s"


def test_unknown_style_is_a_value_error():
    with pytest.raises(ValueError, match="unknown parameter style 'qmark'"):
        convert('SELECT ?', 'qmark')


# --- named --------------------------------------------------------------------------------

def test_named_style():
    q = convert('SELECT :a, :b, :a', NAMED)
    assert q.text == 'SELECT $1, $2, $1'
    assert q.arguments({'a': 1, 'b': 2}) == (1, 2)


@pytest.mark.parametrize('query, expected', [
    ('SELECT :x::int', 'SELECT $1::int'),
    ("SELECT 'a:x', :x", "SELECT 'a:x', $1"),
    ('SELECT arr[1:2], :x', 'SELECT arr[1:2], $1'),
    ('SELECT arr[lo:hi], :x', 'SELECT arr[lo:hi], $1'),
    ('SELECT $$ :y $$, "c:y", :x -- :y', 'SELECT $$ :y $$, "c:y", $1 -- :y'),
    ('SELECT 10 % 3, :x', 'SELECT 10 % 3, $1'),
    ('SELECT (:x)', 'SELECT ($1)'),
])
def test_named_style_skips_casts_slices_and_non_code(query, expected):
    assert convert(query, NAMED).text == expected
    assert convert(query, NAMED).names == ('x',)


def test_named_style_errors():
    with pytest.raises(QueryParameterError, match="no value for the query parameter 'x'"):
        convert('SELECT :x', NAMED).arguments({})
    with pytest.raises(QueryParameterError, match='pass the values in a mapping, not a list'):
        convert('SELECT :x', NAMED).arguments([1])
    with pytest.raises(QueryParameterError, match='does not use the parameter'):
        convert('SELECT :x', NAMED).arguments({'x': 1, 'y': 2}, allow_unused=False)


# --- utility statements -------------------------------------------------------------------

@pytest.mark.parametrize('query', ['SET search_path = $1', 'CREATE TABLE t (a int DEFAULT $1)',
                                   'ALTER ROLE x PASSWORD $1', 'SHOW $1'])
def test_utility_statement_hint(query):
    assert paramstyle.utility_statement_hint(query) == paramstyle.UTILITY_STATEMENT_HINT
    assert 'set_config' in paramstyle.UTILITY_STATEMENT_HINT
    assert 'quote_ident' in paramstyle.UTILITY_STATEMENT_HINT


@pytest.mark.parametrize('query', ['SELECT $1', ' /* x */ insert into t values ($1)',
                                   'WITH a AS (SELECT 1) SELECT $1'])
def test_no_utility_statement_hint_for_statements_that_take_parameters(query):
    assert paramstyle.utility_statement_hint(query) is None

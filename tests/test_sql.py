"""mypgdriver.sql on its own (no server): quoting, and the one lexer behind
$n substitution and the first-keyword checks."""
from __future__ import annotations

import pytest

from mypgdriver import exceptions, sql

# --- quoting ----------------------------------------------------------------------------

def test_quote_ident_keeps_case_and_doubles_quotes():
    assert sql.quote_ident('MixedCase') == '"MixedCase"'
    assert sql.quote_ident('we"ird') == '"we""ird"'
    assert sql.quote_ident('a.b') == '"a.b"'
    with pytest.raises(ValueError):
        sql.quote_ident('nul\x00')
    with pytest.raises(ValueError):
        sql.quote_ident('')
    with pytest.raises(TypeError):
        sql.quote_ident(5)


def test_quote_literal_is_safe_whatever_standard_conforming_strings():
    assert sql.quote_literal("it's") == "'it''s'"
    assert sql.quote_literal('a\\b') == "E'a\\\\b'"
    assert sql.quote_literal("\\'") == "E'\\\\'''"
    with pytest.raises(ValueError):
        sql.quote_literal('\x00')


# --- the lexer --------------------------------------------------------------------------

@pytest.mark.parametrize('query, start, end', [
    ("'it''s' x", 0, 7),
    ("E'a\\'b' x", 1, 7),             # a backslash escapes the quote in E''
    ("xE'a\\' x", 2, 6),              # ... but xE is a name, not the E prefix
    ('"a""b" x', 0, 6),
    ('-- note\nx', 0, 8),
    ('/* a /* nested */ b */x', 0, 22),
    ('$$ a $ b $$x', 0, 11),
    ('$fn$ $$ $fn$x', 0, 12),
    ("'open", 0, 5),                   # unterminated: to the end
    ('/* open', 0, 7),
    ('$1', 0, 0),                      # a parameter is code
    ('$a', 0, 0),                      # not a dollar quote without its closing $
    ('- 1', 0, 0),
    ('x', 0, 0),
])
def test_skip_non_code_finds_the_end_of_strings_identifiers_and_comments(query, start, end):
    assert sql.skip_non_code(query, start) == end


def test_skip_non_code_without_standard_conforming_strings():
    assert sql.skip_non_code("'a\\'b' x", 0, standard_conforming_strings=True) == 4
    assert sql.skip_non_code("'a\\'b' x", 0, standard_conforming_strings=False) == 6


def test_substitute_parameters_only_replaces_real_references():
    values = ['(1)', '(2)']
    assert sql.substitute_parameters(
        "SELECT $1, '$1', E'\\'$2', \"$1\", a$1, $$ $2 $$, $tag$ $1 $tag$, $2 -- $1\n"
        "/* $1 /* $2 */ $1 */ $10x", values + ['x'] * 8) == (
        "SELECT (1), '$1', E'\\'$2', \"$1\", a$1, $$ $2 $$, $tag$ $1 $tag$, (2) -- $1\n"
        "/* $1 /* $2 */ $1 */ xx")
    # With standard_conforming_strings off, a backslash escapes a quote in '...'.
    query = "SELECT 'a\\', $1, '\\', $2"
    assert sql.substitute_parameters(query, values, True) == \
        "SELECT 'a\\', (1), '\\', (2)"
    assert sql.substitute_parameters(query, values, False) == query


def test_substitute_parameters_refuses_a_reference_without_a_value():
    with pytest.raises(exceptions.InterfaceError,
                       match=r'the query refers to \$2, but 1 argument was given'):
        sql.substitute_parameters('SELECT $1, $2', ['1'])


@pytest.mark.parametrize('query, keyword', [
    ('SELECT 1', 'select'),
    ('  \n\tvalues (1)', 'values'),
    ('((Select 1))', 'select'),
    ('-- why\n/* and /* how */ */ TABLE t', 'table'),
    ('/* never closed SELECT', ''),
    ('-- only a comment', ''),
    ('', ''),
    ('$1', ''),
    ('WITH x AS (SELECT 1) SELECT * FROM x', 'with'),
])
def test_first_keyword_skips_space_comments_and_parentheses(query, keyword):
    assert sql.first_keyword(query) == keyword


@pytest.mark.parametrize('query, plain_read', [
    ('SELECT 1', True),
    ('show search_path', True),
    ('(VALUES (1))', True),
    ('/* SELECT */ UPDATE t SET a = 1', False),
    ('-- SELECT\nDELETE FROM t', False),
    ('INSERT INTO t SELECT 1', False),
    ('selection', False),
])
def test_is_plain_read_looks_at_the_first_keyword_only(query, plain_read):
    assert sql.is_plain_read(query) is plain_read

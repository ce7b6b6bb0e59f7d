#!/usr/bin/env python3
"""Generate mypgdriver/exceptions/_generated.py from PostgreSQL's errcodes.txt.

Usage::

    python tools/gen_errcodes.py [ERRCODES_TXT] [-o OUTPUT] [--no-asyncpg-check]

Each SQLSTATE class ("Section: Class 23 - ...") and each condition becomes an
exception class.  A condition derives from the class of its two-character
SQLSTATE class (``UniqueViolationError`` < ``IntegrityConstraintViolationError``
< ``PostgresError``); warning classes 01 and 02 derive from ``PostgresWarning``,
a ``PostgresLogMessage`` that is also a Python ``Warning``.

Class names must be the ones asyncpg uses, so that applications can switch
drivers by changing an import.  They are derived from the condition names
(CamelCase, ``Error`` suffix for errors), with ``NAME_OVERRIDES`` where asyncpg
chose differently.  When asyncpg is installed, the generator compares every
name and base class with it and fails on any mismatch.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import importlib.util
import inspect
import pathlib
import sys
from typing import Any

DEFAULT_ERRCODES = '/usr/share/postgresql/15/errcodes.txt'
DEFAULT_OUTPUT = (pathlib.Path(__file__).resolve().parent.parent
                  / 'mypgdriver' / 'exceptions' / '_generated.py')

# Word spellings that plain capitalisation gets wrong.
ACRONYMS = {'sql': 'SQL', 'fdw': 'FDW', 'plpgsql': 'PLPGSQL', 'io': 'IO'}

# SQLSTATEs whose asyncpg name does not follow from the condition name.  Some
# condition names repeat across classes (38002 and 2F002 are both
# modifying_sql_data_not_permitted), so these also keep the names unique.
NAME_OVERRIDES = {
    '08001': 'ClientCannotConnectError',
    '08004': 'ConnectionRejectionError',
    '38002': 'ModifyingExternalRoutineSQLDataNotPermittedError',
    '38003': 'ProhibitedExternalRoutineSQLStatementAttemptedError',
    '38004': 'ReadingExternalRoutineSQLDataNotPermittedError',
    '39004': 'NullValueInExternalRoutineNotAllowedError',
    '40001': 'SerializationError',
    '42000': 'SyntaxOrAccessError',
    'P0004': 'AssertError',
    'XX000': 'InternalServerError',
}

# Conditions added after PostgreSQL 15, whose errcodes.txt is the default
# input.  Newer servers send them and asyncpg has classes for them; an input
# file that already lists a code wins over this table.
NEWER_SERVER_CODES = [
    # (sqlstate, kind, condition name, section title)
    ('10608', 'E', 'invalid_argument_for_xquery', 'Class 10 - XQuery Error'),
    ('25P04', 'E', 'transaction_timeout', None),
    ('58P03', 'E', 'file_name_too_long', None),
]

# Written into the output's header, next to the asyncpg check's result.
NOTES_ON_ASYNCPG = [
    'none in class names or bases (the generator fails on any), except that the',
    'root of each SQLSTATE class also derives from its PEP 249 class (pep249.py).',
    'Not generated, as in asyncpg: 00000 successful_completion, which is not a',
    'condition; a notice carrying it becomes a plain PostgresLogMessage.',
]

WARNING_CLASS_CODES = ('01', '02')

PEP249_MODULE = (pathlib.Path(__file__).resolve().parent.parent
                 / 'mypgdriver' / 'exceptions' / 'pep249.py')


def load_pep249() -> Any:
    """mypgdriver/exceptions/pep249.py, loaded by path (without importing the package)."""
    spec = importlib.util.spec_from_file_location('_pep249_for_generator', PEP249_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class Condition:
    """One SQLSTATE line of errcodes.txt."""

    sqlstate: str
    kind: str           # 'E' error, 'W' warning, 'S' success
    spec_name: str
    section: str
    class_name: str = ''
    base_name: str = ''
    dbapi_base: str = ''    # the PEP 249 class added to a root's bases ('' for none)

    @property
    def class_code(self) -> str:
        """The code of this condition's SQLSTATE class, e.g. '23000'."""
        return self.sqlstate[:2] + '000'


def parse_errcodes(text: str) -> list[Condition]:
    """Return the conditions of an errcodes.txt, in file order.

    Lines with only three fields are alternative C macro names for a code
    listed elsewhere with its condition name, so they are skipped.
    """
    conditions = []
    section = ''
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('Section:'):
            section = line.removeprefix('Section:').strip()
            continue
        fields = line.split()
        if len(fields) != 4:
            continue
        sqlstate, kind, _macro, spec_name = fields
        conditions.append(Condition(sqlstate, kind, spec_name, section))
    return conditions


def add_newer_codes(conditions: list[Condition]) -> list[Condition]:
    """Merge NEWER_SERVER_CODES into the parsed list, each in its section."""
    result = list(conditions)
    known = {c.sqlstate for c in conditions}
    for sqlstate, kind, spec_name, section in NEWER_SERVER_CODES:
        if sqlstate in known:
            continue
        siblings = [i for i, c in enumerate(result) if c.sqlstate[:2] == sqlstate[:2]]
        if siblings:
            position = siblings[-1] + 1
            section = result[siblings[-1]].section
        else:
            position = next((i for i, c in enumerate(result) if c.sqlstate[:2] > sqlstate[:2]),
                            len(result))
        result.insert(position, Condition(sqlstate, kind, spec_name, section or ''))
    return result


def derive_class_name(condition: Condition) -> str:
    """Name the class of a condition the way asyncpg names it."""
    override = NAME_OVERRIDES.get(condition.sqlstate)
    if override:
        return override
    words = condition.spec_name.split('_')
    is_error = condition.kind == 'E'
    if is_error and words[-1] in ('exception', 'error'):
        words = words[:-1]
    name = ''.join(ACRONYMS.get(word, word.capitalize()) for word in words)
    if is_error:
        name += 'Error'
    # SyntaxError, SystemError, Warning...: never shadow a builtin.
    if hasattr(builtins, name):
        name = 'Postgres' + name
    return name


def assign_names(conditions: list[Condition]) -> list[Condition]:
    """Fill class and base names; drop success codes, which are not conditions."""
    pep249 = load_pep249()
    selected = [c for c in conditions if c.kind != 'S']
    by_code = {c.sqlstate: c for c in selected}
    for condition in selected:
        condition.class_name = derive_class_name(condition)
    warning_root = by_code['01000'].class_name
    for condition in selected:
        parent = by_code.get(condition.class_code)
        if parent is not None and parent is not condition:
            condition.base_name = parent.class_name
        elif condition.kind == 'W' and condition.sqlstate != '01000':
            condition.base_name = warning_root
        elif condition.kind == 'W':
            condition.base_name = 'PostgresLogMessage, Warning'
        else:
            condition.base_name = 'PostgresError'
            dbapi = pep249.sqlstate_class(condition.sqlstate)
            if dbapi is not pep249.DatabaseError:
                condition.dbapi_base = dbapi.__name__
    names = [c.class_name for c in selected]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SystemExit(f'duplicate class names, add overrides: {duplicates}')
    return selected


def order_for_output(conditions: list[Condition]) -> list[Condition]:
    """Keep file order, except that a base class always comes before its subclasses."""
    by_name = {c.class_name: c for c in conditions}
    ordered: list[Condition] = []
    emitted: set[str] = set()

    def emit(condition: Condition) -> None:
        if condition.class_name in emitted:
            return
        base = by_name.get(condition.base_name)
        if base is not None:
            emit(base)
        ordered.append(condition)
        emitted.add(condition.class_name)

    for condition in conditions:
        emit(condition)
    return ordered


def compare_with_asyncpg(conditions: list[Condition]) -> list[str] | None:
    """Return the name and base differences from the installed asyncpg.

    Returns None when asyncpg is not installed.
    """
    try:
        import asyncpg.exceptions as apg
    except ImportError:
        return None
    theirs = {}
    for value in vars(apg).values():
        # Only classes that declare a code themselves: asyncpg's
        # InvalidCachedStatementError inherits 0A000 without owning it.
        if inspect.isclass(value) and 'sqlstate' in value.__dict__:
            theirs[value.__dict__['sqlstate']] = value
    problems = []
    ours = {c.sqlstate: c for c in conditions}
    for code in sorted(ours.keys() | theirs.keys()):
        mine, other = ours.get(code), theirs.get(code)
        if mine is None:
            problems.append(f'{code}: only asyncpg has it ({other.__name__})')
        elif other is None:
            problems.append(f'{code}: asyncpg has no class ({mine.class_name})')
        elif mine.class_name != other.__name__:
            problems.append(f'{code}: {mine.class_name} != asyncpg {other.__name__}')
        else:
            their_bases = ', '.join(b.__name__ for b in other.__bases__)
            if mine.base_name != their_bases:
                problems.append(f'{code}: base {mine.base_name} != asyncpg {their_bases}')
    return problems


def render(conditions: list[Condition], source: str) -> str:
    """Return the text of _generated.py."""
    out = [
        '# GENERATED FILE, do not edit.',
        f'# Made by tools/gen_errcodes.py from PostgreSQL\'s {pathlib.Path(source).name}',
        '# (plus the newer codes listed in the script).  To regenerate:',
        '#     python tools/gen_errcodes.py [path/to/errcodes.txt]',
        '#',
        '# Class names equal asyncpg\'s for the same SQLSTATE (checked while',
        '# generating).  Differences from asyncpg:',
        *(f'#   {line}' for line in NOTES_ON_ASYNCPG),
        '"""Exception classes for every SQLSTATE, generated from errcodes.txt."""',
        '',
        'from __future__ import annotations',
        '',
        'from . import pep249 as _pep249',
        'from ._base import PostgresError, PostgresLogMessage',
    ]
    section = None
    for condition in conditions:
        out += ['', '']
        if condition.section != section:
            section = condition.section
            out.append(f'# {section}')
        doc = f'SQLSTATE {condition.sqlstate}: {condition.spec_name}.'
        bases = condition.base_name
        if condition.dbapi_base:
            bases += f', _pep249.{condition.dbapi_base}'
        out += [
            f'class {condition.class_name}({bases}):',
            f'    """{doc}"""',
            '',
            f'    sqlstate = {condition.sqlstate!r}',
        ]

    def table(name: str, annotation: str, rows: list[Condition]) -> list[str]:
        lines = [f'{name}: {annotation} = {{']
        lines += [f'    {c.sqlstate!r}: {c.class_name},' for c in rows]
        lines.append('}')
        return lines

    errors = [c for c in conditions if c.kind == 'E']
    warnings = [c for c in conditions if c.kind == 'W']
    out += ['', '', '# SQLSTATE -> class, for the factories in __init__.py.']
    out += table('ERROR_CLASSES', 'dict[str, type[PostgresError]]', errors)
    out += ['']
    out += table('WARNING_CLASSES', 'dict[str, type[PostgresLogMessage]]', warnings)
    # A literal list: type checkers read the public names from it (the
    # typing spec's "library interface" accepts no computed __all__).
    out += ['', '__all__ = [']
    out += [f'    {name!r},' for name in sorted(c.class_name for c in conditions)]
    out += [']', '']
    return '\n'.join(out)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('errcodes', nargs='?', default=DEFAULT_ERRCODES,
                        help=f'path to errcodes.txt (default {DEFAULT_ERRCODES})')
    parser.add_argument('-o', '--output', default=str(DEFAULT_OUTPUT),
                        help='file to write (default mypgdriver/exceptions/_generated.py)')
    parser.add_argument('--no-asyncpg-check', action='store_true',
                        help='write the file even if names differ from asyncpg')
    args = parser.parse_args(argv)

    text = pathlib.Path(args.errcodes).read_text(encoding='utf-8')
    conditions = assign_names(add_newer_codes(parse_errcodes(text)))
    conditions = order_for_output(conditions)

    problems = compare_with_asyncpg(conditions)
    if problems is None:
        print('asyncpg is not installed: names were not checked', file=sys.stderr)
    elif problems:
        print('differences from asyncpg:', *problems, sep='\n  ', file=sys.stderr)
        if not args.no_asyncpg_check:
            return 1

    pathlib.Path(args.output).write_text(render(conditions, args.errcodes), encoding='utf-8')
    print(f'wrote {len(conditions)} classes to {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

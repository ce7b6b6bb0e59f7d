"""The ``sqlstate-table`` directive: every SQLSTATE and the exception it raises.

The exception classes are generated from PostgreSQL's errcodes.txt into
``mypgdriver/exceptions/_generated.py``, one section per SQLSTATE class
(``# Class 23 - Integrity Constraint Violation``).  This directive reads that
module (its source for the section titles, the classes themselves for the
rest) and renders one table, a heading row per SQLSTATE class, each class
name linked to its entry in the API reference.  The table therefore always
matches the code it documents.

Markup::

    .. sqlstate-table::
"""
from __future__ import annotations

import importlib
import inspect
import re

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes

_GROUP = re.compile(r'#\s*Class\s+(\w\w)\s+-\s+(.*)')
_CLASS = re.compile(r'class\s+(\w+)\s*\(')
_CONDITION = re.compile(r'SQLSTATE\s+\w+:\s*([a-z0-9_]+)')
_MODULE = 'mypgdriver.exceptions'
_HEADERS = ('SQLSTATE', 'condition', 'exception class', 'derives from')


def sqlstate_groups() -> list[tuple[str, str, list[type]]]:
    """``(class code, title, [exception classes])`` in errcodes.txt order."""
    generated = importlib.import_module(_MODULE + '._generated')
    public = importlib.import_module(_MODULE)
    groups: list[tuple[str, str, list[type]]] = []
    for line in inspect.getsource(generated).splitlines():
        group = _GROUP.match(line.strip())
        if group:
            groups.append((group.group(1), group.group(2).strip(), []))
            continue
        cls = _CLASS.match(line)
        if cls and groups:
            groups[-1][2].append(getattr(public, cls.group(1)))
    return groups


def _xref(name: str) -> nodes.Node:
    ref = addnodes.pending_xref(
        '', refdomain='py', reftype='exc', reftarget=f'{_MODULE}.{name}',
        refexplicit=True, refwarn=False)
    ref['py:module'] = None
    ref['py:class'] = None
    ref += nodes.literal(name, name, classes=['xref', 'py', 'py-exc'])
    return ref


def _entry(*children: nodes.Node) -> nodes.entry:
    return nodes.entry('', nodes.paragraph('', '', *children))


class SqlstateTable(Directive):
    """One table: SQLSTATE, condition name, exception class, its base class."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        table = nodes.table(classes=['sqlstate-table'])
        group = nodes.tgroup(cols=len(_HEADERS))
        table += group
        for width in (10, 30, 35, 35):
            group += nodes.colspec(colwidth=width)
        head = nodes.row()
        for title in _HEADERS:
            head += _entry(nodes.Text(title))
        group += nodes.thead('', head)
        body = nodes.tbody()
        for code, title, classes in sqlstate_groups():
            heading = nodes.row()
            cell = _entry(nodes.strong('', f'Class {code}: {title}'))
            cell['morecols'] = len(_HEADERS) - 1
            heading += cell
            body += heading
            for cls in classes:
                doc = inspect.getdoc(cls) or ''
                condition = _CONDITION.search(doc)
                row = nodes.row()
                row += _entry(nodes.literal(cls.sqlstate, cls.sqlstate))
                row += _entry(nodes.Text(condition.group(1) if condition else ''))
                row += _entry(_xref(cls.__name__))
                row += _entry(_xref(cls.__bases__[0].__name__))
                body += row
        group += body
        return [table]


def setup(app):
    app.add_directive('sqlstate-table', SqlstateTable)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}

"""Count the places where one module of mypgdriver reaches into another's private names.

    python -m tools.check_private_access            # check against the baseline
    python -m tools.check_private_access --update   # write the current counts as the baseline
    python -m tools.check_private_access --list [PATH...]   # show every occurrence

A ratchet: the per-file counts are checked in (tools/private_access_baseline.json).
The check fails when a file's count grows (the new occurrences are listed),
and also when one shrinks, asking for the baseline to be lowered (--update),
so that what was paid off cannot come back unnoticed.  The files of
mypgdriver/dbapi must have none at all, whatever the baseline says: the
DB-API runs on the documented interface of mypgdriver/core/session_api.py.

What counts (read from the AST of each .py file under mypgdriver/):

* ``x._name``, a read, write or delete, where ``x`` is anything but the
  names ``self`` and ``cls``, and ``_name`` (one leading underscore, or a
  ``__mangled`` name) is not defined by the module itself;
* ``getattr(x, '_name')``, ``setattr``, ``hasattr``, ``delattr`` with such a
  literal name (the same access, spelled as a string);
* ``from m import _name`` (any module ``m``, relative or absolute).

"Defined by the module itself" is decided by name, without type inference:
a function, class, or variable of that name, an attribute assigned anywhere
in the module (``self._name = ...``, ``obj._name = ...``), a name listed in a
``__slots__``, or an import bound to that name.  So ``other._cache`` passes
in a module that also has a ``self._cache`` of its own: the check is about
modules keeping to their own internals, and a module's own classes may share
them.

What does not count:

* dunder names (``__init__``, ``__slots__``, ``__version__``);
* private *modules* (``from mypgdriver._typing import RowT``,
  ``from mypgdriver.exceptions import _hints``, ``from . import _base``): a
  leading-underscore module is private to its package, and every file
  checked is inside the package (a name imported from a module is told
  from a submodule by the files present: ``_name.py``, ``.pyx``, a folder);
* the public API of named tuples that happens to start with an underscore
  (``_replace``, ``_asdict``, ``_make``, ``_fields``, ``_field_defaults``);
* Cython sources (.pyx, .pxd) and stubs (.pyi): not Python's grammar, and
  a ``cdef`` attribute's access is checked by Cython itself.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'mypgdriver'
BASELINE = ROOT / 'tools' / 'private_access_baseline.json'
#: Files under this folder must have no occurrence at all.
MUST_BE_CLEAN = 'mypgdriver/dbapi/'

# Named tuples' documented API (collections.namedtuple, typing.NamedTuple).
_NAMEDTUPLE_API = frozenset(('_replace', '_asdict', '_make', '_fields', '_field_defaults'))
_OWN_RECEIVERS = frozenset(('self', 'cls'))
_ATTRIBUTE_FUNCTIONS = frozenset(('getattr', 'setattr', 'hasattr', 'delattr'))


class Occurrence(NamedTuple):
    """One access to another module's private name."""

    path: str
    line: int
    text: str


def is_private(name: str) -> bool:
    """True for ``_name`` and ``__mangled``, False for public and dunder names."""
    if not name.startswith('_'):
        return False
    return not (name.startswith('__') and name.endswith('__'))


def defined_names(tree: ast.AST) -> set[str]:
    """The private names the module defines itself (see the module docstring)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split('.')[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == '__slots__' for t in targets):
                names.update(_strings(node.value))
    return {name for name in names if is_private(name)}


def _strings(node: Optional[ast.AST]) -> Iterator[str]:
    if node is None:
        return
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child.value


def occurrences(path: Path) -> list[Occurrence]:
    """Every access of `path` to a private name that another module defines."""
    source = path.read_text(encoding='utf-8')
    tree = ast.parse(source, str(path))
    own = defined_names(tree) | _NAMEDTUPLE_API
    lines = source.splitlines()
    relative = path.relative_to(ROOT).as_posix()
    found: list[Occurrence] = []

    def add(node: ast.AST) -> None:
        line = getattr(node, 'lineno', 0)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ''
        found.append(Occurrence(relative, line, text))

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if (is_private(node.attr) and node.attr not in own
                    and not _is_own_receiver(node.value)):
                add(node)
        elif isinstance(node, ast.Call):
            name = _private_attribute_argument(node)
            if name is not None and name not in own:
                add(node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if is_private(alias.name) and not _is_module(path, node, alias.name):
                    add(node)
    found.sort(key=lambda o: o.line)
    return found


def _is_module(path: Path, node: ast.ImportFrom, name: str) -> bool:
    """True if ``from m import name`` imports a submodule of m (a private module: allowed)."""
    if node.level:
        package = path.parent
        for _ in range(node.level - 1):
            package = package.parent
        if node.module:
            package = package.joinpath(*node.module.split('.'))
    elif node.module:
        package = ROOT.joinpath(*node.module.split('.'))
    else:
        return False
    return ((package / name).is_dir() or (package / f'{name}.py').exists()
            or (package / f'{name}.pyx').exists() or any(package.glob(f'{name}.*.so')))


def _is_own_receiver(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in _OWN_RECEIVERS


def _private_attribute_argument(call: ast.Call) -> Optional[str]:
    """The literal private name of a getattr()/setattr()/... on another object, else None."""
    func = call.func
    if not (isinstance(func, ast.Name) and func.id in _ATTRIBUTE_FUNCTIONS):
        return None
    if len(call.args) < 2 or _is_own_receiver(call.args[0]):
        return None
    name = call.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and is_private(name.value):
        return name.value
    return None


def package_files() -> list[Path]:
    """The .py files checked: all of mypgdriver/."""
    return sorted(PACKAGE.rglob('*.py'))


def count_all(files: Iterable[Path]) -> dict[str, list[Occurrence]]:
    """Occurrences per file (files with none left out)."""
    result: dict[str, list[Occurrence]] = {}
    for path in files:
        found = occurrences(path)
        if found:
            result[path.relative_to(ROOT).as_posix()] = found
    return result


def load_baseline() -> dict[str, int]:
    """The checked-in counts ({} when there is no baseline yet)."""
    if not BASELINE.exists():
        return {}
    counts: dict[str, int] = json.loads(BASELINE.read_text(encoding='utf-8'))['counts']
    return counts


def write_baseline(counts: dict[str, int]) -> None:
    """Write `counts` as the new baseline (sorted, one file a line: small diffs)."""
    document = {
        'about': 'Per-file counts of tools/check_private_access.py (a ratchet: lower them, '
                 'never raise them; mypgdriver/dbapi/ must stay at 0).',
        'total': sum(counts.values()),
        'counts': dict(sorted(counts.items())),
    }
    BASELINE.write_text(json.dumps(document, indent=1) + '\n', encoding='utf-8')


def check(found: dict[str, list[Occurrence]], baseline: dict[str, int]) -> list[str]:
    """The problems: dbapi files with any occurrence, counts above or below the baseline."""
    problems: list[str] = []
    for path in sorted(set(found) | set(baseline)):
        now = len(found.get(path, ()))
        before = baseline.get(path, 0)
        if path.startswith(MUST_BE_CLEAN) and now:
            problems.append(f'{path}: {now} private access(es), and {MUST_BE_CLEAN} must have '
                            f'none (use mypgdriver.core.session_api or a public API):')
            problems.extend(f'  {o.path}:{o.line}: {o.text}' for o in found[path])
        elif now > before:
            problems.append(f'{path}: {now} private accesses, the baseline allows {before}; '
                            f'use a public interface instead of:')
            problems.extend(f'  {o.path}:{o.line}: {o.text}' for o in found[path])
        elif now < before:
            problems.append(f'{path}: {now} private accesses, fewer than the baseline\'s '
                            f'{before}: well done; lower the baseline with '
                            f'`python -m tools.check_private_access --update`')
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--update', action='store_true',
                        help='write the current counts as the baseline')
    parser.add_argument('--list', nargs='*', metavar='PATH',
                        help='print every occurrence (of the given files, or of all)')
    options = parser.parse_args(argv)
    found = count_all(package_files())
    total = sum(len(v) for v in found.values())
    if options.list is not None:
        wanted = {Path(p).resolve().relative_to(ROOT).as_posix() for p in options.list}
        for path, items in found.items():
            if not wanted or path in wanted:
                for o in items:
                    print(f'{o.path}:{o.line}: {o.text}')
        print(f'total: {total}')
        return 0
    if options.update:
        dirty = [p for p in found if p.startswith(MUST_BE_CLEAN)]
        if dirty:
            print(f'not written: {", ".join(dirty)} must have no private access',
                  file=sys.stderr)
            return 1
        write_baseline({path: len(items) for path, items in found.items()})
        print(f'baseline written: {total} private accesses in {len(found)} files')
        return 0
    problems = check(found, load_baseline())
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f'check_private_access: {total} private accesses, as in the baseline')
    return 0


if __name__ == '__main__':
    sys.exit(main())

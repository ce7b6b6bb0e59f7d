"""tools/check_private_access.py: what counts as another module's private attribute, and the ratchet."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools import check_private_access as checker


def count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> list[int]:
    monkeypatch.setattr(checker, 'ROOT', tmp_path)
    path = tmp_path / 'module.py'
    path.write_text(textwrap.dedent(source))
    return [o.line for o in checker.occurrences(path)]


def test_another_objects_private_attribute_counts(tmp_path, monkeypatch):
    assert count(tmp_path, monkeypatch, """\
        def f(conn):
            return conn._lock
    """) == [2]


def test_own_receivers_and_own_names_do_not_count(tmp_path, monkeypatch):
    assert count(tmp_path, monkeypatch, """\
        class A:
            __slots__ = ('_slot',)
            def __init__(self):
                self._x = 1
            @classmethod
            def make(cls):
                return cls._registry
        def f(a, b):
            return a._x, b._slot, a.__dict__, a._replace(x=1), _helper
        def _helper():
            pass
    """) == []


def test_getattr_with_a_literal_private_name_counts(tmp_path, monkeypatch):
    assert count(tmp_path, monkeypatch, """\
        def f(conn):
            getattr(self, '_own', None)
            return getattr(conn, '_lock', None), hasattr(conn, 'public')
    """) == [3]


def test_importing_a_private_name_counts_but_a_private_module_does_not(tmp_path, monkeypatch):
    assert count(tmp_path, monkeypatch, """\
        from mypgdriver._typing import RowT
        from mypgdriver.copy import _CopyOutStream
        from mypgdriver import __version__
    """) == [2]


def test_the_ratchet_refuses_growth_and_asks_for_a_lower_baseline():
    occurrence = checker.Occurrence('mypgdriver/core/session.py', 1, 'x._y')
    assert checker.check({'mypgdriver/core/session.py': [occurrence]},
                         {'mypgdriver/core/session.py': 1}) == []
    grown = checker.check({'mypgdriver/core/session.py': [occurrence] * 2},
                          {'mypgdriver/core/session.py': 1})
    assert 'the baseline allows 1' in grown[0]
    shrunk = checker.check({}, {'mypgdriver/core/session.py': 1})
    assert '--update' in shrunk[0]


def test_dbapi_files_must_have_none_whatever_the_baseline():
    occurrence = checker.Occurrence('mypgdriver/dbapi/cursor.py', 1, 'conn._lock')
    problems = checker.check({'mypgdriver/dbapi/cursor.py': [occurrence]},
                             {'mypgdriver/dbapi/cursor.py': 5})
    assert 'must have none' in problems[0]


def test_the_package_keeps_to_its_baseline():
    found = checker.count_all(checker.package_files())
    assert checker.check(found, checker.load_baseline()) == []
    assert not [path for path in found if path.startswith(checker.MUST_BE_CLEAN)]


def test_a_private_submodule_imported_by_name_does_not_count(tmp_path, monkeypatch):
    (tmp_path / '_private.py').write_text('')
    assert count(tmp_path, monkeypatch, """\
        from . import _private
        from . import _missing
    """) == [2]

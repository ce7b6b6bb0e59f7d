"""SQLAlchemy's own PostgreSQL dialect suites, against postgresql+mypgdriver.

Runs tools/sqlalchemy_suite.py on the session's server: SQLAlchemy's
``test/dialect/postgresql`` and ``test/dialect/test_suite.py`` (from the sdist of
the installed SQLAlchemy, downloaded once into .cache/sqlalchemy/), once with
postgresql+asyncpg and once with postgresql+mypgdriver, and fails listing
every test that passes with asyncpg and not with mypgdriver (apart from the
script's DELIBERATE and KNOWN_FAILURES lists). About 7 minutes on 2 cores.

Set MYPGDRIVER_SKIP_SQLALCHEMY_SUITE=1 to leave it out of a local run.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip('sqlalchemy', reason='the test extra installs SQLAlchemy')
pytest.importorskip('greenlet', reason='SQLAlchemy[asyncio] installs greenlet')
pytest.importorskip('asyncpg', reason='the comparison runs the suite with asyncpg too')

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE_TIMEOUT = 1800  # seconds; a run takes about 400 here


@pytest.mark.skipif(os.environ.get('MYPGDRIVER_SKIP_SQLALCHEMY_SUITE') == '1',
                    reason='MYPGDRIVER_SKIP_SQLALCHEMY_SUITE=1')
def test_sqlalchemy_dialect_suites_pass_as_with_asyncpg(pg_cluster: Any,
                                                        tmp_path: pathlib.Path) -> None:
    report = tmp_path / 'report.json'
    proc = subprocess.run(
        [sys.executable, '-m', 'tools.sqlalchemy_suite', '--quiet',
         '--dsn', pg_cluster.dsn(), '--report', str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=SUITE_TIMEOUT)
    output = proc.stdout + proc.stderr
    assert report.exists(), f'the suite did not run:\n{output}'
    data = json.loads(report.read_text())
    for dialect, run in data['runs'].items():
        passed = sum(1 for o in run['outcomes'].values() if o == 'passed')
        assert passed > 1000, f'{dialect}: only {passed} tests passed:\n{output}'
    assert not data['comparison']['regressions'], output
    assert proc.returncode == 0, output

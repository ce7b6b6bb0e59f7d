"""Run part of the test suite on the oldest and the newest Python the package claims.

The main suite runs on one interpreter (``.venv``'s).  This checks that the
package builds, imports and works on the others, with the SQLAlchemy release
each of them gets: Python 3.9 with the oldest SQLAlchemy 2.0 the
``sqlalchemy`` extra accepts (SQLAlchemy 2.1 needs 3.11), the newest Python
with the SQLAlchemy 2.1 that the test extra pins.  Run by .ci/run::

    python -m tools.test_pythons                  # 3.9 and the newest found
    python -m tools.test_pythons --python 3.10    # one version

For each interpreter: a fresh virtual environment in build/pythons/, the
package installed from dist/'s sdist when there is one (as a user installs
it; else from the checkout), compiled for that interpreter; then the subset
below runs from a copy of tests/ and tools/, so that the checkout's
extensions (built for .venv's Python) are not on the path.  The tests start
their own throwaway server.  About two minutes per interpreter, most of it
compiling.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from tools.build_wheels import Interpreter, find_interpreters

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / 'build' / 'pythons'

#: What runs on each interpreter: the SQLAlchemy dialect, and the basics of
#: connecting, querying, codecs and pooling; the row factories too, as
#: dict_row fills the slots of a dict copied from a template (checked against
#: CPython's dict layout when a statement is first used, which differs
#: between versions).
SUBSET = [
    'tests/test_sqlalchemy_dialect.py',
    'tests/test_rows.py',
    'tests/test_queries.py',
    'tests/test_codecs_basic.py',
    'tests/test_transaction.py',
    'tests/test_pool.py',
]
#: Test-only requirements (the test extra also holds type checkers and peers
#: that this subset does not need).
REQUIREMENTS = ['pytest>=7', 'pytest-asyncio>=0.23', 'hypothesis>=6']


def sqlalchemy_requirement(version: tuple[int, int]) -> str:
    """The SQLAlchemy release tested with Python `version`."""
    text = (ROOT / 'pyproject.toml').read_text()
    if version >= (3, 11):
        pinned = re.findall(r'"sqlalchemy\[asyncio\]==(2\.1\.\d+);', text)
        return f'sqlalchemy[asyncio]=={pinned[0]}'
    # the oldest release the extra accepts
    oldest = re.findall(r'"sqlalchemy\[asyncio\]>=(2\.0\.\d+),', text)
    return f'sqlalchemy[asyncio]=={oldest[0]}'


def say(message: str) -> None:
    print(f'test_pythons: {message}', file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs: object) -> None:
    proc = subprocess.run(cmd, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise SystemExit(f'test_pythons: failed ({proc.returncode}): {" ".join(cmd)}')


def package_source() -> str:
    sdists = sorted((ROOT / 'dist').glob('mypgdriver-*.tar.gz'))
    return str(sdists[-1]) if sdists else str(ROOT)


def test_with(interpreter: Interpreter) -> None:
    name = '.'.join(map(str, interpreter.version))
    venv = WORK / name
    shutil.rmtree(venv, ignore_errors=True)
    say(f'Python {name} ({interpreter.path}): creating {venv}')
    run([interpreter.path, '-m', 'venv', str(venv)])
    python = str(venv / 'bin' / 'python')
    sqlalchemy = sqlalchemy_requirement(interpreter.version)
    source = package_source()
    say(f'Python {name}: installing {pathlib.Path(source).name} (compiles) and {sqlalchemy}')
    run([python, '-m', 'pip', 'install', '-q', '--disable-pip-version-check', source,
         sqlalchemy, *REQUIREMENTS])
    with tempfile.TemporaryDirectory(prefix='mypgdriver-pythons-') as tmp:
        # tests/ and tools/ (the server fixture) without the package next to them
        for folder in ('tests', 'tools'):
            shutil.copytree(ROOT / folder, pathlib.Path(tmp) / folder,
                            ignore=shutil.ignore_patterns('__pycache__', '*.so'))
        shutil.copy(ROOT / 'pyproject.toml', tmp)   # pytest's settings
        say(f'Python {name}: running {len(SUBSET)} test files')
        run([python, '-m', 'pytest', *SUBSET, '-q', '--no-header', '-p', 'no:cacheprovider',
             '-p', 'no:randomly'], cwd=tmp)
        # the package tested was the installed one, not a copy of the checkout
        out = subprocess.run(
            [python, '-c', 'import mypgdriver, sqlalchemy; '
             'print(mypgdriver.__file__, sqlalchemy.__version__)'],
            cwd=tmp, capture_output=True, text=True, check=True).stdout.split()
        assert str(venv) in out[0], out
        say(f'Python {name}: passed, with SQLAlchemy {out[1]}')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--python', action='append', metavar='X.Y',
                        help='a version to test (default: the oldest and the newest found)')
    args = parser.parse_args(argv)
    found = {i.version: i for i in find_interpreters()}
    if args.python:
        wanted = [tuple(int(p) for p in v.split('.')) for v in args.python]
    else:
        if (3, 9) not in found:
            raise SystemExit('test_pythons: no Python 3.9 found (PATH, /usr/bin, pyenv): '
                             'the oldest version the package claims must be tested')
        wanted = [(3, 9), max(found)]
    for version in wanted:
        if version not in found:
            raise SystemExit(f'test_pythons: Python {version[0]}.{version[1]} not found')
        test_with(found[version])  # type: ignore[index]
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""Run SQLAlchemy's own PostgreSQL dialect tests against ``postgresql+mypgdriver``.

SQLAlchemy's source distribution (not its wheel) carries its test suite. This
script downloads the sdist of the *installed* SQLAlchemy version from PyPI with
pip into a cache folder (``.cache/sqlalchemy/`` in the checkout, not
committed), unpacks it, prepares a database as SQLAlchemy's
README.unittests.rst asks (UTF8, the schemas ``test_schema`` and
``test_schema_2``, hstore and citext, English text search), and runs the
suites with SQLAlchemy's pytest plugin:

* ``test/dialect/postgresql``: the PostgreSQL dialect's tests;
* ``test/dialect/test_suite.py``: the compliance suite every dialect runs.

It runs them once with ``postgresql+mypgdriver`` and once with
``postgresql+asyncpg`` on the same server, in separate databases, and reports
every test that passes with asyncpg but not with mypgdriver; the exit status
is 1 when there is one.  Without ``--dsn`` it starts a throwaway server with
tools/pgcluster.py.

    python -m tools.sqlalchemy_suite                     # both dialects, compare
    python -m tools.sqlalchemy_suite --dsn postgresql://postgres@127.0.0.1:5432/postgres
    python -m tools.sqlalchemy_suite --only mypgdriver -- -k test_reflection -x
    python -m tools.sqlalchemy_suite --report out.json   # per-test outcomes as JSON

(from the repository root, which puts ``tools`` and ``mypgdriver`` on sys.path).

Arguments after ``--`` go to pytest.  SQLAlchemy's tests need pytest and
greenlet (the project's ``test`` extra installs them).
"""
from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

from tools.pgcluster import ExternalCluster, PgCluster

ROOT = pathlib.Path(__file__).resolve().parent.parent

DEFAULT_CACHE = ROOT / '.cache' / 'sqlalchemy'
SUITES = ('test/dialect/postgresql', 'test/dialect/test_suite.py')
DIALECTS = ('mypgdriver', 'asyncpg')

#: Tests that pass with asyncpg and fail with mypgdriver on purpose (fnmatch
#: patterns over the ids this script prints), with the reason. Each checks
#: how SQLAlchemy's asyncpg adapter is implemented where our dialect replaces
#: that part.
DELIBERATE = {
    'test.dialect.postgresql.test_dialect.MiscBackendTest_postgresql+DRIVER_*'
    '::test_asyncpg_transactional_ping[[]*[]]':
        "mocks the driver connection to count the asyncpg adapter's BEGIN and ROLLBACK "
        'around the pre-ping; mypgdriver pings with one simple-protocol query instead, '
        'which needs no transaction to be safe through poolers',
    'test.dialect.postgresql.test_types.PGInsertManyValuesTest_postgresql+DRIVER_*'
    '::test_imv_returning_datatypes[[]*-BIT[]]':
        "SQLAlchemy 2.0's test binds asyncpg's own BitString class (it imports asyncpg "
        'when the driver is asyncpg); mypgdriver encodes its BitString (the same API), '
        'bytes, and on SQLAlchemy 2.1 the strings the dialect converts',
}

#: Tests that fail with mypgdriver because of driver behaviour that issue 13
#: lists and that is fixed elsewhere (fnmatch patterns, with the reason).
#: They are reported but do not fail the comparison; one that passes again is
#: reported so that it can be taken off this list.
KNOWN_FAILURES = {
}

# The database set up as README.unittests.rst describes; hstore and citext are
# created by the suite itself on PostgreSQL 13+, but creating them here also
# covers older servers.
_DATABASE_SETUP = '''\
CREATE SCHEMA test_schema;
CREATE SCHEMA test_schema_2;
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS citext;
'''


@dataclasses.dataclass
class SuiteRun:
    """The outcome of one dialect's run: test id -> passed/failed/error/skipped."""

    dialect: str
    seconds: float
    outcomes: dict[str, str]
    messages: dict[str, str]
    durations: dict[str, float]
    returncode: int

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    def summary(self) -> str:
        return (f'{self.dialect}: {self.count("passed")} passed, {self.count("failed")} failed, '
                f'{self.count("error")} errors, {self.count("skipped")} skipped '
                f'in {self.seconds:.0f} s')


def installed_sqlalchemy_version() -> str:
    try:
        return importlib.metadata.version('sqlalchemy')
    except importlib.metadata.PackageNotFoundError:
        sys.exit('SQLAlchemy is not installed: pip install -e ".[test]" (or mypgdriver[sqlalchemy])')


def install_sqlalchemy(version: str, cache: pathlib.Path) -> pathlib.Path:
    """A folder holding SQLAlchemy `version` alone, installed once (for ``PYTHONPATH``).

    It goes first on the suite's path, before the environment's own
    SQLAlchemy; greenlet and the drivers come from the environment.
    """
    target = cache / f'site-{version}'
    if (target / 'sqlalchemy' / '__init__.py').exists():
        return target
    partial = cache / f'site-{version}.partial'
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--target', str(partial),
         f'sqlalchemy=={version}'],
        check=True)
    partial.rename(target)
    return target


def fetch_sdist(version: str, cache: pathlib.Path) -> pathlib.Path:
    """The unpacked sdist of SQLAlchemy `version` in `cache`, downloaded once."""
    target = cache / f'sqlalchemy-{version}'
    if (target / 'test' / 'dialect' / 'test_suite.py').exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        subprocess.run(
            [sys.executable, '-m', 'pip', 'download', '-q', '--no-binary', ':all:', '--no-deps',
             f'sqlalchemy=={version}', '-d', tmp],
            check=True)
        archives = list(pathlib.Path(tmp).glob('*.tar.gz'))
        if len(archives) != 1:
            raise SystemExit(f'expected one sdist from pip download, got {archives}')
        with tarfile.open(archives[0]) as tar:
            if hasattr(tarfile, 'data_filter'):  # Python 3.12, and 3.9-3.11 security releases
                tar.extractall(tmp, filter='data')
            else:
                tar.extractall(tmp)
        unpacked = [p for p in pathlib.Path(tmp).iterdir() if p.is_dir()]
        if len(unpacked) != 1:
            raise SystemExit(f'unexpected sdist layout: {unpacked}')
        unpacked[0].rename(target)
    return target


def prepare_database(cluster: PgCluster | ExternalCluster, name: str) -> None:
    """(Re)create database `name` the way SQLAlchemy's suite expects it."""
    cluster.psql(f'DROP DATABASE IF EXISTS {name}')
    cluster.psql(f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
    cluster.psql(f"ALTER DATABASE {name} SET default_text_search_config = 'pg_catalog.english'")
    cluster.psql(_DATABASE_SETUP, dbname=name)


def sqlalchemy_url(cluster: PgCluster | ExternalCluster, dialect: str, database: str) -> str:
    dsn = cluster.dsn(database=database)
    return re.sub(r'^postgres(ql)?://', f'postgresql+{dialect}://', dsn)


def normalize_test_id(classname: str, name: str, dialect: str) -> str:
    """A test's id with the dialect's name taken out of its class, to compare runs.

    SQLAlchemy names a backend test's class after the database it runs on
    (``ServerSideCursorsTest_postgresql+asyncpg_async_15_18``); parameters are
    left alone (some name other dialects' URLs).
    """
    classname = classname.replace(f'_postgresql+{dialect}_', '_postgresql+DRIVER_')
    return f'{classname}::{name}'


def read_junit(path: pathlib.Path, dialect: str) -> tuple[dict, dict, dict]:
    """(outcomes, messages, durations) by test id, from pytest's JUnit XML."""
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    durations: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter('testcase'):
        test_id = normalize_test_id(case.get('classname', ''), case.get('name', ''), dialect)
        durations[test_id] = durations.get(test_id, 0.0) + float(case.get('time') or 0)
        outcome = 'passed'
        for child in case:
            if child.tag in ('failure', 'error', 'skipped'):
                outcome = {'failure': 'failed'}.get(child.tag, child.tag)
                messages[test_id] = (child.get('message') or '').strip()[:500]
                break
        # a test failing in its teardown is reported twice: keep the worst
        if outcomes.get(test_id) in ('failed', 'error') and outcome in ('passed', 'skipped'):
            continue
        outcomes[test_id] = outcome
    return outcomes, messages, durations


@dataclasses.dataclass
class StartedRun:
    """One dialect's pytest, running."""

    dialect: str
    junit: pathlib.Path
    proc: subprocess.Popen
    started: float

    def wait(self) -> SuiteRun:
        returncode = self.proc.wait()
        seconds = time.monotonic() - self.started
        if not self.junit.exists():
            raise SystemExit(f'pytest for {self.dialect} wrote no report (exit code {returncode})')
        outcomes, messages, durations = read_junit(self.junit, self.dialect)
        return SuiteRun(self.dialect, seconds, outcomes, messages, durations, returncode)


def start_suite(sdist: pathlib.Path, url: str, dialect: str, workdir: pathlib.Path,
                pytest_args: list[str], quiet: bool, as_asyncpg: bool,
                version: str, site: pathlib.Path | None = None) -> StartedRun:
    """Start SQLAlchemy's suites for `dialect` at `url`; ``.wait()`` gives the outcome."""
    junit = workdir / f'junit-{dialect}.xml'
    env = dict(os.environ)
    # PYTHONNOUSERSITE stops SQLAlchemy's test/conftest.py from putting the
    # sdist's lib/ first: the tests run against the installed SQLAlchemy (as
    # SQLAlchemy's own tox does).
    env['PYTHONNOUSERSITE'] = '1'
    # The checkout comes first for mypgdriver, then SQLAlchemy's own folder
    # when a version other than the installed one runs.
    env['PYTHONPATH'] = os.pathsep.join(str(p) for p in (ROOT, site) if p is not None)
    # run the tests that SQLAlchemy's requirements select for asyncpg
    env['MYPGDRIVER_SQLA_AS_ASYNCPG'] = '1' if as_asyncpg else '0'
    # the plugin stops the run if another SQLAlchemy is imported
    env['MYPGDRIVER_SQLA_VERSION'] = version
    cmd = [
        sys.executable, '-m', 'pytest', *SUITES,
        '-p', 'tools.sqlalchemy_suite_plugin', '-p', 'no:cacheprovider',
        '--rootdir', str(sdist), '--dburi', url,
        # memory and timing tests are excluded as in SQLAlchemy's tox.ini
        '-m', 'not memory_intensive and not mypy',
        # SQLAlchemy's pyproject.toml stops at 250 failures; count them all
        '--maxfail', '1000000',
        '--junitxml', str(junit), '-q', '-rN', '--tb=line', '-W', 'ignore::DeprecationWarning',
        *pytest_args,
    ]
    out = subprocess.DEVNULL if quiet else None
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=sdist, env=env, stdout=out, stderr=out)
    return StartedRun(dialect, junit, proc, started)


def unexpected_success(run: SuiteRun, test_id: str) -> bool:
    """A test marked as failing for asyncpg (``fails_if("+asyncpg")``) that passed."""
    return run.messages.get(test_id, '').startswith('AssertionError: Unexpected success')


def matching(test_id: str, patterns: dict[str, str]) -> str | None:
    """The reason given for the first pattern that matches `test_id`, if any."""
    for pattern, reason in patterns.items():
        if fnmatch.fnmatchcase(test_id, pattern):
            return reason
    return None


@dataclasses.dataclass
class Comparison:
    """Tests that pass with asyncpg and not with mypgdriver, sorted by cause."""

    regressions: list[str]       # unexplained: these fail the comparison
    known: list[str]             # KNOWN_FAILURES
    deliberate: list[str]        # DELIBERATE
    better: list[str]            # expected to fail with asyncpg, pass with mypgdriver
    fixed: list[str]             # KNOWN_FAILURES patterns that no longer fail


def compare(ours: SuiteRun, reference: SuiteRun) -> Comparison:
    lost = sorted(test_id for test_id, outcome in reference.outcomes.items()
                  if outcome == 'passed' and ours.outcomes.get(test_id) != 'passed')
    # a test that SQLAlchemy expects to fail with asyncpg (fails_if) and that
    # passes with mypgdriver fails as an "unexpected success"
    better = [t for t in lost if unexpected_success(ours, t)]
    deliberate = [t for t in lost if t not in better and matching(t, DELIBERATE)]
    known = [t for t in lost if t not in better and t not in deliberate
             and matching(t, KNOWN_FAILURES)]
    explained = set(better) | set(deliberate) | set(known)
    fixed = [pattern for pattern in KNOWN_FAILURES
             if not any(fnmatch.fnmatchcase(t, pattern) for t in known)]
    return Comparison([t for t in lost if t not in explained], known, deliberate, better, fixed)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if '--' in argv:
        at = argv.index('--')
        argv, pytest_args = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dsn', help='a postgresql:// URL of a server to use (superuser); '
                        'default: start a throwaway server')
    parser.add_argument('--only', choices=DIALECTS, help='run one dialect, compare nothing')
    parser.add_argument('--cache', type=pathlib.Path, default=DEFAULT_CACHE,
                        help=f'where the sdist is unpacked (default: {DEFAULT_CACHE})')
    parser.add_argument('--report', type=pathlib.Path,
                        help='write the per-test outcomes and timings as JSON')
    parser.add_argument('--quiet', action='store_true', help="hide pytest's output")
    parser.add_argument('--parallel', action='store_true',
                        help='run the two dialects at the same time, each in its own database '
                        "(on 2 cores the pair takes about as long as one run alone; their output is mixed unless --quiet)")
    parser.add_argument('--own-requirements', action='store_true',
                        help='select the tests for mypgdriver by its own driver name, not as '
                        'for asyncpg (SQLAlchemy then skips the tests it keeps for known '
                        'drivers; no comparison is meaningful)')
    parser.add_argument('--sqlalchemy', metavar='VERSION',
                        help='run with this SQLAlchemy release instead of the installed one '
                        '(installed alone into the cache folder, e.g. 2.0.58)')
    args = parser.parse_args(argv)

    site = None
    if args.sqlalchemy:
        version = args.sqlalchemy
        site = install_sqlalchemy(version, args.cache)
    else:
        version = installed_sqlalchemy_version()
    sdist = fetch_sdist(version, args.cache)
    dialects = (args.only,) if args.only else DIALECTS
    if 'asyncpg' in dialects:
        try:
            importlib.metadata.version('asyncpg')
        except importlib.metadata.PackageNotFoundError:
            sys.exit('asyncpg is needed for the comparison run (or use --only mypgdriver)')

    if args.dsn:
        cluster: PgCluster | ExternalCluster = ExternalCluster(args.dsn)
    else:
        # two-phase commit tests need prepared transactions
        cluster = PgCluster(settings={'max_prepared_transactions': 10})
        cluster.init()
        cluster.start()
    runs: dict[str, SuiteRun] = {}
    started: list[StartedRun] = []
    try:
        with tempfile.TemporaryDirectory(prefix='sqla-suite-') as tmp:
            def finish(run: StartedRun) -> None:
                runs[run.dialect] = run.wait()
                print(f'sqlalchemy_suite: {runs[run.dialect].summary()}', file=sys.stderr)
                cluster.psql(f'DROP DATABASE IF EXISTS sqla_{run.dialect}')

            for dialect in dialects:
                database = f'sqla_{dialect}'
                prepare_database(cluster, database)
                url = sqlalchemy_url(cluster, dialect, database)
                print(f'sqlalchemy_suite: SQLAlchemy {version}, {url}', file=sys.stderr)
                started.append(start_suite(sdist, url, dialect, pathlib.Path(tmp), pytest_args,
                                           args.quiet, as_asyncpg=not args.own_requirements,
                                           version=version, site=site))
                if not args.parallel:
                    finish(started.pop())
            for run in started:
                finish(run)
    finally:
        for run in started:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
        cluster.destroy()

    if len(runs) == 1:
        run = runs[dialects[0]]
        if args.report:
            args.report.write_text(json.dumps({
                'sqlalchemy': version, 'runs': {run.dialect: dataclasses.asdict(run)}}))
        print(run.summary())
        return 0 if run.returncode in (0, 1) else run.returncode

    result = compare(runs['mypgdriver'], runs['asyncpg'])
    if args.report:
        args.report.write_text(json.dumps({
            'sqlalchemy': version,
            'runs': {d: dataclasses.asdict(r) for d, r in runs.items()},
            'comparison': dataclasses.asdict(result),
        }, indent=1, sort_keys=True))
    mine = runs['mypgdriver']
    for run in runs.values():
        print(run.summary())
    sections = [
        (result.better, 'expected by SQLAlchemy to fail with asyncpg, pass with mypgdriver', None),
        (result.deliberate, 'pass with asyncpg, differ on purpose with mypgdriver', DELIBERATE),
        (result.known, 'pass with asyncpg, fail with mypgdriver: known, fixed elsewhere',
         KNOWN_FAILURES),
    ]
    for tests, title, reasons in sections:
        if tests:
            print(f'{len(tests)} tests {title}:')
            for test_id in tests:
                reason = matching(test_id, reasons) if reasons else None
                print(f'  {test_id}' + (f'\n      ({reason})' if reason else ''))
    for pattern in result.fixed:
        print(f'known failure no longer fails, take it off KNOWN_FAILURES: {pattern}')
    if result.regressions:
        print(f'{len(result.regressions)} tests pass with postgresql+asyncpg but not with '
              'postgresql+mypgdriver:')
        for test_id in result.regressions:
            message = mine.messages.get(test_id, '').replace('\n', ' | ')[:300]
            print(f'  {test_id} [{mine.outcomes.get(test_id, "not run")}] {message}')
        return 1
    print('every test that passes with postgresql+asyncpg passes with postgresql+mypgdriver '
          '(apart from those listed above)')
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""Run SQLAlchemy's own PostgreSQL dialect tests against mypgdriver's dialects.

SQLAlchemy's source distribution (not its wheel) carries its test suite. This
script downloads the sdist of the *installed* SQLAlchemy version from PyPI with
pip into a cache folder (``.cache/sqlalchemy/`` in the checkout, not
committed), unpacks it, prepares a database as SQLAlchemy's
README.unittests.rst asks (UTF8, the schemas ``test_schema`` and
``test_schema_2``, hstore and citext, English text search), and runs the
suites with SQLAlchemy's pytest plugin:

* ``test/dialect/postgresql``: the PostgreSQL dialect's tests;
* ``test/dialect/test_suite.py``: the compliance suite every dialect runs.

Each mode pairs one of our dialects with the driver SQLAlchemy ships a
dialect for that the mode is compared with, on the same server, each in its
own database:

* ``async``: ``postgresql+mypgdriver_async`` (the asyncio dialect) against
  ``postgresql+asyncpg``;
* ``sync``: ``postgresql+mypgdriver`` (the DB-API dialect) against
  ``postgresql+psycopg`` (psycopg 3).

It reports every test that passes with the reference driver but not with
ours (apart from each mode's DELIBERATE and KNOWN_FAILURES lists); the exit
status is 1 when there is one.  Without ``--dsn`` it starts a throwaway
server with tools/pgcluster.py.

    python -m tools.sqlalchemy_suite                     # both modes, four runs, compare
    python -m tools.sqlalchemy_suite --mode sync         # postgresql+mypgdriver against psycopg
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
#: Tests that pass with asyncpg and fail with postgresql+mypgdriver_async on
#: purpose (fnmatch patterns over the ids this script prints), with the
#: reason. Each checks how SQLAlchemy's asyncpg adapter is implemented where
#: our dialect replaces that part.
ASYNC_DELIBERATE = {
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

#: Tests that pass with psycopg and fail with postgresql+mypgdriver (the
#: DB-API dialect) on purpose, with the reason.  Most use psycopg's own API
#: (its modules, connection attributes, adapters), which the plugin's aliasing
#: selects for our dialect too.
_PG_TESTS = 'test.dialect.postgresql.test_dialect'
SYNC_DELIBERATE = {
    f'{_PG_TESTS}.MiscBackendTest_postgresql+DRIVER_*::test_psycopg_version':
        "reads the dialect's psycopg_version and psycopg's __version__",
    f'{_PG_TESTS}.MiscBackendTest_postgresql+DRIVER_*::test_psycopg_non_standard_err':
        "imports psycopg's errors module (or psycopg2's extensions) from the DB-API "
        "module's name",
    f'{_PG_TESTS}.MiscBackendTest_postgresql+DRIVER_*::test_initial_transaction_state_psycopg':
        "reads psycopg's connection.info.transaction_status",
    f'{_PG_TESTS}.MiscBackendTest_postgresql+DRIVER_*::test_client_encoding':
        "sets client_encoding=LATIN1: mypgdriver speaks UTF-8 only (as asyncpg), and "
        'the dialect takes no client_encoding argument',
    f'{_PG_TESTS}.Psycopg3Test_postgresql+DRIVER_*::test_client_side_cursor':
        "passes psycopg's cursor_factory= to connect()",
    f'{_PG_TESTS}.Psycopg3Test_postgresql+DRIVER_*::test_hstore_correctly_registered':
        "checks that psycopg's own hstore adapter decodes hstore (use_native_hstore): "
        "hstore values are converted by SQLAlchemy's HSTORE type with mypgdriver",
    f'{_PG_TESTS}.TwoPhaseCommitTest_postgresql+DRIVER_*'
    '::test_provided_id_round_trip[[]*-driverid[]]':
        "makes a transaction id with psycopg's connection.xid(); mypgdriver.dbapi has "
        'no tpc_*() methods (the dialect sends PREPARE TRANSACTION and COMMIT/ROLLBACK '
        'PREPARED itself)',
    # test_insert_text, test_union_result_text, test_intersection_result_text,
    # test_difference_result_text of every range and multirange class
    # (DateTimeTZRMultiangeRoundTripTest included)
    'test.dialect.postgresql.test_types.*RoundTripTest_postgresql+DRIVER_*::test_*_text':
        "binds a range or multirange as a string in PostgreSQL's text form ('[1,4)'): "
        'mypgdriver encodes range parameters in binary from Range objects, as asyncpg '
        '(these tests are not selected for asyncpg)',
    'test.dialect.postgresql.test_types.ArrayEnum_postgresql+DRIVER_*'
    '::test_*[[]*_ArrayOfEnum-*[]]':
        "_ArrayOfEnum is the recipe for drivers that return an array of enum values as "
        "its text ('{a,b}'); mypgdriver decodes it into a list, as asyncpg (the test is "
        'not selected for asyncpg)',
}

#: Tests that fail with one of our dialects because of driver behaviour that
#: is fixed elsewhere (fnmatch patterns, with the reason), per mode.  They are
#: reported but do not fail the comparison; one that passes again is reported
#: so that it can be taken off its list.
ASYNC_KNOWN_FAILURES: dict[str, str] = {
}
SYNC_KNOWN_FAILURES: dict[str, str] = {
}


@dataclasses.dataclass(frozen=True)
class Mode:
    """One of our dialects and the dialect its results are compared with."""

    name: str
    ours: str                     # the URL's driver name: postgresql+<ours>://
    reference: str                # the same for SQLAlchemy's dialect of another driver
    deliberate: dict[str, str]
    known_failures: dict[str, str]

    @property
    def dialects(self) -> tuple[str, str]:
        return (self.ours, self.reference)


MODES = {
    'async': Mode('async', 'mypgdriver_async', 'asyncpg', ASYNC_DELIBERATE, ASYNC_KNOWN_FAILURES),
    'sync': Mode('sync', 'mypgdriver', 'psycopg', SYNC_DELIBERATE, SYNC_KNOWN_FAILURES),
}

#: The dialect's ``driver`` for each URL driver name: SQLAlchemy names a
#: backend test's class after it (``..._postgresql+mypgdriver_async_...`` for
#: the async dialect, whose driver is "mypgdriver" and which is async), and
#: its requirements match it (``only_on("+asyncpg")``).
DRIVER_NAMES = {'mypgdriver_async': 'mypgdriver', 'mypgdriver': 'mypgdriver',
                'asyncpg': 'asyncpg', 'psycopg': 'psycopg'}

#: The module that must be installed for each reference run.
REFERENCE_MODULES = {'asyncpg': 'asyncpg', 'psycopg': 'psycopg'}


def mode_of(dialect: str) -> Mode:
    """The mode that `dialect` (a URL driver name) belongs to."""
    return next(mode for mode in MODES.values() if dialect in mode.dialects)


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
    # A folder of this run's own: two test runs in one checkout may both
    # find the cache empty and install at the same time.
    cache.mkdir(parents=True, exist_ok=True)
    partial = pathlib.Path(tempfile.mkdtemp(dir=cache, prefix=f'site-{version}.partial-'))
    try:
        subprocess.run(
            [sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--target', str(partial),
             f'sqlalchemy=={version}'],
            check=True)
        _move_into_place(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _move_into_place(folder: pathlib.Path, target: pathlib.Path) -> None:
    """Rename `folder` to `target`, unless another run put its own there first."""
    try:
        folder.rename(target)
    except OSError:
        if not target.is_dir():
            raise


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
        _move_into_place(unpacked[0], target)
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
    (``ServerSideCursorsTest_postgresql+asyncpg_async_15_18``, the driver
    being the dialect's ``driver``: see DRIVER_NAMES); parameters are left
    alone (some name other dialects' URLs).
    """
    driver = DRIVER_NAMES.get(dialect, dialect)
    classname = classname.replace(f'_postgresql+{driver}_', '_postgresql+DRIVER_')
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
                pytest_args: list[str], quiet: bool, run_as: str | None,
                version: str, site: pathlib.Path | None = None) -> StartedRun:
    """Start SQLAlchemy's suites for `dialect` at `url`; ``.wait()`` gives the outcome.

    `run_as` names the driver whose tests SQLAlchemy's requirements select
    for our dialect (the reference driver of its mode), or None.
    """
    junit = workdir / f'junit-{dialect}.xml'
    env = dict(os.environ)
    # PYTHONNOUSERSITE stops SQLAlchemy's test/conftest.py from putting the
    # sdist's lib/ first: the tests run against the installed SQLAlchemy (as
    # SQLAlchemy's own tox does).
    env['PYTHONNOUSERSITE'] = '1'
    # The checkout comes first for mypgdriver, then SQLAlchemy's own folder
    # when a version other than the installed one runs.
    env['PYTHONPATH'] = os.pathsep.join(str(p) for p in (ROOT, site) if p is not None)
    # run the tests that SQLAlchemy's requirements select for the reference driver
    env['MYPGDRIVER_SQLA_RUN_AS'] = run_as or ''
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
    """A test marked as failing for the reference (``fails_if("+asyncpg")``) that passed."""
    return run.messages.get(test_id, '').startswith('AssertionError: Unexpected success')


def matching(test_id: str, patterns: dict[str, str]) -> str | None:
    """The reason given for the first pattern that matches `test_id`, if any."""
    for pattern, reason in patterns.items():
        if fnmatch.fnmatchcase(test_id, pattern):
            return reason
    return None


@dataclasses.dataclass
class Comparison:
    """Tests that pass with the reference driver and not with ours, sorted by cause."""

    regressions: list[str]       # unexplained: these fail the comparison
    known: list[str]             # the mode's KNOWN_FAILURES
    deliberate: list[str]        # the mode's DELIBERATE
    better: list[str]            # expected to fail with the reference, pass with ours
    fixed: list[str]             # KNOWN_FAILURES patterns that no longer fail


def compare(ours: SuiteRun, reference: SuiteRun, mode: Mode) -> Comparison:
    lost = sorted(test_id for test_id, outcome in reference.outcomes.items()
                  if outcome == 'passed' and ours.outcomes.get(test_id) != 'passed')
    # a test that SQLAlchemy expects to fail with the reference (fails_if) and
    # that passes with ours fails as an "unexpected success"
    better = [t for t in lost if unexpected_success(ours, t)]
    deliberate = [t for t in lost if t not in better and matching(t, mode.deliberate)]
    known = [t for t in lost if t not in better and t not in deliberate
             and matching(t, mode.known_failures)]
    explained = set(better) | set(deliberate) | set(known)
    fixed = [pattern for pattern in mode.known_failures
             if not any(fnmatch.fnmatchcase(t, pattern) for t in known)]
    return Comparison([t for t in lost if t not in explained], known, deliberate, better, fixed)


def print_comparison(mode: Mode, ours: SuiteRun, result: Comparison) -> bool:
    """Print `result`; true when it has no unexplained regression."""
    mine, theirs = f'postgresql+{mode.ours}', f'postgresql+{mode.reference}'
    sections = [
        (result.better, f'expected by SQLAlchemy to fail with {theirs}, pass with {mine}', None),
        (result.deliberate, f'pass with {theirs}, differ on purpose with {mine}',
         mode.deliberate),
        (result.known, f'pass with {theirs}, fail with {mine}: known, fixed elsewhere',
         mode.known_failures),
    ]
    for tests, title, reasons in sections:
        if tests:
            print(f'{len(tests)} tests {title}:')
            for test_id in tests:
                reason = matching(test_id, reasons) if reasons else None
                print(f'  {test_id}' + (f'\n      ({reason})' if reason else ''))
    for pattern in result.fixed:
        print(f'known failure no longer fails with {mine}, take it off the {mode.name} '
              f'KNOWN_FAILURES: {pattern}')
    if result.regressions:
        print(f'{len(result.regressions)} tests pass with {theirs} but not with {mine}:')
        for test_id in result.regressions:
            message = ours.messages.get(test_id, '').replace('\n', ' | ')[:300]
            print(f'  {test_id} [{ours.outcomes.get(test_id, "not run")}] {message}')
        return False
    print(f'every test that passes with {theirs} passes with {mine} '
          '(apart from those listed above)')
    return True


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if '--' in argv:
        at = argv.index('--')
        argv, pytest_args = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dsn', help='a postgresql:// URL of a server to use (superuser); '
                        'default: start a throwaway server')
    parser.add_argument('--mode', choices=(*MODES, 'both'), default='both',
                        help='async: postgresql+mypgdriver_async against asyncpg; sync: '
                        'postgresql+mypgdriver against psycopg; both (the default)')
    parser.add_argument('--only', choices=tuple(DRIVER_NAMES),
                        help='run one dialect, compare nothing')
    parser.add_argument('--cache', type=pathlib.Path, default=DEFAULT_CACHE,
                        help=f'where the sdist is unpacked (default: {DEFAULT_CACHE})')
    parser.add_argument('--report', type=pathlib.Path,
                        help='write the per-test outcomes and timings as JSON')
    parser.add_argument('--quiet', action='store_true', help="hide pytest's output")
    parser.add_argument('--parallel', metavar='N', nargs='?', type=int, const=0, default=1,
                        help='run N dialects at the same time (all of them without N), each '
                        'in its own database (on 2 cores a pair takes about as long as one run '
                        'alone; their output is mixed unless --quiet)')
    parser.add_argument('--own-requirements', action='store_true',
                        help='select the tests for our dialects by their own driver name, not '
                        "as for their mode's reference driver (SQLAlchemy then skips the tests "
                        'it keeps for known drivers; no comparison is meaningful)')
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
    if args.only:
        modes = [mode_of(args.only)]
        dialects: list[str] = [args.only]
    else:
        modes = list(MODES.values()) if args.mode == 'both' else [MODES[args.mode]]
        dialects = [dialect for mode in modes for dialect in mode.dialects]
    for dialect in dialects:
        module = REFERENCE_MODULES.get(dialect)
        if module is None:
            continue
        try:
            importlib.metadata.version(module)
        except importlib.metadata.PackageNotFoundError:
            sys.exit(f'{module} is needed for the comparison run (pip install -e ".[test]", '
                     'or use --only)')

    if args.dsn:
        cluster: PgCluster | ExternalCluster = ExternalCluster(args.dsn)
    else:
        # two-phase commit tests need prepared transactions
        cluster = PgCluster(settings={'max_prepared_transactions': 10})
        cluster.init()
        cluster.start()
    at_once = args.parallel if args.parallel > 0 else len(dialects)
    runs: dict[str, SuiteRun] = {}
    running: list[StartedRun] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix='sqla-suite-') as tmp:
            def finish(run: StartedRun) -> None:
                running.remove(run)
                runs[run.dialect] = run.wait()
                print(f'sqlalchemy_suite: {runs[run.dialect].summary()}', file=sys.stderr)
                cluster.psql(f'DROP DATABASE IF EXISTS sqla_{run.dialect}')

            for dialect in dialects:
                while len(running) >= at_once:
                    done = [run for run in running if run.proc.poll() is not None]
                    if done:
                        finish(done[0])
                    else:
                        time.sleep(0.5)
                database = f'sqla_{dialect}'
                prepare_database(cluster, database)
                url = sqlalchemy_url(cluster, dialect, database)
                mode = mode_of(dialect)
                run_as = (mode.reference if dialect == mode.ours and not args.own_requirements
                          else None)
                print(f'sqlalchemy_suite: SQLAlchemy {version}, {url}'
                      + (f' (tests selected as for {run_as})' if run_as else ''), file=sys.stderr)
                running.append(start_suite(sdist, url, dialect, pathlib.Path(tmp), pytest_args,
                                           args.quiet, run_as=run_as, version=version,
                                           site=site))
            while running:
                finish(running[0])
    finally:
        for run in running:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
        cluster.destroy()
    seconds = time.monotonic() - started

    report: dict[str, object] = {
        'sqlalchemy': version,
        'seconds': seconds,
        'runs': {d: dataclasses.asdict(r) for d, r in runs.items()},
    }
    if args.only:
        run = runs[args.only]
        if args.report:
            args.report.write_text(json.dumps(report))
        print(run.summary())
        return 0 if run.returncode in (0, 1) else run.returncode

    for run in runs.values():
        print(run.summary())
    print(f'{len(runs)} runs in {seconds:.0f} s, {at_once} at a time')
    comparisons = {}
    ok = True
    for mode in modes:
        result = compare(runs[mode.ours], runs[mode.reference], mode)
        comparisons[mode.name] = dataclasses.asdict(result)
        print(f'-- {mode.name} mode: postgresql+{mode.ours} against postgresql+{mode.reference}')
        ok = print_comparison(mode, runs[mode.ours], result) and ok
    report['comparisons'] = comparisons
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, sort_keys=True))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

"""The asyncio SQLAlchemy dialect (mypgdriver/sqlalchemy_dialect.py).

``create_async_engine("postgresql+mypgdriver://...")`` runs on it (the
DB-API dialect's get_async_dialect_cls), and so does
``postgresql+mypgdriver_async``; the DB-API dialect that ``create_engine()``
uses is tested in test_sqlalchemy_sync.py.

SQLAlchemy's own dialect suites run against it in test_sqlalchemy_suite.py;
these tests cover what our dialect does differently from SQLAlchemy's asyncpg
dialect, which it builds on.
"""
from __future__ import annotations

import asyncio
import pathlib
import subprocess
import sys
from typing import Any, AsyncIterator

import pytest

sqlalchemy = pytest.importorskip('sqlalchemy', reason='the test extra installs SQLAlchemy')
pytest.importorskip('greenlet', reason='SQLAlchemy[asyncio] installs greenlet')

from sqlalchemy import exc, text  # noqa: E402
from sqlalchemy.dialects import registry  # noqa: E402
from sqlalchemy.engine import URL  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The checkout's dialects, whether or not the installed entry points are current.
registry.register('postgresql.mypgdriver', 'mypgdriver.sqlalchemy_sync', 'PGDialectSync_mypgdriver')
registry.register('postgresql.mypgdriver_async', 'mypgdriver.sqlalchemy_dialect',
                  'PGDialectAsync_mypgdriver')


@pytest.fixture
def url(connect_kwargs: dict[str, Any]) -> URL:
    return URL.create(
        'postgresql+mypgdriver', username=connect_kwargs['user'],
        password=connect_kwargs.get('password'), host=connect_kwargs['host'],
        port=connect_kwargs['port'], database=connect_kwargs['database'])


@pytest.fixture
async def engine(url: URL) -> AsyncIterator[Any]:
    engine = create_async_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


def test_importing_mypgdriver_does_not_import_sqlalchemy() -> None:
    code = 'import sys, mypgdriver; sys.exit("sqlalchemy" in sys.modules)'
    subprocess.run([sys.executable, '-c', code], cwd=ROOT, check=True)


def test_entry_point_names_the_dialect_class() -> None:
    tomllib = pytest.importorskip('tomllib')
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        project = tomllib.load(f)['project']
    target = project['entry-points']['sqlalchemy.dialects']['postgresql.mypgdriver']
    module, _, name = target.partition(':')
    dialect = getattr(__import__(module, fromlist=[name]), name)
    assert dialect.driver == 'mypgdriver' and dialect.name == 'postgresql'
    assert any(req.startswith('sqlalchemy') for req in project['optional-dependencies']['sqlalchemy'])
    assert not project['dependencies']


def test_an_older_sqlalchemy_is_refused_with_the_release_needed() -> None:
    # a fresh interpreter that imports the dialect with SQLAlchemy claiming
    # an older release
    code = ('import sqlalchemy; sqlalchemy.__version__ = "2.0.43"\n'
            'try:\n'
            '    import mypgdriver.sqlalchemy_dialect\n'
            'except ImportError as e:\n'
            '    print(e)\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    assert out.startswith('postgresql+mypgdriver needs SQLAlchemy 2.0.44 or newer (2.0 or 2.1), '
                          'found SQLAlchemy 2.0.43: pip install'), out


async def test_engine_runs_queries_with_parameters_and_rowcount(engine: Any) -> None:
    async with engine.begin() as conn:
        await conn.execute(text('CREATE TEMP TABLE sa_items (id int, name text)'))
        result = await conn.execute(text('INSERT INTO sa_items VALUES (:id, :name)'),
                                    [{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'}])
        result = await conn.execute(text("UPDATE sa_items SET name = name || 'x'"))
        assert result.rowcount == 2
        rows = (await conn.execute(text('SELECT id, name FROM sa_items WHERE id > :m ORDER BY id'),
                                   {'m': 0})).all()
    assert [tuple(r) for r in rows] == [(1, 'ax'), (2, 'bx')]
    assert engine.dialect.driver == 'mypgdriver'
    assert type(engine.dialect.dbapi).__module__ == 'mypgdriver.sqlalchemy_dialect'


@pytest.mark.parametrize('setup, sql, sa_class', [
    ((), 'SELECT 1/0', exc.DataError),
    ((), "SELECT 'x'::int", exc.DataError),
    ((), 'SELEC 1', exc.ProgrammingError),
    ((), 'SELECT count(*) FROM pg_class FOR UPDATE', exc.NotSupportedError),
    (('SET statement_timeout = 1',), 'SELECT pg_sleep(1)', exc.OperationalError),
    ((), 'LOCK TABLE pg_class IN ACCESS EXCLUSIVE MODE', exc.InternalError),
])
async def test_errors_become_the_pep249_class_of_their_sqlstate(
        engine: Any, setup: tuple, sql: str, sa_class: type) -> None:
    # SQLAlchemy's asyncpg dialect raises the generic DBAPIError for these.
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level='AUTOCOMMIT')
        for statement in setup:
            await conn.execute(text(statement))
        with pytest.raises(sa_class):
            await conn.execute(text(sql))


async def test_driver_errors_are_translated_with_sqlstate(engine: Any) -> None:
    import mypgdriver

    async with engine.begin() as conn:
        await conn.execute(text('CREATE TEMP TABLE u (a int UNIQUE)'))
        await conn.execute(text('INSERT INTO u VALUES (1)'))
        with pytest.raises(exc.IntegrityError) as info:
            await conn.execute(text('INSERT INTO u VALUES (1)'))
    assert isinstance(info.value.orig.driver_exception, mypgdriver.UniqueViolationError)
    assert info.value.orig.sqlstate == info.value.orig.pgcode == '23505'
    assert type(info.value.orig).__name__ == 'UniqueViolationError'


async def test_errors_name_the_dialects_classes_not_asyncpgs(engine: Any) -> None:
    from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg

    from mypgdriver import sqlalchemy_dialect

    async with engine.begin() as conn:
        await conn.execute(text('CREATE TEMP TABLE v (a int UNIQUE)'))
        await conn.execute(text('INSERT INTO v VALUES (1)'))
        with pytest.raises(exc.IntegrityError) as info:
            await conn.execute(text('INSERT INTO v VALUES (1)'))
    orig = info.value.orig
    assert type(orig) is sqlalchemy_dialect.UniqueViolationError
    assert type(orig).__module__ == 'mypgdriver.sqlalchemy_dialect'
    # what users' logs show
    assert str(info.value).startswith('(mypgdriver.sqlalchemy_dialect.UniqueViolationError) ')
    assert 'sqlalchemy.dialects.postgresql.asyncpg' not in str(info.value)
    # still the PEP 249 class of the dialect's DBAPI, and the asyncpg adapter's
    assert isinstance(orig, engine.dialect.dbapi.IntegrityError)
    assert isinstance(orig, engine.dialect.dbapi.Error)
    assert isinstance(orig, sa_asyncpg.AsyncAdapt_asyncpg_dbapi.IntegrityError)
    assert engine.dialect.dbapi.UniqueViolationError is sqlalchemy_dialect.UniqueViolationError


async def test_a_stale_cached_statement_says_the_caches_are_cleared_then_works(
        engine: Any) -> None:
    # The dialect's own statement cache holds a prepared statement whose
    # result type then changes under it (another session's ALTER TABLE).
    async with engine.begin() as conn:
        await conn.execute(text('DROP TABLE IF EXISTS sa_stale'))
        await conn.execute(text('CREATE TABLE sa_stale (a int)'))
        await conn.execute(text('INSERT INTO sa_stale VALUES (1)'))
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text('SELECT * FROM sa_stale'))).all() == [(1,)]
        other = create_async_engine(engine.url)
        async with other.begin() as conn:
            await conn.execute(text('ALTER TABLE sa_stale ALTER COLUMN a TYPE bigint'))
        await other.dispose()
        async with engine.connect() as conn:
            with pytest.raises(exc.NotSupportedError) as info:
                await conn.execute(text('SELECT * FROM sa_stale'))
        first_line = str(info.value.orig).splitlines()[0]
        assert first_line.endswith('(SQLAlchemy asyncpg dialect will now invalidate all '
                                   'prepared caches in response to this exception)')
        assert info.value.orig.sqlstate == '0A000'
        async with engine.connect() as conn:
            assert (await conn.execute(text('SELECT * FROM sa_stale'))).all() == [(1,)]
    finally:
        async with engine.begin() as conn:
            await conn.execute(text('DROP TABLE sa_stale'))


@pytest.mark.skipif(not hasattr(sqlalchemy.util.concurrency, 'await_fallback'),
                    reason="SQLAlchemy 2.0's async_fallback mode (2.1 has none)")
def test_async_fallback_mode_of_sqlalchemy_2_0(url: URL) -> None:
    import warnings

    from sqlalchemy import create_engine

    # the mode runs each coroutine with the thread's event loop
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        engine = create_engine(url.set(drivername='postgresql+mypgdriver_async')
                               .update_query_dict({'async_fallback': 'true'}))
    try:
        with engine.connect() as conn:
            assert conn.execute(text('SELECT CAST(:a AS int) + 1'), {'a': 41}).scalar() == 42
            rows = conn.execution_options(stream_results=True).execute(
                text('SELECT g FROM generate_series(1, 120) g')).all()
            assert [r[0] for r in rows] == list(range(1, 121))
    finally:
        engine.dispose()
        asyncio.set_event_loop(None)
        loop.close()


def test_runs_on_the_sqlalchemy_release_asked_for() -> None:
    # test_sqlalchemy_suite.py runs this file with another release first on
    # the path, and says which in MYPGDRIVER_SQLA_VERSION
    import os

    expected = os.environ.get('MYPGDRIVER_SQLA_VERSION')
    if expected is None:
        pytest.skip('run with the installed SQLAlchemy')
    assert sqlalchemy.__version__ == expected


async def test_a_failed_connection_attempt_is_raised_as_each_release_raises_it(url: URL) -> None:
    # docs/guide/sqlalchemy.rst: 2.1 translates it (3D000 -> ProgrammingError);
    # 2.0 lets the driver's exception through, as +asyncpg on 2.0
    import mypgdriver
    from mypgdriver.sqlalchemy_dialect import SQLALCHEMY_2_0

    engine = create_async_engine(url.set(database='mypg_no_such_database'))
    try:
        expected = mypgdriver.InvalidCatalogNameError if SQLALCHEMY_2_0 else exc.ProgrammingError
        with pytest.raises(expected):
            async with engine.connect():
                pass
    finally:
        await engine.dispose()


async def test_terminated_backend_invalidates_the_pooled_connection(engine: Any) -> None:
    async with engine.connect() as conn:
        pid = (await conn.execute(text('SELECT pg_backend_pid()'))).scalar()
        async with engine.connect() as killer:
            await killer.execute(text('SELECT pg_terminate_backend(:p)'), {'p': pid})
        with pytest.raises(exc.DBAPIError) as info:
            await conn.execute(text('SELECT 1'))
        assert info.value.connection_invalidated
    async with engine.connect() as conn:  # the pool made a new connection
        assert (await conn.execute(text('SELECT pg_backend_pid()'))).scalar() != pid


async def test_pre_ping_is_one_simple_query(url: URL) -> None:
    engine = create_async_engine(url, pool_pre_ping=True, pool_size=1)
    try:
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver_conn = raw.driver_connection
        logged: list[str] = []
        driver_conn.add_query_logger(lambda record: logged.append(record.query))
        async with engine.connect() as conn:  # checks the pooled connection out: pings it
            assert (await conn.get_raw_connection()).driver_connection is driver_conn
        assert logged[0] == ';'
        assert not any(q.upper().startswith('BEGIN') for q in logged[:1])
    finally:
        await engine.dispose()


async def test_pre_ping_replaces_a_dead_connection(url: URL, engine: Any) -> None:
    pinging = create_async_engine(url, pool_pre_ping=True, pool_size=1)
    try:
        async with pinging.connect() as conn:
            pid = (await conn.execute(text('SELECT pg_backend_pid()'))).scalar()
        async with engine.connect() as killer:
            await killer.execute(text('SELECT pg_terminate_backend(:p)'), {'p': pid})
        async with pinging.connect() as conn:
            assert (await conn.execute(text('SELECT pg_backend_pid()'))).scalar() != pid
    finally:
        await pinging.dispose()


async def test_stream_results_returns_every_row_in_order(engine: Any) -> None:
    async with engine.connect() as conn:
        result = await conn.stream(text('SELECT g FROM generate_series(1, 5000) g'))
        seen = [row[0] async for row in result]
        partitions = await conn.stream(text('SELECT g FROM generate_series(1, 1234) g'))
        sizes = [len(p) async for p in partitions.partitions(500)]
    assert seen == list(range(1, 5001))
    assert sizes == [500, 500, 234]


async def test_server_side_batches_grow_to_a_thousand_rows(engine: Any,
                                                           monkeypatch: Any) -> None:
    from mypgdriver import sqlalchemy_dialect

    batches: list[int] = []
    original = sqlalchemy_dialect._MyPgDriverServerSideCursor._buffer_rows

    def recording(self: Any) -> None:
        before = len(self._rowbuffer)
        original(self)
        batches.append(len(self._rowbuffer) - before)

    monkeypatch.setattr(sqlalchemy_dialect._MyPgDriverServerSideCursor, '_buffer_rows', recording)
    async with engine.connect() as conn:
        result = await conn.stream(text('SELECT g FROM generate_series(1, 3000) g'))
        assert len([row async for row in result]) == 3000
    # SQLAlchemy also asks for rows itself (fetchmany), in between
    assert batches[:4] == [50, 100, 200, 400]

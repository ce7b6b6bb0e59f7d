"""The DB-API SQLAlchemy dialect (mypgdriver/sqlalchemy_sync.py).

``create_engine("postgresql+mypgdriver://...")`` runs on mypgdriver.dbapi;
SQLAlchemy's own dialect suites run against it in test_sqlalchemy_suite.py
(compared with psycopg's results), and these tests check the round trips an
application makes: Core and ORM, types, transactions, isolation levels,
server-side cursors, insertmanyvalues, errors, pool pre-ping and
disconnects, and pandas.read_sql.
"""
from __future__ import annotations

import datetime
import decimal
import enum
import pathlib
import subprocess
import sys
import uuid
from typing import Any, Iterator

import pytest

sqlalchemy = pytest.importorskip('sqlalchemy', reason='the test extra installs SQLAlchemy')

from sqlalchemy import (  # noqa: E402
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Integer,
    Interval,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    Time,
    Uuid,
    any_,
    create_engine,
    event,
    exc,
    insert,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, registry  # noqa: E402
from sqlalchemy.engine import URL, Engine  # noqa: E402
from sqlalchemy.orm import (  # noqa: E402
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
)

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
def engine(url: URL) -> Iterator[Engine]:
    engine = create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def other(url: URL) -> Iterator[Engine]:
    """A second engine: another session that sees only committed rows."""
    engine = create_engine(url, isolation_level='AUTOCOMMIT')
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def metadata(engine: Engine) -> Iterator[MetaData]:
    metadata = MetaData()
    try:
        yield metadata
    finally:
        metadata.drop_all(engine)


# --- the URL names ---

def test_entry_points_name_the_sync_and_the_async_dialects() -> None:
    tomllib = pytest.importorskip('tomllib')
    from mypgdriver.sqlalchemy_dialect import PGDialectAsync_mypgdriver
    from mypgdriver.sqlalchemy_sync import PGDialectSync_mypgdriver

    with open(ROOT / 'pyproject.toml', 'rb') as f:
        points = tomllib.load(f)['project']['entry-points']['sqlalchemy.dialects']
    assert points == {
        'postgresql.mypgdriver': 'mypgdriver.sqlalchemy_sync:PGDialectSync_mypgdriver',
        'postgresql.mypgdriver_async':
            'mypgdriver.sqlalchemy_dialect:PGDialectAsync_mypgdriver',
    }
    assert PGDialectSync_mypgdriver.driver == PGDialectAsync_mypgdriver.driver == 'mypgdriver'
    assert not PGDialectSync_mypgdriver.is_async and PGDialectAsync_mypgdriver.is_async


def test_create_engine_runs_on_the_dbapi_and_create_async_engine_on_asyncio(url: URL) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    import mypgdriver.dbapi
    from mypgdriver.sqlalchemy_dialect import PGDialectAsync_mypgdriver
    from mypgdriver.sqlalchemy_sync import PGDialectSync_mypgdriver

    sync_engine = create_engine(url)
    async_engine = create_async_engine(url)
    named_async = create_async_engine(url.set(drivername='postgresql+mypgdriver_async'))
    try:
        assert type(sync_engine.dialect) is PGDialectSync_mypgdriver
        assert sync_engine.dialect.dbapi is mypgdriver.dbapi
        assert type(async_engine.dialect) is PGDialectAsync_mypgdriver
        assert type(named_async.dialect) is PGDialectAsync_mypgdriver
        with sync_engine.connect() as conn:
            assert isinstance(conn.connection.driver_connection, mypgdriver.dbapi.Connection)
            assert conn.execute(text('SELECT 41 + :n'), {'n': 1}).scalar() == 42
    finally:
        sync_engine.dispose()


def test_an_older_sqlalchemy_is_refused_with_the_release_needed() -> None:
    code = ('import sqlalchemy; sqlalchemy.__version__ = "2.0.43"\n'
            'try:\n'
            '    import mypgdriver.sqlalchemy_sync\n'
            'except ImportError as e:\n'
            '    print(e)\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    assert out.startswith('postgresql+mypgdriver needs SQLAlchemy 2.0.44 or newer'), out


# --- Core and ORM ---

def test_core_round_trip_with_parameters_and_rowcounts(engine: Engine,
                                                       metadata: MetaData) -> None:
    users = Table('sa_sync_users', metadata,
                  Column('id', Integer, primary_key=True),
                  Column('name', String(40), nullable=False),
                  Column('score', Integer))
    metadata.create_all(engine)
    with engine.begin() as conn:
        result = conn.execute(insert(users), [
            {'id': 1, 'name': 'ada', 'score': 10},
            {'id': 2, 'name': 'bob', 'score': 20},
            {'id': 3, 'name': '50% off', 'score': 30},
        ])
        assert result.rowcount == 3
        updated = conn.execute(users.update().where(users.c.score >= 20)
                               .values(score=users.c.score + 1))
        assert updated.rowcount == 2
    with engine.connect() as conn:
        rows = conn.execute(select(users.c.id, users.c.name, users.c.score)
                            .order_by(users.c.id)).all()
        assert [tuple(r) for r in rows] == [(1, 'ada', 10), (2, 'bob', 21), (3, '50% off', 31)]
        assert conn.execute(select(users.c.name).where(users.c.name.like('%\\%%'))
                            ).scalars().all() == ['50% off']
        # a literal percent sign in a text() query next to a parameter
        assert conn.execute(text("SELECT '100%' || :s"), {'s': '!'}).scalar() == '100%!'
        assert conn.exec_driver_sql('SELECT %(a)s::int * 2', {'a': 21}).scalar() == 42


class _Base(DeclarativeBase):
    pass


class _Author(_Base):
    __tablename__ = 'sa_sync_authors'
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    books: Mapped[list[_Book]] = relationship(back_populates='author', order_by='_Book.id')


class _Book(_Base):
    __tablename__ = 'sa_sync_books'
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    author_id: Mapped[int] = mapped_column(ForeignKey('sa_sync_authors.id'))
    author: Mapped[_Author] = relationship(back_populates='books')


@pytest.fixture
def orm_tables(engine: Engine) -> Iterator[None]:
    _Base.metadata.create_all(engine)
    try:
        yield
    finally:
        _Base.metadata.drop_all(engine)


def test_orm_round_trip(engine: Engine, orm_tables: None) -> None:
    with Session(engine) as session:
        author = _Author(name='Le Guin', books=[_Book(title='The Dispossessed'),
                                                _Book(title='The Lathe of Heaven')])
        session.add(author)
        session.commit()
        author_id = author.id
        assert [b.id for b in author.books] == [1, 2]  # server-generated, RETURNING
    with Session(engine) as session:
        loaded = session.get(_Author, author_id)
        assert loaded is not None
        assert (loaded.name, [b.title for b in loaded.books]) == (
            'Le Guin', ['The Dispossessed', 'The Lathe of Heaven'])
        loaded.books[0].title = 'The Dispossessed (1974)'
        session.commit()
        titles = session.scalars(select(_Book.title).join(_Book.author)
                                 .where(_Author.name == 'Le Guin').order_by(_Book.id)).all()
        assert titles == ['The Dispossessed (1974)', 'The Lathe of Heaven']


# --- types ---

class _Mood(enum.Enum):
    happy = 'happy'
    sad = 'sad'


def test_types_round_trip_with_exact_values(engine: Engine, metadata: MetaData) -> None:
    values = Table(
        'sa_sync_types', metadata,
        Column('id', Integer, primary_key=True),
        Column('big', BigInteger),
        Column('amount', Numeric(12, 4)),
        Column('ratio', Float),
        Column('ratio_as_decimal', Numeric(10, 2, asdecimal=True)),
        Column('flag', Boolean),
        Column('day', Date),
        Column('at', DateTime(timezone=True)),
        Column('naive', DateTime),
        Column('clock', Time),
        Column('span', Interval),
        Column('doc', JSON),
        Column('docb', postgresql.JSONB),
        Column('ints', postgresql.ARRAY(Integer)),
        Column('words', postgresql.ARRAY(Text)),
        Column('key', Uuid),
        Column('mood', Enum(_Mood, name='sa_sync_mood')),
        Column('blob', LargeBinary),
        Column('period', postgresql.INT4RANGE),
    )
    metadata.create_all(engine)
    at = datetime.datetime(2026, 11, 28, 12, 30, 15, 123456, tzinfo=datetime.timezone.utc)
    key = uuid.UUID('12345678-1234-5678-1234-567812345678')
    row = {
        'id': 1, 'big': 2 ** 62, 'amount': decimal.Decimal('12345678.9012'), 'ratio': 0.25,
        'ratio_as_decimal': decimal.Decimal('3.14'), 'flag': True,
        'day': datetime.date(2026, 2, 28), 'at': at,
        'naive': datetime.datetime(2000, 1, 1, 0, 0, 1), 'clock': datetime.time(23, 59, 58),
        'span': datetime.timedelta(days=3, seconds=7), 'doc': {'a': [1, 2.5, None, 'x']},
        'docb': {'nested': {'k': True}, 'n': 1}, 'ints': [1, 2, 3], 'words': ['a', "b'c", ''],
        'key': key, 'mood': _Mood.sad, 'blob': b'\x00\xffbytes',
        'period': postgresql.Range(1, 10),
    }
    with engine.begin() as conn:
        conn.execute(insert(values), row)
        conn.execute(insert(values), {'id': 2})
    with engine.connect() as conn:
        got = conn.execute(select(values).where(values.c.id == 1)).mappings().one()
        assert dict(got) == {**row, 'period': postgresql.Range(1, 10, bounds='[)')}
        assert type(got['amount']) is decimal.Decimal and type(got['key']) is uuid.UUID
        nulls = conn.execute(select(values).where(values.c.id == 2)).one()
        assert tuple(nulls) == (2,) + (None,) * 18
        # json and jsonb: the server compares, SQLAlchemy's operators bind
        assert conn.execute(select(values.c.id).where(
            values.c.docb['nested']['k'].as_boolean())).scalar() == 1
        assert conn.execute(select(values.c.doc['a'][1].as_float())).first() == (2.5,)
        assert conn.execute(select(values.c.id).where(
            values.c.docb.contains({'n': 1}))).scalar() == 1
        assert conn.execute(select(values.c.id).where(any_(values.c.ints) == 2)).scalar() == 1
        assert conn.execute(select(values.c.id).where(
            values.c.mood == _Mood.sad)).scalar() == 1
        assert conn.execute(select(values.c.id).where(values.c.key == key)).scalar() == 1
        assert conn.exec_driver_sql("SELECT '{\"a\": 1}'::jsonb, '[1]'::json").one() == (
            {'a': 1}, [1])


def test_bit_strings_round_trip_as_each_release_returns_them(engine: Engine,
                                                            metadata: MetaData) -> None:
    from mypgdriver.sqlalchemy_dialect import SQLALCHEMY_2_0

    bits = Table('sa_sync_bits', metadata, Column('id', Integer, primary_key=True),
                 Column('b', postgresql.BIT(6)))
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(bits), [{'id': 1, 'b': '011010'}])
        value = conn.execute(select(bits.c.b).where(bits.c.id == 1)).scalar()
    # 2.0: the string of bits, as psycopg returns it there; 2.1: SQLAlchemy's
    # BitString (a str subclass), as for every driver
    assert value == '011010'
    assert type(value) is str if SQLALCHEMY_2_0 else type(value).__name__ == 'BitString'


def test_json_uses_the_engines_serializer_and_deserializer(url: URL,
                                                          metadata: MetaData) -> None:
    def loads(s: bytes) -> Any:  # bytes, as psycopg gives them
        return ('decoded', s)

    engine = create_engine(url, json_serializer=lambda v: '{"fixed": 1}',
                           json_deserializer=loads)
    try:
        docs = Table('sa_sync_json', metadata, Column('id', Integer, primary_key=True),
                     Column('doc', postgresql.JSONB))
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(docs), {'id': 1, 'doc': {'ignored': True}})
            assert conn.execute(select(docs.c.doc)).scalar() == ('decoded', b'{"fixed": 1}')
    finally:
        engine.dispose()


def test_a_cached_statement_is_prepared_again_after_ddl_on_any_connection(url: URL) -> None:
    # The same SELECT text over a table dropped and created again with
    # another column type: the DB-API connections' cached statements would
    # fail ("cached plan must not change result type") inside their
    # transaction.  The DDL runs on one connection, the SELECT on both.
    engine = create_engine(url, pool_size=2)
    try:
        first, second = engine.connect(), engine.connect()
        for kind, value in ((Integer, 7), (String(10), 'seven'), (Uuid, uuid.UUID(int=7))):
            metadata = MetaData()
            table = Table('sa_sync_ddl', metadata, Column('x', kind))
            metadata.create_all(first)
            first.execute(insert(table), {'x': value})
            first.commit()
            for conn in (first, second):
                assert conn.execute(select(table.c.x)).scalar() == value
                conn.rollback()
            metadata.drop_all(first)
            first.commit()
        first.close()
        second.close()
    finally:
        engine.dispose()


# --- transactions, savepoints, isolation levels ---

def _names(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text('SELECT name FROM sa_sync_tx ORDER BY name')).scalars())


@pytest.fixture
def tx_table(engine: Engine) -> Iterator[None]:
    with engine.begin() as conn:
        conn.execute(text('CREATE TABLE sa_sync_tx (name text PRIMARY KEY)'))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text('DROP TABLE sa_sync_tx'))


def test_commit_and_rollback_as_another_session_sees_them(engine: Engine, other: Engine,
                                                          tx_table: None) -> None:
    with engine.connect() as conn:
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('pending')"))
        assert _names(other) == []  # not committed yet
        conn.rollback()
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('kept')"))
        conn.commit()
    assert _names(other) == ['kept']


def test_savepoints(engine: Engine, other: Engine, tx_table: None) -> None:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('outer')"))
        with pytest.raises(exc.IntegrityError):
            with conn.begin_nested():
                conn.execute(text("INSERT INTO sa_sync_tx VALUES ('inner')"))
                conn.execute(text("INSERT INTO sa_sync_tx VALUES ('outer')"))
        savepoint = conn.begin_nested()
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('second')"))
        savepoint.commit()
        assert _names(other) == []
    assert _names(other) == ['outer', 'second']


@pytest.mark.parametrize('level', ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE'])
def test_isolation_levels_reach_the_server(engine: Engine, level: str) -> None:
    with engine.connect().execution_options(isolation_level=level) as conn:
        assert conn.get_isolation_level() == level
        assert conn.execute(text('SHOW transaction_isolation')).scalar() == level.lower()
    with engine.connect() as conn:  # the pool resets it
        assert conn.get_isolation_level() == 'READ COMMITTED'
        assert conn.execute(text('SHOW transaction_isolation')).scalar() == 'read committed'
        assert conn.execute(text('SELECT now() = statement_timestamp()')).scalar() is False


def test_autocommit_commits_each_statement(engine: Engine, other: Engine,
                                           tx_table: None) -> None:
    with engine.connect().execution_options(isolation_level='AUTOCOMMIT') as conn:
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('at once')"))
        assert _names(other) == ['at once']
        # no transaction block is open: a statement that refuses one runs
        conn.execute(text('VACUUM sa_sync_tx'))


def test_read_only_and_deferrable_transactions(engine: Engine, tx_table: None) -> None:
    with engine.connect().execution_options(postgresql_readonly=True,
                                            postgresql_deferrable=True,
                                            isolation_level='SERIALIZABLE') as conn:
        assert conn.execute(text('SHOW transaction_read_only')).scalar() == 'on'
        assert conn.execute(text('SHOW transaction_deferrable')).scalar() == 'on'
        with pytest.raises(exc.InternalError) as info:
            conn.execute(text("INSERT INTO sa_sync_tx VALUES ('no')"))
        assert info.value.orig.sqlstate == '25006'  # type: ignore[union-attr]
    with engine.connect() as conn:
        assert conn.execute(text('SHOW transaction_read_only')).scalar() == 'off'


# --- server-side cursors and insertmanyvalues ---

_CURSORS = text("SELECT name, is_holdable FROM pg_cursors WHERE name LIKE 'sqla\\_%'")


def test_stream_results_uses_a_server_side_cursor(engine: Engine) -> None:
    with engine.connect() as conn:
        result = conn.execute(text('SELECT g FROM generate_series(1, 5000) g')
                              .execution_options(stream_results=True, max_row_buffer=100))
        first = [row[0] for row in result.fetchmany(10)]
        cursors = conn.execute(_CURSORS).all()
        assert len(cursors) == 1 and cursors[0][1] is False
        rest = [row[0] for row in result]
        assert first + rest == list(range(1, 5001))
        assert conn.execute(_CURSORS).all() == []  # closed when exhausted


def test_orm_yield_per_streams(engine: Engine, orm_tables: None) -> None:
    with Session(engine) as session:
        session.add(_Author(id=1, name='a', books=[_Book(id=i, title=f't{i}')
                                                   for i in range(1, 251)]))
        session.commit()
        seen = []
        cursors_during = None
        for book in session.scalars(select(_Book).order_by(_Book.id)
                                    .execution_options(yield_per=100)):
            seen.append(book.id)
            if book.id == 150:
                cursors_during = session.execute(_CURSORS).all()
        assert seen == list(range(1, 251))
        assert cursors_during is not None and len(cursors_during) == 1


def test_insertmanyvalues_with_returning_keeps_the_parameters_order(
        engine: Engine, metadata: MetaData) -> None:
    items = Table('sa_sync_items', metadata,
                  Column('id', Integer, primary_key=True, autoincrement=True),
                  Column('name', String(20)))
    metadata.create_all(engine)
    statements: list[str] = []

    @event.listens_for(engine, 'before_cursor_execute')
    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    params = [{'name': f'n{i}'} for i in range(2500)]
    with engine.begin() as conn:
        rows = conn.execute(insert(items).returning(items.c.id, items.c.name,
                                                    sort_by_parameter_order=True),
                            params).all()
    assert [tuple(r) for r in rows] == [(i + 1, f'n{i}') for i in range(2500)]
    # three INSERT ... VALUES statements of up to 1000 rows, not 2500
    assert len([s for s in statements if s.startswith('INSERT')]) == 3


# --- errors ---

def test_errors_are_sqlalchemys_classes_around_the_drivers(engine: Engine,
                                                          tx_table: None) -> None:
    import mypgdriver.dbapi

    with engine.connect() as conn:
        conn.execute(text("INSERT INTO sa_sync_tx VALUES ('dup')"))
        with pytest.raises(exc.IntegrityError) as integrity:
            conn.execute(text("INSERT INTO sa_sync_tx VALUES ('dup')"))
        conn.rollback()
        with pytest.raises(exc.ProgrammingError) as programming:
            conn.execute(text('SELECT * FROM sa_sync_no_such_table'))
        conn.rollback()
        with pytest.raises(exc.DataError) as data:
            conn.execute(text('SELECT 1 / :z'), {'z': 0})
        conn.rollback()
        assert conn.execute(text('SELECT 1')).scalar() == 1  # usable after each
    assert type(integrity.value.orig) is mypgdriver.UniqueViolationError
    assert isinstance(integrity.value.orig, mypgdriver.dbapi.IntegrityError)
    assert type(programming.value.orig) is mypgdriver.UndefinedTableError
    assert type(data.value.orig) is mypgdriver.DivisionByZeroError
    assert integrity.value.orig.sqlstate == '23505'  # type: ignore[union-attr]
    assert str(integrity.value).startswith(
        '(mypgdriver.exceptions.UniqueViolationError) duplicate key value violates unique '
        'constraint "sa_sync_tx_pkey"')


# --- the pool: disconnects and pre-ping ---

def _pid(conn: Any) -> int:
    return int(conn.execute(text('SELECT pg_backend_pid()')).scalar())


def test_terminated_backend_invalidates_the_pooled_connection(engine: Engine,
                                                              other: Engine) -> None:
    with engine.connect() as conn:
        pid = _pid(conn)
        with other.connect() as killer:
            assert killer.execute(text('SELECT pg_terminate_backend(:p)'), {'p': pid}).scalar()
        with pytest.raises(exc.DBAPIError) as info:
            conn.execute(text('SELECT 1'))
        assert info.value.connection_invalidated
    with engine.connect() as conn:  # the pool made a new connection
        assert _pid(conn) != pid


def test_pre_ping_replaces_a_dead_connection_with_one_round_trip(url: URL,
                                                                 other: Engine) -> None:
    engine = create_engine(url, pool_pre_ping=True, pool_size=1)
    try:
        with engine.connect() as conn:
            pid = _pid(conn)
            driver = conn.connection.driver_connection.sync_connection  # type: ignore[union-attr]
        logged: list[str] = []
        driver.add_query_logger(lambda record: logged.append(record.query))
        with engine.connect() as conn:  # pinged on checkout: one empty query
            assert _pid(conn) == pid
        # (the DB-API's own prepared statements are not logged)
        assert logged[:2] == [';', 'BEGIN'] and logged[-1] == 'ROLLBACK'
        with other.connect() as killer:
            killer.execute(text('SELECT pg_terminate_backend(:p)'), {'p': pid})
        with engine.connect() as conn:  # the ping fails, a new connection is made
            assert _pid(conn) != pid
    finally:
        engine.dispose()


# --- pandas ---

def test_pandas_read_sql_through_the_engine(engine: Engine, metadata: MetaData) -> None:
    pandas = pytest.importorskip('pandas', reason='pandas has no wheel for this Python')
    readings = Table('sa_sync_readings', metadata,
                     Column('id', Integer, primary_key=True),
                     Column('sensor', String(10)),
                     Column('value', Float),
                     Column('taken', DateTime))
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(readings), [
            {'id': i, 'sensor': 'ab'[i % 2], 'value': i / 4,
             'taken': datetime.datetime(2026, 1, 1, i)} for i in range(1, 6)])
    frame = pandas.read_sql(
        text('SELECT id, sensor, value, taken FROM sa_sync_readings WHERE sensor = :s '
             'ORDER BY id'), engine, params={'s': 'b'})
    assert frame.to_dict('list') == {
        'id': [1, 3, 5], 'sensor': ['b', 'b', 'b'], 'value': [0.25, 0.75, 1.25],
        'taken': [pandas.Timestamp(2026, 1, 1, h) for h in (1, 3, 5)],
    }
    assert str(frame['id'].dtype) == 'int64' and str(frame['value'].dtype) == 'float64'
    table = pandas.read_sql_table('sa_sync_readings', engine)
    assert list(table.columns) == ['id', 'sensor', 'value', 'taken'] and len(table) == 5
    # and back: DataFrame.to_sql through the dialect's insertmanyvalues
    frame.to_sql('sa_sync_readings_copy', engine, index=False)
    metadata.reflect(engine, only=['sa_sync_readings_copy'])
    with engine.connect() as conn:
        assert conn.execute(text('SELECT id, sensor FROM sa_sync_readings_copy ORDER BY id')
                            ).all() == [(1, 'b'), (3, 'b'), (5, 'b')]

"""The SQLAlchemy dialect ``postgresql+mypgdriver`` on :mod:`mypgdriver.dbapi`.

``create_engine("postgresql+mypgdriver://...")`` runs on mypgdriver's DB-API
module (blocking calls, no event loop, no greenlet), and
``create_async_engine("postgresql+mypgdriver://...")`` on the asyncio API
(this dialect's :meth:`~PGDialectSync_mypgdriver.get_async_dialect_cls` names
:class:`mypgdriver.sqlalchemy_dialect.PGDialectAsync_mypgdriver`), as
SQLAlchemy's psycopg dialect does for its two modes.

The dialect is SQLAlchemy's generic PostgreSQL dialect with these parts:

* **Types as the asyncpg dialect binds them.** Parameters are bound on the
  server as ``$n`` and their types are the server's inference, as with
  asyncpg (psycopg sends a type with each value instead), so the dialect
  takes the asyncpg dialect's type adaptations: casts rendered on the
  parameters of the types the server cannot infer (``%(x)s::VARCHAR``,
  dates, intervals, enums, arrays...), ranges and multiranges converted to
  and from mypgdriver's :class:`~mypgdriver.Range`, ``BIT`` values
  (SQLAlchemy 2.1) to and from :class:`~mypgdriver.BitString`.
* **json and jsonb** decoded by the driver with the engine's
  ``json_deserializer`` (a codec set on each new connection), as the
  psycopg and asyncpg dialects do.
* **Server-side cursors** for ``stream_results``/``yield_per``: a named
  DB-API cursor (``DECLARE ... CURSOR``), as psycopg's.
* **Isolation levels, read-only and deferrable** are the DB-API
  connection's ``autocommit``, ``isolation_level``, ``read_only`` and
  ``deferrable``.
* **Pre-ping** is one empty simple-protocol query (``;``) on the driver
  connection: no implicit ``BEGIN``, no prepared statement.
* **Server messages** (``RAISE NOTICE``...) are logged at INFO level to the
  ``sqlalchemy.dialects.postgresql`` logger, as psycopg's dialect does.
* **Disconnects** are recognised from the error (a connection error, an
  administrator's shutdown, a closed connection) and from the connection's
  state; ``terminate`` closes the socket without a goodbye.
* **Statements after DDL.** The driver's statement cache does not retry a
  statement whose result types changed inside a transaction (a DB-API
  connection is always in one), so DDL run through the engine makes every
  connection of the engine drop its cached statements before its next
  statement, as SQLAlchemy's asyncpg dialect does.

SQLAlchemy is not a dependency of mypgdriver: importing ``mypgdriver`` does
not import this module.  Works with SQLAlchemy 2.0 (2.0.44 or newer) and 2.1.
"""
from __future__ import annotations

import itertools
import json
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, cast

# isort: off
# mypgdriver.sqlalchemy_dialect first: it refuses a SQLAlchemy older than
# the dialects need, before the imports below fail on one
from mypgdriver import sqlalchemy_dialect as async_dialect
# isort: on
from sqlalchemy import exc
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg
from sqlalchemy.dialects.postgresql import ranges as sa_ranges
from sqlalchemy.dialects.postgresql.base import PGDialect, PGExecutionContext
from sqlalchemy.dialects.postgresql.types import BIT
from sqlalchemy.engine import URL

import mypgdriver

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import IsolationLevel

__all__ = ('PGDialectSync_mypgdriver', 'dialect')

_SQLALCHEMY_2_0 = async_dialect.SQLALCHEMY_2_0


def _driver_range(value: sa_ranges.Range[Any]) -> mypgdriver.Range[Any]:
    return mypgdriver.Range(value.lower, value.upper, lower_inc=value.bounds[0] == '[',
                            upper_inc=value.bounds[1] == ']', empty=value.empty)


class _Range(sa_asyncpg._AsyncpgRange):
    """SQLAlchemy's Range bound as mypgdriver's (read back by the asyncpg type's code)."""

    def bind_processor(self, dialect: Any) -> Callable[[Any], Any]:
        def to_driver(value: Any) -> Any:
            return _driver_range(value) if isinstance(value, sa_ranges.Range) else value
        return to_driver


class _MultiRange(sa_asyncpg._AsyncpgMultiRange):
    """A sequence of SQLAlchemy Ranges bound as a list of mypgdriver's."""

    def bind_processor(self, dialect: Any) -> Callable[[Any], Any]:
        def to_driver(value: Any) -> Any:
            if value is None or isinstance(value, str):
                return value
            return [_driver_range(item) if isinstance(item, sa_ranges.Range) else item
                    for item in value]
        return to_driver


class _Bit(sa_asyncpg.AsyncpgBit):
    """BIT: strings ('0110', SQLAlchemy 2.1's BitString) bound as mypgdriver's BitString.

    Read back as SQLAlchemy's BitString on 2.1 (the asyncpg type's code),
    and on 2.0, which has no such class, as the string of bits, as psycopg
    returns them there.
    """

    def bind_processor(self, dialect: Any) -> Any:
        def to_driver(value: Any) -> Any:
            return mypgdriver.BitString(str(value)) if isinstance(value, str) else value
        return to_driver

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        if not _SQLALCHEMY_2_0:
            return super().result_processor(dialect, coltype)

        def to_text(value: Any) -> Any:
            if isinstance(value, mypgdriver.BitString):
                # (as_string() groups the bits by four)
                return value.as_string().replace(' ', '')
            return value
        return to_text


def _colspecs() -> dict[Any, Any]:
    colspecs = dict(sa_asyncpg.PGDialect_asyncpg.colspecs)
    colspecs[sa_ranges.AbstractSingleRange] = _Range
    colspecs[sa_ranges.AbstractMultiRange] = _MultiRange
    colspecs[BIT] = _Bit
    return colspecs


_cursor_names = itertools.count(1)


class PGExecutionContext_mypgdriver(PGExecutionContext):
    """Named server-side cursors, and the schema-change bookkeeping (see the dialect)."""

    def create_server_side_cursor(self) -> Any:
        # a name used once in the process (as psycopg's dialect does): a new
        # cursor never meets one of the same name left open in the transaction
        return self._dbapi_connection.cursor(f'sqla_{next(_cursor_names)}')

    def pre_exec(self) -> None:
        dialect = self.dialect
        assert isinstance(dialect, PGDialectSync_mypgdriver)
        if self.isddl:
            dialect._schema_changed()
        # (the pool's proxy of it: the DB-API connection is its dbapi_connection)
        dialect._refresh_schema_state(self._dbapi_connection.dbapi_connection)

    def handle_dbapi_exception(self, e: BaseException) -> None:
        # a statement whose result types changed under it (a concurrent
        # connection's DDL, or DDL sent as text): forget the cached statements
        # of every connection, as after our own DDL
        if isinstance(e, (mypgdriver.OutdatedSchemaCacheError,
                          mypgdriver.InvalidCachedStatementError)):
            dialect = self.dialect
            assert isinstance(dialect, PGDialectSync_mypgdriver)
            dialect._schema_changed()


def _driver_connection_of(dbapi_connection: Any) -> Any:
    """The mypgdriver.sync.Connection under a DB-API connection.

    The dialect sends the statements that must not open the DB-API's
    implicit transaction (pings, isolation level queries, two-phase
    commits) through it.
    """
    return dbapi_connection.sync_connection


def _literal(value: str) -> str:
    # a string constant (standard_conforming_strings is on since 9.1: only
    # the quote is special)
    return "'" + value.replace("'", "''") + "'"


class PGDialectSync_mypgdriver(PGDialect):
    """``postgresql+mypgdriver`` for ``create_engine()``: SQLAlchemy on mypgdriver.dbapi."""

    driver = 'mypgdriver'
    supports_statement_cache = True
    supports_server_side_cursors = True
    default_paramstyle = 'pyformat'
    # parameters take the type the server infers for them, as with asyncpg:
    # cast them where that is not the column's type (see _colspecs)
    render_bind_cast = True
    has_terminate = True
    # executemany's rowcount is the sum over the parameter sets
    supports_sane_multi_rowcount = True

    # the driver decodes json and jsonb with the engine's json_deserializer
    # (set up in on_connect); SQLAlchemy serializes the values it binds
    supports_native_json_serialization = False
    supports_native_json_deserialization = True
    dialect_injects_custom_json_deserializer = True

    execution_ctx_cls = PGExecutionContext_mypgdriver
    colspecs = _colspecs()

    def __init__(self, use_native_hstore: bool = False, **kwargs: Any) -> None:
        """The engine's dialect; `use_native_hstore` is accepted and ignored.

        (psycopg's dialect takes `use_native_hstore` to turn psycopg's own
        hstore adapter off; hstore values are always converted by
        SQLAlchemy's HSTORE type here.)
        """
        super().__init__(**kwargs)
        #: time.monotonic() of the last schema change seen; each connection
        #: drops its cached statements once after it
        self._schema_changed_at = 0.0
        self._schema_seen: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    @classmethod
    def import_dbapi(cls) -> Any:
        # imported here: create_async_engine() loads this module only to ask
        # get_async_dialect_cls()
        from mypgdriver import dbapi

        return dbapi

    @classmethod
    def get_async_dialect_cls(cls, url: URL) -> type[async_dialect.PGDialectAsync_mypgdriver]:
        """The dialect ``create_async_engine()`` uses for this URL: the asyncio one."""
        return async_dialect.PGDialectAsync_mypgdriver

    @classmethod
    def load_provisioning(cls) -> None:
        # SQLAlchemy's test suite imports "<dialect package>.provision" for
        # its database set-up hooks; ours are PostgreSQL's.
        PGDialect.load_provisioning()

    def retrieve_dbapi_version(self, dbapi: Any) -> Any:
        from sqlalchemy import util

        return util.parse_version_string(dbapi.__version__)

    def create_connect_args(self, url: URL) -> Any:
        """mypgdriver.dbapi.connect()'s arguments: those of :func:`mypgdriver.connect`.

        The URL means what it means to ``postgresql+mypgdriver_async``: its
        user, password, host, port and database, and each query-string
        parameter as a keyword argument; several hosts are given as
        ``?host=a:5432&host=b:5432``, every one with its port.
        """
        kwargs: dict[str, Any] = url.translate_connect_args(username='user')
        kwargs.update(url.query)
        hosts, ports = self._split_multihost_from_url(url)
        if hosts is None or ports is None:
            pass
        elif len(hosts) == 1:
            kwargs['host'] = hosts[0]
            if ports[0] is not None:
                kwargs['port'] = ports[0]
        elif hosts:
            if not all(hosts) or not all(ports):
                raise exc.ArgumentError(
                    'postgresql+mypgdriver: with several hosts in the URL, give each one '
                    'with its port (?host=a:5432&host=b:5432)')
            kwargs['host'] = list(hosts)
            kwargs['port'] = list(ports)
        if isinstance(kwargs.get('port'), str):
            kwargs['port'] = int(kwargs['port'])
        return [], kwargs

    # --- connection set-up ---

    def on_connect(self) -> Callable[[Any], None]:
        # (typed as taking str; json.loads, orjson and psycopg's users take bytes)
        loads: Callable[[Any], Any] = self._json_deserializer or json.loads
        inet_as_text = self._native_inet_types is False

        def decode_jsonb(data: bytes) -> Any:
            # jsonb's binary form is a version byte (1) and the text
            return loads(data[1:])

        def set_up(dbapi_connection: Any) -> None:
            driver = _driver_connection_of(dbapi_connection)
            # Binary forms, so that the deserializer is given bytes as
            # psycopg gives them (json.loads and orjson take them); the
            # values bound are the text SQLAlchemy's JSON type serializes.
            driver.set_type_codec('json', schema='pg_catalog', encoder=str.encode,
                                  decoder=loads, format='binary')
            driver.set_type_codec('jsonb', schema='pg_catalog', encoder=_encode_jsonb,
                                  decoder=decode_jsonb, format='binary')
            if inet_as_text:
                for name in ('inet', 'cidr'):
                    driver.set_type_codec(name, schema='pg_catalog', encoder=_identity,
                                          decoder=_identity, format='text')
            driver.add_log_listener(_log_server_message)
            self._schema_seen[dbapi_connection] = time.monotonic()

        return set_up

    # --- transactions ---

    def get_isolation_level_values(self, dbapi_connection: Any) -> list[IsolationLevel]:
        return ['AUTOCOMMIT', 'READ COMMITTED', 'READ UNCOMMITTED', 'REPEATABLE READ',
                'SERIALIZABLE']

    def set_isolation_level(self, dbapi_connection: Any, level: IsolationLevel) -> None:
        if level == 'AUTOCOMMIT':
            dbapi_connection.autocommit = True
            dbapi_connection.isolation_level = None
        else:
            dbapi_connection.autocommit = False
            levels = cast(Any, self.dbapi).IsolationLevel
            dbapi_connection.isolation_level = levels[level.replace(' ', '_')]

    def get_isolation_level(self, dbapi_connection: Any) -> IsolationLevel:
        # Between transactions, the level the next BEGIN will ask for, else
        # the server's: asked of the driver connection, as a query through a
        # DB-API cursor would open a transaction.
        driver = _driver_connection_of(dbapi_connection)
        if not driver.is_in_transaction():
            level = dbapi_connection.isolation_level
            if level is not None:
                return cast('IsolationLevel', level.name.replace('_', ' '))
        return cast('IsolationLevel', str(driver.fetchval('SHOW transaction_isolation')).upper())

    def detect_autocommit_setting(self, dbapi_connection: Any) -> bool:
        return bool(dbapi_connection.autocommit)

    def _do_autocommit(self, connection: Any, value: bool) -> None:
        connection.autocommit = value

    def set_readonly(self, connection: Any, value: bool) -> None:
        connection.read_only = value

    def get_readonly(self, connection: Any) -> bool:
        return bool(connection.read_only)

    def set_deferrable(self, connection: Any, value: bool) -> None:
        connection.deferrable = value

    def get_deferrable(self, connection: Any) -> bool:
        return bool(connection.deferrable)

    # --- two-phase transactions ---
    #
    # PostgreSQL's SQL commands on the driver connection: COMMIT PREPARED and
    # ROLLBACK PREPARED refuse to run in a transaction block, which the
    # DB-API would open for them (SQLAlchemy's generic versions send them
    # through the DB-API cursor).

    def do_prepare_twophase(self, connection: Any, xid: str) -> None:
        driver = _driver_connection_of(connection.connection.dbapi_connection)
        if not driver.is_in_transaction():
            # nothing ran since begin_twophase(): the DB-API opened no
            # transaction yet, and PREPARE TRANSACTION needs one
            driver.execute('BEGIN')
        driver.execute(f'PREPARE TRANSACTION {_literal(xid)}')

    def _end_prepared(self, connection: Any, command: str, xid: str, recover: bool) -> None:
        driver = _driver_connection_of(connection.connection.dbapi_connection)
        if recover and driver.is_in_transaction():
            driver.execute('ROLLBACK')
        driver.execute(f'{command} PREPARED {_literal(xid)}')

    def do_commit_twophase(self, connection: Any, xid: str, is_prepared: bool = True,
                           recover: bool = False) -> None:
        if is_prepared:
            self._end_prepared(connection, 'COMMIT', xid, recover)
        else:
            self.do_commit(connection.connection)

    def do_rollback_twophase(self, connection: Any, xid: str, is_prepared: bool = True,
                             recover: bool = False) -> None:
        if is_prepared:
            self._end_prepared(connection, 'ROLLBACK', xid, recover)
        else:
            self.do_rollback(connection.connection)

    # --- pings and disconnects ---

    def do_ping(self, dbapi_connection: Any) -> bool:
        # One simple-protocol Query message on the driver connection: no
        # named statement, no BEGIN, and inside a transaction it leaves the
        # transaction as it was (an empty query answers EmptyQueryResponse).
        _driver_connection_of(dbapi_connection).execute(';')
        return True

    def is_disconnect(self, e: Exception, connection: Any, cursor: Any) -> bool:
        if connection is not None and getattr(connection, 'closed', False):
            return True
        return async_dialect._is_disconnect_error(e) or async_dialect._is_disconnect_error(
            e.__cause__)

    def do_terminate(self, dbapi_connection: Any) -> None:
        _driver_connection_of(dbapi_connection).terminate()

    # --- statements cached across DDL ---

    def _schema_changed(self) -> None:
        self._schema_changed_at = time.monotonic()

    def _refresh_schema_state(self, dbapi_connection: Any) -> None:
        if self._schema_seen.get(dbapi_connection, 0.0) < self._schema_changed_at:
            _forget_statements(dbapi_connection)
            self._schema_seen[dbapi_connection] = time.monotonic()


def _forget_statements(dbapi_connection: Any) -> None:
    """Make a DB-API connection prepare its statements again, and introspect types again."""
    dbapi_connection.reload_schema_state()


def _identity(value: Any) -> Any:
    return value


def _encode_jsonb(text: str) -> bytes:
    return b'\x01' + text.encode()


#: The logger of SQLAlchemy's PostgreSQL dialects, where psycopg's dialect
#: logs the server's notices too.
_logger = logging.getLogger('sqlalchemy.dialects.postgresql')


def _log_server_message(connection: Any, message: Any) -> None:
    # NOTICE, WARNING, INFO... sent to the session (RAISE NOTICE, implicit
    # index creation on old servers), at INFO level
    _logger.info('%s: %s', message.severity, message.message)


dialect = PGDialectSync_mypgdriver

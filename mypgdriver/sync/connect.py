"""connect() of the sync API: the asyncio connector's own coroutine, driven by a SyncGlue."""
from __future__ import annotations

import ssl as ssl_module
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from mypgdriver import exceptions
from mypgdriver.protocol.protocol import DEFAULT_MAX_PIPELINE
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory
from mypgdriver.sync.connection import Connection
from mypgdriver.sync.glue import open_connection
from mypgdriver.types import JsonCodec


def connect(dsn: Optional[str] = None, *,
            host: Union[str, Sequence[str], None] = None,
            port: Union[int, str, Sequence[Union[int, str]], None] = None,
            user: Optional[str] = None,
            password: Union[str, Callable[[], str], None] = None,
            passfile: Optional[str] = None, database: Optional[str] = None,
            timeout: Optional[float] = 60,
            statement_cache_size: int = 100,
            max_cached_statement_lifetime: float = 300,
            max_cacheable_statement_size: int = 1024 * 15,
            command_timeout: Optional[float] = None,
            ssl: Union[bool, str, ssl_module.SSLContext, None] = None,
            direct_tls: Optional[bool] = None,
            connection_class: type[Connection] = Connection,
            record_class: type[Record] = Record,
            row_factory: Optional[RowFactory[Any]] = None,
            server_settings: Optional[Mapping[str, str]] = None,
            target_session_attrs: Optional[str] = None,
            krbsrvname: Optional[str] = None, gsslib: Optional[str] = None,
            max_pipeline: int = DEFAULT_MAX_PIPELINE,
            min_protocol_version: Optional[str] = None,
            max_protocol_version: Optional[str] = None,
            json: Union[bool, JsonCodec] = False) -> Connection:
    """Open a connection to a PostgreSQL server and return a :class:`Connection`, blocking.

    The arguments are those of :func:`mypgdriver.connect`, read by the same
    code (DSN forms, environment, password file, TLS modes, several hosts),
    except `loop` (there is none) and:

    * `password`: a string, or a plain function returning one (called at
      each connect).
    * `connection_class`: the class of the connection returned,
      :class:`mypgdriver.sync.Connection` (default) or a subclass.

    Where to connect: `dsn` (a libpq connection string or URI), `host`,
    `port`, `user`, `password`, `passfile`, `database`,
    `target_session_attrs`.  TLS: `ssl` (an sslmode name, True, False or
    an :class:`ssl.SSLContext`) and `direct_tls`.  Time limits: `timeout`
    (seconds for the whole attempt, default 60; None waits as long as it
    takes) and `command_timeout` (the default timeout of every call).
    Statements and results: `statement_cache_size`,
    `max_cached_statement_lifetime`, `max_cacheable_statement_size`,
    `record_class`, `row_factory` (the connection's default row factory,
    :mod:`mypgdriver.rows`), `json` (``True`` or a
    :class:`~mypgdriver.types.JsonCodec`: ``json`` and ``jsonb`` values as
    Python objects, see :ref:`json-values`).  The session: `server_settings`, `max_pipeline`,
    `min_protocol_version`, `max_protocol_version`; `krbsrvname` and
    `gsslib` are accepted and ignored.  See :func:`mypgdriver.connect` for
    each in detail.

    The connection is a context manager: ``with connect(dsn) as conn:``
    closes it at the end of the block.
    """
    if not (isinstance(connection_class, type) and issubclass(connection_class, Connection)):
        raise exceptions.InterfaceError(
            f'connection_class is expected to be a subclass of mypgdriver.sync.Connection, '
            f'got {connection_class!r}')
    aconn, glue = open_connection(
        dsn, host=host, port=port, user=user, password=password, passfile=passfile,
        database=database, timeout=timeout, statement_cache_size=statement_cache_size,
        max_cached_statement_lifetime=max_cached_statement_lifetime,
        max_cacheable_statement_size=max_cacheable_statement_size,
        command_timeout=command_timeout, ssl=ssl, direct_tls=direct_tls,
        record_class=record_class, row_factory=row_factory, server_settings=server_settings,
        target_session_attrs=target_session_attrs, krbsrvname=krbsrvname, gsslib=gsslib,
        max_pipeline=max_pipeline, min_protocol_version=min_protocol_version,
        max_protocol_version=max_protocol_version, json=json)
    return connection_class(aconn, glue)

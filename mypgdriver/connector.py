"""connect(): from arguments to an authenticated Connection.

Resolves where to connect (connect_params), tries each host in order within
one time budget, opens the transport, runs startup and authentication.
"""
from __future__ import annotations

import asyncio
import inspect
from typing import Any, Optional

from mypgdriver import exceptions
from mypgdriver.connect_params import ConnectParams, HostSpec, parse_connect_params
from mypgdriver.connection import Connection, ConnectionConfig
from mypgdriver.protocol.protocol import Protocol
from mypgdriver.protocol.record import Record

_CANCEL_REQUEST_CODE = 80877102


async def connect(dsn: Optional[str] = None, *,
                  host=None, port=None, user: Optional[str] = None, password=None,
                  passfile: Optional[str] = None, database: Optional[str] = None,
                  loop=None, timeout: float = 60,
                  statement_cache_size: int = 100,
                  max_cached_statement_lifetime: float = 300,
                  max_cacheable_statement_size: int = 1024 * 15,
                  command_timeout: Optional[float] = None,
                  ssl=None, direct_tls=None,
                  connection_class=Connection, record_class=Record,
                  server_settings: Optional[dict] = None,
                  target_session_attrs: Optional[str] = None,
                  krbsrvname=None, gsslib=None) -> Connection:
    """Open a connection to a PostgreSQL server.

    Arguments follow asyncpg's :func:`asyncpg.connect`: a libpq-style `dsn`
    (URI or ``key=value`` form) and/or keyword arguments, with libpq's
    environment variables (``PGHOST``, ``PGUSER``, ...) and ``~/.pgpass``
    filling in what is not given.  `password` may also be a callable or a
    coroutine function returning the password.  `timeout` bounds the whole
    attempt (every host, DNS, TCP and authentication).
    """
    if not (isinstance(connection_class, type) and issubclass(connection_class, Connection)):
        raise exceptions.InterfaceError(
            f'connection_class is expected to be a subclass of mypgdriver.Connection, '
            f'got {connection_class!r}')
    if not (isinstance(record_class, type) and issubclass(record_class, Record)):
        raise exceptions.InterfaceError(
            f'record_class is expected to be a subclass of mypgdriver.Record, got {record_class!r}')
    for name, value in (('statement_cache_size', statement_cache_size),
                        ('max_cacheable_statement_size', max_cacheable_statement_size),
                        ('max_cached_statement_lifetime', max_cached_statement_lifetime)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise exceptions.InterfaceError(f'{name} must be a non-negative number, got {value!r}')
    if command_timeout is not None and (
            not isinstance(command_timeout, (int, float)) or command_timeout <= 0):
        raise exceptions.InterfaceError(
            f'command_timeout must be a positive number, got {command_timeout!r}')

    if callable(password):
        password = password()
        if inspect.isawaitable(password):
            password = await password

    params = parse_connect_params(
        dsn, host=host, port=port, user=user, password=password, passfile=passfile,
        database=database, server_settings=server_settings, ssl=ssl, direct_tls=direct_tls,
        target_session_attrs=target_session_attrs)
    config = ConnectionConfig(
        command_timeout=command_timeout,
        statement_cache_size=int(statement_cache_size),
        max_cached_statement_lifetime=max_cached_statement_lifetime,
        max_cacheable_statement_size=max_cacheable_statement_size,
        record_class=record_class)
    if loop is None:
        loop = asyncio.get_running_loop()
    return await _connect_any_host(loop, params, config, connection_class, timeout)


async def _connect_any_host(loop, params: ConnectParams, config, connection_class, timeout):
    deadline = loop.time() + timeout if timeout is not None else None
    failures: list[tuple[HostSpec, BaseException]] = []
    for hostspec in params.hosts:
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            break
        if params.connect_timeout is not None:
            remaining = params.connect_timeout if remaining is None else min(
                remaining, params.connect_timeout)
        try:
            return await asyncio.wait_for(
                _connect_host(loop, hostspec, params, config, connection_class), remaining)
        except (OSError, asyncio.TimeoutError, exceptions.ConnectionDoesNotExistError) as e:
            failures.append((hostspec, e))
        except exceptions.PostgresError as e:
            # The server answered and refused (bad password, no such
            # database): trying another host would only hide the cause,
            # unless that host is a different server.
            if len(params.hosts) == 1:
                raise
            failures.append((hostspec, e))
    if not failures:
        raise asyncio.TimeoutError('connection attempt timed out')
    if len(failures) == 1:
        hostspec, err = failures[0]
        if isinstance(err, asyncio.TimeoutError):
            raise asyncio.TimeoutError(
                f'timed out connecting to {_describe(hostspec)}') from err
        if isinstance(err, exceptions.PostgresError):
            raise err
        raise _connection_error(f'cannot connect to {_describe(hostspec)}: {err}') from err
    lines = '\n'.join(f'  {_describe(h)}: {type(e).__name__}: {e}' for h, e in failures)
    last = failures[-1][1]
    if all(isinstance(e, asyncio.TimeoutError) for _, e in failures):
        raise asyncio.TimeoutError(f'timed out connecting to every host:\n{lines}') from last
    raise _connection_error(f'cannot connect to any host:\n{lines}') from last


def _connection_error(message: str) -> Exception:
    # An OSError subclass too, so that code catching OSError (as with asyncpg,
    # which lets socket errors through) still works.
    return ConnectionFailure(message)


class ConnectionFailure(exceptions.ConnectionFailureError, OSError):
    """The connection could not be established (network error on every host)."""


def _describe(hostspec: HostSpec) -> str:
    if hostspec.is_unix_socket:
        return hostspec.socket_path
    host = f'[{hostspec.host}]' if ':' in hostspec.host else hostspec.host
    return f'{host}:{hostspec.port}'


async def _open_transport(loop, hostspec: HostSpec, protocol_factory):
    if hostspec.is_unix_socket:
        return await loop.create_unix_connection(protocol_factory, hostspec.socket_path)
    return await loop.create_connection(protocol_factory, hostspec.host, hostspec.port)


async def _connect_host(loop, hostspec: HostSpec, params: ConnectParams, config,
                        connection_class) -> Connection:
    if params.ssl is not None or params.sslmode in ('require', 'verify-ca', 'verify-full'):
        raise exceptions.ClientConfigurationError(
            f'sslmode={params.sslmode!r}: TLS connections are not supported yet by mypgdriver')
    startup = {
        'database': params.database,
        'client_encoding': 'UTF8',
    }
    for key, value in params.server_settings.items():
        if key == 'client_encoding' and str(value).replace('-', '').upper() != 'UTF8':
            raise exceptions.ClientConfigurationError(
                f'client_encoding {value!r} is not supported: mypgdriver always uses UTF8')
        startup[key] = value

    proto = Protocol(loop)
    proto._configure_startup(params.user, hostspec.password, startup)
    proto.channel_binding = params.channel_binding
    transport, _ = await _open_transport(loop, hostspec, lambda: proto)
    try:
        await proto.start_startup()
    except BaseException:
        transport.abort()
        raise
    conn = connection_class(proto, transport, loop, _describe(hostspec), config, params)
    proto.cancel_request = lambda: _send_cancel_request(loop, hostspec, proto)
    return conn


async def _send_cancel_request(loop, hostspec: HostSpec, proto) -> None:
    """Send a CancelRequest for `proto`'s backend over a new connection.

    Returns when the server has closed that connection: by then the signal
    has been delivered, so a late cancel cannot hit the next query.
    """
    pid = proto.get_backend_pid()
    secret = proto.backend_secret or b''
    msg = (16 + len(secret) - 4).to_bytes(4, 'big') + _CANCEL_REQUEST_CODE.to_bytes(4, 'big') \
        + pid.to_bytes(4, 'big', signed=True) + secret
    done = loop.create_future()

    class _CancelProtocol(asyncio.Protocol):
        def connection_made(self, transport):
            transport.write(msg)

        def connection_lost(self, exc):
            if not done.done():
                done.set_result(None)

    transport, _ = await _open_transport(loop, hostspec, _CancelProtocol)
    try:
        await asyncio.wait_for(asyncio.shield(done), 10)
    finally:
        transport.close()

"""connect(): from arguments to an authenticated Connection.

Resolves where to connect (connect_params), tries each host in order within
one time budget, opens the transport, runs startup and authentication.
"""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import random
import socket
import ssl
from typing import Any, Awaitable, Callable, Mapping, Optional, Sequence, Union

from mypgdriver import exceptions, tracing
from mypgdriver.connecting import tls
from mypgdriver.connecting.connect_params import ConnectParams, HostSpec, parse_connect_params
from mypgdriver.connection import Connection, ConnectionConfig
from mypgdriver.core import deadlines, waits
from mypgdriver.protocol.protocol import DEFAULT_MAX_PIPELINE, Protocol, check_record_class
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows
from mypgdriver.types import JsonCodec


async def connect(dsn: Optional[str] = None, *,
                  host: Union[str, Sequence[str], None] = None,
                  port: Union[int, str, Sequence[Union[int, str]], None] = None,
                  user: Optional[str] = None,
                  password: Union[str, Callable[[], Union[str, Awaitable[str]]], None] = None,
                  passfile: Optional[str] = None, database: Optional[str] = None,
                  loop: Optional[asyncio.AbstractEventLoop] = None, timeout: Optional[float] = 60,
                  statement_cache_size: int = 100,
                  max_cached_statement_lifetime: float = 300,
                  max_cacheable_statement_size: int = 1024 * 15,
                  command_timeout: Optional[float] = None,
                  ssl: Union[bool, str, ssl.SSLContext, None] = None,
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
    """Open a connection to a PostgreSQL server and return a :class:`Connection`.

    Arguments follow asyncpg's :func:`asyncpg.connect`; every one after `dsn`
    is keyword-only.  A setting that is not given (or is empty) is taken
    from the DSN, then libpq's environment variable (``PGHOST``, ``PGUSER``,
    ...), then the default.  Numeric and boolean arguments may also be given
    as strings (``command_timeout='30'``, as SQLAlchemy passes a URL's
    query), read as asyncpg reads them.  Each parameter in detail, and the
    settings that only the DSN or the environment give (``sslrootcert``,
    ``connect_timeout``, ...): :ref:`connect-parameters`.

    Where to connect:

    * `dsn`: a libpq connection string, a URI
      (``postgresql://user:password@host:port/database?key=value``) or
      ``key=value`` pairs; parameters that are not libpq's are sent to the
      server as session settings.
    * `host`: a host name, an IP address, the directory of the server's Unix
      socket, or ``@name`` (abstract socket); several as a list or a
      comma-separated string, tried in order.  Default: ``PGHOST``, else the
      first usual socket directory that exists, else ``localhost``.
    * `port`: one for every host, or one per host (a list or a
      comma-separated string).  Default: ``PGPORT``, else 5432.
    * `user`: default ``PGUSER``, else the operating-system user.
    * `password`: a string, or a function or coroutine function returning
      one, called at each connect (for short-lived tokens).  Default:
      ``PGPASSWORD``, else the password file.  Never shown in messages.
    * `passfile`: the password file; default ``PGPASSFILE``, else
      ``~/.pgpass``.
    * `database`: default ``PGDATABASE``, else the user name.
    * `target_session_attrs`: which of several hosts is acceptable:
      ``'any'`` (default), ``'read-write'``, ``'read-only'``,
      ``'primary'``, ``'standby'`` or ``'prefer-standby'``.

    TLS:

    * `ssl`: ``None`` (default) for the DSN's ``sslmode`` or
      ``PGSSLMODE``, else ``'prefer'``; an sslmode name, ``'disable'``,
      ``'allow'``, ``'prefer'``, ``'require'``, ``'verify-ca'`` or
      ``'verify-full'``, with libpq's meaning; ``True`` for ``verify-full``
      with the system's trusted certificates; ``False`` for ``disable``; or
      an :class:`ssl.SSLContext`, which requires TLS and decides what is
      verified.
    * `direct_tls`: ``True`` starts TLS without the ``SSLRequest`` round
      trip (PostgreSQL 17 and newer; needs sslmode ``require`` or
      stricter), ``False`` forces the ``SSLRequest``, ``None`` (default)
      leaves it to the DSN's ``sslnegotiation`` and ``PGSSLNEGOTIATION``.

    Time limits:

    * `timeout`: seconds for the whole attempt (every host, DNS, TCP, TLS
      and authentication), default 60; ``None`` waits as long as it takes.
    * `command_timeout`: the default timeout, in seconds, of every operation
      on the connection; ``None`` (default) for no limit.

    Statements and results:

    * `statement_cache_size`: how many prepared statements the connection
      keeps (default 100); ``0`` turns the cache off (for pgbouncer in
      transaction mode).
    * `max_cached_statement_lifetime`: seconds after which a cached
      statement is prepared afresh (default 300); ``0`` for no limit.
    * `max_cacheable_statement_size`: longer query texts are not cached
      (default 15 KiB); ``0`` for no limit.
    * `record_class`: the class of result rows, :class:`Record` (default)
      or a subclass without ``__new__`` or ``__init__``.
    * `row_factory` (a mypgdriver addition): the connection's default row
      factory (:mod:`mypgdriver.rows`, e.g. ``dict_row``), used by fetch,
      fetchrow, fetchmany, cursor and prepare when a call passes neither
      ``record_class`` nor ``row_factory``; not with a `record_class`.
      fetchval and execute are unaffected.  Type checkers still see Record
      rows for calls that do not pass ``row_factory`` themselves.
    * `json` (a mypgdriver addition): ``True`` to have ``json`` and
      ``jsonb`` values decoded with :func:`json.loads` and arguments
      encoded with :func:`json.dumps` (dicts, lists, numbers, booleans;
      a :class:`str` or :class:`bytes` argument is taken as JSON text
      already and sent as it is), also inside arrays, composites and
      domains; a :class:`~mypgdriver.types.JsonCodec` for other functions
      (orjson's, or :func:`json.loads` with ``parse_float=Decimal``).
      ``False`` (default): values are :class:`str` both ways, as in
      asyncpg.  A codec set later with :meth:`Connection.set_type_codec`
      wins over it.  See :ref:`json-values`.
    * `connection_class`: the class of the connection returned,
      :class:`Connection` (default) or a subclass.

    The session:

    * `server_settings`: run-time parameters for the session
      (``{'search_path': 'app'}``), sent in the startup message; they win
      over the same settings in the DSN.
    * `max_pipeline` (a mypgdriver addition): how many operations
      concurrent tasks may have in flight on the connection at once
      (default 256); calls beyond it wait for a slot, in call order.
      ``max_pipeline=1`` runs one operation at a time (later calls queue,
      they do not fail).
    * `min_protocol_version`, `max_protocol_version`: libpq 18's options
      (also DSN parameters and ``PGMINPROTOCOLVERSION`` /
      ``PGMAXPROTOCOLVERSION``): ``'3.0'``, ``'3.2'`` or ``'latest'``.  The
      StartupMessage asks for the maximum, 3.0 unless set (or unless the
      minimum is higher); a server or pooler that supports less answers
      with NegotiateProtocolVersion, and the connection goes on with its
      version if that is not below the minimum (default 3.0).
    * `loop`: the event loop; by default the running one.  Kept for
      asyncpg compatibility: there is no reason to pass it.
    * `krbsrvname`, `gsslib`: accepted and ignored, for asyncpg
      compatibility (GSSAPI is not supported).
    """
    if not (isinstance(connection_class, type) and issubclass(connection_class, Connection)):
        raise exceptions.InterfaceError(
            f'connection_class is expected to be a subclass of mypgdriver.Connection, '
            f'got {connection_class!r}')
    check_record_class(record_class)
    if row_factory is not None:
        if record_class is not Record:
            raise TypeError('pass record_class or row_factory to connect(), not both')
        row_factory = choose_rows(None, row_factory)
    json_codec = resolve_json_option(json)
    # Numbers and booleans given as strings (a URL's query, as SQLAlchemy
    # passes it: ?command_timeout=30) are read as asyncpg reads them.
    timeout = _number_from_text(timeout, float)
    statement_cache_size = _number_from_text(statement_cache_size, int)
    max_cached_statement_lifetime = _number_from_text(max_cached_statement_lifetime, float)
    max_cacheable_statement_size = _number_from_text(max_cacheable_statement_size, int)
    command_timeout = _number_from_text(command_timeout, float)
    max_pipeline = _number_from_text(max_pipeline, int)
    direct_tls = _bool_from_text(direct_tls)
    for name, value in (('statement_cache_size', statement_cache_size),
                        ('max_cacheable_statement_size', max_cacheable_statement_size),
                        ('max_cached_statement_lifetime', max_cached_statement_lifetime)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            # asyncpg raises ValueError: ClientConfigurationError is one.
            raise exceptions.ClientConfigurationError(
                f'{name} must be a non-negative number, got {value!r}')
    if isinstance(max_pipeline, bool) or not isinstance(max_pipeline, int) or max_pipeline < 1:
        raise exceptions.InterfaceError(
            f'max_pipeline must be a positive integer, got {max_pipeline!r}')
    if command_timeout is not None and (
            not isinstance(command_timeout, (int, float)) or isinstance(command_timeout, bool)
            or command_timeout <= 0):
        raise exceptions.ClientConfigurationError(
            f'command_timeout must be a positive number, got {command_timeout!r}')

    resolved_password: Optional[str]
    if callable(password):
        supplied = password()
        resolved_password = await supplied if inspect.isawaitable(supplied) else supplied
    else:
        resolved_password = password

    params = parse_connect_params(
        dsn, host=host, port=port, user=user, password=resolved_password, passfile=passfile,
        database=database, server_settings=server_settings, ssl=ssl, direct_tls=direct_tls,
        target_session_attrs=target_session_attrs,
        min_protocol_version=min_protocol_version, max_protocol_version=max_protocol_version)
    config = ConnectionConfig(
        command_timeout=command_timeout,
        statement_cache_size=int(statement_cache_size),
        max_cached_statement_lifetime=max_cached_statement_lifetime,
        max_cacheable_statement_size=max_cacheable_statement_size,
        record_class=record_class,
        row_factory=row_factory,
        max_pipeline=max_pipeline,
        json=json_codec)
    if loop is None:
        loop = asyncio.get_running_loop()
    # Whether the application set a tracer or meter provider since the last
    # connect (not asked per operation: see mypgdriver/tracing.py).
    tracing.refresh()
    if tracing.TELEMETRY.live:
        return await tracing.traced_connect(
            _connect_any_host(loop, params, config, connection_class, timeout), params)
    return await _connect_any_host(loop, params, config, connection_class, timeout)


def resolve_json_option(json: Any) -> Optional[JsonCodec]:
    """The JsonCodec that connect(json=...) asks for, or None for json values as str."""
    json = _bool_from_text(json)
    if isinstance(json, JsonCodec):
        return json
    if json is True:
        return JsonCodec()
    if json is False or json is None:
        return None
    raise exceptions.ClientConfigurationError(
        f'json must be True, False or a mypgdriver.types.JsonCodec, got {json!r}')


def _number_from_text(value: Any, kind: Callable[[str], Any]) -> Any:
    """`value`, or the number a string spells (``'30'``, ``' 2.5 '``); other values unchanged.

    A string that is not a number is left as it is, for the argument's own
    check to refuse with its usual message.
    """
    if not isinstance(value, str):
        return value
    try:
        return kind(value.strip())
    except ValueError:
        if kind is int:
            # '100.0' for an integer argument: what float() reads, if whole.
            try:
                number = float(value.strip())
            except ValueError:
                return value
            if number.is_integer():
                return int(number)
        return value


_TRUE_WORDS = frozenset(('1', 'true', 'on', 'yes', 't', 'y'))
_FALSE_WORDS = frozenset(('0', 'false', 'off', 'no', 'f', 'n'))


def _bool_from_text(value: Any) -> Any:
    """`value`, or the bool a string spells (``'true'``, ``'off'``, ``'1'``); other values unchanged."""
    if not isinstance(value, str):
        return value
    word = value.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    return value


def _terminate_late(conn) -> None:
    conn.terminate()


async def _connect_any_host(loop, params: ConnectParams, config, connection_class, timeout):
    deadline = deadlines.deadline(loop, timeout)
    hosts = list(params.hosts)
    if params.load_balance_hosts == 'random':
        random.shuffle(hosts)
    target = params.target_session_attrs
    failures: list[tuple[HostSpec, BaseException]] = []
    # prefer-standby: a first pass wants a standby, a second takes anything.
    passes = ['standby', 'any'] if target == 'prefer-standby' else [target]
    for wanted in passes:
        for hostspec in hosts:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            if params.connect_timeout is not None:
                remaining = params.connect_timeout if remaining is None else min(
                    remaining, params.connect_timeout)
            try:
                # (A connection opened just as the time ran out is closed,
                # not leaked.)
                conn = await deadlines.within(
                    loop, _connect_host(loop, hostspec, params, config, connection_class),
                    remaining, _terminate_late, what=f'connection to {describe_host(hostspec)}')
            except (OSError, asyncio.TimeoutError, exceptions.ConnectionDoesNotExistError,
                    exceptions.ProtocolError, exceptions.UnsupportedServerFeatureError) as e:
                # (UnsupportedServerFeatureError: below min_protocol_version.)
                failures.append((hostspec, e))
                continue
            except exceptions.PostgresError as e:
                # The server answered and refused (bad password, no such
                # database): with one host that is the answer; with several,
                # another host may be a different server.
                if len(params.hosts) == 1:
                    raise
                failures.append((hostspec, e))
                continue
            try:
                mismatch = await _session_attrs_mismatch(conn, wanted)
            except BaseException:
                conn.terminate()
                raise
            if mismatch is None:
                return conn
            await conn.close()
            failures.append((hostspec, exceptions.TargetServerAttributeNotMatched(mismatch)))
    if not failures:
        raise asyncio.TimeoutError(
            f'connection attempt timed out before any host was tried (timeout={timeout!r})')
    if len(failures) == 1:
        hostspec, err = failures[0]
        if isinstance(err, asyncio.TimeoutError):
            if getattr(err, 'errno', None) is None:    # (not an OSError before 3.11)
                raise err   # ours (deadlines.within): it names the host and the time
            # The operating system's (ETIMEDOUT), which names neither.
            raise asyncio.TimeoutError(
                f'connection to {describe_host(hostspec)} timed out: {err}') from err
        # One host: the original error, as asyncpg lets it through (e.g.
        # ConnectionRefusedError, ssl.SSLCertVerificationError).
        raise err
    lines = '\n'.join(f'  {describe_host(h)}: {type(e).__name__}: {e}' for h, e in failures)
    last = failures[-1][1]
    if all(isinstance(e, asyncio.TimeoutError) for _, e in failures):
        raise asyncio.TimeoutError(f'timed out connecting to every host:\n{lines}') from last
    if all(isinstance(e, exceptions.TargetServerAttributeNotMatched) for _, e in failures):
        raise exceptions.TargetServerAttributeNotMatched(
            f'no host matches target_session_attrs={target!r}:\n{lines}')
    raise _connection_error(f'cannot connect to any host:\n{lines}') from last


async def _session_attrs_mismatch(conn, wanted: str) -> Optional[str]:
    """Why `conn` does not match target_session_attrs=`wanted`, or None if it does."""
    if wanted == 'any':
        return None
    settings = conn._protocol.get_server_parameters()
    if wanted in ('read-write', 'read-only'):
        # PostgreSQL 14+ reports default_transaction_read_only and
        # in_hot_standby at startup; older servers need a query.
        if 'default_transaction_read_only' in settings and 'in_hot_standby' in settings:
            read_only = (settings['default_transaction_read_only'] == 'on'
                         or settings['in_hot_standby'] == 'on')
        else:
            read_only = (await conn.fetchval('SHOW transaction_read_only')) == 'on'
        if read_only == (wanted == 'read-only'):
            return None
        return f'server is {"read-only" if read_only else "read-write"}'
    if 'in_hot_standby' in settings:
        standby = settings['in_hot_standby'] == 'on'
    else:
        standby = await conn.fetchval('SELECT pg_catalog.pg_is_in_recovery()')
    if standby == (wanted == 'standby'):
        return None
    return f'server is {"a standby" if standby else "a primary"}'


def _connection_error(message: str) -> Exception:
    # An OSError subclass too, so that code catching OSError (as with asyncpg,
    # which lets socket errors through) still works.
    return ConnectionFailure(message)


class ConnectionFailure(exceptions.ConnectionFailureError, OSError):
    """The connection could not be established (network error on every host)."""


def describe_host(hostspec: HostSpec) -> str:
    """How a connection's address is shown: ``host:port``, or the socket's path."""
    if hostspec.is_unix_socket:
        return hostspec.socket_path.replace('\0', '@')
    host = f'[{hostspec.host}]' if ':' in hostspec.host else hostspec.host
    return f'{host}:{hostspec.port}'


def _with_server_question(error: OSError, hostspec: HostSpec) -> Optional[OSError]:
    """`error` of a failed connect() with libpq's question added, or None for other errors.

    "Connection refused" alone does not tell a newcomer what to check; libpq
    asks whether the server is running and listening there, and so do we,
    naming the address.  The class (ConnectionRefusedError, FileNotFoundError,
    the OSError asyncio raises when every address of a name failed) and the
    errno stay as they were: code catching them keeps working.
    """
    if hostspec.is_unix_socket:
        if not isinstance(error, (FileNotFoundError, ConnectionRefusedError)):
            return None
        question = (f'is the server running locally and accepting connections on socket '
                    f'"{describe_host(hostspec)}"?')
    else:
        # asyncio's words for a failed connect() (an unreachable network,
        # too), as against a failed DNS lookup or TLS handshake.
        if not (isinstance(error, ConnectionRefusedError)
                or 'Connect call failed' in str(error)):
            return None
        question = (f'is the server running on {describe_host(hostspec)} and accepting TCP/IP '
                    f'connections?')
    try:
        if error.errno is not None:
            # "Connection refused", as libpq says, not asyncio's "Connect call failed".
            hinted = type(error)(error.errno, f'{os.strerror(error.errno)}: {question}')
        else:
            hinted = type(error)(f'{error}: {question}')
    except Exception:
        return None     # a subclass with another constructor: keep the original
    return hinted.with_traceback(error.__traceback__)


async def _open_transport(loop, hostspec: HostSpec, protocol_factory):
    if hostspec.is_unix_socket:
        return await loop.create_unix_connection(protocol_factory, hostspec.socket_path)
    return await loop.create_connection(protocol_factory, hostspec.host, hostspec.port)


def _set_keepalives(transport, params: ConnectParams) -> None:
    sock = transport.get_extra_info('socket')
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1 if params.keepalives else 0)
        if params.keepalives:
            for option, value in (('TCP_KEEPIDLE', params.keepalives_idle),
                                  ('TCP_KEEPINTVL', params.keepalives_interval),
                                  ('TCP_KEEPCNT', params.keepalives_count)):
                if value is not None and hasattr(socket, option):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    except OSError:
        pass


@dataclasses.dataclass
class _StartupProgress:
    """How far one startup attempt got: what the sslmode fallback rules look at."""

    tls_accepted: bool = False      # the server answered the SSLRequest with 'S'
    tls_established: bool = False   # ... and the TLS handshake completed
    authenticated: bool = False     # AuthenticationOk arrived


async def _open_for_startup(loop, hostspec: HostSpec, params: ConnectParams, proto,
                            progress: _StartupProgress, *, use_tls: bool):
    """Open the transport (TLS when `use_tls`) and attach `proto` to it."""
    if not use_tls or hostspec.is_unix_socket:
        transport, _ = await _open_transport(loop, hostspec, lambda: proto)
        return transport
    required = params.ssl is not None or params.sslmode not in ('disable', 'allow', 'prefer')
    server_hostname = hostspec.host
    if params.sslnegotiation == 'direct':
        ctx = tls.make_ssl_context(params, direct=True)
        transport, _ = await loop.create_connection(
            lambda: proto, hostspec.host, hostspec.port, ssl=ctx,
            server_hostname=server_hostname)
    else:
        ctx = tls.make_ssl_context(params)
        transport, neg, progress.tls_accepted = await tls.request_tls(
            loop, hostspec.host, hostspec.port,
            required=required or params.sslmode == 'allow')
        if progress.tls_accepted:
            transport = await tls.start_tls(loop, transport, neg, ctx, server_hostname)
        transport.set_protocol(proto)
        proto.connection_made(transport)
    ssl_object = transport.get_extra_info('ssl_object')
    progress.tls_established = ssl_object is not None
    if ssl_object is not None:
        proto.tls_server_cert_der = ssl_object.getpeercert(binary_form=True)
    return transport


def _startup_parameters(params: ConnectParams) -> dict:
    startup = {
        'database': params.database,
        'client_encoding': 'UTF8',
    }
    for key, value in params.server_settings.items():
        if key == 'client_encoding' and str(value).replace('-', '').upper() != 'UTF8':
            raise exceptions.ClientConfigurationError(
                f'client_encoding {value!r} is not supported: mypgdriver always uses UTF8')
        startup[key] = value
    return startup


async def _connect_host(loop, hostspec: HostSpec, params: ConnectParams, config,
                        connection_class) -> Connection:
    startup = _startup_parameters(params)
    mode = params.sslmode if params.ssl is None else 'require'
    if mode in ('allow', 'prefer') and not hostspec.is_unix_socket:
        return await _startup_with_fallback(loop, hostspec, params, config, connection_class,
                                            startup, first_tls=mode == 'prefer')
    return await _startup(loop, hostspec, params, config, connection_class, startup,
                          use_tls=mode != 'disable')


async def _startup_with_fallback(loop, hostspec, params, config, connection_class, startup,
                                 *, first_tls: bool):
    # libpq's two-attempt modes: 'allow' tries plain text, then TLS; 'prefer'
    # tries TLS, then plain text.  Whether the second attempt is made is
    # libpq's rule (_may_try_other_transport), and asyncpg's.
    first = _StartupProgress()
    try:
        return await _startup(loop, hostspec, params, config, connection_class, startup,
                              first, use_tls=first_tls)
    except Exception as first_error:
        if not _may_try_other_transport(first_error, first, first_tls=first_tls):
            raise
        try:
            return await _startup(loop, hostspec, params, config, connection_class, startup,
                                  _StartupProgress(), use_tls=not first_tls)
        except BaseException as second_error:
            # Both are kept, one as the other's cause, as libpq lists both.
            # (A cancelled second attempt is cancelled: the CancelledError
            # goes on, with the first attempt's error as its cause.)
            if isinstance(second_error, Exception) and _first_error_tells_more(
                    first_error, second_error):
                raise first_error from second_error
            raise second_error from first_error


def _may_try_other_transport(error: Exception, attempt: _StartupProgress, *,
                             first_tls: bool) -> bool:
    """Whether the first attempt's `error` lets an allow/prefer connection try
    the other transport (libpq: only before authentication completed)."""
    if attempt.authenticated:
        # The server took the credentials and failed afterwards (no such
        # database, a bad server_settings value, the server starting up):
        # the other transport would fail the same way, and under 'prefer'
        # the retry would send the password again, in plain text.
        return False
    if first_tls:
        if not attempt.tls_accepted:
            # The server declined TLS ('N'): the attempt that failed was
            # already in plain text.  (Or no usable answer to the
            # SSLRequest at all: not a server to retry with.)
            return False
        if not attempt.tls_established:
            # The TLS handshake failed (a protocol version or certificate
            # the server will not take, the connection reset): libpq goes
            # on in plain text.  ssl.SSLError is an OSError.
            return isinstance(error, OSError)
    # An error the server sent before authentication completed: only
    # pg_hba.conf knows which transport a role may use.  (A connection
    # closed before then too, as asyncpg does: ConnectionDoesNotExistError.)
    return isinstance(error, exceptions.PostgresError)


def _first_error_tells_more(first_error: BaseException, second_error: BaseException) -> bool:
    # The second attempt often fails only because the other transport is
    # refused by pg_hba.conf ("no encryption") or unusable (the connection
    # dropped, the server has no TLS): then the first attempt's error
    # ("password authentication failed") is the one that says what to fix,
    # unless it was itself such a pg_hba.conf rejection.
    if _is_hba_rejection(first_error):
        return False
    return _is_hba_rejection(second_error) or isinstance(
        second_error, (OSError, exceptions.ConnectionDoesNotExistError))


def _is_hba_rejection(error: BaseException) -> bool:
    # SQLSTATE 28000 itself: no pg_hba.conf line admits this transport (a
    # wrong password is its subclass InvalidPasswordError, 28P01).
    return type(error) is exceptions.InvalidAuthorizationSpecificationError


async def _startup(loop, hostspec, params, config, connection_class, startup,
                   progress: Optional[_StartupProgress] = None, *, use_tls):
    proto = Protocol(loop)
    proto.max_pipeline = config.max_pipeline
    proto._configure_startup(params.user, hostspec.password, startup,
                             _protocol_minor(params.min_protocol_version),
                             _protocol_minor(params.max_protocol_version))
    proto.channel_binding = params.channel_binding
    if progress is None:
        progress = _StartupProgress()
    try:
        transport = await _open_for_startup(loop, hostspec, params, proto, progress,
                                            use_tls=use_tls)
    except OSError as e:
        hinted = _with_server_question(e, hostspec)
        if hinted is None:
            raise
        raise hinted from None
    try:
        _set_keepalives(transport, params)
        await proto.start_startup()
    except BaseException:
        progress.authenticated = proto.authenticated
        transport.abort()
        raise
    conn = connection_class(proto, transport, loop, describe_host(hostspec), config, params)
    proto.cancel_request = lambda: _send_cancel_request(loop, hostspec, params, proto)
    return conn


def _protocol_minor(version: str) -> int:
    # '3.2' -> 2: the major version is always 3 (connect_params validated it).
    return int(version.partition('.')[2])


async def _send_cancel_request(loop, hostspec: HostSpec, params: ConnectParams, proto) -> None:
    """Send a CancelRequest for `proto`'s backend over a new connection.

    Returns when the server has closed that connection: by then the signal
    has been delivered, so a late cancel cannot hit the next query.
    """
    msg = proto.cancel_request_message()
    done = loop.create_future()

    class _CancelProtocol(asyncio.Protocol):
        def connection_made(self, transport):
            transport.write(msg)

        def connection_lost(self, exc):
            if not done.done():
                done.set_result(None)

    if proto.tls_server_cert_der is not None and not hostspec.is_unix_socket:
        # The same transport kind as the connection: TLS when it uses TLS.
        ctx = tls.make_ssl_context(params, direct=params.sslnegotiation == 'direct')
        if params.sslnegotiation == 'direct':
            transport, _ = await loop.create_connection(
                _CancelProtocol, hostspec.host, hostspec.port, ssl=ctx,
                server_hostname=hostspec.host)
        else:
            transport, _ = await tls.open_negotiated(
                loop, hostspec.host, hostspec.port, ctx, hostspec.host, required=False)
            cancel_proto = _CancelProtocol()
            transport.set_protocol(cancel_proto)
            cancel_proto.connection_made(transport)
    else:
        transport, _ = await _open_transport(loop, hostspec, _CancelProtocol)
    try:
        await waits.wait_shielded(loop, done, 10)
    finally:
        transport.close()

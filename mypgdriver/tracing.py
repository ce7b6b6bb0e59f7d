"""OpenTelemetry spans and metrics of the driver's operations (the optional extra).

With ``opentelemetry-api`` installed (``pip install mypgdriver[opentelemetry]``)
and a tracer or meter provider set, every operation of a connection (a
query, a prepared statement's run, executemany, a cursor's fetch, a COPY)
becomes a CLIENT span with the stable database semantic conventions for
PostgreSQL, and its duration goes into the ``db.client.operation.duration``
histogram; connect and pool acquire get spans too, and both pools report
their connections (``db.client.connection.*``).  docs/guide/tracing.rst lists
every attribute and metric.

What it costs when unused.  The operations ask one flag,
``TELEMETRY.live`` (a module global and a slot: no call, no attribute
dictionary), before anything else; it stays False when the API is not
installed, and while no provider is set.  Whether a provider is set is asked
at each connect (never per operation): OpenTelemetry has no notification for
it, and connecting is a round trip anyway.  :func:`instrument` and
:func:`uninstrument` decide it explicitly instead.

Nothing here changes what an operation does or raises: the span wraps the
coroutine the caller awaits, so it starts and ends in the caller's own
context (the asyncio task's, or the thread's for mypgdriver.sync, whose glue
runs the coroutine in the calling thread), and pipelined calls on one
connection each have their own.
"""
from __future__ import annotations

import re
import time
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional, TypeVar, cast

from mypgdriver._version import __version__

try:
    from opentelemetry import metrics as _otel_metrics
    from opentelemetry import trace as _otel_trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:     # the extra is not installed: tracing stays off
    _otel_trace = None  # type: ignore[assignment]
    _otel_metrics = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from mypgdriver.connecting.connect_params import ConnectParams

__all__ = ('instrument', 'uninstrument', 'is_live', 'TELEMETRY', 'SCHEMA_URL')

T = TypeVar('T')

#: The version of the semantic conventions the attributes follow.
SCHEMA_URL = 'https://opentelemetry.io/schemas/1.37.0'

#: The histogram buckets the conventions advise for db.client.operation.duration
#: and db.client.connection.wait_time (seconds).
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)

# The attributes an operation's metric keeps of its span's (the conventions
# list them for db.client.operation.duration; db.query.text is opt-in there).
_METRIC_ATTRIBUTES = ('db.system.name', 'db.namespace', 'db.operation.name',
                      'db.collection.name', 'db.query.summary', 'db.response.status_code',
                      'error.type', 'server.address', 'server.port')


class Telemetry:
    """The process's tracing state: whether operations make spans and metrics, and with what.

    ``live`` is the one flag the operations read; the rest is only used
    once it is True.
    """

    __slots__ = ('live', 'tracer', 'meter', 'duration', 'wait_time', 'mode', 'providers',
                 'pools')

    def __init__(self) -> None:
        self.live = False
        self.tracer: Any = None
        self.meter: Any = None
        self.duration: Any = None
        self.wait_time: Any = None
        # 'auto': live while a global provider is set (checked at connect);
        # 'on': instrument() was called; 'off': uninstrument() was.
        self.mode = 'auto'
        # The providers the instruments were made from (auto mode: to notice a change).
        self.providers: tuple[Any, Any] = (None, None)
        # Pools whose connections are reported (weak: see register_pool()).
        self.pools: Any = None


#: The state of this process (read on the hot paths as ``TELEMETRY.live``).
TELEMETRY = Telemetry()


def is_live() -> bool:
    """True while operations make spans and metrics."""
    return TELEMETRY.live


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Trace operations with these providers (None: the global ones), from now on.

    Without this call, tracing starts by itself once the application set a
    global tracer or meter provider (``trace.set_tracer_provider()``) before
    a connection is made.  With it, the given providers are used (as the
    ``tracer_provider=`` argument of OpenTelemetry's instrumentation
    packages), and connections made earlier are traced too.  Needs
    ``opentelemetry-api`` (ImportError otherwise).
    """
    if _otel_trace is None:
        raise ImportError('tracing needs the opentelemetry-api package: '
                          'pip install mypgdriver[opentelemetry]')
    TELEMETRY.mode = 'on'
    _use(tracer_provider if tracer_provider is not None else _otel_trace.get_tracer_provider(),
         meter_provider if meter_provider is not None else _otel_metrics.get_meter_provider())


def uninstrument() -> None:
    """Stop making spans and metrics, whatever providers are set, until :func:`instrument`."""
    TELEMETRY.mode = 'off'
    TELEMETRY.live = False


def refresh() -> None:
    """At connect: start (or stop) tracing if the application set (or changed) a global provider.

    Only in the automatic mode; a provider counts as set when it is not
    OpenTelemetry's stand-in (the proxy or no-op provider it returns before
    ``set_tracer_provider()``).
    """
    if _otel_trace is None or TELEMETRY.mode != 'auto':
        return
    tracer_provider: Any = _otel_trace.get_tracer_provider()
    meter_provider: Any = _otel_metrics.get_meter_provider()
    if not _is_set(tracer_provider):
        tracer_provider = None
    if not _is_set(meter_provider):
        meter_provider = None
    if tracer_provider is None and meter_provider is None:
        TELEMETRY.live = False
        return
    if (tracer_provider, meter_provider) != TELEMETRY.providers or not TELEMETRY.live:
        _use(tracer_provider, meter_provider)


def _is_set(provider: Any) -> bool:
    # The API's stand-ins: ProxyTracerProvider / NoOpTracerProvider, and the
    # metrics equivalents (the proxy class is private: matched by name).
    name = type(provider).__name__
    return not name.startswith(('Proxy', '_Proxy', 'NoOp', '_NoOp'))


def _use(tracer_provider: Any, meter_provider: Any) -> None:
    tel = TELEMETRY
    tel.providers = (tracer_provider, meter_provider)
    tel.tracer = None if tracer_provider is None else tracer_provider.get_tracer(
        'mypgdriver', __version__, schema_url=SCHEMA_URL)
    tel.meter = tel.duration = tel.wait_time = None
    if meter_provider is not None:
        meter = meter_provider.get_meter('mypgdriver', __version__, schema_url=SCHEMA_URL)
        tel.meter = meter
        tel.duration = _histogram(meter, 'db.client.operation.duration',
                                  'Duration of database client operations.')
        tel.wait_time = _histogram(meter, 'db.client.connection.wait_time',
                                   'The time it took to obtain an open connection from the pool.')
        _observe_pools(meter)
    tel.live = True


def _histogram(meter: Any, name: str, description: str) -> Any:
    try:
        return meter.create_histogram(name, unit='s', description=description,
                                      explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
    except TypeError:   # an API older than the advisory parameter (1.23)
        return meter.create_histogram(name, unit='s', description=description)


# --- connection attributes ---------------------------------------------------------------

def connection_attributes(params: Optional[ConnectParams], addr: Any) -> dict[str, Any]:
    """The attributes every span of a connection has: system, namespace, server address and port.

    `addr` is the address the connection was made to, as the connector
    describes it ("host:port", or the socket path); `params` its parameters.
    ``db.namespace`` is the database name, followed by ``|schema`` when
    the connection was made with a ``search_path`` (its first schema): the
    conventions' ``{database}|{schema}``, with the schema of the connection's
    start (a later ``SET search_path`` is not seen without a round trip).
    """
    attributes: dict[str, Any] = {'db.system.name': 'postgresql'}
    if params is None:
        return attributes
    namespace = params.database
    search_path = params.server_settings.get('search_path')
    if search_path:
        schema = search_path.split(',')[0].strip()
        if schema:
            namespace = f'{namespace}|{schema}' if namespace else schema
    if namespace:
        attributes['db.namespace'] = namespace
    host = _host_of(params, addr)
    if host is not None:
        if host.is_unix_socket:
            attributes['server.address'] = host.socket_path
        else:
            attributes['server.address'] = host.host
            attributes['server.port'] = host.port
    return attributes


def _host_of(params: ConnectParams, addr: Any) -> Any:
    """The HostSpec of `params` the connection was made to (`addr`), or None."""
    from mypgdriver.connecting.connector import describe_host  # (connector imports this module)
    for host in params.hosts:
        if describe_host(host) == addr:
            return host
    return params.hosts[0] if len(params.hosts) == 1 else None


# --- the summary of a query (the span's name) ----------------------------------------------

# Comments, literals, quoted names, words and the punctuation that matters
# (compiled at the first summary: an application that does not trace does
# not pay for it at import).
_TOKENS_PATTERN = (r"""
    (?P<skip>--[^\n]*|/\*.*?\*/|\s+)
  | (?P<literal>[EeBbXxUu]?'(?:[^']|'')*'|\$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)?\$|\$\d+|\d[\w.]*)
  | (?P<name>(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*))*)
  | (?P<punct>[(),;])
  | (?P<other>.)
""")
_tokens: Any = None

# Words that start an operation in the summary: anywhere (subqueries, CTEs,
# INSERT ... SELECT), or only at the start of a statement.
_OPERATIONS_ANYWHERE = frozenset(('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MERGE'))
_OPERATIONS_FIRST = frozenset((
    'CALL', 'COPY', 'TRUNCATE', 'VALUES', 'CREATE', 'ALTER', 'DROP', 'BEGIN', 'START',
    'COMMIT', 'END', 'ROLLBACK', 'ABORT', 'SAVEPOINT', 'RELEASE', 'SET', 'RESET', 'SHOW',
    'DISCARD', 'LISTEN', 'UNLISTEN', 'NOTIFY', 'LOCK', 'VACUUM', 'ANALYZE', 'EXPLAIN',
    'DECLARE', 'FETCH', 'MOVE', 'CLOSE', 'PREPARE', 'EXECUTE', 'DEALLOCATE', 'GRANT',
    'REVOKE', 'REFRESH', 'REINDEX', 'CLUSTER', 'COMMENT', 'DO', 'TABLE',
))
# Operations whose next name is their target (UPDATE t, CALL p, COPY t).
_TARGET_FOLLOWS = frozenset(('UPDATE', 'CALL', 'COPY', 'TRUNCATE', 'TABLE', 'LOCK'))
# Words after which the next name is a target; FROM, JOIN and USING start a
# list (FROM a, b).
_TARGET_WORDS = frozenset(('INTO', 'FROM', 'JOIN', 'USING'))
# Words between a DDL verb and its object's name (CREATE UNIQUE INDEX IF NOT
# EXISTS name), or before a table's name (FROM ONLY t, LATERAL).
_SKIPPED_BEFORE_TARGET = frozenset((
    'TABLE', 'INDEX', 'VIEW', 'SEQUENCE', 'FUNCTION', 'PROCEDURE', 'SCHEMA', 'TYPE',
    'DATABASE', 'EXTENSION', 'MATERIALIZED', 'TEMP', 'TEMPORARY', 'UNLOGGED', 'OR',
    'REPLACE', 'IF', 'NOT', 'EXISTS', 'UNIQUE', 'CONCURRENTLY', 'ONLY', 'TRIGGER', 'ROLE',
    'USER', 'LATERAL', 'GLOBAL', 'LOCAL', 'RECURSIVE', 'DOMAIN', 'AGGREGATE'))
_DDL = frozenset(('CREATE', 'ALTER', 'DROP'))
# UPDATE after these is a row lock or ON CONFLICT's action, not a statement.
_NOT_AN_UPDATE_AFTER = frozenset(('FOR', 'KEY', 'DO'))
# Words that end a FROM list.
_FROM_ENDS = frozenset(('WHERE', 'ON', 'GROUP', 'ORDER', 'LIMIT', 'OFFSET', 'HAVING',
                        'WINDOW', 'UNION', 'INTERSECT', 'EXCEPT', 'FOR', 'RETURNING', 'SET',
                        'VALUES', 'FETCH'))

_SUMMARY_LIMIT = 255
_summaries: dict[str, str] = {}
_SUMMARY_CACHE_SIZE = 1000


def summarize(query: str) -> str:
    """The query's ``db.query.summary``: its operations and their targets, in order.

    ``SELECT * FROM users u JOIN orders o ON ...`` gives ``SELECT users
    orders``; ``INSERT INTO t SELECT * FROM s`` gives ``INSERT t SELECT s``.
    Words are kept as written (no case normalisation), literals never appear,
    and the result is cut at 255 characters between words.  Cached per text:
    a traced query is summarised once.
    """
    summary = _summaries.get(query)
    if summary is None:
        summary = _summarize(query)
        if len(_summaries) >= _SUMMARY_CACHE_SIZE:
            _summaries.clear()
        _summaries[query] = summary
    return summary


def _summarize(query: str) -> str:
    global _tokens
    if _tokens is None:
        _tokens = re.compile(_TOKENS_PATTERN, re.VERBOSE | re.DOTALL)
    parts: list[str] = []
    length = 0
    expect = False          # the next name is a target
    from_depth = -1         # the parenthesis depth of the FROM list we are in (-1: none)
    depth = 0
    previous = ''           # the previous word (upper case) or punctuation; '' at the start
    for match in _tokens.finditer(query):
        kind = match.lastgroup
        if kind == 'skip':
            continue
        word = None
        if kind == 'name':
            text = match.group('name')
            upper = text.upper()
            if expect and upper in _SKIPPED_BEFORE_TARGET:
                pass        # still expecting the name
            elif expect and upper in ('STDIN', 'STDOUT'):
                expect = False      # COPY t FROM STDIN
            elif expect:
                word = text
                expect = False
            elif ((upper in _OPERATIONS_ANYWHERE and not (
                    upper == 'UPDATE' and previous in _NOT_AN_UPDATE_AFTER))
                  or (upper in _OPERATIONS_FIRST and previous in ('', ';', '('))):
                word = text
                expect = upper in _TARGET_FOLLOWS
                from_depth = -1
            elif upper in _TARGET_WORDS:
                expect = True
                from_depth = depth if upper != 'INTO' else -1
            elif previous in _DDL and upper in _SKIPPED_BEFORE_TARGET:
                expect = True
            elif upper in _FROM_ENDS:
                from_depth = -1
            previous = upper
        elif kind == 'punct':
            text = match.group('punct')
            if text == '(':
                depth += 1
                expect = False
            elif text == ')':
                depth -= 1
                expect = False
            elif text == ',':
                # FROM a, b: the next name is a target too.
                expect = depth == from_depth
            else:
                expect = False
                from_depth = -1
            previous = text
        else:
            expect = False
            previous = '.'
        if word is not None:
            added = len(word) + (1 if parts else 0)
            if length + added > _SUMMARY_LIMIT:
                break
            length += added
            parts.append(word)
    return ' '.join(parts)


# --- operations ------------------------------------------------------------------------------

def _error_attributes(error: BaseException, attributes: dict[str, Any]) -> str:
    """Add what the conventions say about `error` to `attributes`; the span status's description.

    A PostgreSQL error: ``db.response.status_code`` and ``error.type`` are its
    SQLSTATE (23505 for a unique violation).  Anything else (a timeout, a
    cancellation, a lost connection): ``error.type`` is the exception's
    class, by its public name (``TimeoutError``, ``asyncio.CancelledError``,
    ``mypgdriver.exceptions.InterfaceError``).
    """
    sqlstate = getattr(error, 'sqlstate', None)
    if isinstance(sqlstate, str) and sqlstate:
        attributes['db.response.status_code'] = sqlstate
        attributes['error.type'] = sqlstate
    else:
        attributes['error.type'] = error_type(error)
    return str(error)


def error_type(error: BaseException) -> str:
    """The canonical name of `error`'s class, as error.type wants it."""
    cls = type(error)
    if isinstance(error, TimeoutError) or cls.__name__ == 'TimeoutError':
        # asyncio.TimeoutError is TimeoutError from 3.11 on: one name for both.
        return 'TimeoutError'
    module = cls.__module__
    if module == 'builtins':
        return cls.__qualname__
    if module.startswith('mypgdriver.exceptions'):
        module = 'mypgdriver.exceptions'
    elif module.startswith('asyncio.'):
        module = 'asyncio'
    return f'{module}.{cls.__qualname__}'


def span_name(attributes: dict[str, Any]) -> str:
    """The conventions' span name: the summary, else ``{operation} {target}``, else the system."""
    summary = attributes.get('db.query.summary')
    if summary:
        return summary
    target = attributes.get('db.collection.name') or attributes.get('db.namespace')
    operation = attributes.get('db.operation.name')
    if operation:
        return f'{operation} {target}' if target else operation
    if target:
        return target
    return 'postgresql'


class RowCounter:
    """The rows of an executemany(), counted for db.operation.batch.size.

    A sized argument (a list, a tuple) is left as it is and counted by its
    length; an iterator or async iterator is wrapped in a generator that
    counts what the driver reads of it (the whole of it, unless the call
    fails).  `rows` is what to pass on, count() the number.
    """

    __slots__ = ('rows', 'n')

    def __init__(self, rows: Any) -> None:
        if hasattr(rows, '__len__'):
            self.rows = rows
            self.n = len(rows)
        else:
            self.n = 0
            self.rows = (self._count_async(rows) if hasattr(rows, '__aiter__')
                         else self._count(rows))

    def count(self) -> int:
        return self.n

    def _count(self, rows: Any) -> Any:
        for row in rows:
            self.n += 1
            yield row

    async def _count_async(self, rows: Any) -> Any:
        async for row in rows:
            self.n += 1
            yield row


async def traced(operation: Awaitable[T], base: dict[str, Any], query: Optional[str], *,
                 operation_name: Optional[str] = None, collection: Optional[str] = None,
                 batch_size: Optional[Callable[[], int]] = None,
                 summary: Optional[str] = None) -> T:
    """Await `operation` inside a CLIENT span, and record its duration.

    `base` holds the connection's attributes (connection_attributes());
    `query` is the parameterised text (never the values).  The span's parent
    is the caller's current context; it is not made current itself (the
    driver starts no spans under it).  `batch_size` (executemany) gives the
    number of argument rows once the operation ended: with 2 or more (or
    none), the span is a batch (``db.operation.batch.size``, ``BATCH``); with
    one, a single operation, as the conventions say.
    """
    attributes = dict(base)
    if operation_name is not None:
        attributes['db.operation.name'] = operation_name
    if collection is not None:
        attributes['db.collection.name'] = collection
    if query is not None:
        attributes['db.query.text'] = query
        if summary is None:
            summary = summarize(query)
    if summary:
        attributes['db.query.summary'] = summary
    return await _run_in_span(operation, attributes, TELEMETRY.duration, SpanKind.CLIENT,
                              batch_size=batch_size)


def _batch_attributes(attributes: dict[str, Any], size: int) -> dict[str, Any]:
    """What a batch of `size` operations adds to its span's attributes (nothing for one)."""
    if size == 1:
        return {}
    added: dict[str, Any] = {'db.operation.batch.size': size, 'db.operation.name': 'BATCH'}
    summary = attributes.get('db.query.summary')
    added['db.query.summary'] = f'BATCH {summary}' if summary else 'BATCH'
    return added


async def _run_in_span(operation: Awaitable[T], attributes: dict[str, Any], histogram: Any,
                       kind: Any, name: Optional[str] = None,
                       metric_attributes: Optional[Callable[[dict[str, Any]], dict[str, Any]]]
                       = None, batch_size: Optional[Callable[[], int]] = None) -> T:
    tracer = TELEMETRY.tracer
    started = time.time_ns()
    span = None if tracer is None else tracer.start_span(
        span_name(attributes) if name is None else name, kind=kind, attributes=attributes,
        start_time=started)
    try:
        result = await operation
    except BaseException as error:
        failed: dict[str, Any] = {}
        description = _error_attributes(error, failed)
        if batch_size is not None:
            failed.update(_batch_attributes(attributes, batch_size()))
        _finish(span, started, histogram, attributes, failed, description, metric_attributes)
        raise
    added = None
    if batch_size is not None:
        added = _batch_attributes(attributes, batch_size())
    _finish(span, started, histogram, attributes, added, None, metric_attributes)
    return result


def _finish(span: Any, started: int, histogram: Any, attributes: dict[str, Any],
            added: Optional[dict[str, Any]], description: Optional[str],
            metric_attributes: Optional[Callable[[dict[str, Any]], dict[str, Any]]]) -> None:
    """End the span (with the attributes `added` at its end; `description`: it failed)."""
    ended = time.time_ns()
    if added:
        attributes.update(added)
    if span is not None:
        if added:
            span.set_attributes(added)
            if 'db.query.summary' in added:
                span.update_name(added['db.query.summary'])
        if description is not None:
            span.set_status(Status(StatusCode.ERROR, description or None))
        span.end(end_time=ended)
    if histogram is not None:
        if metric_attributes is not None:
            recorded = metric_attributes(attributes)
        else:
            recorded = {key: attributes[key] for key in _METRIC_ATTRIBUTES if key in attributes}
        histogram.record((ended - started) / 1e9, recorded)


# --- connect and pools -------------------------------------------------------------------------

async def traced_connect(operation: Awaitable[T], params: ConnectParams) -> T:
    """Await a connect inside a CLIENT span named ``connect``.

    The span has the connection's attributes (of the host connected to,
    known once it succeeded; with one host, from the start).
    """
    attributes = connection_attributes(params, None)
    tracer = TELEMETRY.tracer
    started = time.time_ns()
    span = None if tracer is None else tracer.start_span(
        'connect', kind=SpanKind.CLIENT, attributes=attributes, start_time=started)
    try:
        conn = await operation
    except BaseException as error:
        if span is not None:
            failed: dict[str, Any] = {}
            description = _error_attributes(error, failed)
            span.set_attributes(failed)
            span.set_status(Status(StatusCode.ERROR, description or None))
            span.end()
        raise
    if span is not None:
        session = getattr(conn, '_session', None)
        if session is not None:
            span.set_attributes(session.trace_attributes())
        span.end()
    return conn


def name_pool(pool: Any, dsn: Optional[str], connect_kwargs: dict[str, Any]) -> str:
    """`pool`'s ``db.client.connection.pool.name``, made once from its connect arguments.

    The pools have no name of their own: as the conventions suggest, the
    name is ``server.address:server.port/db.namespace`` (of the first host),
    with ``#2``, ``#3``... appended for further pools to the same place, so
    that it is unique in the process.  The pool is then reported in the
    connection metrics (register_pool()).
    """
    name = pool._otel_pool_name
    if name is not None:
        return cast(str, name)
    import inspect

    from mypgdriver.connecting.connect_params import parse_connect_params
    wanted = inspect.signature(parse_connect_params).parameters
    try:
        params = parse_connect_params(
            dsn, **{key: value for key, value in connect_kwargs.items() if key in wanted})
    except Exception:       # (connecting reports it; the name is not worth an error)
        params = None
    attributes = connection_attributes(params, None)
    address = attributes.get('server.address', '')
    port = attributes.get('server.port')
    name = f'{address}:{port}' if port is not None else str(address)
    name += f"/{attributes.get('db.namespace', '')}"
    taken = {getattr(other, '_otel_pool_name', None) for other in _registered_pools()
             if not other.is_closing()}
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f'{name}#{n}'
    pool._otel_pool_name = candidate
    register_pool(pool)
    return candidate


async def traced_acquire(operation: Awaitable[T], pool_name: str) -> T:
    """Await a pool acquire inside an INTERNAL span named ``acquire``; record its wait."""
    attributes = {'db.system.name': 'postgresql', 'db.client.connection.pool.name': pool_name}
    return await _run_in_span(operation, attributes, TELEMETRY.wait_time, SpanKind.INTERNAL,
                              'acquire', _pool_metric_attributes)


def run_acquire(acquire: Callable[[], T], pool_name: str) -> T:
    """A blocking pool acquire (mypgdriver.sync) inside the same span as traced_acquire()."""
    tel = TELEMETRY
    attributes = {'db.system.name': 'postgresql', 'db.client.connection.pool.name': pool_name}
    tracer = tel.tracer
    started = time.time_ns()
    span = None if tracer is None else tracer.start_span(
        'acquire', kind=SpanKind.INTERNAL, attributes=attributes, start_time=started)
    try:
        result = acquire()
    except BaseException as error:
        failed: dict[str, Any] = {}
        description = _error_attributes(error, failed)
        _finish(span, started, tel.wait_time, attributes, failed, description,
                _pool_metric_attributes)
        raise
    _finish(span, started, tel.wait_time, attributes, None, None, _pool_metric_attributes)
    return result


def _pool_metric_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    recorded = {'db.client.connection.pool.name': attributes['db.client.connection.pool.name']}
    if 'error.type' in attributes:
        recorded['error.type'] = attributes['error.type']
    return recorded


def register_pool(pool: Any) -> None:
    """Report `pool`'s connections in the db.client.connection.* metrics while it lives.

    The pool needs ``_otel_pool_name`` and ``get_stats()``; it is held
    weakly, and read only when the metrics are collected (observable
    instruments: nothing is counted per acquire or release).
    """
    if TELEMETRY.pools is None:
        TELEMETRY.pools = weakref.WeakSet()
    TELEMETRY.pools.add(pool)


def _registered_pools() -> list[Any]:
    pools = TELEMETRY.pools
    return [] if pools is None else list(pools)


def _observe_pools(meter: Any) -> None:
    from opentelemetry.metrics import Observation

    def stats() -> list[tuple[str, Any]]:
        found = []
        for pool in _registered_pools():
            name = getattr(pool, '_otel_pool_name', None)
            if name is None or pool.is_closing():
                continue
            try:
                found.append((name, pool.get_stats()))
            except Exception:   # (a pool closing meanwhile)
                continue
        return found

    def count(_options: Any) -> list[Any]:
        observations = []
        for name, s in stats():
            observations.append(Observation(s.idle, {
                'db.client.connection.pool.name': name, 'db.client.connection.state': 'idle'}))
            observations.append(Observation(s.size - s.idle, {
                'db.client.connection.pool.name': name, 'db.client.connection.state': 'used'}))
        return observations

    def one(field: str) -> Callable[[Any], list[Any]]:
        def observe(_options: Any) -> list[Any]:
            return [Observation(getattr(s, field), {'db.client.connection.pool.name': name})
                    for name, s in stats()]
        return observe

    meter.create_observable_up_down_counter(
        'db.client.connection.count', [count], unit='{connection}',
        description='The number of connections that are currently in state described by '
                    'the state attribute.')
    meter.create_observable_up_down_counter(
        'db.client.connection.pending_requests', [one('waiters')], unit='{request}',
        description='The number of current pending requests for an open connection.')
    meter.create_observable_up_down_counter(
        'db.client.connection.max', [one('max_size')], unit='{connection}',
        description='The maximum number of open connections allowed.')
    meter.create_observable_up_down_counter(
        'db.client.connection.idle.min', [one('min_size')], unit='{connection}',
        description='The minimum number of idle open connections allowed.')
    meter.create_observable_counter(
        'db.client.connection.timeouts', [one('timeouts')], unit='{timeout}',
        description='The number of connection timeouts that have occurred trying to obtain '
                    'a connection from the pool.')

"""Write mypgdriver.sync's delegating methods from the asyncio classes' source.

Every method of the sync API that only runs the asyncio method of the same
name to its end is written here, not by hand: its signature, its
``@overload`` variants and its docstring are read from the asyncio class
(with :mod:`ast`, so annotations stay as written and docstrings exact), and
its body is one delegation.  The output is a mixin per sync class (FACES
below) in a file whose first line says it is generated; the hand-written
class inherits from it and keeps only what truly differs (notifies(),
cancel(), listener relays, context managers, ``__init__``...).

    python -m tools.gen_sync            write the generated files
    python -m tools.gen_sync --check    exit 1 naming each file that differs

What the generator knows, each in one table below:

* FACES: which asyncio methods make which sync mixin, and how a body
  delegates (BodyStyle);
* FUNCTION_FACES: module functions written whole from an asyncio one
  (mypgdriver.sync.connect from mypgdriver.connect: its parameters but
  ``loop``, and a body that calls the glue's ``open_connection()``);
* OPTIONS_FACES: a TypedDict of such a function's keywords, for a function
  that passes them on as ``**options`` (mypgdriver.dbapi.connect);
* WRAPPERS: asyncio results that the sync API wraps (a PreparedStatement
  becomes a sync PreparedStatement...);
* ANNOTATION_RENAMES / PARAMETER_TYPES: types that differ (an async
  iterable is not taken by sync code);
* docstring rules (sync_docstring) and, where the sync API truly says
  something else, DOC_EDITS: per method (or module function), the asyncio
  sentence and its sync replacement (the generator fails when the sentence
  is gone, so an edit of the asyncio docstring cannot silently drop it);
* PRECHECKS: a hand-written check called before the delegation (COPY
  sources must be sync file objects or iterables...);
* ARGUMENT_WRAPS: what is passed instead of a parameter (a listener
  callback goes through a relay that gives it the sync Connection);
* FAST_PATH_KEYWORDS: keywords left out of the call when they hold their
  default None, as the hand-tuned methods did (a keyword argument less
  costs less to match: +3% on ``fetch('SELECT 1+1')`` measured with
  callgrind).

``--target`` names the output language: ``python`` only for now (a later
issue compiles the sync call path).
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import re
import sys
import textwrap
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 100


# --- what is generated -------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class BodyStyle:
    """How a generated body reaches the asyncio object.

    `kind` is ``'run'`` (``run(target.m(...))`` for a coroutine method,
    ``target.m(...)`` for a plain one), ``'direct'`` (``target.m(...)``
    always: the sync pool's methods, whose target, its thread driver, has
    the same methods blocking), ``'acquire'`` (``with
    self.acquire() as con: return con.m(...)``: the pool's shortcuts, which
    call the sync connection) or ``'cursor'`` (``self._on_cursor(lambda
    cursor: cursor.m(...))``: the sync cursors say which asyncio Cursor).
    """

    kind: str
    target: str = ''
    run: str = ''


@dataclasses.dataclass(frozen=True)
class Face:
    """One generated file: a mixin of delegating methods for one sync class."""

    output: str
    class_name: str
    doc: str
    #: (file, class) of the asyncio source, searched in order for each method.
    sources: tuple[tuple[str, str], ...]
    methods: tuple[str, ...]
    body: BodyStyle
    #: Lines of the class body before the methods: what the hand-written
    #: class provides, declared for type checkers.
    declarations: str = ''
    #: Names the generated code may use -> ``(module, only for type checkers)``.
    names: tuple[tuple[str, str, bool], ...] = ()
    #: The mixin's bases (default: the asyncio class's ``Generic[...]``, if any).
    bases: str = ''
    #: Keyword-only parameters of the asyncio methods that the sync ones do not take.
    dropped: tuple[str, ...] = ()


_COMMON_NAMES: tuple[tuple[str, str, bool], ...] = (
    ('TYPE_CHECKING', 'typing', False),
    ('Any', 'typing', False),
    ('Callable', 'typing', False),
    ('ContextManager', 'typing', False),
    ('Generic', 'typing', False),
    ('Iterable', 'typing', False),
    ('Optional', 'typing', False),
    ('Sequence', 'typing', False),
    ('Union', 'typing', False),
    ('overload', 'typing', False),
    ('ArgumentRow', 'mypgdriver._typing', False),
    ('OtherRowT', 'mypgdriver._typing', False),
    ('RecordT', 'mypgdriver._typing', False),
    ('RowT', 'mypgdriver._typing', False),
    ('Record', 'mypgdriver.protocol.record', False),
    ('RowFactory', 'mypgdriver.rows', False),
    ('LoggedQuery', 'mypgdriver.connection', False),
    ('PipelineStats', 'mypgdriver.connection', False),
    ('ConnectionSettings', 'mypgdriver.server_info', False),
    ('ServerVersion', 'mypgdriver.server_info', False),
    ('Attribute', 'mypgdriver.types', True),
    ('Type', 'mypgdriver.types', True),
    ('CallRunner', 'mypgdriver.sync.driver.runner', True),
)

FACES: tuple[Face, ...] = (
    Face(
        output='mypgdriver/sync/_connection_methods.py',
        class_name='ConnectionMethods',
        doc='The methods of the sync Connection that are the asyncio Connection\'s, '
            'run to their end.',
        sources=(('mypgdriver/connection.py', 'Connection'),
                 ('mypgdriver/copy.py', 'CopyMixin'),
                 ('mypgdriver/type_codecs.py', 'TypeCodecsMixin'),
                 ('mypgdriver/listeners.py', 'ListenersMixin')),
        methods=('get_server_pid', 'get_server_version', 'get_protocol_version',
                 'get_settings', 'get_pipeline_stats', 'is_closed', 'is_in_transaction',
                 'execute', 'executemany', 'fetchmany', 'fetch', 'fetchrow', 'fetchval',
                 'prepare', 'cursor', 'transaction',
                 'copy_from_table', 'copy_from_query', 'copy_to_table',
                 'copy_records_to_table',
                 'add_listener', 'remove_listener', 'add_log_listener', 'remove_log_listener',
                 'add_termination_listener', 'remove_termination_listener',
                 'add_query_logger', 'remove_query_logger', 'query_logger',
                 'set_type_codec', 'reset_type_codec', 'set_builtin_type_codec',
                 'reload_schema_state', 'reset', 'get_reset_query', 'close'),
        body=BodyStyle('run', target='self._aconn', run='self._run'),
        declarations=(
            '# The hand-written Connection\'s (its __slots__), declared for type checkers.\n'
            '_aconn: AsyncConnection\n'
            '_session: Session\n'
            '_runner: CallRunner\n'
            '_run: CoroutineRunner\n'
            '_execute: ExecuteCall\n'
            '_relays: RelayTable[Connection]\n'),
        names=(('AsyncConnection', 'mypgdriver.connection', True),
               ('CoroutineRunner', 'mypgdriver.sync.connection', True),
               ('ExecuteCall', 'mypgdriver.sync.connection', True),
               ('Session', 'mypgdriver.core.session', True),
               ('choose_rows', 'mypgdriver.rows', False),
               ('PreparedStatement', 'mypgdriver.sync.prepared', False),
               ('CursorFactory', 'mypgdriver.sync.cursor', False),
               ('Transaction', 'mypgdriver.sync.transaction', False),
               ('CopyOutput', 'mypgdriver.sync.copy_checks', False),
               ('CopySource', 'mypgdriver.sync.copy_checks', False),
               ('check_copy_output', 'mypgdriver.sync.copy_checks', False),
               ('check_copy_source', 'mypgdriver.sync.copy_checks', False),
               ('check_copy_records', 'mypgdriver.sync.copy_checks', False),
               ('check_plain_callback', 'mypgdriver.sync.driver.relays', False),
               ('RelayTable', 'mypgdriver.sync.driver.relays', True),
               ('Connection', 'mypgdriver.sync.connection', True),
               ('NotificationCallback', 'mypgdriver.sync.connection', True),
               ('LogCallback', 'mypgdriver.sync.connection', True),
               ('TerminationCallback', 'mypgdriver.sync.connection', True)),
    ),
    Face(
        output='mypgdriver/sync/_prepared_methods.py',
        class_name='PreparedStatementMethods',
        doc='The methods of the sync PreparedStatement that are the asyncio one\'s, '
            'run to their end.',
        sources=(('mypgdriver/prepared.py', 'PreparedStatement'),),
        methods=('get_name', 'get_query', 'get_statusmsg', 'get_parameters',
                 'get_attributes', 'fetch', 'fetchrow', 'fetchval', 'executemany',
                 'fetchmany', 'cursor', 'explain'),
        body=BodyStyle('run', target='self._statement', run='self._runner.run'),
        declarations=(
            '# The hand-written PreparedStatement\'s (its __slots__), declared for type '
            'checkers.\n'
            '_runner: CallRunner\n'
            '_statement: async_prepared.PreparedStatement[RowT]\n'),
        names=(('async_prepared', 'mypgdriver.prepared', True),
               ('choose_rows', 'mypgdriver.rows', False),
               ('CursorFactory', 'mypgdriver.sync.cursor', False)),
    ),
    Face(
        output='mypgdriver/sync/_cursor_methods.py',
        class_name='CursorMethods',
        doc='fetch(n), fetchrow() and forward(n) of the sync Cursor and CursorFactory.\n\n'
            'Each is the asyncio Cursor method of the same name; the class says, in\n'
            '``_on_cursor()``, which asyncio Cursor runs it.',
        sources=(('mypgdriver/cursor.py', 'Cursor'),),
        methods=('fetch', 'fetchrow', 'forward'),
        body=BodyStyle('cursor'),
        bases='Generic[RowT]',
        declarations=(
            'def _on_cursor(self, call: CursorCall[RowT, T]) -> T:\n'
            '    raise NotImplementedError\n'),
        names=(('CursorCall', 'mypgdriver.sync.cursor', True),
               ('T', 'mypgdriver.sync.cursor', True)),
    ),
    Face(
        output='mypgdriver/sync/_transaction_methods.py',
        class_name='TransactionMethods',
        doc='start(), commit() and rollback() of the sync Transaction.',
        sources=(('mypgdriver/transaction.py', 'Transaction'),),
        methods=('start', 'commit', 'rollback'),
        body=BodyStyle('run', target='self._transaction', run='self._run'),
        declarations=(
            'if TYPE_CHECKING:\n'
            '    # TransactionBlock\'s (blocks.pyx), declared for type checkers.\n'
            '    @property\n'
            '    def _run(self) -> Callable[[Any], Any]: ...\n'
            '    @property\n'
            '    def _transaction(self) -> Any: ...\n'),
    ),
    Face(
        output='mypgdriver/sync/_pool_methods.py',
        class_name='PoolMethods',
        doc='The methods of the sync Pool that are the asyncio Pool\'s, run by its thread '
            'driver.\n\n'
            'Each calls the method of the same name of the pool\'s ThreadDriver\n'
            '(mypgdriver/sync/driver/poolcore.pyx), which blocks where the asyncio\n'
            'one awaits.',
        sources=(('mypgdriver/pool/pool.py', 'Pool'),),
        methods=('__init__', 'get_stats', 'set_connect_args', 'expire_connections', 'acquire',
                 'release', 'close', 'terminate'),
        body=BodyStyle('direct', target='self._core'),
        # No event loop in the sync API.
        dropped=('loop',),
        declarations=(
            '# The hand-written Pool\'s, declared for type checkers.\n'
            '_core: ThreadDriver\n'
            'if TYPE_CHECKING:\n'
            '    def _configure(self, arguments: dict[str, Any]) -> None: ...\n'),
        names=(('ThreadDriver', 'mypgdriver.sync.driver.poolcore', True),
               ('Connection', 'mypgdriver.sync.connection', False),
               ('JsonCodec', 'mypgdriver.types', False),
               ('PoolConnectionProxy', 'mypgdriver.sync.pooled', False),
               ('PoolStats', 'mypgdriver.pool.stats', False)),
    ),
    Face(
        output='mypgdriver/sync/_pool_shortcuts.py',
        class_name='PoolShortcuts',
        doc='The shortcut methods of the sync Pool.\n\n'
            'Each makes one call on a connection of its own, acquired and released.',
        sources=(('mypgdriver/pool/pool.py', 'Pool'),),
        methods=('execute', 'executemany', 'fetch', 'fetchrow', 'fetchval', 'fetchmany',
                 'copy_from_table', 'copy_from_query', 'copy_to_table',
                 'copy_records_to_table'),
        body=BodyStyle('acquire'),
        declarations=(
            'if TYPE_CHECKING:\n'
            '    # The hand-written Pool\'s, declared for type checkers.\n'
            '    def acquire(self, *, timeout: Optional[float] = None) '
            '-> PoolConnectionProxy: ...\n'),
        names=(('PoolConnectionProxy', 'mypgdriver.sync.pooled', True),
               ('CopyOutput', 'mypgdriver.sync.copy_checks', False),
               ('CopySource', 'mypgdriver.sync.copy_checks', False)),
    ),
)

@dataclasses.dataclass(frozen=True)
class FunctionFace:
    """One generated file holding one module function: the sync form of an asyncio one.

    The signature is the asyncio function's without `dropped`; the body
    checks the `subclass_checks` parameters, then calls `call` with every
    argument but `not_passed` and returns `result` (`{}` is that call).
    """

    output: str
    name: str
    doc: str
    source: str
    dropped: tuple[str, ...]
    call: str
    not_passed: tuple[str, ...]
    result: str
    #: Parameter -> the dotted name of the class it must be (a subclass of):
    #: a ``type[C]`` argument checked before anything is done.
    subclass_checks: tuple[tuple[str, str], ...] = ()
    names: tuple[tuple[str, str, bool], ...] = ()


FUNCTION_FACES: tuple[FunctionFace, ...] = (
    FunctionFace(
        output='mypgdriver/sync/_connect.py',
        name='connect',
        doc='connect() of the sync API: the asyncio connector\'s own coroutine, driven by a '
            'SyncGlue.',
        source='mypgdriver/connecting/connector.py',
        # No event loop in the sync API (the glue is the connector's loop).
        dropped=('loop',),
        call='open_connection',
        # The asyncio connector makes an asyncio Connection; the sync class
        # wraps it with the glue that drives it.
        not_passed=('connection_class',),
        result='connection_class(*{})',
        subclass_checks=(('connection_class', 'mypgdriver.sync.Connection'),),
        names=(('Connection', 'mypgdriver.sync.connection', False),
               ('open_connection', 'mypgdriver.sync.driver.glue', False),
               ('InterfaceError', 'mypgdriver.exceptions', False),
               ('Mapping', 'typing', False),
               ('SSLContext', 'ssl', False),
               ('DEFAULT_MAX_PIPELINE', 'mypgdriver.protocol.protocol', False),
               ('JsonCodec', 'mypgdriver.types', False)),
    ),
    FunctionFace(
        output='mypgdriver/sync/_create_pool.py',
        name='create_pool',
        doc='create_pool() of the sync API: the asyncio create_pool()\'s arguments, for a '
            'thread-safe Pool.',
        source='mypgdriver/pool/pool.py',
        # No event loop in the sync API.
        dropped=('loop',),
        call='Pool',
        not_passed=(),
        # Its first connections opened, its background thread started.
        result='opened({})',
        names=(('Pool', 'mypgdriver.sync.pool', False),
               ('opened', 'mypgdriver.sync.pool', False),
               ('Connection', 'mypgdriver.sync.connection', False),
               ('PoolConnectionProxy', 'mypgdriver.sync.pooled', False),
               ('JsonCodec', 'mypgdriver.types', False)),
    ),
)

@dataclasses.dataclass(frozen=True)
class OptionsFace:
    """One generated file holding a TypedDict of a generated function's keywords.

    For ``**options: Unpack[...]`` in a function that passes them on: its
    callers' keywords are type-checked without a copy of the parameter list.
    """

    output: str
    class_name: str
    doc: str
    #: The FunctionFace (by output) whose keyword-only parameters the fields are.
    function: str
    #: Keywords the function taking the options defines itself (and means otherwise).
    leave_out: tuple[str, ...]
    names: tuple[tuple[str, str, bool], ...] = ()


OPTIONS_FACES: tuple[OptionsFace, ...] = (
    OptionsFace(
        output='mypgdriver/dbapi/_connect_options.py',
        class_name='ConnectOptions',
        doc='The keywords mypgdriver.dbapi.connect() passes on to mypgdriver.sync.connect().',
        function='mypgdriver/sync/_connect.py',
        # The DB-API's row_factory is psycopg's (it makes the cursors' rows).
        leave_out=('row_factory',),
        names=(('TypedDict', 'typing', False),
               ('Connection', 'mypgdriver.sync.connection', True),
               ('Mapping', 'typing', False),
               ('SSLContext', 'ssl', True),
               ('Record', 'mypgdriver.protocol.record', True),
               ('JsonCodec', 'mypgdriver.types', True)),
    ),
)

#: asyncio result type (the head of the return annotation) -> the sync object
#: made of it; `{}` is the delegation.
WRAPPERS = {
    'PreparedStatement': 'PreparedStatement(self._runner, {})',
    'CursorFactory': 'CursorFactory(self._runner, {})',
    'Transaction': 'Transaction(self._runner, {})',
}

#: Patterns of annotations replaced in the sync signatures: sync code takes no
#: async iterables, and the builtin generics read as the rest of the package.
ANNOTATION_RENAMES = {
    r'\bArgumentRows\b': 'Iterable[ArgumentRow]',
    r'\bList\[': 'list[',
    r'\bType\[': 'type[',      # typing.Type; not mypgdriver.types.Type
    # A value or an awaitable of it (a password function may be a coroutine
    # function): sync code gives the value.
    r'\bUnion\[(\w+), Awaitable\[\1\]\]': r'\1',
    # connect()'s `ssl` parameter would read as the module's name.
    r'\bssl\.SSLContext\b': 'SSLContext',
    # `async with pool.acquire()` / `await pool.acquire()`: the sync acquire()
    # returns the proxy itself.
    r'\bPoolAcquireContext\b': 'PoolConnectionProxy',
    # The pool's callbacks: coroutine functions in asyncio, plain ones here.
    r'\bAwaitable\[None\]': 'object',
    r'\bAwaitable\[(\w+)\]': r'\1',
}

#: Parameters the asyncio API types as Any, and their sync types.
PARAMETER_TYPES = {
    'output': 'CopyOutput',
    'source': 'CopySource',
}

#: Keywords passed only when not None (their asyncio default): see the module docstring.
FAST_PATH_KEYWORDS = ('row_factory',)

#: class -> methods whose body is the asyncio method's own statements, made
#: blocking (transliterated()): an awaited call named in COMPILED_CALLS
#: becomes a call of the compiled call path, any other ``await e`` (a whole
#: statement's value) ``run(e)``.  The rows a call returns are then handled
#: by the asyncio code itself (fetchrow's first row, fetchval's column).
TRANSLITERATED = {
    'ConnectionMethods': ('execute', 'fetch', 'fetchrow', 'fetchval'),
    'PreparedStatementMethods': ('fetch', 'fetchrow', 'fetchval'),
}

#: Awaited calls of the asyncio bodies -> the blocking call that runs them,
#: and what a first argument ``self`` becomes (None: no such argument):
#: ``Session.execute`` through the connection's CallRunner.execute(),
#: ``Session.run_prepared`` through CallRunner.run_prepared() given the
#: asyncio statement the sync one wraps (mypgdriver/sync/driver/runner.pyx:
#: the compiled call path, a run without the Session's coroutine).
COMPILED_CALLS: dict[str, tuple[str, Optional[str]]] = {
    'self._session.execute': ('self._execute', None),
    'self._session.run_prepared': ('self._runner.run_prepared', 'self._statement'),
}

#: class -> (the body of its generated ``__init__``, its docstring): the
#: signature is the asyncio class's, the set-up the sync class's own, given
#: the arguments by name.
CONSTRUCTORS = {
    'PoolMethods': ('self._configure(locals())',
                    'A pool, not opened yet: :func:`create_pool` makes and opens one (see '
                    'there\nfor the arguments).'),
}

#: (class, method) -> a hand-written check called with the arguments first.
PRECHECKS = {
    ('ConnectionMethods', 'copy_from_table'): 'check_copy_output(output)',
    ('ConnectionMethods', 'copy_from_query'): 'check_copy_output(output)',
    ('ConnectionMethods', 'copy_to_table'): 'check_copy_source(source)',
    ('ConnectionMethods', 'copy_records_to_table'): 'check_copy_records(records)',
    ('ConnectionMethods', 'add_query_logger'): "check_plain_callback(callback, 'query logger')",
    ('ConnectionMethods', 'query_logger'): "check_plain_callback(callback, 'query logger')",
    ('ConnectionMethods', 'add_listener'):
        "check_plain_callback(callback, 'notification listener')",
    ('ConnectionMethods', 'add_log_listener'): "check_plain_callback(callback, 'log listener')",
    ('ConnectionMethods', 'add_termination_listener'):
        "check_plain_callback(callback, 'termination listener')",
}

#: (class, method) -> {parameter: what the delegation passes instead}.  The
#: asyncio Connection calls a listener with itself; a sync one must get the
#: sync Connection, so the callback is wrapped in a relay
#: (mypgdriver/sync/driver/relays.py), and removing it passes the relay
#: that adding it made (a relay never added when there is none).
ARGUMENT_WRAPS: dict[tuple[str, str], dict[str, str]] = {
    ('ConnectionMethods', 'add_listener'):
        {'callback': "self._relays.relay(('listener', channel), callback)"},
    ('ConnectionMethods', 'remove_listener'):
        {'callback': "self._relays.pop(('listener', channel), callback)"},
    ('ConnectionMethods', 'add_log_listener'):
        {'callback': "self._relays.relay('log', callback)"},
    ('ConnectionMethods', 'remove_log_listener'):
        {'callback': "self._relays.pop('log', callback)"},
    ('ConnectionMethods', 'add_termination_listener'):
        {'callback': "self._relays.relay('termination', callback)"},
    ('ConnectionMethods', 'remove_termination_listener'):
        {'callback': "self._relays.pop('termination', callback)"},
}

#: (class, method) -> [(asyncio text, sync text)]: where the sync docstring
#: truly says something else.  Each asyncio text must be found.
DOC_EDITS: dict[tuple[str, str], list[tuple[str, str]]] = {
    ('ConnectionMethods', 'cursor'): [
        ('iterate it, or await it for a :class:`Cursor`',
         'iterate it, or fetch from it as from a :class:`Cursor`'),
        ('``cur = await conn.cursor(q)`` gives a\n:class:`~mypgdriver.cursor.Cursor` with fetch(n), '
         'fetchrow() and\nforward(n).',
         '``cur = conn.cursor(q)`` is a\ncursor itself, with fetch(n), fetchrow() and '
         'forward(n) (the first of\nthem binds the portal); ``conn.cursor(q).open()`` '
         'binds it at once\nand returns a :class:`Cursor`.'),
    ],
    ('ConnectionMethods', 'copy_from_table'): [
        ('a file-like object with a ``write(bytes)`` method (called\nin the default executor '
         'unless it is a coroutine function), or a\ncoroutine function taking each ``bytes`` '
         'chunk.',
         'a file-like object with a ``write(bytes)`` method, or a\nfunction taking each '
         '``bytes`` chunk.'),
    ],
    ('ConnectionMethods', 'copy_to_table'): [
        ('(read in chunks, in the default executor\nunless it is a coroutine function)',
         '(read in chunks)'),
    ],
    ('ConnectionMethods', 'add_query_logger'): [
        ('`callback` may be a plain function (called soon after the query, from\nthe event '
         'loop) or a coroutine function (run as a task).',
         '`callback` is a plain function, called inside the call, in its\nthread.'),
    ],
    # A module function's entry has '' for its class.
    ('', 'connect'): [
        ('return a :class:`Connection`.', 'return a :class:`Connection`, blocking.'),
        ("Arguments follow asyncpg's :func:`asyncpg.connect`; every one after `dsn`\n"
         'is keyword-only.',
         'Arguments are those of :func:`mypgdriver.connect`, read by the same\n'
         'code, except `loop` (there is none); every one after `dsn` is\n'
         'keyword-only.'),
        ('a function or coroutine function returning\n  one, called at each connect '
         '(for short-lived tokens).',
         'a plain function returning one, called at\n  each connect (for short-lived '
         'tokens).'),
        ('* `connection_class`: the class of the connection returned,\n'
         '  :class:`Connection` (default) or a subclass.',
         '* `connection_class`: the class of the connection returned,\n'
         '  :class:`mypgdriver.sync.Connection` (default) or a subclass.'),
        ('how many operations\n  concurrent tasks may have in flight on the connection at once\n'
         '  (default 256); calls beyond it wait for a slot, in call order.\n'
         '  ``max_pipeline=1`` runs one operation at a time (later calls queue,\n'
         '  they do not fail).',
         'how many operations may be\n  in flight on the connection at once (default 256), as '
         'in\n  :func:`mypgdriver.connect`; the calls of several threads run one at\n'
         '  a time here whatever it is.'),
        ('* `loop`: the event loop; by default the running one.  Kept for\n'
         '  asyncpg compatibility: there is no reason to pass it.\n', ''),
        ('(GSSAPI is not supported).',
         '(GSSAPI is not supported).\n\nThe connection is a context manager: '
         '``with connect(dsn) as conn:``\ncloses it at the end of the block.'),
    ],
    ('ConnectionMethods', 'add_listener'): [
        ('Notifications arrive whenever the server sends\nthem, also while the connection is '
         'otherwise idle.',
         'The callback runs inside the call (or\nnotifies() iteration) that received the '
         'notification, in its thread.'),
    ],
    ('', 'create_pool'): [
        ('Create a connection pool.\n\n',
         'Create a thread-safe connection pool, open it, and return it.\n\n'
         '``init_size`` connections are opened before this returns (an error\n'
         'opening one is raised).  '),
        ('Arguments, as in asyncpg:',
         'The arguments are those of\n:func:`mypgdriver.create_pool`, its callbacks '
         'plain functions:'),
        ('how to connect, as for :func:`mypgdriver.connect`.',
         'how to connect, as for :func:`mypgdriver.sync.connect`.'),
        ('connections opened (all at once) when the pool starts;\n  defaults to `min_size`.',
         'connections opened (one after the other, in the\n  calling thread) when the pool '
         'starts; defaults to `min_size`.'),
        ('replaced in the background.  The pool may fall below it while the\n  server is '
         'unavailable.',
         "replaced by the pool's background\n  thread.  The pool may fall below it while "
         'the server is unavailable.'),
        ('* `connect`: a coroutine function called instead of\n  :func:`mypgdriver.connect`',
         '* `connect`: a function called instead of\n  :func:`mypgdriver.sync.connect`'),
        ('* `setup`: a coroutine function', '* `setup`: a function'),
        ('* `init`: a coroutine function', '* `init`: a function'),
        ('* `reset`: a coroutine function', '* `reset`: a function'),
        ('* `loop`: the event loop of the pool and its connections; by default\n'
         '  the running one when the pool starts.  Kept for asyncpg\n'
         '  compatibility: there is no reason to pass it.\n', ''),
        ('(an ``acquire()`` with a timeout retries within\nit)',
         '(an ``acquire()`` with a timeout retries within\nit, each attempt\'s connect '
         '`timeout` cut to what is left)'),
    ],
    ('PoolMethods', 'get_stats'): [
        ('(a :class:`PoolStats`).',
         '(a :class:`~mypgdriver.pool.PoolStats`).\n\n``shortcuts_pipelined`` is always 0: '
         'the sync pool does not pipeline\nshortcut calls of several threads onto one '
         'connection.'),
    ],
    ('PoolMethods', 'set_connect_args'): [
        (':func:`mypgdriver.connect`.', ':func:`mypgdriver.sync.connect`.'),
    ],
    ('PoolMethods', 'acquire'): [
        (':exc:`asyncio.TimeoutError` is raised, saying how many connections\nwere in use and '
         'how many other tasks were waiting.',
         ':exc:`TimeoutError` (:exc:`asyncio.TimeoutError`) is raised, saying\nhow many '
         'connections were in use and how many other threads were\nwaiting.  An idle '
         'connection is checked first: what the server sent it\nmeanwhile is read (one '
         'non-blocking poll), so one whose backend was\nterminated is replaced, not handed '
         'out.'),
    ],
    ('PoolMethods', 'close'): [
        ('If\n``close()`` itself is cancelled or fails, the pool is terminated.',
         'If\n``close()`` itself is interrupted or fails, the pool is terminated.'),
    ],
    ('PoolMethods', 'terminate'): [
        ('including those in use, and the pool.',
         'including those in use, and the pool.\n\nA call running on a connection in use is '
         'cancelled on the server\nfirst; the threads holding connections get InterfaceError '
         'at their\nnext use.'),
    ],
    ('ConnectionMethods', 'close'): [
        ('Termination listeners are scheduled before this returns.',
         'Waits for the call another thread is running; termination\nlisteners run before '
         'this returns.'),
    ],
}


# --- docstrings ------------------------------------------------------------

_DOC_RULES: tuple[tuple[str, str], ...] = (
    (r'\basync\s+(with|for)\b', r'\1'),
    (r'\bawait\s+', ''),
    # What sync code passes: the asyncio docstrings say "iterable or async iterable".
    (r'\biterable\s+or\s+async\s+iterable\b', 'iterable'),
)

#: Wording the rules cannot turn into sync code's: a sync docstring that
#: still says it stops the generator, which asks for a DOC_EDITS entry.
_ASYNC_WORDING = re.compile(r'\b(async|asynchronous|awaitable|awaited|coroutines?|event loop|'
                            r'tasks?)\b', re.IGNORECASE)


def sync_docstring(text: str) -> str:
    """The sync wording of an asyncio docstring: ``await x`` is ``x``, ``async with`` ``with``...

    The asyncio docstrings are written so that these few rules convert
    them; what they cannot convert stops the generator (_ASYNC_WORDING).
    """
    for pattern, replacement in _DOC_RULES:
        text = re.sub(pattern, replacement, text)
    return text


def edited_docstring(owner: str, method: str, text: str) -> str:
    """`text` after the DOC_EDITS of `owner`.`method` (which must all apply), then the rules.

    `owner` is the class name of a mixin, or ``''`` for a module function.
    """
    original = text
    name = f'{owner}.{method}' if owner else method
    for old, new in DOC_EDITS.get((owner, method), ()):
        if old not in text:
            raise SystemExit(f'gen_sync: the docstring of {name} no '
                             f'longer contains the text DOC_EDITS replaces: {old!r}')
        text = text.replace(old, new)
    text = sync_docstring(text)
    wording = _ASYNC_WORDING.search(text)
    if wording:
        raise SystemExit(f'gen_sync: the docstring of {name} says '
                         f'{wording.group(0)!r}: reword the asyncio docstring, or give the '
                         f'sync wording in DOC_EDITS')
    return _refill(original, text)


def _refill(original: str, text: str) -> str:
    # The docstrings wrap near 72 columns; a paragraph that an edit or a rule
    # changed is refilled (not examples or lists: their lines are indented).
    before = original.split('\n\n')
    out = []
    for i, paragraph in enumerate(text.split('\n\n')):
        lines = paragraph.split('\n')
        changed = i >= len(before) or before[i] != paragraph
        if changed and len(lines) > 1 and all(line and not line.startswith(' ')
                                              for line in lines):
            paragraph = textwrap.fill(' '.join(lines), 72, break_long_words=False,
                                      break_on_hyphens=False)
        out.append(paragraph)
    return '\n\n'.join(out)


# --- reading the asyncio classes ---------------------------------------------

@dataclasses.dataclass
class Method:
    """An asyncio method as read from its source."""

    name: str
    is_async: bool
    overloads: list[ast.FunctionDef | ast.AsyncFunctionDef]
    impl: ast.FunctionDef | ast.AsyncFunctionDef
    source: SourceText
    docstring: str


class SourceText:
    """A file's text, and the text of its nodes as written."""

    def __init__(self, text: str) -> None:
        # (ast.get_source_segment splits the whole text at each call: with
        # one call per annotation that made a run take seconds.)
        self._line_starts = [0]
        for line in text.encode().splitlines(keepends=True):
            self._line_starts.append(self._line_starts[-1] + len(line))
        self._encoded = text.encode()

    def segment(self, node: ast.expr | ast.stmt) -> str:
        """The source text of `node` (its column offsets count UTF-8 bytes)."""
        if node.end_lineno is None or node.end_col_offset is None:
            return ast.unparse(node)
        start = self._byte_offset(node.lineno, node.col_offset)
        end = self._byte_offset(node.end_lineno, node.end_col_offset)
        return self._encoded[start:end].decode()

    def _byte_offset(self, lineno: int, col: int) -> int:
        return self._line_starts[lineno - 1] + col

    def offset(self, lineno: int, col: int) -> int:
        """The byte offset in the file of (`lineno`, `col`), as the ast gives them."""
        return self._byte_offset(lineno, col)


def read_class(root: Path, path: str, class_name: str) -> dict[str, Method]:
    """The methods of `class_name` in `root`/`path`, by name."""
    text = (root / path).read_text()
    tree = ast.parse(text)
    source = SourceText(text)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            break
    else:
        raise SystemExit(f'gen_sync: no class {class_name} in {path}')
    methods: dict[str, Method] = {}
    pending: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if any(_decorator_name(d) == 'overload' for d in item.decorator_list):
            pending.setdefault(item.name, []).append(item)
            continue
        methods[item.name] = Method(item.name, isinstance(item, ast.AsyncFunctionDef),
                                    pending.pop(item.name, []), item, source,
                                    ast.get_docstring(item) or '')
    return methods


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ''


# --- writing ---------------------------------------------------------------

def _annotation(method: Method, node: Optional[ast.expr], parameter: str = '') -> str:
    if node is None:
        return ''
    text = method.source.segment(node)
    text = ' '.join(text.split())       # an annotation wrapped over lines
    text = text.replace('[ ', '[').replace(' ]', ']')
    if text == 'Any' and parameter in PARAMETER_TYPES:
        return PARAMETER_TYPES[parameter]
    for pattern, replacement in ANNOTATION_RENAMES.items():
        text = re.sub(pattern, replacement, text)
    return text


def _parameters(method: Method, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters of `fn` as source text, `self` first."""
    args = fn.args
    source = method.source

    def one(arg: ast.arg, default: Optional[ast.expr]) -> str:
        text = arg.arg
        annotation = _annotation(method, arg.annotation, arg.arg)
        if annotation:
            text += f': {annotation}'
        if default is not None:
            value = source.segment(default)
            text += f' = {value}' if annotation else f'={value}'
        return text

    positional = args.posonlyargs + args.args
    defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    out = [one(a, d) for a, d in zip(positional, defaults)]
    if args.posonlyargs:
        out.insert(len(args.posonlyargs), '/')
    if args.vararg is not None:
        out.append('*' + one(args.vararg, None))
    elif args.kwonlyargs:
        out.append('*')
    out += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        out.append('**' + one(args.kwarg, None))
    return out


def _call_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                    leave_out: Sequence[str] = (),
                    wraps: Optional[dict[str, str]] = None) -> list[str]:
    """How the delegation passes `fn`'s parameters on (by position, then by keyword).

    `wraps` gives, for some parameters, the expression passed instead.
    """
    args = fn.args
    wraps = wraps or {}
    out = [wraps.get(a.arg, a.arg) for a in (args.posonlyargs + args.args)[1:]]
    if args.vararg is not None:
        out.append('*' + args.vararg.arg)
    out += [f'{a.arg}={wraps.get(a.arg, a.arg)}' for a in args.kwonlyargs
            if a.arg not in leave_out]
    if args.kwarg is not None:
        out.append('**' + args.kwarg.arg)
    return out


def _wrap(head: str, items: Sequence[str], tail: str, indent: str) -> str:
    """``head + ', '.join(items) + tail``, broken after commas to stay within WIDTH."""
    lines: list[str] = []
    line = indent + head
    continuation = ' ' * len(line)
    for i, item in enumerate(items):
        piece = item + (', ' if i < len(items) - 1 else tail)
        if len(line) + len(piece.rstrip()) > WIDTH and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = continuation
        line += piece
    if not items:
        line += tail
    lines.append(line)
    return '\n'.join(lines)


def _signature(method: Method, fn: ast.FunctionDef | ast.AsyncFunctionDef,
               indent: str, body: str = ':') -> str:
    returns = _annotation(method, fn.returns)
    if any(_decorator_name(d) == 'contextmanager' for d in fn.decorator_list):
        # The delegation returns the asyncio method's context manager.
        returns = re.sub(r'^Iterator\[(.*)\]$', r'ContextManager[\1]', returns)
    tail = f') -> {returns}{body}' if returns else f'){body}'
    return _wrap(f'def {method.name}(', _parameters(method, fn), tail, indent)


def _docstring(text: str, indent: str) -> str:
    text = text.replace('\\', '\\\\')
    lines = text.split('\n')
    if len(lines) == 1:
        return f'{indent}"""{text}"""'
    body = '\n'.join(indent + line if line else '' for line in lines[1:])
    return f'{indent}"""{lines[0]}\n{body}\n{indent}"""'


@dataclasses.dataclass(frozen=True)
class Call:
    """A delegating call, as `head` ``arg, arg`` `tail` (head ends with the call's ``(``)."""

    head: str
    arguments: list[str]
    tail: str

    def statement(self, indent: str, keyword: str = '') -> str:
        """The call as one statement at `indent`, its arguments wrapped to stay within WIDTH."""
        head = indent + keyword + self.head
        flat = head + ', '.join(self.arguments) + self.tail
        if len(flat) <= WIDTH or not self.arguments:
            return flat
        widest = max(len(argument) for argument in self.arguments) + len(', ')
        if len(head) <= WIDTH // 2 and len(head) + widest <= WIDTH:
            # Aligned with the opening parenthesis.
            return _wrap(keyword + self.head, self.arguments, self.tail, indent)
        # A long head: the arguments on lines of their own, one level deeper.
        return head + '\n' + _wrap('', self.arguments, self.tail, indent + '    ')


#: The local name an untyped call goes through (see _body).
_UNTYPED = 'untyped'


def _delegation(face: Face, method: Method, arguments: list[str], untyped: bool) -> Call:
    """The call that runs the asyncio method with `arguments` (through _UNTYPED if `untyped`)."""
    style = face.body
    if style.kind == 'acquire':
        return Call(f'{_UNTYPED if untyped else "con"}.{method.name}(', arguments, ')')
    if style.kind == 'cursor':
        return Call(f'self._on_cursor(lambda cursor: cursor.{method.name}(', arguments, '))')
    head, tail = f'{_UNTYPED if untyped else style.target}.{method.name}(', ')'
    if method.is_async and style.kind == 'run':
        head, tail = f'{style.run}({head}', tail + ')'
    wrapper = _annotation(method, method.impl.returns).split('[')[0]
    if wrapper in WRAPPERS:
        before, after = WRAPPERS[wrapper].split('{}')
        head, tail = before + head, tail + after
    return Call(head, arguments, tail)


def transliterated(face: Face, method: Method, indent: str) -> list[str]:
    """The asyncio method's statements (its docstring left out), blocking (see TRANSLITERATED)."""
    fn = method.impl
    statements = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    lines: list[str] = []
    for statement in statements:
        awaits = [node for node in ast.walk(statement) if isinstance(node, ast.Await)]
        whole = {id(node.value) for node in ast.walk(statement)
                 if isinstance(node, (ast.Return, ast.Assign, ast.Expr))
                 and isinstance(node.value, ast.Await)}
        if any(id(node) not in whole for node in awaits):
            raise SystemExit(f'gen_sync: {face.class_name}.{method.name}: an await that is '
                             "not a statement's whole value")
        text = method.source.segment(statement)
        start = method.source.offset(statement.lineno, statement.col_offset)
        # Replaced from the last await back, so that earlier offsets stay true.
        for node in sorted(awaits, key=lambda n: (n.lineno, n.col_offset), reverse=True):
            value = node.value
            inner = method.source.segment(value)
            if isinstance(value, ast.Call) and method.source.segment(value.func) in COMPILED_CALLS:
                func = method.source.segment(value.func)
                call, own = COMPILED_CALLS[func]
                arguments = inner[len(func):]
                if own is not None:
                    if not (value.args and method.source.segment(value.args[0]) == 'self'):
                        raise SystemExit(f'gen_sync: {face.class_name}.{method.name}: {func}() '
                                         'is not given self first')
                    arguments = '(' + own + arguments[len('(self'):]
                replacement = call + arguments
            else:
                replacement = f'{face.body.run}({inner})'
            lo = method.source.offset(node.lineno, node.col_offset) - start
            hi = method.source.offset(node.end_lineno or node.lineno,
                                      node.end_col_offset or 0) - start
            encoded = text.encode()
            text = (encoded[:lo] + replacement.encode() + encoded[hi:]).decode()
        first, *rest = text.split('\n')
        lines.append(indent + first)
        lines.extend(rest)
    return lines


def _body(face: Face, method: Method, indent: str) -> list[str]:
    if method.name in TRANSLITERATED.get(face.class_name, ()):
        return transliterated(face, method, indent)
    fn = method.impl
    keywords = {a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)}
    returns = _annotation(method, fn.returns)
    statement = 'return ' if returns != 'None' else ''
    lines: list[str] = []
    check = PRECHECKS.get((face.class_name, method.name))
    if check:
        lines.append(indent + check)
    inner = indent
    target = face.body.target
    if face.body.kind == 'acquire':
        lines.append(indent + 'with self.acquire() as con:')
        inner = indent + '    '
        target = 'con'
    fast = [k for k in FAST_PATH_KEYWORDS
            if isinstance(keywords.get(k), ast.Constant)
            and getattr(keywords[k], 'value', 0) is None]
    # An overloaded method's implementation passes its arguments as the
    # implementation's signature types them (record_class and row_factory
    # both Optional), which matches none of the asyncio overloads one by
    # one: that call goes through a local typed Any (a local, not cast():
    # no function call on the path).  The overloads type it for callers.
    untyped = bool(method.overloads)
    if fast:
        condition = ' and '.join(f'{k} is None' for k in fast)
        lines.append(f'{inner}if {condition}:')
        # Without the keyword the call matches the overloads: typed.
        call = _delegation(face, method, _call_arguments(fn, fast), False)
        lines.append(call.statement(inner + '    ', 'return '))
        statement = 'return '
    if untyped:
        lines.append(f'{inner}{_UNTYPED}: Any = {target}')
    wraps = ARGUMENT_WRAPS.get((face.class_name, method.name))
    call = _delegation(face, method, _call_arguments(fn, wraps=wraps), untyped)
    lines.append(call.statement(inner, statement))
    return lines


def _method(face: Face, method: Method) -> str:
    indent = '    '
    dropped = [name for name in face.dropped
               if name in {a.arg for a in method.impl.args.kwonlyargs}]
    if dropped:
        method = dataclasses.replace(method, impl=_without(method.impl, dropped))
    if method.name == '__init__':
        body, doc = CONSTRUCTORS[face.class_name]
        return (_signature(method, method.impl, indent) + '\n' + _docstring(doc, indent * 2)
                + '\n' + indent * 2 + body + '\n')
    parts = []
    for overload in method.overloads:
        parts.append(f'{indent}@overload\n{_signature(method, overload, indent, ": ...")}\n')
    doc = edited_docstring(face.class_name, method.name, method.docstring)
    text = _signature(method, method.impl, indent) + '\n'
    text += _docstring(doc, indent * 2) + '\n'
    text += '\n'.join(_body(face, method, indent * 2)) + '\n'
    parts.append(text)
    return '\n'.join(parts)


def _class_bases(root: Path, face: Face) -> str:
    # Generic[...] of the asyncio class, so that RowT means the same here.
    if face.bases:
        return f'({face.bases})'
    path, name = face.sources[0]
    tree = ast.parse((root / path).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for base in node.bases:
                if isinstance(base, ast.Subscript) and _decorator_name(base.value) == 'Generic':
                    return f'({ast.unparse(base)})'
    return ''


def _imports(face: Face | FunctionFace | OptionsFace, text: str) -> str:
    # The names the code uses (not the words of its docstrings).
    used = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    table: dict[str, tuple[str, bool]] = {}
    for name, module, typing_only in _COMMON_NAMES + face.names:
        table[name] = (module, typing_only)
    runtime: dict[str, list[str]] = {}
    checking: dict[str, list[str]] = {}
    for name in sorted(used & table.keys()):
        module, typing_only = table[name]
        (checking if typing_only else runtime).setdefault(module, []).append(name)
    if checking:
        runtime.setdefault('typing', []).append('TYPE_CHECKING')
    blocks = []
    for modules, indent in ((runtime, ''), (checking, '    ')):
        stdlib = [m for m in modules if not m.startswith('mypgdriver')]
        ours = [m for m in modules if m.startswith('mypgdriver')]
        groups = [g for g in (stdlib, ours) if g]
        lines_of_groups = []
        for group in groups:
            lines = []
            for module in sorted(group):
                names = sorted(set(modules[module]), key=_isort_key)
                if module == 'mypgdriver.prepared' and names == ['async_prepared']:
                    lines.append(f'{indent}from mypgdriver import prepared as async_prepared')
                    continue
                if module == 'mypgdriver.connection' and 'AsyncConnection' in names:
                    names.remove('AsyncConnection')
                    names.insert(0, 'Connection as AsyncConnection')
                line = f'{indent}from {module} import {", ".join(names)}'
                if len(line) > WIDTH:
                    # ruff's isort form: one name a line.
                    line = (f'{indent}from {module} import (\n'
                            + ''.join(f'{indent}    {name},\n' for name in names)
                            + f'{indent})')
                lines.append(line)
            lines_of_groups.append('\n'.join(sorted(lines, key=_import_line_key)))
        blocks.append('\n\n'.join(lines_of_groups))
    out = blocks[0]
    if blocks[1]:
        out += '\n\nif TYPE_CHECKING:\n' + blocks[1]
    return out


def _import_line_key(line: str) -> tuple[str, str]:
    # isort orders `from mypgdriver import x` before `from mypgdriver.y import z`.
    module = line.split()[1]
    return (module.lower(), line)


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's isort order within one import: CONSTANTS, Classes, functions.
    bare = name.split(' as ')[0]
    if bare.isupper() and len(bare) > 1:
        return (0, bare)
    if bare[0].isupper():
        return (1, bare)
    return (2, bare)


def generate(face: Face, target: str = 'python', root: Path = ROOT) -> str:
    """The text of `face`'s generated file, from the asyncio sources in `root`."""
    if target != 'python':
        raise SystemExit(f'gen_sync: unknown target {target!r} (python is the only one)')
    found: dict[str, Method] = {}
    for path, class_name in reversed(face.sources):
        found.update(read_class(root, path, class_name))
    missing = [name for name in face.methods if name not in found]
    if missing:
        raise SystemExit(f'gen_sync: {face.output}: no asyncio method {", ".join(missing)}')
    methods = '\n'.join(_method(face, found[name]) for name in face.methods)
    declarations = textwrap.indent(face.declarations, '    ') if face.declarations else ''
    body = (f'class {face.class_name}{_class_bases(root, face)}:\n'
            f'{_docstring(face.doc, "    ")}\n\n'
            f'    __slots__ = ()\n\n'
            + (declarations + '\n' if declarations else '')
            + methods)
    sources = ', '.join(dict.fromkeys(path for path, _ in face.sources))
    return _head(sources, face.doc) + _imports(face, body) + '\n\n\n' + body


def _head(sources: str, doc: str) -> str:
    # The first lines of a generated file, up to its imports.
    return (f'# Generated by tools/gen_sync.py from {sources}; do not edit.\n'
            f'"""{doc.splitlines()[0]}\n\n'
            f'tools/gen_sync.py writes this file from the asyncio source (``./dev.sh\n'
            f'generate``): change that source, or the generator\'s tables, and\n'
            f'regenerate; CI fails on a difference (``./dev.sh generate --check``).\n'
            '"""\n'
            'from __future__ import annotations\n\n')


def read_function(root: Path, path: str, name: str) -> Method:
    """The module function `name` of `root`/`path`."""
    text = (root / path).read_text()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return Method(name, isinstance(node, ast.AsyncFunctionDef), [], node,
                          SourceText(text), ast.get_docstring(node) or '')
    raise SystemExit(f'gen_sync: no function {name} in {path}')


def _without(fn: ast.FunctionDef | ast.AsyncFunctionDef,
             dropped: Sequence[str]) -> ast.FunctionDef:
    """A copy of `fn`, plain, without the keyword-only parameters `dropped`."""
    args = fn.args
    kept = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if a.arg not in dropped]
    missing = set(dropped) - {a.arg for a in args.kwonlyargs}
    if missing:
        raise SystemExit(f'gen_sync: {fn.name}() has no keyword-only parameter '
                         f'{", ".join(sorted(missing))} to drop')
    arguments = ast.arguments(posonlyargs=args.posonlyargs, args=args.args,
                              vararg=args.vararg, kwonlyargs=[a for a, _ in kept],
                              kw_defaults=[d for _, d in kept], kwarg=args.kwarg,
                              defaults=args.defaults)
    return ast.FunctionDef(name=fn.name, args=arguments, body=fn.body, decorator_list=[],
                           returns=fn.returns, type_comment=None, lineno=fn.lineno)


def generate_function(face: FunctionFace, target: str = 'python', root: Path = ROOT) -> str:
    """The text of `face`'s generated file, from the asyncio function in `root`."""
    if target != 'python':
        raise SystemExit(f'gen_sync: unknown target {target!r} (python is the only one)')
    method = read_function(root, face.source, face.name)
    fn = _without(method.impl, face.dropped)
    indent = '    '
    doc = edited_docstring('', face.name, method.docstring)
    lines = [_signature(method, fn, ''), _docstring(doc, indent)]
    for parameter, class_name in face.subclass_checks:
        bare = class_name.rsplit('.', 1)[-1]
        lines += [
            f'{indent}if not (isinstance({parameter}, type) and issubclass({parameter}, {bare})):',
            f'{indent}    raise InterfaceError(',
            f"{indent}        f'{parameter} is expected to be a subclass of {class_name}, '",
            f"{indent}        f'got {{{parameter}!r}}')"]
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    keywords = [f'{a.arg}={a.arg}' for a in fn.args.kwonlyargs if a.arg not in face.not_passed]
    if fn.args.kwarg is not None:
        keywords.append('**' + fn.args.kwarg.arg)
    before, after = face.result.split('{}')
    call = Call(f'{before}{face.call}(', positional + keywords, ')' + after)
    lines.append(call.statement(indent, 'return '))
    body = '\n'.join(lines) + '\n'
    return _head(face.source, face.doc) + _imports(face, body) + '\n\n\n' + body


def generate_options(face: OptionsFace, target: str = 'python', root: Path = ROOT) -> str:
    """The text of `face`'s generated file: a TypedDict of a FunctionFace's keywords."""
    if target != 'python':
        raise SystemExit(f'gen_sync: unknown target {target!r} (python is the only one)')
    function = next(f for f in FUNCTION_FACES if f.output == face.function)
    method = read_function(root, function.source, function.name)
    fn = _without(method.impl, function.dropped)
    lines = [f'class {face.class_name}(TypedDict, total=False):',
             _docstring(f'Every keyword of :func:`mypgdriver.sync.{function.name}` but '
                        + ', '.join(f'`{name}`' for name in face.leave_out) + '.', '    '),
             '']
    for arg in fn.args.kwonlyargs:
        if arg.arg not in face.leave_out:
            lines.append(f'    {arg.arg}: {_annotation(method, arg.annotation, arg.arg)}')
    body = '\n'.join(lines) + '\n'
    return _head(function.source, face.doc) + _imports(face, body) + '\n\n\n' + body


def _generated_files(target: str, root: Path) -> list[tuple[str, str]]:
    """(output, text) of every generated file."""
    out = [(face.output, generate(face, target, root)) for face in FACES]
    out += [(face.output, generate_function(face, target, root)) for face in FUNCTION_FACES]
    out += [(face.output, generate_options(face, target, root)) for face in OPTIONS_FACES]
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Write the generated files, or with ``--check`` report those that differ."""
    parser = argparse.ArgumentParser(prog='python -m tools.gen_sync', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true',
                        help='write nothing; exit 1 naming each generated file that differs')
    parser.add_argument('--target', default='python', choices=('python',),
                        help='the language of the generated code (default: python)')
    parser.add_argument('--root', type=Path, default=ROOT,
                        help='the checkout read and written (default: this one)')
    options = parser.parse_args(argv)
    stale = []
    for output, text in _generated_files(options.target, options.root):
        path = options.root / output
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        if options.check:
            stale.append(output)
            diff = difflib.unified_diff((current or '').splitlines(True), text.splitlines(True),
                                        output, f'{output} (generated)', n=1)
            sys.stderr.writelines(list(diff)[:40])
        else:
            path.write_text(text)
            print(f'gen_sync: wrote {output}')
    if stale:
        for output in stale:
            print(f'gen_sync: {output} differs from what tools/gen_sync.py writes '
                  f'(run ./dev.sh generate)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""What a DB-API connection shares with its cursors and COPYs: one ConnectionLink.

The cursors (cursor.py, server_cursor.py) and COPY (copy.py) run their
statements through it: the lock that keeps a DB-API call whole among
threads, the transaction settings and the implicit BEGIN of PEP 249, and the
connection's :class:`~mypgdriver.core.session_api.StatementRunner` with the sync
glue that drives its coroutines.  Nothing in mypgdriver/dbapi reaches into
another module's private attributes (tools/check_private_access.py).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Optional, Sequence

from mypgdriver import exceptions
from mypgdriver.core.session_api import WANT_RESULT, Result, StatementRunner, result_of
from mypgdriver.protocol.statement import StrAsTextArguments, refused_argument
from mypgdriver.sync.connection import async_connection, call_runner, execute_call

if TYPE_CHECKING:
    from mypgdriver import sync
    from mypgdriver.dbapi.connection import IsolationLevel
    from mypgdriver.sync.pipeline import Pipeline as SyncPipeline

__all__ = ('ConnectionLink',)


class ConnectionLink:
    """The state a DB-API connection and its cursors share (see the module docstring)."""

    __slots__ = ('connection', 'run', 'execute', 'statements', 'in_transaction', 'lock', 'autocommit',
                 'isolation_level', 'read_only', 'deferrable', 'pipeline', 'pipeline_block')

    def __init__(self, connection: sync.Connection, autocommit: bool) -> None:
        #: The sync connection under the DB-API one.
        self.connection = connection
        #: Drives a coroutine of the asyncio connection as a call of the sync one.
        self.run = call_runner(connection)
        #: The Session's execute() as a call of the sync connection (its compiled call path).
        self.execute = execute_call(connection)
        #: The interface the statements run through (the Session's statement cache).
        self.statements = StatementRunner(async_connection(connection))
        #: The server's transaction status (a bound method: read on every execute()).
        self.in_transaction = self.statements.session.is_in_transaction
        # Serialises the DB-API calls of threads sharing the connection
        # (the sync core serialises each call; this keeps a BEGIN with its
        # statement, and a COPY block, whole).
        self.lock = threading.RLock()
        self.autocommit = bool(autocommit)
        self.isolation_level: Optional[IsolationLevel] = None
        self.read_only: Optional[bool] = None
        self.deferrable: Optional[bool] = None
        #: Inside ``with conn.pipeline():`` (mypgdriver/dbapi/pipeline.py), the
        #: sync connection's open pipeline: statements are queued on it.
        self.pipeline: Optional[SyncPipeline] = None
        # Inside a pipeline: whether a transaction block is open, as its
        # statements left it (the server's status says only "in a segment"
        # until the next sync point).  Set from the server's status when the
        # pipeline opens and at each sync point, by begin() and by the end
        # of a block (end_block()).
        self.pipeline_block = False

    def is_closed(self) -> bool:
        """True once the connection is closed or lost."""
        return self.statements.is_closed()

    def in_block(self) -> bool:
        """Whether a transaction block is open (PEP 249's: BEGIN was run, no COMMIT/ROLLBACK yet).

        The server's status; inside a pipeline, what its statements did.
        """
        if self.pipeline is not None:
            return self.pipeline_block
        return self.in_transaction()

    def synced(self) -> None:
        """Inside a pipeline, after a sync point: the block status is the server's again."""
        self.pipeline_block = self.in_transaction()

    def end_block(self, command: str) -> None:
        """Run `command` (COMMIT, ROLLBACK...), which ends the transaction block.

        Inside a pipeline, a ROLLBACK is preceded by a sync point: after an
        error the server skips every statement up to the next sync point, and
        the ROLLBACK must run.  The errors of that sync point are the ones the
        rollback undoes, and are not raised.
        """
        pipeline = self.pipeline
        if pipeline is not None and command.startswith('ROLLBACK'):
            try:
                pipeline.sync()
            except Exception:
                pass
            self.synced()
        self.simple(command)
        if command in ('COMMIT', 'ROLLBACK'):
            self.pipeline_block = False

    def simple(self, query: str) -> str:
        """Run `query` with the simple query protocol: its (last) status tag.

        Inside a pipeline, `query` (one statement) is queued on it and its
        own answer waited for: the pipeline's segment goes on.
        """
        pipeline = self.pipeline
        if pipeline is not None:
            status = pipeline.submit(query).result().status
            assert status is not None
            return status
        return self.run(self.statements.simple(query))

    def begin(self) -> None:
        """BEGIN with the isolation settings."""
        parts = ['BEGIN']
        if self.isolation_level is not None:
            parts.append('ISOLATION LEVEL ' + self.isolation_level.name.replace('_', ' '))
        if self.read_only is not None:
            parts.append('READ ONLY' if self.read_only else 'READ WRITE')
        if self.deferrable is not None:
            parts.append('DEFERRABLE' if self.deferrable else 'NOT DEFERRABLE')
        pipeline = self.pipeline
        if pipeline is not None:
            # Queued, not waited for: an error of it stays with the
            # pipeline (the statements behind it are skipped, and the
            # first one read raises, as the end of the block does).
            pipeline.submit(' '.join(parts))
            self.pipeline_block = True
            return
        self.simple(' '.join(parts))

    def begin_implicit(self) -> None:
        """Outside autocommit, open the transaction a statement runs in (PEP 249), if none is."""
        if not self.autocommit and not self.in_block():
            self.begin()

    def run_statement(self, query: str, args: Sequence[Any], rows_as: Any) -> Result:
        """StatementRunner.run(query, args, rows_as), blocking: its one Result.

        The Session's execute() through the sync connection's compiled call
        path (a cached statement runs without a coroutine), with the same
        promises as StatementRunner.run().
        """
        rows, status, state = self.execute(query, args, 0, None, WANT_RESULT, rows_as)
        return result_of(rows, status, state)

    @staticmethod
    def str_as_text(args: Sequence[Any], refusal: exceptions.DataError) -> StrAsTextArguments:
        """`args` with the str a codec refused (`refusal`) to be bound as text; else raise `refusal`.

        For a run again after the refusal (run_str_as_text(), and a cursor's
        execute() inside a pipeline).
        """
        refused = refused_argument(refusal)
        if refused is None or not isinstance(args[refused], str):
            raise refusal
        return StrAsTextArguments(args)

    def run_str_as_text(self, query: str, args: Sequence[Any], rows_as: Any,
                        refusal: exceptions.DataError) -> Result:
        """After `query`'s codecs refused one of `args`: its Result with the str bound as text.

        Called from the ``except`` of an execute()'s run.  A str that its
        parameter's binary codec refuses (``'42'`` for ``%s::int``) is
        bound as text instead, for the server's input function of the type,
        as psycopg binds every str: ``'42'`` gives 42, ``'abc'`` the
        server's InvalidTextRepresentation (22P02), which then fails an open
        transaction as any server error.  The refusal was raised before
        anything was sent (refused_argument() says so), so the statement
        runs once; a refused value that is not a str raises `refusal`.
        Only this error path pays for it: a run whose values the codecs
        take never gets here.
        """
        as_text = self.str_as_text(args, refusal)
        try:
            return self.run_statement(query, as_text, rows_as)
        except BaseException as outcome:
            # The server's answer stands on its own: not an error "during
            # handling" of the refusal, which was only the cue to send as text.
            raise outcome from None

"""Connection of the sync API: the asyncio Connection, its calls driven without an event loop.

Every method is the asyncio method of the same name run to its end by the
connection's CallRunner (runner.py): the checks, deadlines, cancellation,
statement cache and transaction rules are the asyncio API's own code
(session.py), not a copy.  Those methods are written by tools/gen_sync.py,
from the asyncio source, into ConnectionMethods (_connection_methods.py);
this class holds only what differs.  What is particular to sync code lives
in the sync driver (mypgdriver/sync/driver/): the lock and the refusal of
re-entrant calls (runner.pyx), cancel() from another thread (cancel.py),
the notifications waiting for notifies() (backlog.py), callbacks receiving
this object (relays.py); and next to this module, the checks of COPY
sources (copy_checks.py).
"""
from __future__ import annotations

from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Coroutine,
    Iterator,
    Optional,
    Protocol,
    Sequence,
    TypeVar,
)

from mypgdriver import exceptions
from mypgdriver.core.deadlines import check_timeout
from mypgdriver.sync._connection_methods import ConnectionMethods
from mypgdriver.sync.copy_checks import CopyOutput, CopySource, ReadsBytes, WritesBytes
from mypgdriver.sync.driver.backlog import NotificationBacklog
from mypgdriver.sync.driver.cancel import cancel_running_call, shut_down_under_running_call
from mypgdriver.sync.driver.relays import RelayTable
from mypgdriver.sync.driver.runner import CallRunner
from mypgdriver.sync.notifications import Notification
from mypgdriver.sync.pipeline import Pipeline

if TYPE_CHECKING:
    from mypgdriver.connection import Connection as AsyncConnection
    from mypgdriver.sync.driver.glue import SyncGlue

__all__ = ('Connection', 'CopySource', 'CopyOutput', 'ReadsBytes', 'WritesBytes')


NotificationCallback = Callable[['Connection', int, str, str], object]
LogCallback = Callable[['Connection', exceptions.PostgresLogMessage], object]
TerminationCallback = Callable[['Connection'], object]


class Connection(ConnectionMethods):
    """A blocking connection to a PostgreSQL server (see :func:`mypgdriver.sync.connect`).

    The methods are those of :class:`mypgdriver.Connection`, with the same
    arguments, results and exceptions, blocking instead of awaitable.  A
    connection may be shared by threads: their calls are serialized (one
    at a time, in the order a lock grants them); a call made from inside
    a callback that the connection is running raises InterfaceError.
    ``with connect(...) as conn:`` closes it at the end of the block.
    """

    __slots__ = ('_aconn', '_session', '_runner', '_run', '_execute', '_notifications', '_relays',
                 '__weakref__')

    def __init__(self, aconn: AsyncConnection, glue: SyncGlue) -> None:
        """Wrap `aconn`, opened on `glue` (use :func:`mypgdriver.sync.connect`)."""
        self._aconn = aconn
        self._session = aconn._session
        self._runner = CallRunner(glue, self._session)
        self._run = self._runner.run
        # Session.execute() run to its end (the compiled call path).
        self._execute = self._runner.execute
        self._notifications = NotificationBacklog(glue)
        self._notifications.attach(aconn)
        # The listeners' relays, by (kind, channel) or kind, and callback.
        self._relays: RelayTable[Connection] = RelayTable(self)

    def __repr__(self) -> str:
        state = 'closed' if self.is_closed() else 'open'
        return (f'<mypgdriver.sync.Connection {state} addr={self._aconn._addr!r} '
                f'pid={self.get_server_pid()}>')

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # --- what differs from the asyncio methods (the others: ConnectionMethods) ---

    # --- pipeline mode ---

    def pipeline(self) -> Pipeline:
        """A pipeline: ``with conn.pipeline() as p:`` sends statements without waiting for answers.

        ``p.execute()``, ``p.fetch()``, ``p.fetchrow()`` and ``p.fetchval()``
        take this connection's arguments and return a
        :class:`~mypgdriver.sync.pipeline.PipelineResult` at once; its
        ``result()`` waits for its own answer.  Leaving the block is a sync
        point (it waits for every answer and raises the first error no
        result() was asked for); ``p.sync()`` makes one inside the block.
        The block holds the connection: other threads' calls wait for its
        end.  Rules for errors and transactions: docs/guide/pipeline.rst.
        """
        self._session.check_open()
        return Pipeline(self._session, self._runner)

    # --- notifications ---

    def notifies(self, timeout: Optional[float] = None) -> Iterator[Notification]:
        """Yield the notifications of the channels this session LISTENs to, as they arrive.

        Blocks reading the connection (no thread, no polling) until one
        arrives; with `timeout`, returns once none came for `timeout`
        seconds.  Notifications received since the connection was opened
        (during other calls, or between iterations) are yielded first, in
        order; at most NOTIFICATION_BACKLOG (10,000) are kept, then the
        oldest are dropped.  Listeners added with add_listener() are still
        called.  While it waits, the generator holds the connection: other
        threads' calls wait for the notification or the timeout.
        """
        check_timeout(timeout)
        backlog = self._notifications
        while True:
            notification = self._run(backlog.next(self._aconn, timeout))
            if notification is None:
                return
            yield notification

    # --- cancelling and closing ---

    def cancel(self) -> None:
        """Ask the server to cancel the call running on this connection, from any thread.

        Does not wait for the connection's lock: the CancelRequest goes out
        at once on a connection of its own, and returns once the server has
        received it.  The running call then raises
        :exc:`~mypgdriver.exceptions.QueryCanceledError` and the connection
        stays usable.  Does nothing when no call runs; a cancel never hits a
        later call.  (A thread blocked in notifies() runs no statement: it
        is not woken.)
        """
        cancel_running_call(self._aconn, self._runner)

    def terminate(self) -> None:
        """Close the connection at once, also while another thread runs a call on it.

        That call raises :exc:`~mypgdriver.exceptions.ConnectionDoesNotExistError`
        (its socket is shut down under it) and the server ends the session,
        rolling back an open transaction.  Termination listeners run before
        this returns.  It may also be called from a listener or query logger
        (inside the call that runs it).
        """
        runner = self._runner
        if runner.in_call():
            # A callback inside a call, in the thread driving the glue.
            self._aconn.terminate()
            return
        shut_down_under_running_call(self._aconn, runner)
        self._run(_terminated(self._aconn))


# --- for mypgdriver.sync's pool (its driver) and mypgdriver.dbapi, which drive the asyncio
# Connection's policy ---

_T = TypeVar('_T')


def async_connection(conn: Connection) -> AsyncConnection:
    """The asyncio Connection under `conn`: the pool runs the asyncio pool's reset on it."""
    return conn._aconn


class CoroutineRunner(Protocol):
    """What call_runner() returns: drives a coroutine as a call of the connection."""

    def __call__(self, coro: Coroutine[Any, Any, _T], /) -> _T: ...


class ExecuteCall(Protocol):
    """CallRunner.execute: ``Session.execute(query, args, limit, timeout, want, rows_as)`` run to its end."""

    def __call__(self, query: str, args: Sequence[Any], limit: int, timeout: Optional[float],
                 want: int, rows_as: Any, /) -> Any: ...


def call_runner(conn: Connection) -> CoroutineRunner:
    """What drives a coroutine (using ``async_connection(conn)``) as a call of `conn`, under its lock.

    For the sync pool's driver and mypgdriver.dbapi, which run the asyncio
    Connection's own policy.
    """
    return conn._run


def execute_call(conn: Connection) -> ExecuteCall:
    """`conn`'s ``Session.execute()`` run to its end as a call of `conn` (the compiled call path).

    For mypgdriver.dbapi, whose cursors run the Session's execute() as the
    sync Connection's fetch() does.
    """
    return conn._execute


def forget_notifications(conn: Connection) -> None:
    """Drop the notifications that notifies() has not yielded yet (see NotificationBacklog)."""
    conn._notifications.clear()


async def _terminated(aconn: AsyncConnection) -> None:
    # Inside a call: the termination listeners it schedules run before run() returns.
    aconn.terminate()

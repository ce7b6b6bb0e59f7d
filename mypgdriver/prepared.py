"""PreparedStatement: a statement prepared once on the server, run many times."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Generic, Optional, overload

from mypgdriver import exceptions
from mypgdriver._typing import ArgumentRows, OtherRowT, RowT
from mypgdriver.core.deadlines import Deadline, check_timeout
from mypgdriver.cursor import CursorFactory, check_prefetch
from mypgdriver.protocol.coreproto import StatusSink
from mypgdriver.protocol.protocol import ROWS_PER_STATEMENT
from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows
from mypgdriver.types import Attribute, Type

if TYPE_CHECKING:
    from mypgdriver.codecs.registry import CodecRegistry
    from mypgdriver.connection import Connection
    from mypgdriver.core.session import Session
    from mypgdriver.protocol.statement import StatementState

# TypeInfo.kind (pg_type.typtype) -> Type.kind, as asyncpg reports it.
_KINDS = {'c': 'composite', 'r': 'range', 'm': 'multirange'}


class PreparedStatement(Generic[RowT]):
    """A prepared statement (see :meth:`Connection.prepare`).

    Running it costs Bind/Execute only.  The server statement stays valid
    while this object is referenced, even if the connection's statement
    cache evicts it; once unreferenced it is closed on the server (unless the
    cache still holds it).  One obtained through a pooled connection belongs
    to that checkout: after the release, every use raises InterfaceError.

    To type checkers it is generic in its row type: ``PreparedStatement[Record]``,
    or ``PreparedStatement[MyRecord]`` when prepared with ``record_class=MyRecord``,
    ``PreparedStatement[dict[str, Any]]`` with ``row_factory=dict_row``.
    """

    __slots__ = ('_connection', '_session', '_checkout', '_query', '_state', '_rows_as',
                 '_status', '_fixed_name', '__weakref__')

    def __init__(self, connection: Connection, session: Session, query: str,
                 state: StatementState, rows_as: Any,
                 fixed_name: bool) -> None:
        self._connection = connection
        self._session = session
        self._checkout = session.checkout
        self._query = query
        self._state = state
        self._rows_as = rows_as
        self._status = StatusSink()    # the protocol leaves each run's status tag here
        self._fixed_name = fixed_name
        session.statements.attach(state)

    def __del__(self) -> None:
        state = getattr(self, '_state', None)
        if state is not None:
            self._session.statements.detach(state)

    def __repr__(self) -> str:
        return f'<{type(self).__name__} {self._state.name!r} {self._query[:60]!r}>'

    # --- description ---

    def get_name(self) -> str:
        """The name of the statement on the server."""
        self._check_usable('get_name')
        return self._state.name

    def get_query(self) -> str:
        """The text of the statement."""
        self._check_usable('get_query')
        return self._query

    def get_statusmsg(self) -> Optional[str]:
        """The status tag of the last run, e.g. ``'SELECT 5'`` (None before the first run)."""
        self._check_usable('get_statusmsg')
        return self._status.status

    def get_parameters(self) -> tuple[Type, ...]:
        """The type of each parameter, as a tuple of :class:`~mypgdriver.types.Type`."""
        self._check_usable('get_parameters')
        registry = self._session.codecs
        return tuple(describe_type(registry, oid) for oid in self._state.param_oids)

    def get_attributes(self) -> tuple[Attribute, ...]:
        """Name and type of each result column, as a tuple of :class:`~mypgdriver.types.Attribute`."""
        self._check_usable('get_attributes')
        registry = self._session.codecs
        state = self._state
        return tuple(Attribute(name, describe_type(registry, oid))
                     for name, oid in zip(state.column_names, state.column_oids))

    # --- running ---

    @overload
    async def fetch(self, *args: object, timeout: Optional[float] = None,
                    row_factory: None = None) -> list[RowT]: ...

    @overload
    async def fetch(self, *args: object, timeout: Optional[float] = None,
                    row_factory: RowFactory[OtherRowT]) -> list[OtherRowT]: ...

    async def fetch(self, *args: object, timeout: Optional[float] = None,
                    row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run the statement and return all rows.

        `row_factory` (:mod:`mypgdriver.rows`) overrides the statement's
        rows (prepare()'s `record_class` or `row_factory`) for this call.
        """
        if row_factory is None:
            return await self._session.run_prepared(self, args, 0, timeout, 'fetch')
        return await self._session.run_prepared(self, args, 0, timeout, 'fetch',
                                                choose_rows(None, row_factory))

    @overload
    async def fetchrow(self, *args: object, timeout: Optional[float] = None,
                       row_factory: None = None) -> Optional[RowT]: ...

    @overload
    async def fetchrow(self, *args: object, timeout: Optional[float] = None,
                       row_factory: RowFactory[OtherRowT]) -> Optional[OtherRowT]: ...

    async def fetchrow(self, *args: object, timeout: Optional[float] = None,
                       row_factory: Optional[RowFactory[Any]] = None) -> Any:
        """Run the statement and return the first row, or None (`row_factory` as in fetch())."""
        if row_factory is None:
            rows = await self._session.run_prepared(self, args, 1, timeout, 'fetchrow')
        else:
            rows = await self._session.run_prepared(self, args, 1, timeout, 'fetchrow',
                                                    choose_rows(None, row_factory))
        return rows[0] if rows else None

    async def fetchval(self, *args: object, column: int | str = 0,
                       timeout: Optional[float] = None) -> Any:
        """Run the statement and return one value of the first row (None if no rows)."""
        # Record rows whatever the statement's row factory: `column` may be a name.
        rows = await self._session.run_prepared(self, args, 1, timeout, 'fetchval', Record)
        return rows[0][column] if rows else None

    async def executemany(self, args: ArgumentRows, *, timeout: Optional[float] = None) -> None:
        """Run the statement once per argument sequence, pipelined and atomic.

        See :meth:`Connection.executemany`.
        """
        self._check_usable('executemany')
        await self._session.executemany(self._query, args, timeout, state=self._state,
                                        retry=self._reprepare)

    @overload
    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: None = None) -> CursorFactory[RowT]: ...

    @overload
    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: RowFactory[OtherRowT]) -> CursorFactory[OtherRowT]: ...

    def cursor(self, *args: object, prefetch: Optional[int] = None,
               timeout: Optional[float] = None,
               row_factory: Optional[RowFactory[Any]] = None) -> CursorFactory[Any]:
        """A cursor over this statement's rows (see :meth:`Connection.cursor`)."""
        self._check_usable('cursor')
        check_timeout(timeout)
        check_prefetch(prefetch)
        rows_as = self._rows_as if row_factory is None else choose_rows(None, row_factory)
        return CursorFactory(self._connection, self._session, self._query, self._state, args,
                             prefetch, timeout, rows_as)

    @overload
    async def fetchmany(self, args: ArgumentRows, *, timeout: Optional[float] = None,
                        row_factory: None = None) -> list[RowT]: ...

    @overload
    async def fetchmany(self, args: ArgumentRows, *, timeout: Optional[float] = None,
                        row_factory: RowFactory[OtherRowT]) -> list[OtherRowT]: ...

    async def fetchmany(self, args: ArgumentRows, *, timeout: Optional[float] = None,
                        row_factory: Optional[RowFactory[Any]] = None) -> list[Any]:
        """Run the statement once per argument sequence and return all rows.

        See :meth:`Connection.fetchmany`; `row_factory` as in fetch().
        """
        self._check_usable('fetchmany')
        rows_as = self._rows_as if row_factory is None else choose_rows(None, row_factory)
        return await self._session.executemany(
            self._query, args, timeout, return_rows=True, rows_as=rows_as,
            state=self._state, retry=self._reprepare)

    async def _fetch_arguments(self, args: tuple[Any, ...], rows_as: Any = None) -> list[Any]:
        """fetch() with `args` as given, a tuple subclass included (mypgdriver.dbapi).

        ``fetch(*args)`` would make a plain tuple of a
        :class:`~mypgdriver.protocol.statement.StrAsTextArguments`, the
        arguments of the DB-API's run after a str was refused.  `rows_as`:
        what rows.choose_rows() made of a row factory (None: the statement's).
        """
        return await self._session.run_prepared(self, args, 0, None, 'fetch', rows_as)

    async def _fetch_each(self, args: ArgumentRows, *, timeout: Optional[float] = None,
                          rows_as: Any = None) -> list[tuple[list[Any], str]]:
        """fetchmany() with the rows and status tag of each run apart, in order.

        mypgdriver.dbapi's executemany() (its rowcount, and nextset() with
        returning=True): one pipeline, atomic, as fetchmany().  `rows_as`:
        what rows.choose_rows() made of a row factory (None: the statement's).
        """
        self._check_usable('executemany')
        return await self._session.executemany(
            self._query, args, timeout, return_rows=ROWS_PER_STATEMENT,
            rows_as=self._rows_as if rows_as is None else rows_as, state=self._state,
            retry=self._reprepare)

    async def explain(self, *args: object, analyze: bool = False) -> Any:
        """The statement's execution plan (``EXPLAIN (FORMAT JSON, VERBOSE)``), parsed.

        With `analyze` the statement really runs (inside a transaction or
        savepoint that is rolled back afterwards) and the plan includes the
        measured times.
        """
        self._check_usable('explain')
        conn = self._connection
        query = f'EXPLAIN (FORMAT JSON, VERBOSE{", ANALYZE" if analyze else ""}) {self._query}'
        if analyze:
            # EXPLAIN ANALYZE executes the statement: keep its effects out.
            xact = conn.transaction()
            await xact.start()
            try:
                plan = await conn.fetchval(query, *args)
            finally:
                await xact.rollback()
        else:
            plan = await conn.fetchval(query, *args)
        return json.loads(plan)

    # --- internals ---

    def _check_usable(self, method: str) -> None:
        session = self._session
        session.check_handle(self._checkout, 'PreparedStatement', method)
        # (A statement the server dropped is prepared again at its next run.)
        if self._state.closed and self._state not in session.statements.dropped:
            raise exceptions.InterfaceError(
                f'cannot call PreparedStatement.{method}(): the prepared statement is closed')

    async def _reprepare(self, deadline: Deadline) -> StatementState:
        """Replace the statement after a schema change (outside a transaction); the new state."""
        session = self._session
        old = self._state
        if self._fixed_name:
            # The user's name may still be taken on the server (even after
            # an error said it was not: others may be gone, not this one):
            # free it first.
            old.closed = False
            session.statements.queue_close(old)
            await session.admission.sync(deadline)
            new = await session.prepare_state(self._query, deadline, name=old.name, cache=False)
        else:
            new = await session.prepare_state(self._query, deadline,
                                              cache=False, named=bool(old.name),
                                              create_now=True)
        session.statements.hold(new)
        session.statements.attach(new)
        self._state = new
        session.statements.detach(old)
        return new


def describe_type(registry: CodecRegistry, oid: int) -> Type:
    """The :class:`Type` of `oid` as asyncpg describes it.

    Domains are described by their base type (with the domain's OID), arrays
    are named after their element (``'int4[]'``), enums are scalars.
    """
    info = registry.type_info(oid)
    depth = 0
    while info is not None and info.kind == 'd' and info.base and depth < 64:
        info = registry.type_info(info.base)
        depth += 1
    if info is None:
        # Known only through a user codec (set_type_codec) or not at all.
        codec = registry.get_codec(oid)
        return Type(oid, codec.name, 'scalar', codec.schema)
    if info.category == 'A' and info.element:
        element = registry.type_info(info.element)
        name = (element.name if element is not None else info.name.lstrip('_')) + '[]'
        return Type(oid, name, 'array', info.schema)
    return Type(oid, info.name, _KINDS.get(info.kind, 'scalar'), info.schema)

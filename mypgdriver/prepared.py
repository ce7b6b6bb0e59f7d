"""PreparedStatement: a statement prepared once on the server, run many times."""
from __future__ import annotations

import asyncio
import json
from typing import Any, Optional

from mypgdriver import exceptions
from mypgdriver.cursor import CursorFactory
from mypgdriver.types import Attribute, Type

# TypeInfo.kind (pg_type.typtype) -> Type.kind, as asyncpg reports it.
_KINDS = {'c': 'composite', 'r': 'range', 'm': 'multirange'}



class PreparedStatement:
    """A prepared statement (see :meth:`Connection.prepare`).

    Running it costs Bind/Execute only.  The server statement stays valid
    while this object is referenced, even if the connection's statement
    cache evicts it; once unreferenced it is closed on the server (unless the
    cache still holds it).
    """

    __slots__ = ('_connection', '_query', '_state', '_record_class', '_last_status',
                 '_fixed_name', '__weakref__')

    def __init__(self, connection, query: str, state, record_class: Optional[type],
                 fixed_name: bool) -> None:
        self._connection = connection
        self._query = query
        self._state = state
        self._record_class = record_class
        self._last_status: Optional[str] = None
        self._fixed_name = fixed_name
        connection._attach_statement(state)

    def __del__(self) -> None:
        state = getattr(self, '_state', None)
        if state is not None:
            self._connection._detach_statement(state)

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
        return self._last_status

    def get_parameters(self) -> tuple:
        """The type of each parameter, as a tuple of :class:`~mypgdriver.types.Type`."""
        self._check_usable('get_parameters')
        registry = self._connection._codecs
        return tuple(describe_type(registry, oid) for oid in self._state.param_oids)

    def get_attributes(self) -> tuple:
        """Name and type of each result column, as a tuple of :class:`~mypgdriver.types.Attribute`."""
        self._check_usable('get_attributes')
        registry = self._connection._codecs
        state = self._state
        return tuple(Attribute(name, describe_type(registry, oid))
                     for name, oid in zip(state.column_names, state.column_oids))

    # --- running ---

    async def fetch(self, *args, timeout: Optional[float] = None) -> list:
        """Run the statement and return all rows."""
        return await self._run(args, 0, timeout, 'fetch')

    async def fetchrow(self, *args, timeout: Optional[float] = None):
        """Run the statement and return the first row, or None."""
        rows = await self._run(args, 1, timeout, 'fetchrow')
        return rows[0] if rows else None

    async def fetchval(self, *args, column: int | str = 0,
                       timeout: Optional[float] = None) -> Any:
        """Run the statement and return one value of the first row (None if no rows)."""
        rows = await self._run(args, 1, timeout, 'fetchval')
        return rows[0][column] if rows else None

    async def executemany(self, args, *, timeout: Optional[float] = None) -> None:
        """Run the statement once per argument sequence, pipelined and atomic.

        See :meth:`Connection.executemany`.
        """
        self._check_usable('executemany')
        conn = self._connection
        if timeout is None:
            timeout = conn._command_timeout
        await conn._ready(timeout)
        deadline = None if timeout is None else conn._loop.time() + timeout
        await self._refresh(timeout)
        try:
            await conn._executemany_state(self._state, args, conn._time_left(deadline))
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            if not isinstance(args, (list, tuple)) or not conn._may_retry_after(e, self._query):
                raise
            await self._reprepare(conn._time_left(deadline))
            await conn._executemany_state(self._state, args, conn._time_left(deadline))

    def cursor(self, *args, prefetch: Optional[int] = None,
               timeout: Optional[float] = None) -> CursorFactory:
        """A cursor over this statement's rows (see :meth:`Connection.cursor`)."""
        self._check_usable('cursor')
        return CursorFactory(self._connection, self._query, self._state, args, prefetch,
                             timeout, self._record_class)

    async def fetchmany(self, args, *, timeout: Optional[float] = None) -> list:
        """Run the statement once per argument sequence and return all rows.

        See :meth:`Connection.fetchmany`.
        """
        self._check_usable('fetchmany')
        conn = self._connection
        if timeout is None:
            timeout = conn._command_timeout
        await conn._ready(timeout)
        deadline = None if timeout is None else conn._loop.time() + timeout
        await self._refresh(timeout)
        try:
            return await conn._executemany_state(
                self._state, args, conn._time_left(deadline), return_rows=True,
                record_class=self._record_class)
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            if not isinstance(args, (list, tuple)) or not conn._may_retry_after(e, self._query):
                raise
            await self._reprepare(conn._time_left(deadline))
            return await conn._executemany_state(
                self._state, args, conn._time_left(deadline), return_rows=True,
                record_class=self._record_class)


    async def explain(self, *args, analyze: bool = False) -> Any:
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
        if self._connection.is_closed():
            raise exceptions.InterfaceError(
                f'cannot call PreparedStatement.{method}(): the underlying connection is closed')
        if self._state.closed:
            raise exceptions.InterfaceError(
                f'cannot call PreparedStatement.{method}(): the prepared statement is closed')

    async def _run(self, args, limit: int, timeout, method: str):
        # The hot path of fetch/fetchrow/fetchval: one coroutine frame and a
        # few attribute checks; waiting for sync, codec refreshes and the
        # retry after a schema change are the exceptions.
        conn = self._connection
        state = self._state
        proto = conn._protocol
        if conn._closed or state.closed or proto.is_closed():
            self._check_usable(method)
        if timeout is None:
            timeout = conn._command_timeout
        if conn._stmts_to_close or proto.get_resync_waiter() is not None:
            timeout = await conn._wait_in_sync_within(timeout)
        deadline = None if timeout is None else conn._loop.time() + timeout
        if state.codecs_generation != conn._codecs.generation:
            await conn._refresh_codecs(state, timeout)
            timeout = conn._time_left(deadline)
        record_class = self._record_class
        has_rows = state.has_rows
        fut = proto.bind_execute(state, args, limit, timeout, not has_rows,
                                 record_class if record_class is not None else conn._record_class)
        try:
            result = await fut
        except asyncio.CancelledError:
            proto.abandon()
            raise
        except (exceptions.InvalidCachedStatementError, exceptions.OutdatedSchemaCacheError) as e:
            if not conn._may_retry_after(e, self._query):
                raise
            await self._reprepare(conn._time_left(deadline))
            return await self._bind_execute(args, limit, conn._time_left(deadline))
        if has_rows:
            self._last_status = proto.last_status()
            return result
        self._last_status = result
        return []

    async def _bind_execute(self, args, limit: int, timeout) -> list:
        conn = self._connection
        state = self._state
        if not state.has_rows:
            self._last_status = await conn._run_state(state, args, limit, timeout, True, None)
            return []
        rows = await conn._run_state(state, args, limit, timeout, False, self._record_class)
        self._last_status = conn._protocol.last_status()
        return rows

    async def _refresh(self, timeout) -> None:
        if self._state.codecs_generation != self._connection._codecs.generation:
            await self._connection._refresh_codecs(self._state, timeout)

    async def _reprepare(self, timeout) -> None:
        """Replace the statement after a schema change (outside a transaction)."""
        conn = self._connection
        old = self._state
        if self._fixed_name:
            # The user's name is still taken on the server: free it first.
            conn._queue_statement_close(old)
            await conn._ready(timeout)
            new = await conn._prepare_state(self._query, timeout, name=old.name, cache=False)
        else:
            new = await conn._prepare_state(self._query, timeout, cache=False, named=True)
        conn._held_stmts.add(new)
        conn._attach_statement(new)
        self._state = new
        conn._detach_statement(old)


def describe_type(registry, oid: int) -> Type:
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

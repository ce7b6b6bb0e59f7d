"""What happens to a connection given back to the pool: its reset, or its end."""
from __future__ import annotations

from typing import Optional

from mypgdriver.connection import Connection

__all__ = ('default_reset', 'end_open_transaction', 'in_unknown_state', 'close_quietly')


async def default_reset(con: Connection, timeout: Optional[float]) -> None:
    """What a release runs without a `reset` callback: Connection.reset() and DISCARD TEMP.

    Connection.reset() drops temporary tables (asyncpg's keeps them, which
    would let one pool user see another's); a connection class whose reset
    query lacks DISCARD TEMP gets it run after its own reset.
    """
    await con.reset(timeout=timeout)
    query = con.get_reset_query().upper()
    if 'DISCARD TEMP' not in query and 'DISCARD ALL' not in query:
        await con.execute('DISCARD TEMP', timeout=timeout)


async def end_open_transaction(con: Connection) -> None:
    """Roll back the transaction a released connection is in, if any.

    Run before a pool's `reset` callback: an open transaction is always
    ended, whatever the callback does.
    """
    if con.is_in_transaction():
        await con.execute('ROLLBACK')


def in_unknown_state(con: Connection) -> bool:
    """True if `con` must not be reused: closed, or an operation not finished.

    An operation in flight or being drained, or an interrupted transaction
    block still being cleaned up: the session's state is not known.
    """
    return con.is_closed() or not con._session.is_settled()


async def close_quietly(con: Connection) -> None:
    """Close `con` gracefully, or terminate it if that fails (nobody waits for the outcome)."""
    try:
        await con.close()
    except Exception:
        con.terminate()

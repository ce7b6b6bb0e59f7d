"""The checks of create_pool()'s arguments, the same for the asyncio and the sync pool."""
from __future__ import annotations

from typing import Any, Optional

from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows

__all__ = ('check_pool_arguments',)


def check_pool_arguments(connection_base: type, connection_base_name: str, /,
                         arguments: dict[str, Any]) -> int:
    """Refuse the arguments a pool cannot run with; return the init_size to use.

    `arguments` are the pool's __init__ arguments by name (its ``locals()``:
    both pools take the same ones, so that this reads them, not a list of
    them written in each pool).

    ValueError for sizes and durations out of range, TypeError for classes
    that are not subclasses of the API's Connection (`connection_base`,
    named `connection_base_name` in the message) or of Record.  A
    `row_factory` is put into ``connect_kwargs``: passed on to connect()
    only when given, as a `connect` callback written for asyncpg does not
    know the argument.
    """
    min_size: int = arguments['min_size']
    max_size: int = arguments['max_size']
    init_size: Optional[int] = arguments['init_size']
    connection_class = arguments['connection_class']
    record_class = arguments['record_class']
    row_factory: Optional[RowFactory[Any]] = arguments['row_factory']
    if max_size <= 0:
        raise ValueError('max_size is expected to be greater than zero')
    if min_size < 0:
        raise ValueError('min_size is expected to be greater or equal to zero')
    if min_size > max_size:
        raise ValueError('min_size is greater than max_size')
    if init_size is None:
        init_size = min_size
    if init_size < min_size:
        raise ValueError('init_size is smaller than min_size')
    if init_size > max_size:
        raise ValueError('init_size is greater than max_size')
    if arguments['max_queries'] <= 0:
        raise ValueError('max_queries is expected to be greater than zero')
    if arguments['max_inactive_connection_lifetime'] < 0:
        raise ValueError(
            'max_inactive_connection_lifetime is expected to be greater or equal to zero')
    if arguments['connect_retry_timeout'] < 0:
        raise ValueError('connect_retry_timeout is expected to be greater or equal to zero')
    if not (isinstance(connection_class, type) and issubclass(connection_class, connection_base)):
        raise TypeError(f'connection_class is expected to be a subclass of '
                        f'{connection_base_name}, got {connection_class!r}')
    if not (isinstance(record_class, type) and issubclass(record_class, Record)):
        raise TypeError(f'record_class is expected to be a subclass of '
                        f'mypgdriver.Record, got {record_class!r}')
    if row_factory is not None:
        if record_class is not Record:
            raise TypeError('pass record_class or row_factory to the pool, not both')
        choose_rows(None, row_factory)      # (refuses what is not callable)
        arguments['connect_kwargs']['row_factory'] = row_factory
    return init_size

"""The checks of create_pool()'s arguments, the same for the asyncio and the sync pool."""
from __future__ import annotations

from typing import Any, Optional

from mypgdriver.protocol.record import Record
from mypgdriver.rows import RowFactory, choose_rows

__all__ = ('check_pool_arguments',)


def check_pool_arguments(*, min_size: int, max_size: int, init_size: Optional[int],
                         max_queries: int, max_inactive_connection_lifetime: float,
                         connect_retry_timeout: float, connection_class: type,
                         connection_base: type, connection_base_name: str,
                         record_class: type, row_factory: Optional[RowFactory[Any]],
                         connect_kwargs: dict[str, Any]) -> int:
    """Refuse the arguments a pool cannot run with; return the init_size to use.

    ValueError for sizes and durations out of range, TypeError for classes
    that are not subclasses of the API's Connection (`connection_base`,
    named `connection_base_name` in the message) or of Record.  A
    `row_factory` is put into `connect_kwargs`: passed on to connect()
    only when given, as a `connect` callback written for asyncpg does not
    know the argument.
    """
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
    if max_queries <= 0:
        raise ValueError('max_queries is expected to be greater than zero')
    if max_inactive_connection_lifetime < 0:
        raise ValueError(
            'max_inactive_connection_lifetime is expected to be greater or equal to zero')
    if connect_retry_timeout < 0:
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
        connect_kwargs['row_factory'] = row_factory
    return init_size

"""The interface every driver module implements."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol, Union

from ..workloads import Workload

# Connection keywords in asyncpg's spelling (host, port, user, password,
# database); DB-API drivers translate `database` to `dbname`.
ConnParams = dict[str, Any]

RowCount = Union[int, Awaitable[int]]


@dataclass
class Session:
    """One open connection, ready to run one workload over and over.

    `run` does one iteration and returns (or, for async drivers, resolves
    to) the number of rows fetched or sent; `close` releases the connection.
    """

    run: Callable[[], RowCount]
    close: Callable[[], Any]


class Driver(Protocol):
    """What the worker needs from a driver module's `DRIVER`."""

    name: str
    is_async: bool

    def version(self) -> str:
        """The installed version of the driver package."""
        ...

    def open(self, params: ConnParams, workload: Workload) -> Any:
        """Connect and prepare for `workload`; returns a `Session` (awaitable if async)."""
        ...

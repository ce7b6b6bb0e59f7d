"""The interface every driver module implements."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol, Union

from ..workloads import Workload

# Connection keywords in asyncpg's spelling (host, port, user, password,
# database); DB-API drivers translate `database` to `dbname`.
ConnParams = dict[str, Any]

RowCount = Union[int, Awaitable[int]]

# How the error of a cell whose contender cannot run here starts (the worker
# writes it, with `skipped: True`, and the report lists the reason in full).
SKIPPED = "skipped: "


class ContenderUnavailable(Exception):
    """The contender cannot run with what is installed; the message says why.

    Raised by a driver's `open` (or a scenario's contender) for a missing
    piece that is expected to arrive (an API still being written), so that
    its cells read "skipped: <why>" instead of an ImportError, and the run
    goes on.
    """


def import_optional(module: str, why: str) -> Any:
    """Import `module`, or raise ContenderUnavailable(`why`) when it does not exist.

    Only the absence of `module` itself is turned into a skip: an import
    error inside it (a broken build) still fails the cell with its own text.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise ContenderUnavailable(why) from None
        raise


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

"""One module per driver, each exposing the same small interface.

A driver module defines `DRIVER`, a `Driver`: its `open(params, workload)`
connects and prepares whatever the workload needs, and returns a `Session`
whose `run()` does one iteration and returns the number of rows it fetched
or sent. For async drivers `open`, `run` and `close` are coroutines.

The harness imports a driver module only inside the worker subprocess of
a cell, so a driver that fails to import or crashes costs that cell only.
"""
from __future__ import annotations

import importlib

from .base import ContenderUnavailable, Driver, Session

# The benchmark name of a driver -> the module that implements it.
MODULES: dict[str, str] = {
    "mypgdriver": "bench.drivers.mypgdriver_driver",
    # mypgdriver's blocking API, run on threads like psycopg and psycopg2.
    "mypgdriver-sync": "bench.drivers.mypgdriver_sync_driver",
    # mypgdriver's DB-API (PEP 249) module on the blocking API, written as
    # psycopg2 code is: cursor.execute with %s, fetchall.
    "mypgdriver-dbapi": "bench.drivers.mypgdriver_dbapi_driver",
    "asyncpg": "bench.drivers.asyncpg_driver",
    "psycopg": "bench.drivers.psycopg_driver",
    "psycopg-async": "bench.drivers.psycopg_async_driver",
    "psycopg2": "bench.drivers.psycopg2_driver",
    # The Rust-based asyncio driver (tokio-postgres underneath).
    "psqlpy": "bench.drivers.psqlpy_driver",
}

# The dict-row contenders (contenders.DICT_ROWS): each driver's dict rows on
# pg_type, module and attribute.  Not drivers of `--drivers`: each comes with
# the driver it belongs to, as the scenarios' contenders do.
DICT_ROW_DRIVERS: dict[str, tuple[str, str]] = {
    "mypgdriver-dict": ("bench.drivers.mypgdriver_driver", "DICT_DRIVER"),
    "mypgdriver-sync-dict": ("bench.drivers.mypgdriver_sync_driver", "DICT_DRIVER"),
    "psycopg-dict": ("bench.drivers.psycopg_driver", "DICT_DRIVER"),
    "psycopg-async-dict": ("bench.drivers.psycopg_async_driver", "DICT_DRIVER"),
    "psycopg2-dict": ("bench.drivers.psycopg2_driver", "DICT_DRIVER"),
    "psqlpy-dict": ("bench.drivers.psqlpy_driver", "DICT_DRIVER"),
}


def load(name: str) -> Driver:
    """Import the module for driver (or dict-row contender) `name` and return its driver."""
    if name in DICT_ROW_DRIVERS:
        module, attribute = DICT_ROW_DRIVERS[name]
        driver: Driver = getattr(importlib.import_module(module), attribute)
        return driver
    return importlib.import_module(MODULES[name]).DRIVER


__all__ = ["DICT_ROW_DRIVERS", "MODULES", "ContenderUnavailable", "Driver", "Session", "load"]

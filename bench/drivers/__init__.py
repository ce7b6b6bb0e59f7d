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

from .base import Driver, Session

# The benchmark name of a driver -> the module that implements it.
MODULES: dict[str, str] = {
    "mypgdriver": "bench.drivers.mypgdriver_driver",
    # mypgdriver's blocking API, run on threads like psycopg and psycopg2.
    "mypgdriver-sync": "bench.drivers.mypgdriver_sync_driver",
    "asyncpg": "bench.drivers.asyncpg_driver",
    "psycopg": "bench.drivers.psycopg_driver",
    "psycopg-async": "bench.drivers.psycopg_async_driver",
    "psycopg2": "bench.drivers.psycopg2_driver",
}


def load(name: str) -> Driver:
    """Import the module for driver `name` and return its `DRIVER`."""
    return importlib.import_module(MODULES[name]).DRIVER


__all__ = ["MODULES", "Driver", "Session", "load"]

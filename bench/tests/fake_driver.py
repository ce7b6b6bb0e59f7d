"""Drivers without a database, for testing the worker's measuring loops."""
from __future__ import annotations

import asyncio
import time

from bench.drivers.base import Session

ROWS_PER_RUN = 3


class FakeSyncDriver:
    name = "fake-sync"
    is_async = False

    def __init__(self, fail_after: int | None = None, delay: float = 0.0) -> None:
        self.fail_after = fail_after
        self.delay = delay
        self.closed = 0

    def version(self) -> str:
        return "1.2.3"

    def open(self, params, workload) -> Session:
        calls = 0

        def run() -> int:
            nonlocal calls
            calls += 1
            time.sleep(self.delay)
            if self.fail_after is not None and calls > self.fail_after:
                raise ConnectionResetError("server went away")
            return ROWS_PER_RUN

        def close() -> None:
            self.closed += 1

        return Session(run=run, close=close)


class FakeAsyncDriver:
    name = "fake-async"
    is_async = True

    def __init__(self, fail_after: int | None = None, delay: float = 0.0) -> None:
        self.fail_after = fail_after
        self.delay = delay
        self.closed = 0

    def version(self) -> str:
        return "4.5.6"

    async def open(self, params, workload) -> Session:
        calls = 0

        async def run() -> int:
            nonlocal calls
            calls += 1
            await asyncio.sleep(self.delay)
            if self.fail_after is not None and calls > self.fail_after:
                raise ConnectionResetError("server went away")
            return ROWS_PER_RUN

        async def close() -> None:
            self.closed += 1

        return Session(run=run, close=close)

"""mypgdriver.sync: connecting, queries of every codec family, statements, callbacks."""
from __future__ import annotations

import asyncio
import datetime
import decimal
import json
import uuid
from typing import Any, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection
from tests.test_policy_without_event_loop import no_event_loop  # noqa: F401  (a fixture)


@pytest.fixture
def dsn(pg_cluster: Any) -> str:
    return pg_cluster.dsn()


@pytest.fixture
def sconn(dsn: str, no_event_loop: list[str]) -> Iterator[Connection]:  # noqa: F811
    conn = mypgdriver.sync.connect(dsn)
    try:
        yield conn
    finally:
        conn.close()


def test_connect_returns_a_sync_connection_and_with_closes_it(dsn: str,
                                                              no_event_loop: list[str]) -> None:  # noqa: F811
    with mypgdriver.sync.connect(dsn) as conn:
        assert type(conn) is mypgdriver.sync.Connection
        pid = conn.get_server_pid()
        assert conn.fetchval('SELECT pg_backend_pid()') == pid
    assert conn.is_closed()
    with mypgdriver.sync.connect(dsn) as other:
        # the server saw the backend go (Terminate is processed at once, but
        # the backend's exit is asynchronous: allow it a moment)
        for _ in range(100):
            if not other.fetchval('SELECT count(*) FROM pg_stat_activity WHERE pid = $1', pid):
                break
            other.execute('SELECT pg_sleep(0.02)')
        assert other.fetchval('SELECT count(*) FROM pg_stat_activity WHERE pid = $1', pid) == 0

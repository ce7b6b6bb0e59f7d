"""Changing the session's client_encoding never corrupts text.

The driver encodes and decodes text as UTF-8 only.  If the session's
client_encoding becomes anything else (SET, set_config()), the server would
read our UTF-8 bytes as that encoding: 'é' would be stored as 'Ã©'.  So the
driver refuses: the statement that changed it raises
UnsupportedClientFeatureError and the connection is closed, so that no
later query can write mis-encoded text.  The UTF-8 spellings are fine.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

import mypgdriver
from mypgdriver import exceptions
from tests.support.session_state import unique_table_name

TEXT = "café é"
MOJIBAKE = TEXT.encode("utf-8").decode("latin-1")     # 'cafÃ© Ã©'


@pytest.fixture
async def texts(monitor) -> AsyncIterator[str]:
    """A table (v text) visible to the monitor."""
    name = unique_table_name("texts")
    await monitor.execute(f"CREATE TABLE {name} (v text)")
    try:
        yield name
    finally:
        await monitor.execute(f"DROP TABLE IF EXISTS {name}")


SWITCHES: dict[str, Callable[[Any], Awaitable[Any]]] = {
    "SET client_encoding = 'LATIN1'": lambda c: c.execute("SET client_encoding = 'LATIN1'"),
    "SET client_encoding TO latin1": lambda c: c.execute("SET client_encoding TO latin1"),
    "SET SESSION client_encoding = 'WIN1252'":
        lambda c: c.execute("SET SESSION client_encoding = 'WIN1252'"),
    "execute(SELECT set_config(...))":
        lambda c: c.execute("SELECT set_config('client_encoding', 'LATIN1', false)"),
    "fetchval(SELECT set_config(...))":
        lambda c: c.fetchval("SELECT set_config('client_encoding', 'LATIN1', false)"),
}


@pytest.mark.parametrize("switch", list(SWITCHES))
async def test_switching_client_encoding_away_from_utf8_is_refused_and_closes_the_connection(
        monitor, texts, conn, switch):
    with pytest.raises(exceptions.UnsupportedClientFeatureError) as caught:
        await SWITCHES[switch](conn)
    assert isinstance(caught.value, exceptions.InterfaceError)
    message = str(caught.value)
    assert "client_encoding" in message, message
    expected = "WIN1252" if "WIN1252" in switch else "LATIN1"
    assert expected in message.upper(), message
    assert conn.is_closed() is True, "the connection stays open with a non-UTF-8 encoding"

    # Nothing can be written through it any more ...
    refused = (exceptions.InterfaceError, exceptions.ConnectionDoesNotExistError)
    with pytest.raises(refused):
        await conn.execute(f"INSERT INTO {texts} (v) VALUES ($1)", TEXT)
    with pytest.raises(refused):
        await conn.execute(f"INSERT INTO {texts} (v) VALUES ('{TEXT}')")
    # ... and nothing mis-encoded was.
    assert await monitor.fetchval(f"SELECT count(*) FROM {texts} WHERE v = $1", MOJIBAKE) == 0
    assert await monitor.fetch(f"SELECT v FROM {texts}") == []


@pytest.mark.parametrize("spelling", ["UTF8", "utf-8", "UNICODE", "Utf8"])
async def test_setting_client_encoding_to_a_utf8_spelling_is_accepted(
        monitor, texts, conn, spelling):
    await conn.execute(f"SET client_encoding = '{spelling}'")
    assert conn.is_closed() is False
    await conn.execute(f"INSERT INTO {texts} (v) VALUES ($1)", TEXT)
    assert await conn.fetchval("SELECT $1::text", TEXT) == TEXT
    assert await monitor.fetchval(f"SELECT v FROM {texts}") == TEXT
    assert await conn.fetchval("SELECT 1") == 1


async def test_connect_with_a_non_utf8_client_encoding_is_refused(connect_kwargs):
    with pytest.raises(exceptions.ClientConfigurationError):
        await mypgdriver.connect(**connect_kwargs, server_settings={"client_encoding": "LATIN1"})

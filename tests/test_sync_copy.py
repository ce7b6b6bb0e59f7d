"""mypgdriver.sync: the four COPY methods with every kind of source and sink."""
from __future__ import annotations

import io
import pathlib
from typing import Any, Iterator

import pytest

import mypgdriver
import mypgdriver.sync
from mypgdriver.sync import Connection

ROWS = b'1\tone\n2\ttwo\n3\tthree\n'


@pytest.fixture
def copy_conn(sync_conn: Connection) -> Connection:
    """`sync_conn` with a temporary table c (n int, name text)."""
    sync_conn.execute('CREATE TEMP TABLE c (n int, name text)')
    return sync_conn


def _contents(conn: Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.fetch('SELECT n, name FROM c ORDER BY n')]


EXPECTED = [(1, 'one'), (2, 'two'), (3, 'three')]


def test_copy_to_table_from_a_path(copy_conn: Connection, tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'in.tsv'
    path.write_bytes(ROWS)
    assert copy_conn.copy_to_table('c', source=path) == 'COPY 3'
    assert copy_conn.copy_to_table('c', source=str(path), where='n > 2') == 'COPY 1'
    assert _contents(copy_conn) == EXPECTED + [(3, 'three')]


def test_copy_to_table_from_a_binary_file_object(copy_conn: Connection) -> None:
    assert copy_conn.copy_to_table('c', source=io.BytesIO(ROWS)) == 'COPY 3'
    assert _contents(copy_conn) == EXPECTED


def test_copy_to_table_from_a_sync_generator_and_bytes_like(copy_conn: Connection) -> None:
    def lines() -> Iterator[bytes]:
        yield from ROWS.splitlines(keepends=True)
    assert copy_conn.copy_to_table('c', source=lines()) == 'COPY 3'
    assert copy_conn.copy_to_table('c', source=bytearray(b'4\tfour\n')) == 'COPY 1'
    assert copy_conn.copy_to_table('c', source=[memoryview(b'5,five\n')], format='csv') == 'COPY 1'
    assert _contents(copy_conn) == EXPECTED + [(4, 'four'), (5, 'five')]


def test_a_failing_source_copies_nothing_and_the_connection_goes_on(copy_conn: Connection) -> None:
    def broken() -> Iterator[bytes]:
        yield b'1\tone\n'
        raise ValueError('source broke')
    with pytest.raises(ValueError, match='source broke'):
        copy_conn.copy_to_table('c', source=broken())
    with pytest.raises(mypgdriver.exceptions.InvalidTextRepresentationError):
        copy_conn.copy_to_table('c', source=[b'x\ty\n'])
    assert _contents(copy_conn) == []
    assert copy_conn.fetchval('SELECT 1') == 1


def test_async_sources_and_outputs_are_refused(copy_conn: Connection) -> None:
    async def agen() -> Any:
        yield b''

    async def awrite(data: bytes) -> None:
        pass
    with pytest.raises(TypeError):
        copy_conn.copy_to_table('c', source=agen())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        copy_conn.copy_from_table('c', output=awrite)


def test_copy_records_to_table(copy_conn: Connection) -> None:
    assert copy_conn.copy_records_to_table('c', records=[(1, 'one'), (2, 'two')]) == 'COPY 2'
    assert copy_conn.copy_records_to_table(
        'c', records=((n, name) for n, name in [(3, 'three')]), columns=['n', 'name']) == 'COPY 1'
    assert _contents(copy_conn) == EXPECTED
    with pytest.raises(mypgdriver.exceptions.DataError):
        copy_conn.copy_records_to_table('c', records=[('not a number', 'x')])
    assert _contents(copy_conn) == EXPECTED


def test_copy_from_table_to_path_file_and_callable(copy_conn: Connection,
                                                   tmp_path: pathlib.Path) -> None:
    copy_conn.copy_to_table('c', source=[ROWS])
    path = tmp_path / 'out.tsv'
    assert copy_conn.copy_from_table('c', output=path) == 'COPY 3'
    assert sorted(path.read_bytes().splitlines()) == sorted(ROWS.splitlines())
    buffer = io.BytesIO()
    assert copy_conn.copy_from_table('c', output=buffer, columns=['name'], format='csv') == 'COPY 3'
    assert sorted(buffer.getvalue().split()) == [b'one', b'three', b'two']
    chunks: list[bytes] = []
    assert copy_conn.copy_from_table('c', output=chunks.append) == 'COPY 3'
    assert sorted(b''.join(chunks).splitlines()) == sorted(ROWS.splitlines())


def test_copy_from_query_with_arguments(copy_conn: Connection, tmp_path: pathlib.Path) -> None:
    chunks: list[bytes] = []
    status = copy_conn.copy_from_query('SELECT g, $1::text FROM generate_series(1, $2) g',
                                   'x', 3, output=chunks.append)
    assert status == 'COPY 3'
    assert b''.join(chunks) == b'1\tx\n2\tx\n3\tx\n'
    path = tmp_path / 'q.csv'
    assert copy_conn.copy_from_query('SELECT 1 AS a', output=str(path), format='csv',
                                 header=True) == 'COPY 1'
    assert path.read_bytes() == b'a\n1\n'

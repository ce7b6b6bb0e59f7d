"""What COPY takes and gives in the sync API: the types, and the checks of what sync code passes.

The asyncio COPY methods also take coroutine functions and async iterables;
a sync caller has no event loop to run them on, so they are refused before
the call, with a message that says why (mypgdriver.sync's generated
Connection methods call these first: see tools/gen_sync.py, PRECHECKS).
"""
from __future__ import annotations

import inspect
import os
from typing import Callable, Iterable, Protocol, Union

__all__ = ('CopyOutput', 'CopySource', 'ReadsBytes', 'WritesBytes', 'check_copy_output',
           'check_copy_records', 'check_copy_source')


class ReadsBytes(Protocol):
    """A binary file object read by COPY: ``read(n)`` returns up to `n` bytes, b'' at the end."""

    def read(self, size: int, /) -> bytes: ...


class WritesBytes(Protocol):
    """A binary file object written by COPY: ``write(data)`` is called with each chunk."""

    def write(self, data: bytes, /) -> object: ...


_Path = Union[str, bytes, 'os.PathLike[str]', 'os.PathLike[bytes]']
#: copy_to_table()'s `source`: a path, a binary file object, a bytearray or
#: memoryview holding the data, or an iterable of bytes-like chunks.
CopySource = Union[_Path, ReadsBytes, bytearray, memoryview,
                   Iterable[Union[bytes, bytearray, memoryview]]]
#: copy_from_table()/copy_from_query()'s `output`: a path, a binary file
#: object, or a function called with each chunk.
CopyOutput = Union[_Path, WritesBytes, Callable[[bytes], object]]


def check_copy_output(output: object) -> None:
    """Refuse an `output` whose ``write`` (or itself) is a coroutine function."""
    write = getattr(output, 'write', output)
    if inspect.iscoroutinefunction(write):
        raise TypeError('mypgdriver.sync writes COPY data with plain functions and file '
                        'objects, not coroutine functions')


def check_copy_source(source: object) -> None:
    """Refuse an async iterable `source`, or one whose ``read`` is a coroutine function."""
    if hasattr(source, '__aiter__') or inspect.iscoroutinefunction(getattr(source, 'read', None)):
        raise TypeError('mypgdriver.sync reads COPY data from paths, file objects, '
                        'bytes-like objects and (sync) iterables, not async ones')


def check_copy_records(records: object) -> None:
    """Refuse async iterable `records`."""
    if hasattr(records, '__aiter__'):
        raise TypeError('mypgdriver.sync takes records as a (sync) iterable, '
                        'not an async iterable')

# Types of mypgdriver/dbapi/copytext.pyx as Python code sees it.
from typing import Any, Sequence

from typing_extensions import disjoint_base

__all__ = ['TextRows']

@disjoint_base
class TextRows:
    """A buffer of rows in COPY's text format."""

    @property
    def size(self) -> int: ...
    def add(self, row: Sequence[Any]) -> None: ...
    def take(self) -> bytes: ...

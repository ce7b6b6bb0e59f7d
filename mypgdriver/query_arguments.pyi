from typing import Any, Optional, Sequence

from typing_extensions import disjoint_base

__all__ = ('ConvertedQuery',)

@disjoint_base
class ConvertedQuery:
    """A query with its placeholders rewritten as ``$n``, and how to bind its values."""

    def __init__(self, text: str, names: Optional[tuple[str, ...]], count: int) -> None: ...
    @property
    def text(self) -> str: ...
    @property
    def names(self) -> Optional[tuple[str, ...]]: ...
    @property
    def count(self) -> int: ...
    def arguments(self, params: Any, allow_unused: bool = True) -> Sequence[Any]:
        """The values of ``$1``, ``$2``... taken from `params`."""

from types import TracebackType
from typing import Any, Callable, Optional

from typing_extensions import disjoint_base

__all__ = ('TransactionBlock',)

@disjoint_base
class TransactionBlock:
    """``__enter__``/``__exit__`` over an asyncio Transaction, driven by a glue's ``run``."""

    @property
    def _run(self) -> Callable[[Any], Any]: ...
    @property
    def _transaction(self) -> Any: ...
    def __init__(self, run: Callable[[Any], Any], transaction: Any) -> None: ...
    def __enter__(self) -> None: ...
    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None: ...

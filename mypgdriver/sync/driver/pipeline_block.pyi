from types import TracebackType
from typing import Any, Callable, Literal, Optional

from typing_extensions import Self, disjoint_base

from mypgdriver.core.pipeline import PipelineCore

__all__ = ('PipelineBlock',)

@disjoint_base
class PipelineBlock:
    """What ``with conn.pipeline() as p:`` enters and leaves (the base of the sync Pipeline)."""

    _session: Any
    _runner: Any
    _run: Callable[..., Any]
    _core: Optional[PipelineCore]
    _thread: int
    def __init__(self, session: Any, runner: Any) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]: ...

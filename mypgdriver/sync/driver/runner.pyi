from types import TracebackType
from typing import Any, Coroutine, Generator, Literal, Optional, Sequence, TypeVar, Union

from typing_extensions import disjoint_base

from mypgdriver.prepared import PreparedStatement
from mypgdriver.sync.driver.glue import SyncGlue

__all__ = ('CallRunner',)

_T = TypeVar('_T')

#: What run() drives: a coroutine, or the generator an awaitable's __await__ returns.
_Driven = Union[Coroutine[Any, Any, _T], Generator[Any, None, _T]]

@disjoint_base
class EndLock:
    """The lock a call ends under; ``with runner.end_lock:`` holds it (cancel.py)."""

    def __enter__(self) -> EndLock: ...
    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]: ...

@disjoint_base
class CallRunner:
    """Runs coroutines of one asyncio Connection on its SyncGlue, one thread at a time."""

    @property
    def _glue(self) -> SyncGlue: ...
    def __init__(self, glue: SyncGlue, session: Any = None) -> None: ...
    #: False: every call runs the Session's coroutine (no compiled call path).
    compiled: bool
    @property
    def compiled_calls(self) -> int: ...
    def run(self, coro: _Driven[_T]) -> _T: ...
    def execute(self, query: str, args: Sequence[Any], limit: int, timeout: Optional[float],
                want: int, rows_as: Any) -> Any: ...
    def run_prepared(self, stmt: PreparedStatement[Any], args: Sequence[Any], limit: int,
                     timeout: Optional[float], method: str, rows_as: Any = None) -> Any: ...
    def is_running(self) -> bool: ...
    def in_call(self) -> bool: ...
    def hold(self) -> bool: ...
    def release(self) -> None: ...
    @property
    def end_lock(self) -> EndLock: ...

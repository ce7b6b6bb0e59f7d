"""The size getters of both pools, written once: what they read, each pool's core answers."""
from __future__ import annotations

from typing import Generic, Protocol, TypeVar

__all__ = ('PoolSizes', 'SizedCore')


class SizedCore(Protocol):
    """What a pool's ``_core`` tells the getters (the asyncio PoolCore, the sync ThreadDriver)."""

    @property
    def shut(self) -> bool: ...

    def size(self) -> int: ...

    def idle_size(self) -> int: ...


CoreT = TypeVar('CoreT', bound=SizedCore)


class PoolSizes(Generic[CoreT]):
    """get_size(), get_idle_size() ... of a pool whose ``_core`` is a :class:`SizedCore`."""

    __slots__ = ()

    # The pool's (set in its __init__), declared for type checkers.
    _core: CoreT
    _init_size: int
    _min_size: int
    _max_size: int

    def get_size(self) -> int:
        """The number of open connections, idle and in use."""
        return self._core.size()

    def get_init_size(self) -> int:
        """The number of connections opened when the pool starts."""
        return self._init_size

    def get_min_size(self) -> int:
        """The number of connections the pool keeps open, refilling in the background."""
        return self._min_size

    def get_max_size(self) -> int:
        """The most connections the pool opens at the same time."""
        return self._max_size

    def get_idle_size(self) -> int:
        """The number of open connections nobody holds."""
        return self._core.idle_size()

    def is_closing(self) -> bool:
        """True once :meth:`close` or :meth:`terminate` was called."""
        return self._core.shut

"""KeyboardInterrupt delivered without signals, at chosen points of a call (issue 24).

Python raises KeyboardInterrupt where Python code runs or where a blocking
system call is interrupted.  The tests stand in for a real Ctrl-C at both
kinds of places: a :class:`Bomb` ticks at each of them and raises at the
N-th; :class:`LineTrace` ticks it at every line of chosen Python files
(a trace function), and a driver's wait hook (``SyncGlue.wait_hook``, the
sync pool's) ticks it before each blocking wait.

Every line is more than a real signal can reach (it lands only where the
interpreter checks for pending signals: at a function's start, a loop's
back edge, after a call of C code, in an interrupted system call), with
one exception that :class:`LineTrace` skips: when a ``with`` block ends
normally, Python reports the ``with`` line again just before it calls
``__exit__``; an exception raised there would skip ``__exit__`` (a lock
left held), where a real signal cannot land (nothing between the block's
last instruction and that call checks for signals).
"""
from __future__ import annotations

import dis
import sys
from types import CodeType, FrameType
from typing import Any, Callable, Optional


class Bomb:
    """Raises KeyboardInterrupt at the `at`-th tick (counting from 0), once; None: counts only."""

    def __init__(self, at: Optional[int]) -> None:
        self.at = at
        self.count = 0
        self.fired = False

    def tick(self) -> None:
        n = self.count
        self.count += 1
        if n == self.at and not self.fired:
            self.fired = True
            raise KeyboardInterrupt


class LineTrace:
    """Ticks `bomb` at every line run, in this thread, of the files `traced` accepts."""

    def __init__(self, bomb: Bomb, traced: Callable[[str], bool]) -> None:
        self.bomb = bomb
        self.traced = traced

    def _trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not self.traced(frame.f_code.co_filename):
            return None
        return self._trace_lines

    def _trace_lines(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == 'line' and not _at_with_exit(frame):
            self.bomb.tick()
        return self._trace_lines

    def __enter__(self) -> LineTrace:
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(None)


_WITH_ENTRIES = frozenset(('SETUP_WITH', 'BEFORE_WITH', 'SETUP_ASYNC_WITH', 'BEFORE_ASYNC_WITH'))
_with_lines: dict[CodeType, dict[int, int]] = {}


def _at_with_exit(frame: FrameType) -> bool:
    """True if `frame` is on a ``with`` line past its entry: about to call ``__exit__``."""
    code = frame.f_code
    entries = _with_lines.get(code)
    if entries is None:
        entries = {}
        line = None
        for ins in dis.get_instructions(code):
            positions = getattr(ins, 'positions', None)
            if positions is not None and positions.lineno is not None:
                line = positions.lineno
            elif ins.starts_line is not None:
                line = ins.starts_line
            if ins.opname in _WITH_ENTRIES and line is not None:
                entries.setdefault(line, ins.offset)
        _with_lines[code] = entries
    entry = entries.get(frame.f_lineno)
    return entry is not None and frame.f_lasti > entry

from typing import Any, Optional

from typing_extensions import disjoint_base

from mypgdriver.protocol.statement import StatementState
from mypgdriver.rows import Column

__all__ = ('Result', 'result_of')

@disjoint_base
class Result:
    """One result of a statement: its rows (None for a command), status tag and description."""

    rows: Optional[list[Any]]
    status: Optional[str]
    description: Optional[tuple[Column, ...]]
    def __init__(self, rows: Optional[list[Any]], status: Optional[str],
                 description: Optional[tuple[Column, ...]]) -> None: ...

def result_of(rows: list[Any], status: Optional[str], state: StatementState) -> Result:
    """The Result of one run from what ``Session.execute(..., WANT_RESULT, ...)`` answered."""

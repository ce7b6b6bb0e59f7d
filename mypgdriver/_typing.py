"""Type variables and aliases shared by the annotations of the public API.

Nothing here exists for the runtime's sake: the names only make the
signatures of Connection, PreparedStatement, Cursor and Pool readable.
"""
from __future__ import annotations

from typing import AsyncIterable, Iterable, Sequence, TypeVar, Union

from mypgdriver.protocol.record import Record

#: The row type chosen with ``record_class=``: a call that passes
#: ``record_class=MyRecord`` returns ``MyRecord`` rows.
RecordT = TypeVar('RecordT', bound=Record)

#: The row type of a result, whatever makes its rows: a Record class or a
#: row factory (``row_factory=dict_row`` returns ``dict[str, Any]`` rows).
RowT = TypeVar('RowT')
#: A row type chosen per call on an object that has one already
#: (``stmt.fetch(row_factory=dict_row)`` on a ``PreparedStatement[Record]``).
OtherRowT = TypeVar('OtherRowT')

#: The arguments of one execution: a sequence of values, or a Record
#: (which is not a ``Sequence`` to type checkers, but is iterated the same).
ArgumentRow = Union[Sequence[object], Record]

#: What executemany() and fetchmany() take: any iterable, or asynchronous
#: iterable, of argument rows.
ArgumentRows = Union[Iterable[ArgumentRow], AsyncIterable[ArgumentRow]]

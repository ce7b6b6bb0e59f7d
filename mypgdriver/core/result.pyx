# cython: language_level=3
"""Result: one result of a statement as the faces hand it out (rows, tag, description).

Compiled so that the DB-API cursor's execute() (mypgdriver/dbapi/cursorcore.pyx)
makes one per call without a Python frame.  Re-exported by
:mod:`mypgdriver.core.session_api`, which documents its use.
"""
from mypgdriver.protocol.statement cimport StatementState

from mypgdriver.rows import description_of

__all__ = ('Result', 'result_of')


cdef class Result:
    """One result of a statement: its rows (None for a command), status tag and description.

    `description` is the DB-API's: one :class:`~mypgdriver.rows.Column` per
    result column (name, type OID, size, type modifier), None when the
    statement returns no rows.
    """

    def __init__(self, rows, status, description):
        self.rows = rows
        self.status = status
        self.description = description

    def __repr__(self):
        return f'<Result {self.status!r} rows={None if self.rows is None else len(self.rows)}>'


cpdef Result result_of(list rows, status, StatementState state):
    """The Result of one run from what ``Session.execute(..., WANT_RESULT, ...)`` answered.

    For StatementRunner.run() and for a face that runs the Session's
    execute() through the sync driver's compiled call path (the DB-API:
    ``execute_call()`` of :mod:`mypgdriver.sync.connection`).
    """
    cdef Result result = Result.__new__(Result)
    result.status = status
    if state.has_rows:
        result.rows = rows
        # description_of() makes it once per statement and keeps it on the state.
        described = state.result_description
        if described is None:
            described = description_of(state)
        result.description = described.description
    return result

# cython: language_level=3
"""The DB-API cursor's compiled half: its state, execute() and fetch*().

:class:`~mypgdriver.dbapi.Cursor` (cursor.py) is a subclass of CursorCore:
what every call reads and writes (the current result, the position) lives
here as C fields, and the calls made once per statement (execute() and
the fetches) run without a Python frame of their own.  With the sync
connection's compiled call path (mypgdriver/sync/driver/runner.pyx) under
it, ``cur.execute(sql, params); cur.fetchall()`` of a cached statement is
C from the cursor to the socket and back.

Everything else stays in cursor.py, in Python, where it is read and
changed: the scripts of a parameterless execute(), the recovery from a
refused value or a wrong parameter count, executemany(), COPY, nextset()
and the attributes; execute() calls those parts (``_ran_as_script()``,
``_recover()``, ``_no_result()``) when it needs them, so each rule has one
copy.
"""
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject

from mypgdriver.core.result cimport Result, result_of
from mypgdriver.query_arguments cimport ConvertedQuery
from mypgdriver.sync.driver.runner cimport CallRunner

from mypgdriver.exceptions import pep249
from mypgdriver.paramstyle import PYFORMAT, PYFORMAT_CONVERSIONS, convert
from mypgdriver.protocol.protocol import WANT_RESULT

__all__ = ('CursorCore',)

cdef dict _CONVERSIONS = PYFORMAT_CONVERSIONS
cdef int _WANT_RESULT = WANT_RESULT


cdef class CursorCore:
    """The state and the per-statement calls of a DB-API cursor (see the module docstring)."""

    cdef public object _conn
    cdef public object _link
    cdef public object arraysize
    cdef public object row_factory_
    cdef public object _rows_as
    # The results of the last operation (a list of Result) and the index
    # of the current one; the current one's parts below.
    cdef public object _results
    cdef public Py_ssize_t _index
    cdef public list _rows
    cdef public Py_ssize_t _pos
    cdef public object _description
    cdef public object _rowcount
    cdef public object _status
    cdef public object _query
    cdef public bint _closed
    # An execute() inside a pipeline: its PipelineResult, read (and the
    # current result set from it) when the cursor's result is first needed.
    cdef public object _pending
    cdef object __weakref__
    # From the connection's link, read on every execute() without a lookup.
    cdef CallRunner _runner       # None: _execute is called instead
    cdef object _execute
    cdef object _acquire
    cdef object _release
    cdef object _in_transaction

    def __init__(self, link):
        self._link = link
        execute = link.execute
        runner = getattr(execute, '__self__', None)
        self._runner = runner if isinstance(runner, CallRunner) else None
        self._execute = execute
        self._acquire = link.lock.acquire
        self._release = link.lock.release
        self._in_transaction = link.in_transaction
        self._results = []
        self._index = 0
        self._rows = None
        self._pos = 0
        self._description = None
        self._rowcount = -1
        self._status = None
        self._query = None
        self._closed = False
        self._pending = None

    # --- running --------------------------------------------------------------------------

    def execute(self, query, params=None, *, prepare=None):
        """Run `query` with `params` bound on the server; returns the cursor itself.

        `params`: a sequence for ``%s`` placeholders, a mapping for
        ``%(name)s`` (``%%`` is a percent sign); never interpolated into the
        text.  Without `params` the query is sent as it is (no placeholders,
        ``%`` needs no doubling), and commands other than
        SELECT/INSERT/UPDATE/DELETE/MERGE/VALUES/WITH/SHOW/EXPLAIN/FETCH/CALL
        (DDL, SET...) run with the simple query protocol.  Several
        statements separated by semicolons are then allowed, and every
        one's result is kept, as in psycopg 3: the cursor shows the first,
        nextset() moves to the next.  They run one after the other (one
        round trip each), all or none applied: in autocommit mode inside a
        BEGIN ... COMMIT of their own, so VACUUM, CREATE DATABASE and the
        like fail there as in a multi-statement simple query.  A script that
        controls its transaction (BEGIN, COMMIT, SAVEPOINT...), runs COPY or
        defines a ``BEGIN ATOMIC ... END`` function body is sent whole as
        one simple query instead: the cursor then holds the last command's
        status and no rows.  Outside autocommit, the first
        statement opens a transaction (BEGIN).  `prepare` is accepted for
        psycopg 3 compatibility: statements are always prepared and cached.
        """
        cdef PyObject *found
        cdef ConvertedQuery converted
        cdef Result result
        if self._closed:
            raise pep249.InterfaceError('the cursor is closed')
        link = self._link
        # (Compiled: no signal can land between the lock's acquire() and
        # the try that releases it.)
        self._acquire()
        try:
            if params is None:
                text = query
                args = ()
            else:
                # convert()'s cache read in place; a miss converts.
                found = PyDict_GetItem(_CONVERSIONS, query) if type(query) is str else NULL
                converted = <object>found if found is not NULL else convert(query, PYFORMAT)
                text = converted.text
                args = converted.arguments(params)
            self._query = text
            if link.pipeline is not None:
                self._queue(text, args)      # (cursor.py: sent, not waited for)
                return self
            if not link.autocommit and not self._in_transaction():
                link.begin()
            if params is None and self._ran_as_script(text):
                return self
            try:
                if self._runner is not None:
                    answer = self._runner.execute(text, args, 0, None, _WANT_RESULT,
                                                  self._rows_as)
                else:
                    answer = self._execute(text, args, 0, None, _WANT_RESULT, self._rows_as)
                rows, status, state = answer
                result = result_of(rows, status, state)
            except Exception as error:
                result = self._recover(error, text, args, params)
            self._pending = None
            self._results = [result]
            self._index = 0
            self._select(result)
        finally:
            self._release()
        return self

    def _wait_pending(self):
        """If execute() ran inside a pipeline: wait for its answer and make it the current result.

        Raises the statement's error (the server's, PipelineAborted...),
        once: the cursor then has no result.
        """
        self._resolve()

    cdef int _resolve(self) except -1:
        cdef Result result
        pending = self._pending
        if pending is None:
            return 0
        self._pending = None
        result = pending.result()
        self._results = [result]
        self._index = 0
        self._select(result)
        return 0

    def _select_result(self, Result result):
        """Make `result` the current one (its rows from the start)."""
        self._select(result)

    cdef inline int _select(self, Result result) except -1:
        self._rows = result.rows
        self._pos = 0
        self._description = result.description
        self._status = result.status
        # Parsed from the tag when asked for (Cursor.rowcount): most code never looks.
        self._rowcount = None
        return 0

    # --- fetching -------------------------------------------------------------------------

    def fetchone(self):
        """The next row of the current result, or None at its end."""
        if self._pending is not None:
            self._resolve()
        cdef list rows = self._rows
        cdef Py_ssize_t pos = self._pos
        if rows is None:
            self._no_result()
        if pos < len(rows):
            self._pos = pos + 1
            return rows[pos]
        return None

    def fetchmany(self, size=None):
        """The next `size` rows (default: :attr:`arraysize`); fewer at the end."""
        if self._pending is not None:
            self._resolve()
        cdef list rows = self._rows
        cdef Py_ssize_t pos = self._pos
        cdef Py_ssize_t end
        if rows is None:
            self._no_result()
        if size is None:
            size = self.arraysize
        end = min(pos + <Py_ssize_t>size, len(rows))
        self._pos = end
        return rows[pos:end]

    def fetchall(self):
        """All the remaining rows of the current result."""
        if self._pending is not None:
            self._resolve()
        cdef list rows = self._rows
        cdef Py_ssize_t pos = self._pos
        if rows is None:
            self._no_result()
        self._pos = len(rows)
        return rows[pos:]

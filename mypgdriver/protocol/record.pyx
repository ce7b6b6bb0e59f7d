# cython: language_level=3
"""Record: the immutable result row, compatible with asyncpg's ``Record``.

A row is two pointers: the statement's :class:`RecordDescriptor` (column
names and the name -> position dict, built once per statement and shared by
every row) and a tuple of the decoded values.  Positional access, slicing,
iteration, hashing and comparison all behave like that tuple; access by
column name goes through the shared dict.

Known, intentional differences from asyncpg 0.32:

* Records pickle (and so ``copy.copy``/``copy.deepcopy`` work); asyncpg
  refuses.  Rows pickled together share one descriptor after loading.
* ``r.get(key, default)`` also accepts ``default`` as a keyword.
* ``r[None]`` raises ``KeyError(None)``; asyncpg raises a ``KeyError``
  without arguments.
* ``items()`` returns a ``zip`` iterator, ``__iter__``/``values()`` a
  ``tuple_iterator``, instead of asyncpg's own iterator types.
"""

cimport cython
from cpython.dict cimport PyDict_GetItemWithError
from cpython.long cimport PyLong_AsSsize_t
from cpython.number cimport PyIndex_Check, PyNumber_AsSsize_t
from cpython.object cimport PyObject, PyObject_RichCompare
from cpython.slice cimport PySlice_Check
from cpython.tuple cimport PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check

import uuid as _uuid


cdef extern from "Python.h":
    # Borrowed-pointer forms, so scanning a row touches no refcounts.
    ctypedef struct PyTypeObject
    PyTypeObject *Py_TYPE(PyObject *obj)
    bint PyType_IS_GC(PyTypeObject *tp)
    bint PyObject_GC_IsTracked(PyObject *obj)
    void PyObject_GC_UnTrack(void *obj)
    bint PyTuple_CheckExact(PyObject *obj)
    PyObject *PyTuple_GET_ITEM(object tup, Py_ssize_t i)

    # Guards repr() against a row that (through a mutable value) contains
    # itself, the same way list and dict reprs do.
    int Py_ReprEnter(object obj) except -1
    void Py_ReprLeave(object obj)


@cython.final
cdef class RecordDescriptor:
    """Column names of one statement's result, shared by all of its rows.

    ``RecordDescriptor(names)`` takes the column names in result order.  When
    a name occurs more than once, lookup by name finds its *last* column, as
    in asyncpg (and as ``dict(record.items())`` would).
    """

    def __cinit__(self, tuple names not None):
        # __cinit__ rather than __init__: even RecordDescriptor.__new__()
        # yields a usable descriptor, so a Record can never see None here.
        cdef Py_ssize_t i
        cdef dict index = {}
        for i in range(PyTuple_GET_SIZE(names)):
            name = names[i]
            if not PyUnicode_Check(name):
                raise TypeError(
                    f"column names must be str, got {type(name).__name__} "
                    f"at position {i}"
                )
            index[name] = i
        self.names = names
        self.index = index

    def __reduce__(self):
        return (RecordDescriptor, (self.names,))

    def __repr__(self) -> str:
        return f"RecordDescriptor({self.names!r})"


cdef RecordDescriptor _EMPTY_DESCRIPTOR = RecordDescriptor(())


cdef inline Py_ssize_t _column_position(RecordDescriptor desc, object key) except -2:
    """Position of the column named ``key``, or -1 if there is none."""
    cdef PyObject *found
    # Column names are all str (checked by RecordDescriptor), so any other
    # key is simply missing; skipping the dict for it also means unhashable
    # keys report a missing column, as in asyncpg, instead of TypeError.
    if not PyUnicode_Check(key):
        return -1
    found = PyDict_GetItemWithError(desc.index, key)
    if found is NULL:
        return -1
    return PyLong_AsSsize_t(<object>found)


@cython.freelist(256)
cdef class Record:
    """One result row: a read-only sequence of values with named columns.

    ``r[0]``, ``r[-1]`` and ``r[1:3]`` index the values like a tuple;
    ``r['name']`` looks a column up by name.  ``keys()``, ``values()`` and
    ``items()`` iterate like a mapping's, but ``iter(r)`` yields the values
    and ``'name' in r`` tests the column names.  A Record compares and hashes
    equal to the tuple of its values.  Records are built by the driver; they
    cannot be created by calling the class.
    """

    def __cinit__(self, *args, **kwargs):
        # Rows come from make_record(), which overwrites both fields; the
        # defaults only keep Record.__new__(Record) from making an object
        # that would crash on first use.
        self._desc = _EMPTY_DESCRIPTOR
        self._values = ()

    def __init__(self, *args, **kwargs):
        # make_record() calls tp_new directly and never reaches __init__, so
        # this only stops user code from building rows by hand, as asyncpg does.
        cls = type(self)
        raise TypeError(f"cannot create '{cls.__module__}.{cls.__qualname__}' instances")

    def __len__(self) -> int:
        return PyTuple_GET_SIZE(self._values)

    def __getitem__(self, key):
        cdef Py_ssize_t i, n
        if PyIndex_Check(key):
            # Bounds are checked here because the extension is compiled with
            # boundscheck and wraparound off.
            i = PyNumber_AsSsize_t(key, IndexError)
            n = PyTuple_GET_SIZE(self._values)
            if i < 0:
                i += n
            if i < 0 or i >= n:
                raise IndexError("record index out of range")
            return self._values[i]
        if PySlice_Check(key):
            return self._values[key]
        i = _column_position(self._desc, key)
        if i < 0:
            raise KeyError(key)
        return self._values[i]

    def get(self, key, default=None):
        """Return the value of column ``key``, or ``default`` if there is none."""
        cdef Py_ssize_t i = _column_position(self._desc, key)
        if i < 0:
            return default
        return self._values[i]

    def keys(self):
        """Iterate over the column names, in result order."""
        return iter(self._desc.names)

    def values(self):
        """Iterate over the values, in result order."""
        return iter(self._values)

    def items(self):
        """Iterate over ``(column name, value)`` pairs, in result order."""
        return zip(self._desc.names, self._values)

    def __iter__(self):
        return iter(self._values)

    def __contains__(self, key) -> bool:
        # Membership is by column name, like a mapping (asyncpg does the same).
        return _column_position(self._desc, key) >= 0

    def __richcmp__(self, other, int op):
        cdef tuple theirs
        if isinstance(other, Record):
            theirs = (<Record>other)._values
        elif isinstance(other, tuple):
            theirs = <tuple>other
        else:
            return NotImplemented
        return PyObject_RichCompare(self._values, theirs, op)

    def __hash__(self):
        return hash(self._values)

    def __repr__(self) -> str:
        name = type(self).__name__
        if PyTuple_GET_SIZE(self._values) == 0:
            return f"<{name}>"
        if Py_ReprEnter(self):
            return f"<{name} ...>"
        try:
            fields = " ".join([
                f"{column}={value!r}"
                for column, value in zip(self._desc.names, self._values)
            ])
        finally:
            Py_ReprLeave(self)
        return f"<{name} {fields}>"

    def __reduce__(self):
        # The descriptor is pickled as an object of its own, so the pickle
        # memo stores it once for a whole list of rows and the loaded rows
        # share it again.
        state = getattr(self, "__dict__", None) or None
        return (_restore_record, (type(self), self._desc, self._values), state)


cdef Record make_record(type cls, RecordDescriptor desc, tuple values):
    """Build a row of ``cls`` (Record or a subclass) without calling __init__.

    The caller guarantees ``len(values) == len(desc.names)``; this runs once
    per result row, so it does no checks of its own.
    """
    cdef Record record
    if cls is Record:
        # Calls Record's tp_new function directly (and so its freelist).
        record = Record.__new__(Record)
    else:
        # Through the subclass's tp_new slot; checked cast because a Python
        # subclass could override __new__ to return something else.
        record = <Record?>cls.__new__(cls)
    record._desc = desc
    record._values = values
    if cls is Record and PyTuple_CheckExact(<PyObject *>values) and _holds_only_atomic(values):
        # Untrack what CPython's collector would untrack anyway (see
        # _holds_only_atomic), before it gets to scan rows again and again.
        PyObject_GC_UnTrack(<void *>record)
        PyObject_GC_UnTrack(<void *>values)
    return record


cdef PyTypeObject *_UUID_TYPE = <PyTypeObject *>_uuid.UUID


cdef inline bint _holds_only_atomic(tuple values):
    """True if no value can ever lead back to the row (no cycle possible).

    The same test CPython applies before untracking a tuple: each item is
    either not a GC object at all (int, str, float, None, bytes, datetime...)
    or an untracked exact tuple.  An untracked exact Record (a composite
    value) is as safe as such a tuple, by the same argument, and so is an
    untracked exact uuid.UUID (immutable: its slots cannot be reassigned; the
    uuid codec untracks the ones it makes).  Any other container might later
    be mutated to refer to the row, so it keeps the row tracked.  The type-flag test is
    an inline macro; PyObject_IS_GC() would be a function call per value.
    """
    cdef Py_ssize_t i
    cdef PyObject *item
    cdef PyTypeObject *item_type
    for i in range(PyTuple_GET_SIZE(values)):
        item = PyTuple_GET_ITEM(values, i)
        item_type = Py_TYPE(item)
        if PyType_IS_GC(item_type) and (
            not (item_type is <PyTypeObject *>tuple or item_type is <PyTypeObject *>Record
                 or item_type is _UUID_TYPE)
            or PyObject_GC_IsTracked(item)
        ):
            return False
    return True


def _restore_record(type cls, RecordDescriptor desc not None, tuple values not None):
    """Unpickling hook for Record; checks its input, as pickles are data."""
    if not issubclass(cls, Record):
        raise TypeError(f"{cls.__qualname__} is not a Record subclass")
    if PyTuple_GET_SIZE(values) != PyTuple_GET_SIZE(desc.names):
        raise ValueError(
            f"record has {len(desc.names)} columns but {len(values)} values"
        )
    return make_record(cls, desc, values)


def _make_record_for_tests(names, values, cls=Record):
    """Build a Record from column names and values, without a server."""
    return _restore_record(cls, RecordDescriptor(tuple(names)), tuple(values))

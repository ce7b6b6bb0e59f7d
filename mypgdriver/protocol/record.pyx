# cython: language_level=3
"""Record: the immutable result row, compatible with asyncpg's ``Record``.

A row is one variable-size object, like a tuple: the values are stored in
the row itself, after a pointer to the statement's :class:`RecordDescriptor`
(column names and the name -> position dict, built once per statement and
shared by every row).  Positional access, slicing, iteration, hashing and
comparison all behave like the tuple of the values; access by column name
goes through the shared dict.  The type is written in C (record_type.c,
which says why); this module holds the descriptor, the pickling hooks and
the cdef API the protocol builds rows with (record.pxd).

Known, intentional differences from asyncpg 0.32:

* Records pickle (and so ``copy.copy``/``copy.deepcopy`` work); asyncpg
  refuses.  Rows pickled together share one descriptor after loading.
* ``r.get(key, default)`` also accepts ``default`` as a keyword.
* ``r[None]`` raises ``KeyError(None)``; asyncpg raises a ``KeyError``
  without arguments.
* ``__iter__``, ``values()`` and ``items()`` return a ``RecordIterator``
  instead of asyncpg's own iterator types; ``keys()`` a ``tuple_iterator``.
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.tuple cimport PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check

import uuid as _uuid


cdef extern from "mypgdriver/protocol/record_type.h":
    ctypedef struct MpgRecordDescriptorObject:
        PyObject *names
        PyObject *index

    PyTypeObject MpgRecord_Type

    int mpg_record_type_init(object descriptor_type, object empty_descriptor,
                             object uuid_type, object restore_func) except -1
    object mpg_record_new(type cls, object desc, Py_ssize_t n)
    int mpg_record_finish(object record) except -1


@cython.final
cdef class RecordDescriptor:
    """Column names of one statement's result, shared by all of its rows.

    ``RecordDescriptor(names)`` takes the column names in result order.  When
    a name occurs more than once, lookup by name finds its *last* column, as
    in asyncpg (and as ``dict(record.items())`` would).
    """
    def __cinit__(self, tuple names not None):
        # __cinit__ rather than __init__: even RecordDescriptor.__new__()
        # yields a usable descriptor, so the C code can never see None here.
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


cdef object record_new(type cls, RecordDescriptor desc, Py_ssize_t n):
    return mpg_record_new(cls, desc, n)


cdef object record_finish(object record):
    mpg_record_finish(record)
    return record


cdef object make_record(type cls, RecordDescriptor desc, tuple values):
    cdef Py_ssize_t i
    record = mpg_record_new(cls, desc, PyTuple_GET_SIZE(values))
    for i in range(PyTuple_GET_SIZE(values)):
        record_set_item(record, i, values[i])
    mpg_record_finish(record)
    return record


def _restore_record(type cls, RecordDescriptor desc not None, tuple values not None):
    """Unpickling hook for Record; checks its input, as pickles are data."""
    if not issubclass(cls, Record):
        raise TypeError(f"{cls.__qualname__} is not a Record subclass")
    return make_record(cls, desc, values)


cdef int _check_descriptor_layout() except -1:
    # The C code reads descriptors through record_type.h's struct; a change
    # to RecordDescriptor's attributes must not make it read garbage.
    cdef RecordDescriptor probe = RecordDescriptor(("a",))
    cdef MpgRecordDescriptorObject *seen = <MpgRecordDescriptorObject *>probe
    if (seen.names is not <PyObject *>probe.names
            or seen.index is not <PyObject *>probe.index
            or RecordDescriptor.__basicsize__ != sizeof(MpgRecordDescriptorObject)):
        raise ImportError("RecordDescriptor's layout does not match record_type.h")
    return 0


_check_descriptor_layout()
mpg_record_type_init(RecordDescriptor, _EMPTY_DESCRIPTOR, _uuid.UUID, _restore_record)
Record = <type><PyObject *>&MpgRecord_Type


def _make_record_for_tests(names, values, cls=Record):
    """Build a Record from column names and values, without a server."""
    return _restore_record(cls, RecordDescriptor(tuple(names)), tuple(values))

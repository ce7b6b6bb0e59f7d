# Reading and setting the __slots__ of a Python class from C, as a cdef class's fields are.
#
# PooledConnection (core.pyx) is a Python class with __slots__ because the
# asyncio pool's Python code uses its attributes at every checkout, and the
# interpreter's specialized slot access is cheaper there than a cdef
# class's descriptors.  From C (the core, the sync pool's thread driver) a
# plain `entry.con` is a generic attribute look-up instead: type dict,
# descriptor, call.  A slot is a PyObject* at a fixed offset in the object,
# the same for every instance of the class and of its subclasses, which the
# slot's member descriptor records; these helpers read and set it there.
#
# read_slot/write_slot do so for an object whose type is exactly the class
# the offset was taken from, and fall back to getattr/setattr for anything
# else (a subclass, a stand-in), so a wrong object costs time, never memory.
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
    # An object slot, AttributeError while unset (NULL).
    int T_OBJECT_EX


cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member


cdef inline Py_ssize_t slot_offset(type cls, str name) except -1:
    """Where the slot `name` of `cls`'s instances is (checked to be an object slot)."""
    descr = cls.__dict__[name]
    if type(descr).__name__ != 'member_descriptor':
        raise TypeError(f'{cls.__name__}.{name} is not a slot')
    if (<PyMemberDescrObject*>descr).d_member.type != T_OBJECT_EX:
        raise TypeError(f'{cls.__name__}.{name} is not an object slot')
    return (<PyMemberDescrObject*>descr).d_member.offset


cdef inline object get_slot(object obj, Py_ssize_t offset, str name):
    """obj.<name>, read at `offset` (AttributeError while unset, as Python raises)."""
    cdef PyObject *value = (<PyObject**>((<char*><PyObject*>obj) + offset))[0]
    if value == NULL:
        raise AttributeError(name)
    return <object>value


cdef inline void set_slot(object obj, Py_ssize_t offset, object value):
    """obj.<name> = value, at `offset` (the old value is released last, as Python does)."""
    cdef PyObject **field = <PyObject**>((<char*><PyObject*>obj) + offset)
    cdef PyObject *old = field[0]
    Py_INCREF(value)
    field[0] = <PyObject*>value
    Py_XDECREF(old)


cdef inline object read_slot(object obj, type cls, Py_ssize_t offset, str name):
    """obj.<name>, at `offset` if `obj` is exactly a `cls` (whose slot `name` is there)."""
    if type(obj) is cls:
        return get_slot(obj, offset, name)
    return getattr(obj, name)


cdef inline int write_slot(object obj, type cls, Py_ssize_t offset, str name,
                           object value) except -1:
    """obj.<name> = value, at `offset` if `obj` is exactly a `cls` (whose slot `name` is there)."""
    if type(obj) is cls:
        set_slot(obj, offset, value)
    else:
        setattr(obj, name, value)
    return 0

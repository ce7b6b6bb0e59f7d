/* Record, the result row: its memory layout and the inline helper that
 * other extension modules use to fill a row (see record_type.c).
 *
 * Every module that cimports mypgdriver.protocol.record includes this file,
 * but each extension module is a separate shared object that cannot resolve
 * symbols of record.so.  So only struct layouts and static inline functions
 * may be used outside record.so; the functions declared at the bottom are
 * reached by other modules through record.pyx's cdef wrappers (Cython's
 * cross-module C API).
 */
#ifndef MYPGDRIVER_RECORD_TYPE_H
#define MYPGDRIVER_RECORD_TYPE_H

#include <Python.h>

/* The layout of the Cython class RecordDescriptor (record.pyx).  Declared
 * here so that C can read a row's column names without attribute lookups;
 * record.pyx checks at import time that Cython laid the class out this way. */
typedef struct {
    PyObject_HEAD
    PyObject *names;    /* tuple of str, in result order */
    PyObject *index;    /* dict: name -> position of its last column */
} MpgRecordDescriptorObject;

/* One row: the header, the shared descriptor, then the values themselves,
 * in the same allocation (like a tuple's items). */
typedef struct {
    PyObject_VAR_HEAD
    MpgRecordDescriptorObject *desc;
    PyObject *ob_item[];
} MpgRecordObject;

/* Store a new reference to `value` as item `i` of a row made by
 * mpg_record_new() and not yet finished.  Like PyTuple_SET_ITEM, for filling
 * a fresh row only: it does not release a previous item. */
static inline void
MpgRecord_SetItem(PyObject *record, Py_ssize_t i, PyObject *value)
{
    Py_INCREF(value);
    ((MpgRecordObject *)record)->ob_item[i] = value;
}

/* Defined in record_type.c; for record.pyx only (see above). */
extern PyTypeObject MpgRecord_Type;

int mpg_record_type_init(PyObject *descriptor_type, PyObject *empty_descriptor,
                         PyObject *uuid_type, PyObject *restore_func);
PyObject *mpg_record_new(PyTypeObject *cls, PyObject *desc, Py_ssize_t n);
int mpg_record_finish(PyObject *record);

#endif /* MYPGDRIVER_RECORD_TYPE_H */

/* Record: the result row, as a single variable-size object.
 *
 * Why this is C and not Cython: a row used to be a Cython object holding a
 * values tuple, i.e. two allocations, two deallocations and two objects for
 * the garbage collector per row.  Keeping the values inside the row object
 * itself, as a tuple keeps its items, needs a variable-size type, and Cython
 * 3 refuses those ("inheritance from PyVarObject types like 'tuple' is not
 * currently supported"), which meets the project's rule for hand-written
 * C: a benchmark shows Cython cannot get there.  decode_row() over DataRow
 * payloads, ns per row including its release, Python 3.11, best of 5,
 * before -> after (method and the fetch benchmark in the commit message):
 *
 *     1 int4 column               45 -> 21
 *     4 columns (int, text,       77 -> 55
 *       float8, NULL)
 *     10 int8 columns             88 -> 66-74
 *     1 int4, Record subclass     83 -> 62
 *
 * Of that, the per-size free lists below save about 6 ns, and skipping the
 * trashcan for rows of plain values about 5 ns.
 *
 * The rest of the module (RecordDescriptor, pickling hooks, the cdef API
 * used by the protocol) stays in record.pyx; this file only defines the two
 * types below and the functions declared in record_type.h.
 *
 * Rows behave like the tuple of their values for indexing, slicing,
 * iteration, len, hashing and comparison, and like a mapping for str keys,
 * get(), keys(), values(), items() and `in` (which tests column names).
 */
#include "mypgdriver/protocol/record_type.h"

#include <stddef.h>
#include <string.h>

/* Set once by mpg_record_type_init(), from record.pyx. */
static PyTypeObject *descriptor_type;       /* RecordDescriptor */
static PyObject *empty_descriptor;          /* RecordDescriptor(()) */
static PyTypeObject *uuid_type;             /* uuid.UUID */
static PyObject *restore_func;              /* record._restore_record */

static PyTypeObject MpgRecordIter_Type;


/* --- free lists ----------------------------------------------------------
 *
 * Result rows are made and dropped by the thousand, mostly with few columns,
 * so exact Records of 1 to RECORD_FREELIST_SIZES-1 values are kept for reuse
 * instead of going back to the allocator, as CPython does for small tuples.
 * A free row is linked to the next one through its first item slot.
 */
#define RECORD_FREELIST_SIZES 16
#define RECORD_FREELIST_DEPTH 2000

static MpgRecordObject *free_rows[RECORD_FREELIST_SIZES];
static int free_row_count[RECORD_FREELIST_SIZES];


/* --- construction ------------------------------------------------------- */

/* A row of `cls` with `n` NULL items, not tracked by the collector until
 * mpg_record_finish(): a half-filled row must not be reachable through
 * gc.get_objects(), and most rows are never tracked at all. */
PyObject *
mpg_record_new(PyTypeObject *cls, PyObject *desc, Py_ssize_t n)
{
    MpgRecordObject *self;

    if (Py_TYPE(desc) != descriptor_type) {
        PyErr_Format(PyExc_TypeError, "expected a RecordDescriptor, got %.200s",
                     Py_TYPE(desc)->tp_name);
        return NULL;
    }
    if (PyTuple_GET_SIZE(((MpgRecordDescriptorObject *)desc)->names) != n) {
        /* Every method relies on one name per value. */
        PyErr_Format(PyExc_ValueError, "record has %zd columns but %zd values",
                     PyTuple_GET_SIZE(((MpgRecordDescriptorObject *)desc)->names), n);
        return NULL;
    }
    if (cls == &MpgRecord_Type) {
        if (n > 0 && n < RECORD_FREELIST_SIZES && free_rows[n] != NULL) {
            self = free_rows[n];
            free_rows[n] = (MpgRecordObject *)self->ob_item[0];
            free_row_count[n]--;
            PyObject_InitVar((PyVarObject *)self, &MpgRecord_Type, n);
        }
        else {
            self = PyObject_GC_NewVar(MpgRecordObject, &MpgRecord_Type, n);
            if (self == NULL) {
                return NULL;
            }
        }
    }
    else {
        /* A Python subclass (connect(record_class=...)): its own allocator
         * makes room for the instance __dict__ after the items. */
        if (!PyType_IsSubtype(cls, &MpgRecord_Type)) {
            PyErr_Format(PyExc_TypeError, "%.200s is not a Record subclass", cls->tp_name);
            return NULL;
        }
        self = (MpgRecordObject *)cls->tp_alloc(cls, n);
        if (self == NULL) {
            return NULL;
        }
        PyObject_GC_UnTrack(self);
    }
    Py_INCREF(desc);
    self->desc = (MpgRecordDescriptorObject *)desc;
    if (n <= 4) {
        /* Most rows are narrow: a libc memset call costs more than these
         * stores (callgrind: ~20 instructions per row). */
        switch (n) {
        case 4: self->ob_item[3] = NULL; /* fall through */
        case 3: self->ob_item[2] = NULL; /* fall through */
        case 2: self->ob_item[1] = NULL; /* fall through */
        case 1: self->ob_item[0] = NULL; /* fall through */
        default: break;
        }
    }
    else {
        memset(self->ob_item, 0, (size_t)n * sizeof(PyObject *));
    }
    return (PyObject *)self;
}

/* Can `item` never lead back to the row that holds it?  The same test
 * CPython applies before untracking a tuple: either not a GC object at all
 * (int, str, float, None, bytes, datetime...) or an untracked exact tuple.
 * An untracked exact Record (a composite value) is as safe, by the same
 * argument, and so is an untracked exact uuid.UUID (its slots cannot be
 * reassigned; the uuid codec untracks the ones it makes).  Any other
 * container could later be mutated to refer to the row. */
static inline int
is_atomic(PyObject *item)
{
    PyTypeObject *tp = Py_TYPE(item);
    if (!PyType_IS_GC(tp)) {
        return 1;
    }
    return (tp == &PyTuple_Type || tp == &MpgRecord_Type || tp == uuid_type)
        && !PyObject_GC_IsTracked(item);
}

/* Called once all items of a row from mpg_record_new() are set: start
 * tracking the row, unless it is an exact Record of atomic values, which can
 * never be part of a reference cycle.  Untracking those up front spares the
 * collector from scanning every row of a large result again and again. */
int
mpg_record_finish(PyObject *record)
{
    MpgRecordObject *self = (MpgRecordObject *)record;
    Py_ssize_t i, n = Py_SIZE(self);
    int atomic = Py_IS_TYPE(record, &MpgRecord_Type);

    for (i = 0; i < n; i++) {
        PyObject *item = self->ob_item[i];
        if (item == NULL) {
            PyErr_Format(PyExc_SystemError, "record item %zd was not set", i);
            return -1;
        }
        if (atomic && !is_atomic(item)) {
            atomic = 0;
        }
    }
    if (!atomic && !PyObject_GC_IsTracked(record)) {
        PyObject_GC_Track(record);
    }
    return 0;
}

/* Record.__new__(cls): an empty row, so that even this unsupported way of
 * making one never yields an object that crashes when used. */
static PyObject *
record_tp_new(PyTypeObject *cls, PyObject *args, PyObject *kwds)
{
    PyObject *self = mpg_record_new(cls, empty_descriptor, 0);
    if (self != NULL && mpg_record_finish(self) < 0) {
        Py_CLEAR(self);
    }
    return self;
}

/* Rows are built by the driver only, as in asyncpg; type_call runs this
 * right after record_tp_new, so calling the class always fails. */
static int
record_tp_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *cls = (PyObject *)Py_TYPE(self);
    PyObject *module = PyObject_GetAttrString(cls, "__module__");
    PyObject *qualname = module ? PyObject_GetAttrString(cls, "__qualname__") : NULL;
    if (qualname != NULL) {
        PyErr_Format(PyExc_TypeError, "cannot create '%S.%S' instances", module, qualname);
    }
    Py_XDECREF(module);
    Py_XDECREF(qualname);
    return -1;
}

/* Drops the descriptor and returns the memory (values already released). */
static void
record_free(MpgRecordObject *self)
{
    Py_ssize_t n = Py_SIZE(self);

    Py_XDECREF(self->desc);
    if (Py_IS_TYPE(self, &MpgRecord_Type)
            && n > 0 && n < RECORD_FREELIST_SIZES
            && free_row_count[n] < RECORD_FREELIST_DEPTH) {
        self->ob_item[0] = (PyObject *)free_rows[n];
        free_rows[n] = self;
        free_row_count[n]++;
    }
    else {
        Py_TYPE(self)->tp_free((PyObject *)self);
    }
}

static void
record_dealloc(MpgRecordObject *self)
{
    Py_ssize_t i, n = Py_SIZE(self);

    PyObject_GC_UnTrack(self);
    /* A value that is not a container (not a GC type) cannot lead to
     * another row's dealloc, so those are released directly, up to the
     * first container. */
    for (i = 0; i < n; i++) {
        PyObject *item = self->ob_item[i];
        if (item != NULL && PyType_IS_GC(Py_TYPE(item))) {
            break;
        }
        self->ob_item[i] = NULL;
        Py_XDECREF(item);
    }
    if (i == n) {
        record_free(self);
        return;
    }
    /* The trashcan turns the release of deeply nested rows (composites in
     * composites, or a crafted pickle) into a loop instead of a C recursion
     * that could overflow the stack, as for tuples.  Entering it costs about
     * 5 ns, a quarter of the whole cost of a one-column row, hence the
     * detour above.  If it postpones this row, the row comes back here
     * later, with the values released so far already NULL. */
    Py_TRASHCAN_BEGIN(self, record_dealloc)
    for (; i < n; i++) {
        Py_XDECREF(self->ob_item[i]);
    }
    record_free(self);
    Py_TRASHCAN_END
}

/* No tp_clear, as for tuples: a row is immutable, so any cycle through it
 * also goes through a mutable object (a list, a dict, a subclass instance's
 * __dict__), and clearing that one breaks the cycle.  Rows never have NULL
 * items once finished, so no code ever needs to check for them. */
static int
record_traverse(MpgRecordObject *self, visitproc visit, void *arg)
{
    Py_ssize_t i;
    for (i = Py_SIZE(self); --i >= 0;) {
        Py_VISIT(self->ob_item[i]);
    }
    return 0;
}

/* A new tuple of the row's values. */
static PyObject *
values_tuple(MpgRecordObject *self)
{
    Py_ssize_t i, n = Py_SIZE(self);
    PyObject *result = PyTuple_New(n);
    if (result == NULL) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        Py_INCREF(self->ob_item[i]);
        PyTuple_SET_ITEM(result, i, self->ob_item[i]);
    }
    return result;
}


/* --- access by position and by name -------------------------------------- */

/* Position of the column named `key`: -1 if there is none, -2 on error.
 * Column names are all str (RecordDescriptor checks), so any other key is
 * simply missing; skipping the dict for it also means an unhashable key
 * reports a missing column, as in asyncpg, instead of a TypeError. */
static Py_ssize_t
column_position(MpgRecordObject *self, PyObject *key)
{
    PyObject *position;
    if (!PyUnicode_Check(key)) {
        return -1;
    }
    position = PyDict_GetItemWithError(self->desc->index, key);
    if (position == NULL) {
        return PyErr_Occurred() ? -2 : -1;
    }
    return PyLong_AsSsize_t(position);
}

static PyObject *
missing_column(PyObject *key)
{
    /* KeyError(key), also when key is a tuple: PyErr_SetObject would take a
     * tuple as the exception's argument list. */
    PyObject *exc = PyObject_CallOneArg(PyExc_KeyError, key);
    if (exc != NULL) {
        PyErr_SetObject(PyExc_KeyError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static Py_ssize_t
record_length(MpgRecordObject *self)
{
    return Py_SIZE(self);
}

/* sq_item: reversed() and other sequence-protocol users need it. */
static PyObject *
record_item(MpgRecordObject *self, Py_ssize_t i)
{
    if (i < 0 || i >= Py_SIZE(self)) {
        PyErr_SetString(PyExc_IndexError, "record index out of range");
        return NULL;
    }
    Py_INCREF(self->ob_item[i]);
    return self->ob_item[i];
}

static PyObject *
record_slice(MpgRecordObject *self, PyObject *key)
{
    Py_ssize_t start, stop, step, count, i, at;
    PyObject *result;

    if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
        return NULL;
    }
    count = PySlice_AdjustIndices(Py_SIZE(self), &start, &stop, step);
    result = PyTuple_New(count);
    if (result == NULL) {
        return NULL;
    }
    for (i = 0, at = start; i < count; i++, at += step) {
        Py_INCREF(self->ob_item[at]);
        PyTuple_SET_ITEM(result, i, self->ob_item[at]);
    }
    return result;
}

static PyObject *
record_subscript(MpgRecordObject *self, PyObject *key)
{
    Py_ssize_t i;

    if (PyUnicode_Check(key)) {
        i = column_position(self, key);
        if (i < 0) {
            return i == -1 ? missing_column(key) : NULL;
        }
        Py_INCREF(self->ob_item[i]);
        return self->ob_item[i];
    }
    if (PyIndex_Check(key)) {
        i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (i < 0) {
            i += Py_SIZE(self);
        }
        return record_item(self, i);
    }
    if (PySlice_Check(key)) {
        return record_slice(self, key);
    }
    return missing_column(key);
}

static int
record_contains(MpgRecordObject *self, PyObject *key)
{
    /* Membership is by column name, like a mapping (asyncpg does the same). */
    Py_ssize_t i = column_position(self, key);
    return i == -2 ? -1 : i >= 0;
}

static PyObject *
record_get(MpgRecordObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* Fast-call convention: PyArg_ParseTupleAndKeywords made r.get(name)
     * twice as slow as r[name]. */
    PyObject *key = nargs > 0 ? args[0] : NULL;
    PyObject *fallback = nargs > 1 ? args[1] : NULL;
    Py_ssize_t i, nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;

    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "get() takes at most 2 arguments (%zd given)", nargs + nkw);
        return NULL;
    }
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        PyObject **slot;
        if (PyUnicode_CompareWithASCIIString(name, "key") == 0) {
            slot = &key;
        }
        else if (PyUnicode_CompareWithASCIIString(name, "default") == 0) {
            slot = &fallback;
        }
        else {
            PyErr_Format(PyExc_TypeError, "get() got an unexpected keyword argument '%U'", name);
            return NULL;
        }
        if (*slot != NULL) {
            PyErr_Format(PyExc_TypeError, "get() got multiple values for argument '%U'", name);
            return NULL;
        }
        *slot = args[nargs + i];
    }
    if (key == NULL) {
        PyErr_SetString(PyExc_TypeError, "get() missing required argument 'key' (pos 1)");
        return NULL;
    }
    i = column_position(self, key);
    if (i == -2) {
        return NULL;
    }
    if (i == -1) {
        if (fallback == NULL) {
            Py_RETURN_NONE;
        }
        Py_INCREF(fallback);
        return fallback;
    }
    Py_INCREF(self->ob_item[i]);
    return self->ob_item[i];
}


/* --- iteration ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    MpgRecordObject *record;    /* NULL once exhausted */
    Py_ssize_t next;
    int pairs;                  /* yield (name, value) instead of value */
} MpgRecordIterObject;

static PyObject *
record_iterator(MpgRecordObject *self, int pairs)
{
    MpgRecordIterObject *it = PyObject_GC_New(MpgRecordIterObject, &MpgRecordIter_Type);
    if (it == NULL) {
        return NULL;
    }
    Py_INCREF(self);
    it->record = self;
    it->next = 0;
    it->pairs = pairs;
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

static PyObject *
record_iter(MpgRecordObject *self)
{
    return record_iterator(self, 0);
}

static PyObject *
record_values(MpgRecordObject *self, PyObject *unused)
{
    return record_iterator(self, 0);
}

static PyObject *
record_items(MpgRecordObject *self, PyObject *unused)
{
    return record_iterator(self, 1);
}

static PyObject *
record_keys(MpgRecordObject *self, PyObject *unused)
{
    return PyObject_GetIter(self->desc->names);
}

static void
record_iter_dealloc(MpgRecordIterObject *it)
{
    PyObject_GC_UnTrack(it);
    Py_XDECREF(it->record);
    PyObject_GC_Del(it);
}

static int
record_iter_traverse(MpgRecordIterObject *it, visitproc visit, void *arg)
{
    Py_VISIT(it->record);
    return 0;
}

static PyObject *
record_iter_next(MpgRecordIterObject *it)
{
    MpgRecordObject *record = it->record;
    Py_ssize_t i = it->next;

    if (record == NULL) {
        return NULL;
    }
    if (i >= Py_SIZE(record)) {
        /* Drop the row now rather than when the iterator goes away. */
        it->record = NULL;
        Py_DECREF(record);
        return NULL;
    }
    it->next = i + 1;
    if (it->pairs) {
        return PyTuple_Pack(2, PyTuple_GET_ITEM(record->desc->names, i), record->ob_item[i]);
    }
    Py_INCREF(record->ob_item[i]);
    return record->ob_item[i];
}

static PyObject *
record_iter_length_hint(MpgRecordIterObject *it, PyObject *unused)
{
    Py_ssize_t left = it->record == NULL ? 0 : Py_SIZE(it->record) - it->next;
    return PyLong_FromSsize_t(left);
}

static PyMethodDef record_iter_methods[] = {
    {"__length_hint__", (PyCFunction)record_iter_length_hint, METH_NOARGS,
     "Number of items left."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MpgRecordIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mypgdriver.protocol.record.RecordIterator",
    .tp_basicsize = sizeof(MpgRecordIterObject),
    .tp_dealloc = (destructor)record_iter_dealloc,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Iterator over a Record's values or (name, value) pairs.",
    .tp_traverse = (traverseproc)record_iter_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)record_iter_next,
    .tp_methods = record_iter_methods,
};


/* --- comparison, hashing, repr, pickling ----------------------------------- */

/* The values of a Record or a tuple, as an array; 0 for anything else. */
static int
values_of(PyObject *obj, PyObject ***items, Py_ssize_t *n)
{
    if (PyObject_TypeCheck(obj, &MpgRecord_Type)) {
        *items = ((MpgRecordObject *)obj)->ob_item;
    }
    else if (PyTuple_Check(obj)) {
        *items = ((PyTupleObject *)obj)->ob_item;
    }
    else {
        return 0;
    }
    *n = Py_SIZE(obj);
    return 1;
}

/* A Record compares with Records and tuples as the tuple of its values
 * would, column names aside: element by element, the first unequal pair
 * deciding (equal by identity counts, as for tuples), else the lengths. */
static PyObject *
record_richcompare(PyObject *self, PyObject *other, int op)
{
    PyObject **mine, **theirs;
    Py_ssize_t my_count, their_count, i, common;

    if (!values_of(self, &mine, &my_count) || !values_of(other, &theirs, &their_count)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    common = my_count < their_count ? my_count : their_count;
    for (i = 0; i < common; i++) {
        int equal = PyObject_RichCompareBool(mine[i], theirs[i], Py_EQ);
        if (equal < 0) {
            return NULL;
        }
        if (!equal) {
            break;
        }
    }
    if (i == common) {
        Py_RETURN_RICHCOMPARE(my_count, their_count, op);
    }
    if (op == Py_EQ) {
        Py_RETURN_FALSE;
    }
    if (op == Py_NE) {
        Py_RETURN_TRUE;
    }
    return PyObject_RichCompare(mine[i], theirs[i], op);
}

/* Equal to the hash of the values tuple, so that rows and tuples can be
 * mixed as dict keys.  Hashing that tuple, rather than repeating CPython's
 * tuple hash here, keeps them equal on every Python version. */
static Py_hash_t
record_hash(MpgRecordObject *self)
{
    Py_hash_t hash;
    PyObject *values = values_tuple(self);
    if (values == NULL) {
        return -1;
    }
    hash = PyObject_Hash(values);
    Py_DECREF(values);
    return hash;
}

/* "<Record a=1 b='x'>": the class's own name, then name=repr(value) pairs. */
static PyObject *
record_repr(MpgRecordObject *self)
{
    Py_ssize_t i, n = Py_SIZE(self);
    PyObject *class_name, *fields = NULL, *joined = NULL, *separator = NULL;
    PyObject *result = NULL;
    int entered;

    class_name = PyObject_GetAttrString((PyObject *)Py_TYPE(self), "__name__");
    if (class_name == NULL) {
        return NULL;
    }
    if (n == 0) {
        result = PyUnicode_FromFormat("<%S>", class_name);
        Py_DECREF(class_name);
        return result;
    }
    /* A row that (through a mutable value) contains itself. */
    entered = Py_ReprEnter((PyObject *)self);
    if (entered != 0) {
        if (entered > 0) {
            result = PyUnicode_FromFormat("<%S ...>", class_name);
        }
        Py_DECREF(class_name);
        return result;
    }
    fields = PyList_New(n);
    if (fields == NULL) {
        goto done;
    }
    for (i = 0; i < n; i++) {
        PyObject *field = PyUnicode_FromFormat(
            "%U=%R", PyTuple_GET_ITEM(self->desc->names, i), self->ob_item[i]);
        if (field == NULL) {
            goto done;
        }
        PyList_SET_ITEM(fields, i, field);
    }
    separator = PyUnicode_FromString(" ");
    if (separator == NULL) {
        goto done;
    }
    joined = PyUnicode_Join(separator, fields);
    if (joined == NULL) {
        goto done;
    }
    result = PyUnicode_FromFormat("<%S %U>", class_name, joined);
done:
    Py_ReprLeave((PyObject *)self);
    Py_DECREF(class_name);
    Py_XDECREF(fields);
    Py_XDECREF(separator);
    Py_XDECREF(joined);
    return result;
}

/* Pickled as _restore_record(type(row), descriptor, values) plus a subclass
 * instance's __dict__.  The descriptor is an object of its own, so the pickle
 * memo stores it once for a whole list of rows and the loaded rows share it
 * again. */
static PyObject *
record_reduce(MpgRecordObject *self, PyObject *unused)
{
    PyObject *values, *state = NULL, *result;

    if (!Py_IS_TYPE(self, &MpgRecord_Type)) {
        state = PyObject_GetAttrString((PyObject *)self, "__dict__");
        if (state == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                return NULL;
            }
            PyErr_Clear();      /* a subclass with __slots__ = () */
        }
        else if (PyDict_Check(state) && PyDict_GET_SIZE(state) == 0) {
            Py_CLEAR(state);
        }
    }
    values = values_tuple(self);
    if (values == NULL) {
        Py_XDECREF(state);
        return NULL;
    }
    result = Py_BuildValue("O(OON)O", restore_func, (PyObject *)Py_TYPE(self),
                           (PyObject *)self->desc, values, state ? state : Py_None);
    Py_XDECREF(state);
    return result;
}


/* --- the type -------------------------------------------------------------- */

static PySequenceMethods record_as_sequence = {
    .sq_length = (lenfunc)record_length,
    .sq_item = (ssizeargfunc)record_item,
    .sq_contains = (objobjproc)record_contains,
};

static PyMappingMethods record_as_mapping = {
    .mp_length = (lenfunc)record_length,
    .mp_subscript = (binaryfunc)record_subscript,
};

static PyMethodDef record_methods[] = {
    {"get", (PyCFunction)(void (*)(void))record_get, METH_FASTCALL | METH_KEYWORDS,
     "get($self, /, key, default=None)\n--\n\n"
     "Return the value of column ``key``, or ``default`` if there is none."},
    {"keys", (PyCFunction)record_keys, METH_NOARGS,
     "Iterate over the column names, in result order."},
    {"values", (PyCFunction)record_values, METH_NOARGS,
     "Iterate over the values, in result order."},
    {"items", (PyCFunction)record_items, METH_NOARGS,
     "Iterate over ``(column name, value)`` pairs, in result order."},
    {"__reduce__", (PyCFunction)record_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject MpgRecord_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mypgdriver.protocol.record.Record",
    .tp_basicsize = offsetof(MpgRecordObject, ob_item),
    .tp_itemsize = sizeof(PyObject *),
    .tp_dealloc = (destructor)record_dealloc,
    .tp_repr = (reprfunc)record_repr,
    .tp_as_sequence = &record_as_sequence,
    .tp_as_mapping = &record_as_mapping,
    .tp_hash = (hashfunc)record_hash,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc =
        "One result row: a read-only sequence of values with named columns.\n\n"
        "``r[0]``, ``r[-1]`` and ``r[1:3]`` index the values like a tuple;\n"
        "``r['name']`` looks a column up by name.  ``keys()``, ``values()`` and\n"
        "``items()`` iterate like a mapping's, but ``iter(r)`` yields the values\n"
        "and ``'name' in r`` tests the column names.  A Record compares and hashes\n"
        "equal to the tuple of its values.  Records are built by the driver; they\n"
        "cannot be created by calling the class.",
    .tp_traverse = (traverseproc)record_traverse,
    .tp_richcompare = record_richcompare,
    .tp_iter = (getiterfunc)record_iter,
    .tp_methods = record_methods,
    .tp_init = record_tp_init,
    .tp_alloc = PyType_GenericAlloc,
    .tp_new = record_tp_new,
    .tp_free = PyObject_GC_Del,
};

int
mpg_record_type_init(PyObject *descriptor, PyObject *empty, PyObject *uuid,
                     PyObject *restore)
{
    if (!PyType_Check(descriptor) || !PyType_Check(uuid)) {
        PyErr_SetString(PyExc_TypeError, "mpg_record_type_init() needs types");
        return -1;
    }
    if (PyType_Ready(&MpgRecord_Type) < 0 || PyType_Ready(&MpgRecordIter_Type) < 0) {
        return -1;
    }
    Py_INCREF(descriptor);
    Py_INCREF(empty);
    Py_INCREF(uuid);
    Py_INCREF(restore);
    descriptor_type = (PyTypeObject *)descriptor;
    empty_descriptor = empty;
    uuid_type = (PyTypeObject *)uuid;
    restore_func = restore;
    return 0;
}

/* `source._plain_copy` in C: the deep copy of a JSON value made of exact dicts (with str keys),
 * lists, strs, ints, bools, None and finite floats, and its nesting depth (the root container is
 * depth 1).  Anything else (a subclass, a tuple, a non-str key, NaN, a container past
 * `max_depth`, recursion too deep for the C stack) gives None, and the caller copies with the
 * checking copy instead, which raises the error with its pointer.  Scalars are shared, as in
 * the Python copy; no Python code runs while copying (exact types only), so nothing is borrowed
 * across a callback. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* 1: a scalar the copy shares; 0: not a plain JSON scalar. */
static int plain_scalar(PyObject *item) {
    return PyUnicode_CheckExact(item) || PyLong_CheckExact(item) || PyBool_Check(item)
        || item == Py_None || (PyFloat_CheckExact(item) && isfinite(PyFloat_AS_DOUBLE(item)));
}

/* The copy of `node` (an exact dict or list at `depth`), raising the deepest depth met into
 * `*deepest`; NULL with no exception set: irregular; NULL with one: an error. */
static PyObject *copy_container(PyObject *node, Py_ssize_t depth, Py_ssize_t max_depth,
                                Py_ssize_t *deepest);

static PyObject *copy_item(PyObject *item, Py_ssize_t depth, Py_ssize_t max_depth,
                           Py_ssize_t *deepest) {
    if (PyDict_CheckExact(item) || PyList_CheckExact(item))
        return copy_container(item, depth + 1, max_depth, deepest);
    if (!plain_scalar(item)) return NULL;
    Py_INCREF(item);
    return item;
}

static PyObject *copy_container(PyObject *node, Py_ssize_t depth, Py_ssize_t max_depth,
                                Py_ssize_t *deepest) {
    if (depth > max_depth) return NULL;
    if (depth > *deepest) *deepest = depth;
    if (Py_EnterRecursiveCall(" copying a schema")) return NULL;
    PyObject *out;
    if (PyList_CheckExact(node)) {
        Py_ssize_t n = PyList_GET_SIZE(node);
        out = PyList_New(n);
        for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
            PyObject *copy = copy_item(PyList_GET_ITEM(node, i), depth, max_depth, deepest);
            if (copy == NULL) Py_CLEAR(out);
            else PyList_SET_ITEM(out, i, copy);
        }
    } else {
        out = PyDict_New();
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (out != NULL && PyDict_Next(node, &pos, &key, &value)) {
            PyObject *copy = PyUnicode_CheckExact(key)
                ? copy_item(value, depth, max_depth, deepest) : NULL;
            if (copy == NULL || PyDict_SetItem(out, key, copy) < 0) Py_CLEAR(out);
            Py_XDECREF(copy);
        }
    }
    Py_LeaveRecursiveCall();
    return out;
}

static PyObject *plain_copy(PyObject *self, PyObject *args) {
    PyObject *value;
    Py_ssize_t max_depth, deepest = 0;
    if (!PyArg_ParseTuple(args, "On:plain_copy", &value, &max_depth)) return NULL;
    if (!PyDict_CheckExact(value) && !PyList_CheckExact(value)) Py_RETURN_NONE;
    PyObject *copy = copy_container(value, 1, max_depth, &deepest);
    if (copy == NULL) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_RecursionError)) return NULL;
        PyErr_Clear();  /* irregular, or too deep for the C stack: the checking copy decides */
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(Nn)", copy, deepest);
}

static PyMethodDef methods[] = {
    {"plain_copy", plain_copy, METH_VARARGS,
     "plain_copy(value, max_depth) -> (copy, depth) | None: the copy of an exact dict or list of\n"
     "plain JSON values nested at most `max_depth` deep, and its depth; None for anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_plain_copy", NULL, -1, methods};

PyMODINIT_FUNC PyInit__plain_copy(void) { return PyModule_Create(&module_def); }

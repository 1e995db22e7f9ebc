/* IR nodes hashed without a Python frame: `install_hash(cls)` gives an IR node class a C `tp_hash`
 * that returns the hash cached in the node's `_hash` slot, and calls the class's Python `__hash__`
 * (which computes and caches it) only while that slot holds no int.
 *
 * Why the type slot, and not a C base class: the class keeps its layout, bases, `object.__new__`
 * and pickling as they are, and its `__hash__` attribute stays the Python function (what
 * `cls.__hash__(node)` calls, and what computes a missing hash here).  CPython only resyncs a
 * type's `tp_hash` with its `__hash__` attribute when that attribute is assigned (on the class or
 * a base): such an assignment replaces the hash installed here with CPython's own dispatcher to
 * the new `__hash__`, so it works as it always did; subclasses made later dispatch to the Python
 * `__hash__` they inherit.  The same holds on CPython 3.11 and 3.12.
 */
#include "_nfa_build.h"

/* The classes given a C hash, and where their nodes keep `_hash` (the classes live for the
 * process: a reference is kept). */
enum { MAX_HASHED = 64 };
static struct { PyTypeObject *kind; Py_ssize_t at; } hashed[MAX_HASHED];
static int n_hashed;
static PyObject *s_hash_name; /* "__hash__" */

/* What `hash()` makes of a `__hash__` result (as CPython's slot_tp_hash): -1 as -2, an int past
 * Py_ssize_t by its own hash; -1 with an exception if it is no int. */
static Py_hash_t as_hash(PyObject *value) {
    if (!PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "__hash__ method should return an integer");
        return -1;
    }
    Py_hash_t h = PyLong_AsSsize_t(value);
    if (h == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        h = PyLong_Type.tp_hash(value);
    }
    return h == -1 ? -2 : h;
}

/* The hash computed by the class's Python `__hash__` (found on the type, as `hash()` would). */
static Py_hash_t python_hash(PyObject *node) {
    PyObject *method = _PyType_Lookup(Py_TYPE(node), s_hash_name); /* borrowed */
    if (!method || method == Py_None) return PyObject_HashNotImplemented(node);
    Py_INCREF(method);
    PyObject *value = PyObject_CallOneArg(method, node);
    Py_DECREF(method);
    if (!value) return -1;
    const Py_hash_t h = as_hash(value);
    Py_DECREF(value);
    return h;
}

/* The C `tp_hash` of an installed class: the cached int read from the `_hash` slot. */
static Py_hash_t cached_hash(PyObject *node) {
    const PyTypeObject *kind = Py_TYPE(node);
    for (int i = 0; i < n_hashed; i++)
        if (hashed[i].kind == kind) {
            PyObject *cached = *(PyObject **)((char *)node + hashed[i].at);
            if (cached && PyLong_CheckExact(cached)) return as_hash(cached);
            break;
        }
    return python_hash(node);
}

const char nfab_install_hash_doc[] = PyDoc_STR(
"install_hash(cls) -> bool\n\n"
"Give the IR node class `cls` (a class with a plain `_hash` slot and a `__hash__` that caches its\n"
"result there) a C hash that reads the slot, calling `cls.__hash__` only while it holds no int:\n"
"the same hashes, without a Python frame.  False (nothing changed) for a class that is no heap\n"
"type, has no such slot, or once the table of installed classes is full.");

PyObject *nfab_install_hash(PyObject *Py_UNUSED(module), PyObject *cls) {
    if (!s_hash_name && !(s_hash_name = PyUnicode_InternFromString("__hash__"))) return NULL;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "install_hash: cls must be a class");
        return NULL;
    }
    PyTypeObject *kind = (PyTypeObject *)cls;
    for (int i = 0; i < n_hashed; i++)
        if (hashed[i].kind == kind) Py_RETURN_TRUE;
    PyObject *slot = PyDict_GetItemString(kind->tp_dict, "_hash"); /* borrowed */
    PyObject *method = PyDict_GetItemWithError(kind->tp_dict, s_hash_name);
    if (!method && PyErr_Occurred()) return NULL;
    const PyMemberDef *m = slot && Py_IS_TYPE(slot, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)slot)->d_member
                                                                         : NULL;
    if (!m || m->type != T_OBJECT_EX || (m->flags & READONLY) || !method || !PyFunction_Check(method) ||
        !(kind->tp_flags & Py_TPFLAGS_HEAPTYPE) || n_hashed == MAX_HASHED)
        Py_RETURN_FALSE;
    hashed[n_hashed].kind = (PyTypeObject *)Py_NewRef(cls);
    hashed[n_hashed++].at = m->offset;
    kind->tp_hash = cached_hash;
    PyType_Modified(kind);
    Py_RETURN_TRUE;
}

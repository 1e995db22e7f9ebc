/* Taking acyclic, immutable object graphs (IR trees: nodes and the tuples that hold their items) out
 * of the cyclic garbage collector's lists (gc_untrack.py says why and when).  An untracked object is
 * still freed by reference counting; the collector only stops scanning it.  Untracking something on
 * a reference cycle would keep that cycle alive forever, so only instances of the given node type
 * and tuples are followed, which the IR builds bottom-up and never mutates. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The objects still to visit: borrowed references (the root keeps them all alive, and no Python
 * code runs while the walk lasts). */
typedef struct {
    PyObject **items;
    Py_ssize_t len, cap;
    PyTypeObject *node_type;
} Pending;

/* tp_traverse's visit: queue `obj` when it is a tracked tuple or node. */
static int queue_tracked(PyObject *obj, void *arg) {
    Pending *pending = arg;
    if (!PyObject_IS_GC(obj) || !PyObject_GC_IsTracked(obj)) return 0;
    if (!PyTuple_CheckExact(obj) && !PyObject_TypeCheck(obj, pending->node_type)) return 0;
    if (pending->len == pending->cap) {
        Py_ssize_t cap = pending->cap ? 2 * pending->cap : 256;
        PyObject **items = PyMem_Realloc(pending->items, cap * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        pending->items = items;
        pending->cap = cap;
    }
    pending->items[pending->len++] = obj;
    return 0;
}

static PyObject *untrack_tree(PyObject *module, PyObject *args) {
    PyObject *root;
    PyTypeObject *node_type;
    if (!PyArg_ParseTuple(args, "OO!:untrack_tree", &root, &PyType_Type, &node_type)) return NULL;
    Pending pending = {NULL, 0, 0, node_type};
    Py_ssize_t untracked = 0;
    int failed = queue_tracked(root, &pending);
    while (!failed && pending.len > 0) {
        PyObject *obj = pending.items[--pending.len];
        if (!PyObject_GC_IsTracked(obj)) continue; /* queued twice (a shared subtree) */
        PyObject_GC_UnTrack(obj);
        untracked++;
        failed = Py_TYPE(obj)->tp_traverse(obj, queue_tracked, &pending);
    }
    PyMem_Free(pending.items);
    return failed ? NULL : PyLong_FromSsize_t(untracked);
}

static PyMethodDef methods[] = {
    {"untrack_tree", untrack_tree, METH_VARARGS,
     "untrack_tree(root, node_type) -> int: stop the cyclic collector scanning `root` and every tuple or\n"
     "`node_type` instance reachable from it through such objects; returns how many it untracked."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_untrack", NULL, -1, methods};

PyMODINIT_FUNC PyInit__untrack(void) { return PyModule_Create(&module_def); }

/* Lazy subset construction in C: the NFA side of `subset_builder.SubsetBuilder`.
 *
 * A `SubsetCore` reads the NFA's moves straight from its Python tuples (`NFA.eps`, `NFA.edges`; lists also do),
 * and computes the moves of lexeme regions (states still None there) by arithmetic from the
 * region's embedded DFA or template NFA (template state 0 is the region's start, 1 its end).  It keeps, per NFA state,
 * its edges over byte classes and its epsilon closure, and interns DFA states (sorted arrays of
 * NFA states) in a hash table, appending each new one to the Python list `sets` as a tuple.
 * `rows` writes the successor of each byte class for a batch of DFA states into the LazyDFA's
 * table.  Every index read from Python is checked: malformed input raises ValueError.
 */
#include "_subset_core.h"
#include "_subset_api.h"

/* This file: the C API capsule (`_api`, see _subset_api.h), the module's functions, and its init.
 * The rest lives in _subset_type.c, _subset_rows.c and _subset_sets.c (see _subset_core.h). */

static int api_fill(PyObject *obj, int64_t sid, int32_t *rows, int64_t num_classes, uint8_t *expanded,
                    uint8_t *accepting, int64_t height) {
    Core *c = (Core *)obj;
    Py_ssize_t before = c->set_n.len;
    if (sid < 0 || sid >= before || sid >= height || num_classes != c->num_classes) {
        PyErr_SetString(PyExc_ValueError, "subset core: state out of range, or rows of another automaton");
        return -1;
    }
    if (subset_fill_row(c, (int32_t)sid, rows + sid * c->num_classes)) return -1;
    expanded[sid] = 1;
    for (Py_ssize_t x = before; x < c->set_n.len && x < height; x++) accepting[x] = (uint8_t)c->set_acc.data[x];
    return 0;
}

static int64_t api_num_sets(PyObject *obj) {
    return ((Core *)obj)->set_n.len;
}

PyDoc_STRVAR(edge_cuts_doc,
"edge_cuts(edges, flags): sets flags[lo] and flags[hi + 1] (a writable buffer of 257 bytes)\n"
"for every edge (lo, hi, target) in `edges`, a list or tuple of edge tuples per NFA state (or None).");

static PyObject *edge_cuts(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *edges;
    Py_buffer flags = {0};
    if (!PyArg_ParseTuple(args, "Ow*", &edges, &flags)) return NULL;
    PyObject *result = NULL;
    uint8_t *out = flags.buf;
    if (!is_list_or_tuple(edges)) {
        PyErr_SetString(PyExc_TypeError, "edge_cuts: edges must be a list or tuple");
        goto done;
    }
    if (flags.len != 257) {
        PyErr_SetString(PyExc_ValueError, "edge_cuts: flags must hold 257 bytes");
        goto done;
    }
    for (Py_ssize_t q = 0; q < PySequence_Fast_GET_SIZE(edges); q++) {
        PyObject *state = PySequence_Fast_GET_ITEM(edges, q);
        if (state == Py_None) continue;
        Py_ssize_t n;
        PyObject **items = items_of(state, &n, "edges");
        if (!items) goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t lo, hi, target;
            if (read_edge(items[i], INT32_MAX, &lo, &hi, &target)) goto done;
            out[lo] = out[hi + 1] = 1;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&flags);
    return result;
}

PyDoc_STRVAR(table_ranges_doc,
"table_ranges(table, num_states) -> per state, its (lo, hi, target) runs of equal targets but the\n"
"dead state 0, as an untracked tuple of untracked tuples; `table` holds num_states rows of 256 int32.");

/* The run (lo, hi, target), untracked (three ints); `targets[t]` caches target t's int (a new
 * reference kept by the caller): most rows of a large DFA lead to a few hundred states. */
static PyObject *make_run(int lo, int hi, int32_t target, PyObject **targets) {
    PyObject *t = targets[target];
    if (!t && !(t = targets[target] = PyLong_FromLong(target))) return NULL;
    PyObject *a = PyLong_FromLong(lo), *b = a ? PyLong_FromLong(hi) : NULL; /* cached small ints */
    PyObject *run = b ? PyTuple_New(3) : NULL;
    if (!run) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    Py_INCREF(t);
    PyTuple_SET_ITEM(run, 0, a);
    PyTuple_SET_ITEM(run, 1, b);
    PyTuple_SET_ITEM(run, 2, t);
    PyObject_GC_UnTrack(run);
    return run;
}

static PyObject *table_ranges(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view = {0};
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &view, &n)) return NULL;
    PyObject *out = NULL, **targets = NULL;
    const int32_t *t = view.buf;
    if (n < 0 || view.len != n * 256 * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "table_ranges: the table must hold num_states rows of 256 int32");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n * 256; i++) {
        if (t[i] < 0 || t[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "table_ranges: a target is out of range");
            goto done;
        }
    }
    if (!(targets = PyMem_Calloc(n ? n : 1, sizeof(PyObject *)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = PyTuple_New(n))) goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        const int32_t *row = t + q * 256;
        int count = 0;
        for (int lo = 0, hi; lo < 256; lo = hi + 1) {
            for (hi = lo; hi < 255 && row[hi + 1] == row[lo]; hi++) {}
            count += row[lo] != 0;
        }
        PyObject *runs = PyTuple_New(count);
        if (!runs) goto fail;
        PyTuple_SET_ITEM(out, q, runs);
        for (int lo = 0, hi, k = 0; lo < 256; lo = hi + 1) {
            for (hi = lo; hi < 255 && row[hi + 1] == row[lo]; hi++) {}
            if (row[lo] == 0) continue;
            PyObject *run = make_run(lo, hi, row[lo], targets);
            if (!run) goto fail;
            PyTuple_SET_ITEM(runs, k++, run);
        }
        PyObject_GC_UnTrack(runs); /* untracked tuples only */
    }
    PyObject_GC_UnTrack(out); /* kept per DFA for the process's life: nothing for a full collection to scan */
    goto done;
fail:
    Py_CLEAR(out);
done:
    if (targets) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(targets[i]);
        PyMem_Free(targets);
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef module_methods[] = {
    {"edge_cuts", edge_cuts, METH_VARARGS, edge_cuts_doc},
    {"table_ranges", table_ranges, METH_VARARGS, table_ranges_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_subset", "Lazy subset construction in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__subset(void) {
    if (PyType_Ready(&subset_core_type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    static SubsetApi api = {&subset_core_type, api_fill, api_num_sets};
    PyObject *capsule = PyCapsule_New(&api, SUBSET_API_NAME, NULL);
    if (!capsule || PyModule_AddObject(m, "_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&subset_core_type);
    if (PyModule_AddObject(m, "SubsetCore", (PyObject *)&subset_core_type) < 0) {
        Py_DECREF(&subset_core_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

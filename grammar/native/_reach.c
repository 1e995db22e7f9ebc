/* The part of a byte DFA reachable from one state, in C: renumbered locally (reach), or just
 * whether it accepts over some byte classes (reaches_accepting).
 *
 * For the language signature of a terminal state (cfg/terminal_tables.py): a breadth-first
 * search over the DFA's rows (over byte classes) from `state`, building missing rows of a lazy
 * DFA in place through its SubsetCore (as the trie walk does), and the reachable part written
 * out as a table over local numbers: 0 is `state`, then the order of discovery, and one more
 * row, the dead state made explicit, that every dead move goes to.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_subset_api.h"

#define MAX_STATES 256

PyDoc_STRVAR(reach_doc,
"reach(rows, num_classes, expanded, accepting, core, state, max_states) -> (table, accepting) | None | int\n\n"
"The part of the DFA reachable from `state` (live states only) as int32 table bytes over local\n"
"numbers ((n + 1) rows of the DFA's classes; 0 is `state`, n the dead state) and uint8 accepting\n"
"bytes (n + 1).  None when more than `max_states` (at most 256) states are reachable; an int,\n"
"a state past the arrays' end, when the arrays must grow first.  With a lazy DFA's SubsetCore\n"
"as `core`, missing rows are built in place (the arrays must then be writable).");

static const SubsetApi *subset_api;

static int64_t local_index(const int64_t *order, int64_t n, int64_t state) {
    for (int64_t i = 0; i < n; i++)
        if (order[i] == state) return i;
    return -1;
}

/* A DFA's arrays as reach() and reaches_accepting() take them. */
typedef struct {
    PyObject *core; /* the lazy DFA's SubsetCore, or NULL */
    int32_t *rows;
    uint8_t *expanded, *accepting;
    int64_t num_classes, num_states;
    const char *name; /* of the caller, for errors */
} Dfa;

/* The row of state `q`, built through the core when missing; NULL with an exception set. */
static const int32_t *row_of(const Dfa *d, int64_t q) {
    if (!d->expanded[q]) {
        if (!d->core) {
            PyErr_Format(PyExc_ValueError, "%s: a row is missing and there is no core", d->name);
            return NULL;
        }
        if (subset_api->fill(d->core, q, d->rows, d->num_classes, d->expanded, d->accepting, d->num_states))
            return NULL;
    }
    return d->rows + q * d->num_classes;
}

/* 0 for a target inside the arrays, 1 for one past their end (they must grow first: the caller
 * answers it as an int), -1 with an exception for one out of range. */
static int target_past_arrays(const Dfa *d, int64_t t) {
    if (t < 0 || (t >= d->num_states && (!d->core || t >= subset_api->num_sets(d->core)))) {
        PyErr_Format(PyExc_ValueError, "%s: state out of range", d->name);
        return -1;
    }
    return t >= d->num_states;
}

static PyObject *reach(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    PyObject *core = Py_None, *result = NULL;
    long long num_classes, state, max_states;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*Ly*y*OLL", &b[0], &num_classes, &b[1], &b[2], &core, &state, &max_states))
        return NULL;
    Py_buffer *const dfa_arrays[] = {&b[0], &b[1], &b[2]};
    if (subset_core_arg(subset_api, &core, dfa_arrays, 3, "reach")) goto done;
    const int64_t num_states = b[1].len < b[2].len ? b[1].len : b[2].len;
    int32_t *rows = b[0].buf;
    uint8_t *expanded = b[1].buf, *accepting = b[2].buf;
    if (num_classes < 1 || b[0].len != 4 * num_classes * num_states) {
        PyErr_SetString(PyExc_ValueError, "reach: inconsistent array sizes");
        goto done;
    }
    if (state < 0 || state >= num_states || max_states < 1 || max_states > MAX_STATES) {
        PyErr_SetString(PyExc_ValueError, "reach: state or max_states out of range");
        goto done;
    }
    const Dfa d = {core, rows, expanded, accepting, num_classes, num_states, "reach"};
    int64_t order[MAX_STATES], n = 1;
    order[0] = state;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *row = row_of(&d, order[i]);
        if (!row) goto done;
        for (int64_t c = 0; c < num_classes; c++) {
            int64_t t = row[c];
            int past = target_past_arrays(&d, t);
            if (past) {
                if (past > 0) result = PyLong_FromLongLong(t);
                goto done;
            }
            if (!t || local_index(order, n, t) >= 0) continue;
            if (n == max_states) {
                result = Py_NewRef(Py_None);
                goto done;
            }
            order[n++] = t;
        }
    }
    PyObject *table = PyBytes_FromStringAndSize(NULL, (n + 1) * num_classes * (Py_ssize_t)sizeof(int32_t));
    PyObject *flags = table ? PyBytes_FromStringAndSize(NULL, n + 1) : NULL;
    if (table && flags) {
        int32_t *local = (int32_t *)PyBytes_AS_STRING(table);
        char *acc = PyBytes_AS_STRING(flags);
        for (int64_t i = 0; i <= n; i++) {
            const int32_t *row = rows + (i < n ? order[i] : 0) * num_classes;
            for (int64_t c = 0; c < num_classes; c++)
                local[i * num_classes + c] = (int32_t)(i < n && row[c] ? local_index(order, n, row[c]) : n);
            acc[i] = (char)(i < n && accepting[order[i]]);
        }
        result = PyTuple_Pack(2, table, flags);
    }
    Py_XDECREF(table);
    Py_XDECREF(flags);
done:
    for (int i = 0; i < 3; i++) PyBuffer_Release(&b[i]);
    return result;
}

PyDoc_STRVAR(reaches_accepting_doc,
"reaches_accepting(rows, num_classes, expanded, accepting, core, state, classes) -> bool | int\n\n"
"Whether an accepting state is reachable from `state` in one step or more over the byte\n"
"classes flagged in `classes` (uint8, one per class); an int, a state past the arrays' end,\n"
"when the arrays must grow first.  Missing rows are built through `core` as in reach().");

static PyObject *reaches_accepting(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    PyObject *core = Py_None, *result = NULL;
    long long num_classes, state;
    uint8_t *seen = NULL;
    int64_t *queue = NULL;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*Ly*y*OLy*", &b[0], &num_classes, &b[1], &b[2], &core, &state, &b[3]))
        return NULL;
    Py_buffer *const dfa_arrays[] = {&b[0], &b[1], &b[2]};
    if (subset_core_arg(subset_api, &core, dfa_arrays, 3, "reaches_accepting")) goto done;
    const int64_t num_states = b[1].len < b[2].len ? b[1].len : b[2].len;
    int32_t *rows = b[0].buf;
    uint8_t *expanded = b[1].buf, *accepting = b[2].buf;
    const uint8_t *classes = b[3].buf;
    if (num_classes < 1 || b[0].len != 4 * num_classes * num_states || b[3].len != num_classes) {
        PyErr_SetString(PyExc_ValueError, "reaches_accepting: inconsistent array sizes");
        goto done;
    }
    if (state < 0 || state >= num_states) {
        PyErr_SetString(PyExc_ValueError, "reaches_accepting: state out of range");
        goto done;
    }
    seen = calloc((size_t)num_states, 1);
    queue = malloc((size_t)num_states * sizeof(int64_t));
    if (!seen || !queue) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t head = 0, tail = 0;
    queue[tail++] = state;
    seen[state] = 1;
    const Dfa d = {core, rows, expanded, accepting, num_classes, num_states, "reaches_accepting"};
    while (head < tail) {
        const int32_t *row = row_of(&d, queue[head++]);
        if (!row) goto done;
        for (int64_t c = 0; c < num_classes; c++) {
            int64_t t = row[c];
            if (!classes[c] || !t) continue;
            int past = target_past_arrays(&d, t);
            if (past) {
                if (past > 0) result = PyLong_FromLongLong(t);
                goto done;
            }
            if (seen[t]) continue;
            if (accepting[t]) {
                result = Py_NewRef(Py_True);
                goto done;
            }
            seen[t] = 1;
            queue[tail++] = t;
        }
    }
    result = Py_NewRef(Py_False);
done:
    free(seen);
    free(queue);
    for (int i = 0; i < 4; i++) PyBuffer_Release(&b[i]);
    return result;
}

PyDoc_STRVAR(byte_runs_doc,
"byte_runs(table, accepting, class_of_byte) -> bytes\n\n"
"A DFA (int32 table bytes, n states x k classes; n accepting flags), as minimize() numbers its\n"
"minimal one, spelled over byte runs instead of classes, so equal languages get equal bytes\n"
"whatever their byte classes: a run starts at byte 0 and wherever a byte moves some state unlike\n"
"the byte before it.  Layout: n and the number of runs (int32 each), the first byte of each run\n"
"after the first (uint8), the table over runs (n x runs, int32), the flags.");

static PyObject *byte_runs(PyObject *self, PyObject *args) {
    Py_buffer tb = {0}, ab = {0}, cb = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*", &tb, &ab, &cb)) return NULL;
    PyObject *result = NULL;
    const int64_t n = ab.len, k = n ? tb.len / 4 / n : 0;
    const int32_t *table = tb.buf, *class_of_byte = cb.buf;
    const char *bad = n < 1 || k < 1 || tb.len != 4 * n * k || cb.len != 256 * 4 ? "inconsistent arguments" : NULL;
    for (int b = 0; !bad && b < 256; b++)
        if (class_of_byte[b] < 0 || class_of_byte[b] >= k) bad = "byte class out of range";
    if (bad) {
        PyErr_Format(PyExc_ValueError, "byte_runs: %s", bad);
        goto done;
    }
    uint8_t starts[256];
    int32_t run_class[256];
    int64_t runs = 1;
    run_class[0] = class_of_byte[0];
    for (int b = 1; b < 256; b++) {
        int32_t here = class_of_byte[b], before = class_of_byte[b - 1];
        int differs = 0;
        for (int64_t j = 0; j < n && !differs; j++) differs = table[j * k + here] != table[j * k + before];
        if (differs) starts[runs - 1] = (uint8_t)b, run_class[runs++] = here;
    }
    result = PyBytes_FromStringAndSize(NULL, 8 + (runs - 1) + 4 * n * runs + n);
    if (!result) goto done;
    char *out = PyBytes_AS_STRING(result);
    int32_t head[2] = {(int32_t)n, (int32_t)runs};
    memcpy(out, head, 8);
    memcpy(out + 8, starts, (size_t)(runs - 1));
    char *cells = out + 8 + (runs - 1);
    for (int64_t j = 0; j < n; j++) {
        for (int64_t r = 0; r < runs; r++) {
            int32_t cell = table[j * k + run_class[r]];
            memcpy(cells + 4 * (j * runs + r), &cell, 4);
        }
    }
    memcpy(cells + 4 * n * runs, ab.buf, (size_t)n);
done:
    PyBuffer_Release(&tb);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&cb);
    return result;
}

static PyMethodDef methods[] = {
    {"reach", reach, METH_VARARGS, reach_doc},
    {"reaches_accepting", reaches_accepting, METH_VARARGS, reaches_accepting_doc},
    {"byte_runs", byte_runs, METH_VARARGS, byte_runs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_reach", "The reachable part of a byte DFA (see cfg/terminal_tables.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__reach(void) {
    subset_api = subset_api_import();
    return subset_api ? PyModule_Create(&module) : NULL;
}

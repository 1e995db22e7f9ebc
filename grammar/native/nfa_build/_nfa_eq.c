/* IR nodes compared without a Python frame: `install_eq(cls)` gives an IR node class that
 * `install_hash` knows a C `tp_richcompare` whose `==` is the structural equality of its Python
 * `__eq__` (`ir_identity.composite_eq`, or the dataclass's over the compared fields of a leaf):
 * same class and equal compared fields, sub-nodes compared alike.  Like `ir_identity._same_deep`
 * it walks with an explicit stack (lowered IR nests thousands deep), tells sub-nodes whose cached
 * hashes differ apart at once, and compares each pair of composite nodes once (copies of a shared
 * graph would otherwise be compared path by path).  Fields that are no nodes nor tuples of them
 * (ints, bytes, str, None, ranges) compare with `==`; a node of a class not installed here (a
 * subclass) with its own `==`.
 *
 * Why: a lowered schema's fresh nodes meet equal cached ones in the tables keyed by IR (shared
 * marks, member chains, lexeme templates, the automaton memo), and each such lookup ran the
 * Python `__eq__` (several frames and generator steps a level).  As with the hash, the class's
 * `__eq__` attribute stays the Python function, and assigning one restores CPython's dispatch.
 */
#include "_nfa_build.h"

enum { MAX_PAIRS = 1 << 24, TUPLE_DEPTH = 2, SEEN_FROM = 8 };

typedef struct { PyObject *x, *y; } Pair;
typedef struct { Pair *pairs; Py_ssize_t n, cap; } Pairs;
typedef struct { Pair *slots; Py_ssize_t used, cap; } Seen; /* open addressing; cap a power of 2 */

static PyObject *s_eq_name; /* "__eq__" */

/* `x == y` by the class's Python `__eq__` (a class not installed, or whose fields are not read in
 * C); 1, 0 or -1 with an exception.  NotImplemented (another class) is False, as for `==`. */
static int python_eq(PyObject *x, PyObject *y) {
    PyObject *method = _PyType_Lookup(Py_TYPE(x), s_eq_name); /* borrowed */
    if (!method) return PyObject_RichCompareBool(x, y, Py_EQ);
    Py_INCREF(method);
    PyObject *got = PyObject_CallFunctionObjArgs(method, x, y, NULL);
    Py_DECREF(method);
    if (!got) return -1;
    const int out = got == Py_NotImplemented ? 0 : PyObject_IsTrue(got);
    Py_DECREF(got);
    return out;
}

static int push(Pairs *todo, PyObject *x, PyObject *y) {
    if (todo->n == MAX_PAIRS || GROW(todo, pairs, cap, todo->n + 1)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RecursionError, "IR equality: too many node pairs");
        return -1;
    }
    todo->pairs[todo->n++] = (Pair){x, y};
    return 0;
}

/* Adds the pair to `seen`: 1 if it was there already, 0 if new, -1 out of memory. */
static int seen_before(Seen *seen, PyObject *x, PyObject *y) {
    if (2 * (seen->used + 1) > seen->cap) {
        const Py_ssize_t cap = seen->cap ? 2 * seen->cap : 64;
        Pair *slots = calloc((size_t)cap, sizeof(Pair));
        if (!slots) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < seen->cap; i++) {
            if (!seen->slots[i].x) continue;
            size_t k = ((uintptr_t)seen->slots[i].x * 31u ^ (uintptr_t)seen->slots[i].y) >> 4;
            while (slots[k & (cap - 1)].x) k++;
            slots[k & (cap - 1)] = seen->slots[i];
        }
        free(seen->slots);
        seen->slots = slots, seen->cap = cap;
    }
    for (size_t k = ((uintptr_t)x * 31u ^ (uintptr_t)y) >> 4;; k++) {
        Pair *slot = &seen->slots[k & (seen->cap - 1)];
        if (!slot->x) {
            *slot = (Pair){x, y};
            seen->used++;
            return 0;
        }
        if (slot->x == x && slot->y == y) return 1;
    }
}

/* Whether field values `a` and `b` are equal: 1 (sub-node pairs left to compare pushed on `todo`),
 * 0, or -1 with an exception.  Nodes of one installed class are pushed, tuples (to `depth` levels)
 * compared item by item, anything else with `==`. */
static int same_value(Pairs *todo, PyObject *a, PyObject *b, int depth) {
    if (a == b) return 1;
    if (Py_TYPE(a) == Py_TYPE(b) && nfab_hashed_class(Py_TYPE(a))) return push(todo, a, b) ? -1 : 1;
    if (depth > 0 && PyTuple_CheckExact(a) && PyTuple_CheckExact(b)) {
        const Py_ssize_t n = PyTuple_GET_SIZE(a);
        if (PyTuple_GET_SIZE(b) != n) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const int same = same_value(todo, PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i), depth - 1);
            if (same <= 0) return same;
        }
        return 1;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The cached hash of a node of class `e`, or 0 (no exception) where none is cached yet. */
static int cached_hash(PyObject *node, const HashedClass *e, Py_hash_t *h) {
    PyObject *cached = *(PyObject **)((char *)node + e->at);
    if (!cached || !PyLong_CheckExact(cached)) return 0;
    *h = PyLong_AsSsize_t(cached);
    if (*h == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Whether nodes `x` and `y` (of one installed class) are equal: 1, 0, or -1 with an exception. */
static int same_nodes(PyObject *x, PyObject *y) {
    Pairs todo = {0};
    Seen seen = {0};
    Py_ssize_t popped = 0;
    int out = push(&todo, x, y) ? -1 : 1;
    while (out == 1 && todo.n) {
        const Pair p = todo.pairs[--todo.n];
        if (p.x == p.y) continue;
        PyTypeObject *kind = Py_TYPE(p.x);
        const HashedClass *e = kind == Py_TYPE(p.y) ? nfab_hashed_class(kind) : NULL;
        if (!e) {
            out = kind == Py_TYPE(p.y) ? python_eq(p.x, p.y) : 0;
            continue;
        }
        Py_hash_t hx, hy; /* below the root pair, as `_same_below` and `_same_deep` do */
        if (popped && cached_hash(p.x, e, &hx) && cached_hash(p.y, e, &hy) && hx != hy) {
            out = 0;
            continue;
        }
        if (e->n_fields < 0) {
            out = python_eq(p.x, p.y);
            continue;
        }
        if (popped++ >= SEEN_FROM) { /* a pair reached again by another path: compared already */
            const int again = seen_before(&seen, p.x, p.y);
            if (again) {
                out = again < 0 ? -1 : 1;
                continue;
            }
        }
        for (int i = 0; out == 1 && i < e->n_fields; i++) {
            PyObject *a = *(PyObject **)((char *)p.x + e->fields[i]), *b = *(PyObject **)((char *)p.y + e->fields[i]);
            out = a && b ? same_value(&todo, a, b, TUPLE_DEPTH) : python_eq(p.x, p.y);
        }
    }
    free(todo.pairs);
    free(seen.slots);
    return out;
}

/* The C `tp_richcompare` of an installed class: `==` and `!=` between two of its nodes; anything
 * else as the Python `__eq__` answers it (NotImplemented for another class). */
static PyObject *node_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    if (Py_TYPE(other) != Py_TYPE(self)) Py_RETURN_NOTIMPLEMENTED;
    const HashedClass *e = nfab_hashed_class(Py_TYPE(self));
    const int same = self == other ? 1 : e ? same_nodes(self, other) : python_eq(self, other);
    if (same < 0) return NULL;
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

const char nfab_install_eq_doc[] = PyDoc_STR(
"install_eq(cls) -> bool\n\n"
"Give the IR node class `cls`, whose C hash `install_hash` installed and whose `__eq__` is a Python\n"
"function comparing its compared fields structurally, a C `==` / `!=` that compares the same way\n"
"without a Python frame (sub-nodes with an explicit stack, cached hashes that differ settling a pair\n"
"at once).  False (nothing changed) for a class without a C hash or a Python `__eq__` of its own.");

PyObject *nfab_install_eq(PyObject *Py_UNUSED(module), PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "install_eq: expected a class");
        return NULL;
    }
    if (!s_eq_name && !(s_eq_name = PyUnicode_InternFromString("__eq__"))) return NULL;
    PyTypeObject *kind = (PyTypeObject *)cls;
    if (!nfab_hashed_class(kind)) Py_RETURN_FALSE;
    PyObject *method = PyDict_GetItemWithError(kind->tp_dict, s_eq_name); /* borrowed */
    if (PyErr_Occurred()) return NULL;
    if (!method || !PyFunction_Check(method)) Py_RETURN_FALSE;
    kind->tp_richcompare = node_richcompare;
    PyType_Modified(kind);
    Py_RETURN_TRUE;
}

/* The interned DFA states of the subset core: each a sorted set of NFA states, kept in pools,
 * appended to the Python list `sets` as an untracked tuple, and indexed by an open-addressing
 * hash table (looked up by `intern`, in _subset_core.h).
 */
#include "_subset_core.h"

static void table_insert(Core *c, int32_t sid, uint32_t h) {
    Py_ssize_t mask = c->table_cap - 1, i = h & mask;
    while (c->table[i]) i = (i + 1) & mask;
    c->table[i] = sid + 1;
}

int subset_table_grow(Core *c) {
    Py_ssize_t cap = c->table_cap ? 2 * c->table_cap : 1024;
    int32_t *t = calloc((size_t)cap, sizeof(int32_t));
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    free(c->table);
    c->table = t;
    c->table_cap = cap;
    for (Py_ssize_t sid = 0; sid < c->set_n.len; sid++)
        if (sid != c->hidden) table_insert(c, (int32_t)sid, (uint32_t)c->set_hash.data[sid]);
    return 0;
}

/* A tuple of ints, untracked by the cyclic garbage collector at once (it holds no containers):
 * automata make many, and a tracked one is scanned by every collection until it is untracked. */
PyObject *subset_ints_tuple(const int32_t *a, Py_ssize_t n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(a[i]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    if (PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
    return t;
}

/* Appends set a[0..n) (sorted, distinct) as a new DFA state, indexed unless `indexed` is 0. */
int32_t subset_add_set(Core *c, const int32_t *a, Py_ssize_t n, uint32_t h, int indexed) {
    int32_t sid = (int32_t)c->set_n.len;
    PyObject *tuple = subset_ints_tuple(a, n);
    if (!tuple) return -1;
    int failed = PyList_Append(c->sets, tuple);
    Py_DECREF(tuple);
    if (failed) return -1;
    if (pool_reserve(&c->set_pool, n)) return -1;
    memcpy(c->set_pool.data + c->set_pool.len, a, (size_t)n * sizeof(int32_t));
    if (pool_push(&c->set_at, (int32_t)c->set_pool.len) || pool_push(&c->set_n, (int32_t)n) ||
        pool_push(&c->set_hash, (int32_t)h) || pool_push(&c->set_acc, find_sorted(a, n, 1, c->final) >= 0))
        return -1;
    if (!indexed) c->hidden = sid;
    c->set_pool.len += n;
    if (indexed) {
        if (2 * (Py_ssize_t)c->set_n.len > c->table_cap) {
            if (subset_table_grow(c)) return -1;
        } else {
            table_insert(c, sid, h);
        }
    }
    return sid;
}

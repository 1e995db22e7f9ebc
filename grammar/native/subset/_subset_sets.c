/* The interned DFA states of the subset core: each a sorted set of NFA states, kept in pools,
 * appended to the Python list `sets` as an untracked tuple, and indexed by an open-addressing
 * hash table (looked up by `intern`, in _subset_core.h).  And the slots of the per-NFA-state
 * arrays: the NFA's own states have theirs (their numbers); a region's state gets the next free
 * slot when the core first reaches it, through an open-addressing map (`slot_of`).  A region of
 * a million states (a string under maxLength) so costs memory for the few states a generation
 * visits, not for its size.
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

static void shape_insert(Core *c, Py_ssize_t id, uint32_t h) {
    Py_ssize_t mask = c->shape_cap - 1, i = h & mask;
    while (c->shape_table[i]) i = (i + 1) & mask;
    c->shape_table[i] = (int32_t)id + 1;
}

int subset_shape_table_grow(Core *c) {
    Py_ssize_t cap = c->shape_cap ? 2 * c->shape_cap : 256;
    int32_t *t = calloc((size_t)cap, sizeof(int32_t));
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    free(c->shape_table);
    c->shape_table = t;
    c->shape_cap = cap;
    for (Py_ssize_t id = 0; id < c->shape_n.len; id++) shape_insert(c, id, (uint32_t)c->shape_hash.data[id]);
    return 0;
}

/* Counts set a[0..n) in `repeated` if it holds a counted region's states and an earlier set has
 * the same shape: the same states with each counted state's repetition count dropped.  Such sets
 * are one place of the grammar at another count (a long string's every character), which the
 * DFA state budget counts once (see `SubsetBuilder.check_size`). */
static int note_shape(Core *c, const int32_t *a, Py_ssize_t n) {
    if (!c->num_counted) return 0;
    int counted = 0;
    c->shape_scratch.len = 0;
    if (pool_reserve(&c->shape_scratch, n)) return -1;
    int32_t *shape = c->shape_scratch.data;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_ssize_t k = a[i] >= c->num_plain ? region_at(c, a[i]) : -1;
        const Region *r = k >= 0 && counts(&c->regions[k]) ? &c->regions[k] : NULL;
        shape[i] = r ? r->first + (a[i] - r->first) % r->width : a[i];
        counted |= r != NULL;
    }
    if (!counted) return 0;
    const Py_ssize_t m = sort_unique(shape, n);
    const uint32_t h = hash_ints(shape, m);
    Py_ssize_t mask = c->shape_cap - 1, i = h & mask;
    for (; c->shape_table[i]; i = (i + 1) & mask) {
        const int32_t id = c->shape_table[i] - 1;
        if ((uint32_t)c->shape_hash.data[id] == h && c->shape_n.data[id] == m &&
            !memcmp(c->shape_pool.data + c->shape_at.data[id], shape, (size_t)m * sizeof(int32_t))) {
            c->repeated++;
            return 0;
        }
    }
    const Py_ssize_t id = c->shape_n.len;
    if (pool_reserve(&c->shape_pool, m)) return -1;
    memcpy(c->shape_pool.data + c->shape_pool.len, shape, (size_t)m * sizeof(int32_t));
    if (pool_push(&c->shape_at, (int32_t)c->shape_pool.len) || pool_push(&c->shape_n, (int32_t)m) ||
        pool_push(&c->shape_hash, (int32_t)h))
        return -1;
    c->shape_pool.len += m;
    if (2 * c->shape_n.len > c->shape_cap) return subset_shape_table_grow(c);
    shape_insert(c, id, h);
    return 0;
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
    if (note_shape(c, a, n)) return -1;
    if (indexed) {
        if (2 * (Py_ssize_t)c->set_n.len > c->table_cap) {
            if (subset_table_grow(c)) return -1;
        } else {
            table_insert(c, sid, h);
        }
    }
    return sid;
}

/* ------------------------------------------------------------------ slots */

/* The per-NFA-state arrays (`Core`: edge_at ... succ, mark), zeroed past their old length. */
static int grow_arrays(Core *c, Py_ssize_t slots) {
    int32_t **arrays[] = {&c->edge_at, &c->edge_n, &c->eps_at, &c->eps_n, &c->clo_at, &c->clo_n, &c->succ,
                          (int32_t **)&c->mark};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
        int32_t *grown = realloc(*arrays[i], (size_t)slots * sizeof(int32_t));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        memset(grown + c->slots, 0, (size_t)(slots - c->slots) * sizeof(int32_t));
        *arrays[i] = grown;
    }
    c->slots = slots;
    return 0;
}

static void map_insert(Core *c, int32_t q, int32_t slot) {
    Py_ssize_t mask = c->slot_cap - 1, i = ((uint32_t)q * 0x9E3779B1u) & mask;
    while (c->slot_keys[i]) i = (i + 1) & mask;
    c->slot_keys[i] = q + 1, c->slot_vals[i] = slot;
}

static int grow_map(Core *c) {
    const Py_ssize_t old = c->slot_cap, cap = old ? 2 * old : 256;
    int32_t *keys = c->slot_keys, *vals = c->slot_vals;
    c->slot_keys = calloc((size_t)cap, sizeof(int32_t));
    c->slot_vals = malloc((size_t)cap * sizeof(int32_t));
    if (!c->slot_keys || !c->slot_vals) {
        free(c->slot_keys), free(c->slot_vals);
        c->slot_keys = keys, c->slot_vals = vals;
        PyErr_NoMemory();
        return -1;
    }
    c->slot_cap = cap;
    for (Py_ssize_t i = 0; i < old; i++)
        if (keys[i]) map_insert(c, keys[i] - 1, vals[i]);
    free(keys), free(vals);
    return 0;
}

/* The arrays for the NFA's own states and an empty map. */
int subset_slots_init(Core *c) {
    return grow_arrays(c, (Py_ssize_t)c->num_plain + 1) || grow_map(c) ? -1 : 0;
}

/* A slot for region state q (not in the map yet). */
int32_t subset_new_slot(Core *c, int32_t q) {
    if (q < 0 || q >= c->num_nfa) {
        PyErr_SetString(PyExc_ValueError, "subset core: an NFA state is out of range");
        return -1;
    }
    const int32_t slot = c->num_plain + (int32_t)c->materialised;
    if (slot >= c->slots && grow_arrays(c, 2 * c->slots)) return -1;
    if (2 * (c->materialised + 1) > c->slot_cap && grow_map(c)) return -1;
    map_insert(c, q, slot);
    c->materialised++;
    const Py_ssize_t k = region_at(c, q);
    c->counted_slots += k >= 0 && counts(&c->regions[k]);
    return slot;
}

void subset_slots_free(Core *c) {
    int32_t *arrays[] = {c->edge_at, c->edge_n, c->eps_at, c->eps_n, c->clo_at, c->clo_n, c->succ,
                         (int32_t *)c->mark, c->slot_keys, c->slot_vals};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) free(arrays[i]);
}

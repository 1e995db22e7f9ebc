/* Internal header of the lazy subset construction core (module `formwork.grammar._subset`), shared by
 *   _subset.c       the module: its functions (`edge_cuts`, `table_ranges`) and the C API capsule
 *   _subset_type.c  the `SubsetCore` type: init, dealloc and its Python-facing methods
 *   _subset_rows.c  reading the NFA's moves, epsilon closures, and DFA rows (`subset_fill_row`)
 *   _subset_sets.c  the interned DFA states (sets of NFA states) and their hash table, and where
 *                   the per-NFA-state arrays keep the regions' states reached (`slot_of`)
 * It holds the structs, the small helpers hot loops call (static inline, so they stay inlined,
 * among them the hash-table lookup `intern`), and the prototypes of the shared functions.
 */
#ifndef FORMWORK_SUBSET_CORE_H
#define FORMWORK_SUBSET_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_nfa_flat.h"

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Pool;

static inline int pool_reserve(Pool *p, Py_ssize_t more) {
    if (p->len + more <= p->cap) return 0;
    Py_ssize_t cap = p->cap ? 2 * p->cap : 256;
    while (cap < p->len + more) cap *= 2;
    int32_t *grown = realloc(p->data, (size_t)cap * sizeof(int32_t));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    p->data = grown;
    p->cap = cap;
    return 0;
}

static inline int pool_push(Pool *p, int32_t x) {
    if (pool_reserve(p, 1)) return -1;
    p->data[p->len++] = x;
    return 0;
}

enum { REGION_DFA = 0, REGION_TEMPLATE = 1, REGION_COUNTED = 2, REGION_COUNTED_DFA = 3 };

enum { REGION_KEYS_START = 1, REGION_OPEN = 2 };

/* A counted region (`_nfa_regions.c`, `nfab_counted`) repeats its item NFA lo..hi times: its state
 * first + j * width is the place after j repetitions (1 <= j <= hi), first + j * width + x - 1
 * the item's state x >= 2 in repetition j + 1, with width = size - 1. */
typedef struct {
    int32_t first, last, end, start, kind, flags;
    PyObject *a, *b; /* DFA: per-state byte ranges, accepting bytes; template: its flat moves, unused;
                        counted: its item's flat moves, (lo, hi) */
    int32_t size;    /* template, counted: the number of states of its NFA */
    int32_t lo, hi, width; /* counted; a counted DFA (`counted_dfa.py`): hi and its width, n live states */
    const uint8_t *accepting, *tick; /* a counted DFA: per state of its product (0 dead, 1..n) */
    const int32_t *least;
} Region;

/* Whether r counts (its state first + j * width + o is place o after j counts), and so its
 * places at every count are one for the budgets. */
static inline int counts(const Region *r) { return r->kind == REGION_COUNTED || r->kind == REGION_COUNTED_DFA; }

typedef struct {
    PyObject_HEAD
    PyObject *moves, *regions_obj, *sets; /* moves: the flat layout of _nfa_flat.h */
    Region *regions;
    Py_ssize_t num_regions;
    int32_t class_of_byte[256];
    int32_t num_classes, final, num_nfa, num_plain; /* NFA states in all; the NFA's own (not regions') */
    /* per NFA state, by its slot (see `slot_of`): offset + 1 into a pool (0: not computed yet) and length */
    int32_t *edge_at, *edge_n, *eps_at, *eps_n, *clo_at, *clo_n, *succ;
    Py_ssize_t slots; /* the arrays' length: num_plain + room for regions' states reached */
    int32_t *slot_keys, *slot_vals; /* open addressing: a region state + 1 (0 empty) -> its slot */
    Py_ssize_t slot_cap, materialised, counted_slots; /* regions' states given a slot so far; of counted ones */
    Pool edge_pool, eps_pool, clo_pool;
    /* interned sets: members in set_pool at set_at[sid], set_n[sid] of them */
    Pool set_pool, set_at, set_n, set_hash, set_acc;
    /* the interned sets that hold a counted region's states, with every count dropped (their
       shapes, see `note_shape`), in an open-addressing table like `table`; `repeated`: the sets
       whose shape an earlier one had */
    Pool shape_pool, shape_at, shape_n, shape_hash, shape_scratch;
    int32_t *shape_table;
    Py_ssize_t shape_cap, repeated, num_counted;
    int32_t *table; /* open addressing: sid + 1, 0 empty */
    Py_ssize_t table_cap;
    int32_t hidden; /* a state left out of the table (an empty START), or -1 */
    uint32_t *mark, stamp;
    Pool stack, scratch, gathered, counts, targets;
    Py_ssize_t loaded;
    Pool keyed_starts, open_starts; /* sorted (start, region) pairs; sorted starts */
} Core;

/* ------------------------------------------------------------------ shared functions */

extern PyTypeObject subset_core_type; /* SubsetCore (_subset_type.c) */

/* _subset_sets.c */
int subset_table_grow(Core *c);
int subset_shape_table_grow(Core *c);
PyObject *subset_ints_tuple(const int32_t *a, Py_ssize_t n);
int32_t subset_add_set(Core *c, const int32_t *a, Py_ssize_t n, uint32_t h, int indexed);

/* _subset_rows.c */
int subset_closure(Core *c, int32_t q);
int subset_fill_row(Core *c, int32_t sid, int32_t *row);

/* _subset_sets.c: slots */
int32_t subset_new_slot(Core *c, int32_t q);
int subset_slots_init(Core *c);
void subset_slots_free(Core *c);

/* ------------------------------------------------------------------ small helpers */

/* Whether a sequence argument is a list or a tuple (read with PySequence_Fast_*). */
static inline int is_list_or_tuple(PyObject *seq) { return PyList_Check(seq) || PyTuple_Check(seq); }

/* The items of a list or tuple (borrowed), or NULL with a ValueError. */
static inline PyObject **items_of(PyObject *seq, Py_ssize_t *n, const char *what) {
    static PyObject *none[1];
    if (PyList_Check(seq)) {
        *n = PyList_GET_SIZE(seq);
        return *n ? ((PyListObject *)seq)->ob_item : none; /* an empty list has no item array */
    }
    if (PyTuple_Check(seq)) {
        *n = PyTuple_GET_SIZE(seq);
        return ((PyTupleObject *)seq)->ob_item;
    }
    PyErr_Format(PyExc_ValueError, "subset core: %s is not a list or tuple", what);
    return NULL;
}

static inline int int_of(PyObject *o, long lo, long hi, int32_t *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < lo || v >= hi) {
        PyErr_Format(PyExc_ValueError, "subset core: %ld is out of range [%ld, %ld)", v, lo, hi);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static inline void sort_ints(int32_t *a, Py_ssize_t n) {
    for (Py_ssize_t i = 1; i < n; i++) { /* sets are small: insertion sort */
        int32_t x = a[i];
        Py_ssize_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

static inline int cmp_int(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

static inline Py_ssize_t sort_unique(int32_t *a, Py_ssize_t n) {
    if (n > 32)
        qsort(a, (size_t)n, sizeof(int32_t), cmp_int);
    else
        sort_ints(a, n);
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (k == 0 || a[k - 1] != a[i]) a[k++] = a[i];
    return k;
}

/* Index of x in the sorted array a[0..n) (stride `step`), or -1. */
static inline Py_ssize_t find_sorted(const int32_t *a, Py_ssize_t n, Py_ssize_t step, int32_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid * step] < x) lo = mid + 1; else hi = mid;
    }
    return lo < n && a[lo * step] == x ? lo : -1;
}

/* The index of NFA state q in the per-state arrays: q itself for the NFA's own states, else a
 * slot given on first use (so the arrays grow with the regions' states reached, not with their
 * size); -1 with an exception (out of memory).  May move the arrays: index them afresh after. */
static inline int32_t slot_of(Core *c, int32_t q) {
    if (q < c->num_plain) return q;
    Py_ssize_t mask = c->slot_cap - 1, i = ((uint32_t)q * 0x9E3779B1u) & mask;
    while (c->slot_keys[i]) {
        if (c->slot_keys[i] == q + 1) return c->slot_vals[i];
        i = (i + 1) & mask;
    }
    return subset_new_slot(c, q);
}

/* Maps a state number of a region's source (x) to the document NFA's. */
static inline int32_t region_target(const Region *r, int32_t x) {
    if (r->kind == REGION_DFA) return r->first - 1 + x;
    return x > 1 ? r->first - 2 + x : (x ? r->end : r->start);
}

/* The region holding NFA state q, or -1. */
static inline Py_ssize_t region_at(const Core *c, int32_t q) {
    Py_ssize_t lo = 0, hi = c->num_regions;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (c->regions[mid].first <= q) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && q < c->regions[lo - 1].last ? lo - 1 : -1;
}

/* Reads an edge (lo, hi, target) with target in [0, bound); -1 with a ValueError if malformed. */
static inline int read_edge(PyObject *edge, long bound, int32_t *lo, int32_t *hi, int32_t *target) {
    Py_ssize_t three;
    PyObject **t = items_of(edge, &three, "edge");
    if (!t) return -1;
    if (three != 3) {
        PyErr_SetString(PyExc_ValueError, "subset core: an edge is not (lo, hi, target)");
        return -1;
    }
    return int_of(t[0], 0, 256, lo) || int_of(t[1], *lo, 256, hi) || int_of(t[2], 0, bound, target) ? -1 : 0;
}

static inline uint32_t hash_ints(const int32_t *a, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint32_t)a[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* The DFA state of set a[0..n) (sorted, distinct), added if new; -1 on error. */
static inline int32_t intern(Core *c, const int32_t *a, Py_ssize_t n) {
    uint32_t h = hash_ints(a, n);
    Py_ssize_t mask = c->table_cap - 1, i = h & mask;
    while (c->table[i]) {
        int32_t sid = c->table[i] - 1;
        if ((uint32_t)c->set_hash.data[sid] == h && c->set_n.data[sid] == n &&
            !memcmp(c->set_pool.data + c->set_at.data[sid], a, (size_t)n * sizeof(int32_t)))
            return sid;
        i = (i + 1) & mask;
    }
    return subset_add_set(c, a, n, h, 1);
}

#endif

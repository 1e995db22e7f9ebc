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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_subset_api.h"

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Pool;

static int pool_reserve(Pool *p, Py_ssize_t more) {
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

static int pool_push(Pool *p, int32_t x) {
    if (pool_reserve(p, 1)) return -1;
    p->data[p->len++] = x;
    return 0;
}

enum { REGION_DFA = 0, REGION_TEMPLATE = 1 };

enum { REGION_KEYS_START = 1, REGION_OPEN = 2 };

typedef struct {
    int32_t first, last, end, start, kind, flags;
    PyObject *a, *b; /* DFA: per-state byte ranges, accepting bytes; template: eps, edges */
} Region;

typedef struct {
    PyObject_HEAD
    PyObject *eps, *edges, *regions_obj, *sets;
    Region *regions;
    Py_ssize_t num_regions;
    int32_t class_of_byte[256];
    int32_t num_classes, final, num_nfa;
    /* per NFA state: offset + 1 into a pool (0: not computed yet) and length */
    int32_t *edge_at, *edge_n, *eps_at, *eps_n, *clo_at, *clo_n, *succ;
    Pool edge_pool, eps_pool, clo_pool;
    /* interned sets: members in set_pool at set_at[sid], set_n[sid] of them */
    Pool set_pool, set_at, set_n, set_hash, set_acc;
    int32_t *table; /* open addressing: sid + 1, 0 empty */
    Py_ssize_t table_cap;
    int32_t hidden; /* a state left out of the table (an empty START), or -1 */
    uint32_t *mark, stamp;
    Pool stack, scratch, gathered, counts, targets;
    Py_ssize_t loaded;
    Pool keyed_starts, open_starts; /* sorted (start, region) pairs; sorted starts */
} Core;

static void core_dealloc(Core *c) {
    Py_XDECREF(c->eps);
    Py_XDECREF(c->edges);
    Py_XDECREF(c->regions_obj);
    Py_XDECREF(c->sets);
    free(c->regions);
    int32_t *arrays[] = {c->edge_at, c->edge_n, c->eps_at, c->eps_n, c->clo_at, c->clo_n, c->succ, c->table};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) free(arrays[i]);
    free(c->mark);
    Pool *pools[] = {&c->edge_pool, &c->eps_pool, &c->clo_pool, &c->set_pool, &c->set_at, &c->set_n,
                     &c->set_hash, &c->set_acc, &c->keyed_starts, &c->open_starts, &c->stack, &c->scratch, &c->gathered, &c->counts, &c->targets};
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) free(pools[i]->data);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Whether the NFA's per-state moves come as a list or a tuple (read with PySequence_Fast_*). */
static inline int is_list_or_tuple(PyObject *seq) { return PyList_Check(seq) || PyTuple_Check(seq); }

/* The items of a list or tuple (borrowed), or NULL with a ValueError. */
static PyObject **items_of(PyObject *seq, Py_ssize_t *n, const char *what) {
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

static int int_of(PyObject *o, long lo, long hi, int32_t *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < lo || v >= hi) {
        PyErr_Format(PyExc_ValueError, "subset core: %ld is out of range [%ld, %ld)", v, lo, hi);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static void sort_ints(int32_t *a, Py_ssize_t n) {
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

static int cmp_int(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

static int cmp_pair(const void *x, const void *y) {
    const int32_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

static Py_ssize_t sort_unique(int32_t *a, Py_ssize_t n) {
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
static Py_ssize_t find_sorted(const int32_t *a, Py_ssize_t n, Py_ssize_t step, int32_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid * step] < x) lo = mid + 1; else hi = mid;
    }
    return lo < n && a[lo * step] == x ? lo : -1;
}

/* Maps a state number of a region's source (x) to the document NFA's. */
static inline int32_t region_target(const Region *r, int32_t x) {
    if (r->kind == REGION_DFA) return r->first - 1 + x;
    return x > 1 ? r->first - 2 + x : (x ? r->end : r->start);
}

/* The region holding NFA state q, or -1. */
static Py_ssize_t region_at(const Core *c, int32_t q) {
    Py_ssize_t lo = 0, hi = c->num_regions;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (c->regions[mid].first <= q) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && q < c->regions[lo - 1].last ? lo - 1 : -1;
}

/* Reads an edge (lo, hi, target) with target in [0, bound); -1 with a ValueError if malformed. */
static int read_edge(PyObject *edge, long bound, int32_t *lo, int32_t *hi, int32_t *target) {
    Py_ssize_t three;
    PyObject **t = items_of(edge, &three, "edge");
    if (!t) return -1;
    if (three != 3) {
        PyErr_SetString(PyExc_ValueError, "subset core: an edge is not (lo, hi, target)");
        return -1;
    }
    return int_of(t[0], 0, 256, lo) || int_of(t[1], *lo, 256, hi) || int_of(t[2], 0, bound, target) ? -1 : 0;
}

/* A region's state number x mapped into the document NFA (or x itself outside regions), checked. */
static int document_state(const Core *c, const Region *r, int32_t x, int32_t *out) {
    *out = r ? region_target(r, x) : x;
    if (*out < 0 || *out >= c->num_nfa) {
        PyErr_SetString(PyExc_ValueError, "subset core: a region target is out of range");
        return -1;
    }
    return 0;
}

/* Records the moves of NFA state q (epsilon targets and edges over byte classes). */
static int load(Core *c, int32_t q) {
    if (q >= PySequence_Fast_GET_SIZE(c->eps) || q >= PySequence_Fast_GET_SIZE(c->edges)) {
        PyErr_SetString(PyExc_ValueError, "subset core: the NFA's move lists shrank");
        return -1;
    }
    PyObject *eps = PySequence_Fast_GET_ITEM(c->eps, q), *edges = PySequence_Fast_GET_ITEM(c->edges, q);
    const Region *r = NULL;
    int32_t local = 0;
    if (eps == Py_None) {
        Py_ssize_t k = region_at(c, q);
        if (k < 0) {
            PyErr_Format(PyExc_ValueError, "subset core: NFA state %d has no moves and no region", q);
            return -1;
        }
        r = &c->regions[k];
        Py_ssize_t n;
        PyObject **src = items_of(r->a, &n, "region source");
        if (!src) return -1;
        local = r->kind == REGION_DFA ? q - r->first + 1 : q - r->first + 2;
        if (local >= n) {
            PyErr_SetString(PyExc_ValueError, "subset core: region source too short");
            return -1;
        }
        if (r->kind == REGION_DFA) {
            edges = src[local];
            eps = NULL;
        } else {
            eps = src[local];
            PyObject **tedges = items_of(r->b, &n, "template edges");
            if (!tedges) return -1;
            if (local >= n) {
                PyErr_SetString(PyExc_ValueError, "subset core: template edges too short");
                return -1;
            }
            edges = tedges[local];
        }
    }
    Py_ssize_t ne, nx = 0;
    PyObject **e_items = items_of(edges, &ne, "edges"), **x_items = NULL;
    if (!e_items) return -1;
    if (eps) {
        x_items = items_of(eps, &nx, "epsilon moves");
        if (!x_items) return -1;
    }
    /* how many states the moves' numbering has: the document's, the DFA's or the template's */
    const long bound = !r ? c->num_nfa : r->last - r->first + (r->kind == REGION_DFA ? 1 : 2);
    /* epsilon moves */
    Py_ssize_t at = c->eps_pool.len;
    if (r && r->kind == REGION_DFA) {
        Py_ssize_t nacc = PyBytes_Check(r->b) ? PyBytes_GET_SIZE(r->b) : -1;
        if (local >= nacc) {
            PyErr_SetString(PyExc_ValueError, "subset core: DFA accepting flags too short");
            return -1;
        }
        if (PyBytes_AS_STRING(r->b)[local] && pool_push(&c->eps_pool, r->end)) return -1;
    } else {
        if (pool_reserve(&c->eps_pool, nx)) return -1;
        for (Py_ssize_t i = 0; i < nx; i++) {
            int32_t x;
            if (int_of(x_items[i], 0, bound, &x) || document_state(c, r, x, c->eps_pool.data + c->eps_pool.len))
                return -1;
            c->eps_pool.len++;
        }
    }
    c->eps_at[q] = (int32_t)at + 1;
    c->eps_n[q] = (int32_t)(c->eps_pool.len - at);
    /* edges (lo, hi, target) -> (first class, last class, target) */
    at = c->edge_pool.len;
    if (pool_reserve(&c->edge_pool, 3 * ne)) return -1;
    for (Py_ssize_t i = 0; i < ne; i++) {
        int32_t lo, hi, x, *out = c->edge_pool.data + c->edge_pool.len;
        if (read_edge(e_items[i], bound, &lo, &hi, &x) || document_state(c, r, x, &out[2])) return -1;
        out[0] = c->class_of_byte[lo];
        out[1] = c->class_of_byte[hi];
        c->edge_pool.len += 3;
    }
    c->edge_at[q] = (int32_t)at + 1;
    c->edge_n[q] = (int32_t)((c->edge_pool.len - at) / 3);
    c->loaded++;
    return 0;
}

static inline int ensure_loaded(Core *c, int32_t q) {
    return c->eps_at[q] ? 0 : load(c, q);
}

/* The epsilon closure of q (sorted, itself included), computed once. */
static int closure(Core *c, int32_t q) {
    if (c->clo_at[q]) return 0;
    if (++c->stamp == 0) {
        memset(c->mark, 0, (size_t)c->num_nfa * sizeof(uint32_t));
        c->stamp = 1;
    }
    c->stack.len = 0;
    c->scratch.len = 0;
    c->mark[q] = c->stamp;
    if (pool_push(&c->stack, q) || pool_push(&c->scratch, q)) return -1;
    while (c->stack.len) {
        int32_t x = c->stack.data[--c->stack.len];
        if (ensure_loaded(c, x)) return -1;
        for (int32_t i = 0; i < c->eps_n[x]; i++) {
            int32_t t = c->eps_pool.data[c->eps_at[x] - 1 + i];
            if (c->mark[t] != c->stamp) {
                c->mark[t] = c->stamp;
                if (pool_push(&c->stack, t) || pool_push(&c->scratch, t)) return -1;
            }
        }
    }
    Py_ssize_t n = sort_unique(c->scratch.data, c->scratch.len);
    if (pool_reserve(&c->clo_pool, n)) return -1;
    memcpy(c->clo_pool.data + c->clo_pool.len, c->scratch.data, (size_t)n * sizeof(int32_t));
    c->clo_at[q] = (int32_t)c->clo_pool.len + 1;
    c->clo_n[q] = (int32_t)n;
    c->clo_pool.len += n;
    return 0;
}

static uint32_t hash_ints(const int32_t *a, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint32_t)a[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static void table_insert(Core *c, int32_t sid, uint32_t h) {
    Py_ssize_t mask = c->table_cap - 1, i = h & mask;
    while (c->table[i]) i = (i + 1) & mask;
    c->table[i] = sid + 1;
}

static int table_grow(Core *c) {
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
static PyObject *ints_tuple(const int32_t *a, Py_ssize_t n) {
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
static int32_t add_set(Core *c, const int32_t *a, Py_ssize_t n, uint32_t h, int indexed) {
    int32_t sid = (int32_t)c->set_n.len;
    PyObject *tuple = ints_tuple(a, n);
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
            if (table_grow(c)) return -1;
        } else {
            table_insert(c, sid, h);
        }
    }
    return sid;
}

/* The DFA state of set a[0..n) (sorted, distinct), added if new; -1 on error. */
static int32_t intern(Core *c, const int32_t *a, Py_ssize_t n) {
    uint32_t h = hash_ints(a, n);
    Py_ssize_t mask = c->table_cap - 1, i = h & mask;
    while (c->table[i]) {
        int32_t sid = c->table[i] - 1;
        if ((uint32_t)c->set_hash.data[sid] == h && c->set_n.data[sid] == n &&
            !memcmp(c->set_pool.data + c->set_at.data[sid], a, (size_t)n * sizeof(int32_t)))
            return sid;
        i = (i + 1) & mask;
    }
    return add_set(c, a, n, h, 1);
}

/* The DFA state of closure(t). */
static int32_t successor(Core *c, int32_t t) {
    if (c->succ[t]) return c->succ[t] - 1;
    if (closure(c, t)) return -1;
    int32_t sid = intern(c, c->clo_pool.data + c->clo_at[t] - 1, c->clo_n[t]);
    if (sid >= 0) c->succ[t] = sid + 1;
    return sid;
}

/* The DFA state of the union of the closures of targets[0..n) (sorted, distinct, n >= 2). */
static int32_t union_successor(Core *c, const int32_t *targets, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (closure(c, targets[i])) return -1;
    c->scratch.len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t t = targets[i];
        if (pool_reserve(&c->scratch, c->clo_n[t])) return -1;
        memcpy(c->scratch.data + c->scratch.len, c->clo_pool.data + c->clo_at[t] - 1,
               (size_t)c->clo_n[t] * sizeof(int32_t));
        c->scratch.len += c->clo_n[t];
    }
    Py_ssize_t m = sort_unique(c->scratch.data, c->scratch.len);
    return intern(c, c->scratch.data, m);
}

/* Writes the successor per byte class of DFA state sid into row[0..num_classes). */
static int fill_row(Core *c, int32_t sid, int32_t *row) {
    const int32_t k = c->num_classes;
    memset(row, 0, (size_t)k * sizeof(int32_t));
    c->gathered.len = 0;
    for (int32_t i = 0; i < c->set_n.data[sid]; i++) {
        int32_t q = c->set_pool.data[c->set_at.data[sid] + i];
        if (ensure_loaded(c, q)) return -1;
        if (pool_reserve(&c->gathered, 3 * c->edge_n[q])) return -1;
        memcpy(c->gathered.data + c->gathered.len, c->edge_pool.data + c->edge_at[q] - 1,
               (size_t)(3 * c->edge_n[q]) * sizeof(int32_t));
        c->gathered.len += 3 * c->edge_n[q];
    }
    const Py_ssize_t ne = c->gathered.len / 3;
    if (!ne) return 0;
    /* segments: runs of classes that the same edges cover */
    uint8_t cut[257] = {0};
    int32_t seg_of[257];
    for (Py_ssize_t e = 0; e < ne; e++) {
        cut[c->gathered.data[3 * e]] = 1;
        cut[c->gathered.data[3 * e + 1] + 1] = 1;
    }
    int32_t nseg = 0, seg_start[258];
    for (int32_t x = 0; x <= k; x++) {
        if (cut[x] || x == 0) seg_start[nseg++] = x;
        seg_of[x] = nseg - 1;
    }
    seg_start[nseg] = k;
    c->counts.len = 0;
    if (pool_reserve(&c->counts, nseg + 1)) return -1;
    int32_t *count = c->counts.data;
    memset(count, 0, (size_t)(nseg + 1) * sizeof(int32_t));
    for (Py_ssize_t e = 0; e < ne; e++)
        for (int32_t s = seg_of[c->gathered.data[3 * e]]; s <= seg_of[c->gathered.data[3 * e + 1]]; s++)
            count[s + 1]++;
    for (int32_t s = 0; s < nseg; s++) count[s + 1] += count[s]; /* now offsets */
    c->targets.len = 0;
    if (pool_reserve(&c->targets, count[nseg])) return -1;
    int32_t *tg = c->targets.data, fill[258];
    memcpy(fill, count, (size_t)(nseg + 1) * sizeof(int32_t));
    for (Py_ssize_t e = 0; e < ne; e++)
        for (int32_t s = seg_of[c->gathered.data[3 * e]]; s <= seg_of[c->gathered.data[3 * e + 1]]; s++)
            tg[fill[s]++] = c->gathered.data[3 * e + 2];
    int32_t prev_lo = -1, prev_n = 0, prev_sid = 0;
    for (int32_t s = 0; s < nseg; s++) {
        int32_t lo = count[s], n = count[s + 1] - count[s];
        if (!n) continue;
        n = (int32_t)sort_unique(tg + lo, n);
        int32_t next;
        if (n == prev_n && !memcmp(tg + lo, tg + prev_lo, (size_t)n * sizeof(int32_t)))
            next = prev_sid;
        else
            next = n == 1 ? successor(c, tg[lo]) : union_successor(c, tg + lo, n);
        if (next < 0) return -1;
        prev_lo = lo, prev_n = n, prev_sid = next;
        for (int32_t x = seg_start[s]; x < seg_start[s + 1]; x++) row[x] = next;
    }
    return 0;
}

/* An int argument in [0, limit), or -1 with a ValueError naming `what`. */
static int32_t index_arg(PyObject *arg, Py_ssize_t limit, const char *what) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= limit) {
        PyErr_Format(PyExc_ValueError, "subset core: %s %ld out of range", what, v);
        return -1;
    }
    return (int32_t)v;
}

static PyObject *core_closure(Core *c, PyObject *arg) {
    int32_t q = index_arg(arg, c->num_nfa, "NFA state");
    if (q < 0 || closure(c, q)) return NULL;
    return ints_tuple(c->clo_pool.data + c->clo_at[q] - 1, c->clo_n[q]);
}

static PyObject *core_intern(Core *c, PyObject *arg) {
    Py_ssize_t n;
    PyObject **items = items_of(arg, &n, "state set");
    if (!items) return NULL;
    c->scratch.len = 0;
    if (pool_reserve(&c->scratch, n)) return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (int_of(items[i], 0, c->num_nfa, &c->scratch.data[i])) return NULL;
    int32_t sid = intern(c, c->scratch.data, sort_unique(c->scratch.data, n));
    return sid < 0 ? NULL : PyLong_FromLong(sid);
}

static PyObject *core_rows(Core *c, PyObject *args) {
    PyObject *states;
    Py_buffer rows = {0}, expanded = {0};
    if (!PyArg_ParseTuple(args, "Ow*w*", &states, &rows, &expanded)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, height = rows.len / 4 / c->num_classes;
    PyObject **items = items_of(states, &n, "states");
    if (!items) goto done;
    if (rows.len != height * 4 * c->num_classes || expanded.len < height) {
        PyErr_SetString(PyExc_ValueError, "subset core: row table and flags disagree");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t sid;
        if (int_of(items[i], 0, c->set_n.len < height ? c->set_n.len : height, &sid)) goto done;
        if (fill_row(c, sid, (int32_t *)rows.buf + (Py_ssize_t)sid * c->num_classes)) goto done;
        ((uint8_t *)expanded.buf)[sid] = 1;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&expanded);
    return result;
}

static PyObject *core_locate(Core *c, PyObject *arg) {
    int32_t sid = index_arg(arg, c->set_n.len, "DFA state");
    if (sid < 0) return NULL;
    const int32_t *set = c->set_pool.data + c->set_at.data[sid];
    for (int32_t i = 0; i < c->set_n.data[sid]; i++) {
        Py_ssize_t k = find_sorted(c->keyed_starts.data, c->keyed_starts.len / 2, 2, set[i]);
        if (k >= 0) return PyLong_FromLong(c->keyed_starts.data[2 * k + 1]);
        k = region_at(c, set[i]);
        if (k >= 0) return PyLong_FromSsize_t(k);
    }
    return PyLong_FromLong(-1);
}

static PyObject *core_in_open(Core *c, PyObject *arg) {
    int32_t sid = index_arg(arg, c->set_n.len, "DFA state");
    if (sid < 0) return NULL;
    const int32_t *set = c->set_pool.data + c->set_at.data[sid];
    for (int32_t i = 0; i < c->set_n.data[sid] && c->open_starts.len; i++) {
        Py_ssize_t k = region_at(c, set[i]);
        if (find_sorted(c->open_starts.data, c->open_starts.len, 1, set[i]) >= 0 ||
            (k >= 0 && (c->regions[k].flags & REGION_OPEN)))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static int api_fill(PyObject *obj, int64_t sid, int32_t *rows, int64_t num_classes, uint8_t *expanded,
                    uint8_t *accepting, int64_t height) {
    Core *c = (Core *)obj;
    Py_ssize_t before = c->set_n.len;
    if (sid < 0 || sid >= before || sid >= height || num_classes != c->num_classes) {
        PyErr_SetString(PyExc_ValueError, "subset core: state out of range, or rows of another automaton");
        return -1;
    }
    if (fill_row(c, (int32_t)sid, rows + sid * c->num_classes)) return -1;
    expanded[sid] = 1;
    for (Py_ssize_t x = before; x < c->set_n.len && x < height; x++) accepting[x] = (uint8_t)c->set_acc.data[x];
    return 0;
}

static int64_t api_num_sets(PyObject *obj) {
    return ((Core *)obj)->set_n.len;
}

static PyObject *core_accepting_from(Core *c, PyObject *arg) {
    Py_ssize_t start = index_arg(arg, c->set_n.len + 1, "DFA state");
    if (start < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, c->set_n.len - start);
    if (!out) return NULL;
    char *flags = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = start; i < c->set_n.len; i++) flags[i - start] = (char)c->set_acc.data[i];
    return out;
}

static PyObject *core_loaded(Core *c, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(c->loaded);
}

static int core_init(Core *c, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    PyObject *eps, *edges, *regions, *sets;
    Py_buffer cob = {0};
    int num_classes, start, final, empty;
    if (!PyArg_ParseTuple(args, "OOO!y*iiipO!", &eps, &edges, &PyList_Type, &regions, &cob, &num_classes,
                          &start, &final, &empty, &PyList_Type, &sets))
        return -1;
    int rc = -1;
    if (!is_list_or_tuple(eps) || !is_list_or_tuple(edges)) {
        PyErr_SetString(PyExc_TypeError, "subset core: eps and edges must be lists or tuples");
        goto done;
    }
    if (c->eps) {
        PyErr_SetString(PyExc_RuntimeError, "subset core: already initialised");
        goto done;
    }
    Py_ssize_t num_nfa = PySequence_Fast_GET_SIZE(eps);
    if (cob.len != 256 * 4 || PySequence_Fast_GET_SIZE(edges) != num_nfa || num_nfa >= INT32_MAX / 2 ||
        num_classes < 1 || num_classes > 256 || start < 0 || start >= num_nfa || final < 0 ||
        final >= num_nfa || PyList_GET_SIZE(sets) != 0) {
        PyErr_SetString(PyExc_ValueError, "subset core: inconsistent arguments");
        goto done;
    }
    for (int i = 0; i < 256; i++) {
        int32_t k = ((const int32_t *)cob.buf)[i];
        if (k < 0 || k >= num_classes) {
            PyErr_SetString(PyExc_ValueError, "subset core: byte class out of range");
            goto done;
        }
        c->class_of_byte[i] = k;
    }
    c->num_classes = num_classes, c->final = final, c->num_nfa = (int32_t)num_nfa, c->hidden = -1;
    Py_INCREF(eps), Py_INCREF(edges), Py_INCREF(regions), Py_INCREF(sets);
    c->eps = eps, c->edges = edges, c->regions_obj = regions, c->sets = sets;
    c->num_regions = PyList_GET_SIZE(regions);
    c->regions = calloc((size_t)c->num_regions + 1, sizeof(Region));
    int32_t **arrays[] = {&c->edge_at, &c->edge_n, &c->eps_at, &c->eps_n, &c->clo_at, &c->clo_n, &c->succ};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
        if (!(*arrays[i] = calloc((size_t)num_nfa + 1, sizeof(int32_t)))) goto nomem;
    if (!c->regions || !(c->mark = calloc((size_t)num_nfa + 1, sizeof(uint32_t)))) goto nomem;
    for (Py_ssize_t i = 0; i < c->num_regions; i++) {
        Region *r = &c->regions[i];
        PyObject *spec = PyList_GET_ITEM(regions, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 8 ||
            !PyArg_ParseTuple(spec, "iiiiiiOO", &r->first, &r->last, &r->end, &r->start, &r->kind, &r->flags,
                              &r->a, &r->b)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "subset core: bad region");
            goto done;
        }
        if (r->first < 0 || r->last <= r->first || r->last > num_nfa || r->end < 0 || r->end >= num_nfa ||
            r->start < 0 || r->start >= num_nfa || (r->kind != REGION_DFA && r->kind != REGION_TEMPLATE) ||
            (i && r->first < c->regions[i - 1].last) || (r->kind == REGION_DFA && !PyBytes_Check(r->b))) {
            PyErr_SetString(PyExc_ValueError, "subset core: bad region");
            goto done;
        }
        if (((r->flags & REGION_KEYS_START) && (pool_push(&c->keyed_starts, r->start) ||
                                                pool_push(&c->keyed_starts, (int32_t)i))) ||
            ((r->flags & REGION_OPEN) && pool_push(&c->open_starts, r->start)))
            goto done;
    }
    /* the (start, region) pairs by start, then region: of equal starts the last region wins */
    int32_t *pairs = c->keyed_starts.data;
    Py_ssize_t kept = 0;
    if (c->keyed_starts.len) qsort(pairs, (size_t)c->keyed_starts.len / 2, 2 * sizeof(int32_t), cmp_pair);
    for (Py_ssize_t i = 0; i < c->keyed_starts.len / 2; i++) {
        if (kept && pairs[2 * (kept - 1)] == pairs[2 * i]) kept--;
        pairs[2 * kept] = pairs[2 * i], pairs[2 * kept + 1] = pairs[2 * i + 1];
        kept++;
    }
    c->keyed_starts.len = 2 * kept;
    c->open_starts.len = sort_unique(c->open_starts.data, c->open_starts.len);
    if (table_grow(c)) goto done;
    if (add_set(c, NULL, 0, hash_ints(NULL, 0), 1) < 0) goto done; /* DEAD */
    if (empty) {
        if (add_set(c, NULL, 0, 0, 0) < 0) goto done; /* START, the same empty language */
    } else {
        if (closure(c, start)) goto done;
        if (intern(c, c->clo_pool.data + c->clo_at[start] - 1, c->clo_n[start]) != 1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "subset core: bad start state");
            goto done;
        }
    }
    rc = 0;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    PyBuffer_Release(&cob);
    return rc;
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
"dead state 0, as a list of lists of untracked tuples; `table` holds num_states rows of 256 int32.");

static PyObject *table_ranges(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view = {0};
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &view, &n)) return NULL;
    PyObject *out = NULL;
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
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        const int32_t *row = t + q * 256;
        PyObject *runs = PyList_New(0);
        if (!runs) goto fail;
        PyList_SET_ITEM(out, q, runs);
        for (int lo = 0, hi; lo < 256; lo = hi + 1) {
            for (hi = lo; hi < 255 && row[hi + 1] == row[lo]; hi++) {}
            if (row[lo] == 0) continue;
            PyObject *run = Py_BuildValue("(iii)", lo, hi, row[lo]);
            if (!run) goto fail;
            PyObject_GC_UnTrack(run); /* three ints */
            int rc = PyList_Append(runs, run);
            Py_DECREF(run);
            if (rc) goto fail;
        }
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef module_methods[] = {
    {"edge_cuts", edge_cuts, METH_VARARGS, edge_cuts_doc},
    {"table_ranges", table_ranges, METH_VARARGS, table_ranges_doc},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef core_methods[] = {
    {"closure", (PyCFunction)core_closure, METH_O, "closure(q) -> the sorted tuple of states q reaches by epsilon moves"},
    {"intern", (PyCFunction)core_intern, METH_O, "intern(states) -> the DFA state of a closed set of NFA states"},
    {"rows", (PyCFunction)core_rows, METH_VARARGS,
     "rows(states, rows, expanded): writes each state's successor per byte class into `rows`\n"
     "(int32, one row per DFA state) and sets its flag in `expanded`"},
    {"locate", (PyCFunction)core_locate, METH_O,
     "locate(state) -> the index of the first region (in the set's order) whose start, keyed, or\n"
     "whose inside holds one of the state's NFA states; -1 if none"},
    {"in_open", (PyCFunction)core_in_open, METH_O,
     "in_open(state) -> whether the state holds the start of, or a state inside, an open region"},
    {"accepting_from", (PyCFunction)core_accepting_from, METH_O,
     "accepting_from(state) -> a byte per DFA state from `state` on: 1 if its set holds the final state"},
    {"loaded", (PyCFunction)core_loaded, METH_NOARGS, "loaded() -> how many NFA states' moves were read"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "formwork.grammar._subset.SubsetCore",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SubsetCore(eps, edges, regions, class_of_byte, num_classes, start, final, empty, sets)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)core_init,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_methods = core_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_subset", "Lazy subset construction in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__subset(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    static SubsetApi api = {&CoreType, api_fill, api_num_sets};
    PyObject *capsule = PyCapsule_New(&api, SUBSET_API_NAME, NULL);
    if (!capsule || PyModule_AddObject(m, "_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "SubsetCore", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

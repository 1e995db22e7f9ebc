/* Internal header of the C NFA builder (module `formwork.grammar._nfa_build`), shared by
 *   _nfa_build.c    the walk over the IR tree (`build`) and the module glue
 *   _nfa_ir.c       the IR classes: loading them, reading their slots, ir.seq / ir.alt's common cases
 *   _nfa_moves.c    the state and move arrays: budget checks, copies of a repetition, the flat moves
 *                   and the regions out
 *   _nfa_regions.c  DFAs, lexeme templates and counted repetitions spliced in as regions
 *   _nfa_marks.c    `shared_nodes.share`'s table work (`share_in`)
 *   _nfa_chain.c    an object's member list, marked cell by cell (`member_cells`)
 *   _nfa_hash.c     the IR classes' C hash, read from the `_hash` slot (`install_hash`)
 *   _nfa_eq.c       the IR classes' C structural equality (`install_eq`)
 * It holds the builder's structs, the IR classes and interned names, the small helpers hot loops
 * call (static inline, so they stay inlined), and the prototypes of the shared functions.
 */
#ifndef FORMWORK_NFA_BUILD_H
#define FORMWORK_NFA_BUILD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_nfa_flat.h"

/* States are numbered in two spaces: the builder's own states 0..n-1 (moves kept here, counted by
 * the budget), and regions' states, which cost nothing until the subset core reaches them.  While
 * building, region state v is written VIRTUAL + v; when the build ends it becomes n + v, so a
 * region's states follow every own state (see `nfab_moves_flat`). */
enum { EPSILON = -1, MAX_DEPTH = 5000, CHECK_EVERY = 4096, MAX_STATES = INT32_MAX / 4, VIRTUAL = MAX_STATES,
       MAX_IDS = INT32_MAX - 64, MAX_REGION_STATES = MAX_IDS - MAX_STATES }; /* own; in all; regions' */

typedef struct { int32_t lo, hi, target, next; } Move; /* lo EPSILON: an epsilon move */
typedef struct { int32_t head, tail, n_eps, n_edges; } State;

typedef struct {
    State *states;
    Move *moves;
    int32_t *saved; /* prototypes' moves out of their start state: (lo, hi, target) each */
    Py_ssize_t n, cap, nm, mcap, ns, scap, nv; /* nv: region states so far */
    unsigned char cuts[257]; /* 1 at every byte where a byte edge starts, and just past where one ends */
    PyObject *budget, *dfa_of, *template_of, *whole, *lexemes, *regions;
    PyObject *shared, *joins; /* marks of shared nodes (see `shared`); (node, end) -> entry state */
    /* the budget as `nfab_budget_check` keeps it: max_states read at the first check (`limits`),
     * the deadlines at the first with time (`clocks`: 0 not yet, 1 read, -1 none: `check_time` at
     * every check), and the checks with time so far */
    int limits, clocks;
    long long max_states;
    double wall_deadline, cpu_deadline;
    unsigned long time_checks;
    /* automata built before, found here without calling back (see `build`'s `known`) */
    PyObject *known_dfas, *known_templates;
    long long count_from;
} Builder;

/* A repetition's first build (see `nfab_copy`): its states first..last-1, its end, its saved moves. */
typedef struct { int32_t first, last, nxt; Py_ssize_t at, n; } Proto;

/* The IR classes and GrammarError (set by `nfab_load_kinds`, in _nfa_ir.c), and the interned
 * attribute names (set by the module's init, in _nfa_build.c). */
extern PyTypeObject *Empty, *Bytes, *ByteSet, *Seq, *Alt, *Repeat, *And, *Not, *Nothing, *RuleRef;
extern PyObject *GrammarError, *s_empty, *s_items, *s_value, *s_ranges, *s_item, *s_min, *s_max, *s_name,
    *s_num_states, *s_is_empty, *s_moves, *s_counted, *s_check_nfa, *s_check_time, *s_what;

/* Where each IR class keeps its fields: a frozen dataclass with slots stores a field as a member
 * (T_OBJECT_EX) at a fixed offset, read here straight from the object, since the generic
 * attribute lookup costs more than the rest of visiting a node.  -1: read by name. */
enum { F_EMPTY, F_HASH, F_ITEMS, F_VALUE, F_RANGES, F_ITEM, F_MIN, F_MAX, NUM_FIELDS, NUM_KINDS = 10 };
extern Py_ssize_t nfab_offsets[NUM_KINDS][NUM_FIELDS];
extern PyTypeObject **nfab_kind_slots[NUM_KINDS];

/* ------------------------------------------------------------------ _nfa_ir.c */

int nfab_load_kinds(void);
int nfab_bounds(PyObject *node, long long *lo, long long *hi);
PyObject *nfab_seq_of(PyObject *module, PyObject *items);
PyObject *nfab_alt_of(PyObject *module, PyObject *items);
extern const char nfab_seq_of_doc[], nfab_alt_of_doc[];
Py_hash_t nfab_lanes_hash(const Py_hash_t *lanes, Py_ssize_t n);
/* hash("Repeat"): `ir._cached_hash`'s salt for a Repeat's hash (set by nfab_load_kinds) */
extern Py_hash_t nfab_salt_repeat;

/* ------------------------------------------------------------------ _nfa_marks.c */

PyObject *nfab_share_in(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern const char nfab_share_in_doc[];

/* ------------------------------------------------------------------ _nfa_chain.c */

PyObject *nfab_member_cells(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern const char nfab_member_cells_doc[];

/* ------------------------------------------------------------------ _nfa_hash.c */

enum { NFAB_MAX_FIELDS = 4 };
/* A class given a C hash: where its nodes keep `_hash` and their compared fields, and how their
 * hashes are made (the classes live for the process: a reference is kept). */
typedef struct {
    PyTypeObject *kind;
    Py_ssize_t at;                       /* the `_hash` slot */
    Py_hash_t salt;                      /* hash(class name) */
    int n_fields;                        /* its compared fields (-1: not read in C) ... */
    Py_ssize_t fields[NFAB_MAX_FIELDS];  /* ... and their slots */
} HashedClass;

PyObject *nfab_install_hash(PyObject *module, PyObject *args);
extern const char nfab_install_hash_doc[];
const HashedClass *nfab_hashed_class(const PyTypeObject *kind);

/* ------------------------------------------------------------------ _nfa_eq.c */

PyObject *nfab_install_eq(PyObject *module, PyObject *cls);
extern const char nfab_install_eq_doc[];

/* ------------------------------------------------------------------ _nfa_moves.c */

int nfab_budget_check(Builder *b, int with_time);
int32_t nfab_reserve(Builder *b, Py_ssize_t k);
int nfab_copy(Builder *b, const Proto *p, int32_t cur, int32_t nxt);
PyObject *nfab_moves_flat(const Builder *b);
PyObject *nfab_regions_out(const Builder *b);

/* ------------------------------------------------------------------ _nfa_regions.c */

int nfab_embed(Builder *b, PyObject *node, int32_t s, int32_t e);
int nfab_splice(Builder *b, PyObject *node, int32_t s, int32_t e, int open);
int nfab_counted(Builder *b, PyObject *node, PyObject *item, int32_t s, int32_t e, int open);

/* ------------------------------------------------------------------ _nfa_build.c */

int nfab_build(Builder *b, PyObject *node, int32_t s, int32_t e);

/* ------------------------------------------------------------------ small helpers */

/* The offset of `field` in `node`, or -1 (not an IR class's object, or not a plain slot). */
static inline Py_ssize_t offset_of(PyObject *node, int field) {
    const PyTypeObject *kind = Py_TYPE(node);
    for (int i = 0; i < NUM_KINDS; i++)
        if (kind == *nfab_kind_slots[i]) return nfab_offsets[i][field];
    return -1;
}

/* A new reference to `field` (`name`) of `node`; NULL with an exception (e.g. an unset slot). */
static inline PyObject *get_field(PyObject *node, int field, PyObject *name) {
    const Py_ssize_t at = offset_of(node, field);
    PyObject *value = at >= 0 ? *(PyObject **)((char *)node + at) : NULL;
    return value ? Py_NewRef(value) : PyObject_GetAttr(node, name);
}

/* `node`'s hash as `hash(node)` gives it (its Python `__hash__` caches it in the `_hash` slot): read
 * from the slot when cached, so that looking a node up in a dict makes no Python call; -1 with an
 * exception on failure. */
static inline Py_hash_t node_hash(PyObject *node) {
    const Py_ssize_t at = offset_of(node, F_HASH);
    PyObject *cached = at >= 0 ? *(PyObject **)((char *)node + at) : NULL;
    if (!cached || !PyLong_CheckExact(cached)) return PyObject_Hash(node);
    Py_hash_t h = PyLong_AsSsize_t(cached);
    if (h == -1 && PyErr_Occurred()) { /* as the type slot reads a big int's hash */
        PyErr_Clear();
        h = PyLong_Type.tp_hash(cached);
    }
    return h == -1 ? -2 : h;
}

/* `node` in `dict` (1, 0, or -1 with an exception), found by `node_hash`. */
static inline int node_in(PyObject *dict, PyObject *node) {
    if (!PyDict_GET_SIZE(dict)) return 0;
    const Py_hash_t h = node_hash(node);
    return h == -1 ? -1 : _PyDict_Contains_KnownHash(dict, node, h);
}

static inline int grow(void **data, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? 2 * *cap : 64;
    while (c < need) c *= 2;
    void *p = realloc(*data, (size_t)c * size);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    *data = p;
    *cap = c;
    return 0;
}
#define GROW(b, field, cap, need) grow((void **)&(b)->field, &(b)->cap, (need), sizeof(*(b)->field))

/* A tuple the cyclic garbage collector does not track (it holds no container that could). */
static inline PyObject *untracked(PyObject *t) {
    if (t && PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
    return t;
}

/* An int item in [lo, hi), or -1 with a ValueError naming `what`. */
static inline int int_in(PyObject *o, long lo, long hi, const char *what, int32_t *out) {
    long v = PyLong_Check(o) ? PyLong_AsLong(o) : -1;
    if (v == -1 && PyErr_Occurred()) return -1;
    if (!PyLong_Check(o) || v < lo || v >= hi) {
        PyErr_Format(PyExc_ValueError, "NFA construction: bad %s", what);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* The items of a tuple or, unless `tuple_only` (items read while Python code runs), a list,
 * borrowed; or NULL with a ValueError naming `what`. */
static inline PyObject **items_of(PyObject *seq, Py_ssize_t *n, const char *what, int tuple_only) {
    static PyObject *none[1];
    if (PyTuple_Check(seq)) {
        *n = PyTuple_GET_SIZE(seq);
        return ((PyTupleObject *)seq)->ob_item;
    }
    if (!tuple_only && PyList_Check(seq)) {
        *n = PyList_GET_SIZE(seq);
        return *n ? ((PyListObject *)seq)->ob_item : none;
    }
    PyErr_Format(PyExc_ValueError, "NFA construction: %s is not a tuple%s", what, tuple_only ? "" : " or list");
    return NULL;
}

/* A (lo, hi[, target]) byte range with 0 <= lo <= hi <= 255 and target in [0, bound). */
static inline int byte_range(PyObject *o, int with_target, long bound, int32_t out[3]) {
    Py_ssize_t n;
    PyObject **t = items_of(o, &n, "byte range", 0);
    if (!t) return -1;
    if (n != 2 + with_target) {
        PyErr_SetString(PyExc_ValueError, "NFA construction: bad byte range");
        return -1;
    }
    return int_in(t[0], 0, 256, "byte range", &out[0]) || int_in(t[1], out[0], 256, "byte range", &out[1]) ||
                   (with_target && int_in(t[2], 0, bound, "edge target", &out[2])) ? -1 : 0;
}

/* Appends k states with no moves yet; the first, or -1. */
static inline int32_t add_states(Builder *b, Py_ssize_t k) {
    if (b->n + k > MAX_STATES) {
        PyErr_SetString(PyExc_OverflowError, "NFA construction: too many states");
        return -1;
    }
    if (GROW(b, states, cap, b->n + k)) return -1;
    int32_t first = (int32_t)b->n;
    for (Py_ssize_t i = 0; i < k; i++) b->states[b->n++] = (State){-1, -1, 0, 0};
    return first;
}

static inline int32_t new_state(Builder *b) {
    int32_t q = add_states(b, 1);
    return q >= 0 && b->n % CHECK_EVERY == 0 && nfab_budget_check(b, 1) ? -1 : q;
}

static inline int add(Builder *b, int32_t q, int32_t lo, int32_t hi, int32_t target) {
    if (b->nm >= INT32_MAX || GROW(b, moves, mcap, b->nm + 1)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_OverflowError, "NFA construction: too many moves");
        return -1;
    }
    int32_t m = (int32_t)b->nm++;
    b->moves[m] = (Move){lo, hi, target, -1};
    if (lo != EPSILON) b->cuts[lo] = b->cuts[hi + 1] = 1;
    State *st = &b->states[q];
    if (st->tail < 0) st->head = m; else b->moves[st->tail].next = m;
    st->tail = m;
    if (lo == EPSILON) st->n_eps++; else st->n_edges++;
    return 0;
}

/* The depth of the walk on this thread, over every builder (a DFA of an And / Not node, asked for
 * mid-walk, builds its operands' NFAs further up the same C stack).  Bounded by MAX_DEPTH alone,
 * not by Python's recursion limit: a frame here costs a few hundred bytes of C stack (MAX_DEPTH of
 * them fit the 8 MiB of a main or default thread) and no Python frame, and a real schema's IR
 * nests past Python's default limit (Biome's configuration schema: ~1,850 deep). */
extern _Thread_local int nfab_depth;

static inline int enter(void) {
    if (nfab_depth >= MAX_DEPTH) {
        PyErr_SetString(PyExc_RecursionError, "NFA construction: IR tree too deep");
        return -1;
    }
    nfab_depth++;
    return 0;
}

static inline void leave(void) {
    nfab_depth--;
}

#endif

/* NFA construction in C: the Thompson NFA of an IR tree (`nfa.NFA`).
 *
 * `build` adds, per IR node, paths from a state s to a state e spelling its language, never adding
 * moves into s or out of e; sub-terms with an empty language add nothing.  States are numbered in
 * the order of a depth-first walk (the reference builder in tests/test_nfa_build.py numbers them
 * alike), and a bounded repetition's later repetitions copy the states of its first one.  Moves
 * live in one array, linked per state, and become the lists of tuples `_subset.c` reads when the
 * build ends.  Python is called back for what needs it: the DFA of an And / Not node (`dfa_of`),
 * a lexeme's template NFA (`template_of`), the budget's checks, and the byte ranges of a DFA
 * embedded whole (`whole`).  Malformed input raises a Python exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { EPSILON = -1, MAX_DEPTH = 5000, CHECK_EVERY = 4096, MAX_STATES = INT32_MAX / 2 };

typedef struct { int32_t lo, hi, target, next; } Move; /* lo EPSILON: an epsilon move */
typedef struct { int32_t head, tail, n_eps, n_edges; } State; /* n_eps -1: a region's state (None) */

typedef struct {
    State *states;
    Move *moves;
    int32_t *saved; /* prototypes' moves out of their start state: (lo, hi, target) each */
    int32_t *positions; /* (first item state, state after it) per repetition, if asked for */
    Py_ssize_t n, cap, nm, mcap, ns, scap, np, pcap;
    unsigned char cuts[257]; /* 1 at every byte where a byte edge starts, and just past where one ends */
    PyObject *budget, *dfa_of, *template_of, *whole, *lexemes, *regions;
    int depth;
} Builder;

/* A repetition's first build (see `copy`): its states first..last-1, its end, its saved moves. */
typedef struct { int32_t first, last, nxt; Py_ssize_t at, n; } Proto;

static PyTypeObject *Empty, *Bytes, *ByteSet, *Seq, *Alt, *Repeat, *And, *Not, *Nothing, *RuleRef;
static PyObject *GrammarError, *s_empty, *s_items, *s_value, *s_ranges, *s_item, *s_min, *s_max, *s_name,
    *s_num_states, *s_is_empty, *s_eps, *s_edges, *s_positions, *s_check_nfa, *s_check_time, *s_what;

static int build(Builder *b, PyObject *node, int32_t s, int32_t e);

/* Where each IR class keeps its fields: a frozen dataclass with slots stores a field as a member
 * (T_OBJECT_EX) at a fixed offset, read here straight from the object, since the generic
 * attribute lookup costs more than the rest of visiting a node.  -1: read by name. */
enum { F_EMPTY, F_HASH, F_ITEMS, F_VALUE, F_RANGES, F_ITEM, F_MIN, F_MAX, NUM_FIELDS, NUM_KINDS = 10 };
static const char *const field_names[NUM_FIELDS] = {"_empty", "_hash", "items", "value", "ranges", "item", "min", "max"};
static Py_ssize_t offsets[NUM_KINDS][NUM_FIELDS];
static PyTypeObject **kind_slots[NUM_KINDS] = {&Empty, &Bytes, &ByteSet, &Seq, &Alt, &Repeat, &And, &Not, &Nothing, &RuleRef};

/* The offset of `field` in `node`, or -1 (not an IR class's object, or not a plain slot). */
static Py_ssize_t offset_of(PyObject *node, int field) {
    const PyTypeObject *kind = Py_TYPE(node);
    for (int i = 0; i < NUM_KINDS; i++)
        if (kind == *kind_slots[i]) return offsets[i][field];
    return -1;
}

/* A new reference to `field` (`name`) of `node`; NULL with an exception (e.g. an unset slot). */
static PyObject *get_field(PyObject *node, int field, PyObject *name) {
    const Py_ssize_t at = offset_of(node, field);
    PyObject *value = at >= 0 ? *(PyObject **)((char *)node + at) : NULL;
    return value ? Py_NewRef(value) : PyObject_GetAttr(node, name);
}

/* The slot offsets of the IR classes' fields (see `offsets`). */
static int load_offsets(void) {
    for (int i = 0; i < NUM_KINDS; i++)
        for (int f = 0; f < NUM_FIELDS; f++) {
            PyObject *d = PyDict_GetItemString((*kind_slots[i])->tp_dict, field_names[f]);
            const PyMemberDef *m = d && Py_IS_TYPE(d, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)d)->d_member : NULL;
            offsets[i][f] = m && m->type == T_OBJECT_EX && !(m->flags & READONLY) ? m->offset : -1;
        }
    return 0;
}

static int grow(void **data, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
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

/* The IR classes and GrammarError, imported on first use (the modules import this one). */
static int load_kinds(void) {
    if (RuleRef) return 0;
    PyObject *ir = PyImport_ImportModule("formwork.grammar.ir");
    PyObject *errors = ir ? PyImport_ImportModule("formwork.grammar.errors") : NULL;
    int rc = -1;
    if (!errors) goto done;
    const char *names[] = {"Empty", "Bytes", "ByteSet", "Seq", "Alt", "Repeat", "And", "Not", "Nothing", "RuleRef"};
    PyTypeObject **kinds[] = {&Empty, &Bytes, &ByteSet, &Seq, &Alt, &Repeat, &And, &Not, &Nothing, &RuleRef};
    PyTypeObject *got[10];
    for (int i = 0; i < 10; i++) {
        PyObject *kind = PyObject_GetAttrString(ir, names[i]);
        if (!kind) goto done;
        got[i] = (PyTypeObject *)kind; /* kept for the process's life */
        if (!PyType_Check(kind)) {
            PyErr_Format(PyExc_TypeError, "NFA construction: ir.%s is not a class", names[i]);
            goto done;
        }
    }
    if (!(GrammarError = PyObject_GetAttrString(errors, "GrammarError"))) goto done;
    for (int i = 0; i < 10; i++) *kinds[i] = got[i];
    rc = load_offsets();
done:
    Py_XDECREF(ir);
    Py_XDECREF(errors);
    return rc;
}

static int budget_check(Builder *b, int with_time) {
    PyObject *n = PyLong_FromSsize_t(b->n);
    if (!n) return -1;
    PyObject *r = PyObject_CallMethodOneArg(b->budget, s_check_nfa, n);
    Py_DECREF(n);
    if (r && with_time) {
        Py_DECREF(r);
        r = PyObject_CallMethodOneArg(b->budget, s_check_time, s_what);
    }
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* Appends k states (no moves yet, or a region's: None); the first, or -1. */
static int32_t add_states(Builder *b, Py_ssize_t k, int region) {
    if (b->n + k > MAX_STATES) {
        PyErr_SetString(PyExc_OverflowError, "NFA construction: too many states");
        return -1;
    }
    if (GROW(b, states, cap, b->n + k)) return -1;
    int32_t first = (int32_t)b->n;
    for (Py_ssize_t i = 0; i < k; i++) b->states[b->n++] = (State){-1, -1, region ? -1 : 0, 0};
    return first;
}

static int32_t new_state(Builder *b) {
    int32_t q = add_states(b, 1, 0);
    return q >= 0 && b->n % CHECK_EVERY == 0 && budget_check(b, 1) ? -1 : q;
}

/* Room for the k states of a region (None: filled by `_subset.c` on first use); the first. */
static int32_t reserve(Builder *b, Py_ssize_t k) {
    int32_t first = add_states(b, k, 1);
    return first < 0 || budget_check(b, 1) ? -1 : first;
}

static int add(Builder *b, int32_t q, int32_t lo, int32_t hi, int32_t target) {
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

/* An int item in [lo, hi), or -1 with a ValueError naming `what`. */
static int int_in(PyObject *o, long lo, long hi, const char *what, int32_t *out) {
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
static PyObject **items_of(PyObject *seq, Py_ssize_t *n, const char *what, int tuple_only) {
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
static int byte_range(PyObject *o, int with_target, long bound, int32_t out[3]) {
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

/* Repeat bounds: *hi -1 for None (unbounded); past LLONG_MAX reads as LLONG_MAX. */
static int bounds(PyObject *node, long long *lo, long long *hi) {
    PyObject *a = get_field(node, F_MIN, s_min), *z = a ? get_field(node, F_MAX, s_max) : NULL;
    int overflow = 0, rc = -1;
    if (!z) goto done;
    *lo = PyLong_Check(a) ? PyLong_AsLongLongAndOverflow(a, &overflow) : -1;
    *lo = overflow > 0 ? LLONG_MAX : *lo;
    *hi = z == Py_None ? -1 : PyLong_Check(z) ? PyLong_AsLongLongAndOverflow(z, &overflow) : -2;
    *hi = z != Py_None && overflow > 0 ? LLONG_MAX : *hi;
    if (PyErr_Occurred()) goto done;
    if (*lo < 0 || (z != Py_None && *hi < *lo) || overflow < 0) {
        PyErr_SetString(GrammarError, "invalid repetition bounds");
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(a);
    Py_XDECREF(z);
    return rc;
}

static int enter(Builder *b) {
    if (++b->depth > MAX_DEPTH) {
        b->depth--;
        PyErr_SetString(PyExc_RecursionError, "NFA construction: IR tree too deep");
        return -1;
    }
    if (Py_EnterRecursiveCall(" in NFA construction")) {
        b->depth--;
        return -1;
    }
    return 0;
}

static void leave(Builder *b) {
    Py_LeaveRecursiveCall();
    b->depth--;
}

/* Caches whether `node`'s language is empty in its `_empty` slot. */
static int set_empty(PyObject *node, PyObject *value) {
    const Py_ssize_t at = offset_of(node, F_EMPTY);
    if (at < 0) return PyObject_GenericSetAttr(node, s_empty, value);
    Py_XSETREF(*(PyObject **)((char *)node + at), Py_NewRef(value));
    return 0;
}

/* 1 if `node` matches no string at all, 0 if it matches some, -1 on error; cached in the node's
 * `_empty` slot (lowering shares node objects between compilations). */
static int is_empty(Builder *b, PyObject *node) {
    PyObject *cached = get_field(node, F_EMPTY, s_empty);
    if (!cached) return -1;
    Py_DECREF(cached);
    if (cached != Py_None) return cached == Py_True;
    PyTypeObject *kind = Py_TYPE(node);
    int got = 0;
    if (enter(b)) return -1;
    if (kind == Seq || kind == Alt) { /* Seq: some item empty; Alt: every item empty */
        PyObject *items = get_field(node, F_ITEMS, s_items);
        Py_ssize_t n;
        PyObject **item = items ? items_of(items, &n, "Seq / Alt items", 1) : NULL;
        got = item ? kind == Alt : -1;
        for (Py_ssize_t i = 0; item && i < n; i++) {
            int empty = is_empty(b, item[i]);
            if (empty != got) {
                got = empty < 0 ? -1 : !got;
                break;
            }
        }
        Py_XDECREF(items);
    } else if (kind == Nothing) {
        got = 1;
    } else if (kind == ByteSet) {
        PyObject *ranges = get_field(node, F_RANGES, s_ranges);
        got = ranges ? PyObject_Not(ranges) : -1;
        Py_XDECREF(ranges);
    } else if (kind == Repeat) {
        long long lo, hi;
        PyObject *item = bounds(node, &lo, &hi) ? NULL : get_field(node, F_ITEM, s_item);
        got = !item ? -1 : lo > 0 ? is_empty(b, item) : 0;
        Py_XDECREF(item);
    } else if (kind == And || kind == Not) {
        PyObject *dfa = PyObject_CallOneArg(b->dfa_of, node);
        PyObject *r = dfa ? PyObject_CallMethodNoArgs(dfa, s_is_empty) : NULL;
        got = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        Py_XDECREF(dfa);
    }
    leave(b);
    if (got >= 0 && set_empty(node, got ? Py_True : Py_False)) return -1;
    return got;
}

/* A tuple the cyclic garbage collector does not track (it holds no container that could). */
static PyObject *untracked(PyObject *t) {
    if (t && PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
    return t;
}

static int add_region(Builder *b, int32_t first, int32_t last, int32_t end, int32_t start, int keyed,
                      PyObject *source, PyObject *node, PyObject *positions, int open) {
    const State *st = &b->states[start];
    PyObject *moves = keyed ? untracked(Py_BuildValue("(ii)", st->n_eps, st->n_edges)) : Py_NewRef(Py_None);
    PyObject *r = moves ? Py_BuildValue("(iiiiOOOON)", first, last, end, start, moves, source, node, positions,
                                        PyBool_FromLong(open)) : NULL;
    Py_XDECREF(moves);
    int rc = r ? PyList_Append(b->regions, r) : -1;
    Py_XDECREF(r);
    return rc;
}

/* A DFA's states spliced in, after s, whole (moves from `whole(dfa)`: byte ranges per state,
 * accepting flags). */
static int embed_whole(Builder *b, PyObject *dfa, Py_ssize_t k, int32_t s, int32_t e) {
    int32_t base = (int32_t)b->n - 1;
    for (Py_ssize_t q = 1; q < k; q++)
        if (new_state(b) < 0) return -1;
    if (add(b, s, EPSILON, 0, base + 1)) return -1;
    PyObject *got = PyObject_CallOneArg(b->whole, dfa);
    if (!got) return -1;
    int rc = -1;
    Py_ssize_t n, nacc;
    PyObject **pair = items_of(got, &n, "embedded DFA", 0), **rows = NULL;
    if (!pair || n != 2 || !(rows = items_of(pair[0], &n, "byte ranges", 0)) || !PyBytes_Check(pair[1]) ||
        n > k || (nacc = PyBytes_GET_SIZE(pair[1])) < n) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NFA construction: bad embedded DFA");
        goto done;
    }
    for (Py_ssize_t q = 1; q < n; q++) {
        Py_ssize_t m;
        PyObject **ranges = items_of(rows[q], &m, "byte ranges", 0);
        if (!ranges) goto done;
        for (Py_ssize_t i = 0; i < m; i++) {
            int32_t r[3];
            if (byte_range(ranges[i], 1, k, r) || add(b, base + (int32_t)q, r[0], r[1], base + r[2])) goto done;
        }
        if (PyBytes_AS_STRING(pair[1])[q] && add(b, base + (int32_t)q, EPSILON, 0, e)) goto done;
    }
    rc = 0;
done:
    Py_DECREF(got);
    return rc;
}

/* An And / Not node: its DFA spliced in between s and e, as a region in a document NFA. */
static int embed(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *dfa = PyObject_CallOneArg(b->dfa_of, node);
    PyObject *size = dfa ? PyObject_GetAttr(dfa, s_num_states) : NULL;
    Py_ssize_t k = size ? PyLong_AsSsize_t(size) : -1;
    int rc = -1;
    if (k < 2 || k > MAX_STATES) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NFA construction: bad embedded DFA size");
    } else if (b->template_of == Py_None) {
        rc = embed_whole(b, dfa, k, s, e);
    } else {
        int32_t base = reserve(b, k - 1) - 1; /* DFA state q (q >= 1) becomes NFA state base + q */
        const State *st = &b->states[s];
        rc = base < 0 || add(b, s, EPSILON, 0, base + 1) ||
             add_region(b, base + 1, base + (int32_t)k, e, s, st->n_eps == 1 && st->n_edges == 0, dfa, Py_None,
                        Py_None, 0) ? -1 : 0;
    }
    Py_XDECREF(size);
    Py_XDECREF(dfa);
    return rc;
}

/* A lexeme as a region whose states are copied from its template when first reached (template
 * state 0 is s, 1 is e, x >= 2 is first - 2 + x). */
static int splice(Builder *b, PyObject *node, int32_t s, int32_t e, int open) {
    PyObject *template = PyObject_CallOneArg(b->template_of, node), *eps = NULL, *edges = NULL, *positions = NULL,
             *mapped = NULL;
    const int fresh = b->states[s].n_eps == 0 && b->states[s].n_edges == 0;
    int rc = -1;
    Py_ssize_t size = -1, ne, nx, np;
    if (template && (eps = PyObject_GetAttr(template, s_eps)) && (edges = PyObject_GetAttr(template, s_edges)) &&
        PyTuple_Check(eps) && PyTuple_Check(edges) && (size = PyTuple_GET_SIZE(eps)) >= 2 &&
        PyTuple_GET_SIZE(edges) == size) {
        Py_SETREF(eps, Py_NewRef(PyTuple_GET_ITEM(eps, 0))); /* the start state's moves */
        Py_SETREF(edges, Py_NewRef(PyTuple_GET_ITEM(edges, 0)));
        positions = PyObject_GetAttr(template, s_positions);
        Py_XSETREF(positions, positions ? PySequence_Tuple(positions) : NULL);
    }
    if (!positions) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NFA construction: bad template");
        goto done;
    }
    const Py_ssize_t n = size - 2;
    const int32_t first = reserve(b, n);
    PyObject **xs = first < 0 ? NULL : items_of(eps, &nx, "template moves", 1);
    PyObject **es = xs ? items_of(edges, &ne, "template edges", 1) : NULL, **pos = ((PyTupleObject *)positions)->ob_item;
    np = PyTuple_GET_SIZE(positions);
    if (!es) goto done;
#define AT(x) ((x) > 1 ? first - 2 + (x) : (x) ? e : s)
    for (Py_ssize_t i = 0; i < nx; i++) {
        int32_t x;
        if (int_in(xs[i], 0, size, "template target", &x) || add(b, s, EPSILON, 0, AT(x))) goto done;
    }
    for (Py_ssize_t i = 0; i < ne; i++) {
        int32_t r[3];
        if (byte_range(es[i], 1, size, r) || add(b, s, r[0], r[1], AT(r[2]))) goto done;
    }
    if (n && !(mapped = PyTuple_New(np))) goto done;
    for (Py_ssize_t i = 0; n && i < np; i++) { /* (first item state, state after it); the first may be
                                                    one past the template's last (an item without states) */
        Py_ssize_t two;
        PyObject **ab = items_of(pos[i], &two, "template position", 1), *p;
        int32_t a, z;
        if (!ab || two != 2 || int_in(ab[0], 0, size + 1, "template position", &a) ||
            int_in(ab[1], 0, size, "template position", &z) ||
            !(p = untracked(Py_BuildValue("(ii)", first - 2 + a, AT(z))))) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NFA construction: bad template position");
            goto done;
        }
        PyTuple_SET_ITEM(mapped, i, p);
    }
#undef AT
    rc = n ? add_region(b, first, first + (int32_t)n, e, s, fresh, template, node, untracked(mapped), open) : 0;
done:
    Py_XDECREF(mapped);
    Py_XDECREF(positions);
    Py_XDECREF(edges);
    Py_XDECREF(eps);
    Py_XDECREF(template);
    return rc;
}

/* A renumbered copy of a repetition's first build (see `repeat_item`), entered from cur and
 * leaving to nxt. */
static int copy(Builder *b, const Proto *p, int32_t cur, int32_t nxt) {
    const int32_t shift = (int32_t)b->n - p->first;
#define AT(t) (p->first <= (t) && (t) < p->last ? (t) + shift : (t) == p->nxt ? nxt : (t))
    if (add_states(b, p->last - p->first, 0) < 0) return -1;
    for (int32_t q = p->first; q < p->last; q++)
        for (int32_t m = b->states[q].head; m >= 0; m = b->moves[m].next) {
            const Move mv = b->moves[m];
            if (add(b, q + shift, mv.lo, mv.hi, AT(mv.target))) return -1;
        }
    for (Py_ssize_t i = p->at; i < p->at + 3 * p->n; i += 3) {
        const int32_t *mv = b->saved + i;
        if (add(b, cur, mv[0], mv[1], AT(mv[2]))) return -1;
    }
#undef AT
    return budget_check(b, 0);
}

/* One repetition of `item` from cur to nxt: a copy of *p if `*have`, else built, and *p becomes
 * this build unless it spliced regions (which are not copied). */
static int repeat_item(Builder *b, PyObject *item, int32_t cur, int32_t nxt, Proto *p, int *have) {
    if (*have) return copy(b, p, cur, nxt);
    const Py_ssize_t regions = PyList_GET_SIZE(b->regions);
    const int32_t first = (int32_t)b->n, tail = b->states[cur].tail;
    if (build(b, item, cur, nxt)) return -1;
    if (PyList_GET_SIZE(b->regions) != regions) return 0;
    *p = (Proto){first, (int32_t)b->n, nxt, b->ns, 0};
    for (int32_t m = tail < 0 ? b->states[cur].head : b->moves[tail].next; m >= 0; m = b->moves[m].next) {
        if (GROW(b, saved, scap, b->ns + 3)) return -1;
        b->saved[b->ns++] = b->moves[m].lo, b->saved[b->ns++] = b->moves[m].hi;
        b->saved[b->ns++] = b->moves[m].target;
        p->n++;
    }
    *have = 1;
    return 0;
}

static int add_position(Builder *b, int count, int32_t after) {
    if (!count) return 0;
    if (GROW(b, positions, pcap, b->np + 2)) return -1;
    b->positions[b->np++] = (int32_t)b->n, b->positions[b->np++] = after;
    return 0;
}

/* `item{min,max}`; with `count` (a standalone repetition), records per repetition of a bounded
 * one its position: (first item state, the state after it: e after the last one). */
static int repeat(Builder *b, PyObject *node, int32_t s, int32_t e, int count) {
    long long lo, hi;
    PyObject *item = bounds(node, &lo, &hi) ? NULL : get_field(node, F_ITEM, s_item);
    if (!item) return -1;
    const Py_ssize_t saved = b->ns;
    int rc = -1, have = 0, empty = is_empty(b, item);
    Proto proto;
    int32_t cur = s, nxt;
    if (empty) { /* only zero repetitions are possible */
        rc = empty < 0 ? -1 : add(b, s, EPSILON, 0, e);
        goto done;
    }
    for (long long k = 0; k < lo; k++, cur = nxt) {
        if ((nxt = new_state(b)) < 0 || add_position(b, count, nxt)) goto done;
        if (repeat_item(b, item, cur, nxt, &proto, &have)) goto done;
    }
    if (hi < 0) {
        int32_t loop = new_state(b);
        rc = loop < 0 || add(b, cur, EPSILON, 0, loop) || build(b, item, loop, loop) || add(b, loop, EPSILON, 0, e);
        b->np = count ? 0 : b->np; /* positions are for bounded repetitions */
        goto done;
    }
    if (add(b, cur, EPSILON, 0, e)) goto done;
    for (long long k = 0; k < hi - lo; k++, cur = nxt) {
        if ((nxt = k == hi - lo - 1 ? e : new_state(b)) < 0 || add_position(b, count, nxt)) goto done;
        if (repeat_item(b, item, cur, nxt, &proto, &have) || (nxt != e && add(b, nxt, EPSILON, 0, e))) goto done;
    }
    rc = 0;
done:
    b->ns = saved;
    Py_DECREF(item);
    return rc ? -1 : 0;
}

/* Bytes: a chain of byte edges through fresh states (an empty value: the empty string). */
static int chain(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *value = get_field(node, F_VALUE, s_value);
    if (!value) return -1;
    int rc = PyBytes_Check(value) ? 0 : -1;
    const Py_ssize_t n = rc ? 0 : PyBytes_GET_SIZE(value);
    if (rc) PyErr_SetString(PyExc_TypeError, "NFA construction: Bytes.value is not bytes");
    else if (!n) rc = add(b, s, EPSILON, 0, e);
    for (Py_ssize_t i = 0, cur = s, nxt; !rc && i < n; i++, cur = nxt) {
        const int32_t byte = (unsigned char)PyBytes_AS_STRING(value)[i];
        rc = (nxt = i == n - 1 ? e : new_state(b)) < 0 || add(b, (int32_t)cur, byte, byte, (int32_t)nxt) ? -1 : 0;
    }
    Py_DECREF(value);
    return rc;
}

/* Seq (one item after another, through fresh states) or Alt (every item from s to e). */
static int items(Builder *b, PyObject *node, int32_t s, int32_t e, int is_seq) {
    PyObject *items = get_field(node, F_ITEMS, s_items);
    Py_ssize_t n;
    PyObject **item = items ? items_of(items, &n, "Seq / Alt items", 1) : NULL;
    int rc = item ? 0 : -1;
    if (!rc && is_seq && !n) rc = add(b, s, EPSILON, 0, e);
    for (Py_ssize_t i = 0, cur = s; !rc && i < n; i++) {
        const int32_t nxt = !is_seq ? e : i == n - 1 ? e : new_state(b);
        rc = nxt < 0 ? -1 : build(b, item[i], (int32_t)(is_seq ? cur : s), nxt);
        cur = nxt;
    }
    Py_XDECREF(items);
    return rc;
}

static int byte_set(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *ranges = get_field(node, F_RANGES, s_ranges);
    Py_ssize_t n;
    PyObject **r = ranges ? items_of(ranges, &n, "ByteSet ranges", 0) : NULL;
    int rc = r ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        int32_t lohi[3];
        rc = byte_range(r[i], 0, 0, lohi) || add(b, s, lohi[0], lohi[1], e) ? -1 : 0;
    }
    Py_XDECREF(ranges);
    return rc;
}

static int build(Builder *b, PyObject *node, int32_t s, int32_t e) {
    int rc = is_empty(b, node);
    if (rc) return rc < 0 ? -1 : 0;
    PyTypeObject *kind = Py_TYPE(node);
    PyObject *lexeme = NULL;
    if (enter(b)) return -1;
    if (kind == Repeat && b->template_of != Py_None &&
        (lexeme = PyDict_GetItemWithError(b->lexemes, node))) { /* lexeme -> whether it is open-ended */
        Py_INCREF(lexeme);
        int open = PyObject_IsTrue(lexeme);
        rc = open < 0 ? -1 : splice(b, node, s, e, open);
        Py_DECREF(lexeme);
    } else if (PyErr_Occurred()) {
        rc = -1;
    } else if (kind == Empty) {
        rc = add(b, s, EPSILON, 0, e);
    } else if (kind == Bytes) {
        rc = chain(b, node, s, e);
    } else if (kind == ByteSet) {
        rc = byte_set(b, node, s, e);
    } else if (kind == Seq || kind == Alt) {
        rc = items(b, node, s, e, kind == Seq);
    } else if (kind == Repeat) {
        rc = repeat(b, node, s, e, 0);
    } else if (kind == And || kind == Not) {
        rc = embed(b, node, s, e);
    } else if (kind == RuleRef) {
        PyObject *name = PyObject_GetAttr(node, s_name);
        if (name) PyErr_Format(GrammarError, "unresolved rule reference %R (compile a Grammar, not a bare node)", name);
        Py_XDECREF(name);
        rc = -1;
    } else {
        PyErr_Format(GrammarError, "unknown IR node %s", kind->tp_name);
        rc = -1;
    }
    leave(b);
    return rc;
}

/* Per state (into the tuples eps and edges): a tuple of epsilon targets and a tuple of
 * (lo, hi, target) edges, or None twice. */
static int moves_out(const Builder *b, PyObject *eps, PyObject *edges) {
    for (Py_ssize_t q = 0; q < b->n; q++) {
        const State *st = &b->states[q];
        if (st->n_eps < 0) { /* a region's state */
            PyTuple_SET_ITEM(eps, q, Py_NewRef(Py_None));
            PyTuple_SET_ITEM(edges, q, Py_NewRef(Py_None));
            continue;
        }
        PyObject *x = untracked(PyTuple_New(st->n_eps)), *y = PyTuple_New(st->n_edges);
        PyTuple_SET_ITEM(eps, q, x);
        PyTuple_SET_ITEM(edges, q, y);
        if (!x || !y) return -1;
        Py_ssize_t i = 0, j = 0;
        for (int32_t m = st->head; m >= 0; m = b->moves[m].next) {
            const Move *mv = &b->moves[m];
            PyObject *t = PyLong_FromLong(mv->target);
            if (t && mv->lo == EPSILON) {
                PyTuple_SET_ITEM(x, i++, t);
                continue;
            }
            PyObject *edge = t ? PyTuple_New(3) : NULL;
            if (!edge) {
                Py_XDECREF(t);
                return -1;
            }
            PyTuple_SET_ITEM(edge, 0, PyLong_FromLong(mv->lo)); /* 0..255: cached small ints */
            PyTuple_SET_ITEM(edge, 1, PyLong_FromLong(mv->hi));
            PyTuple_SET_ITEM(edge, 2, t);
            PyTuple_SET_ITEM(y, j++, untracked(edge));
        }
        untracked(y);
    }
    return 0;
}

PyDoc_STRVAR(build_doc,
"build(node, budget, dfa_of, template_of, whole, lexemes, count) -> (eps, edges, regions, positions, empty, cuts)\n\n"
"The NFA of IR `node` from state 0 to state 1.  `dfa_of(node)`: the DFA of an And / Not node;\n"
"`template_of(node)`: the template NFA of a lexeme (a Repeat in the dict `lexemes`, whose value\n"
"says it is open-ended), spliced in as a region; None: a standalone NFA, whose DFAs are embedded\n"
"whole from `whole(dfa)` = (byte ranges per state, accepting flags as bytes).  `budget`: a\n"
"CompileBudget.  `count`: record a top-level bounded repetition's positions.  Returns per state\n"
"its epsilon targets and (lo, hi, target) edges as tuples (None inside regions; a tuple of\n"
"them per state, untracked by the garbage collector), regions as\n"
"(first, last, end, start, start moves or None, dfa or template, node, positions, open-ended),\n"
"the positions, whether the language is empty, and the edges' cuts: 257 bytes, 1 at 0, 256 and every lo and\n"
"hi + 1 of an edge (what `_subset.edge_cuts` computes from `edges`).");

static PyObject *py_build(PyObject *Py_UNUSED(module), PyObject *args) {
    Builder b = {0};
    PyObject *node, *eps = NULL, *edges = NULL, *positions = NULL, *out = NULL;
    int count;
    if (!PyArg_ParseTuple(args, "OOOOOO!p", &node, &b.budget, &b.dfa_of, &b.template_of, &b.whole,
                          &PyDict_Type, &b.lexemes, &count))
        return NULL;
    int empty = -1;
    b.cuts[0] = b.cuts[256] = 1;
    if (load_kinds() || !(b.regions = PyList_New(0)) || new_state(&b) < 0 || new_state(&b) < 0) goto done;
    empty = is_empty(&b, node);
    if (empty < 0 || (!empty && (Py_TYPE(node) == Repeat && count ? repeat(&b, node, 0, 1, 1) : build(&b, node, 0, 1))))
        goto done;
    if (!(eps = PyTuple_New(b.n)) || !(edges = PyTuple_New(b.n)) || moves_out(&b, eps, edges) ||
        !(positions = PyList_New(b.np / 2)))
        goto done;
    untracked(eps), untracked(edges); /* None or untracked tuples: nothing for the collector to scan */
    for (Py_ssize_t i = 0; i < b.np / 2; i++) {
        PyObject *p = untracked(Py_BuildValue("(ii)", b.positions[2 * i], b.positions[2 * i + 1]));
        if (!p) goto done;
        PyList_SET_ITEM(positions, i, p);
    }
    out = Py_BuildValue("(OOOOOy#)", eps, edges, b.regions, positions, empty ? Py_True : Py_False, (const char *)b.cuts,
                        (Py_ssize_t)sizeof(b.cuts));
done:
    Py_XDECREF(eps);
    Py_XDECREF(edges);
    Py_XDECREF(positions);
    Py_XDECREF(b.regions);
    free(b.states);
    free(b.moves);
    free(b.saved);
    free(b.positions);
    return out;
}

/* ------------------------------------------------------------------ ir.seq's common case */

/* The slot `field` of `node` (borrowed; NULL if unset or not a plain slot). */
static PyObject *slot_of(PyObject *node, int field) {
    const Py_ssize_t at = offset_of(node, field);
    return at >= 0 ? *(PyObject **)((char *)node + at) : NULL;
}

/* A new node of `kind` (Bytes, Seq or Alt) holding `value` in `field`, its caches unset (None), as
 * ir._maker's constructors make them; NULL without an exception when its slots are unknown. */
static PyObject *make_node(PyTypeObject *kind, int field, PyObject *value) {
    PyObject *node = kind->tp_alloc(kind, 0);
    if (!node) return NULL;
    const int fields[3] = {field, F_HASH, F_EMPTY};
    for (int i = 0; i < 3; i++) {
        const Py_ssize_t at = offset_of(node, fields[i]);
        if (at < 0) {
            Py_DECREF(node);
            return NULL;
        }
        *(PyObject **)((char *)node + at) = Py_NewRef(i ? Py_None : value);
    }
    return node;
}

/* A run of adjacent literals: its only Bytes node (`single`) until a second one joins, then
 * their bytes in `buf`. */
typedef struct { PyObject *single; char *buf; Py_ssize_t len, cap; int open; } Run;

/* Appends the bytes of `value` to the run's buffer. */
static int run_bytes(Run *r, PyObject *value) {
    const Py_ssize_t n = PyBytes_GET_SIZE(value);
    if (!n) return 0;
    if (GROW(r, buf, cap, r->len + n)) return -1;
    memcpy(r->buf + r->len, PyBytes_AS_STRING(value), (size_t)n);
    r->len += n;
    return 0;
}

static int run_add(Run *r, PyObject *node, PyObject *value) {
    if (!r->open) {
        *r = (Run){node, r->buf, 0, r->cap, 1};
        return 0;
    }
    if (r->single) { /* a second literal: copy the first one's bytes */
        PyObject *first = slot_of(r->single, F_VALUE);
        r->single = NULL;
        r->len = 0;
        if (run_bytes(r, first)) return -1;
    }
    return run_bytes(r, value);
}

/* Appends the pending run to `flat` (its only node, or a new Bytes of its bytes); 1 if a node
 * could not be made the way ir._maker makes it, -1 on error. */
static int run_flush(Run *r, PyObject *flat) {
    if (!r->open) return 0;
    r->open = 0;
    if (r->single) return PyList_Append(flat, r->single);
    PyObject *value = PyBytes_FromStringAndSize(r->buf, r->len);
    PyObject *node = value ? make_node(Bytes, F_VALUE, value) : NULL;
    Py_XDECREF(value);
    if (!node) return PyErr_Occurred() ? -1 : 1;
    const int rc = PyList_Append(flat, node);
    Py_DECREF(node);
    return rc;
}

/* The value of a Bytes node, or NULL (not a plain bytes slot). */
static PyObject *literal(PyObject *node) {
    PyObject *value = slot_of(node, F_VALUE);
    return value && PyBytes_CheckExact(value) ? value : NULL;
}

PyDoc_STRVAR(seq_of_doc,
"seq_of(items) -> Node | None\n\n"
"ir.seq(*items) when its result is not empty and every Seq among `items` has two or more items:\n"
"concatenation flattened, adjacent literals merged (a run of one keeps its node).  None for\n"
"anything else (a Nothing, an empty result, an unusual node): ir.seq's Python path.");

static PyObject *py_seq_of(PyObject *Py_UNUSED(module), PyObject *items) {
    if (load_kinds()) return NULL;
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "seq_of: items must be a tuple");
        return NULL;
    }
    PyObject *flat = PyList_New(0), *out = NULL;
    Run run = {0};
    int rc = flat ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(items); i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i), *value;
        const PyTypeObject *kind = Py_TYPE(item);
        if (kind == Bytes) {
            rc = (value = literal(item)) ? run_add(&run, item, value) : 1;
        } else if (kind == Seq) { /* already normal: only its ends may merge */
            PyObject *parts = slot_of(item, F_ITEMS);
            Py_ssize_t n = parts && PyTuple_CheckExact(parts) ? PyTuple_GET_SIZE(parts) : 0;
            if (n < 2) {
                rc = 1;
                break;
            }
            PyObject *head = PyTuple_GET_ITEM(parts, 0), *tail = PyTuple_GET_ITEM(parts, n - 1);
            Py_ssize_t lo = 0, hi = n;
            if (Py_TYPE(head) == Bytes) {
                if (!(value = literal(head)) || run_add(&run, head, value)) {
                    rc = value ? -1 : 1;
                    break;
                }
                lo = 1;
            }
            if ((rc = run_flush(&run, flat))) break;
            if (Py_TYPE(tail) == Bytes) hi = n - 1;
            for (Py_ssize_t j = lo; !rc && j < hi; j++) rc = PyList_Append(flat, PyTuple_GET_ITEM(parts, j));
            if (!rc && hi < n) rc = (value = literal(tail)) ? run_add(&run, tail, value) : 1;
        } else if (kind == Empty) {
            continue;
        } else if (kind == Nothing) {
            rc = 1;
        } else {
            rc = run_flush(&run, flat) || PyList_Append(flat, item) ? (PyErr_Occurred() ? -1 : 1) : 0;
        }
    }
    if (!rc) rc = run_flush(&run, flat);
    if (!rc && !PyList_GET_SIZE(flat)) rc = 1; /* nothing left: ir.seq's EMPTY */
    if (!rc && PyList_GET_SIZE(flat) == 1) {
        out = Py_NewRef(PyList_GET_ITEM(flat, 0));
    } else if (!rc) {
        PyObject *tuple = PyList_AsTuple(flat);
        out = tuple ? make_node(Seq, F_ITEMS, tuple) : NULL;
        Py_XDECREF(tuple);
        if (!out && !PyErr_Occurred()) out = Py_NewRef(Py_None);
    } else if (rc > 0) {
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(flat);
    free(run.buf);
    return out;
}

/* ------------------------------------------------------------------ ir.alt's common case */

PyDoc_STRVAR(alt_of_doc,
"alt_of(items) -> Node | None\n\n"
"ir.alt(*items) for two or more items, or one Alt: union flattened (an Alt's items in its place),\n"
"Nothing dropped, equal nodes kept once, first one first.  None for anything else (one plain\n"
"item, an empty union, an Alt whose items are not a tuple): ir.alt's Python path.");

static PyObject *py_alt_of(PyObject *Py_UNUSED(module), PyObject *items) {
    if (load_kinds()) return NULL;
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "alt_of: items must be a tuple");
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(items);
    if (n == 1 && Py_TYPE(PyTuple_GET_ITEM(items, 0)) != Alt) return Py_NewRef(Py_None);
    PyObject *flat = PyDict_New(), *out = NULL;
    int rc = flat ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (Py_TYPE(item) == Nothing) continue;
        if (Py_TYPE(item) != Alt) {
            rc = PyDict_SetItem(flat, item, Py_None);
            continue;
        }
        PyObject *parts = slot_of(item, F_ITEMS);
        if (!parts || !PyTuple_CheckExact(parts)) {
            rc = 1;
            break;
        }
        for (Py_ssize_t j = 0; !rc && j < PyTuple_GET_SIZE(parts); j++) {
            PyObject *part = PyTuple_GET_ITEM(parts, j);
            if (Py_TYPE(part) != Nothing) rc = PyDict_SetItem(flat, part, Py_None);
        }
    }
    if (!rc && !PyDict_GET_SIZE(flat)) rc = 1; /* nothing left: ir.alt's NOTHING */
    if (!rc) {
        PyObject *keys = PyDict_Keys(flat), *tuple = keys ? PyList_AsTuple(keys) : NULL;
        if (tuple && PyTuple_GET_SIZE(tuple) == 1) out = Py_NewRef(PyTuple_GET_ITEM(tuple, 0));
        else if (tuple && !(out = make_node(Alt, F_ITEMS, tuple)) && !PyErr_Occurred()) out = Py_NewRef(Py_None);
        Py_XDECREF(keys);
        Py_XDECREF(tuple);
    } else if (rc > 0) {
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(flat);
    return out;
}

static PyMethodDef module_methods[] = {
    {"build", py_build, METH_VARARGS, build_doc},
    {"seq_of", py_seq_of, METH_O, seq_of_doc},
    {"alt_of", py_alt_of, METH_O, alt_of_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_nfa_build", "NFA construction in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__nfa_build(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_empty, "_empty"}, {&s_items, "items"}, {&s_value, "value"}, {&s_ranges, "ranges"},
        {&s_item, "item"}, {&s_min, "min"}, {&s_max, "max"}, {&s_name, "name"}, {&s_num_states, "num_states"},
        {&s_is_empty, "is_empty"}, {&s_eps, "eps"}, {&s_edges, "edges"}, {&s_positions, "positions"},
        {&s_check_nfa, "check_nfa"}, {&s_check_time, "check_time"}, {&s_what, "NFA construction"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text))) return NULL;
    return PyModule_Create(&module);
}

/* The C NFA builder's state and move arrays (see _nfa_build.h for the helpers that append to
 * them): the budget's checks, ids for a region's states, a renumbered copy of a repetition's
 * first build, and the flat moves and regions that `build` returns.
 */
#include "_nfa_build.h"
#include "_clock.h"

/* Checks with time between two calls of the budget's `check_time` while the deadline is not
 * reached: what the clocks here cannot see (a `cancel` from another thread, the wall backstop of a
 * starved thread) is seen within this many regions spliced in (a region with its automaton built
 * before: a few microseconds; one built on demand checks the budget in its own loops) or 4096 new
 * states each: the budget's own `CHECK_EVERY` ticks, for a step of about that size. */
enum { CALL_EVERY = 64 };

static PyObject *s_max_nfa_states, *s_native_seconds;

/* The budget's max_nfa_states, or -1 where it is not a 64-bit int (`check_nfa` at every check). */
static int read_max_states(Builder *b) {
    if (!s_max_nfa_states && !(s_max_nfa_states = PyUnicode_InternFromString("max_nfa_states"))) return -1;
    PyObject *max = PyObject_GetAttr(b->budget, s_max_nfa_states);
    if (!max) return -1;
    b->max_states = PyLong_CheckExact(max) ? PyLong_AsLongLong(max) : -1;
    Py_DECREF(max);
    PyErr_Clear(); /* past 64 bits */
    b->limits = 1;
    return 0;
}

/* The CPU seconds left (`native_seconds`) as deadlines on both clocks (a thread's CPU time grows
 * no faster than wall time: while the wall deadline is ahead, the CPU clock, a system call of
 * ~0.5 us, need not be read); None: no deadlines. */
static int read_deadlines(Builder *b) {
    if (!s_native_seconds && !(s_native_seconds = PyUnicode_InternFromString("native_seconds"))) return -1;
    PyObject *left = PyObject_CallMethodNoArgs(b->budget, s_native_seconds);
    const double seconds = left && left != Py_None ? PyFloat_AsDouble(left) : -1.0;
    Py_XDECREF(left);
    if (!left || (seconds == -1.0 && PyErr_Occurred())) return -1;
    b->clocks = left == Py_None ? -1 : 1;
    b->wall_deadline = now() + seconds, b->cpu_deadline = cpu_now() + seconds;
    return 0;
}

/* The budget's state count (own states only) and, `with_time`, its time: the budget is called
 * back only past max_nfa_states (`check_nfa`, which raises), past the deadline, every CALL_EVERY
 * checks with time (`check_time`), or where `native_seconds` gave no deadline (fake clocks, a
 * budget not started: `check_time` at every check, as the Python reference does). */
int nfab_budget_check(Builder *b, int with_time) {
    if (!b->limits && read_max_states(b)) return -1;
    if (b->n > b->max_states) {
        PyObject *n = PyLong_FromSsize_t(b->n), *r = n ? PyObject_CallMethodOneArg(b->budget, s_check_nfa, n) : NULL;
        Py_XDECREF(n);
        if (!r) return -1;
        Py_DECREF(r);
    }
    if (!with_time) return 0;
    if (!b->clocks && read_deadlines(b)) return -1;
    if (b->clocks > 0 && ++b->time_checks % CALL_EVERY && (now() < b->wall_deadline || cpu_now() < b->cpu_deadline))
        return 0;
    PyObject *r = PyObject_CallMethodOneArg(b->budget, s_check_time, s_what);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* Room for the k states of a region, whose moves `_subset.c` makes when it first reaches them:
 * ids only (VIRTUAL + v while building), no memory and nothing counted by the state budget.  The
 * first, or -1 (past MAX_REGION_STATES ids in all, or out of time). */
int32_t nfab_reserve(Builder *b, Py_ssize_t k) {
    if (k < 0 || b->nv + k > MAX_REGION_STATES) {
        PyErr_Format(GrammarError, "NFA construction: more than %d NFA states (a repetition's bound is too large)",
                     (int)MAX_REGION_STATES);
        return -1;
    }
    const int32_t first = VIRTUAL + (int32_t)b->nv;
    b->nv += k;
    return nfab_budget_check(b, 1) ? -1 : first;
}

/* A state id as the build's output numbers it (region states after the builder's own). */
static inline int32_t final_id(const Builder *b, int32_t q) {
    return q >= VIRTUAL ? (int32_t)b->n + (q - VIRTUAL) : q;
}

/* A renumbered copy of a repetition's first build (see `repeat_item`), entered from cur and
 * leaving to nxt. */
int nfab_copy(Builder *b, const Proto *p, int32_t cur, int32_t nxt) {
    const int32_t shift = (int32_t)b->n - p->first;
#define AT(t) (p->first <= (t) && (t) < p->last ? (t) + shift : (t) == p->nxt ? nxt : (t))
    if (add_states(b, p->last - p->first) < 0) return -1;
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
    return nfab_budget_check(b, 0);
}

/* The moves of the builder's own states in the flat layout of `_nfa_flat.h` (a new bytes object,
 * or NULL); region states are numbered after them. */
PyObject *nfab_moves_flat(const Builder *b) {
    Py_ssize_t e = 0, m = 0;
    if (b->n + b->nv > MAX_IDS) {
        PyErr_SetString(PyExc_OverflowError, "NFA construction: too many states");
        return NULL;
    }
    for (Py_ssize_t q = 0; q < b->n; q++) e += b->states[q].n_eps, m += b->states[q].n_edges;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * flat_words(b->n, e, m));
    if (!out) return NULL;
    int32_t *w = (int32_t *)PyBytes_AS_STRING(out), *eps_at = w + 1, *edge_at = w + 2 + b->n;
    int32_t *targets = w + 3 + 2 * b->n, *edges = targets + e;
    int32_t ne = 0, nm = 0;
    w[0] = (int32_t)b->n;
    for (Py_ssize_t q = 0; q < b->n; q++) {
        eps_at[q] = ne, edge_at[q] = nm;
        for (int32_t k = b->states[q].head; k >= 0; k = b->moves[k].next) {
            const Move *mv = &b->moves[k];
            if (mv->lo == EPSILON) {
                targets[ne++] = final_id(b, mv->target);
            } else {
                int32_t *t = edges + 3 * nm++;
                t[0] = mv->lo, t[1] = mv->hi, t[2] = final_id(b, mv->target);
            }
        }
    }
    eps_at[b->n] = ne, edge_at[b->n] = nm;
    return out;
}

/* The regions as `build` returns them: the records `_nfa_regions.c` made, their first and last
 * states renumbered after the builder's own (a new list, or NULL).  The records are untracked by
 * the cyclic collector: they hold ints, bools, IR nodes and the region's DFA or template NFA,
 * none of which refers back to a document's records, so no cycle passes through them; else the
 * young collection that ends a compile (`gc_pause`) scans ~9 fields a region of every document
 * compiled since the last one. */
PyObject *nfab_regions_out(const Builder *b) {
    const Py_ssize_t k = PyList_GET_SIZE(b->regions);
    PyObject *out = PyList_New(k);
    for (Py_ssize_t i = 0; out && i < k; i++) {
        PyObject *r = PyList_GET_ITEM(b->regions, i), *first, *last, *t = PyTuple_New(PyTuple_GET_SIZE(r));
        if (!t || !(first = PyLong_FromLong(final_id(b, (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(r, 0))))) ||
            !(last = PyLong_FromLong(final_id(b, (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(r, 1)))))) {
            Py_XDECREF(t);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(t, 0, first);
        PyTuple_SET_ITEM(t, 1, last);
        for (Py_ssize_t j = 2; j < PyTuple_GET_SIZE(r); j++) PyTuple_SET_ITEM(t, j, Py_NewRef(PyTuple_GET_ITEM(r, j)));
        PyList_SET_ITEM(out, i, untracked(t));
    }
    return untracked(out); /* never changed after: it holds the untracked records only */
}

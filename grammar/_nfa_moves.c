/* The C NFA builder's state and move arrays (see _nfa_build.h for the helpers that append to
 * them): the budget's checks, room for a region's states, a renumbered copy of a repetition's
 * first build, and the per-state tuples of moves that `build` returns.
 */
#include "_nfa_build.h"

int nfab_budget_check(Builder *b, int with_time) {
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

/* Room for the k states of a region (None: filled by `_subset.c` on first use); the first. */
int32_t nfab_reserve(Builder *b, Py_ssize_t k) {
    int32_t first = add_states(b, k, 1);
    return first < 0 || nfab_budget_check(b, 1) ? -1 : first;
}

/* A renumbered copy of a repetition's first build (see `repeat_item`), entered from cur and
 * leaving to nxt. */
int nfab_copy(Builder *b, const Proto *p, int32_t cur, int32_t nxt) {
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
    return nfab_budget_check(b, 0);
}

/* Per state (into the tuples eps and edges): a tuple of epsilon targets and a tuple of
 * (lo, hi, target) edges, or None twice. */
int nfab_moves_out(const Builder *b, PyObject *eps, PyObject *edges) {
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

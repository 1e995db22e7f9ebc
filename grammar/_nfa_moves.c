/* The C NFA builder's state and move arrays (see _nfa_build.h for the helpers that append to
 * them): the budget's checks, room for a region's states, a renumbered copy of a repetition's
 * first build, and the flat moves that `build` returns.
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

/* The moves in the flat layout of `_nfa_flat.h` (a new bytes object, or NULL). */
PyObject *nfab_moves_flat(const Builder *b) {
    Py_ssize_t e = 0, m = 0;
    for (Py_ssize_t q = 0; q < b->n; q++)
        if (b->states[q].n_eps >= 0) e += b->states[q].n_eps, m += b->states[q].n_edges; /* regions': none */
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
                targets[ne++] = mv->target;
            } else {
                int32_t *t = edges + 3 * nm++;
                t[0] = mv->lo, t[1] = mv->hi, t[2] = mv->target;
            }
        }
    }
    eps_at[b->n] = ne, edge_at[b->n] = nm;
    return out;
}

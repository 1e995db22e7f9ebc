/* The flat layout of an NFA's moves: `_nfa_build.build` writes it, the builder reads a lexeme
 * template's start moves from it when splicing, and the subset core (`_subset_rows.c`) reads a
 * state's moves from it when the state is first reached.  One bytes object of int32 words:
 *
 *   n, eps_at[0..n], edge_at[0..n], epsilon targets..., edges as (lo, hi, target)...
 *
 * State q's epsilon targets are targets[eps_at[q]..eps_at[q+1]) and its edges are
 * edges[edge_at[q]..edge_at[q+1]).  A state inside a region has none here (its region says
 * where its moves come from).  A handful of objects per NFA instead of a tuple per state and
 * per edge: building, reading and freeing them touches far less memory.
 */
#ifndef FORMWORK_NFA_FLAT_H
#define FORMWORK_NFA_FLAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const int32_t *eps, *edges; /* n_eps targets; n_edges (lo, hi, target) triples */
    int32_t n_eps, n_edges;
} FlatMoves;

/* Words of the layout for n states with e epsilon moves and m edges. */
static inline Py_ssize_t flat_words(Py_ssize_t n, Py_ssize_t e, Py_ssize_t m) {
    return 1 + 2 * (n + 1) + e + 3 * m;
}

/* The number of states of a flat moves object, or -1 with a ValueError if it is malformed. */
static inline int32_t flat_num_states(PyObject *moves) {
    if (!PyBytes_Check(moves) || PyBytes_GET_SIZE(moves) % 4 || PyBytes_GET_SIZE(moves) < 4 * 3) {
        PyErr_SetString(PyExc_ValueError, "NFA moves: not a flat moves object");
        return -1;
    }
    const int32_t *w = (const int32_t *)PyBytes_AS_STRING(moves);
    const Py_ssize_t words = PyBytes_GET_SIZE(moves) / 4, n = w[0];
    if (n < 0 || 1 + 2 * (n + 1) > words || w[1 + n] < 0 || w[2 + 2 * n] < 0 ||
        flat_words(n, w[1 + n], w[2 + 2 * n]) != words) {
        PyErr_SetString(PyExc_ValueError, "NFA moves: inconsistent sizes");
        return -1;
    }
    return (int32_t)n;
}

/* The moves of state q (0 <= q < n, n from `flat_num_states`), or -1 with a ValueError if its
 * offsets are out of order.  Targets are the caller's to check. */
static inline int flat_moves_of(PyObject *moves, int32_t n, int32_t q, FlatMoves *out) {
    const int32_t *w = (const int32_t *)PyBytes_AS_STRING(moves), *eps_at = w + 1, *edge_at = w + 2 + n;
    const int32_t e = eps_at[n], m = edge_at[n];
    if (eps_at[q] < 0 || eps_at[q] > eps_at[q + 1] || eps_at[q + 1] > e || edge_at[q] < 0 ||
        edge_at[q] > edge_at[q + 1] || edge_at[q + 1] > m) {
        PyErr_SetString(PyExc_ValueError, "NFA moves: offsets out of order");
        return -1;
    }
    const int32_t *targets = w + 3 + 2 * n;
    out->eps = targets + eps_at[q];
    out->n_eps = eps_at[q + 1] - eps_at[q];
    out->edges = targets + e + 3 * edge_at[q];
    out->n_edges = edge_at[q + 1] - edge_at[q];
    return 0;
}

#endif

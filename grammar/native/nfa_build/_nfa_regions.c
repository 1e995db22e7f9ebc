/* Regions of the C NFA builder: an And / Not node's DFA spliced in (whole, in a standalone NFA,
 * or as a region whose states `_subset.c` fills on first use), a lexeme's template NFA spliced in
 * as a region, a bounded repetition as a counted region over its item's NFA, and the (first,
 * last, end, start, start moves, source, node, open-ended, counted) records `build` returns.
 */
#include "_nfa_build.h"

static int add_region(Builder *b, int32_t first, int32_t last, int32_t end, int32_t start, int keyed,
                      PyObject *source, PyObject *node, int open, int counted) {
    const State *st = &b->states[start];
    PyObject *moves = keyed ? untracked(Py_BuildValue("(ii)", st->n_eps, st->n_edges)) : Py_NewRef(Py_None);
    PyObject *r = moves ? Py_BuildValue("(iiiiOOONN)", first, last, end, start, moves, source, node,
                                        PyBool_FromLong(open), PyBool_FromLong(counted)) : NULL;
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

static PyObject *s_b;

/* `dict[node]` (a new reference), found by `node_hash`; NULL if absent (or with an exception). */
static PyObject *known_in(PyObject *dict, PyObject *node) {
    const Py_hash_t h = PyDict_GET_SIZE(dict) ? node_hash(node) : -1;
    return h == -1 ? NULL : Py_XNewRef(_PyDict_GetItem_KnownHash(dict, node, h));
}

/* Whether `embedded` may make an And / Not node's automaton other than its DFA: an And over a
 * repetition bounded at count_from or more may count (1, 0, or -1 with an exception). */
static int may_count(const Builder *b, PyObject *node) {
    if (Py_TYPE(node) != And) return 0;
    if (!s_b && !(s_b = PyUnicode_InternFromString("b"))) return -1;
    PyObject *bounded = PyObject_GetAttr(node, s_b);
    long long lo, hi;
    int rc = !bounded ? -1 : !PyObject_TypeCheck(bounded, Repeat) ? 0 : nfab_bounds(bounded, &lo, &hi) ? -1
                                                                        : hi >= 0 && hi >= b->count_from;
    Py_XDECREF(bounded);
    return rc;
}

/* `dfa_of(node)` for an And / Not node (a new reference): from `known`'s dicts where `embedded`
 * would take it from there, else by the call. */
static PyObject *region_dfa(Builder *b, PyObject *node) {
    const int counts = b->known_dfas ? may_count(b, node) : 1;
    if (counts < 0) return NULL;
    for (Py_ssize_t i = 0; !counts && i < PyTuple_GET_SIZE(b->known_dfas); i++) {
        PyObject *got = known_in(PyTuple_GET_ITEM(b->known_dfas, i), node);
        if (got || PyErr_Occurred()) return got;
    }
    return PyObject_CallOneArg(b->dfa_of, node);
}

/* `template_of(node)` for a lexeme (a new reference): from `known`'s templates, else by the call. */
static PyObject *region_template(Builder *b, PyObject *node) {
    PyObject *got = b->known_templates ? known_in(b->known_templates, node) : NULL;
    return got || PyErr_Occurred() ? got : PyObject_CallOneArg(b->template_of, node);
}

/* An And / Not node: its DFA spliced in between s and e, as a region in a document NFA. */
int nfab_embed(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *dfa = region_dfa(b, node);
    PyObject *size = dfa ? PyObject_GetAttr(dfa, s_num_states) : NULL;
    Py_ssize_t k = size ? PyLong_AsSsize_t(size) : -1;
    int rc = -1;
    if (k < 2 || k > MAX_REGION_STATES) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NFA construction: bad embedded DFA size");
    } else if (b->template_of == Py_None) {
        rc = embed_whole(b, dfa, k, s, e);
    } else {
        int32_t base = nfab_reserve(b, k - 1) - 1; /* DFA state q (q >= 1) becomes NFA state base + q */
        const State *st = &b->states[s];
        rc = base < 0 || add(b, s, EPSILON, 0, base + 1) ||
             add_region(b, base + 1, base + (int32_t)k, e, s, st->n_eps == 1 && st->n_edges == 0, dfa, Py_None, 0, 0) ? -1 : 0;
    }
    Py_XDECREF(size);
    Py_XDECREF(dfa);
    return rc;
}

/* A lexeme as a region whose states are copied from its template when first reached (template
 * state 0 is s, 1 is e, x >= 2 is first - 2 + x); the template's start moves are copied here.  A
 * counted template (`counted`: its repetition's item NFA) splices in as a counted region. */
int nfab_splice(Builder *b, PyObject *node, int32_t s, int32_t e, int open) {
    PyObject *template = region_template(b, node), *moves = NULL, *item = NULL;
    const int fresh = b->states[s].n_eps == 0 && b->states[s].n_edges == 0;
    int rc = -1;
    int32_t size = -1;
    FlatMoves start;
    if (!template || !(item = PyObject_GetAttr(template, s_counted))) goto done;
    if (item != Py_None) {
        rc = nfab_counted(b, node, item, s, e, open);
        goto done;
    }
    if ((moves = PyObject_GetAttr(template, s_moves)) && (size = flat_num_states(moves)) >= 0 && size < 2) {
        PyErr_SetString(PyExc_ValueError, "NFA construction: bad template");
        goto done;
    }
    if (size < 0 || flat_moves_of(moves, size, 0, &start)) goto done;
    const int32_t n = size - 2, first = nfab_reserve(b, n);
    if (first < 0) goto done;
#define AT(x) ((x) > 1 ? first - 2 + (x) : (x) ? e : s)
    for (int32_t i = 0; i < start.n_eps; i++) {
        const int32_t x = start.eps[i];
        if (x < 0 || x >= size) {
            PyErr_SetString(PyExc_ValueError, "NFA construction: bad template target");
            goto done;
        }
        if (add(b, s, EPSILON, 0, AT(x))) goto done;
    }
    for (int32_t i = 0; i < start.n_edges; i++) {
        const int32_t *r = start.edges + 3 * i;
        if (r[0] < 0 || r[0] > r[1] || r[1] > 255 || r[2] < 0 || r[2] >= size) {
            PyErr_SetString(PyExc_ValueError, "NFA construction: bad template edge target");
            goto done;
        }
        if (add(b, s, r[0], r[1], AT(r[2]))) goto done;
    }
#undef AT
    rc = n ? add_region(b, first, first + n, e, s, fresh, template, node, open, 0) : 0;
done:
    Py_XDECREF(item);
    Py_XDECREF(moves);
    Py_XDECREF(template);
    return rc;
}

/* A bounded repetition item{lo,hi} (1 <= hi) between s and e as a counted region over `item`, the
 * item's own NFA (m states: 0 its start, 1 its end).  With W = m - 1, the region's state
 * first + j * W (1 <= j <= hi) is the place after j repetitions, and first + j * W + x - 1 the
 * item's state x >= 2 in repetition j + 1 (j < hi); first itself stands for s and is never used.
 * Only s's moves are made here (the item's start moves, in the first repetition, and the way out
 * if lo is 0); `_subset_rows.c` makes the others by this arithmetic when it reaches them. */
int nfab_counted(Builder *b, PyObject *node, PyObject *item, int32_t s, int32_t e, int open) {
    const int fresh = b->states[s].n_eps == 0 && b->states[s].n_edges == 0;
    long long lo, hi;
    PyObject *moves = NULL;
    int rc = -1;
    int32_t m = -1;
    FlatMoves start;
    if (nfab_bounds(node, &lo, &hi) || !(moves = PyObject_GetAttr(item, s_moves)) ||
        (m = flat_num_states(moves)) < 0 || flat_moves_of(moves, m, 0, &start))
        goto done;
    if (m < 2 || hi < 1 || hi > (MAX_REGION_STATES - 1) / (m - 1)) {
        if (m >= 2 && hi >= 1) PyErr_Format(GrammarError, "NFA construction: a repetition bound of %lld is too large", hi);
        else PyErr_SetString(PyExc_ValueError, "NFA construction: bad counted repetition");
        goto done;
    }
    const int32_t w = m - 1, first = nfab_reserve(b, (Py_ssize_t)hi * w + 1);
    if (first < 0 || (lo == 0 && add(b, s, EPSILON, 0, e))) goto done;
#define AT(x) ((x) == 1 ? first + w : first + (x) - 1)
    for (int32_t i = 0; i < start.n_eps + start.n_edges; i++) {
        const int32_t *r = i < start.n_eps ? NULL : start.edges + 3 * (i - start.n_eps);
        const int32_t x = r ? r[2] : start.eps[i];
        if (x < 1 || x >= m || (r && (r[0] < 0 || r[0] > r[1] || r[1] > 255))) {
            PyErr_SetString(PyExc_ValueError, "NFA construction: bad counted item target");
            goto done;
        }
        if (r ? add(b, s, r[0], r[1], AT(x)) : add(b, s, EPSILON, 0, AT(x))) goto done;
    }
#undef AT
    rc = add_region(b, first, first + (int32_t)(hi * w + 1), e, s, fresh, item, node, open, 1);
done:
    Py_XDECREF(moves);
    return rc;
}

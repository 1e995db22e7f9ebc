/* Rows of the lazy DFA: the moves of an NFA state read once from the NFA's flat moves (or
 * computed from a region's embedded DFA, template NFA or counted item), epsilon closures, the DFA
 * state each set of targets leads to, and the successor per byte class of a DFA state
 * (`subset_fill_row`).  Per-state data lives at the state's slot (`slot_of`).
 */
#include "_subset_core.h"

/* A region's state number x mapped into the document NFA (or x itself outside regions), checked. */
static int document_state(const Core *c, const Region *r, int32_t x, int32_t *out) {
    *out = r ? region_target(r, x) : x;
    if (*out < 0 || *out >= c->num_nfa) {
        PyErr_SetString(PyExc_ValueError, "subset core: a region target is out of range");
        return -1;
    }
    return 0;
}

/* Appends an epsilon move to x (numbered in [0, bound) by region r, or the document's if r is NULL). */
static int push_eps(Core *c, const Region *r, int32_t x, long bound) {
    int32_t to;
    if (x < 0 || x >= bound) {
        PyErr_SetString(PyExc_ValueError, "subset core: an epsilon target is out of range");
        return -1;
    }
    return document_state(c, r, x, &to) || pool_push(&c->eps_pool, to) ? -1 : 0;
}

/* Appends an edge (lo, hi, x) as (first class, last class, document state). */
static int push_edge(Core *c, const Region *r, int32_t lo, int32_t hi, int32_t x, long bound) {
    if (lo < 0 || lo > hi || hi > 255 || x < 0 || x >= bound) {
        PyErr_SetString(PyExc_ValueError, "subset core: an edge (lo, hi, target) is out of range");
        return -1;
    }
    if (pool_reserve(&c->edge_pool, 3)) return -1;
    int32_t *out = c->edge_pool.data + c->edge_pool.len;
    if (document_state(c, r, x, &out[2])) return -1;
    out[0] = c->class_of_byte[lo];
    out[1] = c->class_of_byte[hi];
    c->edge_pool.len += 3;
    return 0;
}

/* The moves of a state of an embedded DFA's region: its byte ranges (a list of (lo, hi, target)
 * per DFA state) and, if it accepts, an epsilon move to the region's end. */
static int push_dfa_moves(Core *c, const Region *r, int32_t local) {
    Py_ssize_t n, ne, nacc = PyBytes_GET_SIZE(r->b);
    PyObject **rows = items_of(r->a, &n, "region source"), **edges;
    if (!rows) return -1;
    if (local >= n || local >= nacc) {
        PyErr_SetString(PyExc_ValueError, "subset core: region source too short");
        return -1;
    }
    if (PyBytes_AS_STRING(r->b)[local] && pool_push(&c->eps_pool, r->end)) return -1;
    if (!(edges = items_of(rows[local], &ne, "edges"))) return -1;
    for (Py_ssize_t i = 0; i < ne; i++) {
        int32_t lo, hi, x;
        if (read_edge(edges[i], r->last - r->first + 1, &lo, &hi, &x) || push_edge(c, r, lo, hi, x, INT32_MAX))
            return -1;
    }
    return 0;
}

/* The moves of a state in the flat layout (the document's, or a lexeme template's for region r). */
static int push_flat_moves(Core *c, const Region *r, int32_t local) {
    PyObject *moves = r ? r->a : c->moves;
    const int32_t n = r ? r->size : c->num_plain, bound = r ? r->size : c->num_nfa; /* states; targets */
    FlatMoves mv;
    if (local >= n) {
        PyErr_SetString(PyExc_ValueError, "subset core: region source too short");
        return -1;
    }
    if (flat_moves_of(moves, n, local, &mv)) return -1;
    for (int32_t i = 0; i < mv.n_eps; i++)
        if (push_eps(c, r, mv.eps[i], bound)) return -1;
    for (int32_t i = 0; i < mv.n_edges; i++) {
        const int32_t *e = mv.edges + 3 * i;
        if (push_edge(c, r, e[0], e[1], e[2], bound)) return -1;
    }
    return 0;
}

/* The moves of a state of a counted region (see `Region`): the item's moves in its repetition,
 * and from the place after j repetitions the way out (lo <= j) and, if j < hi, the item's start
 * moves in the next one. */
static int push_counted_moves(Core *c, const Region *r, int32_t q) {
    const int32_t w = r->width, j = (q - r->first) / w, x = (q - r->first) % w ? (q - r->first) % w + 1 : 0;
    FlatMoves mv;
    if (!x && !j) {
        PyErr_SetString(PyExc_ValueError, "subset core: a counted region's first state is never used");
        return -1;
    }
    if (!x && j >= r->lo && pool_push(&c->eps_pool, r->end)) return -1;
    if ((!x && j == r->hi) || flat_moves_of(r->a, r->size, x, &mv)) return PyErr_Occurred() ? -1 : 0;
    for (int32_t i = 0; i < mv.n_eps + mv.n_edges; i++) {
        const int32_t *e = i < mv.n_eps ? NULL : mv.edges + 3 * (i - mv.n_eps), t = e ? e[2] : mv.eps[i];
        if (t < 1 || t >= r->size || (e && (e[0] < 0 || e[0] > e[1] || e[1] > 255))) {
            PyErr_SetString(PyExc_ValueError, "subset core: a counted item's move is out of range");
            return -1;
        }
        const int32_t to = t == 1 ? r->first + (j + 1) * w : r->first + j * w + t - 1;
        if (!e) {
            if (pool_push(&c->eps_pool, to)) return -1;
        } else {
            if (pool_reserve(&c->edge_pool, 3)) return -1;
            int32_t *out = c->edge_pool.data + c->edge_pool.len;
            out[0] = c->class_of_byte[e[0]], out[1] = c->class_of_byte[e[1]], out[2] = to;
            c->edge_pool.len += 3;
        }
    }
    return 0;
}

/* The moves of a counted DFA's place (j, d) (see `counted_dfa.py`): the way out where the pattern
 * may end, and the product's edges, a character more where one ends, to the places that can
 * still end within the bound. */
static int push_counted_dfa_moves(Core *c, const Region *r, int32_t q) {
    const int32_t n = r->width, j = (q - r->first) / n, d = (q - r->first) % n + 1;
    Py_ssize_t rows_n, ne;
    PyObject **rows = items_of(r->a, &rows_n, "region source"), **edges;
    if (!rows) return -1;
    if (r->accepting[d] && pool_push(&c->eps_pool, r->end)) return -1;
    if (!(edges = items_of(rows[d], &ne, "edges"))) return -1;
    for (Py_ssize_t i = 0; i < ne; i++) {
        int32_t lo, hi, t;
        if (read_edge(edges[i], n + 1, &lo, &hi, &t)) return -1;
        const int64_t next = (int64_t)j + r->tick[t];
        if (t < 1 || next + r->least[t] > r->hi) continue; /* dead, or cannot end within the bound */
        if (pool_reserve(&c->edge_pool, 3)) return -1;
        int32_t *out = c->edge_pool.data + c->edge_pool.len;
        out[0] = c->class_of_byte[lo], out[1] = c->class_of_byte[hi], out[2] = r->first + (int32_t)next * n + t - 1;
        c->edge_pool.len += 3;
    }
    return 0;
}

/* Records the moves of NFA state q, at slot k (epsilon targets and edges over byte classes). */
static int load(Core *c, int32_t q, int32_t k) {
    const Py_ssize_t at = q >= c->num_plain ? region_at(c, q) : -1;
    const Region *r = at >= 0 ? &c->regions[at] : NULL;
    const Py_ssize_t eps_at = c->eps_pool.len, edge_at = c->edge_pool.len;
    if (q >= c->num_plain && !r) {
        PyErr_SetString(PyExc_ValueError, "subset core: a state past the NFA's own lies in no region");
        return -1;
    }
    if (!r ? push_flat_moves(c, NULL, q)
           : r->kind == REGION_DFA ? push_dfa_moves(c, r, q - r->first + 1)
           : r->kind == REGION_COUNTED ? push_counted_moves(c, r, q)
           : r->kind == REGION_COUNTED_DFA ? push_counted_dfa_moves(c, r, q) : push_flat_moves(c, r, q - r->first + 2))
        return -1;
    c->eps_at[k] = (int32_t)eps_at + 1;
    c->eps_n[k] = (int32_t)(c->eps_pool.len - eps_at);
    c->edge_at[k] = (int32_t)edge_at + 1;
    c->edge_n[k] = (int32_t)((c->edge_pool.len - edge_at) / 3);
    c->loaded++;
    return 0;
}

/* The slot of q, its moves loaded; -1 on error. */
static inline int32_t loaded_slot(Core *c, int32_t q) {
    const int32_t k = slot_of(c, q);
    return k < 0 || c->eps_at[k] || !load(c, q, k) ? k : -1;
}

/* The epsilon closure of q (sorted, itself included), computed once; its slot, or -1. */
static int32_t closure_slot(Core *c, int32_t q) {
    int32_t k = slot_of(c, q);
    if (k < 0 || c->clo_at[k]) return k;
    if (++c->stamp == 0) {
        memset(c->mark, 0, (size_t)c->slots * sizeof(uint32_t));
        c->stamp = 1;
    }
    c->stack.len = 0;
    c->scratch.len = 0;
    c->mark[k] = c->stamp;
    if (pool_push(&c->stack, q) || pool_push(&c->scratch, q)) return -1;
    while (c->stack.len) {
        const int32_t x = c->stack.data[--c->stack.len], kx = loaded_slot(c, x);
        if (kx < 0) return -1;
        const int32_t at = c->eps_at[kx] - 1, n = c->eps_n[kx];
        for (int32_t i = 0; i < n; i++) {
            const int32_t t = c->eps_pool.data[at + i], kt = slot_of(c, t); /* may move the arrays */
            if (kt < 0) return -1;
            if (c->mark[kt] != c->stamp) {
                c->mark[kt] = c->stamp;
                if (pool_push(&c->stack, t) || pool_push(&c->scratch, t)) return -1;
            }
        }
    }
    Py_ssize_t n = sort_unique(c->scratch.data, c->scratch.len);
    if (pool_reserve(&c->clo_pool, n)) return -1;
    memcpy(c->clo_pool.data + c->clo_pool.len, c->scratch.data, (size_t)n * sizeof(int32_t));
    c->clo_at[k] = (int32_t)c->clo_pool.len + 1;
    c->clo_n[k] = (int32_t)n;
    c->clo_pool.len += n;
    return k;
}

int subset_closure(Core *c, int32_t q) {
    return closure_slot(c, q) < 0 ? -1 : 0;
}

/* The DFA state of closure(t). */
static int32_t successor(Core *c, int32_t t) {
    const int32_t k = closure_slot(c, t);
    if (k < 0) return -1;
    if (c->succ[k]) return c->succ[k] - 1;
    int32_t sid = intern(c, c->clo_pool.data + c->clo_at[k] - 1, c->clo_n[k]);
    if (sid >= 0) c->succ[k] = sid + 1;
    return sid;
}

/* The DFA state of the union of the closures of targets[0..n) (sorted, distinct, n >= 2). */
static int32_t union_successor(Core *c, const int32_t *targets, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (closure_slot(c, targets[i]) < 0) return -1;
    c->scratch.len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t k = slot_of(c, targets[i]); /* given by closure_slot above: no move */
        if (pool_reserve(&c->scratch, c->clo_n[k])) return -1;
        memcpy(c->scratch.data + c->scratch.len, c->clo_pool.data + c->clo_at[k] - 1,
               (size_t)c->clo_n[k] * sizeof(int32_t));
        c->scratch.len += c->clo_n[k];
    }
    Py_ssize_t m = sort_unique(c->scratch.data, c->scratch.len);
    return intern(c, c->scratch.data, m);
}

/* Writes the successor per byte class of DFA state sid into row[0..num_classes). */
int subset_fill_row(Core *c, int32_t sid, int32_t *row) {
    const int32_t k = c->num_classes;
    memset(row, 0, (size_t)k * sizeof(int32_t));
    c->gathered.len = 0;
    for (int32_t i = 0; i < c->set_n.data[sid]; i++) {
        const int32_t k = loaded_slot(c, c->set_pool.data[c->set_at.data[sid] + i]);
        if (k < 0 || pool_reserve(&c->gathered, 3 * c->edge_n[k])) return -1;
        memcpy(c->gathered.data + c->gathered.len, c->edge_pool.data + c->edge_at[k] - 1,
               (size_t)(3 * c->edge_n[k]) * sizeof(int32_t));
        c->gathered.len += 3 * c->edge_n[k];
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

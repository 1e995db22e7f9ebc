/* Breadth-first walk of the vocabulary trie over a byte DFA, in C.
 *
 * The one hot loop of mask computation: from seed (trie node, DFA state) pairs, follow every
 * child whose byte keeps the DFA alive, OR-ing the tokens that end at live nodes into a packed
 * int32 mask.  The DFA may be lazy (rows built on first use, in Python): a live node whose
 * state has no row yet is handed back as "blocked", the caller builds those rows and walks on
 * from them (see native_walk.py).  Optionally the children of live nodes reached in an
 * accepting state are collected too (where a terminal may end part way through a token).
 *
 * Layout (see TokenTrie.flat_arrays, int32): nodes are numbered globally, the virtual root last;
 * child_lo/child_hi give each node's children as a contiguous range, byte[c] the byte a child
 * spells, end_ptr/end_tokens the token ids ending at each node (CSR).  The DFA is given over
 * byte classes: `rows[state * num_classes + class_of_byte[byte]]` is the next state, 0 is dead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_subset_api.h"
#include "_vec.h"

#define NBUF 12

PyDoc_STRVAR(walk_doc,
"walk(rows, class_of_byte, expanded, accepting, child_lo, child_hi, byte, end_ptr, end_tokens,\n"
"     seed_nodes, seed_states, words, want_exits, core=None, seconds=-1) -> (blocked, exits)\n\n"
"Marks in `words` the tokens ending at every live node below the seeds (the seeds' own\n"
"tokens included, the root has none).  `blocked` packs (node, state) pairs whose state\n"
"has no row yet; `exits` the children of live non-root nodes in an accepting state, ascending\n"
"and each once (empty unless want_exits), both as int64 bytes.  With a lazy DFA's SubsetCore as `core`, missing\n"
"rows are built in place (the four DFA arrays must then be writable) and only states beyond\n"
"the arrays' length are blocked, or every missing one once `seconds` (if >= 0) have passed.");

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const SubsetApi *subset_api;

static int by_lo(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The nodes of the child ranges in `ranges` ((lo, hi) pairs; two ranges are equal or disjoint,
 * as the children of one node or of two), ascending and each once, as int64 bytes. */
static PyObject *range_nodes(Vec *ranges) {
    Py_ssize_t count = 0, n = ranges->len / 2;
    int64_t *r = ranges->data, last = -1;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (r[2 * i] < r[2 * i - 2]) { /* from the root the level order is already ascending */
            qsort(r, (size_t)n, 2 * sizeof(int64_t), by_lo);
            break;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[2 * i] >= last) count += r[2 * i + 1] - r[2 * i];
        if (r[2 * i + 1] > last) last = r[2 * i + 1];
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (!out) return NULL;
    int64_t *nodes = (int64_t *)PyBytes_AS_STRING(out);
    last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[2 * i] >= last)
            for (int64_t c = r[2 * i]; c < r[2 * i + 1]; c++) *nodes++ = c;
        if (r[2 * i + 1] > last) last = r[2 * i + 1];
    }
    return out;
}

/* A walk's arrays and state (see `parse_walk`), shared by `walk` and `follow`. */
typedef struct {
    Py_buffer b[NBUF];
    int32_t *rows;
    const int32_t *class_of_byte, *child_lo, *child_hi, *end_ptr, *end_tokens;
    uint8_t *expanded, *accepting;
    const uint8_t *byte;
    uint32_t *words;
    int64_t num_states, num_classes, root, num_words, num_end, fills, low, high; /* words touched: [low, high) */
    PyObject *core;
    int building, want_exits;
    double seconds, deadline;
} Walk;

static void release_walk(Walk *w) {
    for (int i = 0; i < NBUF; i++) PyBuffer_Release(&w->b[i]);
}

/* Parses the arguments of `walk` and `follow` (the same layout) into `w`: 0, or -1 with an
 * exception set (the buffers released). */
static int parse_walk(Walk *w, PyObject *args, const char *name) {
    memset(w, 0, sizeof(*w));
    w->core = Py_None;
    w->seconds = -1.0;
    Py_buffer *b = w->b;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*w*p|Od", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                          &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &w->want_exits, &w->core, &w->seconds))
        return -1;
    if (w->seconds >= 0) w->deadline = now() + w->seconds;
    Py_buffer *const dfa_arrays[] = {&b[0], &b[1], &b[2], &b[3]};
    if (subset_core_arg(subset_api, &w->core, dfa_arrays, 4, name)) {
        release_walk(w);
        return -1;
    }
    w->building = w->core != NULL; /* rows are built in place, until the time is up */
    /* written only through the core, which builds missing rows in place */
    w->rows = b[0].buf;
    w->class_of_byte = b[1].buf;
    w->expanded = b[2].buf;
    w->accepting = b[3].buf;
    w->child_lo = b[4].buf;
    w->child_hi = b[5].buf;
    w->byte = b[6].buf;
    w->end_ptr = b[7].buf;
    w->end_tokens = b[8].buf;
    w->words = b[11].buf;
    w->num_states = b[2].len < b[3].len ? b[2].len : b[3].len;
    w->num_classes = w->num_states ? (b[0].len / 4) / w->num_states : 0;
    w->root = b[4].len / 4 - 1;
    w->num_words = b[11].len / 4;
    w->num_end = b[8].len / 4;
    w->low = w->num_words;
    const char *bad = NULL;
    if (b[1].len != 256 * 4 || b[5].len != b[4].len || b[6].len != w->root || b[7].len / 4 < w->root + 1 ||
        w->num_classes < 1 || b[0].len != 4 * w->num_classes * w->num_states)
        bad = "inconsistent array sizes";
    for (int i = 0; !bad && i < 256; i++)
        if (w->class_of_byte[i] < 0 || w->class_of_byte[i] >= w->num_classes) bad = "byte class out of range";
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: %s", name, bad);
        release_walk(w);
        return -1;
    }
    return 0;
}

/* Walks from the seed (node, state) pairs (`seeds`: pairs, flat), collecting blocked pairs and
 * exit child ranges: 0, or -1 with an exception set. */
static int run_walk(Walk *w, const int64_t *seeds, int64_t num_seeds, Vec *blocked, Vec *exits) {
    Vec queue = {0};  /* level order: the trie's arrays are read in order */
    Py_ssize_t head = 0;
    const char *bad = NULL;
    int status = -1;
    int32_t *rows = w->rows;
    const int32_t *class_of_byte = w->class_of_byte, *child_lo = w->child_lo, *child_hi = w->child_hi;
    const int32_t *end_ptr = w->end_ptr, *end_tokens = w->end_tokens;
    uint8_t *expanded = w->expanded, *accepting = w->accepting;
    const uint8_t *byte = w->byte;
    uint32_t *words = w->words;
    const int64_t num_states = w->num_states, num_classes = w->num_classes, root = w->root;
    const int64_t num_words = w->num_words, num_end = w->num_end;
    PyObject *core = w->core;
/* Marks the tokens ending at `node` in `words`; sets `bad` on ids outside the mask. */
#define MARK(node)                                                          \
    for (int64_t k = end_ptr[node]; k < end_ptr[(node) + 1]; k++) {         \
        int64_t t = k < num_end ? end_tokens[k] : -1;                       \
        if (t < 0 || (t >> 5) >= num_words) {                               \
            bad = "walk: token id out of range of the mask";                \
            goto done;                                                      \
        }                                                                   \
        words[t >> 5] |= (uint32_t)1 << (t & 31);                           \
        if ((t >> 5) < w->low) w->low = t >> 5;                             \
        if ((t >> 5) >= w->high) w->high = (t >> 5) + 1;                    \
    }

    /* the queue holds live nodes with children, their tokens already marked */
    for (int64_t i = 0; i < num_seeds; i++) {
        int64_t node = seeds[2 * i], st = seeds[2 * i + 1];
        if (node < 0 || node > root || st < 0 || st >= (core ? subset_api->num_sets(core) : num_states)) {
            bad = "walk: node or state out of range";
            goto done;
        }
        if (node != root) MARK(node);
        if (child_lo[node] < child_hi[node] && vec_push2(&queue, node, st)) goto nomem;
    }
    while (head < queue.len) {
        int64_t node = queue.data[head++];
        int64_t st = queue.data[head++];
        int64_t lo = child_lo[node], hi = child_hi[node];
        if (lo < 0 || hi > root) {
            bad = "walk: child range out of range";
            goto done;
        }
        if (st >= num_states || !expanded[st]) {
            if (w->building && w->seconds >= 0 && w->fills++ % 16 == 0 && now() >= w->deadline)
                w->building = 0; /* out of time */
            if (!w->building || st >= num_states) {
                if (vec_push2(blocked, node, st)) goto nomem;
                continue;
            }
            if (subset_api->fill(core, st, rows, num_classes, expanded, accepting, num_states)) goto done;
        }
        if (w->want_exits && accepting[st] && node != root) {
            if (vec_push2(exits, lo, hi)) goto nomem;
        }
        const int32_t *row = rows + st * num_classes;
        for (int64_t c = lo; c < hi; c++) {
            int64_t nxt = row[class_of_byte[byte[c]]];
            if (!nxt) continue;
            if (nxt < 0 || (nxt >= num_states && (!core || nxt >= subset_api->num_sets(core)))) {
                bad = "walk: node or state out of range";
                goto done;
            }
            MARK(c);
            if (child_lo[c] < child_hi[c] && vec_push2(&queue, c, nxt)) goto nomem;
        }
    }
#undef MARK
    status = 0;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (bad) PyErr_SetString(PyExc_ValueError, bad);
    free(queue.data);
    return status;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Walk w;
    if (parse_walk(&w, args, "walk")) return NULL;
    PyObject *result = NULL;
    Vec seeds = {0}, blocked = {0}, exits = {0};
    if (w.b[10].len != w.b[9].len || w.b[9].len % 8) {
        PyErr_SetString(PyExc_ValueError, "walk: inconsistent array sizes");
        goto done;
    }
    const int64_t *nodes = w.b[9].buf, *states = w.b[10].buf, num_seeds = w.b[9].len / 8;
    if (vec_reserve(&seeds, 2 * num_seeds)) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < num_seeds; i++) vec_push2(&seeds, nodes[i], states[i]);
    if (run_walk(&w, seeds.data, num_seeds, &blocked, &exits)) goto done;
    {
        PyObject *bl = vec_bytes(&blocked), *ex = bl ? range_nodes(&exits) : NULL;
        if (bl && ex) result = PyTuple_Pack(2, bl, ex);
        Py_XDECREF(bl);
        Py_XDECREF(ex);
    }
done:
    free(seeds.data);
    free(blocked.data);
    free(exits.data);
    release_walk(&w);
    return result;
}

PyDoc_STRVAR(follow_doc,
"follow(rows, class_of_byte, expanded, accepting, child_lo, child_hi, byte, end_ptr, end_tokens,\n"
"       exit_nodes, start_row, words, want_exits, core=None, seconds=-1) -> (at, bits, exits) | None\n\n"
"`walk` from the exit nodes (non-root nodes, int64) whose byte `start_row` (the next state per\n"
"byte, 256 int64) keeps alive, each in the state that byte leads to, into `words`, which must\n"
"be all zero and are left all zero: the nonzero words of the result come back as `at` (int64\n"
"bytes) and `bits` (int32 bytes), ascending, with `exits` as `walk` gives them.  None when\n"
"the walk was blocked (the caller walks again the slow way).");

static PyObject *follow(PyObject *self, PyObject *args) {
    Walk w;
    if (parse_walk(&w, args, "follow")) return NULL;
    PyObject *result = NULL, *at = NULL, *bits = NULL, *ex = NULL;
    Vec seeds = {0}, blocked = {0}, exits = {0};
    const int64_t *nodes = w.b[9].buf, *start_row = w.b[10].buf, num_nodes = w.b[9].len / 8;
    if (w.b[9].len % 8 || w.b[10].len != 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "follow: inconsistent array sizes");
        goto done;
    }
    for (int64_t i = 0; i < num_nodes; i++) {
        if (nodes[i] < 0 || nodes[i] >= w.root) {
            PyErr_SetString(PyExc_ValueError, "follow: exit node out of range");
            goto done;
        }
        int64_t st = start_row[w.byte[nodes[i]]];
        if (st && vec_push2(&seeds, nodes[i], st)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int failed = run_walk(&w, seeds.data, seeds.len / 2, &blocked, &exits);
    if (failed || blocked.len) {
        memset(w.words, 0, (size_t)w.num_words * 4);
        if (!failed) result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t count = 0;
    for (int64_t i = w.low; i < w.high; i++) count += w.words[i] != 0;
    at = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    bits = at ? PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t)) : NULL;
    ex = bits ? range_nodes(&exits) : NULL;
    if (ex) {
        int64_t *index = (int64_t *)PyBytes_AS_STRING(at);
        uint32_t *value = (uint32_t *)PyBytes_AS_STRING(bits);
        for (int64_t i = w.low; i < w.high; i++) {
            if (w.words[i]) {
                *index++ = i;
                *value++ = w.words[i];
                w.words[i] = 0;
            }
        }
        result = PyTuple_Pack(3, at, bits, ex);
    } else {
        memset(w.words, 0, (size_t)w.num_words * 4);
    }
done:
    Py_XDECREF(at);
    Py_XDECREF(bits);
    Py_XDECREF(ex);
    free(seeds.data);
    free(blocked.data);
    free(exits.data);
    release_walk(&w);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"follow", follow, METH_VARARGS, follow_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trie_walk", "Vocabulary trie walks over byte DFAs (see native_walk.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__trie_walk(void) {
    subset_api = subset_api_import();
    return subset_api ? PyModule_Create(&module) : NULL;
}

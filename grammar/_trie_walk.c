/* Walks of the vocabulary trie over a byte DFA, in C.
 *
 * The one hot loop of mask computation: from seed (trie node, DFA state) pairs, follow every
 * child whose byte keeps the DFA alive, OR-ing the tokens that end at live nodes into a packed
 * int32 mask.  The DFA may be lazy (rows built on first use): with its SubsetCore, missing rows
 * are built in place, and a live node whose state lies past the arrays is handed back as
 * "blocked"; the caller grows the arrays and walks on from there (see native_walk.py).
 * Optionally the children of live nodes reached in an accepting state are collected too (where
 * a terminal may end part way through a token).
 *
 * Node numbers (see TokenTrie.flat_arrays) are global in level order, the virtual root last:
 * seeds, blocked pairs and exits use them.  The walk itself runs over the same trie in preorder:
 * one forward pass over flat arrays, which jumps over the subtree of a dead node, with the row of
 * each node's parent state on a stack indexed by depth; it reads the arrays in order and keeps no
 * queue.  `layout` builds, once per trie, one int32 buffer with every array the walk reads (a
 * header of offsets, see `Layout`), so a call parses one buffer for the trie, not a dozen.  The
 * DFA is given over byte classes: `rows[state * num_classes + class_of_byte[byte]]` is the next
 * state, 0 is dead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_subset_api.h"
#include "_trie_layout.h"
#include "_vec.h"

#define NBUF 9
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

PyDoc_STRVAR(walk_doc,
"walk(rows, class_of_byte, expanded, accepting, layout, seed_nodes, seed_states, words, want_exits,\n"
"     core=None, seconds=-1, keep=None) -> (blocked, exits)\n\n"
"Marks in `words` the tokens ending at every live node below the seeds (the seeds' own\n"
"tokens included, the root has none).  `blocked` packs (node, state) pairs whose state\n"
"has no row yet; `exits` the children of live non-root nodes in an accepting state, ascending\n"
"and each once (empty unless want_exits; with `keep`, a 32-byte bitmap, only those spelling one of\n"
"its bytes), both as int64 bytes.  `layout` is the trie's\n"
"`layout(...)`.  With a lazy DFA's SubsetCore as `core`, missing\n"
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
 * as the children of one node or of two), ascending and each once, as int64 bytes; only those
 * spelling a byte of `keep` (a 32-byte bitmap) when it is given.  NULL with an exception set. */
static PyObject *range_nodes(Vec *ranges, const uint8_t *byte, int64_t root, const uint8_t *keep) {
    Py_ssize_t count = 0, n = ranges->len / 2;
    int64_t *r = ranges->data, last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[2 * i] < 0 || r[2 * i + 1] > root || r[2 * i] > r[2 * i + 1]) {
            PyErr_SetString(PyExc_ValueError, "walk: inconsistent trie layout (child range)");
            return NULL;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        if (r[2 * i] < r[2 * i - 2]) { /* from the root the level order is already ascending */
            qsort(r, (size_t)n, 2 * sizeof(int64_t), by_lo);
            break;
        }
    }
#define KEPT(c) (!keep || (keep[byte[c] >> 3] >> (byte[c] & 7) & 1))
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[2 * i] >= last)
            for (int64_t c = r[2 * i]; c < r[2 * i + 1]; c++) count += KEPT(c);
        if (r[2 * i + 1] > last) last = r[2 * i + 1];
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (!out) return NULL;
    int64_t *nodes = (int64_t *)PyBytes_AS_STRING(out);
    last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[2 * i] >= last)
            for (int64_t c = r[2 * i]; c < r[2 * i + 1]; c++)
                if (KEPT(c)) *nodes++ = c;
        if (r[2 * i + 1] > last) last = r[2 * i + 1];
    }
#undef KEPT
    return out;
}

/* Exit child ranges as (depth, lo, hi) triples, in the order the walk meets them, as (lo, hi)
 * pairs ordered by depth (stably): from one seed, level order (see `range_nodes`). */
static int ranges_by_depth(Vec *triples, Vec *pairs) {
    Py_ssize_t n = triples->len / 3;
    int64_t *t = triples->data, max_depth = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (t[3 * i] > max_depth) max_depth = t[3 * i];
    Py_ssize_t *start = calloc((size_t)max_depth + 2, sizeof(Py_ssize_t));
    if (!start || vec_reserve(pairs, 2 * n)) {
        free(start);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) start[t[3 * i] + 1]++;
    for (int64_t d = 0; d <= max_depth; d++) start[d + 1] += start[d];
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t at = start[t[3 * i]]++;
        pairs->data[2 * at] = t[3 * i + 1];
        pairs->data[2 * at + 1] = t[3 * i + 2];
    }
    pairs->len = 2 * n;
    free(start);
    return 0;
}

/* A walk's arrays and state (see `parse_walk`), shared by `walk` and `follow`. */
typedef struct {
    Py_buffer b[NBUF];
    int32_t *rows;
    const int32_t *class_of_byte, *end_ptr, *end_tokens;
    const int32_t *pre_next, *pre_token, *node_of_pre, *pre_of_node, *pre_child_lo, *pre_child_hi;
    const uint32_t *pre_code;
    uint8_t *expanded, *accepting;
    const uint8_t *byte, *keep; /* keep: the bytes exits may spell (32-byte bitmap), or NULL for all */
    uint32_t *words;
    int64_t num_states, num_classes, root, num_words, num_end, fills;
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
    PyObject *keep = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*p|OdO", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &w->want_exits, &w->core, &w->seconds, &keep))
        return -1;
    if (keep != Py_None) {
        if (PyObject_GetBuffer(keep, &b[8], PyBUF_SIMPLE)) {
            release_walk(w);
            return -1;
        }
        if (b[8].len != 32) {
            PyErr_Format(PyExc_ValueError, "%s: keep must be a 32-byte bitmap", name);
            release_walk(w);
            return -1;
        }
        w->keep = b[8].buf;
    }
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
    w->words = b[7].buf;
    w->num_states = b[2].len < b[3].len ? b[2].len : b[3].len;
    w->num_classes = w->num_states ? (b[0].len / 4) / w->num_states : 0;
    w->num_words = b[7].len / 4;
    const char *bad = NULL;
    if (b[1].len != 256 * 4 || w->num_classes < 1 || b[0].len != 4 * w->num_classes * w->num_states)
        bad = "inconsistent array sizes";
    for (int i = 0; !bad && i < 256; i++)
        if (w->class_of_byte[i] < 0 || w->class_of_byte[i] >= w->num_classes) bad = "byte class out of range";
    const int32_t *l = b[4].buf;
    int64_t words = b[4].len / 4;
    if (!bad && (b[4].len % 4 || words < L_HEADER || l[L_MAGIC] != MAGIC || l[L_ROOT] < 0 || l[L_NUM_END] < 0))
        bad = "not a trie layout";
    if (!bad) {
        int64_t root = l[L_ROOT], num_end = l[L_NUM_END];
        const int64_t size[L_HEADER] = {[L_BYTE] = (root + 3) / 4, [L_END_PTR] = root + 1, [L_END_TOKENS] = num_end,
                                        [L_NEXT] = root + 1, [L_CODE] = root + 1, [L_TOKEN] = root + 1,
                                        [L_NODE_OF_PRE] = root + 1, [L_PRE_OF_NODE] = root + 1,
                                        [L_CHILD_LO] = root + 1, [L_CHILD_HI] = root + 1};
        for (int i = L_BYTE; !bad && i < L_HEADER; i++)
            if (l[i] < L_HEADER || l[i] + size[i] > words) bad = "inconsistent trie layout";
        w->root = root;
        w->num_end = num_end;
        w->byte = (const uint8_t *)(l + l[L_BYTE]);
        w->end_ptr = l + l[L_END_PTR];
        w->end_tokens = l + l[L_END_TOKENS];
        w->pre_next = l + l[L_NEXT];
        w->pre_code = (const uint32_t *)(l + l[L_CODE]);
        w->pre_token = l + l[L_TOKEN];
        w->node_of_pre = l + l[L_NODE_OF_PRE];
        w->pre_of_node = l + l[L_PRE_OF_NODE];
        w->pre_child_lo = l + l[L_CHILD_LO];
        w->pre_child_hi = l + l[L_CHILD_HI];
    }
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: %s", name, bad);
        release_walk(w);
        return -1;
    }
    return 0;
}

/* Marks the tokens ending at level-order `node` in `words`: NULL, or what is wrong. */
static const char *mark_all(const Walk *w, int64_t node) {
    if (node < 0 || node >= w->root) return "walk: inconsistent trie layout";
    for (int64_t k = w->end_ptr[node]; k < w->end_ptr[node + 1]; k++) {
        int64_t t = k < w->num_end ? w->end_tokens[k] : -1;
        if (t < 0 || (t >> 5) >= w->num_words) return "walk: token id out of range of the mask";
        w->words[t >> 5] |= (uint32_t)1 << (t & 31);
    }
    return NULL;
}

/* Whether `nxt`, a live successor, is no state of the automaton: past its arrays and (lazy)
 * not interned by its core either. */
static inline int bad_state(const Walk *w, int64_t nxt) {
    return (nxt < 0 || nxt >= w->num_states) && (nxt < 0 || !w->core || nxt >= subset_api->num_sets(w->core));
}

/* Marks the tokens ending at preorder node `c` in `words`: NULL, or what is wrong. */
static inline const char *mark_node(const Walk *w, int64_t c) {
    int32_t t = w->pre_token[c];
    if (UNLIKELY(t < -1)) return mark_all(w, w->node_of_pre[c]); /* MULTI: several tokens end here */
    uint32_t mark = t >= 0; /* without a branch: whether a node ends a token follows no pattern */
    int64_t word = (int64_t)(t & -(int32_t)mark) >> 5;
    if (UNLIKELY(word >= w->num_words)) return "walk: token id out of range of the mask";
    w->words[word] |= mark << (t & 31);
    return NULL;
}

/* Makes sure state `st` of a live node with children has its row: 1 when it has, 0 when the node
 * is blocked (pushed as (node, st)), -1 with an exception set. */
static int ensure_row(Walk *w, int64_t node, int64_t st, Vec *blocked) {
    if (st < w->num_states && w->expanded[st]) return 1;
    if (w->building && w->seconds >= 0 && w->fills++ % 16 == 0 && now() >= w->deadline)
        w->building = 0; /* out of time */
    if (!w->building || st >= w->num_states) {
        if (vec_push2(blocked, node, st)) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    }
    return subset_api->fill(w->core, st, w->rows, w->num_classes, w->expanded, w->accepting, w->num_states) ? -1 : 1;
}

/* Keeps the child range of preorder node `p` at `depth` as exits (see `ranges_by_depth`). */
static inline int push_exit(Vec *found, const Walk *w, int64_t p, int64_t depth) {
    if (vec_reserve(found, 3)) return -1;
    found->data[found->len++] = depth;
    found->data[found->len++] = w->pre_child_lo[p];
    found->data[found->len++] = w->pre_child_hi[p];
    return 0;
}

/* Walks the subtree of preorder node `p` (ending at `end`, at depth `base`), whose state's row is
 * `stack[base]`: 0, or -1 with an exception set or `*bad` set. */
static int walk_below(Walk *w, const int32_t **stack, int64_t p, int64_t end, int64_t base, Vec *blocked,
                      Vec *found, const char **bad) {
    const int32_t *const class_of_byte = w->class_of_byte, *const pre_next = w->pre_next;
    const uint32_t *const pre_code = w->pre_code;
    const int64_t num_states = w->num_states, num_classes = w->num_classes;
    const int want_exits = w->want_exits;
    const uint8_t *const expanded = w->expanded;
    int64_t valid = base; /* stack[base..valid] hold rows written by this walk */
    for (int64_t c = p + 1; c < end;) {
        uint32_t code = pre_code[c];
        int64_t depth = code >> 8, next = pre_next[c];
        if (UNLIKELY(depth <= base || depth - 1 > valid || depth > MAX_DEPTH || next <= c || next > end)) {
            *bad = "walk: inconsistent preorder arrays";
            return -1;
        }
        int64_t nxt = stack[depth - 1][class_of_byte[code & 0xFF]];
        if (!nxt) {
            c = next; /* the whole subtree dies */
            continue;
        }
        if (UNLIKELY(bad_state(w, nxt))) {
            *bad = "walk: node or state out of range";
            return -1;
        }
        if (UNLIKELY((*bad = mark_node(w, c)) != NULL)) return -1;
        if (next > c + 1) { /* children */
            if (UNLIKELY(nxt >= num_states || !expanded[nxt])) {
                int got = ensure_row(w, w->node_of_pre[c], nxt, blocked);
                if (got < 0) return -1;
                if (!got) {
                    c = next;
                    continue;
                }
            }
            if (want_exits && w->accepting[nxt] && push_exit(found, w, c, depth)) {
                PyErr_NoMemory();
                return -1;
            }
            stack[depth] = w->rows + nxt * num_classes;
            valid = depth;
        }
        c++;
    }
    return 0;
}

/* Walks the subtrees of the children of preorder node `p` (at depth `base`, its state's row on
 * `stack[base]`), finding the live children through their level-order range: the bytes of one
 * node's children lie together, so a state that allows few of them (most grammar states, at the
 * root) touches none of the dead children, which the preorder pass reads one by one to jump over
 * their subtrees.  0, or -1 with an exception set or `*bad` set. */
static int walk_children(Walk *w, const int32_t **stack, int64_t p, int64_t base, Vec *blocked, Vec *found,
                         const char **bad) {
    const int32_t *const row = stack[base];
    const int64_t lo = w->pre_child_lo[p], hi = w->pre_child_hi[p], root = w->root;
    if (lo < 0 || lo > hi || hi > root || base + 1 > MAX_DEPTH) {
        *bad = "walk: inconsistent preorder arrays";
        return -1;
    }
    for (int64_t ch = lo; ch < hi; ch++) {
        int64_t nxt = row[w->class_of_byte[w->byte[ch]]];
        if (!nxt) continue;
        if (UNLIKELY(bad_state(w, nxt))) {
            *bad = "walk: node or state out of range";
            return -1;
        }
        int64_t cp = w->pre_of_node[ch], end = cp < 0 || cp > root ? -1 : w->pre_next[cp];
        if (end <= cp || end > root + 1 || w->node_of_pre[cp] != ch) {
            *bad = "walk: inconsistent preorder arrays";
            return -1;
        }
        if ((*bad = mark_node(w, cp))) return -1;
        if (end == cp + 1) continue; /* a leaf */
        if (UNLIKELY(nxt >= w->num_states || !w->expanded[nxt])) {
            int got = ensure_row(w, ch, nxt, blocked);
            if (got < 0) return -1;
            if (!got) continue;
        }
        if (w->want_exits && w->accepting[nxt] && push_exit(found, w, cp, base + 1)) {
            PyErr_NoMemory();
            return -1;
        }
        stack[base + 1] = w->rows + nxt * w->num_classes;
        if (walk_below(w, stack, cp, end, base + 1, blocked, found, bad)) return -1;
    }
    return 0;
}

/* Whether the state whose row is `row` keeps few of the children of preorder node `p` alive (a
 * quarter at most): `walk_children` then reads less of the trie than the preorder pass. */
static int few_live_children(const Walk *w, const int32_t *row, int64_t p) {
    const int64_t lo = w->pre_child_lo[p], hi = w->pre_child_hi[p];
    if (lo < 0 || lo > hi || hi > w->root) return 0; /* the preorder pass reports it */
    int64_t live = 0;
    for (int64_t ch = lo; ch < hi; ch++) live += row[w->class_of_byte[w->byte[ch]]] != 0;
    return 4 * live <= hi - lo;
}

/* Walks from the seed (node, state) pairs (`seeds`: pairs, flat), collecting blocked pairs and
 * exit child ranges (as `ranges_by_depth` gives them): 0, or -1 with an exception set. */
static int run_walk(Walk *w, const int64_t *seeds, int64_t num_seeds, Vec *blocked, Vec *exits) {
    static const int32_t *stack[MAX_DEPTH + 2]; /* the row of the state after each depth's node on the path */
    static Vec found;                            /* exit (depth, lo, hi), kept: its pages stay mapped */
    const char *bad = NULL;
    int status = -1;
    const int64_t root = w->root;
    found.len = 0;
    for (int64_t i = 0; i < num_seeds; i++) {
        int64_t node = seeds[2 * i], st = seeds[2 * i + 1];
        if (node < 0 || node > root || st < 0 || st >= (w->core ? subset_api->num_sets(w->core) : w->num_states)) {
            bad = "walk: node or state out of range";
            goto done;
        }
        int64_t p = w->pre_of_node[node], end = p < 0 || p > root ? -1 : w->pre_next[p];
        if (end <= p || end > root + 1 || w->node_of_pre[p] != node) {
            bad = "walk: inconsistent preorder arrays";
            goto done;
        }
        if (node != root && (bad = mark_all(w, node))) goto done;
        if (end == p + 1) continue; /* a leaf */
        int got = ensure_row(w, node, st, blocked);
        if (got < 0) goto done;
        if (!got) continue;
        int64_t base = w->pre_code[p] >> 8;
        if (w->want_exits && w->accepting[st] && p != 0 && push_exit(&found, w, p, base)) goto nomem;
        stack[base] = w->rows + st * w->num_classes;
        if (few_live_children(w, stack[base], p) ? walk_children(w, stack, p, base, blocked, &found, &bad)
                                                 : walk_below(w, stack, p, end, base, blocked, &found, &bad))
            goto done;
    }
    if (ranges_by_depth(&found, exits)) goto nomem;
    status = 0;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (bad) PyErr_SetString(PyExc_ValueError, bad);
    return status;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Walk w;
    if (parse_walk(&w, args, "walk")) return NULL;
    PyObject *result = NULL;
    Vec seeds = {0}, blocked = {0}, exits = {0};
    if (w.b[6].len != w.b[5].len || w.b[5].len % 8) {
        PyErr_SetString(PyExc_ValueError, "walk: inconsistent array sizes");
        goto done;
    }
    const int64_t *nodes = w.b[5].buf, *states = w.b[6].buf, num_seeds = w.b[5].len / 8;
    if (vec_reserve(&seeds, 2 * num_seeds)) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < num_seeds; i++) vec_push2(&seeds, nodes[i], states[i]);
    if (run_walk(&w, seeds.data, num_seeds, &blocked, &exits)) goto done;
    {
        PyObject *bl = vec_bytes(&blocked), *ex = bl ? range_nodes(&exits, w.byte, w.root, w.keep) : NULL;
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
"follow(rows, class_of_byte, expanded, accepting, layout, exit_nodes, start_row, words, want_exits,\n"
"       core=None, seconds=-1, keep=None) -> (at, bits, exits) | None\n\n"
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
    const int64_t *nodes = w.b[5].buf, *start_row = w.b[6].buf, num_nodes = w.b[5].len / 8;
    if (w.b[5].len % 8 || w.b[6].len != 256 * 8) {
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
    for (int64_t i = 0; i < w.num_words; i++) count += w.words[i] != 0;
    at = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    bits = at ? PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t)) : NULL;
    ex = bits ? range_nodes(&exits, w.byte, w.root, w.keep) : NULL;
    if (ex) {
        int64_t *index = (int64_t *)PyBytes_AS_STRING(at);
        uint32_t *value = (uint32_t *)PyBytes_AS_STRING(bits);
        for (int64_t i = 0; i < w.num_words; i++) {
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
    {"layout", trie_layout, METH_VARARGS, layout_doc},
    {"exit_bytes", trie_exit_bytes, METH_VARARGS, exit_bytes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trie_walk", "Vocabulary trie walks over byte DFAs (see native_walk.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__trie_walk(void) {
    subset_api = subset_api_import();
    return subset_api ? PyModule_Create(&module) : NULL;
}

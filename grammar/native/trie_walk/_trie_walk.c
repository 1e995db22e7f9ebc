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
#include "_trie_walk.h"

/* This file: parsing a walk's arguments, the module's functions and its init.  The walk itself
 * lives in _trie_walk_loops.c, the exits it finds are read out in _trie_walk_exits.c (see
 * _trie_walk.h). */

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

const SubsetApi *trie_subset_api;

static void release_walk(Walk *w) {
    for (int i = 0; i < NBUF; i++) PyBuffer_Release(&w->b[i]);
}

/* Checks the buffers `parse_walk` (or `walk_after`) read into `w` and sets its pointers: 0, or -1
 * with an exception set (the buffers released). */
static int check_walk(Walk *w, PyObject *keep, const char *name) {
    Py_buffer *b = w->b;
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
    if (subset_core_arg(trie_subset_api, &w->core, dfa_arrays, 4, name)) {
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
    return check_walk(w, keep, name);
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
    if (trie_run_walk(&w, seeds.data, num_seeds, &blocked, &exits)) goto done;
    {
        PyObject *bl = vec_bytes(&blocked), *ex = bl ? trie_range_nodes(&exits, w.byte, w.root, w.keep) : NULL;
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
    int failed = trie_run_walk(&w, seeds.data, seeds.len / 2, &blocked, &exits);
    if (failed || blocked.len) {
        memset(w.words, 0, (size_t)w.num_words * 4);
        if (!failed) result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t count = 0;
    for (int64_t i = 0; i < w.num_words; i++) count += w.words[i] != 0;
    at = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    bits = at ? PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t)) : NULL;
    ex = bits ? trie_range_nodes(&exits, w.byte, w.root, w.keep) : NULL;
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

PyDoc_STRVAR(walk_after_doc,
"walk_after(rows, class_of_byte, expanded, accepting, layout, exit_nodes, after, from_root, words,\n"
"           core=None, seconds=-1) -> blocked\n\n"
"The walk of a document state inside a lexeme, past the lexeme: `walk` from each exit node\n"
"(non-root nodes, int64) in the state its byte leads to from state `after` (the state after the\n"
"lexeme, whose row must be built; the nodes whose byte it refuses are left out) and, with\n"
"`from_root`, from the root in state `after` (the tokens of the state after the lexeme).  The\n"
"tokens are OR-ed into `words`; `blocked` as `walk` gives it.");

/* `walk_after` (see its docstring): the seeds are made from `after`'s row, then one walk. */
static PyObject *walk_after(PyObject *self, PyObject *args) {
    Walk w;
    long long after;
    int from_root;
    memset(&w, 0, sizeof(w));
    w.core = Py_None;
    w.seconds = -1.0;
    Py_buffer *b = w.b;
    /* b[6] stays empty: the seeds are made here, not read */
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*Lpw*|Od", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &after,
                          &from_root, &b[7], &w.core, &w.seconds))
        return NULL;
    if (check_walk(&w, Py_None, "walk_after")) return NULL;
    PyObject *result = NULL;
    Vec seeds = {0}, blocked = {0}, exits = {0};
    const int64_t *nodes = b[5].buf, num_nodes = b[5].len / 8;
    if (b[5].len % 8) {
        PyErr_SetString(PyExc_ValueError, "walk_after: inconsistent array sizes");
        goto done;
    }
    if (after < 1 || after >= w.num_states || !w.expanded[after]) {
        PyErr_SetString(PyExc_ValueError, "walk_after: the state after the lexeme has no row");
        goto done;
    }
    const int32_t *row = w.rows + after * w.num_classes;
    if (vec_reserve(&seeds, 2 * (num_nodes + 1))) {
        PyErr_NoMemory();
        goto done;
    }
    if (from_root) vec_push2(&seeds, w.root, after);
    for (int64_t i = 0; i < num_nodes; i++) {
        if (nodes[i] < 0 || nodes[i] >= w.root) {
            PyErr_SetString(PyExc_ValueError, "walk_after: exit node out of range");
            goto done;
        }
        int64_t st = row[w.class_of_byte[w.byte[nodes[i]]]];
        if (st) vec_push2(&seeds, nodes[i], st);
    }
    if (trie_run_walk(&w, seeds.data, seeds.len / 2, &blocked, &exits)) goto done;
    result = vec_bytes(&blocked);
done:
    free(seeds.data);
    free(blocked.data);
    free(exits.data);
    release_walk(&w);
    return result;
}

PyDoc_STRVAR(live_bytes_doc,
"live_bytes(rows, class_of_byte, state) -> bytes\n\n"
"The bytes (ascending) with a live move out of `state`: `rows` holds a row of next states per\n"
"state (int32, a column per byte class), `class_of_byte` (int32 [256]) names each byte's class.");

static PyObject *live_bytes(PyObject *self, PyObject *args) {
    Py_buffer rows = {0}, classes = {0};
    long long state;
    if (!PyArg_ParseTuple(args, "y*y*L", &rows, &classes, &state)) return NULL;
    PyObject *result = NULL;
    const int32_t *class_of_byte = classes.buf;
    int64_t num_classes = 0; /* the largest class plus one; 0 if a class is negative */
    for (int i = 0; classes.len == 256 * 4 && i < 256; i++) {
        if (class_of_byte[i] < 0) {
            num_classes = 0;
            break;
        }
        if (class_of_byte[i] >= num_classes) num_classes = class_of_byte[i] + 1;
    }
    if (num_classes < 1 || rows.len % (4 * num_classes) || state < 0 || state >= rows.len / (4 * num_classes)) {
        PyErr_SetString(PyExc_ValueError, "live_bytes: inconsistent arguments");
        goto done;
    }
    const int32_t *row = (const int32_t *)rows.buf + state * num_classes;
    char live[256];
    Py_ssize_t count = 0;
    for (int i = 0; i < 256; i++)
        if (row[class_of_byte[i]]) live[count++] = (char)i;
    result = PyBytes_FromStringAndSize(live, count);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&classes);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"follow", follow, METH_VARARGS, follow_doc},
    {"walk_after", walk_after, METH_VARARGS, walk_after_doc},
    {"live_bytes", live_bytes, METH_VARARGS, live_bytes_doc},
    {"layout", trie_layout, METH_VARARGS, layout_doc},
    {"exit_bytes", trie_exit_bytes, METH_VARARGS, exit_bytes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trie_walk", "Vocabulary trie walks over byte DFAs (see native_walk.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__trie_walk(void) {
    trie_subset_api = subset_api_import();
    return trie_subset_api ? PyModule_Create(&module) : NULL;
}

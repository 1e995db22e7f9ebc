/* Whether a grammar state admits every token of a slice (see slices.py), in C.
 *
 * Breadth-first over (slice state, grammar state) pairs, one level per byte, up to the slice's
 * longest token: the answer is "no" at the first byte the slice allows and the grammar state
 * does not, "yes" once no new pair appears or the length is reached.  The grammar automaton may
 * be lazy: its missing rows are built in place through its subset core (see _subset_api.h), and
 * grammar states past the end of its arrays (or all missing rows, without a core) are handed
 * back: the caller builds those rows and asks again.
 *
 * Slice automaton: an eager byte table (slice_rows[u * 256 + b], 0 dead, 1 start).  Grammar
 * automaton: rows over byte classes as in _trie_walk.c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_subset_api.h"
#include "_vec.h"

#define NBUF 5

/* A set of non-negative int64 keys: open addressing, linear probing, -1 marks a free slot. */
typedef struct {
    int64_t *slots;
    int64_t cap, len;
} Set;

static int set_init(Set *s, int64_t cap) {
    s->slots = malloc((size_t)cap * sizeof(int64_t));
    if (!s->slots) return -1;
    memset(s->slots, 0xff, (size_t)cap * sizeof(int64_t));
    s->cap = cap;
    s->len = 0;
    return 0;
}

static int64_t *set_slot(const Set *s, int64_t key) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    int64_t i = (int64_t)(h >> 17) & (s->cap - 1);
    while (s->slots[i] != -1 && s->slots[i] != key) i = (i + 1) & (s->cap - 1);
    return &s->slots[i];
}

/* Adds `key`: 1 if it was new, 0 if present, -1 when out of memory. */
static int set_add(Set *s, int64_t key) {
    if (2 * (s->len + 1) > s->cap) {
        Set grown;
        if (set_init(&grown, 2 * s->cap)) return -1;
        for (int64_t i = 0; i < s->cap; i++)
            if (s->slots[i] != -1) *set_slot(&grown, s->slots[i]) = s->slots[i];
        grown.len = s->len;
        free(s->slots);
        *s = grown;
    }
    int64_t *slot = set_slot(s, key);
    if (*slot == key) return 0;
    *slot = key;
    s->len++;
    return 1;
}

PyDoc_STRVAR(covers_doc,
"covers(slice_rows, rows, class_of_byte, expanded, accepting, state, max_len, core=None)\n"
"    -> (answer, blocked)\n\n"
"answer is 1 when every slice string of up to max_len bytes stays alive from `state`, 0 when\n"
"one dies, -1 when rows are missing: `blocked` (int64 bytes) then lists the grammar states\n"
"whose rows are needed.  With a lazy DFA's SubsetCore, rows are built in place (the grammar\n"
"arrays must be writable).");

static const SubsetApi *subset_api;

static PyObject *covers(PyObject *self, PyObject *args) {
    Py_buffer b[NBUF];
    long long state, max_len;
    PyObject *core = Py_None;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*LL|O", &b[0], &b[1], &b[2], &b[3], &b[4], &state, &max_len, &core))
        return NULL;
    Py_buffer *const dfa_arrays[] = {&b[1], &b[3], &b[4]};
    if (subset_core_arg(subset_api, &core, dfa_arrays, 3, "covers")) {
        for (int i = 0; i < NBUF; i++) PyBuffer_Release(&b[i]);
        return NULL;
    }
    const int32_t *slice_rows = b[0].buf, *class_of_byte = b[2].buf;
    int32_t *rows = b[1].buf; /* written only through the core */
    uint8_t *expanded = b[3].buf, *accepting = b[4].buf;
    const int64_t slice_states = b[0].len / (4 * 256), num_states = b[3].len < b[4].len ? b[3].len : b[4].len;
    const int64_t num_classes = num_states ? (b[1].len / 4) / num_states : 0;
    const char *bad = NULL;
    PyObject *result = NULL;
    Set seen = {0};
    Vec frontier = {0}, next = {0}, blocked = {0};
    int64_t answer = 1;

    if (b[0].len != 4 * 256 * slice_states || b[2].len != 4 * 256 || num_classes < 1 ||
        b[1].len != 4 * num_classes * num_states || state < 0 || state >= num_states) {
        bad = "covers: inconsistent arguments";
        goto done;
    }
    for (int i = 0; i < 256; i++) {
        if (class_of_byte[i] < 0 || class_of_byte[i] >= num_classes) {
            bad = "covers: byte class out of range";
            goto done;
        }
    }
    const int64_t start = ((int64_t)1 << 32) | state;  /* the pair (slice START, state) */
    if (set_init(&seen, 256) || set_add(&seen, start) < 0 || vec_push(&frontier, start)) goto nomem;
    for (long long depth = 0; depth < max_len && frontier.len && answer == 1; depth++) {
        next.len = 0;
        for (int64_t i = 0; i < frontier.len && answer == 1; i++) {
            int64_t u = frontier.data[i] >> 32, q = frontier.data[i] & 0xffffffff;
            if (q >= num_states || !expanded[q]) {
                if (!core || q >= num_states) {
                    if (vec_push(&blocked, q)) goto nomem;
                    continue;
                }
                if (subset_api->fill(core, q, rows, num_classes, expanded, accepting, num_states)) goto done;
            }
            const int32_t *slice_row = slice_rows + u * 256, *row = rows + q * num_classes;
            int64_t last = -1;  /* neighbouring bytes mostly lead to the same pair */
            for (int c = 0; c < 256; c++) {
                int64_t v = slice_row[c];
                if (!v) continue;
                int64_t r = row[class_of_byte[c]];
                if (!r) {
                    answer = 0;
                    break;
                }
                if (v < 0 || v >= slice_states || r < 0 ||
                    (r >= num_states && (!core || r >= subset_api->num_sets(core)))) {
                    bad = "covers: state out of range";
                    goto done;
                }
                int64_t pair = (v << 32) | r;
                if (pair == last) continue;
                last = pair;
                int added = set_add(&seen, pair);
                if (added < 0 || (added && vec_push(&next, pair))) goto nomem;
            }
        }
        Vec swap = frontier;
        frontier = next;
        next = swap;
    }
    if (answer == 1 && blocked.len) answer = -1;
    if (answer != -1) blocked.len = 0;  /* rows are asked for only when they decide the answer */
    {
        PyObject *bl = vec_bytes(&blocked);
        if (bl) result = Py_BuildValue("(LN)", (long long)answer, bl);
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (bad) PyErr_SetString(PyExc_ValueError, bad);
    free(seen.slots);
    free(frontier.data);
    free(next.data);
    free(blocked.data);
    for (int i = 0; i < NBUF; i++) PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"covers", covers, METH_VARARGS, covers_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_slice_cover", "Slice coverage of a grammar state (see slices.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__slice_cover(void) {
    subset_api = subset_api_import();
    return subset_api ? PyModule_Create(&module) : NULL;
}

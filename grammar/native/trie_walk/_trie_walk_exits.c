/* The exits of a native trie walk (see _trie_walk.c): the child ranges of live nodes reached in an
 * accepting state, as the loops collect them, ordered by depth, then read out as their nodes,
 * ascending and each once.
 */
#include "_trie_walk.h"

static int by_lo(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The nodes of the child ranges in `ranges` ((lo, hi) pairs; two ranges are equal or disjoint,
 * as the children of one node or of two), ascending and each once, as int64 bytes; only those
 * spelling a byte of `keep` (a 32-byte bitmap) when it is given.  NULL with an exception set. */
PyObject *trie_range_nodes(Vec *ranges, const uint8_t *byte, int64_t root, const uint8_t *keep) {
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
 * pairs ordered by depth (stably): from one seed, level order (see `trie_range_nodes`). */
int trie_ranges_by_depth(Vec *triples, Vec *pairs) {
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

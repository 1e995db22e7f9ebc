/* DFA minimisation in C: trim, Moore partition refinement, canonical numbering.
 *
 * Input: a table over byte classes (int32, n states x k classes; 0 need not be dead), accepting
 * flags and the start state.  States that cannot reach acceptance merge into one dead state;
 * the others are split by exact Moore refinement (signature: own block and the blocks of the k
 * successors) until the partition is stable.  Blocks are then numbered DEAD=0, START=1, then in
 * breadth-first order over classes from the start: since classes are contiguous byte intervals
 * in increasing order, equal languages get equal tables whatever their class partition.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* One refinement round: block ids from (block, successor blocks); returns the block count. */
static int64_t refine(const int32_t *table, int64_t n, int64_t k, const int64_t *block, int64_t *out,
                      int64_t *slots, int64_t cap, uint64_t *hash) {
    for (int64_t s = 0; s < n; s++) {
        uint64_t h = mix((uint64_t)block[s] + 1);
        for (int64_t c = 0; c < k; c++) h = mix(h ^ ((uint64_t)block[table[s * k + c]] + 0x9E3779B97F4A7C15ull * (c + 1)));
        hash[s] = h;
    }
    memset(slots, 0xff, (size_t)cap * sizeof(int64_t));
    int64_t count = 0;
    for (int64_t s = 0; s < n; s++) {
        int64_t i = (int64_t)(hash[s] & (uint64_t)(cap - 1));
        for (;;) {
            int64_t r = slots[i];
            if (r < 0) { /* a new block, represented by s */
                slots[i] = s;
                out[s] = count++;
                break;
            }
            int same = hash[r] == hash[s] && block[r] == block[s];
            for (int64_t c = 0; same && c < k; c++) same = block[table[r * k + c]] == block[table[s * k + c]];
            if (same) {
                out[s] = out[r];
                break;
            }
            i = (i + 1) & (cap - 1);
        }
    }
    return count;
}

PyDoc_STRVAR(minimize_doc,
"minimize(table, accepting, start) -> (table, accepting) of the minimal DFA\n\n"
"`table`: int32 bytes, n states x k classes (k = len(table) // 4 // n); `accepting`: n bytes.\n"
"Returns int32 bytes (m x k) and m bytes of flags, numbered DEAD=0, START=1, then breadth-first.\n"
"A start state that cannot reach acceptance gives the two-state empty DFA.");

static PyObject *minimize(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer tb = {0}, ab = {0};
    long long start;
    if (!PyArg_ParseTuple(args, "y*y*L", &tb, &ab, &start)) return NULL;
    PyObject *result = NULL;
    const int32_t *in = tb.buf;
    const uint8_t *accepting = ab.buf;
    const int64_t n = ab.len, k = n ? tb.len / 4 / n : 0;
    /* states 0..n-1, plus a sink n standing for every state that cannot reach acceptance */
    int32_t *table = NULL, *out_table = NULL;
    int64_t *block = NULL, *next = NULL, *slots = NULL, *pred_at = NULL, *preds = NULL, *queue = NULL;
    int64_t *number = NULL;
    uint64_t *hash = NULL;
    uint8_t *live = NULL;
    if (n < 1 || k < 1 || tb.len != 4 * n * k || start < 0 || start >= n) {
        PyErr_SetString(PyExc_ValueError, "minimize: inconsistent arguments");
        goto done;
    }
    for (int64_t i = 0; i < n * k; i++) {
        if (in[i] < 0 || in[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "minimize: a transition is out of range");
            goto done;
        }
    }
    const int64_t m = n + 1;
    int64_t cap = 16;
    while (cap < 2 * m) cap *= 2;
    table = malloc((size_t)(m * k) * sizeof(int32_t));
    block = malloc((size_t)m * sizeof(int64_t));
    next = malloc((size_t)m * sizeof(int64_t));
    slots = malloc((size_t)cap * sizeof(int64_t));
    hash = malloc((size_t)m * sizeof(uint64_t));
    live = calloc((size_t)m, 1);
    pred_at = calloc((size_t)(m + 1), sizeof(int64_t));
    preds = malloc((size_t)(n * k + 1) * sizeof(int64_t));
    queue = malloc((size_t)m * sizeof(int64_t));
    number = malloc((size_t)m * sizeof(int64_t));
    if (!table || !block || !next || !slots || !hash || !live || !pred_at || !preds || !queue || !number) {
        PyErr_NoMemory();
        goto done;
    }
    /* which states reach acceptance: backwards over a CSR of predecessors */
    for (int64_t i = 0; i < n * k; i++) pred_at[in[i] + 1]++;
    for (int64_t s = 0; s < m; s++) pred_at[s + 1] += pred_at[s];
    memcpy(next, pred_at, (size_t)m * sizeof(int64_t));
    for (int64_t i = 0; i < n * k; i++) preds[next[in[i]]++] = i / k;
    int64_t head = 0, tail = 0;
    for (int64_t s = 0; s < n; s++)
        if (accepting[s]) live[s] = 1, queue[tail++] = s;
    while (head < tail) {
        int64_t s = queue[head++];
        for (int64_t i = pred_at[s]; i < pred_at[s + 1]; i++)
            if (!live[preds[i]]) live[preds[i]] = 1, queue[tail++] = preds[i];
    }
    if (!live[start]) {
        int32_t zeros[2] = {0, 0};
        PyObject *t = PyBytes_FromStringAndSize(NULL, 2 * k * 4), *a = PyBytes_FromStringAndSize((char *)zeros, 2);
        if (t) memset(PyBytes_AS_STRING(t), 0, (size_t)(2 * k * 4));
        if (t && a) result = PyTuple_Pack(2, t, a);
        Py_XDECREF(t);
        Py_XDECREF(a);
        goto done;
    }
    for (int64_t s = 0; s < n; s++)
        for (int64_t c = 0; c < k; c++) table[s * k + c] = live[in[s * k + c]] ? in[s * k + c] : (int32_t)n;
    for (int64_t c = 0; c < k; c++) table[n * k + c] = (int32_t)n;
    /* Moore refinement from {sink and non-live}, {live rejecting}, {accepting} */
    for (int64_t s = 0; s < m; s++) block[s] = s < n && live[s] ? 1 + (accepting[s] != 0) : 0;
    int64_t count = 0;
    for (;;) {
        int64_t got = refine(table, m, k, block, next, slots, cap, hash);
        int64_t *swap = block;
        block = next;
        next = swap;
        if (got == count) break;
        count = got;
    }
    /* number blocks: the dead block 0, then breadth-first from the start */
    for (int64_t b = 0; b < m; b++) number[b] = -1;
    int64_t dead = block[n], numbered = 1;
    number[dead] = 0;
    head = tail = 0;
    if (number[block[start]] < 0) number[block[start]] = numbered++, queue[tail++] = start;
    while (head < tail) {
        int64_t s = queue[head++];
        for (int64_t c = 0; c < k; c++) {
            int64_t t = table[s * k + c];
            if (number[block[t]] < 0) number[block[t]] = numbered++, queue[tail++] = t;
        }
    }
    /* queue[j - 1] represents block number j (j >= 1) */
    {
        PyObject *t = PyBytes_FromStringAndSize(NULL, numbered * k * 4);
        PyObject *a = PyBytes_FromStringAndSize(NULL, numbered);
        if (t && a) {
            out_table = (int32_t *)PyBytes_AS_STRING(t);
            uint8_t *flags = (uint8_t *)PyBytes_AS_STRING(a);
            for (int64_t c = 0; c < k; c++) out_table[c] = 0;
            flags[0] = 0;
            for (int64_t j = 1; j < numbered; j++) {
                int64_t s = queue[j - 1];
                for (int64_t c = 0; c < k; c++) out_table[j * k + c] = (int32_t)number[block[table[s * k + c]]];
                flags[j] = accepting[s] != 0;
            }
            result = PyTuple_Pack(2, t, a);
        }
        Py_XDECREF(t);
        Py_XDECREF(a);
    }
done:
    free(table);
    free(block);
    free(next);
    free(slots);
    free(hash);
    free(live);
    free(pred_at);
    free(preds);
    free(queue);
    free(number);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&ab);
    return result;
}

static PyMethodDef methods[] = {
    {"minimize", minimize, METH_VARARGS, minimize_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_minimize", "DFA minimisation (see dfa.minimize).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__minimize(void) { return PyModule_Create(&module); }

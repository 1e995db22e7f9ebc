/* DFA minimisation in C: trim, Hopcroft partition refinement, canonical numbering.
 *
 * Input: a table over byte classes (int32, n states x k classes; 0 need not be dead), accepting
 * flags and the start state.  States that cannot reach acceptance merge into one dead state;
 * the others are split by Hopcroft's refinement (O(k n log n): a block's predecessors per class
 * split the blocks they cut, and of a split only the smaller part waits to split others) until
 * stable.  Blocks are then numbered DEAD=0, START=1, then in breadth-first order over classes
 * from the start: since classes are contiguous byte intervals in increasing order, equal
 * languages get equal tables whatever their class partition.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_clock.h"

#define CHECK_EVERY 64 /* worklist blocks between reads of the clock */

/* A refinable partition of states 0..m-1 (Valmari and Lehtinen's layout): the states of block b
 * are elems[first[b]..end[b]), its marked ones first, up to mid[b]; loc[s] is s's index in elems. */
typedef struct {
    int32_t *elems, *loc, *block_of, *first, *end, *mid, *touched, *work;
    uint8_t *in_work;
    int64_t blocks, num_touched, num_work;
} Partition;

static void mark(Partition *p, int32_t s) {
    const int32_t b = p->block_of[s], i = p->loc[s], j = p->mid[b];
    if (i < j) return; /* marked already */
    if (j == p->first[b]) p->touched[p->num_touched++] = b;
    const int32_t other = p->elems[j];
    p->elems[j] = s, p->loc[s] = j;
    p->elems[i] = other, p->loc[other] = i;
    p->mid[b] = j + 1;
}

/* Splits every touched block into its marked and unmarked states; the smaller part becomes the new
 * block and joins the worklist (Hopcroft: if the old block is waiting both parts will be, and if it
 * was used already, the smaller part is enough). */
static void split_touched(Partition *p) {
    for (int64_t t = 0; t < p->num_touched; t++) {
        const int32_t b = p->touched[t], lo = p->first[b], mid = p->mid[b], hi = p->end[b];
        p->mid[b] = lo;
        if (mid == hi) continue; /* every state marked: no split */
        const int32_t nb = (int32_t)p->blocks++;
        if (mid - lo <= hi - mid) { /* the marked part is the new block */
            p->first[nb] = lo, p->end[nb] = mid, p->first[b] = mid;
        } else {
            p->first[nb] = mid, p->end[nb] = hi, p->end[b] = mid;
        }
        p->mid[b] = p->first[b], p->mid[nb] = p->first[nb];
        for (int32_t i = p->first[nb]; i < p->end[nb]; i++) p->block_of[p->elems[i]] = nb;
        p->in_work[nb] = 1, p->work[p->num_work++] = nb;
    }
    p->num_touched = 0;
}

/* Hopcroft's refinement of `p` (the initial blocks, all but the largest waiting) over the
 * transitions `table` (m states x k classes), reading predecessors per (target, class) from the
 * CSR inv_at / inv; `scratch` holds m states. */
static int refine(Partition *p, const int32_t *inv_at, const int32_t *inv, int64_t k, int32_t *scratch,
                  double deadline) {
    int64_t pops = 0;
    while (p->num_work) {
        if (deadline > 0 && ++pops % CHECK_EVERY == 0 && cpu_now() >= deadline) return 1; /* out of time */
        const int32_t a = p->work[--p->num_work];
        p->in_work[a] = 0;
        const int32_t n = p->end[a] - p->first[a];
        memcpy(scratch, p->elems + p->first[a], (size_t)n * sizeof(int32_t)); /* `a` may split meanwhile */
        for (int64_t c = 0; c < k; c++) {
            for (int32_t i = 0; i < n; i++) {
                const int64_t at = (int64_t)scratch[i] * k + c;
                for (int32_t j = inv_at[at]; j < inv_at[at + 1]; j++) mark(p, inv[j]);
            }
            split_touched(p);
        }
    }
    return 0;
}

PyDoc_STRVAR(minimize_doc,
"minimize(table, accepting, start, seconds=-1) -> (table, accepting) of the minimal DFA\n\n"
"`table`: int32 bytes, n states x k classes (k = len(table) // 4 // n); `accepting`: n bytes.\n"
"Returns int32 bytes (m x k) and m bytes of flags, numbered DEAD=0, START=1, then breadth-first.\n"
"A start state that cannot reach acceptance gives the two-state empty DFA.  With `seconds` >= 0,\n"
"None once the refinement has run that long (the calling thread's CPU time, see _clock.h).");

static PyObject *minimize(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer tb = {0}, ab = {0};
    long long start;
    double seconds = -1.0;
    if (!PyArg_ParseTuple(args, "y*y*L|d", &tb, &ab, &start, &seconds)) return NULL;
    const double deadline = seconds >= 0 ? cpu_now() + seconds : 0;
    PyObject *result = NULL;
    const int32_t *in = tb.buf;
    const uint8_t *accepting = ab.buf;
    const int64_t n = ab.len, k = n ? tb.len / 4 / n : 0;
    /* states 0..n-1, plus a sink n standing for every state that cannot reach acceptance */
    int32_t *table = NULL, *out_table = NULL, *inv_at = NULL, *inv = NULL, *arrays = NULL;
    int64_t *next = NULL, *pred_at = NULL, *preds = NULL, *queue = NULL;
    int64_t *number = NULL;
    uint8_t *live = NULL, *in_work = NULL;
    if (n < 1 || k < 1 || tb.len != 4 * n * k || start < 0 || start >= n || (n + 1) * k >= INT32_MAX) {
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
    table = malloc((size_t)(m * k) * sizeof(int32_t));
    next = malloc((size_t)m * sizeof(int64_t));
    live = calloc((size_t)m, 1);
    in_work = calloc((size_t)m, 1);
    inv_at = calloc((size_t)(m * k + 1), sizeof(int32_t));
    inv = malloc((size_t)(m * k) * sizeof(int32_t));
    arrays = malloc((size_t)(9 * m) * sizeof(int32_t)); /* the partition's eight arrays and a scratch */
    pred_at = calloc((size_t)(m + 1), sizeof(int64_t));
    preds = malloc((size_t)(n * k + 1) * sizeof(int64_t));
    queue = malloc((size_t)m * sizeof(int64_t));
    number = malloc((size_t)m * sizeof(int64_t));
    if (!table || !next || !live || !in_work || !inv_at || !inv || !arrays || !pred_at || !preds || !queue ||
        !number) {
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
    /* predecessors per (target, class), as a CSR: counts, starts, filled (each start moves to its
       end, the next one's start), shifted back */
    for (int64_t i = 0; i < m * k; i++) inv_at[(int64_t)table[i] * k + i % k + 1]++;
    for (int64_t x = 0; x < m * k; x++) inv_at[x + 1] += inv_at[x];
    for (int64_t i = 0; i < m * k; i++) inv[inv_at[(int64_t)table[i] * k + i % k]++] = (int32_t)(i / k);
    for (int64_t x = m * k; x > 0; x--) inv_at[x] = inv_at[x - 1];
    inv_at[0] = 0;
    /* the first partition: {the sink and every state that cannot reach acceptance}, {live
       rejecting states}, {accepting states}; the empty ones left out */
    Partition part = {arrays, arrays + m, arrays + 2 * m, arrays + 3 * m, arrays + 4 * m, arrays + 5 * m,
                      arrays + 6 * m, arrays + 7 * m, in_work, 0, 0, 0};
    int32_t *scratch = arrays + 8 * m, largest = 0;
    for (int kind = 0; kind < 3; kind++) {
        const int32_t lo = (int32_t)(part.blocks ? part.end[part.blocks - 1] : 0);
        int32_t hi = lo;
        for (int64_t s = 0; s < m; s++) {
            if ((s < n && live[s] ? 1 + (accepting[s] != 0) : 0) != kind) continue;
            part.elems[hi] = (int32_t)s, part.loc[s] = hi++, part.block_of[s] = (int32_t)part.blocks;
        }
        if (hi == lo) continue;
        const int32_t b = (int32_t)part.blocks++;
        part.first[b] = part.mid[b] = lo, part.end[b] = hi;
        if (hi - lo > part.end[largest] - part.first[largest]) largest = b;
    }
    for (int32_t b = 0; b < part.blocks; b++)
        if (b != largest) part.in_work[b] = 1, part.work[part.num_work++] = b;
    int out_of_time;
    Py_BEGIN_ALLOW_THREADS /* the refinement touches no Python object: other threads run meanwhile */
    out_of_time = refine(&part, inv_at, inv, k, scratch, deadline);
    Py_END_ALLOW_THREADS
    if (out_of_time) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    const int32_t *block = part.block_of;
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
    free(next);
    free(live);
    free(in_work);
    free(inv_at);
    free(inv);
    free(arrays);
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

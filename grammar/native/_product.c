/* The product construction of two DFAs in C (module `formwork.grammar._product`, called by
 * `dfa.product`): breadth-first over the reachable state pairs, a row per pair over the byte
 * classes both operands respect.  Pairs are keyed a * nb + b in an open-addressing table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_clock.h"

enum { OK = 0, OUT_OF_TIME = 1, TOO_MANY_STATES = 2, CHECK_EVERY = 256 };

typedef struct {
    int64_t *keys; /* pair code + 1 (0: empty) */
    int32_t *ids;
    int64_t cap;
} Index;

static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static int index_init(Index *ix, int64_t cap) {
    ix->cap = cap;
    ix->keys = calloc((size_t)cap, sizeof(int64_t));
    ix->ids = malloc((size_t)cap * sizeof(int32_t));
    return ix->keys && ix->ids ? 0 : -1;
}

/* The slot of `code`: where it is, or the empty slot it would go in. */
static int64_t slot_of(const Index *ix, int64_t code) {
    int64_t i = (int64_t)(mix((uint64_t)code) & (uint64_t)(ix->cap - 1));
    while (ix->keys[i] && ix->keys[i] != code + 1) i = (i + 1) & (ix->cap - 1);
    return i;
}

static int index_grow(Index *ix) {
    Index bigger;
    if (index_init(&bigger, 2 * ix->cap)) {
        free(bigger.keys), free(bigger.ids);
        return -1;
    }
    for (int64_t i = 0; i < ix->cap; i++)
        if (ix->keys[i]) {
            int64_t j = slot_of(&bigger, ix->keys[i] - 1);
            bigger.keys[j] = ix->keys[i], bigger.ids[j] = ix->ids[i];
        }
    free(ix->keys), free(ix->ids);
    *ix = bigger;
    return 0;
}

PyDoc_STRVAR(product_doc,
"product(rows_a, rows_b, nb, max_states, seconds) -> (rows, codes, why)\n\n"
"`rows_a`, `rows_b`: int32 bytes, a row of r successors per state of each operand over the joint\n"
"classes (r = len(rows_a) // 4 // na); `nb`: the states of b.  From the pair (1, 1), numbered 0,\n"
"every reachable pair gets a row of r pair numbers (int32 bytes) and its code a * nb + b (int64\n"
"bytes), in breadth-first order.  `why` is 0, or 1 when `seconds` (>= 0) ran out, or 2 when more\n"
"than `max_states` pairs were reached (rows and codes are then None).");

static PyObject *product(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer ab = {0}, bb = {0};
    long long nb, max_states;
    double seconds;
    if (!PyArg_ParseTuple(args, "y*y*LLd", &ab, &bb, &nb, &max_states, &seconds)) return NULL;
    PyObject *result = NULL;
    const int32_t *ra = ab.buf, *rb = bb.buf;
    int32_t *rows = NULL;
    int64_t *codes = NULL;
    Index ix = {0};
    const int64_t r = bb.len && nb > 0 ? bb.len / 4 / nb : 0, na = r ? ab.len / 4 / r : 0;
    if (r < 1 || na < 2 || nb < 2 || ab.len != 4 * na * r || bb.len != 4 * nb * r || na > INT32_MAX / nb ||
        max_states < 1) {
        PyErr_SetString(PyExc_ValueError, "product: inconsistent arguments");
        goto done;
    }
    for (int64_t i = 0; i < na * r; i++)
        if (ra[i] < 0 || ra[i] >= na) goto out_of_range;
    for (int64_t i = 0; i < nb * r; i++)
        if (rb[i] < 0 || rb[i] >= nb) goto out_of_range;
    const double deadline = seconds >= 0 ? cpu_now() + seconds : 0;
    int64_t cap = 64, count = 1, why = OK;
    rows = malloc((size_t)(cap * r) * sizeof(int32_t));
    codes = malloc((size_t)cap * sizeof(int64_t));
    if (!rows || !codes || index_init(&ix, 128)) goto nomem;
    codes[0] = 1 * nb + 1;
    int64_t first = slot_of(&ix, codes[0]);
    ix.keys[first] = codes[0] + 1, ix.ids[first] = 0;
    int out_of_memory = 0;
    Py_BEGIN_ALLOW_THREADS /* the loop touches no Python object: other threads run meanwhile */
    for (int64_t i = 0; i < count && why == OK && !out_of_memory; i++) {
        if (i % CHECK_EVERY == 0 && seconds >= 0 && cpu_now() >= deadline) {
            why = OUT_OF_TIME;
            break;
        }
        const int32_t *xa = ra + (codes[i] / nb) * r, *xb = rb + (codes[i] % nb) * r;
        for (int64_t c = 0; c < r; c++) {
            const int64_t code = (int64_t)xa[c] * nb + xb[c];
            int64_t s = slot_of(&ix, code);
            if (!ix.keys[s]) {
                if (count >= max_states) {
                    why = TOO_MANY_STATES;
                    break;
                }
                if (count == cap) {
                    cap *= 2;
                    int32_t *more_rows = realloc(rows, (size_t)(cap * r) * sizeof(int32_t));
                    if (more_rows) rows = more_rows;
                    int64_t *more_codes = realloc(codes, (size_t)cap * sizeof(int64_t));
                    if (more_codes) codes = more_codes;
                    if (!more_rows || !more_codes) {
                        out_of_memory = 1;
                        break;
                    }
                }
                ix.keys[s] = code + 1, ix.ids[s] = (int32_t)count;
                codes[count++] = code;
                if (2 * count > ix.cap && index_grow(&ix)) {
                    out_of_memory = 1;
                    break;
                }
                s = slot_of(&ix, code);
            }
            rows[i * r + c] = ix.ids[s];
        }
    }
    Py_END_ALLOW_THREADS
    if (out_of_memory) goto nomem;
    if (why != OK) {
        result = Py_BuildValue("(OOL)", Py_None, Py_None, (long long)why);
    } else {
        result = Py_BuildValue("(y#y#i)", (const char *)rows, (Py_ssize_t)(4 * count * r), (const char *)codes,
                               (Py_ssize_t)(8 * count), OK);
    }
    goto done;
out_of_range:
    PyErr_SetString(PyExc_ValueError, "product: a transition is out of range");
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(rows);
    free(codes);
    free(ix.keys);
    free(ix.ids);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&bb);
    return result;
}

static PyMethodDef methods[] = {
    {"product", product, METH_VARARGS, product_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_product", "The product construction of two DFAs (see dfa.product).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__product(void) { return PyModule_Create(&module); }

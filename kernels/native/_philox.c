/* Philox-4x32-10 first output words in C for the torch reference sampler's Gumbel noise
 * (kernels/reference/philox.py): the same integer rounds as Triton's `tl.randint(seed, offset)`, one
 * loop over the (seed, counter) pairs instead of ~126 numpy passes over them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define KEY_A 0x9E3779B9u
#define KEY_B 0xBB67AE85u
#define ROUND_A 0xD2511F53u
#define ROUND_B 0xCD9E8D57u
#define ROUNDS 10

/* The first output word of Philox-4x32-10 with key (seed lo, seed hi) and counter (lo, hi, 0, 0). */
static inline uint32_t philox_word(uint64_t seed, uint32_t counter_lo, uint32_t counter_hi) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    uint32_t c0 = counter_lo, c1 = counter_hi, c2 = 0, c3 = 0;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t prod_a = (uint64_t)c0 * ROUND_A, prod_b = (uint64_t)c2 * ROUND_B;
        uint32_t n0 = (uint32_t)(prod_b >> 32) ^ c1 ^ k0, n2 = (uint32_t)(prod_a >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)prod_b;
        c3 = (uint32_t)prod_a;
        c0 = n0;
        c2 = n2;
        k0 += KEY_A;
        k1 += KEY_B;
    }
    return c0;
}

/* words(seeds, counters_lo, counters_hi, out): out[i] = the word of (seeds[i], counters_lo[i],
 * counters_hi[i]); the inputs are contiguous 64-bit integer buffers of one length (only the low 32 bits
 * of a counter count), out a contiguous uint64 buffer of that length. */
static PyObject *words(PyObject *self, PyObject *args) {
    Py_buffer seeds, lo, hi, out;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &seeds, &lo, &hi, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = seeds.len / 8;
    if (seeds.len % 8 || lo.len != seeds.len || hi.len != seeds.len || out.len != seeds.len) {
        PyErr_SetString(PyExc_ValueError, "words: buffers of one length in 8-byte items expected");
        goto done;
    }
    const uint64_t *s = seeds.buf, *l = lo.buf, *h = hi.buf;
    uint64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) o[i] = philox_word(s[i], (uint32_t)l[i], (uint32_t)h[i]);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&seeds);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"words", words, METH_VARARGS, "Philox-4x32-10 first output words of (seed, counter lo, counter hi) triples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_philox", NULL, -1, methods};

PyMODINIT_FUNC PyInit__philox(void) { return PyModule_Create(&module); }

/* Philox-4x32-10 first output words in C for the torch reference sampler's Gumbel noise
 * (kernels/reference/philox.py; the rounds are in philox.h), one loop over the (seed, counter) pairs
 * instead of ~126 numpy passes over them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "philox.h"

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

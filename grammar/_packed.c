/* The nonzero words of a packed token mask, in C (numpy's nonzero costs ~8 µs on a 129k-token
 * mask; this loop well under one): how continuations (cfg/continuations.py) keep their tokens. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

PyDoc_STRVAR(nonzero_words_doc,
"nonzero_words(words) -> (at, bits)\n\n"
"The indices (int64 bytes) and values (int32 bytes) of the nonzero words of a packed int32\n"
"mask, ascending.");

static PyObject *nonzero_words(PyObject *self, PyObject *args) {
    Py_buffer b;
    PyObject *result = NULL, *at = NULL, *bits = NULL;
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    if (b.len % 4) {
        PyErr_SetString(PyExc_ValueError, "nonzero_words: the mask is not whole int32 words");
        goto done;
    }
    const int32_t *words = b.buf;
    Py_ssize_t n = b.len / 4, count = 0;
    for (Py_ssize_t i = 0; i < n; i++) count += words[i] != 0;
    at = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    bits = at ? PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t)) : NULL;
    if (!bits) goto done;
    int64_t *index = (int64_t *)PyBytes_AS_STRING(at);
    int32_t *value = (int32_t *)PyBytes_AS_STRING(bits);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (words[i]) {
            *index++ = i;
            *value++ = words[i];
        }
    }
    result = PyTuple_Pack(2, at, bits);
done:
    Py_XDECREF(at);
    Py_XDECREF(bits);
    PyBuffer_Release(&b);
    return result;
}

static PyMethodDef methods[] = {
    {"nonzero_words", nonzero_words, METH_VARARGS, nonzero_words_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_packed", "Packed token mask helpers (see cfg/continuations.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__packed(void) { return PyModule_Create(&module); }

/* Packed token masks kept as their nonzero words, in C: how continuations (cfg/continuations.py)
 * keep their tokens and OR them into a mask (numpy's nonzero costs ~8 µs on a 129k-token mask,
 * and a fancy-indexed OR ~2 µs; these loops well under one), and how the mask cache keeps a mask
 * as the words that differ from a shared base and writes it into a bitmask row (stored_mask.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 16 /* words compared at once: 64 bytes */

/* Whether word `a` differs from `b`, or (`over`) has bits `b` lacks, as a mask `a | b` would. */
static inline uint64_t differs(uint64_t a, uint64_t b, int over) { return over ? a & ~b : a ^ b; }

/* Whether words [i, i + BLOCK) of `a` and `b` (of `n` words) are all equal. */
static inline int same_block(const int32_t *a, const int32_t *b, Py_ssize_t i, Py_ssize_t n) {
    if (i + BLOCK > n) {
        for (Py_ssize_t j = i; j < n; j++)
            if (a[j] != b[j]) return 0;
        return 1;
    }
    uint64_t x, y, acc = 0;
    for (int k = 0; k < BLOCK / 2; k++) {
        memcpy(&x, a + i + 2 * k, 8);
        memcpy(&y, b + i + 2 * k, 8);
        acc |= x ^ y;
    }
    return acc == 0;
}

/* Whether words [i, i + BLOCK) of `a` (of `n` words) are all zero. */
static inline int zero_block(const int32_t *a, Py_ssize_t i, Py_ssize_t n) {
    uint64_t x, acc = 0;
    if (i + BLOCK > n) {
        for (Py_ssize_t j = i; j < n; j++) acc |= (uint32_t)a[j];
        return acc == 0;
    }
    for (int k = 0; k < BLOCK / 2; k++) {
        memcpy(&x, a + i + 2 * k, 8);
        acc |= x;
    }
    return acc == 0;
}

/* A static buffer of at least `len` zero bytes (grown as needed; masks are a few KB), or NULL
 * with MemoryError set. */
static const int32_t *zeros_like(Py_ssize_t len) {
    static int32_t *zeros = NULL;
    static Py_ssize_t have = 0;
    if (len > have) {
        int32_t *grown = calloc((size_t)len + 4, 1);
        if (!grown) {
            PyErr_NoMemory();
            return NULL;
        }
        free(zeros);
        zeros = grown;
        have = len;
    }
    return zeros;
}

/* Whether the `count` word indices `at` lie in [0, n) (and, with `ascending`, strictly
 * ascend); if not, ValueError is set, naming `name`. */
static int indices_ok(const int64_t *at, Py_ssize_t count, Py_ssize_t n, int ascending, const char *name) {
    for (Py_ssize_t i = 0; i < count; i++) {
        if (at[i] < 0 || at[i] >= n || (ascending && i && at[i] <= at[i - 1])) {
            PyErr_Format(PyExc_ValueError, "%s: word index out of range%s", name,
                         ascending ? " or out of order" : "");
            return 0;
        }
    }
    return 1;
}

PyDoc_STRVAR(nonzero_words_doc,
"nonzero_words(words) -> (at, bits)\n\n"
"The indices (int64 bytes) and values (int32 bytes) of the nonzero words of a packed int32\n"
"mask, ascending.");


PyDoc_STRVAR(or_words_doc,
"or_words(words, at, bits, base=None)\n\n"
"ORs `bits` (int32) into the words of the packed int32 mask `words` (writable) at the indices\n"
"`at` (int64, as many); with `base` (a mask as long), ORs in the mask kept as `diff_words`\n"
"keeps it: `base` with word `at[i]` replaced by `bits[i]` (`at` strictly ascending).");

static PyObject *or_words(PyObject *self, PyObject *args) {
    Py_buffer w, a, v, b = {0};
    PyObject *base_obj = Py_None, *result = NULL;
    if (!PyArg_ParseTuple(args, "w*y*y*|O", &w, &a, &v, &base_obj)) return NULL;
    const int has_base = base_obj != Py_None;
    if (has_base && PyObject_GetBuffer(base_obj, &b, PyBUF_SIMPLE)) goto done;
    const Py_ssize_t n = w.len / 4, count = a.len / 8;
    if (w.len % 4 || a.len % 8 || v.len != count * 4 || (has_base && b.len != w.len)) {
        PyErr_SetString(PyExc_ValueError, "or_words: inconsistent array sizes");
        goto done;
    }
    uint32_t *words = w.buf;
    const int64_t *at = a.buf;
    const uint32_t *bits = v.buf;
    if (!indices_ok(at, count, n, has_base, "or_words")) goto done;
    if (has_base) { /* OR the whole base (a loop the compiler vectorises), then mend the replaced words */
        const uint32_t *base = b.buf;
        uint32_t *kept = count > 0 ? malloc((size_t)count * sizeof(uint32_t)) : NULL;
        if (count > 0 && !kept) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < count; i++) kept[i] = words[at[i]];
        for (Py_ssize_t j = 0; j < n; j++) words[j] |= base[j];
        for (Py_ssize_t i = 0; i < count; i++) words[at[i]] = kept[i] | bits[i];
        free(kept);
    } else {
        for (Py_ssize_t i = 0; i < count; i++) words[at[i]] |= bits[i];
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&w);
    PyBuffer_Release(&a);
    PyBuffer_Release(&v);
    if (has_base && b.obj) PyBuffer_Release(&b);
    return result;
}

PyDoc_STRVAR(diff_words_doc,
"diff_words(words, base, limit, clear=False, over=False) -> (at, bits) or None\n\n"
"The indices (int64 bytes) and values (int32 bytes) of the words of the packed int32 mask\n"
"`words` (with `over`: `words | base`) that differ from `base` (a mask as long, or None: all\n"
"zeros), ascending; None when more than `limit` words differ.  With `clear` (and `words`\n"
"writable), `words` is then zeroed unless None is returned.");

/* The words of `words` (n of them; `over`: of `words | base`) that differ from `base`, as
 * (at, bits), in one pass over blocks; Py_None when more than `limit` differ.  With `clear`
 * (`words` itself, writable), the words are zeroed unless Py_None is returned.  Over a base,
 * only the blocks where `words` has bits can differ: the others are neither compared nor cleared. */
static PyObject *differing(const int32_t *words, const int32_t *base, Py_ssize_t n, Py_ssize_t limit, int over,
                           int32_t *clear) {
    static int64_t *found = NULL; /* indices seen so far (the GIL is held: one caller at a time) */
    static Py_ssize_t room = 0, *dirty = NULL, dirty_room = 0; /* blocks of `words` with bits (over) */
    Py_ssize_t count = 0, num_dirty = 0, cap = limit < n ? limit : n, blocks = n / BLOCK + 1;
    if (cap + BLOCK > room) {
        int64_t *grown = realloc(found, (size_t)(cap + BLOCK) * sizeof(int64_t));
        if (!grown) return PyErr_NoMemory();
        found = grown;
        room = cap + BLOCK;
    }
    if (blocks > dirty_room) {
        Py_ssize_t *grown = realloc(dirty, (size_t)blocks * sizeof(Py_ssize_t));
        if (!grown) return PyErr_NoMemory();
        dirty = grown;
        dirty_room = blocks;
    }
    for (Py_ssize_t i = 0; i < n; i += BLOCK) {
        if (over ? zero_block(words, i, n) : same_block(words, base, i, n)) continue;
        if (over) dirty[num_dirty++] = i;
        for (Py_ssize_t j = i; j < i + BLOCK && j < n; j++) {
            found[count] = j;
            count += differs((uint32_t)words[j], (uint32_t)base[j], over) != 0;
        }
        if (count > limit) return Py_NewRef(Py_None);
    }
    PyObject *result = NULL, *at = PyBytes_FromStringAndSize((const char *)found, count * (Py_ssize_t)sizeof(int64_t));
    PyObject *bits = at ? PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t)) : NULL;
    if (bits) {
        int32_t *value = (int32_t *)PyBytes_AS_STRING(bits);
        for (Py_ssize_t k = 0; k < count; k++) value[k] = words[found[k]] | (over ? base[found[k]] : 0);
        result = PyTuple_Pack(2, at, bits);
    }
    if (result && clear && over) {
        for (Py_ssize_t k = 0; k < num_dirty; k++) {
            Py_ssize_t i = dirty[k], end = i + BLOCK < n ? i + BLOCK : n;
            memset(clear + i, 0, (size_t)(end - i) * sizeof(int32_t));
        }
    } else if (result && clear) {
        memset(clear, 0, (size_t)n * sizeof(int32_t));
    }
    Py_XDECREF(at);
    Py_XDECREF(bits);
    return result;
}

static PyObject *nonzero_words(PyObject *self, PyObject *args) {
    Py_buffer w;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*", &w)) return NULL;
    const int32_t *zeros = zeros_like(w.len);
    if (w.len % 4)
        PyErr_SetString(PyExc_ValueError, "nonzero_words: the mask is not whole int32 words");
    else if (zeros)
        result = differing(w.buf, zeros, w.len / 4, w.len / 4, 0, NULL);
    PyBuffer_Release(&w);
    return result;
}

static PyObject *diff_words(PyObject *self, PyObject *args) {
    Py_buffer w, b = {0};
    PyObject *base_obj, *result = NULL;
    Py_ssize_t limit;
    int clear = 0, over = 0;
    if (!PyArg_ParseTuple(args, "y*On|pp", &w, &base_obj, &limit, &clear, &over)) return NULL;
    if (clear && w.readonly) {
        PyErr_SetString(PyExc_ValueError, "diff_words: cannot clear a read-only mask");
        PyBuffer_Release(&w);
        return NULL;
    }
    const int has_base = base_obj != Py_None;
    if (has_base && PyObject_GetBuffer(base_obj, &b, PyBUF_SIMPLE)) {
        PyBuffer_Release(&w);
        return NULL;
    }
    const int32_t *base = has_base ? b.buf : zeros_like(w.len);
    if (w.len % 4 || (has_base && b.len != w.len))
        PyErr_SetString(PyExc_ValueError, "diff_words: the masks are not whole int32 words of one length");
    else if (base)
        result = differing(w.buf, base, w.len / 4, limit, over, clear ? w.buf : NULL);
    PyBuffer_Release(&w);
    if (has_base) PyBuffer_Release(&b);
    return result;
}

PyDoc_STRVAR(write_words_doc,
"write_words(out, row, words, base, at, bits)\n\n"
"Writes a mask kept as `diff_words` keeps it into row `row` (negative: from the end) of `out`, a\n"
"writable C-contiguous int32 buffer of rows of `words` words: the row becomes `base` (None:\n"
"zeros) with word `at[i]` set to `bits[i]` (int64 and int32 bytes).");

static PyObject *write_words(PyObject *self, PyObject *args) {
    Py_buffer o, a, v, b = {0};
    PyObject *base_obj, *result = NULL;
    Py_ssize_t row, n;
    if (!PyArg_ParseTuple(args, "w*nnOy*y*", &o, &row, &n, &base_obj, &a, &v)) return NULL;
    const int has_base = base_obj != Py_None;
    if (has_base && PyObject_GetBuffer(base_obj, &b, PyBUF_SIMPLE)) goto done;
    const Py_ssize_t count = a.len / 8;
    if (n <= 0 || o.len % (4 * n) || a.len % 8 || v.len != count * 4 || (has_base && b.len != 4 * n)) {
        PyErr_SetString(PyExc_ValueError, "write_words: inconsistent array sizes");
        goto done;
    }
    const Py_ssize_t rows = o.len / (4 * n);
    if (row < 0) row += rows;
    if (row < 0 || row >= rows) {
        PyErr_SetString(PyExc_IndexError, "write_words: row index out of range");
        goto done;
    }
    const int64_t *idx = a.buf;
    if (!indices_ok(idx, count, n, 0, "write_words")) goto done;
    int32_t *out = (int32_t *)o.buf + row * n;
    if (has_base) memcpy(out, b.buf, (size_t)n * 4);
    else memset(out, 0, (size_t)n * 4);
    const int32_t *bits = v.buf;
    for (Py_ssize_t i = 0; i < count; i++) out[idx[i]] = bits[i];
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&o);
    PyBuffer_Release(&a);
    PyBuffer_Release(&v);
    if (has_base && b.obj) PyBuffer_Release(&b);
    return result;
}

static PyMethodDef methods[] = {
    {"nonzero_words", nonzero_words, METH_VARARGS, nonzero_words_doc},
    {"or_words", or_words, METH_VARARGS, or_words_doc},
    {"diff_words", diff_words, METH_VARARGS, diff_words_doc},
    {"write_words", write_words, METH_VARARGS, write_words_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_packed", "Packed token mask helpers (see cfg/continuations.py and stored_mask.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__packed(void) { return PyModule_Create(&module); }

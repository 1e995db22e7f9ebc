/* formwork.kernels._draw: the torch reference sampler's truncation and Gumbel-max draw of its sampled
 * rows in one C pass (draw_rows.c), instead of ~30 torch/numpy operations over [rows, vocab]. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "draw_rows.h"

/* A contiguous buffer of `count` items of `size` bytes, or of none when `object` is None and
 * `optional`; 0 on success, -1 with an exception set. */
static int get_buffer(PyObject *object, Py_buffer *view, Py_ssize_t count, Py_ssize_t size, int writable,
                      int optional, const char *name) {
    view->obj = NULL;
    view->buf = NULL;
    if (object == Py_None && optional) return 0;
    if (PyObject_GetBuffer(object, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS))
        return -1;
    if (view->len != count * size) {
        PyErr_Format(PyExc_ValueError, "draw_rows: %s holds %zd bytes, expected %zd", name, view->len,
                     count * size);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

enum { X, ROW_MAX, INV_T, FLOOR, TOP_P, MIN_P, REL, TOTAL, SEEDS, STEPS, OUT, NUM_BUFFERS };

/* The near ties of each row `draw_row` left open: a list of (row, (token ids ascending)). */
static PyObject *draw_all(Py_buffer *b, Py_ssize_t rows, Py_ssize_t vocab, float never_wins) {
    DrawScratch *scratch = draw_scratch_new(vocab);
    if (!scratch) return PyErr_NoMemory();
    PyObject *open = PyList_New(0);
    if (!open) goto fail;
    const float *x = b[X].buf, *row_max = b[ROW_MAX].buf, *inv_t = b[INV_T].buf, *floors = b[FLOOR].buf;
    const float *top_p = b[TOP_P].buf, *min_p = b[MIN_P].buf, *rel = b[REL].buf, *total = b[TOTAL].buf;
    const int64_t *seeds = b[SEEDS].buf, *steps = b[STEPS].buf;
    int64_t *out = b[OUT].buf;
    for (Py_ssize_t r = 0; r < rows; r++) {
        DrawRow row = {x + r * vocab, rel ? rel + r * vocab : NULL, vocab, row_max[r], inv_t[r],
                       floors ? floors[r] : -INFINITY, top_p[r], min_p[r], total ? total[r] : 0.0f, never_wins,
                       (uint64_t)seeds[r], (uint32_t)steps[r]};
        if ((row.top_p < 1.0f && !(rel && total)) || (row.min_p > 0.0f && !rel)) {
            PyErr_Format(PyExc_ValueError, "draw_rows: row %zd uses top-p or min-p without rel (and total)", r);
            goto fail;
        }
        int64_t token;
        Py_BEGIN_ALLOW_THREADS
        token = draw_row(&row, scratch);
        Py_END_ALLOW_THREADS
        if (token == DRAW_NO_MEMORY) {
            PyErr_NoMemory();
            goto fail;
        }
        out[r] = token;
        if (token >= -1) continue;
        Py_ssize_t count = (Py_ssize_t)(-1 - token);
        PyObject *ids = PyTuple_New(count);
        if (!ids) goto fail;
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *id = PyLong_FromLong(scratch->near[k]);
            if (!id) {
                Py_DECREF(ids);
                goto fail;
            }
            PyTuple_SET_ITEM(ids, k, id);
        }
        PyObject *entry = Py_BuildValue("(nN)", r, ids);
        if (!entry || PyList_Append(open, entry)) {
            Py_XDECREF(entry);
            goto fail;
        }
        Py_DECREF(entry);
    }
    draw_scratch_free(scratch);
    return open;
fail:
    Py_XDECREF(open);
    draw_scratch_free(scratch);
    return NULL;
}

/* draw_rows(x, rows, vocab, row_max, inv_temperature, floor, top_p, min_p, rel, total, seeds, steps,
 * never_wins, out) -> [(row, ids)]: per row of the float32 [rows, vocab] logits x, the drawn token into
 * out (int64 [rows]); per-row float32 row_max, inv_temperature, floor (top-k's; None: all -inf), top_p,
 * min_p, total (top-p's mass; None where no row uses top-p) and int64 seeds and steps; rel the float32
 * [rows, vocab] relative probabilities (None where no row uses top-p or min-p). The rows listed in the
 * result had near ties: out holds -(1 + count) there, and the caller settles them. */
static PyObject *draw_rows(PyObject *self, PyObject *args) {
    PyObject *objects[NUM_BUFFERS];
    Py_ssize_t rows, vocab;
    double never_wins;
    if (!PyArg_ParseTuple(args, "OnnOOOOOOOOOdO", &objects[X], &rows, &vocab, &objects[ROW_MAX],
                          &objects[INV_T], &objects[FLOOR], &objects[TOP_P], &objects[MIN_P], &objects[REL],
                          &objects[TOTAL], &objects[SEEDS], &objects[STEPS], &never_wins, &objects[OUT]))
        return NULL;
    if (rows < 0 || vocab < 1 || vocab > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "draw_rows: rows >= 0 and 1 <= vocab < 2**31 expected");
        return NULL;
    }
    static const char *names[NUM_BUFFERS] = {"x", "row_max", "inv_temperature", "floor", "top_p", "min_p",
                                             "rel", "total", "seeds", "steps", "out"};
    Py_buffer buffers[NUM_BUFFERS];
    PyObject *result = NULL;
    int got = 0;
    for (; got < NUM_BUFFERS; got++) {
        int per_token = got == X || got == REL, wide = got == SEEDS || got == STEPS || got == OUT;
        int optional = got == FLOOR || got == REL || got == TOTAL;
        if (get_buffer(objects[got], &buffers[got], per_token ? rows * vocab : rows, wide ? 8 : 4, got == OUT,
                       optional, names[got]))
            goto done;
    }
    result = draw_all(buffers, rows, vocab, (float)never_wins);
done:
    for (int i = 0; i < got; i++)
        if (buffers[i].obj) PyBuffer_Release(&buffers[i]);
    return result;
}

/* top_p_threshold(xs, es, target) -> float: the top-p threshold (top_p.c) of candidates with float32
 * logits xs and relative probabilities es (one row's, any order) for the float32 mass `target`. */
static PyObject *top_p_threshold_of(PyObject *self, PyObject *args) {
    Py_buffer xs, es;
    float target;
    if (!PyArg_ParseTuple(args, "y*y*f", &xs, &es, &target)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = xs.len / 4;
    DrawScratch *scratch = NULL;
    if (xs.len % 4 || es.len != xs.len) {
        PyErr_SetString(PyExc_ValueError, "top_p_threshold: float32 buffers of one length expected");
        goto done;
    }
    scratch = draw_scratch_new(n);
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) scratch->ids[k] = (int32_t)k;
    float threshold = top_p_threshold(xs.buf, es.buf, scratch->ids, n, target, &scratch->top_p);
    result = isnan(threshold) ? PyErr_NoMemory() : PyFloat_FromDouble(threshold);
done:
    draw_scratch_free(scratch);
    PyBuffer_Release(&xs);
    PyBuffer_Release(&es);
    return result;
}

/* use_simd(wanted) -> bool: whether the noise levels were drawn with AVX2 so far; from now on, with AVX2
 * when `wanted` and the CPU has it (tests compare the two paths). */
static PyObject *use_simd(PyObject *self, PyObject *args) {
    int wanted;
    if (!PyArg_ParseTuple(args, "p", &wanted)) return NULL;
    return PyBool_FromLong(draw_use_simd(wanted));
}

static PyMethodDef methods[] = {
    {"draw_rows", draw_rows, METH_VARARGS, "Truncate and Gumbel-max draw each row of float32 logits."},
    {"top_p_threshold", top_p_threshold_of, METH_VARARGS, "The top-p threshold of one row's candidates."},
    {"use_simd", use_simd, METH_VARARGS, "Draw the noise levels with AVX2 when wanted and available."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_draw", NULL, -1, methods};

PyMODINIT_FUNC PyInit__draw(void) {
    draw_tables_init();
    return PyModule_Create(&module);
}

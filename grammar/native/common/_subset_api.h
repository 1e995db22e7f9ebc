/* What `_subset.c` offers other native loops: building one DFA row in place, from C.
 *
 * `fill(core, state, rows, num_classes, expanded, accepting, height)` computes the row of DFA
 * state `state` (state < height, the number of rows the caller's arrays hold, each of
 * `num_classes` entries, which must be the core's) into `rows + state * num_classes`,
 * sets expanded[state], and sets the accepting flags of the new states it interned below
 * `height` (the caller's Python side records the others when it grows its arrays).  It returns
 * 0, or -1 with a Python exception set.  `num_sets(core)` is how many DFA states exist.
 */
#ifndef FORMWORK_SUBSET_API_H
#define FORMWORK_SUBSET_API_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    PyTypeObject *type;
    int (*fill)(PyObject *core, int64_t state, int32_t *rows, int64_t num_classes, uint8_t *expanded,
                uint8_t *accepting, int64_t height);
    int64_t (*num_sets)(PyObject *core);
} SubsetApi;

#define SUBSET_API_NAME "formwork.grammar._subset._api"

/* The API, or NULL with an exception set.  (Not PyCapsule_Import: it reaches the module through
 * package attributes, which are not set yet while `formwork.grammar` is being imported.) */
static inline const SubsetApi *subset_api_import(void) {
    PyObject *module = PyImport_ImportModule("formwork.grammar._subset");
    if (!module) return NULL;
    PyObject *capsule = PyObject_GetAttrString(module, "_api");
    Py_DECREF(module);
    if (!capsule) return NULL;
    const SubsetApi *api = (const SubsetApi *)PyCapsule_GetPointer(capsule, SUBSET_API_NAME);
    Py_DECREF(capsule);
    return api;
}

/* The `core` argument of a native loop: NULL for None, else a SubsetCore whose automaton arrays
 * (`arrays`, as the loop got them) are writable, since it builds rows into them.  Returns 0, or
 * -1 with an exception set (`loop` names the caller in the message). */
static inline int subset_core_arg(const SubsetApi *api, PyObject **core, Py_buffer *const *arrays,
                                  int count, const char *loop) {
    if (*core == Py_None) {
        *core = NULL;
        return 0;
    }
    if (!PyObject_TypeCheck(*core, api->type)) {
        PyErr_Format(PyExc_TypeError, "%s: core must be a SubsetCore or None", loop);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        if (arrays[i]->readonly) {
            PyErr_Format(PyExc_ValueError, "%s: a lazy DFA's arrays must be writable", loop);
            return -1;
        }
    }
    return 0;
}

#endif

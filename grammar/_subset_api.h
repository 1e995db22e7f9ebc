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

#endif

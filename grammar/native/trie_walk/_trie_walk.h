/* Internal header of the native trie walks (module `formwork.grammar._trie_walk`), shared by
 *   _trie_walk.c        the module: a walk's arguments parsed into a `Walk`, `walk`, `follow`, its init
 *   _trie_walk_loops.c  the hot loops: from seed (node, state) pairs over the trie in preorder
 *   _trie_walk_exits.c  exits: child ranges ordered by depth, and the nodes they hold
 * (`layout` and `exit_bytes`, which build and read the trie's layout, are in _trie_layout.c.)
 * It holds the walk's struct (with `now()` from _clock.h for its deadline) and the
 * prototypes of the shared functions.
 */
#ifndef FORMWORK_TRIE_WALK_H
#define FORMWORK_TRIE_WALK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_clock.h"
#include "_subset_api.h"
#include "_trie_layout.h"
#include "_vec.h"

#define NBUF 9

/* A walk's arrays and state (see `parse_walk`, in _trie_walk.c), shared by `walk`, `follow` and
 * the loops. */
typedef struct {
    Py_buffer b[NBUF];
    int32_t *rows;
    const int32_t *class_of_byte, *end_ptr, *end_tokens;
    const int32_t *pre_next, *pre_token, *node_of_pre, *pre_of_node, *pre_child_lo, *pre_child_hi;
    const uint32_t *pre_code;
    uint8_t *expanded, *accepting;
    const uint8_t *byte, *keep; /* keep: the bytes exits may spell (32-byte bitmap), or NULL for all */
    uint32_t *words;
    int64_t num_states, num_classes, root, num_words, num_end, fills;
    PyObject *core;
    int building, want_exits;
    double seconds, deadline;
} Walk;

/* The subset core's C API (set by the module's init, in _trie_walk.c). */
extern const SubsetApi *trie_subset_api;

/* ------------------------------------------------------------------ _trie_walk_loops.c */

int trie_run_walk(Walk *w, const int64_t *seeds, int64_t num_seeds, Vec *blocked, Vec *exits);

/* ------------------------------------------------------------------ _trie_walk_exits.c */

int trie_ranges_by_depth(Vec *triples, Vec *pairs);
PyObject *trie_range_nodes(Vec *ranges, const uint8_t *byte, int64_t root, const uint8_t *keep);

#endif

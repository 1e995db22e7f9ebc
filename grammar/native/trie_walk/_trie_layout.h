/* The layout of a trie for the native walks (_trie_walk.c): one buffer of int32 words holding
 * every array a walk reads, built once per trie by `layout` (_trie_layout.c). */
#ifndef FORMWORK_TRIE_LAYOUT_H
#define FORMWORK_TRIE_LAYOUT_H

#include <Python.h>

#define MAX_DEPTH 0xFFFF /* the longest token, in bytes, a trie may hold */
#define MULTI (-2)       /* preorder token of a node where several tokens end (see end_ptr) */
#define MAGIC 0x54524945 /* "TRIE" */

/* The header of a layout buffer (int32 words): then the offsets, in words, of each array. */
enum {
    L_MAGIC, L_ROOT, L_NUM_END,
    L_BYTE,         /* level order, uint8 [root]: the byte a node spells */
    L_END_PTR,      /* level order [root + 1], with L_END_TOKENS [num_end]: the tokens ending at a node (CSR) */
    L_END_TOKENS,
    L_NEXT,         /* preorder [root + 1], the root first: where the node's subtree ends */
    L_CODE,         /* preorder: depth << 8 | byte (the root: 0) */
    L_TOKEN,        /* preorder: the token ending at the node, -1 for none, MULTI for several */
    L_NODE_OF_PRE,  /* preorder -> level order */
    L_PRE_OF_NODE,  /* level order -> preorder */
    L_CHILD_LO,     /* preorder: the node's children, a level-order range */
    L_CHILD_HI,
    L_HEADER,
};

extern const char layout_doc[], exit_bytes_doc[];
PyObject *trie_layout(PyObject *self, PyObject *args);
PyObject *trie_exit_bytes(PyObject *self, PyObject *args);

#endif

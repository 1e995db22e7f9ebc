/* The trie layout of the native walks (see _trie_layout.h and `layout`'s docstring): built once
 * per trie from its level-order arrays; and the bytes of exit nodes, read through it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_trie_layout.h"

const char layout_doc[] =
"layout(child_lo, child_hi, byte, end_ptr, end_tokens) -> bytes\n\n"
"Every array the walks read, from the five level-order arrays of a trie (TokenTrie.flat_arrays),\n"
"in one buffer of int32 words: a header (magic, root, number of token ends, then the word offset\n"
"of each array), the level-order bytes and token ends, and the trie in preorder, the root first:\n"
"where each node's subtree ends, depth << 8 | byte, the token ending at the node (-1: none, -2:\n"
"several), the maps between preorder positions and level-order numbers, and each node's\n"
"level-order child range.";

/* `layout` (see its docstring): the header and level-order arrays copied, then a depth-first pass
 * with an explicit stack of level-order nodes for the preorder arrays. */
PyObject *trie_layout(PyObject *self, PyObject *args) {
    Py_buffer b[5] = {{0}};
    PyObject *result = NULL;
    int64_t *path = NULL;
    uint8_t *seen = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4])) return NULL;
    const int32_t *child_lo = b[0].buf, *child_hi = b[1].buf, *end_ptr = b[3].buf, *end_tokens = b[4].buf;
    const uint8_t *byte = b[2].buf;
    const int64_t root = b[0].len / 4 - 1, num_end = b[4].len / 4;
    const char *bad = NULL;
    if (root < 0 || root >= INT32_MAX / 16 || b[1].len != b[0].len || b[2].len != root || b[3].len / 4 < root + 1) {
        bad = "layout: inconsistent array sizes";
        goto done;
    }
    int32_t header[L_HEADER] = {[L_MAGIC] = MAGIC, [L_ROOT] = (int32_t)root, [L_NUM_END] = (int32_t)num_end};
    int64_t total = L_HEADER;
    for (int i = L_BYTE; i < L_HEADER; i++) {
        header[i] = (int32_t)total;
        total += i == L_BYTE ? (root + 3) / 4 : i == L_END_TOKENS ? num_end : root + 1;
    }
    result = PyBytes_FromStringAndSize(NULL, total * 4);
    if (!result) goto done;
    int32_t *l = (int32_t *)PyBytes_AS_STRING(result);
    memset(l, 0, total * 4);
    memcpy(l, header, sizeof(header));
    memcpy(l + l[L_BYTE], byte, root);
    memcpy(l + l[L_END_PTR], end_ptr, (root + 1) * 4);
    memcpy(l + l[L_END_TOKENS], end_tokens, num_end * 4);
    int32_t *next = l + l[L_NEXT], *token = l + l[L_TOKEN], *node_of_pre = l + l[L_NODE_OF_PRE];
    int32_t *pre_of_node = l + l[L_PRE_OF_NODE], *pre_child_lo = l + l[L_CHILD_LO], *pre_child_hi = l + l[L_CHILD_HI];
    uint32_t *code = (uint32_t *)(l + l[L_CODE]);
    path = malloc(sizeof(int64_t) * 2 * (MAX_DEPTH + 2)); /* (node, next child) per depth */
    seen = calloc((size_t)root + 1, 1);
    if (!path || !seen) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t count = 1, depth = 0;
    path[0] = root;
    path[1] = child_lo[root];
    node_of_pre[0] = (int32_t)root, pre_of_node[root] = 0, code[0] = 0, token[0] = -1, seen[root] = 1;
    pre_child_lo[0] = child_lo[root], pre_child_hi[0] = child_hi[root];
    while (depth >= 0) {
        int64_t node = path[2 * depth], c = path[2 * depth + 1];
        if (c < 0 || child_hi[node] > root || c > child_hi[node]) {
            bad = "layout: child range out of range";
            goto done;
        }
        if (c == child_hi[node]) { /* the subtree is done */
            next[pre_of_node[node]] = (int32_t)count;
            depth--;
            continue;
        }
        path[2 * depth + 1] = c + 1;
        if (seen[c] || depth + 1 > MAX_DEPTH) {
            bad = seen[c] ? "layout: not a tree" : "layout: a token longer than the walk allows";
            goto done;
        }
        seen[c] = 1;
        int64_t k = end_ptr[c], n = end_ptr[c + 1] - k;
        node_of_pre[count] = (int32_t)c, pre_of_node[c] = (int32_t)count;
        pre_child_lo[count] = child_lo[c], pre_child_hi[count] = child_hi[c];
        code[count] = (uint32_t)(depth + 1) << 8 | byte[c];
        token[count] = n <= 0 ? -1 : n > 1 ? MULTI : k < num_end && end_tokens[k] >= 0 ? end_tokens[k] : MULTI;
        count++;
        depth++;
        path[2 * depth] = c;
        path[2 * depth + 1] = child_lo[c];
    }
    if (count != root + 1) bad = "layout: nodes not reached from the root";
done:
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        Py_CLEAR(result);
    }
    for (int i = 0; i < 5; i++) PyBuffer_Release(&b[i]);
    free(path);
    free(seen);
    return result;
}

const char exit_bytes_doc[] =
"exit_bytes(layout, nodes) -> (bytes, first)\n\n"
"The byte each level-order node of `nodes` (int64) spells, as uint8 bytes, and the set of those\n"
"bytes as a 32-byte little-endian bitmap (bit b: byte b occurs).";

PyObject *trie_exit_bytes(PyObject *self, PyObject *args) {
    Py_buffer lb = {0}, nb = {0};
    if (!PyArg_ParseTuple(args, "y*y*", &lb, &nb)) return NULL;
    PyObject *result = NULL, *spelled = NULL, *first = NULL;
    const int32_t *l = lb.buf;
    const int64_t *nodes = nb.buf, count = nb.len / 8;
    if (lb.len % 4 || lb.len / 4 < L_HEADER || l[L_MAGIC] != MAGIC || l[L_ROOT] < 0 || l[L_BYTE] < L_HEADER ||
        l[L_BYTE] + (l[L_ROOT] + 3) / 4 > lb.len / 4 || nb.len % 8) {
        PyErr_SetString(PyExc_ValueError, "exit_bytes: not a trie layout or nodes");
        goto done;
    }
    const uint8_t *byte = (const uint8_t *)(l + l[L_BYTE]);
    uint8_t bitmap[32] = {0};
    spelled = PyBytes_FromStringAndSize(NULL, count);
    if (!spelled) goto done;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(spelled);
    for (int64_t i = 0; i < count; i++) {
        if (nodes[i] < 0 || nodes[i] >= l[L_ROOT]) {
            PyErr_SetString(PyExc_ValueError, "exit_bytes: node out of range");
            goto done;
        }
        out[i] = byte[nodes[i]];
        bitmap[out[i] >> 3] |= (uint8_t)(1u << (out[i] & 7));
    }
    first = PyBytes_FromStringAndSize((const char *)bitmap, 32);
    if (first) result = PyTuple_Pack(2, spelled, first);
done:
    Py_XDECREF(spelled);
    Py_XDECREF(first);
    PyBuffer_Release(&lb);
    PyBuffer_Release(&nb);
    return result;
}

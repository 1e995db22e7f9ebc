/* A growable array of int64 for the native grammar loops (_trie_walk.c, _slice_cover.c). */
#ifndef FORMWORK_VEC_H
#define FORMWORK_VEC_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} Vec;

/* Room for `more` items: 0, or -1 when out of memory. */
static inline int vec_reserve(Vec *v, Py_ssize_t more) {
    if (v->len + more <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? 2 * v->cap : 256;
    while (cap < v->len + more) cap *= 2;
    int64_t *grown = realloc(v->data, (size_t)cap * sizeof(int64_t));
    if (!grown) return -1;
    v->data = grown;
    v->cap = cap;
    return 0;
}

static inline int vec_push(Vec *v, int64_t a) {
    if (vec_reserve(v, 1)) return -1;
    v->data[v->len++] = a;
    return 0;
}

static inline int vec_push2(Vec *v, int64_t a, int64_t b) {
    if (vec_reserve(v, 2)) return -1;
    v->data[v->len++] = a;
    v->data[v->len++] = b;
    return 0;
}

/* The items as a bytes object of native int64 (for numpy.frombuffer). */
static inline PyObject *vec_bytes(const Vec *v) {
    return PyBytes_FromStringAndSize((const char *)v->data, v->len * (Py_ssize_t)sizeof(int64_t));
}

#endif

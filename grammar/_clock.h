/* Monotonic seconds, for the deadlines of the native loops (`_trie_walk`, `_product`). */
#ifndef FORMWORK_CLOCK_H
#define FORMWORK_CLOCK_H

#include <time.h>

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif

/* Seconds for the deadlines of the native loops: `now()` is monotonic wall time (the mask
 * steps' budget, `_trie_walk`, bounds how long a step holds the batch); `cpu_now()` is the
 * calling thread's CPU time (the compile budget, `_product` and `_minimize`, counts the compile's
 * own work, so a thread starved of the GIL is not failed for time it never ran; see `budget.py`). */
#ifndef FORMWORK_CLOCK_H
#define FORMWORK_CLOCK_H

#include <time.h>

static inline double clock_seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static inline double cpu_now(void) { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

#endif

/* The top-p threshold of one row's candidates (see top_p.c). */
#ifndef FORMWORK_TOP_P_H
#define FORMWORK_TOP_P_H

#include <stddef.h>
#include <stdint.h>

#define TOP_P_MAX_BUCKETS 4096

/* Scratch space for rows of up to `vocab` candidates. */
typedef struct {
    float *xs, *es;
    uint16_t *bucket_of;
    double mass[TOP_P_MAX_BUCKETS];
    int32_t count[TOP_P_MAX_BUCKETS];
} TopPScratch;

/* The logit of the first candidate, in descending order of logits, at which the running mass reaches
 * `target`, or -INFINITY where it never does. The candidates are tokens ids[0..n) with logits x[id] and
 * relative probabilities e[id]. Returns NAN when out of memory. */
float top_p_threshold(const float *x, const float *e, const int32_t *ids, ptrdiff_t n, float target,
                      TopPScratch *scratch);

/* The same by sorting every candidate (the definition); NAN when out of memory. */
float top_p_threshold_sorted(const float *x, const float *e, const int32_t *ids, ptrdiff_t n, float target);

#endif

/* Top-p threshold by bucketing, equal to the sort-based definition.
 *
 * Definition (the torch reference's, and what `top_p_threshold_sorted` computes): sort the candidates by
 * logit x, descending; the mass after position i is the sum of their relative probabilities e up to i,
 * accumulated in double and rounded to float (torch's CPU cumsum of float32); the threshold is x at the
 * first position whose mass is >= target, or -inf if none is. Equal logits have equal e, so the order
 * among ties never changes the threshold: it is the largest value v whose mass through the last
 * candidate with x == v is >= target (masses never fall).
 *
 * Bucketing: one branch-free pass puts each candidate in one of up to 4096 buckets by x (a monotone map,
 * so equal logits share a bucket and every bucket lies above the next lower one) and sums each bucket's
 * mass; walking the buckets from the top finds the one where the running mass reaches the target, and
 * only that bucket's candidates are sorted. The masses are double sums in another order than the sorted
 * one; both sum the same c floats, so they differ by at most c * 2**-52 of the mass, and a decision is
 * taken only where every double in that interval rounds to the same side of the target. Otherwise (the
 * mass within ~1e-13 of a float rounding boundary) the row is sorted whole. */
#include <math.h>
#include <stdlib.h>

#include "top_p.h"

/* 1 if every double within the ordering error of `mass` (a double sum of `count` floats) rounds to a
 * float >= target, 0 if none does, -1 if undecided. */
static int reaches(double mass, ptrdiff_t count, float target) {
    double slack = mass * (double)(count + 2) * 0x1p-52;
    int low = (float)(mass - slack) >= target, high = (float)(mass + slack) >= target;
    return low == high ? low : -1;
}

typedef struct {
    float x, e;
} Candidate;

static int descending_x(const void *a, const void *b) {
    float xa = ((const Candidate *)a)->x, xb = ((const Candidate *)b)->x;
    return (xa < xb) - (xa > xb);
}

/* Sort xs/es pairs (n of each) by x, descending. */
static int sort_pairs(float *xs, float *es, ptrdiff_t n) {
    Candidate *pairs = malloc((size_t)(n > 0 ? n : 1) * sizeof(Candidate));
    if (!pairs) return -1;
    for (ptrdiff_t i = 0; i < n; i++) pairs[i] = (Candidate){xs[i], es[i]};
    qsort(pairs, (size_t)n, sizeof(Candidate), descending_x);
    for (ptrdiff_t i = 0; i < n; i++) {
        xs[i] = pairs[i].x;
        es[i] = pairs[i].e;
    }
    free(pairs);
    return 0;
}

float top_p_threshold_sorted(const float *x, const float *e, const int32_t *ids, ptrdiff_t n, float target) {
    Candidate *sorted = malloc((size_t)(n > 0 ? n : 1) * sizeof(Candidate));
    if (!sorted) return NAN;
    for (ptrdiff_t i = 0; i < n; i++) sorted[i] = (Candidate){x[ids[i]], e[ids[i]]};
    qsort(sorted, (size_t)n, sizeof(Candidate), descending_x);
    double mass = 0.0;
    float threshold = -INFINITY;
    for (ptrdiff_t i = 0; i < n; i++) {
        mass += sorted[i].e;
        if ((float)mass >= target) {
            threshold = sorted[i].x;
            break;
        }
    }
    free(sorted);
    return threshold;
}

/* The bucket count for n candidates: about 4 candidates a bucket, a power of two in [16, 4096]. */
static int bucket_count(ptrdiff_t n) {
    int buckets = 16;
    while (buckets < TOP_P_MAX_BUCKETS && (ptrdiff_t)buckets * 4 < n) buckets *= 2;
    return buckets;
}

float top_p_threshold(const float *x, const float *e, const int32_t *ids, ptrdiff_t n, float target,
                      TopPScratch *scratch) {
    float *xs = scratch->xs, *es = scratch->es, low = INFINITY, high = -INFINITY;
    for (ptrdiff_t k = 0; k < n; k++) {
        xs[k] = x[ids[k]];
        es[k] = e[ids[k]];
        low = xs[k] < low ? xs[k] : low;
        high = xs[k] > high ? xs[k] : high;
    }
    int buckets = bucket_count(n);
    /* monotone in x: equal logits share a bucket, higher logits never fall in a lower bucket (a NaN
     * product, from an infinite scale at x == low, goes to bucket 0) */
    float scale = high > low ? (float)buckets / (high - low) : 0.0f, last = (float)(buckets - 1);
    double *mass = scratch->mass;
    int32_t *count = scratch->count;
    for (int b = 0; b < buckets; b++) {
        mass[b] = 0.0;
        count[b] = 0;
    }
    uint16_t *bucket_of = scratch->bucket_of;
    for (ptrdiff_t k = 0; k < n; k++) {
        float at = (xs[k] - low) * scale;
        at = at > 0.0f ? at : 0.0f;
        uint16_t b = (uint16_t)(at < last ? at : last);
        bucket_of[k] = b;
        mass[b] += es[k];
        count[b]++;
    }
    double above = 0.0;
    ptrdiff_t counted = 0;
    int crossing = buckets - 1;
    for (; crossing >= 0; crossing--) {
        int hit = reaches(above + mass[crossing], counted + count[crossing], target);
        if (hit < 0) return top_p_threshold_sorted(x, e, ids, n, target);
        if (hit) break;
        above += mass[crossing];
        counted += count[crossing];
    }
    if (crossing < 0) return -INFINITY;
    ptrdiff_t m = 0;  /* the crossing bucket's candidates, moved to the front */
    for (ptrdiff_t k = 0; k < n; k++) {
        xs[m] = xs[k];
        es[m] = es[k];
        m += bucket_of[k] == crossing;
    }
    if (sort_pairs(xs, es, m)) return NAN;
    for (ptrdiff_t i = 0; i < m;) {
        float value = xs[i];
        for (; i < m && xs[i] == value; i++, counted++) above += es[i];
        int hit = reaches(above, counted, target);
        if (hit) return hit > 0 ? value : top_p_threshold_sorted(x, e, ids, n, target);
    }
    return top_p_threshold_sorted(x, e, ids, n, target);  /* unreachable: the bucket's mass reached */
}

/* Truncation (top-k floor, top-p, min-p) and the Gumbel-max draw of one row, fused, for the torch
 * reference sampler (kernels/reference/sampling.py states the semantics).
 *
 * Kept tokens: s >= never_wins (tokens below cannot beat the max token), x >= floor (top-k), for top-p
 * e >= least (a mass bound, see sampling.py) and x >= the top-p threshold (top_p.c), for min-p
 * e >= min_p or x == row_max. The token is the argmax over kept j of s_j + G_j, G_j = -log(-log(u_j)),
 * u_j from the Philox word of (seed, j, step), lowest id on ties.
 *
 * The reference's scores are float32 (torch's logs); here they are computed in double, and only where
 * they can matter. G is increasing in u, i.e. in the level q = word >> 9 (u = (2q + 1) / 2**24): a table
 * holds G at both ends of each of 4096 level segments, so every kept token gets a lower and an upper
 * bound of its score without a log. The best lower bound bounds the winning score from below; only the
 * tokens whose upper bound comes within NEAR_TIE of it are scored exactly (two logs each). A float32
 * score is within ~1e-5 of the double one (a few ulps of logs of magnitude < 17, one rounding of the
 * sum), so when a single token scores within NEAR_TIE of the best it is also the float32 argmax;
 * otherwise the row's near ties go back to the caller. */
#include <math.h>
#include <stdlib.h>

#include "draw_rows.h"
#include "philox.h"
#include "top_p.h"

#define NEAR_TIE 1e-3
#define TOP_P_PRUNE_MIN_GAP 1e-3
#define SEGMENT_BITS 11                 /* levels per table segment: 2**11 */
#define SEGMENTS (1 << (23 - SEGMENT_BITS))
#define TABLE_SLACK 1e-9                /* covers a non-monotone last bit of libm's log */

static double segment_low[SEGMENTS], segment_high[SEGMENTS];  /* G at each segment's ends, widened */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif
static int use_avx2;  /* the noise levels eight at a time (set by draw_use_simd) */

int draw_use_simd(int wanted) {
    int previous = use_avx2;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    use_avx2 = wanted && __builtin_cpu_supports("avx2");
#else
    (void)wanted;
#endif
    return previous;
}

DrawScratch *draw_scratch_new(ptrdiff_t vocab) {
    size_t n = (size_t)(vocab > 0 ? vocab : 1);
    DrawScratch *scratch = calloc(1, sizeof(DrawScratch));
    if (!scratch) return NULL;
    scratch->ids = malloc(n * sizeof(int32_t));
    scratch->near = malloc(n * sizeof(int32_t));
    scratch->levels = malloc(n * sizeof(uint32_t));
    scratch->scores = malloc(n * sizeof(double));
    scratch->top_p.xs = malloc(n * sizeof(float));
    scratch->top_p.es = malloc(n * sizeof(float));
    scratch->top_p.bucket_of = malloc(n * sizeof(uint16_t));
    if (scratch->ids && scratch->near && scratch->levels && scratch->scores && scratch->top_p.xs &&
        scratch->top_p.es && scratch->top_p.bucket_of)
        return scratch;
    draw_scratch_free(scratch);
    return NULL;
}

void draw_scratch_free(DrawScratch *scratch) {
    if (!scratch) return;
    free(scratch->ids);
    free(scratch->near);
    free(scratch->levels);
    free(scratch->scores);
    free(scratch->top_p.xs);
    free(scratch->top_p.es);
    free(scratch->top_p.bucket_of);
    free(scratch);
}

/* The Gumbel noise of level q (u = (2q + 1) / 2**24, exact in double). */
static double gumbel(uint32_t level) {
    double u = (2.0 * level + 1.0) * 0x1p-24;
    return -log(-log(u));
}

void draw_tables_init(void) {
    draw_use_simd(1);
    for (uint32_t i = 0; i < SEGMENTS; i++) {
        segment_low[i] = gumbel(i << SEGMENT_BITS) - TABLE_SLACK;
        segment_high[i] = gumbel(((i + 1) << SEGMENT_BITS) - 1) + TABLE_SLACK;
    }
}

static float scaled(const DrawRow *row, int32_t j) {
    return (row->x[j] - row->row_max) * row->inv_temperature;
}

/* The kept tokens of the row into scratch->ids (ascending); their count, or -1 when out of memory.
 * The loops write every token and advance only past kept ones (no branch on the data). */
static ptrdiff_t kept_tokens(const DrawRow *row, DrawScratch *scratch) {
    const float *x = row->x, *e = row->e;
    int32_t *ids = scratch->ids;
    int top_p = row->top_p < 1.0f, min_p = row->min_p > 0.0f;
    float least = -INFINITY;
    if (top_p) {
        double gap = 1.0 - (double)row->top_p;
        if (gap >= TOP_P_PRUNE_MIN_GAP) least = (float)(gap * (double)row->total / (double)(2 * row->vocab));
    }
    ptrdiff_t count = 0;
    if (top_p) {
        for (ptrdiff_t j = 0; j < row->vocab; j++) {
            ids[count] = (int32_t)j;
            count += (scaled(row, (int32_t)j) >= row->never_wins) & (x[j] >= row->floor) & (e[j] >= least);
        }
    } else {
        for (ptrdiff_t j = 0; j < row->vocab; j++) {
            ids[count] = (int32_t)j;
            count += (scaled(row, (int32_t)j) >= row->never_wins) & (x[j] >= row->floor);
        }
    }
    float threshold = -INFINITY;
    if (top_p) {
        threshold = top_p_threshold(x, e, ids, count, row->top_p * row->total, &scratch->top_p);
        if (isnan(threshold)) return -1;
    }
    if (!top_p && !min_p) return count;
    float min_e = min_p ? row->min_p : -INFINITY;
    ptrdiff_t kept = 0;
    for (ptrdiff_t k = 0; k < count; k++) {
        int32_t j = ids[k];
        ids[kept] = j;
        kept += (x[j] >= threshold) & ((e ? e[j] >= min_e : 1) | (x[j] == row->row_max));
    }
    return kept;
}

/* The noise level (the top 23 bits of the Philox word) of each kept token: a loop of its own, which the
 * compiler vectorizes (~1.7x the scalar rounds with SSE2's pmuludq). */
static void noise_levels_scalar(uint64_t seed, uint32_t step, const int32_t *restrict ids,
                                uint32_t *restrict levels, ptrdiff_t count) {
    for (ptrdiff_t k = 0; k < count; k++) levels[k] = philox_word(seed, (uint32_t)ids[k], step) >> 9;
}

#ifdef HAVE_AVX2_PATH

/* 32-bit lanes of the high and low halves of the products of each lane of c with the multiplier m (whose
 * every lane holds it): vpmuludq multiplies the even lanes, and the odd lanes shifted down. */
__attribute__((target("avx2"))) static inline void mul_hi_lo(__m256i c, __m256i m, __m256i *hi, __m256i *lo) {
    __m256i even = _mm256_mul_epu32(c, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* `noise_levels_scalar` eight tokens at a time: the same Philox rounds on 32-bit lanes (~2.7x). */
__attribute__((target("avx2"))) static void noise_levels_avx2(uint64_t seed, uint32_t step, const int32_t *ids,
                                                               uint32_t *levels, ptrdiff_t count) {
    const __m256i round_a = _mm256_set1_epi32((int)PHILOX_ROUND_A), round_b = _mm256_set1_epi32((int)PHILOX_ROUND_B);
    __m256i keys0[PHILOX_ROUNDS], keys1[PHILOX_ROUNDS];
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < PHILOX_ROUNDS; r++, k0 += PHILOX_KEY_A, k1 += PHILOX_KEY_B) {
        keys0[r] = _mm256_set1_epi32((int)k0);
        keys1[r] = _mm256_set1_epi32((int)k1);
    }
    ptrdiff_t k = 0;
    for (; k + 8 <= count; k += 8) {
        __m256i c0 = _mm256_loadu_si256((const __m256i *)(ids + k)), c1 = _mm256_set1_epi32((int)step);
        __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256(), hi_a, lo_a, hi_b, lo_b;
        for (int r = 0; r < PHILOX_ROUNDS; r++) {
            mul_hi_lo(c0, round_a, &hi_a, &lo_a);
            mul_hi_lo(c2, round_b, &hi_b, &lo_b);
            c0 = _mm256_xor_si256(_mm256_xor_si256(hi_b, c1), keys0[r]);
            c2 = _mm256_xor_si256(_mm256_xor_si256(hi_a, c3), keys1[r]);
            c1 = lo_b;
            c3 = lo_a;
        }
        _mm256_storeu_si256((__m256i *)(levels + k), _mm256_srli_epi32(c0, 9));
    }
    noise_levels_scalar(seed, step, ids + k, levels + k, count - k);
}
#endif

static void noise_levels(uint64_t seed, uint32_t step, const int32_t *ids, uint32_t *levels, ptrdiff_t count) {
#ifdef HAVE_AVX2_PATH
    if (use_avx2) {
        noise_levels_avx2(seed, step, ids, levels, count);
        return;
    }
#endif
    noise_levels_scalar(seed, step, ids, levels, count);
}

int64_t draw_row(const DrawRow *row, DrawScratch *scratch) {
    ptrdiff_t count = kept_tokens(row, scratch);
    if (count < 0) return DRAW_NO_MEMORY;
    if (count == 0) return -1;
    const int32_t *ids = scratch->ids;
    uint32_t *levels = scratch->levels;
    noise_levels(row->seed, row->step, ids, levels, count);
    double bound = -INFINITY;  /* the best lower bound of a score */
    for (ptrdiff_t k = 0; k < count; k++) {
        double low = (double)scaled(row, ids[k]) + segment_low[levels[k] >> SEGMENT_BITS];
        bound = low > bound ? low : bound;
    }
    double cutoff = bound - NEAR_TIE;
    double best = -INFINITY;
    ptrdiff_t scored = 0;
    for (ptrdiff_t k = 0; k < count; k++) {
        double s = scaled(row, ids[k]);
        if (s + segment_high[levels[k] >> SEGMENT_BITS] < cutoff) continue;
        double score = s + gumbel(levels[k]);
        scratch->near[scored] = ids[k];
        scratch->scores[scored++] = score;
        best = score > best ? score : best;
    }
    ptrdiff_t near = 0;
    for (ptrdiff_t k = 0; k < scored; k++)
        if (scratch->scores[k] >= best - NEAR_TIE) scratch->near[near++] = scratch->near[k];
    return near == 1 ? scratch->near[0] : -(1 + (int64_t)near);
}

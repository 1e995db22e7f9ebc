/* One row of the fused truncation + Gumbel-max draw (see draw_rows.c). */
#ifndef FORMWORK_DRAW_ROWS_H
#define FORMWORK_DRAW_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "top_p.h"

/* A row's inputs: logits x (vocab of them) and, where top-p or min-p is on, their relative probabilities
 * e = exp(max(s, -87)) of the scaled logits s = (x - row_max) * inv_temperature, computed by torch. */
typedef struct {
    const float *x, *e;
    ptrdiff_t vocab;
    float row_max, inv_temperature, floor, top_p, min_p, total, never_wins;
    uint64_t seed;
    uint32_t step;
} DrawRow;

/* Scratch space for rows of up to `vocab` tokens. */
typedef struct {
    int32_t *ids, *near;
    uint32_t *levels;
    double *scores;
    TopPScratch top_p;
} DrawScratch;

/* Fill the noise bounds table (once, before any draw_row). */
void draw_tables_init(void);

/* Draw the noise levels with AVX2 when `wanted` and the CPU has it (the same words as the scalar rounds);
 * returns whether it was on. On by default. */
int draw_use_simd(int wanted);

/* A scratch for rows of up to `vocab` tokens, or NULL when out of memory. */
DrawScratch *draw_scratch_new(ptrdiff_t vocab);
void draw_scratch_free(DrawScratch *scratch);

/* The drawn token (>= 0); or -(1 + count) when `count` >= 2 kept tokens score within NEAR_TIE of each
 * other, their ids then in scratch->near (ascending), for the caller to settle with float32 noise; or
 * DRAW_NO_MEMORY. */
#define DRAW_NO_MEMORY INT64_MIN
int64_t draw_row(const DrawRow *row, DrawScratch *scratch);

#endif

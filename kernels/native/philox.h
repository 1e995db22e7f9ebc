/* Philox-4x32-10's first output word, the same integer rounds as Triton's `tl.randint(seed, offset)`:
 * key (seed lo, seed hi), counter (lo, hi, 0, 0). Shared by _philox.c (the noise words for the torch
 * reference) and the fused draw in draw_rows.c. */
#ifndef FORMWORK_PHILOX_H
#define FORMWORK_PHILOX_H

#include <stdint.h>

#define PHILOX_KEY_A 0x9E3779B9u
#define PHILOX_KEY_B 0xBB67AE85u
#define PHILOX_ROUND_A 0xD2511F53u
#define PHILOX_ROUND_B 0xCD9E8D57u
#define PHILOX_ROUNDS 10

static inline uint32_t philox_word(uint64_t seed, uint32_t counter_lo, uint32_t counter_hi) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    uint32_t c0 = counter_lo, c1 = counter_hi, c2 = 0, c3 = 0;
    for (int round = 0; round < PHILOX_ROUNDS; round++) {
        uint64_t prod_a = (uint64_t)c0 * PHILOX_ROUND_A, prod_b = (uint64_t)c2 * PHILOX_ROUND_B;
        uint32_t n0 = (uint32_t)(prod_b >> 32) ^ c1 ^ k0, n2 = (uint32_t)(prod_a >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)prod_b;
        c3 = (uint32_t)prod_a;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_KEY_A;
        k1 += PHILOX_KEY_B;
    }
    return c0;
}

#endif

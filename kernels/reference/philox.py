"""Philox-4x32-10 in torch, bit-identical to Triton's `tl.randint(seed, offset)`.

Triton's `randint(seed, offset)` with an int64 `offset` runs Philox with key (seed_lo, seed_hi) and
counter (offset_lo, offset_hi, 0, 0) and returns the first output word. The sampler uses
offset = (step << 32) | token_id, so a row's noise depends only on (seed, step, token id).
All arithmetic here is on int64 tensors holding uint32 values; products of two uint32 values wrap
modulo 2**64 in int64, which keeps the bits Philox needs.
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF
_KEY_A = 0x9E3779B9
_KEY_B = 0xBB67AE85
_ROUND_A = 0xD2511F53
_ROUND_B = 0xCD9E8D57
_ROUNDS = 10


_CHUNK = 1 << 15  # elements per step: keeps the int64 temporaries cache-resident


def philox_randint(seed: torch.Tensor, counter_lo: torch.Tensor, counter_hi: torch.Tensor) -> torch.Tensor:
    """First Philox output word (uint32 as int64) for int64 tensors broadcast together."""
    seed, counter_lo, counter_hi = torch.broadcast_tensors(seed, counter_lo, counter_hi)
    shape = seed.shape
    seed, counter_lo, counter_hi = seed.reshape(-1), counter_lo.reshape(-1), counter_hi.reshape(-1)
    out = torch.empty_like(seed)
    for start in range(0, seed.numel(), _CHUNK):
        chunk = slice(start, start + _CHUNK)
        out[chunk] = _philox_rounds(seed[chunk], counter_lo[chunk], counter_hi[chunk])
    return out.reshape(shape)


def _philox_rounds(seed: torch.Tensor, counter_lo: torch.Tensor, counter_hi: torch.Tensor) -> torch.Tensor:
    """Ten Philox-4x32 rounds on 1-D int64 tensors, in place on preallocated buffers."""
    k0 = seed & _MASK32
    k1 = (seed >> 32) & _MASK32
    c0 = counter_lo & _MASK32
    c1 = counter_hi & _MASK32
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    prod_a = torch.empty_like(c0)
    prod_b = torch.empty_like(c0)
    for _ in range(_ROUNDS):
        torch.mul(c2, _ROUND_B, out=prod_b)
        torch.mul(c0, _ROUND_A, out=prod_a)
        torch.bitwise_right_shift(prod_b, 32, out=c0).bitwise_and_(_MASK32).bitwise_xor_(c1).bitwise_xor_(k0)
        torch.bitwise_right_shift(prod_a, 32, out=c2).bitwise_and_(_MASK32).bitwise_xor_(c3).bitwise_xor_(k1)
        torch.bitwise_and(prod_b, _MASK32, out=c1)
        torch.bitwise_and(prod_a, _MASK32, out=c3)
        k0.add_(_KEY_A).bitwise_and_(_MASK32)
        k1.add_(_KEY_B).bitwise_and_(_MASK32)
    return c0


def uniform_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """Map uint32 words to float32 in the open interval (0, 1): (2 * (bits >> 9) + 1) / 2**24.

    The odd numerator is < 2**24, so u is exact in float32 and lies in [2**-24, 1 - 2**-24]: log(u) and
    log(1 - u) stay finite, and the Gumbel noise is bounded by GUMBEL_MIN <= g <= GUMBEL_MAX.
    """
    return ((bits >> 9) * 2 + 1).to(torch.float32) * (1.0 / 16777216.0)


# Bounds of -log(-log(u)) over the uniforms above (u = 2**-24 and u = 1 - 2**-24).
GUMBEL_MIN = -2.8116
GUMBEL_MAX = 16.6356


def gumbel_noise(seeds: torch.Tensor, steps: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise -log(-log(u)) keyed by (seed, step, token id), float32."""
    u = uniform_from_bits(philox_randint(seeds, token_ids, steps))
    return -torch.log(-torch.log(u))

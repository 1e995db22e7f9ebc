"""Philox-4x32-10, bit-identical to Triton's `tl.randint(seed, offset)`, and the sampler's Gumbel noise.

Triton's `randint(seed, offset)` with an int64 `offset` runs Philox with key (seed_lo, seed_hi) and
counter (offset_lo, offset_hi, 0, 0) and returns the first output word. The sampler uses
offset = (step << 32) | token_id, so a row's noise depends only on (seed, step, token id).

The rounds run in numpy on uint64 values below 2**32: the product of two such values fits in uint64, so
its high and low words are a plain shift and mask. Operands broadcast, so one row's seed and step stay
scalars and only the token-dependent words are arrays (the first round and a half are then mostly
scalar work, since two counter words start at zero).
"""

from __future__ import annotations

import numpy as np
import torch

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
_KEY_A = np.uint64(0x9E3779B9)
_KEY_B = np.uint64(0xBB67AE85)
_ROUND_A = np.uint64(0xD2511F53)
_ROUND_B = np.uint64(0xCD9E8D57)
_ROUNDS = 10

# Bounds of -log(-log(u)) over the uniforms of `uniform_from_bits` (u = 2**-24 and u = 1 - 2**-24).
GUMBEL_MIN = -2.8116
GUMBEL_MAX = 16.6356


def philox_words(seed: np.ndarray, counter_lo: np.ndarray, counter_hi: np.ndarray) -> np.ndarray:
    """First Philox output word (uint64 < 2**32) for uint64 operands broadcast together.

    Only the low 32 bits of the counters and the 64 bits of the seed are used (key = seed lo, seed hi).
    """
    k0, k1 = seed & _MASK32, seed >> _SHIFT
    # Round 1 with c2 = c3 = 0: the products with c2 vanish.
    prod = (counter_lo & _MASK32) * _ROUND_A
    c0, c1, c2, c3 = (counter_hi & _MASK32) ^ k0, np.uint64(0), (prod >> _SHIFT) ^ k1, prod & _MASK32
    for _ in range(_ROUNDS - 1):
        k0, k1 = (k0 + _KEY_A) & _MASK32, (k1 + _KEY_B) & _MASK32
        prod_a, prod_b = c0 * _ROUND_A, c2 * _ROUND_B
        c0, c1 = (prod_b >> _SHIFT) ^ c1 ^ k0, prod_b & _MASK32
        c2, c3 = (prod_a >> _SHIFT) ^ c3 ^ k1, prod_a & _MASK32
    return c0


def philox_randint(seed: torch.Tensor, counter_lo: torch.Tensor, counter_hi: torch.Tensor) -> torch.Tensor:
    """`philox_words` for int64 tensors broadcast together; uint32 values as int64, on seed's device."""
    seed, counter_lo, counter_hi = torch.broadcast_tensors(seed, counter_lo, counter_hi)
    words = philox_words(*(_as_uint64(t) for t in (seed, counter_lo, counter_hi)))
    return torch.from_numpy(np.asarray(words).astype(np.int64)).reshape(seed.shape).to(seed.device)


def _as_uint64(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.int64, copy=False).view(np.uint64)


def uniform_from_bits(bits: np.ndarray) -> torch.Tensor:
    """Map uint32 words to float32 in the open interval (0, 1): (2 * (bits >> 9) + 1) / 2**24.

    The odd numerator is < 2**24, so u is exact in float32 and lies in [2**-24, 1 - 2**-24]: log(u) and
    log(1 - u) stay finite, and the Gumbel noise is bounded by GUMBEL_MIN <= g <= GUMBEL_MAX.
    """
    numerator = ((bits >> np.uint64(9)) * np.uint64(2) + np.uint64(1)).astype(np.float32)
    return torch.from_numpy(numerator * np.float32(1.0 / 16777216.0))


def gumbel_noise(seeds: torch.Tensor, steps: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise -log(-log(u)) keyed by (seed, step, token id), elementwise over three int64
    tensors of one shape; float32 on token_ids' device."""
    words = philox_words(*(_as_uint64(t) for t in (seeds, token_ids, steps)))
    u = uniform_from_bits(np.atleast_1d(words))
    return u.log_().neg_().log_().neg_().to(token_ids.device)

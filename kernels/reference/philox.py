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


def philox_randint(seed: torch.Tensor, counter_lo: torch.Tensor, counter_hi: torch.Tensor) -> torch.Tensor:
    """First Philox output word (uint32 as int64) for int64 tensors broadcast together."""
    k0 = seed & _MASK32
    k1 = (seed >> 32) & _MASK32
    c0 = counter_lo & _MASK32
    c1 = counter_hi & _MASK32
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    for _ in range(_ROUNDS):
        prod_b = c2 * _ROUND_B
        prod_a = c0 * _ROUND_A
        c0 = ((prod_b >> 32) & _MASK32) ^ c1 ^ k0
        c2 = ((prod_a >> 32) & _MASK32) ^ c3 ^ k1
        c1 = prod_b & _MASK32
        c3 = prod_a & _MASK32
        k0 = (k0 + _KEY_A) & _MASK32
        k1 = (k1 + _KEY_B) & _MASK32
    return c0


def uniform_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """Map uint32 words to float32 in the open interval (0, 1): ((bits >> 8) + 0.5) / 2**24, exact."""
    return ((bits >> 8).to(torch.float32) + 0.5) * (1.0 / 16777216.0)


def gumbel_noise(seeds: torch.Tensor, steps: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise -log(-log(u)) keyed by (seed, step, token id), float32."""
    u = uniform_from_bits(philox_randint(seeds, token_ids, steps))
    return -torch.log(-torch.log(u))

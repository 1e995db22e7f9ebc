"""Philox-4x32-10, bit-identical to Triton's `tl.randint(seed, offset)`, and the sampler's Gumbel noise.

Triton's `randint(seed, offset)` with an int64 `offset` runs Philox with key (seed_lo, seed_hi) and
counter (offset_lo, offset_hi, 0, 0) and returns the first output word. The sampler uses
offset = (step << 32) | token_id, so a row's noise depends only on (seed, step, token id).

The rounds run in C (`kernels/native/philox.h`): here through `_philox.c`, one loop over the (seed,
counter) pairs (~126 numpy passes over them took ~1 ms for 10k pairs); the reference sampler's fused draw
(`draw_rows.c`) runs the same rounds and comes back to `gumbel_noise` only to settle near ties.
"""

from __future__ import annotations

import numpy as np
import torch

from formwork.kernels._philox import words as philox_c_words

# Bounds of -log(-log(u)) over the uniforms of `uniform_from_bits` (u = 2**-24 and u = 1 - 2**-24).
GUMBEL_MIN = -2.8116
GUMBEL_MAX = 16.6356


def philox_words(seed: np.ndarray, counter_lo: np.ndarray, counter_hi: np.ndarray) -> np.ndarray:
    """First Philox output word (uint64 < 2**32) for uint64 operands broadcast together.

    Only the low 32 bits of the counters and the 64 bits of the seed are used (key = seed lo, seed hi).
    """
    operands = [np.ascontiguousarray(a, dtype=np.uint64).reshape(-1)
                for a in np.broadcast_arrays(seed, counter_lo, counter_hi)]
    shape = np.broadcast_shapes(np.shape(seed), np.shape(counter_lo), np.shape(counter_hi))
    out = np.empty(operands[0].shape, dtype=np.uint64)
    philox_c_words(*operands, out)
    return out.reshape(shape)


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

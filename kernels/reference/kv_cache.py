"""Torch reference: scatter new keys/values into the paged KV pool by slot mapping."""

from __future__ import annotations

import torch


def write_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write token t's key/value to slot `slot_mapping[t]` (block = slot // block_size); -1 is skipped.

    A contiguous pool is written with one `index_copy_` per cache over its [slots, kv_heads, head_dim] view.
    """
    valid = slot_mapping >= 0
    if not bool(valid.all()):
        slot_mapping, key, value = slot_mapping[valid], key[valid], value[valid]
    slots = slot_mapping.long()
    for cache, new in ((k_cache, key), (v_cache, value)):
        if cache.is_contiguous():
            cache.view(-1, cache.shape[2], cache.shape[3]).index_copy_(0, slots, new.to(cache.dtype))
        else:
            block_size = cache.shape[1]
            cache[slots // block_size, slots % block_size] = new.to(cache.dtype)

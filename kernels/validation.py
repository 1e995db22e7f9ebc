"""Shape/dtype/device checks shared by both backends (no host-device syncs).

Every kernel call runs these, so an error's message is only formatted when a check fails."""

from __future__ import annotations

import torch
from torch import Tensor

from formwork.kernels.errors import KernelInputError
from formwork.kernels.sampling_tensors import SamplingTensors

_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_INDEX_DTYPES = (torch.int32, torch.int64)


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _same_device(**tensors: Tensor) -> None:
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) != 1:
        raise KernelInputError(f"tensors must share one device, got {devices}")


def _check_cache_pair(k_cache: Tensor, v_cache: Tensor) -> None:
    if k_cache.dim() != 4:
        raise KernelInputError(f"k_cache must be [blocks, block_size, kv_heads, head_dim], got {_shape(k_cache)}")
    if v_cache.shape != k_cache.shape:
        raise KernelInputError(f"v_cache {_shape(v_cache)} != k_cache {_shape(k_cache)}")


def check_kv_write_inputs(key: Tensor, value: Tensor, k_cache: Tensor, v_cache: Tensor,
                          slot_mapping: Tensor) -> None:
    if key.dim() != 3:
        raise KernelInputError(f"key must be [tokens, kv_heads, head_dim], got {_shape(key)}")
    if value.shape != key.shape:
        raise KernelInputError(f"value {_shape(value)} != key {_shape(key)}")
    _check_cache_pair(k_cache, v_cache)
    if key.shape[1:] != k_cache.shape[2:]:
        raise KernelInputError(f"key heads/dim {_shape(key)[1:]} != cache heads/dim {_shape(k_cache)[2:]}")
    if slot_mapping.shape != (key.shape[0],):
        raise KernelInputError(f"slot_mapping must be [{key.shape[0]}], got {_shape(slot_mapping)}")
    if slot_mapping.dtype not in _INDEX_DTYPES:
        raise KernelInputError(f"slot_mapping must be int32/int64, got {slot_mapping.dtype}")
    _same_device(key=key, value=value, k_cache=k_cache, v_cache=v_cache, slot_mapping=slot_mapping)


def check_attention_inputs(query: Tensor, k_cache: Tensor, v_cache: Tensor, block_tables: Tensor,
                           seq_lens: Tensor, query_start_loc: Tensor, sliding_window: int | None) -> None:
    if query.dim() != 3:
        raise KernelInputError(f"query must be [tokens, heads, head_dim], got {_shape(query)}")
    if query.dtype not in _FLOAT_DTYPES:
        raise KernelInputError(f"query dtype {query.dtype} not in {_FLOAT_DTYPES}")
    _check_cache_pair(k_cache, v_cache)
    if k_cache.shape[3] != query.shape[2]:
        raise KernelInputError(f"query head_dim {query.shape[2]} != cache head_dim {k_cache.shape[3]}")
    num_heads, num_kv_heads = query.shape[1], k_cache.shape[2]
    if num_heads % num_kv_heads != 0:
        raise KernelInputError(f"num_heads {num_heads} not a multiple of num_kv_heads {num_kv_heads}")
    if block_tables.dim() != 2:
        raise KernelInputError(f"block_tables must be [seqs, max_blocks], got {_shape(block_tables)}")
    num_seqs = block_tables.shape[0]
    if seq_lens.shape != (num_seqs,):
        raise KernelInputError(f"seq_lens must be [{num_seqs}], got {_shape(seq_lens)}")
    if query_start_loc.shape != (num_seqs + 1,):
        raise KernelInputError(f"query_start_loc must be [{num_seqs + 1}], got {_shape(query_start_loc)}")
    for name, t in (("block_tables", block_tables), ("seq_lens", seq_lens), ("query_start_loc", query_start_loc)):
        if t.dtype not in _INDEX_DTYPES:
            raise KernelInputError(f"{name} must be int32/int64, got {t.dtype}")
    if not (sliding_window is None or sliding_window > 0):
        raise KernelInputError(f"sliding_window must be None or > 0, got {sliding_window}")
    _same_device(query=query, k_cache=k_cache, v_cache=v_cache, block_tables=block_tables,
                 seq_lens=seq_lens, query_start_loc=query_start_loc)


def check_bitmask_inputs(logits: Tensor, bitmask: Tensor, indices: Tensor | None) -> None:
    if logits.dim() != 2:
        raise KernelInputError(f"logits must be [batch, vocab], got {_shape(logits)}")
    if logits.dtype not in _FLOAT_DTYPES:
        raise KernelInputError(f"logits dtype {logits.dtype} not in {_FLOAT_DTYPES}")
    if not (bitmask.dim() == 2 and bitmask.dtype == torch.int32):
        raise KernelInputError(f"bitmask must be int32 [batch, words], got {bitmask.dtype} {_shape(bitmask)}")
    if bitmask.shape[0] != logits.shape[0]:
        raise KernelInputError(f"bitmask rows {bitmask.shape[0]} != logits rows {logits.shape[0]}")
    _same_device(logits=logits, bitmask=bitmask)
    if indices is not None:
        if not (indices.dim() == 1 and indices.dtype in _INDEX_DTYPES):
            raise KernelInputError(f"indices must be a 1-D int tensor, got {indices.dtype} {_shape(indices)}")
        _same_device(logits=logits, indices=indices)


def check_sample_inputs(logits: Tensor, params: SamplingTensors, bitmask: Tensor | None) -> None:
    if logits.dim() != 2:
        raise KernelInputError(f"logits must be [batch, vocab], got {_shape(logits)}")
    if logits.dtype not in _FLOAT_DTYPES:
        raise KernelInputError(f"logits dtype {logits.dtype} not in {_FLOAT_DTYPES}")
    if not isinstance(params, SamplingTensors):
        raise KernelInputError(f"params must be SamplingTensors, got {type(params)}")
    if params.batch_size != logits.shape[0]:
        raise KernelInputError(f"SamplingTensors has {params.batch_size} rows, logits {logits.shape[0]}")
    if params.temperature.device != logits.device:
        raise KernelInputError(f"SamplingTensors on {params.temperature.device}, logits on {logits.device}")
    if bitmask is not None:
        check_bitmask_inputs(logits, bitmask, None)


def check_rms_norm_inputs(x: Tensor, weight: Tensor, residual: Tensor | None) -> None:
    if x.dim() != 2:
        raise KernelInputError(f"x must be [tokens, hidden], got {_shape(x)}")
    if x.dtype not in _FLOAT_DTYPES:
        raise KernelInputError(f"x dtype {x.dtype} not in {_FLOAT_DTYPES}")
    if weight.shape != (x.shape[1],) or weight.dtype != x.dtype:
        raise KernelInputError(f"weight must be {x.dtype} [{x.shape[1]}], got {weight.dtype} {_shape(weight)}")
    if weight.device != x.device:
        _same_device(x=x, weight=weight)
    if residual is not None:
        if residual.shape != x.shape or residual.dtype != x.dtype:
            raise KernelInputError(f"residual must be {x.dtype} {_shape(x)}, got {residual.dtype} {_shape(residual)}")
        if not residual.is_contiguous():
            raise KernelInputError("residual must be contiguous (it is updated in place)")
        if residual.device != x.device:
            _same_device(x=x, residual=residual)


def check_silu_and_mul_inputs(gate_up: Tensor) -> None:
    if gate_up.dim() != 2 or gate_up.shape[1] % 2:
        raise KernelInputError(f"gate_up must be [tokens, 2 * width], got {_shape(gate_up)}")
    if gate_up.dtype not in _FLOAT_DTYPES:
        raise KernelInputError(f"gate_up dtype {gate_up.dtype} not in {_FLOAT_DTYPES}")


def check_rotary_table_inputs(positions: Tensor, inv_freq: Tensor) -> None:
    if positions.dim() != 1 or positions.dtype not in _INDEX_DTYPES:
        raise KernelInputError(f"positions must be int32/int64 [tokens], got {positions.dtype} {_shape(positions)}")
    if inv_freq.dim() != 1 or inv_freq.dtype != torch.float32:
        raise KernelInputError(f"inv_freq must be float32 [head_dim / 2], got {inv_freq.dtype} {_shape(inv_freq)}")
    if positions.device != inv_freq.device:
        _same_device(positions=positions, inv_freq=inv_freq)


def check_rotary_inputs(query: Tensor, key: Tensor, cos: Tensor, sin: Tensor) -> None:
    if query.dim() != 3 or key.dim() != 3:
        raise KernelInputError(f"query/key must be [tokens, heads, head_dim], got {_shape(query)}, {_shape(key)}")
    num_tokens, _, head_dim = query.shape
    if key.shape[0] != num_tokens or key.shape[2] != head_dim or head_dim % 2:
        raise KernelInputError(f"query {_shape(query)} and key {_shape(key)} need equal tokens and an even head_dim")
    if query.dtype not in _FLOAT_DTYPES or key.dtype != query.dtype:
        raise KernelInputError(f"query/key dtypes {query.dtype}, {key.dtype}: one of {_FLOAT_DTYPES} for both")
    if query.stride(-1) != 1 or key.stride(-1) != 1:
        raise KernelInputError("query/key need a contiguous head_dim (they are rotated in place)")
    table = (num_tokens, 1, head_dim)
    if cos.shape != table or sin.shape != table or cos.dtype != query.dtype or sin.dtype != query.dtype \
            or cos.stride(-1) != 1 or sin.stride() != cos.stride():
        raise KernelInputError(f"cos/sin tables must be {query.dtype} {list(table)} with a contiguous head_dim "
                               f"(`rotary_tables`), got {cos.dtype} {_shape(cos)}, {sin.dtype} {_shape(sin)}")
    if not query.device == key.device == cos.device == sin.device:
        _same_device(query=query, key=key, cos=cos, sin=sin)

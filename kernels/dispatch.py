"""The one dispatch point the engine calls: Triton for CUDA tensors, torch reference otherwise.

Every call records its variant key (`launch`) in `variants.variant_log`, whichever backend runs it.
`FORMWORK_KERNEL_BACKEND=triton|torch` forces a backend. Forcing `triton` on CPU tensors needs
`TRITON_INTERPRET=1` in the environment before triton is first imported; triton modules are only
imported when the Triton backend is actually used.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

import torch

from formwork.kernels import reference
from formwork.kernels.errors import KernelBackendError
from formwork.kernels.launch import (
    attention_key,
    attention_launch,
    bitmask_key,
    kv_write_key,
    rms_norm_key,
    rotary_key,
    sample_key,
    silu_and_mul_key,
)
from formwork.kernels.sampling_tensors import SamplingTensors
from formwork.kernels.validation import (
    check_attention_inputs,
    check_bitmask_inputs,
    check_kv_write_inputs,
    check_rms_norm_inputs,
    check_rotary_inputs,
    check_rotary_table_inputs,
    check_sample_inputs,
    check_silu_and_mul_inputs,
)
from formwork.kernels.variants import variant_log

BACKEND_ENV = "FORMWORK_KERNEL_BACKEND"
BACKENDS = ("triton", "torch")


def select_backend(tensor: torch.Tensor) -> str:
    """'triton' or 'torch' for a call whose main operand is `tensor` (env override first)."""
    forced = os.environ.get(BACKEND_ENV, "").strip().lower()
    if forced:
        if forced not in BACKENDS:
            raise KernelBackendError(f"{BACKEND_ENV}={forced!r}; expected one of {BACKENDS}")
        if forced == "triton":
            _check_triton_usable(tensor)
        return forced
    if tensor.is_cuda and importlib.util.find_spec("triton") is not None:
        return "triton"
    return "torch"


def _check_triton_usable(tensor: torch.Tensor) -> None:
    if importlib.util.find_spec("triton") is None:
        raise KernelBackendError(f"{BACKEND_ENV}=triton but the triton package is not installed")
    if not tensor.is_cuda and os.environ.get("TRITON_INTERPRET") != "1":
        raise KernelBackendError(
            f"{BACKEND_ENV}=triton with {tensor.device} tensors needs TRITON_INTERPRET=1 set before "
            "triton is imported"
        )


def _triton(module: str) -> ModuleType:
    return importlib.import_module(f"formwork.kernels.triton.{module}")


def write_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Scatter key/value [tokens, kv_heads, head_dim] into the paged pool; slot -1 is padding."""
    check_kv_write_inputs(key, value, k_cache, v_cache, slot_mapping)
    variant_log.record(kv_write_key(key, k_cache, slot_mapping))
    if select_backend(k_cache) == "triton":
        _triton("kv_cache").write_kv_cache(key, value, k_cache, v_cache, slot_mapping)
    else:
        reference.write_kv_cache(key, value, k_cache, v_cache, slot_mapping)


def paged_attention(
    query: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    query_start_loc: torch.Tensor,
    scale: float,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """Causal paged attention of each sequence's new tokens; returns [tokens, heads, head_dim]."""
    check_attention_inputs(query, k_cache, v_cache, block_tables, seq_lens, query_start_loc, sliding_window)
    launch = attention_launch(query, k_cache, block_tables)  # once: the variant key and the kernel read it
    variant_log.record(attention_key(query, k_cache, block_tables, sliding_window, launch))
    args = (query, k_cache, v_cache, block_tables, seq_lens, query_start_loc, scale, sliding_window)
    if select_backend(query) == "triton":
        return _triton("attention").paged_attention(*args, launch=launch)
    return reference.paged_attention(*args)


def apply_token_bitmask(
    logits: torch.Tensor, bitmask: torch.Tensor, indices: torch.Tensor | None = None
) -> None:
    """In place: disallowed tokens -> -inf, for all rows or only the rows in `indices`."""
    check_bitmask_inputs(logits, bitmask, indices)
    variant_log.record(bitmask_key(logits, indices is not None))
    if select_backend(logits) == "triton":
        _triton("bitmask").apply_token_bitmask(logits, bitmask, indices)
    else:
        reference.apply_token_bitmask(logits, bitmask, indices)


def sample(
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None, *,
    with_logprobs: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Masked temperature/top-k/top-p/min-p Gumbel-max sampling; returns (token_ids, logprobs), logprobs
    None when `with_logprobs` is False (the torch reference then skips the log-normaliser)."""
    check_sample_inputs(logits, params, bitmask)
    variant_log.record(sample_key(logits, bitmask is not None))
    if select_backend(logits) == "triton":
        # CUDA: the split-row sampler; the interpreter: the streaming kernel, whose programs take many rows
        token_ids, logprobs = _triton("sampling_split" if logits.is_cuda else "sampling").sample(logits, params,
                                                                                                  bitmask)
        return token_ids, logprobs if with_logprobs else None
    return reference.sample(logits, params, bitmask, with_logprobs=with_logprobs)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None
             ) -> torch.Tensor:
    """RMSNorm of ``x`` [tokens, hidden] (float32 statistics, HF Llama's rounding); with ``residual``, of
    ``residual + x``, which is written back into ``residual`` in place (the fused residual add)."""
    check_rms_norm_inputs(x, weight, residual)
    variant_log.record(rms_norm_key(x, weight, residual))
    if select_backend(x) == "triton":
        return _triton("norm").rms_norm(x, weight, eps, residual)
    return reference.rms_norm(x, weight, eps, residual)


def silu_and_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """``silu(gate) * up`` [tokens, width] of the fused projection ``gate_up = [gate | up]``."""
    check_silu_and_mul_inputs(gate_up)
    variant_log.record(silu_and_mul_key(gate_up))
    if select_backend(gate_up) == "triton":
        return _triton("activation").silu_and_mul(gate_up)
    return reference.silu_and_mul(gate_up)


def rotary_tables(positions: torch.Tensor, inv_freq: torch.Tensor, scaling: float, dtype: torch.dtype
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """A step's cos/sin tables [tokens, 1, head_dim]: (cos|sin)(position * inv_freq) * scaling, made by
    torch in float32 and cast to `dtype` (as HF does), once for every layer's `rotary_embedding`."""
    check_rotary_table_inputs(positions, inv_freq)
    return reference.rotary_tables(positions, inv_freq, scaling, dtype)


def rotary_embedding(query: torch.Tensor, key: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """Rotate query [tokens, heads, head_dim] and key [tokens, kv_heads, head_dim] in place (NeoX rotate-half)
    by a step's `rotary_tables`."""
    check_rotary_inputs(query, key, cos, sin)
    variant_log.record(rotary_key(query, key, cos))
    if select_backend(query) == "triton":
        _triton("rotary").rotary_embedding(query, key, cos, sin)
    else:
        reference.rotary_embedding(query, key, cos, sin)

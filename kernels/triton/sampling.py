"""Triton fused sampler: each program takes ROWS rows and, per row, applies the bitmask, temperature,
top-k, top-p and min-p, then draws with Gumbel-max from Philox noise keyed by (seed, step, token id);
greedy when temperature is 0. Semantics and noise bits are those of `reference/sampling.py`.

Top-k and top-p need no sort. Each threshold is found by bisection over the *bit patterns* of float32
logits: flipping the low 31 bits of negative floats gives int keys ordered like the floats, so bisecting
keys between key(lower bound) and key(row max) reaches the exact threshold value in at most 32 passes over
the row. Each pass also records the nearest logits above and below the probe, and the bounds snap to those
data values, so a row usually settles in far fewer passes (top-k also stops as soon as count == k).
  * top-k threshold: the largest t with count(x >= t) >= k (the k-th largest logit; ties are kept);
  * top-p threshold: the largest t >= the top-k threshold with
        sum(e_j : x_j >= t) >= p * sum(e_j : x_j >= top-k threshold),  e_j = exp((x_j - max) / T);
  * min-p keeps e_j >= min_p.
ROWS is 1 on a GPU (one row per program); under the interpreter many rows share a program, which costs
the same per operation, so tests stay fast. On CUDA, `kernels.sample` runs the split-row sampler
(`sampling_split.py`), which streams through `sample_rows` only the rows its candidates cannot cover.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.launch import sample_block
from formwork.kernels.sampling_tensors import SamplingTensors

INTERPRETER_ROWS = 1024


@triton.jit
def _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, offs, vocab_size, num_words,
                   logits_stride, bitmask_stride, HAS_MASK: tl.constexpr):
    """float32 [ROWS, BLOCK] logits of tokens `offs`, -inf where masked or outside rows/vocabulary."""
    ok = row_ok[:, None] & (offs[None, :] < vocab_size)
    x = tl.load(logits_ptr + rows[:, None] * logits_stride + offs[None, :], mask=ok, other=float("-inf"))
    x = x.to(tl.float32)
    if HAS_MASK:
        words = offs // 32
        packed = tl.load(bitmask_ptr + rows[:, None] * bitmask_stride + words[None, :],
                         mask=ok & (words < num_words)[None, :], other=0)
        x = tl.where(((packed >> (offs % 32)[None, :]) & 1) != 0, x, float("-inf"))
    return x


@triton.jit
def float_key(x):
    """Order-preserving int64 key of float32 values."""
    bits = x.to(tl.int32, bitcast=True)
    return (bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(tl.int64)


@triton.jit
def key_float(key):
    """Inverse of `float_key`."""
    bits = key.to(tl.int32)
    bits = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def neg_log_log_uniform(seed, step, token_ids):
    """log(-log(u)) of the uniform u keyed by (seed, step, token id): the Gumbel noise is its negation."""
    bits = tl.randint(seed, (step << 32) | token_ids.to(tl.int64))
    uniform = ((bits >> 9) * 2 + 1).to(tl.float32) * (1.0 / 16777216.0)
    return tl.log(-tl.log(uniform))


@triton.jit
def _top_k_threshold(logits_ptr, bitmask_ptr, rows, row_ok, vocab_size, num_words, logits_stride,
                     bitmask_stride, row_max, top_k, active, HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
    """Per row, the k-th largest masked logit for active rows, -inf for the others."""
    lo = float_key(tl.full(row_max.shape, float("-inf"), tl.float32))
    hi = tl.where(active, float_key(row_max), lo)
    while tl.max(hi - lo, axis=0) > 0:
        moving = lo < hi
        mid = lo + (hi - lo + 1) // 2
        probe = key_float(mid)
        count = tl.zeros(row_max.shape, tl.int32)
        above = tl.full(row_max.shape, float("inf"), tl.float32)
        below = tl.full(row_max.shape, float("-inf"), tl.float32)
        for start in range(0, vocab_size, BLOCK):
            x = _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, start + tl.arange(0, BLOCK),
                               vocab_size, num_words, logits_stride, bitmask_stride, HAS_MASK)
            ge = x >= probe[:, None]
            count += tl.sum(ge.to(tl.int32), axis=1)
            above = tl.minimum(above, tl.min(tl.where(ge, x, float("inf")), axis=1))
            below = tl.maximum(below, tl.max(tl.where(ge, float("-inf"), x), axis=1))
        enough = moving & (count >= top_k)
        short = moving & (count < top_k)
        lo = tl.where(enough, tl.maximum(float_key(above), mid), lo)
        hi = tl.where(short, tl.minimum(float_key(below), mid - 1), hi)
        hi = tl.where(enough & (count == top_k), lo, hi)
    return key_float(lo)


@triton.jit
def _top_p_threshold(logits_ptr, bitmask_ptr, rows, row_ok, vocab_size, num_words, logits_stride,
                     bitmask_stride, row_max, inv_temp, floor, top_p, active,
                     HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
    """Per active row, the largest t >= floor with mass(x >= t) >= top_p * mass(x >= floor)."""
    total = tl.zeros(row_max.shape, tl.float32)
    for start in range(0, vocab_size, BLOCK):
        x = _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, start + tl.arange(0, BLOCK),
                           vocab_size, num_words, logits_stride, bitmask_stride, HAS_MASK)
        e = tl.exp((x - row_max[:, None]) * inv_temp[:, None])
        total += tl.sum(tl.where(x >= floor[:, None], e, 0.0), axis=1)
    target = top_p * total
    lo = float_key(floor)
    hi = tl.where(active, float_key(row_max), lo)
    while tl.max(hi - lo, axis=0) > 0:
        moving = lo < hi
        mid = lo + (hi - lo + 1) // 2
        probe = key_float(mid)
        mass = tl.zeros(row_max.shape, tl.float32)
        above = tl.full(row_max.shape, float("inf"), tl.float32)
        below = tl.full(row_max.shape, float("-inf"), tl.float32)
        for start in range(0, vocab_size, BLOCK):
            x = _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, start + tl.arange(0, BLOCK),
                               vocab_size, num_words, logits_stride, bitmask_stride, HAS_MASK)
            e = tl.exp((x - row_max[:, None]) * inv_temp[:, None])
            ge = x >= probe[:, None]
            mass += tl.sum(tl.where(ge, e, 0.0), axis=1)
            above = tl.minimum(above, tl.min(tl.where(ge, x, float("inf")), axis=1))
            below = tl.maximum(below, tl.max(tl.where(ge, float("-inf"), x), axis=1))
        enough = moving & (mass >= target)
        short = moving & (mass < target)
        lo = tl.where(enough, tl.maximum(float_key(above), mid), lo)
        hi = tl.where(short, tl.minimum(float_key(below), mid - 1), hi)
    return key_float(lo)


@triton.jit
def sample_rows(
    logits_ptr, bitmask_ptr,
    temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
    token_out_ptr, logprob_out_ptr,
    rows, batch, vocab_size, num_words, logits_stride, bitmask_stride,
    HAS_MASK: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Sample the int64 rows `rows` ([ROWS], those >= batch skipped) by streaming each whole row and
    store their tokens and logprobs (the split sampler's fallback calls this with ROWS=1)."""
    row_ok = rows < batch

    # Pass 1: max, first argmax, and the temperature-1 log-sum-exp for logprobs (online).
    row_max = tl.full([ROWS], float("-inf"), tl.float32)
    greedy = tl.full([ROWS], -1, tl.int64)
    sum_exp = tl.zeros([ROWS], tl.float32)
    for start in range(0, vocab_size, BLOCK):
        x = _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, start + tl.arange(0, BLOCK),
                           vocab_size, num_words, logits_stride, bitmask_stride, HAS_MASK)
        block_max = tl.max(x, axis=1)
        block_arg = tl.argmax(x, axis=1).to(tl.int64) + start
        greedy = tl.where(block_max > row_max, block_arg, greedy)
        new_max = tl.maximum(row_max, block_max)
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        sum_exp = sum_exp * tl.exp(row_max - safe_max) + tl.sum(tl.exp(x - safe_max[:, None]), axis=1)
        row_max = new_max
    has_token = row_max > float("-inf")
    log_norm = row_max + tl.log(tl.where(has_token, sum_exp, 1.0))

    temperature = tl.load(temperature_ptr + rows, mask=row_ok, other=0.0)
    sampling = (temperature > 0) & has_token
    token = greedy
    if tl.max(sampling.to(tl.int32), axis=0) > 0:
        inv_temp = 1.0 / tl.where(sampling, temperature, 1.0)
        center = tl.where(sampling, row_max, 0.0)  # row max, finite on rows that are not sampled too
        top_k = tl.load(top_k_ptr + rows, mask=row_ok, other=0)
        top_p = tl.load(top_p_ptr + rows, mask=row_ok, other=1.0)
        min_p = tl.load(min_p_ptr + rows, mask=row_ok, other=0.0)
        seed = tl.load(seed_ptr + rows, mask=row_ok, other=0)
        step = tl.load(step_ptr + rows, mask=row_ok, other=0)
        floor = tl.full([ROWS], float("-inf"), tl.float32)
        k_active = sampling & (top_k > 0) & (top_k < vocab_size)
        if tl.max(k_active.to(tl.int32), axis=0) > 0:
            floor = _top_k_threshold(logits_ptr, bitmask_ptr, rows, row_ok, vocab_size, num_words,
                                     logits_stride, bitmask_stride, center, top_k, k_active, HAS_MASK, BLOCK)
        p_active = sampling & (top_p < 1.0)
        if tl.max(p_active.to(tl.int32), axis=0) > 0:
            floor = _top_p_threshold(logits_ptr, bitmask_ptr, rows, row_ok, vocab_size, num_words,
                                     logits_stride, bitmask_stride, center, inv_temp, floor, top_p,
                                     p_active, HAS_MASK, BLOCK)
        # Final pass: Gumbel-max over the kept tokens.
        best = tl.full([ROWS], float("-inf"), tl.float32)
        drawn = greedy
        for start in range(0, vocab_size, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = _masked_logits(logits_ptr, bitmask_ptr, rows, row_ok, offs,
                               vocab_size, num_words, logits_stride, bitmask_stride, HAS_MASK)
            scaled = (x - center[:, None]) * inv_temp[:, None]
            keep = (x >= floor[:, None]) & (x > float("-inf"))
            keep = keep & ((tl.exp(scaled) >= min_p[:, None]) | (x == center[:, None]))
            score = tl.where(keep, scaled - neg_log_log_uniform(seed[:, None], step[:, None], offs[None, :]),
                             float("-inf"))
            block_best = tl.max(score, axis=1)
            block_arg = tl.argmax(score, axis=1).to(tl.int64) + start
            drawn = tl.where(block_best > best, block_arg, drawn)
            best = tl.maximum(best, block_best)
        token = tl.where(sampling, drawn, greedy)

    chosen = tl.load(logits_ptr + rows * logits_stride + tl.maximum(token, 0), mask=row_ok, other=0.0)
    logprob = tl.where(has_token, chosen.to(tl.float32) - log_norm, float("-inf"))
    tl.store(token_out_ptr + rows, tl.where(has_token, token, -1), mask=row_ok)
    tl.store(logprob_out_ptr + rows, logprob, mask=row_ok)


@triton.jit(do_not_specialize=["batch"])
def _sample_kernel(
    logits_ptr, bitmask_ptr,
    temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
    token_out_ptr, logprob_out_ptr,
    batch, vocab_size, num_words, logits_stride, bitmask_stride,
    HAS_MASK: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    sample_rows(logits_ptr, bitmask_ptr, temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
                token_out_ptr, logprob_out_ptr, rows, batch, vocab_size, num_words, logits_stride, bitmask_stride,
                HAS_MASK, ROWS, BLOCK)


def sample_outputs(logits: torch.Tensor, bitmask: torch.Tensor | None
                   ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """A sampler's inputs with unit stride along the vocabulary, and its empty outputs (token ids, logprobs)."""
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    if bitmask is not None and bitmask.stride(1) != 1:
        bitmask = bitmask.contiguous()
    batch = logits.shape[0]
    return (logits, bitmask, torch.empty(batch, dtype=torch.int64, device=logits.device),
            torch.empty(batch, dtype=torch.float32, device=logits.device))


def sample(
    logits: torch.Tensor,
    params: SamplingTensors,
    bitmask: torch.Tensor | None = None,
    rows_per_program: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused masked sampling; same contract and semantics as the torch reference.

    `rows_per_program` (a power of two) defaults to 1 on CUDA and to up to 1024 under the interpreter.
    """
    batch, vocab = logits.shape
    logits, bitmask, tokens, logprobs = sample_outputs(logits, bitmask)
    if batch == 0:
        return tokens, logprobs
    has_mask = bitmask is not None
    if rows_per_program is None:
        rows_per_program = 1 if logits.is_cuda else min(INTERPRETER_ROWS, triton.next_power_of_2(batch))
    _sample_kernel[(triton.cdiv(batch, rows_per_program),)](
        logits, bitmask if has_mask else logits,
        params.temperature, params.top_k, params.top_p, params.min_p, params.seeds, params.steps,
        tokens, logprobs,
        batch, vocab, bitmask.shape[1] if has_mask else 0, logits.stride(0), bitmask.stride(0) if has_mask else 0,
        HAS_MASK=has_mask,
        ROWS=rows_per_program,
        BLOCK=sample_block(vocab),
    )
    return tokens, logprobs

"""Split-row Triton sampler: the semantics and noise of `sampling.py` (and `reference/sampling.py`), with
each row cut into chunks so that a batch of a few dozen rows fills the GPU.

Three launches, no host synchronisation:
  1. (rows x chunks) programs: each chunk's masked max and first argmax.
  2. (rows x chunks) programs, the row max now known from stage 1's chunk maxima: each chunk's sum of
     exp(x - row max) (the log-sum-exp of logprobs), and, by the row's parameters,
       * temperature rows without top-k and top-p (min-p allowed): the chunk's best Gumbel score
         (x - max) / T + G over the kept tokens, with its token id;
       * rows with 0 < top_k <= top_k_max: candidates, every token with x >= t_c for a chunk floor t_c
         (<= the chunk's k-th largest, found by bisection on float keys and stopped as soon as
         k <= count(x >= t_c) <= top_k_max), in token order, at most top_k_max of them. When ties at t_c
         do not fit, the chunk records t_c as its overflow value;
       * top-p rows without top-k: the same with k = top_k_max, and the chunk's mass sum(exp((x - max) / T)).
  3. One program per row merges: greedy rows take the first chunk argmax of the row max; temperature rows
     the best chunk score (the first chunk on ties: the lowest id); top-k rows find the k-th largest T
     among the candidates (it is >= every chunk floor, and every token >= a chunk floor is a candidate, so T
     is the row's), then top-p inside the top-k set, min-p, and Gumbel-max over the kept candidates with
     the same noise bits. A top-p row without top-k takes F, the highest chunk floor: every token >= F is a
     candidate, so when their mass reaches top_p * the row's mass (the chunk masses summed), the top-p
     threshold is >= F and is found among the candidates. Rows the candidates cannot cover exactly stream
     their whole row here with `sampling.sample_rows` (today's kernel, one row): top_k > top_k_max, top-p
     rows whose mass above F falls short (flat rows: a nucleus of more than ~top_k_max tokens per chunk),
     and rows where T (or F) equals a chunk's overflow value (ties beyond the candidate slots). The choice
     is per row, on the device.
Logprobs are log_softmax at temperature 1 of the sampled token, from the chunk sums.

Stage results live in one float32 workspace of RECORD floats per (row, chunk) (ints through an int32 view
of the same memory).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.launch import split_sample_launch
from formwork.kernels.sampling_tensors import SamplingTensors
from formwork.kernels.triton.sampling import (float_key, key_float, neg_log_log_uniform, sample_outputs,
                                               sample_rows)

# Offsets inside a (row, chunk) record; the candidates' logits start at CANDIDATES, their ids top_k_max later.
# MASS: a top-p row's sum of exp((x - row max) / T) over the chunk (the top-p total).
MAX, ARG, SUM_EXP, BEST, BEST_ID, FLOOR, OVERFLOW, MASS = (tl.constexpr(i) for i in range(8))
CANDIDATES = tl.constexpr(8)


def record_size(top_k_max: int) -> int:
    """Floats per (row, chunk) record."""
    return CANDIDATES.value + 2 * top_k_max


@triton.jit
def _chunk_logits(logits_ptr, bitmask_ptr, row, offs, vocab_size, num_words, logits_stride, bitmask_stride,
                  HAS_MASK: tl.constexpr):
    """float32 logits of one row's tokens `offs`, -inf where masked or past the vocabulary."""
    ok = offs < vocab_size
    x = tl.load(logits_ptr + row * logits_stride + offs, mask=ok, other=float("-inf")).to(tl.float32)
    if HAS_MASK:
        words = offs // 32
        packed = tl.load(bitmask_ptr + row * bitmask_stride + words, mask=ok & (words < num_words), other=0)
        x = tl.where(((packed >> (offs % 32)) & 1) != 0, x, float("-inf"))
    return x


@triton.jit
def _chunk_max_kernel(logits_ptr, bitmask_ptr, work_ptr, work_int_ptr,
                      vocab_size, num_words, logits_stride, bitmask_stride, num_chunks,
                      HAS_MASK: tl.constexpr, CHUNK: tl.constexpr, RECORD: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    x = _chunk_logits(logits_ptr, bitmask_ptr, row, offs, vocab_size, num_words, logits_stride, bitmask_stride,
                      HAS_MASK)
    record = (row * num_chunks + chunk) * RECORD
    tl.store(work_ptr + record + MAX, tl.max(x, axis=0))
    tl.store(work_int_ptr + record + ARG, tl.argmax(x, axis=0) + chunk * CHUNK)


@triton.jit
def _row_max(work_ptr, row, num_chunks, CHUNKS_PAD: tl.constexpr, RECORD: tl.constexpr):
    chunks = tl.arange(0, CHUNKS_PAD)
    maxima = tl.load(work_ptr + (row * num_chunks + chunks) * RECORD + MAX, mask=chunks < num_chunks,
                     other=float("-inf"))
    return tl.max(maxima, axis=0)


@triton.jit
def _bisect_floor(x, lo, hi, top_k, stop):
    """The largest float key t in [lo, hi] with count(x >= t) >= top_k, except that the search stops at
    the first t whose count lies in [top_k, stop]: bisection on float keys, the bounds snapped to data
    values (lo must satisfy count(x >= key_float(lo)) >= top_k)."""
    while lo < hi:
        mid = lo + (hi - lo + 1) // 2
        probe = key_float(mid)
        ge = x >= probe
        count = tl.sum(ge.to(tl.int32), axis=0)
        above = tl.min(tl.where(ge, x, float("inf")), axis=0)
        below = tl.max(tl.where(ge, float("-inf"), x), axis=0)
        enough = count >= top_k
        lo = tl.where(enough, tl.maximum(float_key(above), mid), lo)
        hi = tl.where(enough, tl.where(count <= stop, lo, hi), tl.minimum(float_key(below), mid - 1))
    return key_float(lo)


@triton.jit
def _chunk_floor(x, top_k, TOP_K_MAX: tl.constexpr):
    """A value t <= the k-th largest of x with count(x >= t) <= TOP_K_MAX where one exists (else the k-th
    largest itself), stopped once the count lies in [top_k, TOP_K_MAX]."""
    # count(x >= min) = CHUNK >= TOP_K_MAX >= top_k
    return _bisect_floor(x, float_key(tl.min(x, axis=0)), float_key(tl.max(x, axis=0)), top_k, TOP_K_MAX)


@triton.jit
def _store_candidates(x, offs, top_k, record_ptr, record_int_ptr, TOP_K_MAX: tl.constexpr):
    """Write the chunk's candidates (tokens >= its floor, in token order, at most TOP_K_MAX, the rest of
    the slots -inf), its floor and its overflow value (the floor when ties there did not fit, else -inf)."""
    floor = _chunk_floor(x, top_k, TOP_K_MAX)
    above = x > floor
    tie = x == floor
    tie_rank = tl.cumsum(tie.to(tl.int32), axis=0) - 1
    taken = above | (tie & (tie_rank < TOP_K_MAX - tl.sum(above.to(tl.int32), axis=0)))
    slot = tl.cumsum(taken.to(tl.int32), axis=0) - 1
    tl.store(record_ptr + CANDIDATES + slot, x, mask=taken)
    tl.store(record_int_ptr + CANDIDATES + TOP_K_MAX + slot, offs, mask=taken)
    slots = tl.arange(0, TOP_K_MAX)
    tl.store(record_ptr + CANDIDATES + slots, float("-inf"), mask=slots >= tl.sum(taken.to(tl.int32), axis=0))
    overflow = (tl.sum((x >= floor).to(tl.int32), axis=0) > TOP_K_MAX) & (floor > float("-inf"))
    tl.store(record_ptr + FLOOR, floor)
    tl.store(record_ptr + OVERFLOW, tl.where(overflow, floor, float("-inf")))


@triton.jit
def _chunk_draw_kernel(logits_ptr, bitmask_ptr, work_ptr, work_int_ptr,
                       temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
                       vocab_size, num_words, logits_stride, bitmask_stride, num_chunks,
                       HAS_MASK: tl.constexpr, CHUNK: tl.constexpr, CHUNKS_PAD: tl.constexpr,
                       TOP_K_MAX: tl.constexpr, RECORD: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    record = (row * num_chunks + chunk) * RECORD
    row_max = _row_max(work_ptr, row, num_chunks, CHUNKS_PAD, RECORD)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    x = _chunk_logits(logits_ptr, bitmask_ptr, row, offs, vocab_size, num_words, logits_stride, bitmask_stride,
                      HAS_MASK)
    safe_max = tl.where(row_max == float("-inf"), 0.0, row_max)
    tl.store(work_ptr + record + SUM_EXP, tl.sum(tl.exp(x - safe_max), axis=0))

    temperature = tl.load(temperature_ptr + row)
    top_k = tl.load(top_k_ptr + row)
    sampled = (temperature > 0) & (row_max > float("-inf"))
    top_k_on = (top_k > 0) & (top_k < vocab_size)
    top_k_off = (top_k <= 0) | (top_k >= vocab_size)
    top_p = tl.load(top_p_ptr + row)
    if sampled & top_k_on & (top_k <= TOP_K_MAX):
        _store_candidates(x, offs, top_k, work_ptr + record, work_int_ptr + record, TOP_K_MAX)
    elif sampled & top_k_off & (top_p < 1.0):
        _store_candidates(x, offs, TOP_K_MAX, work_ptr + record, work_int_ptr + record, TOP_K_MAX)
        tl.store(work_ptr + record + MASS, tl.sum(tl.exp((x - row_max) * (1.0 / temperature)), axis=0))
    elif sampled & top_k_off:
        inv_temp = 1.0 / temperature
        scaled = (x - row_max) * inv_temp
        keep = (x > float("-inf")) & ((tl.exp(scaled) >= tl.load(min_p_ptr + row)) | (x == row_max))
        noise = neg_log_log_uniform(tl.load(seed_ptr + row), tl.load(step_ptr + row), offs)
        score = tl.where(keep, scaled - noise, float("-inf"))
        tl.store(work_ptr + record + BEST, tl.max(score, axis=0))
        tl.store(work_int_ptr + record + BEST_ID, tl.argmax(score, axis=0) + chunk * CHUNK)


@triton.jit
def _candidates(work_ptr, work_int_ptr, row, num_chunks, CHUNKS_PAD: tl.constexpr, TOP_K_MAX: tl.constexpr,
                RECORD: tl.constexpr):
    """A row's candidates (logits, ids; -inf in empty slots) and its chunks' floors and overflow values."""
    slots = tl.arange(0, CHUNKS_PAD * TOP_K_MAX)
    chunk_of = slots // TOP_K_MAX
    records = (row * num_chunks + chunk_of) * RECORD
    present = chunk_of < num_chunks
    x = tl.load(work_ptr + records + CANDIDATES + slots % TOP_K_MAX, mask=present, other=float("-inf"))
    ids = tl.load(work_int_ptr + records + CANDIDATES + TOP_K_MAX + slots % TOP_K_MAX, mask=present, other=0)
    chunks = tl.arange(0, CHUNKS_PAD)
    chunk_records = (row * num_chunks + chunks) * RECORD
    floors = tl.load(work_ptr + chunk_records + FLOOR, mask=chunks < num_chunks, other=float("-inf"))
    overflows = tl.load(work_ptr + chunk_records + OVERFLOW, mask=chunks < num_chunks, other=float("-inf"))
    return x, ids, floors, overflows


@triton.jit
def _overflowed(overflows, floor):
    """1 when ties at `floor` did not fit some chunk's slots (tokens >= floor are then missing)."""
    return tl.max(((overflows == floor) & (overflows > float("-inf"))).to(tl.int32), axis=0)


@triton.jit
def _top_p_floor(x, relative, floor, row_max, target):
    """The largest t >= floor with mass(x >= t) >= target, bisecting float keys snapped to the candidates."""
    lo = float_key(floor)
    hi = float_key(row_max)
    while lo < hi:
        mid = lo + (hi - lo + 1) // 2
        probe = key_float(mid)
        ge = x >= probe
        mass = tl.sum(tl.where(ge, relative, 0.0), axis=0)
        above = tl.min(tl.where(ge, x, float("inf")), axis=0)
        below = tl.max(tl.where(ge, float("-inf"), x), axis=0)
        enough = mass >= target
        lo = tl.where(enough, tl.maximum(float_key(above), mid), lo)
        hi = tl.where(enough, hi, tl.minimum(float_key(below), mid - 1))
    return key_float(lo)


@triton.jit
def _draw_candidates(x, ids, scaled, relative, floor, row_max, min_p, seed, step):
    """Gumbel-max over the candidates >= floor that min-p keeps (the lowest id on ties)."""
    keep = (x >= floor) & (x > float("-inf")) & ((relative >= min_p) | (x == row_max))
    score = tl.where(keep, scaled - neg_log_log_uniform(seed, step, ids), float("-inf"))
    best = tl.max(score, axis=0)
    token = tl.min(tl.where(score == best, ids, 2147483647), axis=0)  # candidates lie in token order
    return token.to(tl.int64)


@triton.jit
def _top_k_draw(work_ptr, work_int_ptr, row, num_chunks, row_max, temperature, top_k, top_p, min_p, seed, step,
                CHUNKS_PAD: tl.constexpr, TOP_K_MAX: tl.constexpr, RECORD: tl.constexpr):
    """(token, overflowed) of a top-k row from its candidates; overflowed is 1 when ties at the k-th
    largest logit did not fit a chunk's slots (the token is then wrong and the caller streams the row)."""
    x, ids, floors, overflows = _candidates(work_ptr, work_int_ptr, row, num_chunks, CHUNKS_PAD, TOP_K_MAX, RECORD)
    # The k-th largest candidate (ties kept), bisecting from the highest chunk floor.
    floor = _bisect_floor(x, float_key(tl.max(floors, axis=0)), float_key(row_max), top_k, top_k)
    overflowed = _overflowed(overflows, floor)
    scaled = (x - row_max) * (1.0 / temperature)
    relative = tl.exp(scaled)
    if top_p < 1.0:  # the largest t >= floor with mass(x >= t) >= top_p * mass(x >= floor)
        floor = _top_p_floor(x, relative, floor, row_max, top_p * tl.sum(tl.where(x >= floor, relative, 0.0), axis=0))
    return _draw_candidates(x, ids, scaled, relative, floor, row_max, min_p, seed, step), overflowed


@triton.jit
def _top_p_draw(work_ptr, work_int_ptr, row, num_chunks, row_max, temperature, top_p, min_p, seed, step,
                CHUNKS_PAD: tl.constexpr, TOP_K_MAX: tl.constexpr, RECORD: tl.constexpr):
    """(token, uncovered) of a top-p row without top-k. Every token >= the highest chunk floor F is a
    candidate, so when their mass reaches top_p * the row's mass the top-p threshold is >= F and is found
    among the candidates. uncovered is 1 otherwise (a flat row) or when ties at F did not fit a chunk's
    slots: the caller then streams the row."""
    x, ids, floors, overflows = _candidates(work_ptr, work_int_ptr, row, num_chunks, CHUNKS_PAD, TOP_K_MAX, RECORD)
    floor = tl.max(floors, axis=0)
    chunks = tl.arange(0, CHUNKS_PAD)
    total = tl.sum(tl.load(work_ptr + (row * num_chunks + chunks) * RECORD + MASS, mask=chunks < num_chunks,
                           other=0.0), axis=0)
    scaled = (x - row_max) * (1.0 / temperature)
    relative = tl.exp(scaled)
    target = top_p * total
    uncovered = (tl.sum(tl.where(x >= floor, relative, 0.0), axis=0) < target).to(tl.int32)
    floor = _top_p_floor(x, relative, floor, row_max, target)
    token = _draw_candidates(x, ids, scaled, relative, floor, row_max, min_p, seed, step)
    return token, tl.maximum(uncovered, _overflowed(overflows, tl.max(floors, axis=0)))


@triton.jit
def _merge_kernel(logits_ptr, bitmask_ptr, work_ptr, work_int_ptr,
                  temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
                  token_out_ptr, logprob_out_ptr,
                  vocab_size, num_words, logits_stride, bitmask_stride, num_chunks,
                  HAS_MASK: tl.constexpr, CHUNKS_PAD: tl.constexpr, TOP_K_MAX: tl.constexpr,
                  RECORD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunks = tl.arange(0, CHUNKS_PAD)
    chunk_records = (row * num_chunks + chunks) * RECORD
    present = chunks < num_chunks
    maxima = tl.load(work_ptr + chunk_records + MAX, mask=present, other=float("-inf"))
    row_max = tl.max(maxima, axis=0)
    has_token = row_max > float("-inf")
    first_max = tl.argmax(maxima, axis=0)
    token = tl.load(work_int_ptr + (row * num_chunks + first_max) * RECORD + ARG).to(tl.int64)
    sum_exp = tl.sum(tl.load(work_ptr + chunk_records + SUM_EXP, mask=present, other=0.0), axis=0)
    log_norm = row_max + tl.log(tl.where(has_token, sum_exp, 1.0))

    temperature = tl.load(temperature_ptr + row)
    top_k = tl.load(top_k_ptr + row)
    top_p = tl.load(top_p_ptr + row)
    sampled = (temperature > 0) & has_token
    top_k_on = (top_k > 0) & (top_k < vocab_size)
    top_k_off = (top_k <= 0) | (top_k >= vocab_size)
    streamed = sampled & top_k_on & (top_k > TOP_K_MAX)
    if sampled & top_k_on & (top_k <= TOP_K_MAX):
        token, overflowed = _top_k_draw(work_ptr, work_int_ptr, row, num_chunks, row_max, temperature, top_k, top_p,
                                   tl.load(min_p_ptr + row), tl.load(seed_ptr + row), tl.load(step_ptr + row),
                                   CHUNKS_PAD, TOP_K_MAX, RECORD)
        streamed = overflowed > 0
    elif sampled & top_k_off & (top_p < 1.0):
        token, uncovered = _top_p_draw(work_ptr, work_int_ptr, row, num_chunks, row_max, temperature, top_p,
                                       tl.load(min_p_ptr + row), tl.load(seed_ptr + row), tl.load(step_ptr + row),
                                       CHUNKS_PAD, TOP_K_MAX, RECORD)
        streamed = uncovered > 0
    elif sampled & top_k_off:
        scores = tl.load(work_ptr + chunk_records + BEST, mask=present, other=float("-inf"))
        token = tl.load(work_int_ptr + (row * num_chunks + tl.argmax(scores, axis=0)) * RECORD + BEST_ID)
        token = token.to(tl.int64)
    if streamed:
        sample_rows(logits_ptr, bitmask_ptr, temperature_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seed_ptr, step_ptr,
                    token_out_ptr, logprob_out_ptr, row + tl.arange(0, 1), row + 1, vocab_size, num_words,
                    logits_stride, bitmask_stride, HAS_MASK, 1, BLOCK)
    else:
        chosen = tl.load(logits_ptr + row * logits_stride + tl.maximum(token, 0)).to(tl.float32)
        tl.store(token_out_ptr + row, tl.where(has_token, token, -1))
        tl.store(logprob_out_ptr + row, tl.where(has_token, chosen - log_norm, float("-inf")))


def sample(
    logits: torch.Tensor,
    params: SamplingTensors,
    bitmask: torch.Tensor | None = None,
    chunk: int | None = None,
    top_k_max: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked sampling with the contract of `sampling.sample`; `chunk` and `top_k_max` (powers of two,
    chunk >= top_k_max) override `launch.split_sample_launch`'s defaults (tests use small ones)."""
    batch, vocab = logits.shape
    logits, bitmask, tokens, logprobs = sample_outputs(logits, bitmask)
    if batch == 0:
        return tokens, logprobs
    has_mask = bitmask is not None
    launch = split_sample_launch(vocab, chunk, top_k_max)
    if launch.chunk < launch.top_k_max:
        raise ValueError(f"chunk {launch.chunk} < top_k_max {launch.top_k_max}")
    record = record_size(launch.top_k_max)
    work = torch.empty(batch * launch.num_chunks * record, dtype=torch.float32, device=logits.device)
    work_int = work.view(torch.int32)
    mask_arg = bitmask if has_mask else logits
    num_words = bitmask.shape[1] if has_mask else 0
    mask_stride = bitmask.stride(0) if has_mask else 0
    shape = (vocab, num_words, logits.stride(0), mask_stride, launch.num_chunks)
    params_args = (params.temperature, params.top_k, params.top_p, params.min_p, params.seeds, params.steps)
    grid = (batch, launch.num_chunks)
    _chunk_max_kernel[grid](logits, mask_arg, work, work_int, *shape,
                            HAS_MASK=has_mask, CHUNK=launch.chunk, RECORD=record, num_warps=launch.chunk_warps)
    _chunk_draw_kernel[grid](logits, mask_arg, work, work_int, *params_args, *shape,
                             HAS_MASK=has_mask, CHUNK=launch.chunk, CHUNKS_PAD=launch.chunks_pad,
                             TOP_K_MAX=launch.top_k_max, RECORD=record, num_warps=launch.chunk_warps)
    _merge_kernel[(batch,)](logits, mask_arg, work, work_int, *params_args, tokens, logprobs, *shape,
                            HAS_MASK=has_mask, CHUNKS_PAD=launch.chunks_pad, TOP_K_MAX=launch.top_k_max,
                            RECORD=record, BLOCK=launch.block, num_warps=launch.merge_warps)
    return tokens, logprobs

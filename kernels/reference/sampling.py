"""Torch reference: masked sampling with temperature, top-k, top-p, min-p and seeded Gumbel-max.

Per row, with x the masked logits (float32), m = max(x) and s_j = (x_j - m) * (1 / T):
  * temperature 0: the token is argmax(x) (lowest id on ties);
  * otherwise the relative probability of token j is e_j = exp(s_j) and
    - top-k keeps x_j >= the k-th largest logit (ties at the threshold are kept),
    - top-p keeps x_j >= t, t the largest logit such that the kept mass of {x >= t} is >= p * (kept mass),
    - min-p keeps e_j >= min_p (the max token always stays),
    and the token is argmax over kept j of s_j + G_j (lowest id on ties), G_j Gumbel noise keyed by
    (seed, step, j) (see `philox.py`), so the draw is independent of the rest of the batch;
  * logprob = log_softmax(x)[token] (temperature 1, before top-k/top-p/min-p);
  * a row whose mask allows nothing returns token -1 with logprob -inf.

Float details the sampled tokens depend on: e_j = exp(max(s_j, -87)) and the mass total of top-p are
torch float32 (`_relative_probabilities`); the top-p masses are cumulative sums in descending order of x,
accumulated in double and rounded to float32 (torch's CPU cumsum), compared with the float32 p * total.

The sampled rows are truncated and drawn in one C pass (`kernels/native/draw_rows.c`, `top_p.c`), which
keeps this definition: only tokens with s_j >= -(GUMBEL_MAX - GUMBEL_MIN + 1) can beat the max token; for
top-p, tokens with e_j < (1 - p) * total / (2 * vocab) hold less than half the mass top-p cuts off and are
dropped first (when 1 - p >= 1e-3, leaving room for float rounding); the top-p threshold is found by
selection, not a sort, deciding only where the mass is clear of float rounding boundaries (else it sorts);
the noise is drawn for every kept token but its logs are taken only where a token can still win. Where two
tokens score within 1e-3 of each other, `_settle` decides between them with the float32 noise of
`philox.gumbel_noise`.

Everything runs on the CPU; tensors on another device are copied there and the results back.
"""

from __future__ import annotations

import numpy as np
import torch

from formwork.kernels._draw import draw_rows
from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.philox import GUMBEL_MAX, GUMBEL_MIN, gumbel_noise
from formwork.kernels.sampling_tensors import SamplingTensors

NEG_INF = float("-inf")
NEVER_WINS = -(GUMBEL_MAX - GUMBEL_MIN + 1.0)  # scaled logits below this cannot beat the max token
# exp() of arguments below this is far slower on CPU (underflow to denormals and -inf take a slow path).
# Clamping only turns terms below 1.2e-38 into 1.7e-38: they are summed with the max token's 1.0, and
# even 10**6 of them stay far below half an ulp of 1.0, so every sum rounds to the same float32.
_EXP_FLOOR = -87.0


def sample(
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None, *,
    with_logprobs: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Sample one token per row; returns (token_ids int64 [batch], logprobs float32 [batch], or None
    without `with_logprobs`)."""
    device = logits.device
    if device.type != "cpu":
        token_ids, logprobs = sample(logits.cpu(), params.to("cpu"), None if bitmask is None else bitmask.cpu(),
                                     with_logprobs=with_logprobs)
        return token_ids.to(device), None if logprobs is None else logprobs.to(device)
    x = logits.to(torch.float32, copy=bitmask is not None)  # nothing below writes into x
    if bitmask is not None:
        apply_token_bitmask(x, bitmask)
    values = x.numpy()
    ids = values.argmax(axis=1)
    maxima = values[np.arange(len(ids)), ids]
    has_allowed = maxima > NEG_INF
    random_rows = np.flatnonzero((params.temperature.numpy() > 0) & has_allowed)
    if len(random_rows):
        ids[random_rows] = _draw(x, maxima, params, random_rows)
    all_allowed = bool(has_allowed.all())
    if not all_allowed:
        ids[~has_allowed] = -1
    token_ids = torch.from_numpy(ids)
    if not with_logprobs:
        return token_ids, None
    row_max = torch.from_numpy(maxima)
    if all_allowed:  # the common case, without the masking below
        log_norm = row_max + _exp_(x - row_max.unsqueeze(1)).sum(dim=1).log_()
        return token_ids, x.gather(1, token_ids.unsqueeze(1)).squeeze(1) - log_norm
    allowed = torch.from_numpy(has_allowed)
    safe_max = torch.where(allowed, row_max, 0.0)
    log_norm = safe_max + _exp_(x - safe_max.unsqueeze(1)).sum(dim=1).log_()
    chosen = x.gather(1, token_ids.clamp(min=0).unsqueeze(1)).squeeze(1)
    return token_ids, torch.where(allowed, chosen - log_norm, torch.full_like(chosen, NEG_INF))


def _draw(x: torch.Tensor, maxima: np.ndarray, params: SamplingTensors, rows: np.ndarray) -> np.ndarray:
    """The tokens of the sampled `rows` (temperature > 0, something allowed) of x [batch, vocab]. The
    per-row vectors go through numpy (a torch op on 64 values costs more than its work)."""
    every = len(rows) == x.shape[0]
    pick = np.ascontiguousarray if every else (lambda a: a[rows])  # the C pass reads contiguous buffers
    rows_x = x if every else x[torch.from_numpy(rows)]
    values = np.ascontiguousarray(rows_x.numpy())
    row_max = pick(maxima)
    inv_temperature = np.float32(1.0) / pick(params.temperature.numpy())  # float32, as torch's 1.0 / t
    top_p, min_p = pick(params.top_p.numpy()), pick(params.min_p.numpy())
    floor = _top_k_floor(rows_x, pick(params.top_k.numpy()))
    rel = total = None
    if (top_p < 1.0).any() or (min_p > 0.0).any():
        rel, total = _relative_probabilities(values, row_max, inv_temperature, floor)
    seeds, steps = pick(params.seeds.numpy()), pick(params.steps.numpy())
    tokens = np.empty(len(rows), dtype=np.int64)
    open_rows = draw_rows(values, len(rows), values.shape[1], row_max, inv_temperature, floor, top_p, min_p, rel,
                          total, seeds, steps, NEVER_WINS, tokens)
    for row, ids in open_rows:
        tokens[row] = _settle(values[row], row_max[row], inv_temperature[row], seeds[row], steps[row], ids)
    return tokens


def _top_k_floor(x: torch.Tensor, top_k: np.ndarray) -> np.ndarray | None:
    """Per row, the k-th largest logit where 0 < k < vocab, else -inf; None when no row uses top-k."""
    k_rows = np.flatnonzero((top_k > 0) & (top_k < x.shape[1]))
    if not len(k_rows):
        return None
    floor = np.full(x.shape[0], NEG_INF, dtype=np.float32)
    k = torch.from_numpy(top_k[k_rows].astype(np.int64))
    largest = torch.topk(x[torch.from_numpy(k_rows)], int(k.max()), dim=1).values  # sorted: k-th largest at k - 1
    floor[k_rows] = largest.gather(1, (k - 1).unsqueeze(1)).squeeze(1).numpy()
    return floor


def _relative_probabilities(x: np.ndarray, row_max: np.ndarray, inv_temperature: np.ndarray,
                            floor: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(e [rows, vocab], top-p's total mass [rows]), float32: e = exp(max(s, -87)) of the scaled logits
    s = (x - row_max) * inv_temperature (numpy's float32 arithmetic, as torch's), exp and the sum of e over
    x >= floor (top-k's floor; every token without one) by torch."""
    scaled = np.subtract(x, row_max[:, None])
    np.multiply(scaled, inv_temperature[:, None], out=scaled)
    rel = torch.from_numpy(np.maximum(scaled, np.float32(_EXP_FLOOR), out=scaled)).exp_()
    kept = rel if floor is None else torch.where(torch.from_numpy(x >= floor[:, None]), rel, 0.0)
    return rel.numpy(), kept.sum(dim=1).numpy()


def _settle(x: np.ndarray, row_max: np.float32, inv_temperature: np.float32, seed: np.int64, step: np.int64,
            ids: tuple[int, ...]) -> int:
    """The winner among near-tied tokens `ids` (ascending) of one row: the highest float32 score
    s + G (G from `gumbel_noise`, as the reference draws it), the lowest id on ties."""
    tokens = torch.tensor(ids, dtype=torch.int64)
    scaled = torch.from_numpy((x[list(ids)] - row_max) * inv_temperature)
    count = len(ids)
    scores = scaled + gumbel_noise(torch.full((count,), int(seed)), torch.full((count,), int(step)), tokens)
    return ids[int(np.argmax((scores == scores.max()).numpy()))]


def _exp_(values: torch.Tensor) -> torch.Tensor:
    """exp(values) in place (for a temporary), for sums that include a term of 1.0 (see _EXP_FLOOR)."""
    return values.clamp_(min=_EXP_FLOOR).exp_()

"""Torch reference: masked sampling with temperature, top-k, top-p, min-p and seeded Gumbel-max.

Per row, with x the masked logits (float32) and m = max(x):
  * temperature 0: the token is argmax(x) (lowest id on ties);
  * otherwise the relative probability of token j is e_j = exp((x_j - m) / T) and
    - top-k keeps x_j >= the k-th largest logit (ties at the threshold are kept),
    - top-p keeps x_j >= t, t the largest logit such that the kept mass of {x >= t} is >= p * (kept mass),
    - min-p keeps e_j >= min_p,
    and the token is argmax over kept j of (x_j - m) / T + G_j, G_j Gumbel noise keyed by
    (seed, step, j) (see `philox.py`), so the draw is independent of the rest of the batch;
  * logprob = log_softmax(x)[token] (temperature 1, before top-k/top-p/min-p);
  * a row whose mask allows nothing returns token -1 with logprob -inf.
"""

from __future__ import annotations

import torch

from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.philox import gumbel_noise
from formwork.kernels.sampling_tensors import SamplingTensors

NEG_INF = float("-inf")


def sample(
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; returns (token_ids int64 [batch], logprobs float32 [batch])."""
    x = logits.to(torch.float32, copy=True)
    if bitmask is not None:
        apply_token_bitmask(x, bitmask)
    row_max = x.max(dim=1).values
    token_ids = x.argmax(dim=1)
    random_rows = (params.temperature > 0).nonzero().squeeze(1)
    if random_rows.numel() > 0:
        token_ids[random_rows] = _sample_rows(x[random_rows], row_max[random_rows], params.select(random_rows))
    has_allowed = row_max > NEG_INF
    token_ids = torch.where(has_allowed, token_ids, torch.full_like(token_ids, -1))
    logprobs = torch.log_softmax(x, dim=1).gather(1, token_ids.clamp(min=0).unsqueeze(1)).squeeze(1)
    logprobs = torch.where(has_allowed, logprobs, torch.full_like(logprobs, NEG_INF))
    return token_ids, logprobs


def truncation_mask(x: torch.Tensor, row_max: torch.Tensor, params: SamplingTensors) -> torch.Tensor:
    """Bool [rows, vocab]: tokens that survive masking, top-k, top-p and min-p (temperature > 0 rows)."""
    vocab = x.shape[1]
    temperature = params.temperature.unsqueeze(1)
    rel_prob = torch.exp((x - row_max.unsqueeze(1)) / temperature)
    keep = x > NEG_INF
    top_k = params.top_k.long()
    k_active = (top_k > 0) & (top_k < vocab)
    if bool(k_active.any()):
        sorted_x = x.sort(dim=1, descending=True).values
        kth = sorted_x.gather(1, (top_k.clamp(1, vocab) - 1).unsqueeze(1))
        keep &= (x >= kth) | ~k_active.unsqueeze(1)
    p_active = params.top_p < 1.0
    if bool(p_active.any()):
        kept_prob = torch.where(keep, rel_prob, torch.zeros_like(rel_prob))
        target = params.top_p.unsqueeze(1) * kept_prob.sum(dim=1, keepdim=True)
        sorted_x, order = torch.where(keep, x, NEG_INF).sort(dim=1, descending=True)
        mass = kept_prob.gather(1, order).cumsum(dim=1)
        cut = (mass < target).sum(dim=1, keepdim=True).clamp(max=vocab - 1)
        threshold = sorted_x.gather(1, cut)
        keep &= (x >= threshold) | ~p_active.unsqueeze(1)
    min_p = params.min_p.unsqueeze(1)
    keep &= rel_prob >= min_p
    return keep


def _sample_rows(x: torch.Tensor, row_max: torch.Tensor, params: SamplingTensors) -> torch.Tensor:
    """Gumbel-max over the truncated, tempered distribution; noise only for kept tokens."""
    keep = truncation_mask(x, row_max, params)
    rows, cols = keep.nonzero(as_tuple=True)
    scaled = (x[rows, cols] - row_max[rows]) / params.temperature[rows]
    noise = gumbel_noise(params.seeds[rows], params.steps[rows], cols)
    scores = torch.full_like(x, NEG_INF)
    scores[rows, cols] = scaled + noise
    return scores.argmax(dim=1)

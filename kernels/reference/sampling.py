"""Torch reference: masked sampling with temperature, top-k, top-p, min-p and seeded Gumbel-max.

Per row, with x the masked logits (float32) and m = max(x):
  * temperature 0: the token is argmax(x) (lowest id on ties);
  * otherwise the relative probability of token j is e_j = exp((x_j - m) / T) and
    - top-k keeps x_j >= the k-th largest logit (ties at the threshold are kept),
    - top-p keeps x_j >= t, t the largest logit such that the kept mass of {x >= t} is >= p * (kept mass),
    - min-p keeps e_j >= min_p (the max token always stays),
    and the token is argmax over kept j of (x_j - m) / T + G_j, G_j Gumbel noise keyed by
    (seed, step, j) (see `philox.py`), so the draw is independent of the rest of the batch;
  * logprob = log_softmax(x)[token] (temperature 1, before top-k/top-p/min-p);
  * a row whose mask allows nothing returns token -1 with logprob -inf.
The noise is bounded (GUMBEL_MIN <= G <= GUMBEL_MAX), so tokens whose scaled logit is more than
GUMBEL_MAX - GUMBEL_MIN below the max can never win: noise is only generated for the others. This is an
exact shortcut (the result equals computing noise everywhere, as the Triton kernel does).
"""

from __future__ import annotations

import torch

from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.philox import GUMBEL_MAX, GUMBEL_MIN, gumbel_noise
from formwork.kernels.sampling_tensors import SamplingTensors

NEG_INF = float("-inf")
_NEVER_WINS = -(GUMBEL_MAX - GUMBEL_MIN + 1.0)  # scaled logits below this cannot beat the max token


def sample(
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; returns (token_ids int64 [batch], logprobs float32 [batch])."""
    x = logits.to(torch.float32, copy=True)
    if bitmask is not None:
        apply_token_bitmask(x, bitmask)
    row_max = x.max(dim=1).values
    token_ids = x.argmax(dim=1)
    has_allowed = row_max > NEG_INF
    random_rows = ((params.temperature > 0) & has_allowed).nonzero().squeeze(1)
    if random_rows.numel() > 0:
        token_ids[random_rows] = _sample_rows(x[random_rows], row_max[random_rows], params.select(random_rows))
    token_ids = torch.where(has_allowed, token_ids, torch.full_like(token_ids, -1))
    logprobs = torch.log_softmax(x, dim=1).gather(1, token_ids.clamp(min=0).unsqueeze(1)).squeeze(1)
    logprobs = torch.where(has_allowed, logprobs, torch.full_like(logprobs, NEG_INF))
    return token_ids, logprobs


def truncation_mask(x: torch.Tensor, row_max: torch.Tensor, params: SamplingTensors) -> torch.Tensor:
    """Bool [rows, vocab]: tokens that survive masking, top-k, top-p and min-p (temperature > 0 rows)."""
    vocab = x.shape[1]
    keep = x > NEG_INF
    top_k = params.top_k.long()
    k_active = (top_k > 0) & (top_k < vocab)
    if bool(k_active.any()):
        largest = torch.topk(x, int(top_k[k_active].max()), dim=1).values
        kth = largest.gather(1, (top_k.clamp(1, largest.shape[1]) - 1).unsqueeze(1))
        keep &= (x >= kth) | ~k_active.unsqueeze(1)
    rel_prob = torch.exp((x - row_max.unsqueeze(1)) / params.temperature.unsqueeze(1))
    p_rows = (params.top_p < 1.0).nonzero().squeeze(1)
    if p_rows.numel() > 0:
        keep[p_rows] &= _top_p_mask(x[p_rows], rel_prob[p_rows], keep[p_rows], params.top_p[p_rows])
    keep &= (rel_prob >= params.min_p.unsqueeze(1)) | (x == row_max.unsqueeze(1))
    return keep


def _top_p_mask(x: torch.Tensor, rel_prob: torch.Tensor, keep: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """x >= the largest logit whose upper set holds >= top_p of the kept mass (ties kept)."""
    kept_prob = torch.where(keep, rel_prob, torch.zeros_like(rel_prob))
    target = top_p.unsqueeze(1) * kept_prob.sum(dim=1, keepdim=True)
    sorted_x, order = torch.where(keep, x, NEG_INF).sort(dim=1, descending=True)
    mass = kept_prob.gather(1, order).cumsum(dim=1)
    cut = (mass < target).sum(dim=1, keepdim=True).clamp(max=x.shape[1] - 1)
    return x >= sorted_x.gather(1, cut)


def _sample_rows(x: torch.Tensor, row_max: torch.Tensor, params: SamplingTensors) -> torch.Tensor:
    """Gumbel-max over the truncated, tempered distribution; noise only where it can matter."""
    scaled = (x - row_max.unsqueeze(1)) / params.temperature.unsqueeze(1)
    candidates = truncation_mask(x, row_max, params) & (scaled >= _NEVER_WINS)
    rows, cols = candidates.nonzero(as_tuple=True)
    noise = gumbel_noise(params.seeds[rows], params.steps[rows], cols)
    scores = torch.full_like(x, NEG_INF)
    scores[rows, cols] = scaled[rows, cols] + noise
    return scores.argmax(dim=1)

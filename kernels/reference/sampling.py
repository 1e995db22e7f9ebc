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

The result equals computing noise for every token (as the Triton kernel does), but noise is only drawn
where it can matter. GUMBEL_MIN <= G <= GUMBEL_MAX, so a token can only win if s_j + GUMBEL_MAX reaches
the best score found so far. Candidates are the tokens with s_j >= -(GUMBEL_MAX - GUMBEL_MIN) (below that
they lose to the max token); truncation is decided on them alone (they are an upper set of x, so the
top-k and top-p thresholds fall inside them or below all of them). Noise is drawn first for the highest
candidates, and then only for the others that can still beat the best score among those.
"""

from __future__ import annotations

import numpy as np
import torch

from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.philox import GUMBEL_MAX, GUMBEL_MIN, row_gumbel_noise
from formwork.kernels.sampling_tensors import SamplingTensors

NEG_INF = float("-inf")
_NEVER_WINS = -(GUMBEL_MAX - GUMBEL_MIN + 1.0)  # scaled logits below this cannot beat the max token
_SCORE_SLACK = 1e-3  # covers float32 rounding of s + G (|s + G| < 20, one ulp < 2e-6)
_HEAD = 256  # candidates whose noise is drawn first, to bound the winning score
# Top-p also drops tokens with e_j < (1 - p) * mass / (2 * vocab): together they hold less than half the
# mass top-p cuts off, so they lie below the top-p threshold. Only used when 1 - p leaves room for float
# rounding of the sums.
_TOP_P_PRUNE_MIN_GAP = 1e-3
# exp() of arguments below this is far slower on CPU (underflow to denormals and -inf take a slow path).
# Clamping only turns terms below 1.2e-38 into 1.7e-38: they are summed with the max token's 1.0, and
# even 10**6 of them stay far below half an ulp of 1.0, so every sum rounds to the same float32.
_EXP_FLOOR = -87.0


def sample(
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; returns (token_ids int64 [batch], logprobs float32 [batch])."""
    x = logits.to(torch.float32, copy=True)
    if bitmask is not None:
        apply_token_bitmask(x, bitmask)
    row_max, token_ids = x.max(dim=1)  # the first maximal index on ties
    has_allowed = row_max > NEG_INF
    random_rows = ((params.temperature > 0) & has_allowed).nonzero().squeeze(1).tolist()
    if random_rows:
        inv_temp = 1.0 / params.temperature
        top_k, min_p = params.top_k.tolist(), params.min_p.tolist()
        seeds, steps = params.seeds.tolist(), params.steps.tolist()
        for row in random_rows:
            scaled = (x[row] - row_max[row]) * inv_temp[row]
            candidates = _truncated_candidates(x[row], row_max[row], scaled, top_k[row], params.top_p[row],
                                               min_p[row])
            token_ids[row] = _gumbel_argmax(scaled, candidates, seeds[row], steps[row])
    token_ids = torch.where(has_allowed, token_ids, torch.full_like(token_ids, -1))
    safe_max = torch.where(has_allowed, row_max, 0.0)
    log_norm = safe_max + _exp(x - safe_max.unsqueeze(1)).sum(dim=1).log_()
    chosen = x.gather(1, token_ids.clamp(min=0).unsqueeze(1)).squeeze(1)
    logprobs = torch.where(has_allowed, chosen - log_norm, torch.full_like(chosen, NEG_INF))
    return token_ids, logprobs


def _truncated_candidates(
    x: torch.Tensor, row_max: torch.Tensor, scaled: torch.Tensor, top_k: int, top_p: torch.Tensor, min_p: float
) -> torch.Tensor:
    """Ids of the tokens of one row that survive top-k, top-p and min-p and could win the Gumbel-max.

    `top_p` is a 0-d float32 tensor (the mass target is float32 math, as in the Triton kernel).
    """
    vocab = x.shape[0]
    keep = scaled >= _NEVER_WINS  # also drops the masked (-inf) tokens
    floor = None
    if 0 < top_k < vocab:
        floor = torch.topk(x, top_k, sorted=False).values.min()
        keep &= x >= floor
    if top_p < 1.0:
        rel_prob = _exp(scaled)
        total = (rel_prob if floor is None else torch.where(x >= floor, rel_prob, 0.0)).sum()
        gap = 1.0 - float(top_p)
        if gap >= _TOP_P_PRUNE_MIN_GAP:
            keep &= rel_prob >= gap * float(total) / (2 * vocab)
    ids = _flat_nonzero(keep)
    if top_p < 1.0:
        ids = ids[x[ids].argsort(descending=True)]
        mass = rel_prob[ids].cumsum(dim=0)
        cut = int((mass < top_p * total).sum())
        if cut < ids.shape[0]:  # else the threshold lies below every candidate
            ids = ids[x[ids] >= x[ids[cut]]]
    if min_p > 0.0:
        ids = ids[(torch.exp(scaled[ids]) >= min_p) | (x[ids] == row_max)]
    return ids


def _gumbel_argmax(scaled: torch.Tensor, ids: torch.Tensor, seed: int, step: int) -> int:
    """argmax over `ids` of scaled + Gumbel noise (lowest id on ties).

    Noise is drawn for the _HEAD highest candidates first; the others only if they can reach the best
    score among those.
    """
    candidate_scaled = scaled[ids]
    if ids.shape[0] > _HEAD:
        first = torch.topk(candidate_scaled, _HEAD, sorted=False).indices
        scores = candidate_scaled[first] + _noise(seed, step, ids[first])
        reachable = candidate_scaled >= float(scores.max()) - GUMBEL_MAX - _SCORE_SLACK
        reachable[first] = False
        rest = _flat_nonzero(reachable)
        ids = torch.cat([ids[first], ids[rest]])
        scores = torch.cat([scores, candidate_scaled[rest] + _noise(seed, step, ids[_HEAD:])])
    else:
        scores = candidate_scaled + _noise(seed, step, ids)
    return int(ids[scores == scores.max()].min())


def _flat_nonzero(mask: torch.Tensor) -> torch.Tensor:
    """int64 indices of the True entries of a 1-D mask (numpy's is ~10x faster than torch's on CPU)."""
    if mask.device.type == "cpu":
        return torch.from_numpy(np.flatnonzero(mask.numpy()))
    return mask.nonzero().squeeze(1)


def _exp(values: torch.Tensor) -> torch.Tensor:
    """exp(values) for sums that include a term of 1.0 (see _EXP_FLOOR)."""
    return values.clamp(min=_EXP_FLOOR).exp_()


def _noise(seed: int, step: int, ids: torch.Tensor) -> torch.Tensor:
    return row_gumbel_noise(seed, step, ids.cpu().numpy()).to(ids.device)

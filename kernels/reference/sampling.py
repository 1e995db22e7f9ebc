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

Every step runs on all sampled rows at once (masks over [rows, vocab], the top-p candidates sorted in a
padded [rows, most candidates] block, the noise of every (row, token) pair in one Philox call), so the
cost per step does not grow with a Python loop over rows.
"""

from __future__ import annotations

import numpy as np
import torch

from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.philox import GUMBEL_MAX, GUMBEL_MIN, gumbel_noise
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
    logits: torch.Tensor, params: SamplingTensors, bitmask: torch.Tensor | None = None, *,
    with_logprobs: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Sample one token per row; returns (token_ids int64 [batch], logprobs float32 [batch], or None
    without `with_logprobs`)."""
    x = logits.to(torch.float32, copy=bitmask is not None)  # nothing below writes into x
    if bitmask is not None:
        apply_token_bitmask(x, bitmask)
    row_max, token_ids = _row_max(x)
    has_allowed = row_max > NEG_INF
    random_rows = _flat_nonzero((params.temperature > 0) & has_allowed)
    if random_rows.numel():
        every = random_rows.numel() == x.shape[0]
        rows_x, rows_max = _pick(x, random_rows, every), _pick(row_max, random_rows, every)
        inv_temperature = 1.0 / _pick(params.temperature, random_rows, every)
        scaled = (rows_x - rows_max.unsqueeze(1)) * inv_temperature.unsqueeze(1)
        keep = _truncate(rows_x, rows_max, inv_temperature, scaled, _pick(params.top_k, random_rows, every),
                         _pick(params.top_p, random_rows, every), _pick(params.min_p, random_rows, every))
        drawn = _gumbel_argmax(scaled, keep, _pick(params.seeds, random_rows, every),
                               _pick(params.steps, random_rows, every)).to(token_ids.device)
        if every:
            token_ids = drawn
        else:
            token_ids[random_rows] = drawn
    all_allowed = bool(has_allowed.all())
    if not with_logprobs:
        return token_ids if all_allowed else torch.where(has_allowed, token_ids, torch.full_like(token_ids, -1)), None
    if all_allowed:  # the common case, without the masking below
        log_norm = row_max + _exp_(x - row_max.unsqueeze(1)).sum(dim=1).log_()
        return token_ids, x.gather(1, token_ids.unsqueeze(1)).squeeze(1) - log_norm
    token_ids = torch.where(has_allowed, token_ids, torch.full_like(token_ids, -1))
    safe_max = torch.where(has_allowed, row_max, 0.0)
    log_norm = safe_max + _exp(x - safe_max.unsqueeze(1)).sum(dim=1).log_()
    chosen = x.gather(1, token_ids.clamp(min=0).unsqueeze(1)).squeeze(1)
    logprobs = torch.where(has_allowed, chosen - log_norm, torch.full_like(chosen, NEG_INF))
    return token_ids, logprobs


def _truncate(x: torch.Tensor, row_max: torch.Tensor, inv_temperature: torch.Tensor, scaled: torch.Tensor,
              top_k: torch.Tensor, top_p: torch.Tensor, min_p: torch.Tensor) -> torch.Tensor:
    """[rows, vocab] mask of the tokens that survive top-k, top-p and min-p and could win the Gumbel-max.

    The mass target of top-p is float32 math, as in the Triton kernel.
    """
    vocab = x.shape[1]
    keep = scaled >= _NEVER_WINS  # also drops the masked (-inf) tokens
    k_rows = ((top_k > 0) & (top_k < vocab)).nonzero().squeeze(1)
    floor = None  # no top-k row: every floor is -inf
    if k_rows.numel():
        floor = torch.full_like(row_max, NEG_INF)
        k = top_k[k_rows].long()
        largest = torch.topk(x[k_rows], int(k.max()), dim=1).values  # sorted: the k-th largest is at k - 1
        floor[k_rows] = largest.gather(1, (k - 1).unsqueeze(1)).squeeze(1)
        keep &= x >= floor.unsqueeze(1)
    p_rows = (top_p < 1.0).nonzero().squeeze(1)
    if p_rows.numel():
        every = p_rows.numel() == x.shape[0]
        _top_p(keep, p_rows, every, _pick(x, p_rows, every), _pick(row_max, p_rows, every),
               _pick(inv_temperature, p_rows, every), _pick(scaled, p_rows, every),
               None if floor is None else _pick(floor, p_rows, every), _pick(top_p, p_rows, every))
    m_rows = (min_p > 0.0).nonzero().squeeze(1)
    if m_rows.numel():
        likely = torch.exp(scaled[m_rows]) >= min_p[m_rows].unsqueeze(1)
        keep[m_rows] &= likely | (x[m_rows] == row_max[m_rows].unsqueeze(1))
    return keep


def _top_p(keep: torch.Tensor, p_rows: torch.Tensor, every: bool, x: torch.Tensor, row_max: torch.Tensor,
           inv_temperature: torch.Tensor, scaled: torch.Tensor, floor: torch.Tensor | None,
           top_p: torch.Tensor) -> None:
    """Narrow `keep` at `p_rows` (`every`: all its rows; x, row_max, inv_temperature, scaled, floor, top_p:
    those rows; floor None: all -inf) to each row's top-p set, in place."""
    vocab = x.shape[1]
    rel_prob = _exp(scaled)
    total = (rel_prob if floor is None else torch.where(x >= floor.unsqueeze(1), rel_prob, 0.0)).sum(dim=1)
    gap = 1.0 - top_p.double()
    prunable = gap >= _TOP_P_PRUNE_MIN_GAP
    least = torch.where(prunable, gap * total.double() / (2 * vocab), NEG_INF).float()
    row_keep = _pick(keep, p_rows, every) & (rel_prob >= least.unsqueeze(1))
    # The candidates of each row, sorted by logit (descending), then -inf (past `counts`). A token's
    # relative probability is an elementwise function of its logit, so the sorted logits give the sorted
    # probabilities without an index sort.
    counts = row_keep.sum(dim=1)
    width = int(counts.max())
    block_x = _sorted_descending(torch.where(row_keep, x, NEG_INF), width)
    block_p = _exp((block_x - row_max.unsqueeze(1)) * inv_temperature.unsqueeze(1))
    mass = block_p.cumsum(dim=1)
    cut = (mass < (top_p * total).unsqueeze(1)).sum(dim=1)  # mass never falls: the first place it reaches p
    # where cut >= count the threshold lies below every candidate
    threshold = torch.where(cut < counts, block_x.gather(1, cut.clamp(max=width - 1).unsqueeze(1)).squeeze(1),
                            NEG_INF)
    narrowed = row_keep & (x >= threshold.unsqueeze(1))
    if every:
        keep.copy_(narrowed)
    else:
        keep[p_rows] = narrowed


def _gumbel_argmax(scaled: torch.Tensor, keep: torch.Tensor, seeds: torch.Tensor,
                   steps: torch.Tensor) -> torch.Tensor:
    """Per row, argmax over the kept tokens of scaled + Gumbel noise (lowest id on ties); int64 [rows].

    Noise is drawn for each row's _HEAD highest candidates first; the others only if they can reach the
    best score among those.
    """
    num_rows, vocab = scaled.shape
    if int(keep.sum(dim=1).max()) <= _HEAD:
        rows, ids = _row_major_pairs(keep)
        scores = scaled[rows, ids] + gumbel_noise(seeds[rows], steps[rows], ids)
    else:
        candidates = torch.where(keep, scaled, NEG_INF)
        head = torch.topk(candidates, _HEAD, dim=1, sorted=False).indices
        head_rows = torch.arange(num_rows, device=scaled.device).unsqueeze(1).expand_as(head)
        in_head = keep[head_rows, head]
        rows, ids = head_rows[in_head], head[in_head]
        scores = scaled[rows, ids] + gumbel_noise(seeds[rows], steps[rows], ids)
        best = torch.full((num_rows,), NEG_INF, device=scaled.device).scatter_reduce_(0, rows, scores, "amax")
        reachable = candidates >= (best.double() - GUMBEL_MAX - _SCORE_SLACK).float().unsqueeze(1)
        reachable[head_rows, head] = False
        rest_rows, rest_ids = _row_major_pairs(reachable)
        rest_scores = scaled[rest_rows, rest_ids] + gumbel_noise(seeds[rest_rows], steps[rest_rows], rest_ids)
        rows, ids, scores = torch.cat([rows, rest_rows]), torch.cat([ids, rest_ids]), torch.cat([scores, rest_scores])
    best = torch.full((num_rows,), NEG_INF, device=scaled.device).scatter_reduce_(0, rows, scores, "amax")
    winners = scores == best[rows]
    lowest = torch.full((num_rows,), vocab, dtype=torch.int64, device=scaled.device)
    return lowest.scatter_reduce_(0, rows[winners], ids[winners], "amin")


def _row_major_pairs(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(row, column) int64 indices of the True entries of a 2-D mask, in row-major order."""
    flat = _flat_nonzero(mask.view(-1))
    return flat // mask.shape[1], flat % mask.shape[1]


def _flat_nonzero(mask: torch.Tensor) -> torch.Tensor:
    """int64 indices of the True entries of a 1-D mask (numpy's is ~10x faster than torch's on CPU)."""
    if mask.device.type == "cpu":
        return torch.from_numpy(np.flatnonzero(mask.numpy()))
    return mask.nonzero().squeeze(1)


def _row_max(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(maximum, index of its first occurrence) of each row of a 2-D float tensor (numpy's argmax is
    several times faster than torch's max over a dimension on CPU)."""
    if x.device.type == "cpu":
        values = x.numpy()
        ids = values.argmax(axis=1)
        return torch.from_numpy(values[np.arange(len(ids)), ids]), torch.from_numpy(ids)
    return x.max(dim=1)


def _pick(values: torch.Tensor, rows: torch.Tensor, every: bool) -> torch.Tensor:
    """`values[rows]`, or `values` itself when `rows` are all its rows in order (no copy)."""
    return values if every else values[rows]


def _sorted_descending(values: torch.Tensor, width: int) -> torch.Tensor:
    """The `width` largest entries of each row of a 2-D float tensor, in descending order (numpy's value
    sort is several times faster than torch's topk or sort on CPU)."""
    if values.device.type == "cpu":
        ascending = np.sort(values.numpy(), axis=1)
        return torch.from_numpy(ascending[:, ::-1][:, :width].copy())
    return values.topk(width, dim=1).values


def _exp(values: torch.Tensor) -> torch.Tensor:
    """exp(values) for sums that include a term of 1.0 (see _EXP_FLOOR)."""
    return values.clamp(min=_EXP_FLOOR).exp_()


def _exp_(values: torch.Tensor) -> torch.Tensor:
    """`_exp` in place (for a temporary)."""
    return values.clamp_(min=_EXP_FLOOR).exp_()

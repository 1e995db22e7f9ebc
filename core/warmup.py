"""Start-up warm-up: launch every kernel variant the engine can use before the first request.

A mixed/prefill step, a decode step per padded batch size (`DecodeGraphs.buckets_for`; the attention
kernel's KV split count depends on the batch size), and the sampler on every path: greedy,
temperature, top-k/top-p, min-p and logprobs rows, without and with a grammar bitmask. On CUDA this
compiles (or loads from Triton's cache) each variant, so no request pays a JIT; on the CPU it runs
the torch reference. Warm-up runs on free KV blocks before any request, writes nothing a request can
read, and touches neither the scheduler nor the metrics. Afterwards `variant_log` warns about any
variant first launched later.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import torch

from formwork.core.cuda_graphs import DecodeGraphs
from formwork.core.sampling_params import SamplingParams
from formwork.core.sequence import Request, Sequence
from formwork.kernels.variants import variant_log

if TYPE_CHECKING:
    from formwork.core.engine import LLMEngine

logger = logging.getLogger(__name__)

SAMPLING_PATHS = (
    SamplingParams(temperature=0.0),
    SamplingParams(temperature=0.8),
    SamplingParams(temperature=0.8, top_k=50, top_p=0.9),
    SamplingParams(temperature=1.0, min_p=0.1),
    SamplingParams(temperature=0.0, logprobs=2),
)


@torch.inference_mode()
def warm_up(engine: "LLMEngine") -> float:
    """Run every variant once; returns the seconds it took."""
    start = time.perf_counter()
    runner, config = engine.runner, engine.config
    block_size, num_blocks = runner.block_size, runner.num_blocks
    # max_model_len never exceeds the pool, so the prompt's blocks exist
    prompt_len = min(2 * block_size + 1, engine.max_model_len - 1, config.resolve_token_budget(engine.max_model_len))
    if prompt_len > 1:  # any step with a sequence of several new tokens runs the prefill variants
        blocks = list(range(-(-prompt_len // block_size)))
        runner.forward(runner.prepare([([0] * prompt_len, 0, blocks)], [True]))
    for size in DecodeGraphs.buckets_for(config.max_num_seqs):
        items = [([0], 0, [s % num_blocks]) for s in range(size)]
        runner.forward(runner.prepare(items, [True] * size))
    _warm_sampler(engine)
    if runner.device.type == "cuda":
        torch.cuda.synchronize(runner.device)
    variant_log.watch()
    seconds = time.perf_counter() - start
    logger.info("warm-up: %d kernel variants in %.2fs", len(variant_log.seen()), seconds)
    return seconds


def _warm_sampler(engine: "LLMEngine") -> None:
    """Sample rows of every kind, without and then with a grammar bitmask (all tokens allowed)."""
    device = engine.runner.device
    rows = len(SAMPLING_PATHS)
    generator = torch.Generator(device=device).manual_seed(0)  # leaves the global RNG alone
    logits = torch.randn(rows, engine.vocab_size, generator=generator, device=device)
    seqs = [_dummy_sequence(i, params) for i, params in enumerate(SAMPLING_PATHS)]
    engine.sampler(logits.clone(), seqs)
    bitmask = torch.full((rows, (engine.vocab_size + 31) // 32), -1, dtype=torch.int32)
    engine.sampler(logits.clone(), seqs, bitmask, list(range(rows)))


def _dummy_sequence(index: int, params: SamplingParams) -> Sequence:
    request = Request(f"warmup-{index}", None, [0], params, arrival_time=0.0, priority=0, seeds=[index])
    return request.seqs[0]

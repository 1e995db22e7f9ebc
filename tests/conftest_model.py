"""Shared helpers for the tests/test_model_*.py files (imported explicitly, not a pytest conftest).

Usage::

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest_model import hf_logits, make_runner, PagedSim
"""

from __future__ import annotations

import functools
import random

import torch

from formwork.core.forward_batch import ForwardBatch
from formwork.core.model_files import ModelFiles
from formwork.core.model_runner import ModelRunner
from tiny_models import PRESETS, load_hf_model, tiny_model_dir

# Tiny models gain nothing from intra-op threads, and on the shared 2-core box OpenMP spin-waiting under
# load makes each forward ~100x slower. (Process-wide: any test session importing this runs single-threaded.)
torch.set_num_threads(1)


# variant name -> (tiny_models preset, config overrides); every preset is also a variant of itself.
VARIANTS: dict[str, tuple[str, dict]] = {name: (name, {}) for name in PRESETS}
VARIANTS.update({
    # Qwen2 with the sliding window on layer 1 only (max_window_layers=1): per-layer windows
    "qwen2_layer_swa": ("qwen2", dict(use_sliding_window=True, sliding_window=6, max_window_layers=1)),
    "llama_linear_rope": ("llama", dict(rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=2.0))),
    "llama_yarn_rope": ("llama", dict(rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
                                                           original_max_position_embeddings=64))),
    # Llama with attention_bias (q/k/v/o biases) and mlp_bias
    "llama_bias": ("llama", dict(attention_bias=True, mlp_bias=True)),
})


def variant_dir(variant: str, shards: int = 1):
    preset, overrides = VARIANTS[variant]
    return tiny_model_dir(preset, shards=shards, **overrides)


@functools.lru_cache(maxsize=None)
def model_files(variant: str) -> ModelFiles:
    return ModelFiles.load(variant_dir(variant))


@functools.lru_cache(maxsize=None)
def hf_model(variant: str, dtype: torch.dtype = torch.float32):
    return load_hf_model(variant_dir(variant), dtype=dtype)


def make_runner(variant: str, *, num_blocks: int = 64, block_size: int = 4, dtype="float32") -> ModelRunner:
    return ModelRunner(model_files(variant), num_blocks=num_blocks, block_size=block_size, dtype=dtype)


@torch.no_grad()
def hf_logits(model, token_ids: list[int]) -> torch.Tensor:
    """float32 logits [len(token_ids), vocab] of one full forward of the transformers model."""
    return model(torch.tensor([token_ids])).logits[0].float()


class PagedSim:
    """Drives a ModelRunner like an engine would: random block tables, chunked steps, mixed batches.

    ``step([(seq, n), ...])`` schedules the next ``n`` tokens of each listed sequence in one forward and
    returns {(seq, position): logits} for every sequence whose last new token is wanted.
    """

    def __init__(self, runner: ModelRunner, sequences: list[list[int]], seed: int = 0):
        self.runner = runner
        self.sequences = sequences
        self.computed = [0] * len(sequences)
        bs = runner.block_size
        needed = [-(-len(s) // bs) for s in sequences]
        if sum(needed) > runner.num_blocks:
            raise ValueError("pool too small for the test sequences")
        pool = list(range(runner.num_blocks))
        random.Random(seed).shuffle(pool)
        self.tables, start = [], 0
        for n in needed:
            self.tables.append(pool[start:start + n])
            start += n

    def step(self, plan: list[tuple[int, int]], no_logits: frozenset[int] = frozenset()
             ) -> dict[tuple[int, int], torch.Tensor]:
        """One forward over ``plan``; logits of each planned sequence's last new token unless in ``no_logits``."""
        seqs, logits_for, keys = [], [], []
        for s, n in plan:
            begin = self.computed[s]
            new = self.sequences[s][begin:begin + n]
            seqs.append((new, begin, self.tables[s]))
            logits_for.append(s not in no_logits)
            keys.append((s, begin + len(new) - 1))
        logits = self.runner.forward(ForwardBatch.build(seqs, self.runner.block_size, logits_for))
        for s, n in plan:
            self.computed[s] += n
        wanted = [k for k, w in zip(keys, logits_for) if w]
        return {k: logits[i] for i, k in enumerate(wanted)}


def prefill_logits(runner: ModelRunner, token_ids: list[int], block_table: list[int]) -> torch.Tensor:
    """Logits at every position of one prefill of ``token_ids`` through the runner's paged pool."""
    batch = ForwardBatch.build([(token_ids, 0, block_table)], runner.block_size, [True])
    batch.logits_indices = torch.arange(len(token_ids))
    return runner.forward(batch)

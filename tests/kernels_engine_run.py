"""Generate with formwork's LLM on a tiny model and print the token ids as JSON (a script and a module).

Used by test_kernels_engine_parity.py: imported in-process for the torch path, and run as
`python kernels_engine_run.py MODEL_DIR` in a subprocess with FORMWORK_KERNEL_BACKEND=triton and
TRITON_INTERPRET=1 for the Triton path. Chunked prefill with a small token budget and a shared prompt
prefix make the run exercise decode, prefill, chunked prefill over a cached prefix and prefix hits.
"""

from __future__ import annotations

import json
import sys

import torch

from formwork.core.llm import LLM
from formwork.core.sampling_params import SamplingParams
from formwork.kernels import select_backend

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "The quick brown fox jumps over the lazy cat and the moon.",
    "Hello",
]
MAX_TOKENS = 6


def generate(model_dir: str) -> list[list[int]]:
    """Greedy for every prompt plus one seeded temperature-sampled continuation of the first."""
    torch.set_num_threads(1)
    llm = LLM(model_dir, block_size=4, max_num_batched_tokens=12, enable_chunked_prefill=True,
              enable_prefix_caching=True)
    greedy = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    seeded = SamplingParams(temperature=0.9, top_k=20, top_p=0.9, seed=1234, max_tokens=MAX_TOKENS,
                            ignore_eos=True)
    outputs = llm.generate(PROMPTS + PROMPTS[:1], [greedy] * len(PROMPTS) + [seeded], use_tqdm=False)
    return [list(out.outputs[0].token_ids) for out in outputs]


if __name__ == "__main__":
    print(json.dumps({"backend": select_backend(torch.zeros(1)), "tokens": generate(sys.argv[1])}))

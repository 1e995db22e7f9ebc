"""Step-by-step output equality of two engine versions on a 40-request mixed run (issue 23).

    .venv/bin/python benchmarks/engine_equality.py --dump after.json
    PYTHONPATH=/tmp/base .venv/bin/python benchmarks/engine_equality.py --dump base.json   # a `git archive`
    .venv/bin/python benchmarks/engine_equality.py --compare base.json after.json

The run mixes greedy, top-p, top-k with logprobs, min-p with stop strings and n=2, penalties, logit bias,
stop tokens, min_tokens, structured outputs (with jump-forward), DELTA / CUMULATIVE / FINAL_ONLY outputs,
shared prompt prefixes (prefix caching), requests arriving while others decode, aborts, and a KV pool
small enough to preempt. Every output of every step is recorded (tokens, text, logprobs with ranks and
decoded text, finish and stop reasons), so any change in behaviour shows as the first differing step.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

MODEL_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=512)
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
                                           "admin": {"type": "boolean"}},
          "required": ["name", "admin"], "additionalProperties": False}


def _params(i: int, kinds: Any, sampling: Any) -> Any:
    """The sampling parameters of request `i` (a fixed cycle of the mixes above)."""
    kind = (kinds.CUMULATIVE, kinds.DELTA, kinds.FINAL_ONLY)[i % 3]
    common = dict(max_tokens=8 + (i * 7) % 29, output_kind=kind)
    mixes = [
        dict(temperature=0.0, ignore_eos=True),
        dict(temperature=0.8, top_p=0.9, seed=i),
        dict(temperature=1.0, top_k=20, logprobs=3, seed=i),
        dict(temperature=0.7, min_p=0.05, n=2, stop=["a", "th"], seed=i),
        dict(temperature=0.9, presence_penalty=0.5, frequency_penalty=0.3, repetition_penalty=1.2),
        dict(temperature=0.0, logit_bias={5: 3.0, 9: -2.0}, logprobs=1),
        dict(temperature=0.6, stop_token_ids=[7, 11, 13], min_tokens=2, seed=i),
        dict(temperature=0.0, structured_outputs={"json": PERSON}, max_tokens=40),
        dict(temperature=1.0, stop=["e"], include_stop_str_in_output=True, logprobs=0, seed=i),
        dict(temperature=0.0, structured_outputs={"choice": ["yes", "no", "maybe"]}),
    ]
    return sampling(**{**common, **mixes[i % len(mixes)]})


def _record(output: Any) -> dict:
    def logprobs(entries):
        if entries is None:
            return None
        return [[[tid, repr(lp.logprob), lp.rank, lp.decoded_token] for tid, lp in entry.items()]
                for entry in entries]

    return {"id": output.request_id, "finished": output.finished, "error": output.error,
            "outputs": [[c.index, c.text, list(c.token_ids), repr(c.cumulative_logprob), logprobs(c.logprobs),
                         c.finish_reason, c.stop_reason] for c in output.outputs]}


def run(model_dir: Path, num_requests: int = 40) -> tuple[list[list[dict]], dict]:
    """Every step's outputs of the mixed run, and the engine's counts of preemptions and cached tokens."""
    from formwork.core import LLMEngine, RequestOutputKind, SamplingParams

    engine = LLMEngine(model_dir, block_size=4, max_num_seqs=12, max_num_batched_tokens=64, num_gpu_blocks=36)
    rng = random.Random(0)
    shared = [rng.randrange(3, engine.vocab_size) for _ in range(12)]
    prompts = []
    for i in range(num_requests):
        own = [rng.randrange(3, engine.vocab_size) for _ in range(rng.randint(1, 20))]
        prompts.append(shared + own if i % 4 == 0 else own)
    arrivals = {i: (0 if i < 10 else 2 * (i - 9)) for i in range(num_requests)}
    aborts = {6: "3", 15: "11", 30: "21"}  # 11: FINAL_ONLY, its text deferred  # step -> request aborted before it
    steps: list[list[dict]] = []
    so = engine.structured_output
    step = 0
    while step == 0 or engine.has_unfinished_requests() or any(a >= step for a in arrivals.values()):
        for i in [i for i, a in arrivals.items() if a == step]:
            engine.add_request(str(i), prompts[i], _params(i, RequestOutputKind, SamplingParams))
        outputs = []
        if step in aborts:
            aborted = engine.abort_request(aborts[step])
            if aborted is not None:
                outputs.append(_record(aborted))
        while any(not r.structured_output.future.done() for r in so._pending.values()):
            so.wait_for_grammars(1.0)  # the same step releases a grammar in every run
        outputs.extend(_record(o) for o in engine.step())
        steps.append(outputs)
        step += 1
    counts = {"preemptions": engine.metrics.num_preemptions,
              "prefix cache hit tokens": engine.metrics.prefix_cache_hits}
    return steps, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, help="write this run's step outputs here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two dumps")
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        for step, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"step {step} differs:\n  {x}\n  {y}")
                return 1
        if len(a) != len(b):
            print(f"different step counts: {len(a)} vs {len(b)}")
            return 1
        outputs = sum(map(len, a))
        print(f"identical: {len(a)} steps, {outputs} outputs")
        return 0
    torch.set_num_threads(1)
    from tiny_models import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        steps, counts = run(build_tiny_model(Path(tmp) / "model", "llama", seed=0, **MODEL_SHAPE))
    text = json.dumps(steps)
    if args.dump:
        args.dump.write_text(text)
    finished = sum(o["finished"] for s in steps for o in s)
    print(f"{len(steps)} steps, {sum(map(len, steps))} outputs, {finished} finished requests, {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

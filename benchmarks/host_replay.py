"""The engine's host work per decode step without the model (issue 23): a recorded run replayed.

    python benchmarks/host_replay.py [--requests 64] [--rounds 7] [--sync] [--deepseek]

The tiny model generates 64 JSON-schema documents (T=0.7, jump-forward off, FINAL_ONLY outputs, as
`step_phases.py --smoke`); then the same requests, and unconstrained ones of the same lengths, are replayed with
the forward replaced by nothing and the sampler by the recorded tokens, so `engine.step()` times schedule,
prepare, postprocess, mask fill and the async glue alone, in warm caches (on the CPU the real forward evicts
them). Prints the main thread's CPU time per running row per step (steps with at least half the requests
running; the median over rounds, and the sum over steps of each step's minimum over rounds: steadier on a
shared machine) and checks that every replay gives the recorded tokens. `--deepseek`: a one-layer model with the 129k DeepSeek vocabulary of the
GPU benchmarks (mask rows of 4,040 words instead of the tiny model's 13).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import gpu  # noqa: E402  (benchmarks/gpu.py: the schema)
from tiny_models import deepseek_tiny_model, tiny_model_dir  # noqa: E402

from formwork.core import LLMEngine, RequestOutputKind, SamplingParams  # noqa: E402
from formwork.core.sampler import SampledBatch  # noqa: E402


class Replay:
    """An engine whose forward does nothing and whose sampler hands out recorded tokens."""

    def __init__(self, requests: int, async_scheduling: bool, model: Path):
        self.engine = LLMEngine(model, max_num_seqs=requests, async_scheduling=async_scheduling,
                                enable_jump_forward=False)
        rng = random.Random(2)
        self.prompts = [[rng.randrange(3, self.engine.vocab_size) for _ in range(64)] for _ in range(requests)]
        self.tokens = [list(o.outputs[0].token_ids) for o in self._run("record", True)]
        self._tag = ""
        self.engine.runner.forward = lambda batch: None
        self.engine.sampler = _RecordedSampler(self)

    def params(self, i: int, constrained: bool) -> SamplingParams:
        return SamplingParams(temperature=0.7, seed=i, ignore_eos=not constrained,
                              max_tokens=64 if constrained else len(self.tokens[i]),
                              structured_outputs={"json": gpu.SCHEMA} if constrained else None,
                              output_kind=RequestOutputKind.FINAL_ONLY)

    def next_tokens(self, seqs) -> list[int]:
        """The recorded next token of each sequence (0 for a row whose sequence already finished)."""
        out = []
        for seq in seqs:
            recorded = self.tokens[int(seq.request_id[len(self._tag):])]
            out.append(recorded[seq.num_output_tokens] if seq.num_output_tokens < len(recorded) else 0)
        return out

    def _run(self, tag: str, constrained: bool, timed: list | None = None) -> list:
        engine = self.engine
        self._tag = tag
        for i, prompt in enumerate(self.prompts):
            engine.add_request(f"{tag}{i}", prompt_token_ids=prompt, params=self.params(i, constrained))
        while engine.structured_output.has_pending:  # every grammar ready before the first step
            engine.structured_output.wait_for_grammars(0.05)
            engine.structured_output.update_ready()
        finals, step = {}, 0
        while engine.has_unfinished_requests():
            running = len(engine.scheduler.running)
            start = time.thread_time()
            outputs = engine.step()
            spent = time.thread_time() - start
            if timed is not None and step > 1 and running >= len(self.prompts) // 2:
                timed.append((spent, running))
            finals.update((o.request_id, o) for o in outputs if o.finished)
            step += 1
        return [finals[f"{tag}{i}"] for i in range(len(self.prompts))]

    def round(self, tag: str, constrained: bool) -> list[tuple[float, int]]:
        """(host CPU seconds, running rows) of each timed step of one replay."""
        timed: list = []
        outputs = self._run(tag, constrained, timed=timed)
        if [list(o.outputs[0].token_ids) for o in outputs] != self.tokens:
            raise AssertionError("the replay's tokens differ from the recorded ones")
        return timed


class _RecordedSampler:
    """The sync engine's sampler: the recorded tokens (with the async path's `launch` too)."""

    def __init__(self, replay: Replay):
        self.replay = replay

    def launch(self, logits, seqs, bitmask=None, rows=None) -> SampledBatch:
        return SampledBatch.of_list(self.replay.next_tokens(seqs))

    def __call__(self, logits, seqs, bitmask=None, rows=None):
        return self.launch(logits, seqs).result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sync", action="store_true", help="async scheduling off")
    parser.add_argument("--deepseek", action="store_true", help="the 129k DeepSeek vocabulary")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="formwork-replay-") as tmp:
        model = deepseek_tiny_model(Path(tmp)) if args.deepseek else tiny_model_dir("llama", dtype=torch.bfloat16)
        replay = Replay(args.requests, not args.sync, model)
        print(f"| requests ({args.requests}, async scheduling {'off' if args.sync else 'on'}"
              f"{', DeepSeek vocabulary' if args.deepseek else ''}) | host us per row-step, median | sum of step minima |\n"
              "|---|---:|---:|")
        for label, constrained in (("JSON schema", True), ("unconstrained", False)):
            rounds = [replay.round(f"{label[0]}{r}-", constrained) for r in range(args.rounds)]
            rows = sum(n for _, n in rounds[0])
            per_round = [sum(s for s, _ in steps) / rows * 1e6 for steps in rounds]
            per_step_min = sum(min(times) for times in zip(*[[s for s, _ in steps] for steps in rounds])) / rows * 1e6
            print(f"| {label} | {statistics.median(per_round):.2f} | {per_step_min:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

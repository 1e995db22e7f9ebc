"""Where the host's time per engine step goes (issue 23): 64 JSON-schema requests and unconstrained requests of
the same output lengths, with async scheduling on and off, each step's host phases timed.

    python benchmarks/step_phases.py [--out benchmarks/results/step_phases.md]   # a CUDA GPU
    python benchmarks/step_phases.py --smoke [--requests 64] [--out FILE]        # tiny model, CPU

Same model, schema and sampling as `benchmarks/gpu.py`. Phases (median ms per step): schedule, prepare (the
packed inputs and their copy), forward launch (a decode graph's replay, or the eager model), wait + read
(the sampled tokens' copy to the host), postprocess (stop checks, text, grammar advance), fill (the grammar
bitmask), sampler launch, and the whole `step()`. With async scheduling the GPU runs step n's forward while
the host does the rest, so when "wait + read" is near zero the host, not the GPU, sets the step time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu  # noqa: E402  (benchmarks/gpu.py)

from formwork.core.sampler import SampledBatch  # noqa: E402

PHASES = ("schedule", "prepare", "forward launch", "wait + read", "postprocess", "fill", "sampler launch", "step")


class PhaseClock:
    """Times the engine's phases per step (wrapping its methods) into `steps`, one dict per step."""

    def __init__(self) -> None:
        self.current: dict[str, float] = {}
        self.steps: list[dict[str, float]] = []

    def wrap(self, owner, name: str, label: str) -> None:
        inner, current = getattr(owner, name), self.current

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                current[label] = current.get(label, 0.0) + time.perf_counter() - start
        setattr(owner, name, timed)

    def instrument(self, engine) -> None:
        self.wrap(engine.scheduler, "schedule", "schedule")
        self.wrap(engine.runner, "prepare_step", "prepare")
        self.wrap(engine.runner, "forward", "forward launch")
        self.wrap(engine, "_postprocess", "postprocess")
        self.wrap(engine.structured_output, "fill_bitmask", "fill")
        self.wrap(engine.sampler, "launch", "sampler launch")
        step = engine.step

        def timed_step():
            self.current.clear()
            start = time.perf_counter()
            try:
                return step()
            finally:
                self.current["step"] = time.perf_counter() - start
                self.steps.append(dict(self.current))
        engine.step = timed_step

    def medians_ms(self) -> dict[str, float]:
        return {phase: statistics.median(s.get(phase, 0.0) for s in self.steps) * 1e3 for phase in PHASES}


def _timed_result(clock: PhaseClock):
    result = SampledBatch.result

    def timed(batch: SampledBatch):
        start = time.perf_counter()
        try:
            return result(batch)
        finally:
            clock.current["wait + read"] = clock.current.get("wait + read", 0.0) + time.perf_counter() - start
    return result, timed


def run_pair(llm, clock: PhaseClock, prompts: list[list[int]], sizes: gpu.Sizes) -> dict[str, dict]:
    """Constrained requests, then unconstrained ones of the same lengths (each once to warm, once timed)."""
    from formwork.core import SamplingParams

    def run(lengths: list[int] | None):
        params = [SamplingParams(temperature=0.7, seed=i, ignore_eos=lengths is not None,
                                 max_tokens=sizes.constrained_max_tokens if lengths is None else lengths[i],
                                 structured_outputs={"json": gpu.SCHEMA} if lengths is None else None)
                  for i in range(len(prompts))]
        clock.steps.clear()
        outs = llm.generate(prompts, params, use_tqdm=False)
        tpots = [o.metrics.time_per_output_token for o in outs if o.metrics.time_per_output_token]
        return outs, dict(tpot_ms=statistics.mean(tpots) * 1e3, steps=len(clock.steps), **clock.medians_ms())

    warm, _ = run(None)
    run([len(o.outputs[0].token_ids) for o in warm])
    outs, constrained = run(None)
    _, free = run([len(o.outputs[0].token_ids) for o in outs])
    return {"constrained": constrained, "unconstrained": free}


def render(device_name: str, requests: int, rows: list[tuple[str, str, dict]]) -> str:
    lines = [f"# Host phases per engine step on {device_name}", "",
             f"`python benchmarks/step_phases.py`: {requests} JSON-schema requests at T=0.7, then unconstrained "
             "requests of the same output lengths; median ms per step of each phase (a step's phases need not add "
             f"up to its whole: glue between them is not timed). Measured "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}.", "",
             "| async scheduling | requests | TPOT ms | " + " | ".join(PHASES) + " |",
             "|---|---|---:|" + "---:|" * len(PHASES)]
    for overlap, kind, figures in rows:
        lines.append(f"| {overlap} | {kind} | {figures['tpot_ms']:.2f} | "
                     + " | ".join(f"{figures[phase]:.3f}" for phase in PHASES) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny model on the CPU")
    parser.add_argument("--requests", type=int, help="concurrent requests (default: 64, 8 with --smoke)")
    parser.add_argument("--out", default=str(gpu.REPO / "benchmarks" / "results" / "step_phases.md"))
    args = parser.parse_args(argv)
    device = gpu.device_or_refuse(args.smoke, "step_phases.py")
    if device is None:
        return 2
    sizes = gpu.Sizes(args.smoke)
    requests = args.requests or sizes.requests
    clock = PhaseClock()
    original, timed = _timed_result(clock)
    SampledBatch.result = timed
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="formwork-phases-") as tmp:
            model = gpu.build_tiny_model(Path(tmp) / "m") if args.smoke else gpu.build_big_model(Path(tmp) / "m", device)
            from transformers import AutoConfig

            from formwork.core import LLM

            vocab = AutoConfig.from_pretrained(model).vocab_size
            rng = random.Random(2)
            prompts = [[rng.randrange(3, vocab) for _ in range(64)] for _ in range(requests)]
            for overlap in (True, False):
                llm = LLM(model, device=device, max_num_seqs=requests, async_scheduling=overlap,
                          enable_jump_forward=False, **gpu.engine_options(args.smoke, 1))
                clock.instrument(llm.engine)
                for kind, figures in run_pair(llm, clock, prompts, sizes).items():
                    rows.append(("on" if overlap else "off", kind, figures))
                    print(f"async scheduling {'on' if overlap else 'off'}, {kind}: {figures}", flush=True)
                llm.close()
                del llm
                gpu._free_memory(device)
    finally:
        SampledBatch.result = original
    name = "CPU (smoke run)" if args.smoke else torch.cuda.get_device_name()
    gpu.report(render(name, requests, rows), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

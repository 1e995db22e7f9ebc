"""Where constrained decoding spends its time (issue 23): 64 JSON-schema requests vs unconstrained ones of the
same output lengths, with async scheduling, the threaded mask fill and jump-forward switched in turn, counting
the steps that replayed a CUDA graph and the steps that ran eagerly.

    python benchmarks/constrained_gpu.py [--out benchmarks/results/constrained_gpu.md]   # a CUDA GPU
    python benchmarks/constrained_gpu.py --smoke [--out FILE]                           # tiny model, CPU

Same model, schema and sampling as `benchmarks/gpu.py` (random 1.24B Llama, DeepSeek vocabulary, bf16,
T=0.7). A step is "eager" when some row has several new tokens (a prefill chunk, or a jump-forward's forced
tokens), which takes the whole step off its decode graph.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu  # noqa: E402  (benchmarks/gpu.py)

CASES = (("defaults: async scheduling, inline fill", dict(enable_jump_forward=False, overlap_mask_fill=False)),
         ("async scheduling off", dict(async_scheduling=False, enable_jump_forward=False, overlap_mask_fill=False)),
         ("async scheduling off, threaded fill",
          dict(async_scheduling=False, enable_jump_forward=False, overlap_mask_fill=True)),
         ("jump-forward on (async scheduling off)", dict(enable_jump_forward=True, overlap_mask_fill=False)))


def count_steps(llm) -> dict[str, list[int]]:
    """Wrap the runner's forward: per kind of step (graph/eager), [steps, tokens]."""
    runner, counts = llm.engine.runner, {"graph": [0, 0], "eager": [0, 0]}
    forward = runner.forward

    def counted(batch):
        kind = "graph" if batch.decode_bucket is not None and runner.graphs is not None else "eager"
        counts[kind][0] += 1
        counts[kind][1] += int(batch.input_ids.shape[0])
        return forward(batch)

    runner.forward = counted
    return counts


def run_case(model: Path, sizes: gpu.Sizes, device: str, smoke: bool, options: dict) -> dict:
    from transformers import AutoConfig

    from formwork.core import LLM

    vocab = AutoConfig.from_pretrained(model).vocab_size
    llm = LLM(model, device=device, max_num_seqs=sizes.requests, **options, **gpu.engine_options(smoke, 1))
    try:
        counts = count_steps(llm)
        gpu.constrained_figures(llm, sizes, vocab)  # warm: the grammar compiled, every shape seen
        for kind in counts.values():
            kind[:] = [0, 0]
        start = time.perf_counter()
        figures = gpu.constrained_figures(llm, sizes, vocab)
        figures["wall_s"] = time.perf_counter() - start
        figures["steps"] = {kind: tuple(value) for kind, value in counts.items()}
        return figures
    finally:
        llm.close()


def render(device_name: str, requests: int, rows: list[tuple[str, dict]]) -> str:
    lines = [f"# Constrained decoding on {device_name}", "",
             f"`python benchmarks/constrained_gpu.py`: {requests} JSON-schema requests at T=0.7 vs unconstrained "
             "requests of the same output lengths, each pair twice (the second timed; the step counts cover "
             "both runs of the timed pair). Measured "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}.", "",
             "| engine options | constrained TPOT | unconstrained TPOT | ratio | graph steps (tokens) | eager steps "
             "(tokens) | valid |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, f in rows:
        graph, eager = f["steps"]["graph"], f["steps"]["eager"]
        lines.append(f"| {name} | {f['tpot_ms']:.2f} ms | {f['free_tpot_ms']:.2f} ms | {f['ratio']:.3f}x | "
                     f"{graph[0]} ({graph[1]}) | {eager[0]} ({eager[1]}) | {f['valid']}/{f['finished']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny model on the CPU")
    parser.add_argument("--out", default=str(gpu.REPO / "benchmarks" / "results" / "constrained_gpu.md"))
    args = parser.parse_args(argv)
    device = gpu.device_or_refuse(args.smoke, "constrained_gpu.py")
    if device is None:
        return 2
    sizes = gpu.Sizes(args.smoke)
    with tempfile.TemporaryDirectory(prefix="formwork-constrained-") as tmp:
        model = gpu.build_tiny_model(Path(tmp) / "m") if args.smoke else gpu.build_big_model(Path(tmp) / "m", device)
        rows = []
        for name, options in CASES:
            rows.append((name, run_case(model, sizes, device, args.smoke, options)))
            print(f"{name}: {rows[-1][1]}", flush=True)
    gpu.report(render("CPU (smoke run)" if args.smoke else torch.cuda.get_device_name(), sizes.requests, rows),
               args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

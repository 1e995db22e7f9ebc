"""Split-row sampler (kernels/triton/sampling_split.py) against the one-program-per-row kernel
(kernels/triton/sampling.py) on a CUDA GPU, issue 23's shape (64 x 129,280 logits, random bitmask):
per case, the sampled tokens of both kernels and of the torch reference (must be equal) and each kernel's
median ms (CUDA events, alternating calls of the two kernels).

    python benchmarks/sample_split_gpu.py [--out benchmarks/results/sample_split.md] [--chunks 2048 4096 8192]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from formwork.kernels import SamplingTensors, reference
from formwork.kernels.launch import SAMPLE_CHUNK
from formwork.kernels.triton import sampling, sampling_split

ROWS, VOCAB = 64, 129280


def _params(temperature, top_k, top_p, min_p, device) -> SamplingTensors:
    def column(value):
        return list(value) if isinstance(value, list) else [value] * ROWS
    return SamplingTensors.from_lists(column(temperature), column(top_k), column(top_p), column(min_p),
                                      list(range(ROWS)), [5] * ROWS, device=device)


def cases(device: str) -> list[tuple[str, torch.Tensor, SamplingTensors, bool]]:
    """(name, logits, params, timed) per case; untimed ones check tokens only."""
    gen = torch.Generator(device=device).manual_seed(0)
    logits = torch.randn(ROWS, VOCAB, device=device, generator=gen) * 4
    ties = logits.round()  # integer logits: many ties at the top-k / top-p thresholds
    mixed = ([0.0, 0.7, 0.8, 1.0] * 16, [0, 0, 50, 20, 128, 200, 0, 64] * 8, [1.0, 0.9, 0.95, 1.0] * 16,
             [0.0, 0.0, 0.05, 0.1] * 16)
    return [
        ("greedy", logits, _params(0.0, 0, 1.0, 0.0, device), True),
        ("T=0.7", logits, _params(0.7, 0, 1.0, 0.0, device), True),
        ("T=0.8 top-k 50 top-p 0.9", logits, _params(0.8, 50, 0.9, 0.0, device), True),
        ("T=1 min-p 0.1", logits, _params(1.0, 0, 1.0, 0.1, device), True),
        ("T=0.8 top-k 128 top-p 0.95 min-p 0.05", logits, _params(0.8, 128, 0.95, 0.05, device), True),
        ("T=0.8 top-p 0.9 (streamed)", logits, _params(0.8, 0, 0.9, 0.0, device), True),
        ("mixed rows", logits, _params(*mixed, device), True),
        ("bf16 T=0.8 top-k 50 top-p 0.9", logits.bfloat16(), _params(0.8, 50, 0.9, 0.0, device), False),
        ("integer logits top-k 50 top-p 0.9", ties, _params(0.8, 50, 0.9, 0.0, device), False),
        ("integer logits top-k 1, 128", ties, _params(1.0, [1, 128] * 32, 1.0, 0.0, device), False),
        ("integer logits mixed", ties, _params(*mixed, device), False),
    ]


def _median_ms(calls, repeats: int) -> list[float]:
    """Median ms of each call, the calls alternating within each repeat."""
    for call in calls:
        call()
    torch.cuda.synchronize()
    samples = [[] for _ in calls]
    for _ in range(repeats):
        for call, times in zip(calls, samples):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return [statistics.median(times) for times in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--chunks", type=int, nargs="+", default=[SAMPLE_CHUNK])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    device = "cuda"
    bitmask = torch.randint(-2**31, 2**31 - 1, (ROWS, -(-VOCAB // 32)), dtype=torch.int32, device=device,
                            generator=torch.Generator(device=device).manual_seed(1))
    header = ["case", "mask", "split's tokens equal to old's / reference's, per chunk", "old ms"] + [f"split ms (chunk {c})" for c in args.chunks]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, logits, params, timed in cases(device):
        for mask in (bitmask, None):
            old_tokens, _ = sampling.sample(logits, params, mask)
            ref_tokens, ref_logprobs = reference.sample(logits, params, mask)
            agree = []
            for chunk in args.chunks:
                tokens, logprobs = sampling_split.sample(logits, params, mask, chunk=chunk)
                same = int((tokens == old_tokens).sum()), int((tokens == ref_tokens).sum())
                error = (logprobs - ref_logprobs).abs().nan_to_num(0.0).max().item()
                agree.append(f"{same[0]}/{same[1]} of {ROWS} (logprob err {error:.1e})")
            times = ["-"] * (1 + len(args.chunks))
            if timed:
                calls = [lambda: sampling.sample(logits, params, mask)]
                calls += [lambda c=c: sampling_split.sample(logits, params, mask, chunk=c) for c in args.chunks]
                times = [f"{ms:.3f}" for ms in _median_ms(calls, args.repeats)]
            row = [name, "yes" if mask is not None else "no", "; ".join(agree)] + times
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(f"\n{torch.cuda.get_device_name()}\n{table}")
    if args.out:
        args.out.write_text(f"# Split-row sampler vs one program per row ({torch.cuda.get_device_name()})\n\n"
                            f"{table}\n")


if __name__ == "__main__":
    main()

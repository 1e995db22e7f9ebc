"""Time the torch reference sampler (`formwork.kernels.reference.sample`, the engine's CPU path).

Matrix: vocab 129280 / 32000, batch 1 / 8 / 32, temperature 0.7 / 1.0, with and without top-p 0.9, with
and without a random 50% bitmask. Logits are N(0, 4^2) (every token is within ~20 nats of the max, the
worst case for Gumbel-max noise pruning). Prints a markdown table of the median thread-CPU milliseconds per
call (steadier than wall time on a shared machine).

    python benchmarks/sampling_cpu.py [--repeats N] [--vocab V ...] [--batch B ...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import torch

from formwork.kernels import SamplingTensors, reference


def time_call(fn, repeats: int) -> float:
    """Median thread-CPU milliseconds per call after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        samples.append((time.thread_time() - start) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vocab", type=int, nargs="+", default=[129280, 32000])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    lines = ["| vocab | batch | temperature | top-p | bitmask | ms / call | ms / row |",
             "|---:|---:|---:|---:|---|---:|---:|"]
    for vocab, batch in itertools.product(args.vocab, args.batch):
        gen = torch.Generator().manual_seed(vocab + batch)
        logits = torch.randn(batch, vocab, generator=gen) * 4
        bitmask = torch.randint(-2**31, 2**31 - 1, (batch, -(-vocab // 32)), dtype=torch.int32, generator=gen)
        for temperature, top_p, masked in itertools.product([0.7, 1.0], [1.0, 0.9], [False, True]):
            params = SamplingTensors.from_lists([temperature] * batch, [0] * batch, [top_p] * batch, [0.0] * batch,
                                                list(range(batch)), [5] * batch)
            mask = bitmask if masked else None
            ms = time_call(lambda: reference.sample(logits, params, mask), args.repeats)
            lines.append(f"| {vocab} | {batch} | {temperature} | {top_p} | {'50%' if masked else '-'} | "
                         f"{ms:.2f} | {ms / batch:.3f} |")
            print(lines[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

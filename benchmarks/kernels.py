"""Time each formwork kernel against its torch twin.

On a CUDA GPU: the Triton kernel (through `formwork.kernels` dispatch) vs the torch reference, timed with
CUDA events (median of repeated runs after warm-up), plus the max difference between the two outputs.
Without a GPU it says so, times the torch twins on the CPU (smaller shapes, the engine's CPU path) and
exits 0.

    python benchmarks/kernels.py [--repeats N] [--threads N] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from formwork.kernels import SamplingTensors, reference
from formwork.kernels import dispatch


@dataclass
class Case:
    kernel: str
    shape: str
    run_torch: Callable[[], object]
    run_triton: Callable[[], object]


def _paged_inputs(device, dtype, query_lens, ctx_lens, heads=32, kv_heads=8, head_dim=128, block_size=16):
    """Random paged attention inputs with shuffled blocks (KV already written)."""
    blocks_per_seq = [-(-c // block_size) for c in ctx_lens]
    num_blocks = sum(blocks_per_seq)
    perm = torch.randperm(num_blocks, device=device).to(torch.int32)
    k_cache = torch.randn(num_blocks, block_size, kv_heads, head_dim, device=device, dtype=dtype)
    v_cache = torch.randn_like(k_cache)
    tables = torch.zeros(len(ctx_lens), max(blocks_per_seq), dtype=torch.int32, device=device)
    cursor = 0
    for seq, n in enumerate(blocks_per_seq):
        tables[seq, :n] = perm[cursor:cursor + n]
        cursor += n
    starts = [0]
    for q in query_lens:
        starts.append(starts[-1] + q)
    query = torch.randn(starts[-1], heads, head_dim, device=device, dtype=dtype)
    seq_lens = torch.tensor(ctx_lens, dtype=torch.int32, device=device)
    start_loc = torch.tensor(starts, dtype=torch.int32, device=device)
    return (query, k_cache, v_cache, tables, seq_lens, start_loc, head_dim ** -0.5)


def _attention_case(name, device, dtype, query_lens, ctx_lens, window=None, heads=32, kv_heads=8,
                    head_dim=128) -> Case:
    args = _paged_inputs(device, dtype, query_lens, ctx_lens, heads, kv_heads, head_dim)
    shape = f"{len(ctx_lens)} seqs, q={sum(query_lens)}, ctx<={max(ctx_lens)}, {heads}/{kv_heads} heads, d={head_dim}"
    if window:
        shape += f", window {window}"
    return Case(name, shape, lambda: reference.paged_attention(*args, window),
                lambda: dispatch.paged_attention(*args, window))


def _kv_write_case(device, dtype, tokens) -> Case:
    key = torch.randn(tokens, 8, 128, device=device, dtype=dtype)
    value = torch.randn_like(key)
    k_cache = torch.zeros(tokens // 16 + 1, 16, 8, 128, device=device, dtype=dtype)
    v_cache = torch.zeros_like(k_cache)
    slots = torch.randperm(k_cache.shape[0] * 16, device=device)[:tokens]
    args = (key, value, k_cache, v_cache, slots)
    return Case("write_kv_cache", f"{tokens} tokens, 8 kv heads, d=128", lambda: reference.write_kv_cache(*args),
                lambda: dispatch.write_kv_cache(*args))


def _bitmask_case(device, rows, vocab) -> Case:
    logits = torch.randn(rows, vocab, device=device)
    bitmask = torch.randint(-2**31, 2**31 - 1, (rows, -(-vocab // 32)), dtype=torch.int32, device=device)
    indices = torch.arange(0, rows, 2, device=device)
    return Case("apply_token_bitmask", f"{rows}x{vocab}, every other row",
                lambda: reference.apply_token_bitmask(logits, bitmask, indices),
                lambda: dispatch.apply_token_bitmask(logits, bitmask, indices))


def _sample_case(device, rows, vocab, label, temperature, top_k, top_p) -> Case:
    logits = torch.randn(rows, vocab, device=device) * 4
    bitmask = torch.randint(-2**31, 2**31 - 1, (rows, -(-vocab // 32)), dtype=torch.int32, device=device)
    params = SamplingTensors.from_lists([temperature] * rows, [top_k] * rows, [top_p] * rows, [0.0] * rows,
                                        list(range(rows)), [5] * rows, device=device)
    return Case("sample", f"{rows}x{vocab} masked, {label}", lambda: reference.sample(logits, params, bitmask),
                lambda: dispatch.sample(logits, params, bitmask))


def build_cases(device: str) -> list[Case]:
    gpu = device == "cuda"
    dtype = torch.bfloat16 if gpu else torch.float32
    decode_batch, decode_ctx = (64, 1024) if gpu else (8, 512)
    long_ctx = 16384 if gpu else 4096
    prefill = 512 if gpu else 128
    rows, vocab = (64, 128256) if gpu else (8, 32000)
    return [
        _kv_write_case(device, dtype, 4096 if gpu else 512),
        _attention_case("paged_attention decode", device, dtype, [1] * decode_batch, [decode_ctx] * decode_batch),
        _attention_case("paged_attention decode split-KV", device, dtype, [1, 1], [long_ctx, long_ctx // 2]),
        _attention_case("paged_attention prefill", device, dtype, [prefill] * 4, [prefill] * 4),
        _attention_case("paged_attention chunked prefill", device, dtype, [prefill // 2] * 2, [2 * prefill] * 2),
        _attention_case("paged_attention sliding window", device, dtype, [prefill] * 2, [prefill] * 2, window=128),
        # the shape of benchmarks/engine.py's tiny model: 64 running sequences of mixed lengths
        _attention_case("paged_attention decode, engine-bench model", device, dtype, [1] * 64,
                        [16 + (37 * i) % 497 for i in range(64)], heads=4, kv_heads=2, head_dim=64),
        _bitmask_case(device, rows, vocab),
        _sample_case(device, rows, vocab, "greedy", 0.0, 0, 1.0),
        _sample_case(device, rows, vocab, "T=0.8", 0.8, 0, 1.0),
        _sample_case(device, rows, vocab, "T=0.8 top-k 50 top-p 0.9", 0.8, 50, 0.9),
        _sample_case(device, rows, vocab, "T=0.8 top-p 0.9", 0.8, 0, 0.9),
        _sample_case(device, rows, vocab, "T=1.0 top-p 0.95", 1.0, 0, 0.95),
    ]


def time_cuda(fn: Callable[[], object], repeats: int) -> float:
    """Median milliseconds per call with CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def time_cpu(fn: Callable[[], object], repeats: int) -> float:
    """Median milliseconds per call with a wall clock."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _max_diff(a: object, b: object) -> str:
    if isinstance(a, tuple):  # sample: (tokens, logprobs)
        same = torch.equal(a[0], b[0])
        return "tokens equal" if same else f"tokens differ in {(a[0] != b[0]).sum().item()} rows"
    if isinstance(a, torch.Tensor):
        return f"{(a.float() - b.float()).abs().max().item():.2e}"
    return "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: oversubscribed threads distort CPU timings)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.environ.pop(dispatch.BACKEND_ENV, None)
    lines = []
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}; Triton vs torch twin, CUDA events, median of {args.repeats}")
        lines += ["| kernel | shape | torch ms | triton ms | speedup | max diff |", "|---|---|---:|---:|---:|---|"]
        for case in build_cases("cuda"):
            torch_ms = time_cuda(case.run_torch, args.repeats)
            triton_ms = time_cuda(case.run_triton, args.repeats)
            diff = _max_diff(case.run_torch(), case.run_triton())
            lines.append(f"| {case.kernel} | {case.shape} | {torch_ms:.3f} | {triton_ms:.3f} | "
                         f"{torch_ms / triton_ms:.1f}x | {diff} |")
    else:
        print("No CUDA GPU found: the Triton kernels cannot be timed here. Timing the torch twins on the CPU "
              f"({torch.get_num_threads()} threads), median of {args.repeats}.")
        lines += ["| kernel | shape | torch CPU ms |", "|---|---|---:|"]
        for case in build_cases("cpu"):
            lines.append(f"| {case.kernel} | {case.shape} | {time_cpu(case.run_torch, args.repeats):.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

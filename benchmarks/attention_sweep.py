"""Sweep the Triton paged-attention launch (KV tile, warps, pipeline stages, split heuristic) at the
issue-23 shapes, each output checked against the torch reference.

    python benchmarks/attention_sweep.py [--out benchmarks/results/attention_sweep.md] [--budget-s 240]
    python benchmarks/attention_sweep.py --smoke      # tiny shapes on the CPU under TRITON_INTERPRET=1

Decode shapes (64 x 1,024 tokens; 2 x 16k/8k tokens, bf16, 32/8 heads, d=128, 16-token pages) run in two
stages: KV tile x warps x stages at the current split setting, then split settings on the tile config
best over both shapes (geometric mean of time / best time). A prefill shape runs prefill tile x warps x
stages. Decode rows give the achieved bandwidth (the KV bytes it must read / its time) as a share of a
measured device copy bandwidth; prefill rows give TFLOP/s. The last lines name the best config per shape
and a `FORMWORK_ATTENTION_LAUNCH` value combining them. Configs whose effective launch (after the
shared-memory fit) repeats an earlier one are not timed twice. Timing on CUDA, medians: CUDA-graph
replay (triton.testing.do_bench_cudagraph: GPU time, as the engine's decode graphs run it) and plain
calls (triton.testing.do_bench, L2 flushed: adds the Python wrapper's launch cost, as benchmarks/gpu.py
times it); a wall clock under the interpreter.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if "--smoke" in sys.argv:  # must precede the first triton import
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_kernels import copy_bandwidth, kernel_bench  # noqa: E402  (benchmarks/gpu_kernels.py)

from formwork.kernels import reference  # noqa: E402
from formwork.kernels.attention_tuning import AttentionTuning  # noqa: E402
from formwork.kernels.launch import attention_launch  # noqa: E402

# The launch before this sweep existed: 16-position tiles, Triton's default 4 warps and 3 stages, and
# splits only for grids of <= 128 programs, up to 16 of them (these two shapes split as it did).
BASELINE = AttentionTuning(kv_tile=16, num_warps=4, num_stages=3, prefill_kv_tile=16, prefill_num_warps=4,
                           prefill_num_stages=3, split_target_programs=256, max_splits=16)
PREFILL_MAX_TILE, PREFILL_MAX_STAGES = 64, 3  # 64 query rows x 128-position tiles would be compute-heavy
SPLIT_SETTINGS = [(1, 64), (1024, 64), (2048, 64), (4096, 64), (1024, 16), (1024, 32), (4096, 128)]


@dataclass
class Shape:
    name: str
    decode: bool
    args: tuple                 # paged_attention's positional arguments
    nbytes: int                 # KV bytes a decode call must read
    flops: int                  # multiply-adds * 2 of a prefill call
    expected: torch.Tensor


@dataclass
class Row:
    shape: str
    label: str
    tuning: AttentionTuning
    launch: str
    ms: float                   # CUDA-graph replay: GPU time (the engine replays decode graphs)
    eager_ms: float             # plain calls: also the Python wrapper's launch cost, as benchmarks/gpu.py times
    max_diff: float
    error: str = ""


def make_shape(name: str, device: str, dtype: torch.dtype, query_lens: list[int], ctx_lens: list[int],
               heads: int, kv_heads: int, head_dim: int) -> Shape:
    args = kernel_bench._paged_inputs(device, dtype, query_lens, ctx_lens, heads, kv_heads, head_dim)
    elt = torch.finfo(dtype).bits // 8
    nbytes = sum(ctx_lens) * kv_heads * head_dim * 2 * elt
    pairs = sum(q * (c - q) + q * (q + 1) // 2 for q, c in zip(query_lens, ctx_lens))  # causal (query, key)
    flops = 4 * pairs * heads * head_dim
    decode = all(q == 1 for q in query_lens)
    return Shape(name, decode, args, nbytes, flops, reference.paged_attention(*args))


def shapes(device: str, smoke: bool) -> list[Shape]:
    if smoke:
        return [make_shape("decode 2 x 40", device, torch.float32, [1, 1], [40, 40], 4, 2, 16),
                make_shape("split-KV decode 1 x 256", device, torch.float32, [1], [256], 4, 2, 16),
                make_shape("prefill 1 x 20", device, torch.float32, [20], [20], 4, 2, 16)]
    return [make_shape("decode 64 x 1024", device, torch.bfloat16, [1] * 64, [1024] * 64, 32, 8, 128),
            make_shape("split-KV decode 2 x 16384/8192", device, torch.bfloat16, [1, 1], [16384, 8192], 32, 8, 128),
            make_shape("prefill 4 x 512", device, torch.bfloat16, [512] * 4, [512] * 4, 32, 8, 128)]


def timers(device: str) -> tuple[Callable[[Callable[[], object]], float], Callable[[Callable[[], object]], float]]:
    """(graph-replay timer, eager timer) in milliseconds; both the wall clock under the interpreter."""
    if device == "cuda":
        import triton.testing

        return (lambda fn: triton.testing.do_bench_cudagraph(fn, rep=25, return_mode="median"),
                lambda fn: triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median"))
    wall = lambda fn: kernel_bench.time_cpu(fn, repeats=1)  # noqa: E731
    return wall, wall


class Sweep:
    """Times configs on shapes, skipping repeated effective launches and anything past the budget."""

    def __init__(self, device: str, budget_s: float) -> None:
        from formwork.kernels.triton import attention

        self.kernel = attention.paged_attention
        self.time_graph, self.time_eager = timers(device)
        self.eager = device == "cuda"
        self.deadline = time.monotonic() + budget_s
        self.rows: list[Row] = []
        self.seen: dict[tuple[str, str], Row] = {}
        self.skipped = 0

    def run(self, shape: Shape, label: str, tuning: AttentionTuning) -> Row | None:
        query, k_cache, _, block_tables = shape.args[:4]
        launch = attention_launch(query, k_cache, block_tables, tuning=tuning)
        described = (f"tile {launch.kv_tile}, {launch.num_warps} warps, {launch.num_stages} stages, "
                     f"{launch.num_splits} splits")
        if (shape.name, described) in self.seen:
            return self.seen[shape.name, described]
        if time.monotonic() > self.deadline:
            self.skipped += 1
            return None
        call = lambda: self.kernel(*shape.args, tuning=tuning)  # noqa: E731
        try:
            diff = (call().float() - shape.expected.float()).abs().max().item()
            ms = self.time_graph(call)
            row = Row(shape.name, label, tuning, described, ms, self.time_eager(call) if self.eager else ms, diff)
        except Exception as error:  # a config that does not compile (e.g. shared memory) is reported, not fatal
            row = Row(shape.name, label, tuning, described, math.inf, math.inf, math.inf,
                      str(error).splitlines()[0][:80])
        self.rows.append(row)
        self.seen[shape.name, described] = row
        return row


def tile_grid(tiles: list[int], warps: list[int], stages: list[int], prefill: bool,
              base: AttentionTuning) -> list[tuple[str, AttentionTuning]]:
    grid = []
    for tile in tiles:
        for warp in warps:
            for stage in stages:
                if prefill:
                    tuning = dataclasses.replace(base, prefill_kv_tile=tile, prefill_num_warps=warp,
                                                 prefill_num_stages=stage)
                else:
                    tuning = dataclasses.replace(base, kv_tile=tile, num_warps=warp, num_stages=stage)
                grid.append((f"tile {tile} / {warp} warps / {stage} stages", tuning))
    return grid


def best_over(sweep: Sweep, decode_shapes: list[Shape], grid: list[tuple[str, AttentionTuning]]
              ) -> AttentionTuning:
    """Run `grid` on every decode shape; the config with the least geometric mean of time / best time."""
    results: dict[str, list[Row | None]] = {label: [sweep.run(shape, label, tuning) for shape in decode_shapes]
                                            for label, tuning in grid}
    best_ms = [min((r[i].ms for r in results.values() if r[i] and not r[i].error), default=math.inf)
               for i in range(len(decode_shapes))]

    def score(rows: list[Row | None]) -> float:
        if any(row is None or row.error or row.max_diff > TOLERANCE for row in rows):
            return math.inf
        return math.prod(row.ms / best for row, best in zip(rows, best_ms))

    label = min(results, key=lambda name: score(results[name]))
    return dict(grid)[label]


TOLERANCE = 3e-2  # bf16 output vs the float32-accumulating reference (one to two ulps)
DTYPE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: TOLERANCE}
# (dtype, query lens, context lens, heads, kv heads, head_dim, block size, window): ragged edge cases
EDGE_CASES = [
    (torch.float16, [1, 20, 7], [150, 20, 90], 6, 3, 24, 5, 33),       # mixed batch, padded dims, window
    (torch.float32, [1, 1, 1], [300, 37, 129], 8, 2, 32, 16, None),   # decode with splits, partial pages
    (torch.bfloat16, [40, 1], [100, 70], 4, 1, 128, 32, None),        # chunked prefill, MQA, 32-token pages
]


def edge_case_lines(device: str, tiles: list[int]) -> list[str]:
    """Each edge case at each KV tile (decode and prefill tile alike) against the torch reference."""
    from formwork.kernels.triton import attention

    lines = []
    for dtype, query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, window in EDGE_CASES:
        args = kernel_bench._paged_inputs(device, dtype, query_lens, ctx_lens, heads, kv_heads, head_dim,
                                          block_size) + (window,)
        expected = reference.paged_attention(*args).float()
        for tile in tiles:
            tuning = AttentionTuning(kv_tile=tile, prefill_kv_tile=tile)
            diff = (attention.paged_attention(*args, tuning=tuning).float() - expected).abs().max().item()
            verdict = "ok" if diff <= DTYPE_TOLERANCE[dtype] else "WRONG"
            lines.append(f"edge case {str(dtype)[6:]} q={query_lens} ctx={ctx_lens} {heads}/{kv_heads} heads "
                         f"d={head_dim} pages of {block_size} window {window}, tile {tile}: "
                         f"max diff {diff:.1e} {verdict}")
    return lines


def report(sweep: Sweep, shape_list: list[Shape], copy_bw: float, best_decode: AttentionTuning,
           best_prefill: AttentionTuning) -> list[str]:
    lines = [f"Device copy bandwidth (read + write): {copy_bw / 1e12:.2f} TB/s", "",
             "ms: CUDA-graph replay (GPU time); eager ms: plain calls (adds the Python launch cost)", "",
             "| shape | config | launch | ms | achieved | eager ms | max diff |", "|---|---|---|---:|---:|---:|---:|"]
    by_shape = {shape.name: shape for shape in shape_list}
    for row in sweep.rows:
        shape = by_shape[row.shape]
        if row.error:
            lines.append(f"| {row.shape} | {row.label} | {row.launch} | error | {row.error} | - | - |")
            continue
        if shape.decode:
            rate = shape.nbytes / (row.ms / 1e3)
            achieved = f"{rate / 1e9:.0f} GB/s = {100 * rate / copy_bw:.0f}%"
        else:
            achieved = f"{shape.flops / (row.ms / 1e3) / 1e12:.1f} TFLOP/s"
        flag = "" if row.max_diff <= TOLERANCE else " WRONG"
        lines.append(f"| {row.shape} | {row.label} | {row.launch} | {row.ms:.4f} | {achieved} | "
                     f"{row.eager_ms:.4f} | {row.max_diff:.1e}{flag} |")
    lines.append("")
    for shape in shape_list:
        good = [r for r in sweep.rows if r.shape == shape.name and not r.error and r.max_diff <= TOLERANCE]
        base = next((r for r in good if r.label == "baseline"), None)
        if good:
            best = min(good, key=lambda r: r.ms)
            versus = f" ({base.ms / best.ms:.2f}x the baseline's {base.ms:.4f} ms)" if base else ""
            lines.append(f"best for {shape.name}: {best.label}: {best.launch}, {best.ms:.4f} ms{versus}")
    combined = dataclasses.replace(best_decode, prefill_kv_tile=best_prefill.prefill_kv_tile,
                                   prefill_num_warps=best_prefill.prefill_num_warps,
                                   prefill_num_stages=best_prefill.prefill_num_stages)
    env = ",".join(f"{f.name}={getattr(combined, f.name)}" for f in dataclasses.fields(combined))
    lines.append(f'suggested: FORMWORK_ATTENTION_LAUNCH="{env}"')
    if sweep.skipped:
        lines.append(f"{sweep.skipped} configs skipped: past the time budget")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU under TRITON_INTERPRET=1")
    parser.add_argument("--out", help="also write the table to this markdown file")
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop timing new configs after this")
    parser.add_argument("--tiles", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--warps", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3, 4])
    args = parser.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        print("attention_sweep.py needs a CUDA GPU (or --smoke for the interpreter on the CPU)", file=sys.stderr)
        return 2
    if args.smoke:
        args.tiles, args.warps, args.stages = [16, 64], [4], [1]
    device = "cpu" if args.smoke else "cuda"
    torch.manual_seed(0)
    started = time.monotonic()
    copy_bw = copy_bandwidth(device, (16 << 20) if args.smoke else (1 << 30))
    shape_list = shapes(device, args.smoke)
    decode_shapes = [shape for shape in shape_list if shape.decode]
    sweep = Sweep(device, args.budget_s)
    for shape in shape_list:
        sweep.run(shape, "baseline", BASELINE)
        sweep.run(shape, "defaults", AttentionTuning())
    # stage 1: tiles x warps x stages at the default split setting; stage 2: split settings on the best
    best_tile = best_over(sweep, decode_shapes, tile_grid(args.tiles, args.warps, args.stages, False,
                                                          AttentionTuning()))
    split_grid = [(f"split target {target} / max {most}",
                   dataclasses.replace(best_tile, split_target_programs=target, max_splits=most))
                  for target, most in SPLIT_SETTINGS]
    best_decode = best_over(sweep, decode_shapes, split_grid)
    prefill_tiles = [tile for tile in args.tiles if tile <= PREFILL_MAX_TILE]
    prefill_stages = [stage for stage in args.stages if stage <= PREFILL_MAX_STAGES]
    for label, tuning in tile_grid(prefill_tiles, args.warps, prefill_stages, True, AttentionTuning()):
        for shape in shape_list:
            if not shape.decode:
                sweep.run(shape, f"prefill {label}", tuning)
    prefill_names = {shape.name for shape in shape_list if not shape.decode}
    good = [row for row in sweep.rows if row.shape in prefill_names and not row.error and row.max_diff <= TOLERANCE]
    best_prefill = min(good, key=lambda row: row.ms).tuning if good else AttentionTuning()
    lines = report(sweep, shape_list, copy_bw, best_decode, best_prefill)
    lines += ["", *edge_case_lines(device, args.tiles)]
    device_name = torch.cuda.get_device_name() if device == "cuda" else "CPU (TRITON_INTERPRET=1)"
    lines.insert(0, f"Paged-attention launch sweep on {device_name}, {time.monotonic() - started:.0f} s")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

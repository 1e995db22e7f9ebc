"""Fused elementwise kernels (issue 23): RMSNorm (+ residual add), SiLU-and-mul and rotary, Triton vs their
torch twins (agreement and time per call), then batch-1 TPOT and 64-request throughput of the random 1.24B
Llama with the fused kernels against the same engine with the torch twins patched in.

    python benchmarks/fused_elementwise.py [--out benchmarks/results/fused_elementwise.md]   # CUDA GPU
    python benchmarks/fused_elementwise.py --smoke --out FILE    # CPU: interpreted Triton, tiny shapes, no model

The twins side of the model A/B is not exactly the code before the fused kernels: its rotary copies q/k back
in place. Both sides read cos/sin tables made by torch once per step (`kernels.rotary_tables`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if "--smoke" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from gpu_kernels import kernel_bench, load_sibling  # noqa: E402

from formwork.kernels import reference  # noqa: E402
from formwork.kernels.triton import activation, norm, rotary  # noqa: E402


def _qk_views(qkv: torch.Tensor, heads: int, kv_heads: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = qkv.shape[0]
    return (qkv[:, :heads * dim].view(tokens, heads, dim),
            qkv[:, heads * dim:(heads + kv_heads) * dim].view(tokens, kv_heads, dim))


def kernel_rows(device: str, smoke: bool) -> list[tuple]:
    """(case, max |triton - twin|, share of elements not bitwise equal, triton ms, twin ms) per case."""
    gen = torch.Generator(device=device).manual_seed(0)
    hidden, inter, (heads, kv_heads, dim) = (256, 512, (4, 2, 32)) if smoke else (2048, 8192, (32, 8, 128))
    timer = (lambda fn: kernel_bench.time_cpu(fn, 2)) if smoke else (lambda fn: kernel_bench.time_cuda(fn, 50))
    rows = []

    def row(name, fused, twin, out, expected):
        diff = (out.float() - expected.float()).abs()
        rows.append((name, float(diff.max()), float((diff != 0).float().mean()), timer(fused), timer(twin)))

    for dtype in (torch.bfloat16, torch.float32):
        for tokens in (1, 64):
            x, residual = (torch.randn(2, tokens, hidden, device=device, generator=gen) * 2).to(dtype)
            weight = torch.randn(hidden, device=device, generator=gen).to(dtype)
            expected_residual = residual.clone()
            expected = reference.rms_norm(x, weight, 1e-5, expected_residual)
            out = norm.rms_norm(x, weight, 1e-5, residual)
            row(f"rms_norm + residual {tokens} x {hidden} {dtype}", lambda: norm.rms_norm(x, weight, 1e-5, residual),
                lambda: reference.rms_norm(x, weight, 1e-5, expected_residual), torch.cat([out, residual]),
                torch.cat([expected, expected_residual]))
            gate_up = (torch.randn(tokens, 2 * inter, device=device, generator=gen) * 3).to(dtype)
            row(f"silu_and_mul {tokens} x {inter} {dtype}", lambda: activation.silu_and_mul(gate_up),
                lambda: reference.silu_and_mul(gate_up), activation.silu_and_mul(gate_up),
                reference.silu_and_mul(gate_up))
            qkv = torch.randn(tokens, (heads + 2 * kv_heads) * dim, device=device, generator=gen).to(dtype)
            expected_qkv = qkv.clone()
            positions = torch.randint(0, 32768, (tokens,), device=device, generator=gen)
            inv_freq = 1.0 / (500000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim))
            tables = reference.rotary_tables(positions, inv_freq, 1.0, dtype)
            rotary.rotary_embedding(*_qk_views(qkv, heads, kv_heads, dim), *tables)
            reference.rotary_embedding(*_qk_views(expected_qkv, heads, kv_heads, dim), *tables)
            diff_args = (qkv.clone(), expected_qkv.clone())  # compared before the timing loops rotate them again
            row(f"rotary {tokens} x {heads}+{kv_heads} heads x {dim} {dtype}",
                lambda: rotary.rotary_embedding(*_qk_views(qkv, heads, kv_heads, dim), *tables),
                lambda: reference.rotary_embedding(*_qk_views(expected_qkv, heads, kv_heads, dim), *tables),
                *diff_args)
    return rows


def model_rows(device: str) -> list[tuple]:
    """(side, TPOT ms, tok/s) of two warm runs each, fused kernels first, then the torch twins."""
    gpu = load_sibling("gpu")
    from formwork import kernels
    from formwork.core import LLM

    sizes, rows = gpu.Sizes(False), []
    with tempfile.TemporaryDirectory(prefix="formwork-fused-") as tmp:
        model_dir = gpu.build_big_model(Path(tmp) / "model", device)
        for side in ("fused Triton kernels", "torch twins"):
            if side == "torch twins":
                for name in ("rms_norm", "silu_and_mul", "rotary_embedding"):
                    setattr(kernels, name, getattr(reference, name))
            llm = LLM(model_dir, device=device, max_num_seqs=sizes.requests, **gpu.engine_options(False, 1))
            for _ in range(2):
                figures = gpu.formwork_figures(llm, sizes, 129280, device)
                rows.append((side, figures["tpot_ms"], figures["tok_s"]))
            llm.close()
            del llm
            torch.cuda.empty_cache()
    return rows


def render(device_name: str, kernels_table: list[tuple], model_table: list[tuple], smoke: bool) -> str:
    lines = [f"# Fused elementwise kernels ({device_name})", "",
             f"Command: `python benchmarks/fused_elementwise.py{' --smoke' if smoke else ''}`, torch {torch.__version__}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "| case | max abs diff vs twin | elements not bitwise equal | Triton ms | twin ms |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {diff:.3g} | {share:.1%} | {ms:.4f} | {twin_ms:.4f} |"
              for name, diff, share, ms, twin_ms in kernels_table]
    if model_table:
        lines += ["", "Random 1.24B Llama, bf16, CUDA graphs (two warm runs per side):", "",
                  "| elementwise ops | batch-1 TPOT ms | 64 requests tok/s |", "|---|---:|---:|"]
        lines += [f"| {side} | {tpot:.2f} | {tok_s:,.0f} |" for side, tpot, tok_s in model_table]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="CPU, interpreted Triton, tiny shapes, no model")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "fused_elementwise.md"))
    args = parser.parse_args()
    if not args.smoke and not torch.cuda.is_available():
        print("needs a CUDA GPU; --smoke runs the kernel rows on the CPU under the Triton interpreter", file=sys.stderr)
        return 2
    device = "cpu" if args.smoke else "cuda"
    text = render("CPU, Triton interpreter" if args.smoke else torch.cuda.get_device_name(),
                  kernel_rows(device, args.smoke), [] if args.smoke else model_rows(device), args.smoke)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

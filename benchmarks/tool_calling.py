"""Tool calling on `formwork serve` through the official `openai` client: seeded requests per mode.

Modes: `required`, a named function, `auto`, parallel calls (`required` with a two-part request) and
`auto` with `parallel_tool_calls` off, each as whole responses and as streams (the stream's deltas
added up the way OpenAI clients do); `none` (no constraint) is the baseline for time per token. For
each it reports how many arguments were returned, the share that parse and validate against their
schema (the target: 100%), the finish reasons and the time per completion token, one request at a time.
Results go to stdout and `benchmarks/results/tool_calling.md`.

    python benchmarks/tool_calling.py                  # starts a server on the demo model, 50 per mode
    python benchmarks/tool_calling.py --requests 10
    python benchmarks/tool_calling.py --url http://127.0.0.1:8000 --model-name formwork-demo
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import openai

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

from machine import cpu_name  # noqa: E402

CITIES = ["Paris", "Tokyo", "Berlin", "Lima", "Oslo", "Cairo", "Denver", "Seoul", "Dublin", "Austin"]
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 40}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "convert_currency", "description": "Convert an amount of money between currencies.",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number", "minimum": 0}, "from": {"type": "string", "enum": ["USD", "EUR", "GBP"]},
            "to": {"type": "string", "enum": ["USD", "EUR", "GBP"]}},
            "required": ["amount", "from", "to"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "create_event", "description": "Add an event to the calendar.",
        "parameters": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 60}, "date": {"type": "string", "format": "date"}},
            "required": ["title", "date"], "additionalProperties": False}}},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def ask(mode: str, seed: int) -> str:
    city, other = CITIES[seed % len(CITIES)], CITIES[(seed * 7 + 3) % len(CITIES)]
    if mode == "named":
        return f"Convert {10 + seed * 13} USD to EUR."
    if mode == "parallel":
        return f"What's the weather in {city}, and also: what's the weather in {other}?"
    return f"What's the weather in {city}?"


MODES = {  # name -> (tool_choice, parallel_tool_calls)
    "none": ("none", True), "required": ("required", True),
    "named": ({"type": "function", "function": {"name": "convert_currency"}}, True),
    "auto": ("auto", True), "auto, one call": ("auto", False), "parallel": ("required", True),
}


@dataclass
class ModeResult:
    requests: int = 0
    calls: int = 0
    valid: int = 0
    called: int = 0  # replies with at least one call
    finish: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def run_one(client: openai.OpenAI, model: str, mode: str, seed: int, stream: bool, max_tokens: int):
    """(calls as (name, arguments), finish reason, completion tokens) of one request."""
    choice, parallel = MODES[mode]
    body = dict(model=model, messages=[{"role": "user", "content": ask(mode, seed)}], tools=TOOLS,
                tool_choice=choice, parallel_tool_calls=parallel, temperature=1.0, seed=seed, max_tokens=max_tokens)
    if not stream:
        out = client.chat.completions.create(**body)
        calls = [(c.function.name, c.function.arguments) for c in out.choices[0].message.tool_calls or []]
        return calls, out.choices[0].finish_reason, out.usage.completion_tokens
    calls: dict[int, list[str]] = {}
    reason, tokens = None, 0
    for chunk in client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        for c in chunk.choices:
            for part in c.delta.tool_calls or []:
                entry = calls.setdefault(part.index, [part.function.name or "", ""])
                entry[1] += part.function.arguments or ""
            reason = c.finish_reason or reason
    return [tuple(calls[i]) for i in sorted(calls)], reason, tokens


def run_mode(client: openai.OpenAI, model: str, mode: str, stream: bool, requests: int, max_tokens: int) -> ModeResult:
    result = ModeResult()
    for seed in range(requests):
        start = time.perf_counter()
        calls, reason, tokens = run_one(client, model, mode, seed, stream, max_tokens)
        result.seconds += time.perf_counter() - start
        result.requests += 1
        result.tokens += tokens
        result.finish[reason] = result.finish.get(reason, 0) + 1
        result.called += bool(calls) and reason == "tool_calls"
        for name, arguments in calls:
            result.calls += 1
            try:
                jsonschema.validate(json.loads(arguments), SCHEMAS[name], format_checker=jsonschema.FormatChecker())
                result.valid += 1
            except (KeyError, json.JSONDecodeError, jsonschema.ValidationError) as exc:
                result.failures.append(f"{mode} seed {seed}: {name} {arguments!r}: {type(exc).__name__}")
    return result


def render(rows: list[tuple[str, str, ModeResult]], args: argparse.Namespace, baseline: dict[str, float]) -> str:
    lines = [f"# Tool calling on `formwork serve` ({args.model_name}), {args.requests} seeded requests per mode",
             "", f"CPU: {cpu_name()}; temperature 1, max_tokens {args.max_tokens}, one request at a time; "
             f"`python benchmarks/tool_calling.py{f' --requests {args.requests}' if args.requests != 50 else ''}`",
             "", "| mode | response | requests | replies with calls | arguments returned | parse + validate | "
             "finish reasons | ms / token | vs none |", "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for mode, kind, r in rows:
        per_token = 1000 * r.seconds / max(1, r.tokens)
        valid = f"{100 * r.valid / r.calls:.0f}% ({r.valid})" if r.calls else "-"
        finish = ", ".join(f"{k} {v}" for k, v in sorted(r.finish.items(), key=lambda kv: str(kv[0])))
        ratio = per_token / baseline[kind] if baseline.get(kind) else 1.0
        lines.append(f"| {mode} | {kind} | {r.requests} | {r.called} | {r.calls} | {valid} | {finish} | "
                     f"{per_token:.1f} | {ratio:.2f}x |")
    failures = [f for _, _, r in rows for f in r.failures]
    lines += ["", "ms / token: wall time of the requests over their completion tokens; forced tokens (jump-forward "
              "through a call's begin string) count, so constrained modes look cheaper than their masks are.",
              "", f"Invalid arguments: {len(failures)}"] + [f"- {f}" for f in failures[:20]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running server (default: start one on the demo model)")
    parser.add_argument("--model-name", default="formwork-demo")
    parser.add_argument("--requests", type=int, default=50, help="seeded requests per mode and response kind")
    parser.add_argument("--max-tokens", type=int, default=120)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "tool_calling.md")
    args = parser.parse_args()
    server = None
    if args.url is None:
        from conftest_server import ServerProcess

        server = ServerProcess.start(None)
        args.url = server.url
    try:
        client = openai.OpenAI(base_url=f"{args.url.rstrip('/')}/v1", api_key="unused", max_retries=0, timeout=600)
        rows, baseline = [], {}
        for mode in MODES:
            for stream in (False, True):
                kind = "stream" if stream else "whole"
                result = run_mode(client, args.model_name, mode, stream, args.requests, args.max_tokens)
                if mode == "none":
                    baseline[kind] = 1000 * result.seconds / max(1, result.tokens)
                rows.append((mode, kind, result))
                print(f"{mode:>15} {kind:>6}: {result.valid}/{result.calls} valid, {result.called} replies with "
                      f"calls, finish {result.finish}", flush=True)
    finally:
        if server is not None:
            server.stop()
    report = render(rows, args, baseline)
    print(report)
    args.out.write_text(report)
    return 0 if all(r.valid == r.calls for _, _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

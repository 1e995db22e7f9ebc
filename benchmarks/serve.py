"""Load benchmark of `formwork serve`: Poisson arrivals at several rates through its own async httpx client.

For each rate it sends `--num-requests` streaming chat requests (a share of them constrained by a JSON
Schema) and reports TTFT, TPOT, ITL and E2E latency (p50/p99), request and token throughput, goodput
under the stated SLOs and the valid-output rate of the constrained requests (jsonschema). Results go
to stdout and `benchmarks/results/serve.md`.

    python benchmarks/serve.py                       # starts a server on the demo model
    python benchmarks/serve.py --url http://127.0.0.1:8000 --model-name formwork-demo
    python benchmarks/serve.py --model /path/to/hf_dir --rates 1,2,4,inf --num-requests 32
    python benchmarks/serve.py --tiny-model           # the tiny random Llama of the tests
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import jsonschema

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"ok": {"type": "boolean"},
                                      "tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                               "maxItems": 3}},
     "required": ["ok", "tags"], "additionalProperties": False},
    {"type": "object", "properties": {"id": {"type": "integer"},
                                      "status": {"enum": ["open", "closed", "pending"]}},
     "required": ["id", "status"], "additionalProperties": False},
]
PROMPTS = ["Describe a person as JSON.", "Write a short sentence about the sea.", "Give me a record.",
           "Tell me about a cat.", "List some tags.", "What is the capital of France?"]


@dataclass
class Result:
    """One request as the client saw it."""

    constrained: bool
    schema: dict | None
    start: float
    token_times: list[float] = field(default_factory=list)
    end: float = 0.0
    text: str = ""
    completion_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None

    @property
    def ttft(self) -> float | None:
        return self.token_times[0] - self.start if self.token_times else None

    @property
    def e2e(self) -> float:
        return self.end - self.start

    @property
    def tpot(self) -> float | None:
        if self.completion_tokens < 2 or self.ttft is None:
            return None
        return (self.e2e - self.ttft) / (self.completion_tokens - 1)

    @property
    def itls(self) -> list[float]:
        return [b - a for a, b in zip(self.token_times, self.token_times[1:])]

    def valid(self) -> bool:
        try:
            jsonschema.validate(json.loads(self.text), self.schema)
        except (json.JSONDecodeError, jsonschema.ValidationError):
            return False
        return True


async def one_request(client: httpx.AsyncClient, url: str, model: str, prompt: str, schema: dict | None,
                      max_tokens: int, seed: int) -> Result:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0.7, "seed": seed, "stream": True, "stream_options": {"include_usage": True}}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}
    result = Result(schema is not None, schema, time.perf_counter())
    try:
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
            if response.status_code != 200:
                result.error = f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
                return result
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    result.error = chunk["error"]["message"]
                elif chunk["choices"]:
                    choice = chunk["choices"][0]
                    if choice["delta"].get("content"):
                        result.token_times.append(time.perf_counter())
                        result.text += choice["delta"]["content"]
                    result.finish_reason = choice["finish_reason"] or result.finish_reason
                elif chunk.get("usage"):
                    result.completion_tokens = chunk["usage"]["completion_tokens"]
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        result.end = time.perf_counter()
    return result


async def run_rate(url: str, model: str, rate: float, num_requests: int, constrained_share: float,
                   max_tokens: int, seed: int) -> tuple[list[Result], float]:
    """Send `num_requests` with exponential inter-arrival gaps (rate in req/s; inf = all at once)."""
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=num_requests + 4, max_keepalive_connections=num_requests + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        tasks = []
        started = time.perf_counter()
        for i in range(num_requests):
            schema = rng.choice(SCHEMAS) if rng.random() < constrained_share else None
            prompt = rng.choice(PROMPTS)
            tasks.append(asyncio.create_task(one_request(client, url, model, prompt, schema, max_tokens, seed + i)))
            if math.isfinite(rate):
                await asyncio.sleep(rng.expovariate(rate))
        results = await asyncio.gather(*tasks)
    return list(results), time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def summarise(rate: float, results: list[Result], duration: float, slo_ttft: float, slo_tpot: float) -> dict:
    ok = [r for r in results if r.error is None]
    ttft = [r.ttft for r in ok if r.ttft is not None]
    tpot = [r.tpot for r in ok if r.tpot is not None]
    itl = [x for r in ok for x in r.itls]
    e2e = [r.e2e for r in ok]
    good = [r for r in ok if r.ttft is not None and r.ttft <= slo_ttft and (r.tpot or 0.0) <= slo_tpot]
    constrained = [r for r in ok if r.constrained]
    finished = [r for r in constrained if r.finish_reason == "stop"]
    return {
        "rate": rate, "requests": len(results), "errors": len(results) - len(ok), "duration": duration,
        "req_per_s": len(ok) / duration, "tok_per_s": sum(r.completion_tokens for r in ok) / duration,
        "goodput": len(good) / duration,
        "ttft": (pct(ttft, 50), pct(ttft, 99)), "tpot": (pct(tpot, 50), pct(tpot, 99)),
        "itl": (pct(itl, 50), pct(itl, 99)), "e2e": (pct(e2e, 50), pct(e2e, 99)),
        "tpot_split": (pct([r.tpot for r in constrained if r.tpot is not None], 50),
                       pct([r.tpot for r in ok if not r.constrained and r.tpot is not None], 50)),
        "constrained": len(constrained), "constrained_stopped": len(finished),
        "valid_stopped": sum(r.valid() for r in finished), "valid_all": sum(r.valid() for r in constrained),
        "first_error": next((r.error for r in results if r.error), None),
    }


def ms(pair: tuple[float, float]) -> str:
    return " / ".join("n/a" if math.isnan(v) else f"{v * 1000:.1f}" for v in pair)


def render(rows: list[dict], args: argparse.Namespace, model_desc: str) -> str:
    lines = [
        "# `formwork serve` load benchmark", "",
        f"Command: `{' '.join(['python', 'benchmarks/serve.py', *sys.argv[1:]])}`", "",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}, "
        f"{platform.system()} (CPU only, shared 2-core box). Model: {model_desc}.", "",
        f"Workload: {args.num_requests} streaming chat requests per rate, Poisson arrivals, max_tokens "
        f"{args.max_tokens}, temperature 0.7, {args.constrained_share:.0%} constrained by one of "
        f"{len(SCHEMAS)} JSON Schemas (response_format json_schema).",
        f"SLOs for goodput: TTFT <= {args.slo_ttft * 1000:.0f} ms and TPOT <= {args.slo_tpot * 1000:.0f} ms.", "",
        "| rate (req/s) | ok/sent | req/s | out tok/s | goodput (req/s) | TTFT p50/p99 ms | TPOT p50/p99 ms "
        "| TPOT p50 constrained/free ms | ITL p50/p99 ms | E2E p50/p99 ms | valid (stopped) "
        "| valid (all constrained) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        valid_stopped = f"{r['valid_stopped']}/{r['constrained_stopped']}"
        lines.append(
            f"| {r['rate']:g} | {r['requests'] - r['errors']}/{r['requests']} | {r['req_per_s']:.2f} | "
            f"{r['tok_per_s']:.1f} | {r['goodput']:.2f} | {ms(r['ttft'])} | {ms(r['tpot'])} | "
            f"{ms(r['tpot_split'])} | {ms(r['itl'])} | "
            f"{ms(r['e2e'])} | {valid_stopped} | {r['valid_all']}/{r['constrained']} |")
    errors = [r["first_error"] for r in rows if r["first_error"]]
    lines += ["", "req/s and out tok/s are completed requests and generated tokens over the wall time of the "
              "run (arrivals plus the tail), so below saturation they follow the offered rate. TPOT is "
              "(E2E - TTFT) / (tokens - 1) per request; ITL is the gap between content chunks. Valid (stopped): "
              "constrained requests that finished with `stop` whose JSON validates; (all constrained) also "
              "counts documents cut by max_tokens (finish_reason `length`), which cannot validate."]
    if errors:
        lines += ["", f"First error seen: `{errors[0]}`"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an already running server (default: start one)")
    parser.add_argument("--model", help="model directory for the started server (default: the demo model)")
    parser.add_argument("--tiny-model", action="store_true",
                        help="serve the tiny random Llama of tests/tiny_models.py instead")
    parser.add_argument("--model-name", help="served model name (default: ask /v1/models)")
    parser.add_argument("--rates", default="1,2,4,inf", help="comma-separated request rates (req/s)")
    parser.add_argument("--num-requests", type=int, default=24)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--constrained-share", type=float, default=0.5)
    parser.add_argument("--slo-ttft", type=float, default=1.0, help="seconds")
    parser.add_argument("--slo-tpot", type=float, default=0.1, help="seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "serve.md"))
    args = parser.parse_args()
    if args.tiny_model and (args.url or args.model):
        parser.error("--tiny-model starts its own server; do not combine it with --url or --model")

    server = None
    if args.url is None:
        from conftest_server import ServerProcess

        if args.tiny_model:
            from tiny_models import tiny_model_dir

            args.model = tiny_model_dir("llama")
        server = ServerProcess.start(args.model)
        args.url = server.url
    try:
        card = httpx.get(f"{args.url}/v1/models", timeout=10).json()["data"][0]
        model = args.model_name or card["id"]
        root = "the tiny random Llama of tests/tiny_models.py" if args.tiny_model else f"`{card['root']}`"
        model_desc = f"{root} (max_model_len {card.get('max_model_len')})"
        load_before = os.getloadavg()[0]
        rows = []
        for i, rate in enumerate(float(r) for r in args.rates.split(",")):
            results, duration = asyncio.run(run_rate(args.url, model, rate, args.num_requests,
                                                     args.constrained_share, args.max_tokens, args.seed + 1000 * i))
            row = summarise(rate, results, duration, args.slo_ttft, args.slo_tpot)
            rows.append(row)
            print(f"rate {rate:g}: {row['req_per_s']:.2f} req/s, {row['tok_per_s']:.1f} tok/s, "
                  f"TTFT p50/p99 {ms(row['ttft'])} ms, TPOT {ms(row['tpot'])} ms, E2E {ms(row['e2e'])} ms, "
                  f"goodput {row['goodput']:.2f}, valid {row['valid_stopped']}/{row['constrained_stopped']} "
                  f"(all {row['valid_all']}/{row['constrained']}), errors {row['errors']}", flush=True)
    finally:
        if server is not None:
            server.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    model_desc += f"; 1-minute load average {load_before:.1f} before the run, {os.getloadavg()[0]:.1f} after"
    Path(args.out).write_text(render(rows, args, model_desc))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

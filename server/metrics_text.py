"""Prometheus text exposition (format 0.0.4) of the engine's metrics snapshot.

The snapshot maps metric names (vLLM's, plus `formwork:` ones) to values: a number is a gauge, or a
counter when the name ends in `_total` (except those listed in `GAUGES`); a dict with
`"type": "histogram"` holds cumulative buckets; any other dict is a counter split by one label
(e.g. `finished_reason`). Every sample carries a `model_name` label, as vLLM's do.
"""

from __future__ import annotations

import math
from typing import Any

from formwork.core.structured_output import StructuredOutputStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

HELP = {
    "vllm:num_requests_running": "Number of requests in model execution batches.",
    "vllm:num_requests_waiting": "Number of requests waiting to be processed.",
    "vllm:kv_cache_usage_perc": "KV-cache usage. 1 means 100 percent usage.",
    "formwork:kv_cache_blocks_used": "KV-cache blocks in use.",
    "formwork:kv_cache_blocks_total": "KV-cache blocks in the pool.",
    "vllm:prefix_cache_queries_total": "Prefix-cache queries, in terms of number of queried tokens.",
    "vllm:prefix_cache_hits_total": "Prefix-cache hits, in terms of number of cached tokens.",
    "vllm:num_preemptions_total": "Cumulative number of preemptions.",
    "vllm:prompt_tokens_total": "Number of prefill tokens processed.",
    "vllm:generation_tokens_total": "Number of generation tokens processed.",
    "vllm:request_success_total": "Count of finished requests by finish reason.",
    "vllm:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "vllm:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "vllm:e2e_request_latency_seconds": "Histogram of end-to-end request latency in seconds.",
    "vllm:request_queue_time_seconds": "Histogram of time spent waiting in the queue in seconds.",
    "vllm:request_prompt_tokens": "Number of prefill tokens per request.",
    "vllm:request_generation_tokens": "Number of generation tokens per request.",
    "formwork:grammar_compile_seconds": "Histogram of the engine's constraint compile time per request in "
                                        "seconds (a grammar already compiled by the server's check is a cache hit).",
    "formwork:constraint_check_seconds": "Histogram of the server's up-front constraint check (compile) time "
                                         "in seconds.",
    "formwork:grammar_mask_seconds_total": "Time spent filling token masks in seconds.",
    "formwork:grammar_mask_steps_total": "Engine steps with at least one constrained row.",
    "formwork:grammar_mask_rows_total": "Constrained token-mask rows filled.",
    "formwork:jump_forward_tokens_total": "Tokens appended by jump-forward without sampling.",
}

# Numbers named `*_total` that are gauges all the same (a pool size, not a running count).
GAUGES = {"formwork:kv_cache_blocks_total"}

# Label used to split dict-valued counters, by metric name (default: "reason").
SPLIT_LABELS = {"vllm:request_success_total": "finished_reason"}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(base: dict[str, str], **extra: str) -> str:
    pairs = {**base, **extra}
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()) + "}"


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def structured_output_metrics(stats: StructuredOutputStats) -> dict[str, Any]:
    """Grammar compile and mask statistics as `formwork:` snapshot entries."""
    return {
        "formwork:grammar_compile_seconds": stats.compile_seconds.snapshot(),
        "formwork:grammar_mask_seconds_total": stats.mask_seconds,
        "formwork:grammar_mask_steps_total": stats.num_mask_steps,
        "formwork:grammar_mask_rows_total": stats.num_mask_rows,
        "formwork:jump_forward_tokens_total": stats.num_jump_forward_tokens,
    }


def render_metrics(snapshot: dict[str, Any], model_name: str) -> str:
    """The snapshot as Prometheus text, one metric family after another."""
    base = {"model_name": model_name}
    lines: list[str] = []
    for name, value in snapshot.items():
        help_text = HELP.get(name, name.split(":", 1)[-1].replace("_", " ") + ".")
        if isinstance(value, dict) and value.get("type") == "histogram":
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
            for bound, count in value["buckets"]:
                lines.append(f"{name}_bucket{_labels(base, le=_number(bound))} {_number(count)}")
            lines.append(f"{name}_sum{_labels(base)} {_number(value['sum'])}")
            lines.append(f"{name}_count{_labels(base)} {_number(value['count'])}")
        elif isinstance(value, dict):
            label = SPLIT_LABELS.get(name, "reason")
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
            for key, count in value.items():
                lines.append(f"{name}{_labels(base, **{label: str(key)})} {_number(count)}")
        else:
            kind = "counter" if name.endswith("_total") and name not in GAUGES else "gauge"
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}",
                      f"{name}{_labels(base)} {_number(value)}"]
    return "\n".join(lines) + "\n"


def parse_metrics(text: str) -> dict[str, float]:
    """Sample lines of Prometheus text as `{'name{labels}': value}` (for tests and the benchmark)."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples

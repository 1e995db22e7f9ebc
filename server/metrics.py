"""`/metrics` by prometheus_client: the engine's metrics under vLLM's names (`formwork:` prefix) and the
grammar metrics no other engine has, in a registry of the server's own.

`metrics_registry(engine, model_name)` is a `CollectorRegistry` holding one `EngineCollector`, which
reads the engine's snapshot at each scrape and yields prometheus_client metric families, every sample
labelled with `model_name` as vLLM's are. Each server has its own registry, so several servers can
run in one process (the tests do). `METRICS` declares every name's type and help.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from formwork.core.structured_output import StructuredOutputStats

if TYPE_CHECKING:
    from formwork.server.engine_client import EngineClient

__all__ = ["CONTENT_TYPE", "METRICS", "EngineCollector", "metrics_registry", "render", "structured_output_metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Every metric: name -> (type, help). Counters split by a label are listed in `LABELS`.
METRICS: dict[str, tuple[str, str]] = {
    "formwork:num_requests_running": ("gauge", "Number of requests in model execution batches."),
    "formwork:num_requests_waiting": ("gauge", "Number of requests waiting to be processed."),
    "formwork:kv_cache_usage_perc": ("gauge", "KV-cache usage. 1 means 100 percent usage."),
    "formwork:kv_cache_blocks_used": ("gauge", "KV-cache blocks in use."),
    "formwork:kv_cache_blocks_total": ("gauge", "KV-cache blocks in the pool."),
    "formwork:prefix_cache_queries_total": ("counter", "Prefix-cache queries, in terms of number of queried tokens."),
    "formwork:prefix_cache_hits_total": ("counter", "Prefix-cache hits, in terms of number of cached tokens."),
    "formwork:num_preemptions_total": ("counter", "Cumulative number of preemptions."),
    "formwork:prompt_tokens_total": ("counter", "Number of prefill tokens processed."),
    "formwork:generation_tokens_total": ("counter", "Number of generation tokens processed."),
    "formwork:request_success_total": ("counter", "Count of finished requests by finish reason."),
    "formwork:time_to_first_token_seconds": ("histogram", "Histogram of time to first token in seconds."),
    "formwork:time_per_output_token_seconds": ("histogram", "Histogram of each request's mean time per output "
                                                            "token after the first, in seconds."),
    "formwork:inter_token_latency_seconds": ("histogram", "Histogram of inter-token latency in seconds."),
    "formwork:e2e_request_latency_seconds": ("histogram", "Histogram of end-to-end request latency in seconds."),
    "formwork:request_queue_time_seconds": ("histogram", "Histogram of time spent waiting in the queue in seconds."),
    "formwork:request_prompt_tokens": ("histogram", "Number of prefill tokens per request."),
    "formwork:request_generation_tokens": ("histogram", "Number of generation tokens per request."),
    "formwork:grammar_compile_seconds": ("histogram", "Histogram of the engine's constraint compile time per "
                                                      "request in seconds (a grammar already compiled by the "
                                                      "server's check is a cache hit)."),
    "formwork:constraint_check_seconds": ("histogram", "Histogram of the server's up-front constraint check "
                                                       "(compile) time in seconds."),
    "formwork:grammar_mask_step_seconds": ("histogram", "Histogram of the time to fill the token masks of one "
                                                        "engine step with a constrained row, in seconds."),
    "formwork:grammar_mask_rows_total": ("counter", "Constrained token-mask rows filled."),
    "formwork:jump_forward_tokens_total": ("counter", "Tokens appended by jump-forward without sampling."),
    "formwork:grammar_compiles_queued": ("gauge", "Grammar compiles waiting for a compile worker."),
    "formwork:grammar_compiles_running": ("gauge", "Grammar compiles running (the server's checks included)."),
}

#: The label that splits a dict-valued counter.
LABELS = {"formwork:request_success_total": "finished_reason"}


def structured_output_metrics(stats: StructuredOutputStats) -> dict[str, Any]:
    """Grammar compile and mask statistics as snapshot entries."""
    return {
        "formwork:grammar_compile_seconds": stats.compile_seconds.snapshot(),
        "formwork:grammar_mask_step_seconds": stats.mask_step_seconds.snapshot(),
        "formwork:grammar_mask_rows_total": stats.num_mask_rows,
        "formwork:jump_forward_tokens_total": stats.num_jump_forward_tokens,
    }


class EngineCollector(Collector):
    """Reads the engine's snapshot (and its compile queue) at each scrape."""

    def __init__(self, engine: EngineClient, model_name: str):
        self.engine = engine
        self.model_name = model_name

    def snapshot(self) -> dict[str, Any]:
        compiles = self.engine.structured_output.compile_status()
        return {**self.engine.metrics_snapshot(), "formwork:grammar_compiles_queued": compiles["queued"],
                "formwork:grammar_compiles_running": compiles["running"]}

    def collect(self) -> Iterator[Metric]:
        for name, value in self.snapshot().items():
            kind, help_text = METRICS[name]  # a KeyError here is an undeclared metric: a bug
            yield family(name, kind, help_text, value, self.model_name)


def family(name: str, kind: str, help_text: str, value: Any, model_name: str) -> Metric:
    """One metric family with its `model_name`-labelled samples."""
    if kind == "histogram":
        histogram = HistogramMetricFamily(name, help_text, labels=["model_name"])
        buckets = [(floatToGoString(bound), count) for bound, count in value["buckets"]]
        histogram.add_metric([model_name], buckets, sum_value=value["sum"])
        return histogram
    if kind == "gauge":
        gauge = GaugeMetricFamily(name, help_text, labels=["model_name"])
        gauge.add_metric([model_name], value)
        return gauge
    label = LABELS.get(name)
    counter = CounterMetricFamily(name, help_text, labels=["model_name"] + ([label] if label else []))
    for key, count in (value.items() if label else [(None, value)]):
        counter.add_metric([model_name] + ([str(key)] if label else []), count)
    return counter


def metrics_registry(engine: EngineClient, model_name: str) -> CollectorRegistry:
    """A registry of the server's own, holding its engine's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(engine, model_name))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus' text format (`CONTENT_TYPE`)."""
    return generate_latest(registry)

"""Per-request sampling parameters (vLLM's names and defaults), validated on construction."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from formwork.grammar.tags.spec import TagSpecError, parse_tags_spec

GREEDY_EPSILON = 1e-5  # temperatures below this are treated as greedy (0)
MAX_LOGPROBS = 20
STRUCTURED_OUTPUT_CONSTRAINTS = ("json", "regex", "choice", "grammar", "json_object", "tags")
STRUCTURED_OUTPUT_OPTIONS = ("disable_any_whitespace", "disable_additional_properties", "whitespace_pattern")


class SamplingParamsError(ValueError):
    """A sampling parameter has an invalid value."""


class RequestOutputKind(enum.Enum):
    """Which `RequestOutput`s the engine builds for a request (vLLM's names)."""

    CUMULATIVE = "cumulative"  # at every step: everything generated so far
    DELTA = "delta"  # at every step: only the text, tokens and logprobs new since the last output
    FINAL_ONLY = "final_only"  # one output, when the request finishes (offline batches)


@dataclass
class SamplingParams:
    """How to sample the completions of one request.

    `temperature=0` is greedy decoding. `top_k` <= 0 (or -1) and `top_p=1` and `min_p=0` are off.
    `seed` makes the draws reproducible whatever else is in the batch. Penalties follow vLLM:
    repetition over prompt and output tokens (divide positive logits, multiply negative ones),
    presence/frequency over output tokens. `logit_bias` maps token ids (ints or numeric strings, as
    OpenAI sends them) to additive biases. `stop` strings end the text (trimmed unless
    `include_stop_str_in_output`); `stop_token_ids` end it like EOS. `max_tokens=None` generates up
    to the model's context limit. `logprobs=N` returns the sampled token's logprob plus the top N.
    `structured_outputs` holds exactly one constraint (`json`, `regex`, `choice`, `grammar`,
    `json_object`, `tags`: tagged regions, see `formwork.grammar.tags`) for the structured-output
    manager. `reasoning=True` lets a reasoning model think freely first: the output is thinking up
    to `</think>` (its `<think>` may be in the prompt), then the constraint. `output_kind` says which
    outputs `LLMEngine.step` returns for the request (`RequestOutputKind`).
    """

    n: int = 1
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: dict[int, float] | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    max_tokens: int | None = 16
    min_tokens: int = 0
    ignore_eos: bool = False
    logprobs: int | None = None
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    structured_outputs: dict[str, Any] | None = None
    reasoning: bool = False
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE
    stop_strings: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_int("n", self.n, minimum=1)
        _check_float("temperature", self.temperature, low=0.0)
        if self.temperature < GREEDY_EPSILON:
            self.temperature = 0.0
        _check_int("top_k", self.top_k, minimum=-1)
        _check_float("top_p", self.top_p, low=0.0, high=1.0)
        if self.top_p <= 0.0:
            raise SamplingParamsError(f"top_p must be in (0, 1], got {self.top_p}")
        _check_float("min_p", self.min_p, low=0.0, high=1.0)
        if self.seed is not None:
            _check_int("seed", self.seed, minimum=-(2**63))
        _check_float("presence_penalty", self.presence_penalty, low=-2.0, high=2.0)
        _check_float("frequency_penalty", self.frequency_penalty, low=-2.0, high=2.0)
        _check_float("repetition_penalty", self.repetition_penalty, low=0.0)
        if self.repetition_penalty <= 0.0:
            raise SamplingParamsError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        self.logit_bias = _normalise_logit_bias(self.logit_bias)
        self.stop_strings = _normalise_stop(self.stop)
        self.stop_token_ids = _normalise_token_ids(self.stop_token_ids)
        if self.max_tokens is not None:
            _check_int("max_tokens", self.max_tokens, minimum=1)
        _check_int("min_tokens", self.min_tokens, minimum=0)
        if self.max_tokens is not None and self.min_tokens > self.max_tokens:
            raise SamplingParamsError(
                f"min_tokens={self.min_tokens} must not exceed max_tokens={self.max_tokens}"
            )
        if self.logprobs is not None:
            _check_int("logprobs", self.logprobs, minimum=0)
            if self.logprobs > MAX_LOGPROBS:
                raise SamplingParamsError(f"logprobs must be at most {MAX_LOGPROBS}, got {self.logprobs}")
        for name in ("ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "reasoning"):
            if not isinstance(getattr(self, name), bool):
                raise SamplingParamsError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.structured_outputs is not None:
            _check_structured_outputs(self.structured_outputs)
        if not isinstance(self.output_kind, RequestOutputKind):
            raise SamplingParamsError(f"output_kind must be a RequestOutputKind, got {self.output_kind!r}")

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def needs_penalties(self) -> bool:
        return (self.presence_penalty != 0.0 or self.frequency_penalty != 0.0
                or self.repetition_penalty != 1.0)

    def clone(self, **changes: Any) -> "SamplingParams":
        """A validated copy with some fields replaced."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "stop_strings"}
        values.update(changes)
        return SamplingParams(**values)


def _check_int(name: str, value: object, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SamplingParamsError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise SamplingParamsError(f"{name} must be >= {minimum}, got {value}")


def _check_float(name: str, value: object, *, low: float | None = None, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SamplingParamsError(f"{name} must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise SamplingParamsError(f"{name} must be in {bounds}, got {value}")


def _normalise_logit_bias(bias: object) -> dict[int, float] | None:
    if bias is None:
        return None
    if not isinstance(bias, dict):
        raise SamplingParamsError(f"logit_bias must be a dict of token id -> bias, got {type(bias).__name__}")
    out: dict[int, float] = {}
    for key, value in bias.items():
        try:
            token_id = int(key)
        except (TypeError, ValueError):
            raise SamplingParamsError(f"logit_bias key {key!r} is not a token id") from None
        if token_id < 0:
            raise SamplingParamsError(f"logit_bias key {key!r} must be a non-negative token id")
        _check_float(f"logit_bias[{key!r}]", value, low=-100.0, high=100.0)
        out[token_id] = float(value)
    return out


def _normalise_stop(stop: object) -> list[str]:
    if stop is None:
        return []
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, (list, tuple)) or not all(isinstance(s, str) for s in items):
        raise SamplingParamsError(f"stop must be a string or a list of strings, got {stop!r}")
    if any(s == "" for s in items):
        raise SamplingParamsError("stop strings must not be empty")
    return list(items)


def _normalise_token_ids(ids: object) -> list[int]:
    if ids is None:
        return []
    if not isinstance(ids, (list, tuple)):
        raise SamplingParamsError(f"stop_token_ids must be a list of ints, got {ids!r}")
    for token_id in ids:
        _check_int("stop_token_ids entry", token_id, minimum=0)
    return list(ids)


def _check_structured_outputs(spec: object) -> None:
    if not isinstance(spec, dict):
        raise SamplingParamsError(f"structured_outputs must be a dict, got {type(spec).__name__}")
    unknown = set(spec) - set(STRUCTURED_OUTPUT_CONSTRAINTS) - set(STRUCTURED_OUTPUT_OPTIONS)
    if unknown:
        raise SamplingParamsError(
            f"structured_outputs has unknown keys {sorted(unknown)}; constraints are "
            f"{list(STRUCTURED_OUTPUT_CONSTRAINTS)}, options {list(STRUCTURED_OUTPUT_OPTIONS)}"
        )
    given = [key for key in STRUCTURED_OUTPUT_CONSTRAINTS
             if key in spec and spec[key] is not None and spec[key] is not False]
    if len(given) != 1:
        raise SamplingParamsError(
            f"structured_outputs needs exactly one of {list(STRUCTURED_OUTPUT_CONSTRAINTS)}, got {given or 'none'}"
        )
    kind, value = given[0], spec[given[0]]
    expected = {"json": (dict, bool, str), "regex": str, "grammar": str, "choice": (list, tuple),
                "json_object": bool, "tags": dict}[kind]
    if not isinstance(value, expected):
        raise SamplingParamsError(f"structured_outputs[{kind!r}] has the wrong type ({type(value).__name__})")
    if kind == "choice" and (not value or not all(isinstance(c, str) for c in value)):
        raise SamplingParamsError("structured_outputs['choice'] must be a non-empty list of strings")
    if kind in ("regex", "grammar") and not value:
        raise SamplingParamsError(f"structured_outputs[{kind!r}] must not be empty")
    if kind == "tags":
        try:
            parse_tags_spec(value)
        except TagSpecError as exc:
            raise SamplingParamsError(f"structured_outputs['tags'].{exc}") from None

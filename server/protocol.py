"""OpenAI request bodies (`/v1/completions`, `/v1/chat/completions`) parsed and validated.

Parsing checks JSON types field by field (400 naming the field); value ranges are checked by
`SamplingParams` itself and reported against the field at fault. Unknown fields are logged and
ignored, as vLLM does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from formwork.core.sampling_params import SamplingParams, SamplingParamsError
from formwork.server.constraints import parse_constraint
from formwork.server.errors import (InvalidRequestError, InvalidTypeError, UnsupportedFieldError)
from formwork.server.fields import Fields
from formwork.server.tools import ToolsRequest, parse_tools, tool_message_fields
from formwork.server.tools.request import text_rule

logger = logging.getLogger(__name__)

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
DEFAULT_COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
MAX_N = 128  # OpenAI's limit on choices per request

# Request field -> SamplingParams field, read with the given Fields method.
_SAMPLING_FIELDS = {
    "temperature": "number", "top_p": "number", "top_k": "int", "min_p": "number", "n": "int",
    "seed": "int", "presence_penalty": "number", "frequency_penalty": "number",
    "repetition_penalty": "number", "min_tokens": "int", "ignore_eos": "bool",
    "include_stop_str_in_output": "bool", "skip_special_tokens": "bool",
}


@dataclass
class GenerationRequest:
    """What both endpoints share: the model, sampling options, the constraint and streaming flags."""

    model: str
    sampling: dict[str, Any]
    max_tokens: int | None
    constraint: dict[str, Any] | None
    stream: bool = False
    include_usage: bool = False
    priority: int = 0
    request_id: str | None = None
    user: str | None = None
    constraint_param: str = "response_format"  # the request field the constraint came from

    @property
    def n(self) -> int:
        return self.sampling.get("n", 1)

    def sampling_params(self, max_tokens: int | None, logprobs: int | None) -> SamplingParams:
        """SamplingParams for one prompt; a bad value is a 400 naming the field at fault."""
        values = dict(self.sampling, max_tokens=max_tokens, logprobs=logprobs,
                      structured_outputs=self.constraint)
        try:
            return SamplingParams(**values)
        except SamplingParamsError as exc:
            raise InvalidRequestError(str(exc), param=_offending_field(values)) from None


@dataclass
class CompletionRequest(GenerationRequest):
    prompts: list[str | list[int]] = field(default_factory=list)
    echo: bool = False
    logprobs: int | None = None


@dataclass
class ChatCompletionRequest(GenerationRequest):
    messages: list[dict[str, Any]] = field(default_factory=list)
    logprobs: bool = False
    top_logprobs: int | None = None
    tools: ToolsRequest | None = None

    @property
    def num_logprobs(self) -> int | None:
        """SamplingParams.logprobs: None when off, else the number of alternatives wanted."""
        return (self.top_logprobs or 0) if self.logprobs else None


def parse_completion_request(body: dict[str, Any], max_schema_bytes: int) -> CompletionRequest:
    f = Fields(body)
    common = _parse_common(f, max_schema_bytes, default_max_tokens=DEFAULT_COMPLETION_MAX_TOKENS)
    if f.present("suffix"):
        raise UnsupportedFieldError("'suffix' is not supported", param="suffix")
    best_of = f.int("best_of")
    if best_of is not None and best_of != common["sampling"].get("n", 1):
        raise UnsupportedFieldError("'best_of' different from 'n' is not supported", param="best_of")
    echo = f.bool("echo", False)
    logprobs = f.int("logprobs")
    if logprobs is not None and logprobs < 0:
        raise InvalidRequestError(f"'logprobs' must be >= 0, got {logprobs}", param="logprobs")
    if echo and logprobs is not None:
        raise UnsupportedFieldError("'echo' together with 'logprobs' (prompt logprobs) is not supported",
                                    param="echo")
    request = CompletionRequest(**common, prompts=_parse_prompts(f), echo=echo, logprobs=logprobs)
    _warn_unread(f)
    return request


def parse_chat_request(body: dict[str, Any], max_schema_bytes: int) -> ChatCompletionRequest:
    f = Fields(body)
    if f.present("max_completion_tokens"):
        f.int("max_tokens")  # still type-checked
        max_tokens_field = "max_completion_tokens"
    else:
        max_tokens_field = "max_tokens"
    common = _parse_common(f, max_schema_bytes, default_max_tokens=None, max_tokens_field=max_tokens_field)
    if f.raw("functions"):
        raise UnsupportedFieldError("'functions' (deprecated) is not supported; use 'tools'", param="functions")
    tools = parse_tools(f, max_schema_bytes)
    if tools is not None and tools.calls_allowed and common["constraint"] is not None:
        text_rule(common["constraint"], common["constraint_param"])  # one a reply without calls can keep
    logprobs = f.bool("logprobs", False)
    top_logprobs = f.int("top_logprobs")
    if top_logprobs is not None:
        if not logprobs:
            raise InvalidRequestError("when using 'top_logprobs', 'logprobs' must be set to true",
                                      param="top_logprobs")
        if top_logprobs < 0:
            raise InvalidRequestError(f"'top_logprobs' must be >= 0, got {top_logprobs}", param="top_logprobs")
    request = ChatCompletionRequest(**common, messages=_parse_messages(f), logprobs=logprobs,
                                    top_logprobs=top_logprobs, tools=tools)
    _warn_unread(f)
    return request


def _parse_common(f: Fields, max_schema_bytes: int, *, default_max_tokens: int | None,
                  max_tokens_field: str = "max_tokens") -> dict[str, Any]:
    model = f.required("model")
    if not isinstance(model, str):
        raise InvalidTypeError("'model' must be a string", param="model")
    sampling: dict[str, Any] = {}
    for name, kind in _SAMPLING_FIELDS.items():
        value = getattr(f, kind)(name)
        if value is not None:
            sampling[name] = value
    if sampling.get("n", 1) > MAX_N:
        raise InvalidRequestError(f"'n' must be at most {MAX_N}, got {sampling['n']}", param="n")
    stop = f.str_list("stop")
    if stop is not None:
        sampling["stop"] = stop
    stop_token_ids = f.int_list("stop_token_ids")
    if stop_token_ids is not None:
        sampling["stop_token_ids"] = stop_token_ids
    logit_bias = f.object("logit_bias")
    if logit_bias is not None:
        sampling["logit_bias"] = logit_bias
    stream = f.bool("stream", False)
    options = f.nested("stream_options")
    if options is not None and not stream:
        raise InvalidRequestError("'stream_options' can only be set when 'stream' is true", param="stream_options")
    include_usage = bool(options.bool("include_usage", False)) if options is not None else False
    constraint = parse_constraint(f, max_schema_bytes)
    constraint_param = "structured_outputs" if f.present("structured_outputs") else "response_format"
    return dict(
        model=model, sampling=sampling,
        max_tokens=f.int(max_tokens_field, default_max_tokens),
        constraint=constraint, constraint_param=constraint_param,
        stream=stream, include_usage=include_usage,
        priority=f.int("priority", 0), request_id=f.str("request_id"), user=f.str("user"),
    )


def _parse_prompts(f: Fields) -> list[str | list[int]]:
    """`prompt`: a string, an array of strings, an array of token ids or an array of those."""
    prompt = f.required("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt:
        if all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            return [prompt]
        if all(isinstance(p, str) for p in prompt):
            return list(prompt)
        if all(isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p)
               for p in prompt):
            return list(prompt)
    raise InvalidTypeError("'prompt' must be a string, an array of strings, an array of token ids or an "
                           "array of non-empty token id arrays", param="prompt")


def _parse_messages(f: Fields) -> list[dict[str, Any]]:
    """`messages` as `[{"role", "content": str}]` for the chat template (text content parts only), with
    assistant `tool_calls` and tool messages' `tool_call_id`."""
    messages = f.required("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidTypeError("'messages' must be a non-empty array", param="messages")
    out = []
    call_names: dict[str, str] = {}
    for i, message in enumerate(messages):
        param = f"messages.{i}"
        if not isinstance(message, dict):
            raise InvalidTypeError(f"'{param}' must be an object", param=param)
        role = message.get("role")
        if role not in CHAT_ROLES:
            raise InvalidRequestError(f"'{param}.role' must be one of {list(CHAT_ROLES)}, got {role!r}",
                                      param=f"{param}.role")
        entry = {"role": "system" if role == "developer" else role,
                 "content": _message_text(message.get("content"), f"{param}.content")}
        if isinstance(message.get("name"), str):
            entry["name"] = message["name"]
        entry.update(tool_message_fields(message, param, call_names))
        out.append(entry)
    return out


def _message_text(content: Any, param: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InvalidTypeError(f"'{param}.{j}' must be a content part object with a 'type'",
                                       param=f"{param}.{j}")
            if part["type"] != "text":
                raise UnsupportedFieldError(f"content parts of type {part['type']!r} are not supported; "
                                            "only 'text'", param=f"{param}.{j}.type")
            if not isinstance(part.get("text"), str):
                raise InvalidTypeError(f"'{param}.{j}.text' must be a string", param=f"{param}.{j}.text")
            parts.append(part["text"])
        return "".join(parts)
    raise InvalidTypeError(f"'{param}' must be a string or an array of content parts", param=param)


def _offending_field(values: dict[str, Any]) -> str | None:
    """The first request field that SamplingParams rejects on its own (the `param` of the error)."""
    for name, value in values.items():
        try:
            SamplingParams(**{name: value})
        except SamplingParamsError:
            return {"structured_outputs": "response_format"}.get(name, name)
    return None  # only the combination is wrong (e.g. min_tokens > max_tokens)


def _warn_unread(f: Fields) -> None:
    ignored = f.unread()
    if ignored:
        logger.warning("ignoring unsupported request fields: %s", ", ".join(ignored))

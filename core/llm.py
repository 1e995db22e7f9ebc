"""Offline inference: `LLM(model).generate(prompts, params)` and `.chat(messages, params)` (vLLM's API)."""

from __future__ import annotations

import itertools
import sys
import weakref
from collections.abc import Sequence as SequenceABC
from pathlib import Path
from typing import Any

from tqdm import tqdm

from formwork.core.engine import LLMEngine, RequestError
from formwork.core.gc_policy import STEP_COLLECTOR, start_step_policy
from formwork.core.model_files import ChatTemplateError
from formwork.core.outputs import CompletionOutput, RequestOutput
from formwork.core.sampling_params import RequestOutputKind, SamplingParams, SamplingParamsError

PromptType = str | list[int]
Conversation = list[dict[str, Any]]


class LLM:
    """A model plus an engine for batch generation. `model=None` loads the embedded demo model;
    `engine_options` are `EngineConfig` fields (device, dtype, block_size, max_num_seqs,
    tensor_parallel_size, ...); the device defaults to "auto": CUDA when `torch.cuda.is_available()`,
    else the CPU.

    The cyclic collector runs as in `formwork serve` (`core.gc_policy.start_step_policy`): the
    loaded process is frozen, and while an LLM is open full collections run between engine steps
    (at the end of each `generate`, or under long generations once enough young collections
    wait), never inside one; `close()` gives the collector back its own thresholds."""

    def __init__(self, model: str | Path | None = None, **engine_options: Any):
        self.engine = LLMEngine(model, **engine_options)
        self._ids = itertools.count()
        start_step_policy()
        self._step_policy = weakref.finalize(self, STEP_COLLECTOR.uninstall)

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    def close(self) -> None:
        """Stop the engine's tensor-parallel workers, if any (`tensor_parallel_size > 1`); the LLM cannot
        generate afterwards. Garbage collection and interpreter exit do the same."""
        self.engine.close()
        self._step_policy()

    def generate(self, prompts: PromptType | SequenceABC[PromptType],
                 sampling_params: SamplingParams | SequenceABC[SamplingParams] | None = None,
                 use_tqdm: bool = True, priority: SequenceABC[int] | None = None) -> list[RequestOutput]:
        """Complete every prompt (text or token ids); one `RequestOutput` per prompt, in order.
        `priority` (one per prompt, lower first) orders scheduling when not everything fits at once.
        A prompt the engine rejects (too long, empty, bad ids) gets an output with `error` set."""
        prompt_list = _as_prompt_list(prompts)
        return self._run([(p, None) for p in prompt_list], sampling_params, use_tqdm, priority)

    def chat(self, messages: Conversation | SequenceABC[Conversation],
             sampling_params: SamplingParams | SequenceABC[SamplingParams] | None = None,
             chat_template: str | None = None, add_generation_prompt: bool = True,
             use_tqdm: bool = True, response_format: dict[str, Any] | None = None) -> list[RequestOutput]:
        """Render each conversation with the chat template (the model's, or `chat_template`) and
        generate the assistant's reply. Accepts one conversation or a list of them.

        `response_format` takes OpenAI's shape, `{"type": "json_schema", "json_schema": {"schema": ...}}`,
        `{"type": "json_object"}` or `{"type": "text"}`, and constrains every reply (it becomes
        `SamplingParams.structured_outputs`; giving both is an error)."""
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        constraint = response_format_constraint(response_format)
        if constraint is not None:
            sampling_params = _with_constraint(sampling_params, constraint, len(conversations))
        requests = []
        for conversation in conversations:
            text = self._render_chat(conversation, chat_template, add_generation_prompt)
            ids = list(self.tokenizer(text, add_special_tokens=False).input_ids)
            requests.append((text, ids))
        return self._run(requests, sampling_params, use_tqdm)

    def _render_chat(self, conversation: Conversation, chat_template: str | None,
                     add_generation_prompt: bool) -> str:
        if chat_template is None:
            return self.engine.files.apply_chat_template(conversation, add_generation_prompt=add_generation_prompt)
        try:
            return self.tokenizer.apply_chat_template(conversation, chat_template=chat_template, tokenize=False,
                                                      add_generation_prompt=add_generation_prompt)
        except Exception as exc:  # jinja errors and bad message shapes
            raise ChatTemplateError(f"chat template failed: {exc}") from exc

    def _run(self, requests: list[tuple[PromptType, list[int] | None]],
             sampling_params: SamplingParams | SequenceABC[SamplingParams] | None,
             use_tqdm: bool, priority: SequenceABC[int] | None = None) -> list[RequestOutput]:
        params_list = _final_only(_as_params_list(sampling_params, len(requests)))
        priorities = list(priority) if priority is not None else [0] * len(requests)
        if len(priorities) != len(requests):
            raise ValueError(f"got {len(priorities)} priorities for {len(requests)} prompts")
        engine = self.engine
        order: list[str] = []
        results: dict[str, RequestOutput] = {}
        for (prompt, ids), params, prio in zip(requests, params_list, priorities):
            request_id = f"offline-{next(self._ids)}"
            order.append(request_id)
            try:
                engine.add_request(request_id, prompt, params, prompt_token_ids=ids, priority=prio)
            except RequestError as exc:
                results[request_id] = _failed_output(request_id, prompt, ids, params, str(exc))
        bar = _progress_bar(len(order), enabled=use_tqdm)
        bar.update(len(results))
        try:
            while engine.has_unfinished_requests():
                for output in engine.step():
                    if output.finished:
                        results[output.request_id] = output
                        bar.update(1)
                STEP_COLLECTOR.between_steps(idle=not engine.has_unfinished_requests())
        except BaseException:
            for request_id in order:
                engine.abort_request(request_id)
            raise
        finally:
            bar.close()
        return [results[request_id] for request_id in order]


def response_format_constraint(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """`SamplingParams.structured_outputs` for an OpenAI `response_format` (None for text / None)."""
    if response_format is None:
        return None
    if not isinstance(response_format, dict) or "type" not in response_format:
        raise SamplingParamsError(f"response_format must be a dict with a 'type', got {response_format!r}")
    kind = response_format["type"]
    if kind == "text":
        return None
    if kind == "json_object":
        return {"json_object": True}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), (dict, bool)):
            raise SamplingParamsError("response_format of type 'json_schema' needs json_schema.schema (an object)")
        return {"json": spec["schema"]}
    raise SamplingParamsError(f"response_format.type must be 'text', 'json_object' or 'json_schema', got {kind!r}")


def _with_constraint(params: SamplingParams | SequenceABC[SamplingParams] | None, constraint: dict[str, Any],
                     count: int) -> list[SamplingParams]:
    out = []
    for p in _as_params_list(params, count):
        if p.structured_outputs is not None:
            raise SamplingParamsError("give either response_format or SamplingParams.structured_outputs, not both")
        out.append(p.clone(structured_outputs=constraint))
    return out


def _as_prompt_list(prompts: PromptType | SequenceABC[PromptType]) -> list[PromptType]:
    if isinstance(prompts, str):
        return [prompts]
    prompts = list(prompts)
    if prompts and all(isinstance(t, int) for t in prompts):
        return [prompts]  # a single token-id prompt
    for p in prompts:
        if not isinstance(p, str) and not (isinstance(p, list) and all(isinstance(t, int) for t in p)):
            raise TypeError(f"a prompt must be a string or a list of token ids, got {type(p).__name__}")
    return prompts


def _final_only(params_list: list[SamplingParams]) -> list[SamplingParams]:
    """The parameters with `RequestOutputKind.FINAL_ONLY` (only finished outputs are read here, so the
    engine builds no others); each distinct object is copied once."""
    copies: dict[int, SamplingParams] = {}
    out = []
    for p in params_list:
        if p.output_kind is not RequestOutputKind.FINAL_ONLY and id(p) not in copies:
            copies[id(p)] = p.clone(output_kind=RequestOutputKind.FINAL_ONLY)
        out.append(copies.get(id(p), p))
    return out


def _as_params_list(params: SamplingParams | SequenceABC[SamplingParams] | None, count: int) -> list[SamplingParams]:
    if params is None:
        return [SamplingParams()] * count
    if isinstance(params, SamplingParams):
        return [params] * count
    params = list(params)
    if len(params) != count:
        raise ValueError(f"got {len(params)} SamplingParams for {count} prompts")
    return params


def _failed_output(request_id: str, prompt: PromptType, ids: list[int] | None, params: SamplingParams,
                   error: str) -> RequestOutput:
    token_ids = ids if ids is not None else (prompt if isinstance(prompt, list) else [])
    outputs = [CompletionOutput(i, "", [], None, None, finish_reason="error") for i in range(params.n)]
    return RequestOutput(request_id, prompt if isinstance(prompt, str) else None, list(token_ids), outputs,
                         finished=True, error=error)


def _progress_bar(total: int, enabled: bool) -> tqdm:
    return tqdm(total=total, desc="Processed prompts", unit="req", file=sys.stderr,
                disable=not enabled or total < 2, dynamic_ncols=True)

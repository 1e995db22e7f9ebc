"""The typed SDK: ask for a type, get an instance of it back.

    llm = formwork.LLM()                                    # in-process (the demo model by default)
    person = llm.generate(messages, output_type=Person)     # -> Person
    client = formwork.Client("http://127.0.0.1:8000")       # any OpenAI-compatible server
    person = client.generate(messages, output_type=Person)

`LLM` is `formwork.core.llm.LLM` plus typed outputs: without `output_type`, `generate` keeps vLLM's
behaviour (a list of `RequestOutput`).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from formwork.core.engine import RequestError
from formwork.core.llm import LLM as _EngineLLM
from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import SamplingParams
from formwork.sdk.errors import GenerationError
from formwork.sdk.output_types import OutputFormat, PartialText, output_format
from formwork.sdk.tools import StreamedCalls, ToolCalls, ToolSet
from formwork.server.tools.calling import ToolCalling
from formwork.server.tools.formats import detect_format

Prompt = str | list[int] | list[dict[str, Any]]


class LLM(_EngineLLM):
    """The offline engine with typed outputs (`generate(prompt, output_type=T)`, `generate_batch`,
    `stream`). A string prompt is completed as is; a list of chat messages goes through the model's
    chat template. `**sampling` are `SamplingParams` fields; typed calls default `max_tokens` to the
    model's context limit (vLLM's 16 would cut most documents short)."""

    _stream_ids = itertools.count()

    def generate(self, prompts: Any, sampling_params: Any = None, use_tqdm: bool = True,
                 priority: Sequence[int] | None = None, *, output_type: Any = None, tools: Sequence[Any] | None = None,
                 tool_choice: Any = "auto", parallel_tool_calls: bool = True, **sampling: Any) -> Any:
        """With `output_type` (also accepted in `sampling_params`' place): one prompt or conversation
        -> a value of that type. With `tools` (functions or pydantic models): one conversation -> its
        typed `ToolCalls` (see `formwork.sdk.tools`). Without: vLLM's `generate` (a list of `RequestOutput`)."""
        if tools is not None:
            if output_type is not None:
                raise TypeError("give either output_type or tools, not both")
            return self._call_tools(prompts, ToolSet.build(tools, tool_choice, parallel_tool_calls),
                                    sampling_params, sampling)
        if output_type is None and sampling_params is not None and not _is_params(sampling_params):
            output_type, sampling_params = sampling_params, None
        if output_type is None:
            if sampling:  # vLLM's call with SamplingParams fields as keywords
                sampling_params = self._params(sampling_params, sampling, typed=False)
            return super().generate(prompts, sampling_params, use_tqdm, priority)
        if isinstance(prompts, list) and prompts and all(isinstance(p, (str, list)) for p in prompts):
            raise TypeError("a typed generate takes one prompt or conversation; use generate_batch for several")
        return self.generate_batch([prompts], output_type, sampling_params, use_tqdm=False, priority=priority,
                                   **sampling)[0]

    def generate_batch(self, prompts: Sequence[Prompt], output_type: Any = None,
                       sampling_params: SamplingParams | None = None, *, use_tqdm: bool = True,
                       priority: Sequence[int] | None = None, **sampling: Any) -> list[Any]:
        """Generate for every prompt or conversation in one engine batch; the values in order (the
        plain texts without `output_type`). The first truncated or invalid output raises."""
        fmt = output_format(output_type) if output_type is not None else None
        params = self._params(sampling_params, sampling, fmt=fmt)
        outputs = super().generate([self._prompt_ids(p) for p in prompts], params, use_tqdm, priority)
        return [_value(output, fmt, params) for output in outputs]

    def stream(self, prompt: Prompt, output_type: Any = None, sampling_params: SamplingParams | None = None, *,
               tools: Sequence[Any] | None = None, tool_choice: Any = "auto", parallel_tool_calls: bool = True,
               **sampling: Any) -> Iterator[Any]:
        """Yield each new piece of text as a `PartialText`, then the parsed value (or the full text); with
        `tools` (one conversation), content pieces and each typed `ToolCall` as soon as it closes, then
        the reply's `ToolCalls`."""
        if tools is not None:
            if output_type is not None:
                raise TypeError("give either output_type or tools, not both")
            yield from self._stream_tools(prompt, ToolSet.build(tools, tool_choice, parallel_tool_calls),
                                          sampling_params, sampling)
            return
        fmt = output_format(output_type) if output_type is not None else None
        params = self._params(sampling_params, sampling, fmt=fmt)
        final = None
        for piece, final in self._run_streamed(self._prompt_ids(prompt), params):
            if piece:
                yield PartialText(piece)
        yield _value(final, fmt, params)

    def _run_streamed(self, ids: list[int], params: SamplingParams) -> Iterator[tuple[str, RequestOutput | None]]:
        """(new text, the output once finished else None) for each step of one request."""
        request_id = f"sdk-stream-{next(self._stream_ids)}"
        try:
            self.engine.add_request(request_id, ids, params)
        except RequestError as exc:
            raise GenerationError(f"the engine rejected the request: {exc}") from exc
        final: RequestOutput | None = None
        sent = 0
        try:
            while final is None and self.engine.has_unfinished_requests():
                for output in self.engine.step():
                    if output.request_id != request_id:
                        continue
                    text = output.outputs[0].text
                    final = output if output.finished else None
                    yield text[sent:], final
                    sent = len(text)
        finally:
            if final is None:
                self.engine.abort_request(request_id)
        if final is None:
            raise GenerationError(f"request {request_id} vanished from the engine before it finished")

    def _stream_tools(self, messages: Any, tool_set: ToolSet, given: SamplingParams | None,
                      sampling: dict[str, Any]) -> Iterator[Any]:
        ids, params, calling = self._tool_request(messages, tool_set, given, sampling)
        calls = StreamedCalls(tool_set)
        reader = calling.stream() if calling is not None else None
        reason = None
        for piece, final in self._run_streamed(ids, params):
            if final is not None and final.error is not None:
                raise GenerationError(f"the engine failed request {final.request_id}: {final.error}")
            reason = final.outputs[0].finish_reason if final is not None else None
            deltas = reader.deltas(0, piece, reason)[0] if reader is not None else [{"content": piece}]
            for delta in deltas:
                for item in calls.feed(delta):
                    yield PartialText(item) if isinstance(item, str) else item
        yield calls.result(reason, params.max_tokens)

    def _call_tools(self, messages: Any, tool_set: ToolSet, given: SamplingParams | None,
                    sampling: dict[str, Any]) -> ToolCalls:
        """One conversation with tools offered through the chat template; calls constrained to their schemas."""
        ids, params, calling = self._tool_request(messages, tool_set, given, sampling)
        output = super().generate([ids], params, use_tqdm=False)[0]
        if output.error is not None:
            raise GenerationError(f"the engine failed request {output.request_id}: {output.error}")
        completion = output.outputs[0]
        if calling is None:
            return tool_set.calls([], completion.text or None, completion.finish_reason, params.max_tokens)
        message, reason = calling.message(completion.text, completion.finish_reason)
        raw = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
        return tool_set.calls(raw, message["content"], reason, params.max_tokens)

    def _tool_request(self, messages: Any, tool_set: ToolSet, given: SamplingParams | None,
                      sampling: dict[str, Any]) -> tuple[list[int], SamplingParams, ToolCalling | None]:
        """The prompt ids (tools rendered by the chat template), the params (calls constrained to their
        schemas) and how to read calls back (None under tool_choice none)."""
        if not (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)):
            raise TypeError("tools need one conversation (a non-empty list of chat messages)")
        fmt = detect_format(self.engine.files.chat_template)
        request = tool_set.tools_request()
        params = self._params(given, sampling)
        if params.n != 1:
            raise ValueError("a generate with tools returns the calls of one reply; n must be 1")
        if request.calls_allowed:
            params = params.clone(structured_outputs=request.constraint(fmt))
        text = self.engine.files.apply_chat_template(messages, add_generation_prompt=True,
                                                     tools=[t.to_template() for t in request.tools])
        ids = list(self.tokenizer(text, add_special_tokens=False).input_ids)
        calling = ToolCalling(fmt, tuple(t.name for t in request.callable)) if request.calls_allowed else None
        return ids, params, calling

    def _prompt_ids(self, prompt: Prompt) -> list[int]:
        """Token ids of a text prompt or of a conversation rendered with the chat template (token ids
        are taken as they are)."""
        if isinstance(prompt, str):
            return self.engine.tokenize(prompt)
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            return list(prompt)
        if isinstance(prompt, list) and prompt and all(isinstance(m, dict) for m in prompt):
            text = self.engine.files.apply_chat_template(prompt, add_generation_prompt=True)
            return list(self.tokenizer(text, add_special_tokens=False).input_ids)
        raise TypeError("a prompt is a string, a list of token ids or a non-empty list of chat messages "
                        "({'role': ..., 'content': ...})")

    @staticmethod
    def _params(given: SamplingParams | None, sampling: dict[str, Any], *, fmt: OutputFormat | None = None,
                typed: bool = True) -> SamplingParams:
        """`given` (or new params) updated with `sampling` and the output format's constraint; new params
        of a typed call have no token limit but the context."""
        if given is not None and not isinstance(given, SamplingParams):
            raise TypeError(f"sampling_params must be a SamplingParams, got {type(given).__name__}")
        if "structured_outputs" in sampling or (fmt is not None and given is not None and given.structured_outputs):
            raise TypeError("give either output_type or structured_outputs, not both")
        if fmt is not None:
            sampling = {**sampling, "structured_outputs": fmt.structured_outputs}
            if sampling.get("n", given.n if given is not None else 1) != 1:
                raise ValueError("a typed generate returns one value per prompt; n must be 1")
        if given is not None:
            return given.clone(**sampling) if sampling else given
        if typed:
            sampling = {"max_tokens": None, **sampling}
        return SamplingParams(**sampling)


def _is_params(value: Any) -> bool:
    if isinstance(value, SamplingParams):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(p, SamplingParams) for p in value)


def _value(output: RequestOutput, fmt: OutputFormat | None, params: SamplingParams) -> Any:
    """The typed value (or text) of a finished request; failures raise."""
    if output.error is not None:
        raise GenerationError(f"the engine failed request {output.request_id}: {output.error}")
    completion = output.outputs[0]
    if fmt is None:
        return completion.text
    return fmt.result(completion.text, completion.finish_reason, params.max_tokens)

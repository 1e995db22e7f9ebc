"""Tool calling on `formwork serve` with the demo model, through the official `openai` client: every
returned call's arguments parse and validate in each `tool_choice` mode, streamed or not; streams
have OpenAI's delta shape and add up to the whole response; `parse` with `pydantic_function_tool`
gives typed arguments; bad tool fields are 400s naming the field.

(A few seeded requests per mode here; `benchmarks/tool_calling.py` runs 50 per mode.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import in_process_server, shared_server  # noqa: E402

from formwork.core.config import EngineConfig
from formwork.core.demo import DEMO_MODEL_NAME

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
                                                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"], "additionalProperties": False}}}
CONVERT = {"type": "function", "function": {
    "name": "convert_currency", "description": "Convert an amount of money between currencies.",
    "parameters": {"type": "object", "properties": {"amount": {"type": "number", "minimum": 0},
                                                    "from": {"type": "string", "enum": ["USD", "EUR", "GBP"]},
                                                    "to": {"type": "string", "enum": ["USD", "EUR", "GBP"]}},
                   "required": ["amount", "from", "to"], "additionalProperties": False}}}
TOOLS = [WEATHER, CONVERT]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]
MODES = {"required": "required", "named": {"type": "function", "function": {"name": "convert_currency"}},
         "auto": "auto"}
SEEDS = range(3)


class Person(BaseModel):
    """Store a new person."""

    name: str = Field(max_length=30)
    age: int = Field(ge=0, le=120)


@pytest.fixture(scope="module")
def client():
    server = shared_server(None)  # no --model: the demo model
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=300)


def create(client, stream: bool = False, **fields):
    return client.chat.completions.create(model=DEMO_MODEL_NAME, **{"messages": ASK, "tools": TOOLS,
                                                                    "max_tokens": 120, "temperature": 1.0,
                                                                    "stream": stream, **fields})


def streamed(chunks) -> tuple[str, list[dict], str]:
    """Content, calls and finish reason that OpenAI's delta shape adds up to (checking the shape)."""
    content, calls, reason = "", {}, None
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for part in delta.tool_calls or []:  # a call comes whole, once closed: id, type, name, arguments
                assert part.index not in calls and part.id.startswith("call_") and part.type == "function"
                assert part.function.name and part.function.arguments
                calls[part.index] = {"id": part.id, "name": part.function.name, "arguments": part.function.arguments}
            reason = choice.finish_reason or reason
    assert sorted(calls) == list(range(len(calls)))
    return content, [calls[i] for i in sorted(calls)], reason


def whole(completion) -> tuple[str, list[dict], str]:
    choice = completion.choices[0]
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    return choice.message.content or "", calls, choice.finish_reason


def check_calls(calls: list[dict], reason: str, allowed: set[str]) -> None:
    """Every call names an allowed tool, its arguments parse and validate; calls end the reply."""
    for call in calls:
        assert call["name"] in allowed and call["id"].startswith("call_")
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])
    assert reason in ("tool_calls", "length", "stop")
    assert (reason == "tool_calls") == (bool(calls) and reason != "length")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_every_returned_call_validates(client, mode, stream):
    allowed = {"convert_currency"} if mode == "named" else set(SCHEMAS)
    called = 0
    for seed in SEEDS:
        out = create(client, stream, tool_choice=MODES[mode], seed=seed)
        content, calls, reason = streamed(out) if stream else whole(out)
        check_calls(calls, reason, allowed)
        called += reason == "tool_calls"
        if mode != "auto":
            assert content == "" and reason in ("tool_calls", "length")
    assert called >= len(SEEDS) - 1  # the demo model calls a tool when asked for weather, and closes its calls


def test_a_stream_adds_up_to_the_whole_response(client):
    for seed in SEEDS:
        content, calls, reason = whole(create(client, tool_choice="required", seed=seed))
        s_content, s_calls, s_reason = streamed(create(client, True, tool_choice="required", seed=seed))
        drop_ids = [{k: v for k, v in c.items() if k != "id"} for c in calls]
        assert (s_content, [{k: v for k, v in c.items() if k != "id"} for c in s_calls], s_reason) == \
            (content, drop_ids, reason)


def test_parallel_calls_validate_and_can_be_turned_off(client):
    ask = [{"role": "user", "content": "What's the weather in Paris, and also: what's the weather in Tokyo?"}]
    counts = []
    for seed in SEEDS:
        content, calls, reason = whole(create(client, messages=ask, tool_choice="required", seed=seed))
        check_calls(calls, reason, set(SCHEMAS))
        counts.append(len(calls))
        _, single, reason = whole(create(client, messages=ask, tool_choice="required", seed=seed,
                                         parallel_tool_calls=False))
        check_calls(single, reason, set(SCHEMAS))
        assert len(single) == 1 or reason == "length"
    assert max(counts) >= 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_call_cut_by_max_tokens_is_length_not_a_call(client, stream):
    out = create(client, stream, tool_choice="required", seed=0, max_tokens=12)
    content, calls, reason = streamed(out) if stream else whole(out)
    assert reason == "length" and calls == [] and content  # the unfinished call stays text, never a call delta
    assert content.startswith("<tool_call>")


def test_parse_with_pydantic_function_tool_gives_typed_arguments(client):
    completion = client.chat.completions.parse(
        model=DEMO_MODEL_NAME, messages=[{"role": "user", "content": "Add a person named Ana who is 31."}],
        tools=[openai.pydantic_function_tool(Person)], tool_choice="required", temperature=1.0, seed=5,
        max_tokens=120)
    call = completion.choices[0].message.tool_calls[0]
    assert call.function.name == "Person" and isinstance(call.function.parsed_arguments, Person)


def test_a_conversation_with_tool_results_goes_on(client):
    messages = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": '{"temperature": 21, "unit": "celsius", "conditions": "sunny"}'}]
    for choice in ("none", "auto"):  # after a tool's result the demo model answers in words, not another call
        out = create(client, messages=messages, tool_choice=choice, temperature=0, max_tokens=60)
        assert out.choices[0].finish_reason == "stop" and out.choices[0].message.tool_calls == []
        assert out.choices[0].message.content and "<tool_call>" not in out.choices[0].message.content


@pytest.mark.parametrize("fields, param", [
    (dict(tool_choice={"type": "function", "function": {"name": "book_flight"}}), "tool_choice.function.name"),
    (dict(tools=[{"type": "function", "function": {"parameters": {"type": "object"}}}]), "tools.0.function.name"),
    (dict(tools=[WEATHER, {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "strin"}}}}}]), "tools.1.function.parameters"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}}}]),
     "tools.0.function.parameters"),
])
def test_bad_tools_are_400s_naming_the_parameter(client, fields, param):
    with pytest.raises(openai.BadRequestError) as info:
        create(client, **fields)
    assert info.value.status_code == 400 and info.value.body["param"] == param


def test_a_template_without_tools_is_a_400_on_tools():
    with in_process_server(EngineConfig(max_num_seqs=2), "tiny") as (url, _):
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="tiny", messages=ASK, tools=TOOLS, max_tokens=5)
    assert info.value.body["param"] == "tools" and "does not render tools" in info.value.body["message"]



ANSWER = {"type": "object", "properties": {"host": {"type": "string", "maxLength": 20},
                                           "port": {"type": "integer", "minimum": 1, "maximum": 65535}},
          "required": ["host", "port"], "additionalProperties": False}


def tokens_opening_a_call() -> dict[str, int]:
    """logit_bias that bans every demo token able to start `<tool_call>` (so a reply cannot call)."""
    from transformers import PreTrainedTokenizerFast

    from formwork.core.demo import demo_model_dir

    tokenizer = PreTrainedTokenizerFast.from_pretrained(demo_model_dir())
    ids = [i for piece, i in tokenizer.get_vocab().items()
           if tokenizer.convert_tokens_to_string([piece]).lstrip(" \t\r\n").startswith("<")]
    return {str(i): -100 for i in ids}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("can_call", [True, False], ids=["free", "no-call"])
def test_response_format_beside_tools_holds_a_reply_without_calls(client, stream, can_call):
    """auto with response_format: each reply is calls only, or content valid under the format (the
    demo model calls whenever it may; with the call's first token banned, every reply is content)."""
    fmt = {"type": "json_schema", "json_schema": {"name": "config", "schema": ANSWER}}
    bias = {} if can_call else {"logit_bias": tokens_opening_a_call()}
    kinds = []
    for seed, ask in enumerate(["Give me a JSON object for a server config.", "What's the weather in Paris?"]):
        out = create(client, stream, messages=[{"role": "user", "content": ask}], tool_choice="auto",
                     response_format=fmt, seed=seed, max_tokens=200, **bias)
        content, calls, reason = streamed(out) if stream else whole(out)
        check_calls(calls, reason, set(SCHEMAS))
        if reason == "length":
            continue
        if calls:
            assert content == ""
        else:
            jsonschema.validate(json.loads(content), ANSWER)
        kinds.append("calls" if calls else "text")
    assert kinds and (can_call or set(kinds) == {"text"})

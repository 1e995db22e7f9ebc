"""The SDK's tools: Python functions and pydantic models become OpenAI tools, and the demo model's calls
come back typed, in process (`formwork.LLM`) and over HTTP (`formwork.Client`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import shared_server  # noqa: E402

import formwork
from formwork.sdk.errors import OutputValidationError, TruncatedOutputError
from formwork.sdk.tools import StreamedCalls, ToolSet, as_tool

WEATHER_ASK = [{"role": "user", "content": "What's the weather in Oslo?"}]


def get_weather(city: Annotated[str, Field(max_length=30)], unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather in a city.

    The unit defaults to celsius."""
    return f"{city}: 21 degrees {unit}"


class Person(BaseModel):
    """Store a new person."""

    name: str = Field(max_length=30)
    age: int = Field(ge=0, le=120)


def test_a_function_becomes_a_strict_tool_from_its_signature_and_docstring():
    tool = as_tool(get_weather).to_openai()
    assert tool["type"] == "function" and tool["function"]["strict"] is True
    function = tool["function"]
    assert (function["name"], function["description"]) == ("get_weather", "Get the current weather in a city.")
    parameters = function["parameters"]
    assert parameters["required"] == ["city"] and parameters["additionalProperties"] is False
    assert parameters["properties"]["city"]["maxLength"] == 30
    assert parameters["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]


def test_a_pydantic_model_is_a_tool_named_after_its_class():
    tool = as_tool(Person).to_openai()["function"]
    assert (tool["name"], tool["description"]) == ("Person", "Store a new person.")
    assert tool["parameters"] == Person.model_json_schema()


def test_what_cannot_be_a_tool_is_refused():
    def variadic(*cities: str) -> None:
        """Many cities."""

    with pytest.raises(TypeError, match=r"\*args"):
        as_tool(variadic)
    with pytest.raises(TypeError, match="a Python function or a pydantic model"):
        as_tool("get_weather")
    with pytest.raises(ValueError, match="not among the tools"):
        ToolSet.build([get_weather], tool_choice="get_time")
    with pytest.raises(ValueError, match="share a name"):
        ToolSet.build([get_weather, get_weather])
    with pytest.raises(TypeError, match="non-empty list"):
        ToolSet.build([])


def test_calls_are_typed_and_checked():
    tools = ToolSet.build([get_weather, Person], tool_choice=Person)
    assert tools.request_fields()["tool_choice"] == {"type": "function", "function": {"name": "Person"}}
    calls = tools.calls([("call_1", "get_weather", '{"city": "Oslo"}'),
                         ("call_2", "Person", '{"name": "Ana", "age": 3}')], "ok", "tool_calls", None)
    assert calls.content == "ok" and [c.name for c in calls] == ["get_weather", "Person"]
    assert calls[0]() == "Oslo: 21 degrees celsius" and calls[1].arguments == Person(name="Ana", age=3)
    with pytest.raises(TypeError, match="pydantic model"):
        calls[1]()
    with pytest.raises(OutputValidationError, match="not among the tools"):
        tools.calls([("c", "book_flight", "{}")], None, "tool_calls", None)
    with pytest.raises(OutputValidationError, match="do not fit"):
        tools.calls([("c", "Person", '{"name": "Ana", "age": 300}')], None, "tool_calls", None)
    with pytest.raises(TruncatedOutputError):
        tools.calls([], "<tool_call>", "length", 8)


@pytest.fixture(scope="module")
def llm():
    return formwork.LLM()  # the demo model


def test_llm_generate_with_tools_returns_typed_calls(llm):
    calls = llm.generate(WEATHER_ASK, tools=[get_weather, Person], tool_choice="required", temperature=1.0,
                         seed=0, max_tokens=120)
    assert isinstance(calls, formwork.ToolCalls) and calls and calls.content is None
    assert all(c.name in ("get_weather", "Person") and c.id.startswith("call_") for c in calls)
    weather = [c for c in calls if c.name == "get_weather"]
    assert weather and isinstance(weather[0](), str)


def test_llm_named_tool_and_none(llm):
    calls = llm.generate([{"role": "user", "content": "Add a person named Ana who is 31."}],
                         tools=[get_weather, Person], tool_choice=Person, temperature=1.0, seed=1, max_tokens=120)
    assert [type(c.arguments) for c in calls] == [Person] * len(calls) and calls
    answer = llm.generate(WEATHER_ASK, tools=[get_weather], tool_choice="none", temperature=0, max_tokens=40)
    assert list(answer) == [] and isinstance(answer.content, str)


def test_client_generate_with_tools_against_the_server():
    server = shared_server(None)  # the demo model
    with formwork.Client(server.url) as client:
        calls = client.generate(WEATHER_ASK, tools=[get_weather, Person], tool_choice=get_weather, temperature=1.0,
                                seed=2, max_tokens=120)
        assert calls and all(c.name == "get_weather" for c in calls)
        assert isinstance(calls[0].arguments.city, str) and len(calls[0].arguments.city) <= 30
        with pytest.raises(formwork.BadRequestError) as info:
            client.generate(WEATHER_ASK, tools=[get_weather], tool_choice="required", max_tokens=1_000_000)
        assert info.value.status_code == 400


# ---- streaming ---------------------------------------------------------------------------------------

def _streamed_deltas(calls: list[tuple[str, str]], content: str, cuts: list[int], whole: bool) -> list[dict]:
    """OpenAI deltas of a reply: content, then each call whole (formwork's shape) or as OpenAI sends it
    (id and name first, then the arguments cut at `cuts`)."""
    deltas = [{"content": content}] if content else []
    for i, (name, arguments) in enumerate(calls):
        head = {"index": i, "id": f"call_{i}", "type": "function"}
        if whole:
            deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": arguments}}]})
            continue
        deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        bounds = sorted({min(c, len(arguments)) for c in cuts} | {0, len(arguments)})
        deltas += [{"tool_calls": [{"index": i, "function": {"arguments": arguments[a:b]}}]}
                   for a, b in zip(bounds, bounds[1:])]
    return deltas


@given(ages=st.lists(st.integers(0, 120), min_size=1, max_size=3), content=st.sampled_from(["", "Sure."]),
       cuts=st.lists(st.integers(0, 40), max_size=6), whole=st.booleans())
@settings(max_examples=60, deadline=None)
def test_streamed_calls_come_typed_as_soon_as_each_closes(ages, content, cuts, whole):
    tools = ToolSet.build([get_weather, Person])
    calls = [("Person", json.dumps({"name": f"P{i}", "age": age})) for i, age in enumerate(ages)]
    reader, seen = StreamedCalls(tools), []
    for delta in _streamed_deltas(calls, content, cuts, whole):
        got = reader.feed(delta)
        for item in got:
            if isinstance(item, formwork.ToolCall):
                index = int(item.id.removeprefix("call_"))
                assert delta["tool_calls"][0]["index"] == index  # the delta that closed its arguments
                seen.append(item)
    result = reader.result("tool_calls", None)
    assert list(result) == seen and [c.arguments.age for c in seen] == ages
    assert result.content == (content or None)


def test_a_streamed_reply_cut_or_left_open_raises():
    tools = ToolSet.build([Person])
    reader = StreamedCalls(tools)
    reader.feed({"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                 "function": {"name": "Person", "arguments": '{"name": "A'}}]})
    with pytest.raises(TruncatedOutputError):
        reader.result("length", 8)
    with pytest.raises(OutputValidationError):
        reader.result("stop", None)  # a call whose arguments never closed


def _consume(items) -> tuple[list, list, object]:
    items = list(items)
    calls = [i for i in items[:-1] if isinstance(i, formwork.ToolCall)]
    texts = [i for i in items[:-1] if isinstance(i, formwork.PartialText)]
    return calls, texts, items[-1]


PARALLEL_ASK = [{"role": "user", "content": "What's the weather in Oslo, and also: what's the weather in Lima?"}]


def test_llm_stream_with_tools_yields_each_call_then_the_calls(llm):
    calls, texts, final = _consume(llm.stream(PARALLEL_ASK, tools=[get_weather, Person], tool_choice="required",
                                              temperature=1.0, seed=3, max_tokens=160))
    assert isinstance(final, formwork.ToolCalls) and final and list(final) == calls and not texts
    whole = llm.generate(PARALLEL_ASK, tools=[get_weather, Person], tool_choice="required", temperature=1.0,
                         seed=3, max_tokens=160)
    assert [(c.name, c.arguments.model_dump()) for c in whole] == \
        [(c.name, c.arguments.model_dump()) for c in calls]


def test_client_stream_with_tools_against_the_server():
    server = shared_server(None)  # the demo model
    with formwork.Client(server.url) as client:
        calls, _, final = _consume(client.stream(PARALLEL_ASK, tools=[get_weather, Person], tool_choice="required",
                                                 temperature=1.0, seed=4, max_tokens=160))
        assert isinstance(final, formwork.ToolCalls) and final and list(final) == calls
        assert all(c.id.startswith("call_") and c.name in ("get_weather", "Person") for c in calls)
        whole = client.generate(PARALLEL_ASK, tools=[get_weather, Person], tool_choice="required", temperature=1.0,
                                seed=4, max_tokens=160)
        assert [(c.name, c.arguments.model_dump()) for c in whole] == \
        [(c.name, c.arguments.model_dump()) for c in calls]
        with pytest.raises(TruncatedOutputError):
            list(client.stream(PARALLEL_ASK, tools=[get_weather], tool_choice="required", max_tokens=6))

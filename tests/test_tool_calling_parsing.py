"""Tool calling without a model: call formats read off chat templates, the request's tool fields and
their constraint, tool turns of the conversation, and calls read out of completions (streamed in any
pieces, the deltas add up to what a whole response says)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.server.errors import APIError
from formwork.server.protocol import parse_chat_request
from formwork.server.tools import (FORMATS, HERMES, LLAMA3_JSON, MISTRAL, ToolFormatError, detect_format,
                                   parse_completion)
from formwork.server.tools.calling import ToolCalling
from formwork.server.tools.request import text_rule

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
USER = [{"role": "user", "content": "Weather in Paris?"}]


def chat(**fields):
    return parse_chat_request({"model": "m", "messages": USER, **fields}, max_schema_bytes=1 << 20)


def refusal(**fields) -> APIError:
    with pytest.raises(APIError) as info:
        chat(**fields)
    assert info.value.status == 400
    return info.value


# ----- formats ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("template, fmt", [
    ("{% for t in tools %}{{ t | tojson }}{% endfor %}<tool_call>\n{{ call }}\n</tool_call>", HERMES),
    ("{% if tools %}[AVAILABLE_TOOLS]{% endif %}[TOOL_CALLS] [{{ calls }}]", MISTRAL),
    ("{% if tools %}<|start_header_id|>ipython<|end_header_id|>{% endif %}<|python_tag|>", LLAMA3_JSON),
])
def test_the_format_is_read_off_the_template(template, fmt):
    assert detect_format(template) is fmt


@pytest.mark.parametrize("template, says", [
    (None, "does not render tools"),
    ("{% for m in messages %}{{ m.content }}{% endfor %}", "does not render tools"),
    ("{% for t in tools %}<function>{{ t | tojson }}</function>{% endfor %}", "does not know"),
])
def test_templates_without_a_known_format_are_refused(template, says):
    with pytest.raises(ToolFormatError, match=says):
        detect_format(template)


def test_the_demo_template_speaks_hermes():
    from formwork.core.model_files import ModelFiles
    from formwork.core.demo import DEMO_MODEL_DIR

    files = ModelFiles.load(DEMO_MODEL_DIR)
    assert detect_format(files.chat_template) is HERMES
    text = files.apply_chat_template(
        USER + [{"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                {"role": "tool", "content": "{\"temperature\": 21}", "tool_call_id": "call_1"}],
        tools=[WEATHER])
    call = HERMES.begin("get_weather") + '{"city": "Paris"}' + HERMES.end
    assert '"name": "get_weather", "description": "Weather in a city."' in text
    assert f"<|im_start|>assistant\n{call}<|im_end|>\n<|im_start|>tool\n{{\"temperature\": 21}}<|im_end|>" in text


# ----- the request's tool fields ----------------------------------------------------------------------

@pytest.mark.parametrize("choice, free_text, at_least_one, names", [
    ("auto", True, False, ["get_weather", "get_time"]),
    ("required", False, True, ["get_weather", "get_time"]),
    ({"type": "function", "function": {"name": "get_time"}}, False, True, ["get_time"]),
])
@pytest.mark.parametrize("parallel", [True, False])
def test_each_choice_becomes_its_tags_constraint(choice, free_text, at_least_one, names, parallel):
    tools = chat(tools=[WEATHER, TIME], tool_choice=choice, parallel_tool_calls=parallel).tools
    spec = tools.constraint(HERMES)["tags"]
    assert (spec["free_text"], spec["at_least_one"], spec["stop_after_first"]) == (free_text, at_least_one,
                                                                                   not parallel)
    assert spec["triggers"] == ["<tool_call>"]
    assert [tag["begin"] for tag in spec["tags"]] == [HERMES.begin(n) for n in names]
    assert all(tag["end"] == HERMES.end for tag in spec["tags"])
    assert spec["tags"][-1]["schema"] == {"type": "object", "properties": {}}


def test_tools_default_to_auto_and_none_allows_no_calls():
    assert chat(tools=[WEATHER]).tools.choice == "auto"
    assert not chat(tools=[WEATHER], tool_choice="none").tools.calls_allowed
    assert chat().tools is None and chat(tool_choice="none").tools is None


@pytest.mark.parametrize("fields, param, code", [
    (dict(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "get_time"}}),
     "tool_choice.function.name", "invalid_value"),
    (dict(tools=[WEATHER], tool_choice="sometimes"), "tool_choice", "invalid_value"),
    (dict(tool_choice="required"), "tool_choice", "invalid_value"),
    (dict(tools=[{"type": "function", "function": {"parameters": {}}}]), "tools.0.function.name",
     "missing_required_parameter"),
    (dict(tools=[WEATHER, {"type": "function"}]), "tools.1.function", "missing_required_parameter"),
    (dict(tools=[{"type": "function", "function": {"name": "get weather"}}]), "tools.0.function.name",
     "invalid_value"),
    (dict(tools=[WEATHER, WEATHER]), "tools.1.function.name", "invalid_value"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                                                                              "properties": {"a": {"type": 7}}}}}]),
     "tools.0.function.parameters", "invalid_schema"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]),
     "tools.0.function.parameters", "invalid_schema"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]),
     "tools.0.function.parameters", "invalid_type"),
    (dict(tools=[{"type": "retrieval"}]), "tools.0.type", "invalid_value"),
    (dict(tools=[WEATHER], structured_outputs={"choice": ["a", "b"]}), "structured_outputs",
     "unsupported_parameter"),
    (dict(tools=[WEATHER], structured_outputs={"json": {}, "disable_any_whitespace": True}), "structured_outputs",
     "unsupported_parameter"),
    (dict(functions=[{"name": "f"}]), "functions", "unsupported_parameter"),
])
def test_bad_tool_fields_are_400s_naming_the_field(fields, param, code):
    error = refusal(**fields)
    assert (error.param, error.code) == (param, code)


@pytest.mark.parametrize("fmt, text", [
    ({"type": "json_object"}, {"schema": {"type": "object"}}),
    ({"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "array"}}}, {"schema": {"type": "array"}}),
])
def test_response_format_beside_tools_is_the_text_of_a_reply_without_calls(fmt, text):
    request = chat(tools=[WEATHER], response_format=fmt)
    spec = request.tools.constraint(HERMES, text_rule(request.constraint, request.constraint_param))["tags"]
    assert spec["text"] == text and not spec["free_text"] and not spec["at_least_one"]
    required = chat(tools=[WEATHER], tool_choice="required", response_format=fmt)
    assert "text" not in required.tools.constraint(HERMES, text)["tags"]  # calls only: no text to hold


def test_tool_turns_reach_the_template_with_decoded_arguments():
    messages = USER + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_7", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "cold"}]
    parsed = parse_chat_request({"model": "m", "messages": messages}, max_schema_bytes=1024).messages
    assert parsed[1]["tool_calls"] == [{"id": "call_7", "type": "function",
                                        "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]
    assert parsed[2] == {"role": "tool", "content": "cold", "tool_call_id": "call_7", "name": "get_weather"}


@pytest.mark.parametrize("message, param", [
    ({"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{"}}]},
     "messages.1.tool_calls.0.function.arguments"),
    ({"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
     "messages.1.tool_calls.0.function.arguments"),
    ({"role": "tool", "content": "x"}, "messages.1.tool_call_id"),
])
def test_bad_tool_turns_are_400s_naming_the_field(message, param):
    with pytest.raises(APIError) as info:
        parse_chat_request({"model": "m", "messages": USER + [message]}, max_schema_bytes=1024)
    assert info.value.param == param


# ----- reading calls back -----------------------------------------------------------------------------

NAMES = ["get_weather", "f", "lookup-2"]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                       max_size=3), max_leaves=8)
calls_strategy = st.lists(st.tuples(st.sampled_from(NAMES), st.dictionaries(st.text(max_size=6), json_values,
                                                                            max_size=3)), max_size=3)


def render(fmt, content: str, calls: list[tuple[str, dict]], gap: str) -> str:
    return content + "".join(gap + fmt.begin(name) + json.dumps(args) + fmt.end for name, args in calls)


def stream_pieces(fmt, text: str, cuts: list[int], reason: str):
    stream = ToolCalling(fmt, tuple(NAMES)).stream()
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    deltas = []
    for a, b in zip(bounds, bounds[1:]):
        deltas += stream.deltas(0, text[a:b], None)[0]
    final, finish = stream.deltas(0, "", reason)
    return deltas + final, finish


def assemble(deltas: list[dict]) -> tuple[str, list[dict]]:
    """What an OpenAI client makes of the deltas: the content and each call by index."""
    content, calls = "", {}
    for delta in deltas:
        content += delta.get("content", "")
        for part in delta.get("tool_calls", []):
            assert part["index"] not in calls  # a call is sent whole, once it has closed
            assert set(part) == {"index", "id", "type", "function"} and part["type"] == "function"
            assert set(part["function"]) == {"name", "arguments"}
            calls[part["index"]] = {"id": part["id"], **part["function"]}
    return content, [calls[i] for i in sorted(calls)]


@given(fmt=st.sampled_from(FORMATS), content=st.text(max_size=20), calls=calls_strategy,
       gap=st.sampled_from(["", "\n", " \n "]), cuts=st.lists(st.integers(0, 400), max_size=12))
@settings(max_examples=150, deadline=None)
def test_streamed_deltas_add_up_to_the_whole_response(fmt, content, calls, gap, cuts):
    content = content.replace(fmt.trigger, "")
    text = render(fmt, content, calls, gap)
    deltas, finish = stream_pieces(fmt, text, cuts, "stop")
    streamed_content, streamed_calls = assemble(deltas)
    message, whole_finish = ToolCalling(fmt, tuple(NAMES)).message(text, "stop")
    assert finish == whole_finish == ("tool_calls" if calls else "stop")
    assert streamed_content == (message["content"] or "") == content.rstrip(" \t\r\n")
    assert [(c["id"], c["name"], c["arguments"]) for c in streamed_calls] != [] or not calls
    assert [(c["name"], json.loads(c["arguments"])) for c in streamed_calls] == calls
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == calls
    assert all(c["id"].startswith("call_") for c in message["tool_calls"])


@given(fmt=st.sampled_from(FORMATS), calls=calls_strategy.filter(bool), data=st.data())
@settings(max_examples=100, deadline=None)
def test_a_call_cut_short_is_never_returned_as_a_call(fmt, calls, data):
    text = render(fmt, "", calls, "\n")
    cut = data.draw(st.integers(0, len(text) - 1))
    parser = parse_completion(fmt, NAMES, text[:cut])
    complete = [c for c in parser.calls if c.complete]
    assert [(c.name, json.loads(c.arguments)) for c in complete] == calls[:len(complete)]
    assert len(complete) < len(calls)
    message, finish = ToolCalling(fmt, tuple(NAMES)).message(text[:cut], "length")
    assert finish == "length" and len(message["tool_calls"]) == len(complete)
    rest = text[:cut]
    for call in complete:
        rest = rest.replace(call.raw, "", 1)
    assert "".join((message["content"] or "").split()) == "".join(rest.split())  # nothing is lost


@given(fmt=st.sampled_from(FORMATS), content=st.text(max_size=10), calls=calls_strategy.filter(bool),
       cuts=st.lists(st.integers(0, 400), max_size=8), data=st.data())
@settings(max_examples=150, deadline=None)
def test_a_stream_cut_by_max_tokens_sends_no_part_of_the_unfinished_call(fmt, content, calls, cuts, data):
    content = content.replace(fmt.trigger, "")
    text = render(fmt, content, calls, "\n")
    cut = data.draw(st.integers(len(content), len(text) - 1))
    deltas, finish = stream_pieces(fmt, text[:cut], cuts, "length")
    streamed_content, streamed_calls = assemble(deltas)
    message, whole_finish = ToolCalling(fmt, tuple(NAMES)).message(text[:cut], "length")
    assert finish == whole_finish == "length"
    assert [(c["name"], json.loads(c["arguments"])) for c in streamed_calls] == calls[:len(streamed_calls)]
    assert len(streamed_calls) < len(calls)  # the cut one is not among them
    assert [(c["name"], c["arguments"]) for c in streamed_calls] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    assert streamed_content == (message["content"] or "")


def test_a_trigger_that_starts_no_offered_call_stays_text():
    text = "see <tool_call>\n{\"name\": \"other\"} done"
    message, finish = ToolCalling(HERMES, ("get_weather",)).message(text, "stop")
    assert message == {"content": text, "tool_calls": []} and finish == "stop"


tool_like = st.fixed_dictionaries({"type": st.sampled_from(["function", "x"]), "function": st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["f", "g", "", "a b"]) | json_values, "description": json_values,
                  "strict": json_values, "parameters": json_values | st.dictionaries(
                      st.sampled_from(["type", "properties", "$schema", "required", "$ref"]), json_values)})})


@given(tools=st.lists(tool_like, max_size=3) | json_values,
       choice=st.sampled_from(["auto", "none", "required"]) | json_values
       | st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries({"name": json_values})}))
@settings(max_examples=150, deadline=None)
def test_any_tool_fields_parse_or_give_a_400(tools, choice):
    try:
        request = chat(tools=tools, tool_choice=choice)
    except APIError as exc:
        assert exc.status == 400 and exc.param and (exc.param.startswith("tool") or exc.param == "parallel_tool_calls")
        return
    if request.tools is not None and request.tools.calls_allowed:
        assert request.tools.constraint(HERMES)["tags"]["tags"]


@pytest.fixture(scope="module")
def demo_vocab():
    from formwork.core.demo import DEMO_MODEL_DIR
    from formwork.grammar import Vocabulary

    return Vocabulary.from_pretrained(DEMO_MODEL_DIR)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("choice", ["auto", "required"])
def test_each_format_compiles_and_its_calls_read_back(demo_vocab, fmt, choice):
    from formwork.grammar import compile_tags

    tools = chat(tools=[WEATHER, TIME], tool_choice=choice).tools
    grammar = compile_tags(tools.constraint(fmt)["tags"], demo_vocab)
    calls = [("get_weather", {"city": "Paris"}), ("get_time", {})]
    text = render(fmt, "Sure." if choice == "auto" else "", calls, "\n")
    matcher = grammar.matcher()
    assert matcher.accept_string(text) and matcher.can_terminate()
    bad = grammar.matcher()  # arguments outside the schema are refused
    assert not bad.accept_string(fmt.begin("get_weather") + '{"city": 7}')
    message, finish = ToolCalling(fmt, ("get_weather", "get_time")).message(text, "stop")
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == calls
    assert finish == "tool_calls" and message["content"] == ("Sure." if choice == "auto" else None)

"""Constrained outputs through the server: response_format json_schema / json_object, the
structured_outputs extension (regex, choice, EBNF grammar) and the openai client's `chat.completions.parse`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import lark
import openai
import pytest
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import API_KEY, MODEL, tiny_server  # noqa: E402

MESSAGES = [{"role": "user", "content": "Give me a record as JSON."}]
SCHEMA = {"type": "object",
          "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 99},
                         "color": {"enum": ["red", "green", "blue"]}},
          "required": ["ok", "n", "color"], "additionalProperties": False}


class Record(BaseModel):
    ok: bool
    n: int = Field(ge=0, le=99)
    color: str = Field(pattern="^(red|green|blue)$")


@pytest.fixture(scope="module")
def client():
    server = tiny_server()
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=API_KEY, max_retries=0, timeout=120)


def json_schema_format(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "record", "schema": schema, "strict": True}}


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_json_schema_outputs_validate(client, temperature):
    out = client.chat.completions.create(model=MODEL, messages=MESSAGES, n=3, temperature=temperature, seed=3,
                                         max_tokens=64, response_format=json_schema_format(SCHEMA))
    assert len(out.choices) == 3
    for choice in out.choices:
        assert choice.finish_reason == "stop", choice.message.content
        jsonschema.validate(json.loads(choice.message.content), SCHEMA)


def test_streamed_json_schema_output_validates(client):
    chunks = client.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=1.0, seed=11,
                                            max_tokens=64, stream=True, response_format=json_schema_format(SCHEMA))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), SCHEMA)


def test_parse_with_a_pydantic_model(client):
    completion = client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Record,
                                               temperature=1.0, seed=5, max_tokens=64)
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Record) and 0 <= parsed.n <= 99 and parsed.color in ("red", "green", "blue")


def test_regex_and_choice_extension(client):
    pattern = r"[a-z]{3}-\d{2}"
    for seed in range(3):
        out = client.completions.create(model=MODEL, prompt="Code:", max_tokens=16, temperature=1.0, seed=seed,
                                        extra_body={"structured_outputs": {"regex": pattern}})
        assert re.fullmatch(pattern, out.choices[0].text), out.choices[0].text
        out = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=8, temperature=1.0,
                                             seed=seed, extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
        assert out.choices[0].message.content in ("yes", "no")


def test_json_object(client):
    out = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=96, temperature=0,
                                         response_format={"type": "json_object"})
    content = out.choices[0].message.content
    assert content.startswith("{")
    if out.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(content), dict)
    else:
        assert out.choices[0].finish_reason == "length"


GREETING = '''
start: greeting " " name
greeting: "hello" | "hi"
name: /[a-z]{2,6}/
'''


def test_ebnf_grammar_extension(client):
    parser = lark.Lark(GREETING)
    for seed in range(3):
        out = client.completions.create(model=MODEL, prompt="Say:", max_tokens=16, temperature=1.0, seed=seed,
                                        extra_body={"structured_outputs": {"grammar": GREETING}})
        assert out.choices[0].finish_reason == "stop"
        parser.parse(out.choices[0].text)


def test_invalid_grammar_is_400(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt="Say:", max_tokens=4,
                                  extra_body={"structured_outputs": {"grammar": "start: missing_rule"}})
    error = info.value.response.json()["error"]
    assert error["code"] == "invalid_schema" and "missing_rule" in error["message"]

"""`formwork serve` without `--model` serves the embedded demo model; its constrained answers are
complete documents that validate (the openai client, unchanged)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import openai
import pytest
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import shared_server  # noqa: E402

from formwork.core.demo import DEMO_MODEL_NAME

PRODUCT = [{"role": "user", "content": "Generate a product as JSON."}]


class Product(BaseModel):
    id: int
    name: str
    price: float
    in_stock: bool


@pytest.fixture(scope="module")
def client():
    server = shared_server(None)  # no --model: the demo model
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=120)


def test_serves_the_demo_model_by_default(client):
    assert [m.id for m in client.models.list().data] == [DEMO_MODEL_NAME]


def test_unconstrained_greedy_answer_is_json(client):
    out = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=PRODUCT, temperature=0, max_tokens=200)
    assert out.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(out.choices[0].message.content), dict)


def test_parse_returns_a_validated_pydantic_object(client):
    completion = client.chat.completions.parse(model=DEMO_MODEL_NAME, messages=PRODUCT, response_format=Product,
                                               temperature=1.0, seed=7, max_tokens=200)
    assert isinstance(completion.choices[0].message.parsed, Product)


def test_streamed_constrained_samples_validate(client):
    schema = {"type": "object", "properties": {"host": {"type": "string", "maxLength": 30},
                                               "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                               "debug": {"type": "boolean"}},
              "required": ["host", "port", "debug"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "config", "schema": schema, "strict": True}}
    texts: dict[int, str] = {}
    reasons: dict[int, str] = {}
    for chunk in client.chat.completions.create(
            model=DEMO_MODEL_NAME, messages=[{"role": "user", "content": "Give me a JSON object for a server config."}],
            n=3, temperature=1.0, seed=1, max_tokens=120, stream=True, response_format=fmt):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
            reasons[c.index] = c.finish_reason or reasons.get(c.index)
    assert sorted(texts) == [0, 1, 2] and set(reasons.values()) == {"stop"}
    for text in texts.values():
        jsonschema.validate(json.loads(text), schema)

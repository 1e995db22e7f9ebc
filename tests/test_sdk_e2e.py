"""Typed outputs end to end: every output_type kind through the in-process `formwork.sdk.LLM` and through
`formwork.sdk.Client` against a live `formwork serve` on loopback (a tiny random Llama).

A random model rarely closes a string or an array by itself, so requests carry a `logit_bias` that
favours closing quotes, brackets and EOS: among the tokens the grammar allows, those win, so documents
end within a few tokens. The constraint still decides everything else (keys, types, enums, regexes).
"""
from __future__ import annotations

import asyncio
import dataclasses
import enum
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import jsonschema
import pydantic
import pytest
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).parent))
from conftest_sdk import to_json  # noqa: E402
from conftest_server import API_KEY, MODEL, tiny_server  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork import sdk  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.schemas.python_types import json_schema_of  # noqa: E402

MESSAGES = [{"role": "user", "content": "Give me a JSON object."}]
CLOSING = set('"]}')


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Badge(pydantic.BaseModel):
    label: str
    level: int = pydantic.Field(ge=0, le=9)
    shade: Shade


@dataclasses.dataclass
class Flags:
    active: bool
    shade: Shade
    note: Optional[str] = None


@dataclasses.dataclass
class Tree:
    value: bool
    children: list[Tree]


class Pair(TypedDict):
    left: bool
    right: Literal["x", "y"]


# (output type, check of the returned value)
KINDS: list[tuple[Any, Any]] = [
    (Badge, lambda v: isinstance(v, Badge) and isinstance(v.shade, Shade)),
    (Flags, lambda v: isinstance(v, Flags) and isinstance(v.active, bool)),
    (Tree, lambda v: isinstance(v, Tree) and all(isinstance(c, Tree) for c in v.children)),
    (Pair, lambda v: isinstance(v, dict) and set(v) == {"left", "right"} and v["right"] in ("x", "y")),
    (Shade, lambda v: isinstance(v, Shade)),
    (Literal["yes", "no"], lambda v: v in ("yes", "no")),
    (list[Shade], lambda v: isinstance(v, list) and all(isinstance(s, Shade) for s in v)),
    (dict[str, int], lambda v: isinstance(v, dict) and all(isinstance(x, int) for x in v.values())),
    (list[Annotated[int, pydantic.Field(ge=0, le=99)]], lambda v: isinstance(v, list) and all(0 <= x <= 99 for x in v)),
    (Optional[bool], lambda v: v is None or isinstance(v, bool)),
    (int | Literal["none"], lambda v: v == "none" or (isinstance(v, int) and not isinstance(v, bool))),
    (int, lambda v: isinstance(v, int) and not isinstance(v, bool)),
    (float, lambda v: isinstance(v, float)),
    (str, lambda v: isinstance(v, str)),
    (bool, lambda v: isinstance(v, bool)),
    (sdk.Regex(r"[a-c]{2}-\d"), lambda v: isinstance(v, str) and len(v) == 4 and v[2] == "-"),
    (sdk.Choice(["red", "green", "blue"]), lambda v: v in ("red", "green", "blue")),
]
KIND_IDS = [getattr(t, "__name__", None) or repr(t) for t, _ in KINDS]


def closing_bias(tokenizer, eos_ids: list[int]) -> dict[int, float]:
    """Favour, among whatever the grammar allows: closing a string (+40), closing brackets and EOS (+30),
    other punctuation runs with a comma (+10)."""
    bias = {}
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        if text and set(text) <= CLOSING:
            bias[token_id] = 40.0 if text.startswith('"') else 30.0
        elif text and set(text) <= CLOSING | {","}:
            bias[token_id] = 10.0
    bias.update({token_id: 30.0 for token_id in eos_ids})
    return bias


def assert_revalidates(output_type: Any, value: Any) -> None:
    """The value's JSON form validates against the type's schema (regex/choice: checked by the parser)."""
    if isinstance(output_type, (sdk.Regex, sdk.Choice)):
        assert sdk.output_format(output_type).parse(value) == value
        return
    jsonschema.validate(to_json(value), json_schema_of(output_type))


@pytest.fixture(scope="module")
def llm():
    return sdk.LLM(tiny_model_dir("llama"))


@pytest.fixture(scope="module")
def bias(llm):
    return closing_bias(llm.tokenizer, llm.engine.files.eos_token_ids)


@pytest.fixture(scope="module")
def client():
    with sdk.Client(tiny_server().url, API_KEY) as client:
        yield client


# ---- in process ----------------------------------------------------------------------------------

@pytest.mark.parametrize("output_type, check", KINDS, ids=KIND_IDS)
def test_every_kind_in_process(llm, bias, output_type, check):
    value = llm.generate(MESSAGES, output_type=output_type, temperature=0, max_tokens=48, logit_bias=bias)
    assert check(value), value
    assert_revalidates(output_type, value)


def test_batch_and_text_prompts_in_process(llm, bias):
    token_ids = llm.tokenizer("Flags:").input_ids
    values = llm.generate_batch([MESSAGES, "Flags:", token_ids], Flags, temperature=1.0, seed=3, max_tokens=48,
                                logit_bias=bias, priority=[1, 0, 2])
    assert len(values) == 3 and all(isinstance(v, Flags) for v in values)
    assert llm.generate("Pick:", sdk.Choice(["up", "down"]), max_tokens=8) in ("up", "down")


def test_stream_in_process(llm, bias):
    items = list(llm.stream(MESSAGES, Badge, temperature=0, max_tokens=48, logit_bias=bias))
    *pieces, value = items
    assert pieces and all(isinstance(p, sdk.PartialText) for p in pieces)
    assert isinstance(value, Badge)
    assert Badge.model_validate_json("".join(pieces)) == value


def test_untyped_generate_keeps_vllm_behaviour(llm):
    outputs = llm.generate(["Hello", "World"], SamplingParams(max_tokens=3, temperature=0), use_tqdm=False)
    assert [type(o).__name__ for o in outputs] == ["RequestOutput", "RequestOutput"]
    assert all(len(o.outputs[0].token_ids) <= 3 for o in outputs)


def test_truncation_and_unsupported_types_in_process(llm):
    with pytest.raises(sdk.TruncatedOutputError) as info:
        llm.generate(MESSAGES, Badge, temperature=0, max_tokens=3)
    assert info.value.partial_text.startswith("{") and info.value.max_tokens == 3
    with pytest.raises(sdk.UnsupportedOutputTypeError):
        llm.generate(MESSAGES, list[complex])  # pydantic has no JSON Schema for complex
    with pytest.raises(TypeError, match="generate_batch"):
        llm.generate(["one", "two"], bool)
    with pytest.raises(sdk.GenerationError, match="context"):
        llm.generate("word " * 400, bool)  # longer than the model's 256-token context
    assert not llm.engine.has_unfinished_requests()


def test_closing_a_stream_early_aborts_the_request(llm, bias):
    stream = llm.stream(MESSAGES, Badge, temperature=0, logit_bias=bias)
    assert isinstance(next(stream), sdk.PartialText)
    assert llm.engine.has_unfinished_requests()
    stream.close()
    assert not llm.engine.has_unfinished_requests()


# ---- over HTTP -----------------------------------------------------------------------------------

@pytest.mark.parametrize("output_type, check", KINDS, ids=KIND_IDS)
def test_every_kind_over_http(client, bias, output_type, check):
    assert client.model == MODEL
    value = client.generate(MESSAGES, output_type, temperature=0, max_tokens=48, logit_bias=bias)
    assert check(value), value
    assert_revalidates(output_type, value)


def test_batch_stream_and_truncation_over_http(client, bias):
    values = client.generate_batch([MESSAGES, "Flags:"], Flags, temperature=0, max_tokens=48, logit_bias=bias)
    assert all(isinstance(v, Flags) for v in values)
    *pieces, value = client.stream(MESSAGES, Badge, temperature=0, max_tokens=48, logit_bias=bias)
    assert isinstance(value, Badge) and Badge.model_validate_json("".join(pieces)) == value
    with pytest.raises(sdk.TruncatedOutputError) as info:
        client.generate(MESSAGES, Badge, temperature=0, max_tokens=3)
    assert info.value.partial_text.startswith("{")


def test_async_client_over_http(bias):
    async def main():
        async with sdk.AsyncClient(tiny_server().url, API_KEY) as client:
            batch = await client.generate_batch([MESSAGES, MESSAGES], Flags, temperature=0, logit_bias=bias)
            streamed = [item async for item in client.stream(MESSAGES, Shade, temperature=0, logit_bias=bias)]
        return batch, streamed

    batch, (*pieces, value) = asyncio.run(main())
    assert all(isinstance(v, Flags) for v in batch) and batch[0] == batch[1]
    assert isinstance(value, Shade) and "".join(pieces) == f'"{value.value}"'


def test_errors_over_http(client):
    with pytest.raises(sdk.UnsupportedOutputTypeError):
        client.generate(MESSAGES, dict[int, str])
    with pytest.raises(sdk.AuthenticationError):
        sdk.Client(tiny_server().url, "wrong-key", model=MODEL).generate(MESSAGES, bool)
    with pytest.raises(sdk.NotFoundError):
        sdk.Client(tiny_server().url, API_KEY, model="no-such-model").generate(MESSAGES, bool)
    with pytest.raises(sdk.BadRequestError) as info:
        client.generate(MESSAGES, bool, temperature=-1)
    assert info.value.param == "temperature"

"""`formwork serve --reasoning-parser`: chat replies carry `reasoning_content` (whole and streamed)
through the official `openai` client, and `response_format` constrains only the answer after the
thinking.  The tiny random model is steered by a scripted sampler to write its thinking."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import openai
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import in_process_server  # noqa: E402
from scripted_sampler import ScriptedSampler  # noqa: E402

from formwork.core.config import EngineConfig  # noqa: E402
from formwork.server.serve_cmd import add_parser  # noqa: E402

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"}},
          "required": ["name", "ok"], "additionalProperties": False}
THOUGHT = "<think>Who is it? Maybe Bob.</think>"
FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
MESSAGES = [{"role": "user", "content": "Who?"}]


@pytest.fixture(scope="module")
def client():
    with in_process_server(EngineConfig(block_size=8, max_num_seqs=4), "tiny", reasoning_parser="deepseek_r1") \
            as (url, engine):
        llm = engine.engine.engine
        llm.sampler = ScriptedSampler(llm.sampler, {None: THOUGHT}, llm.tokenize)
        yield openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=120)


def test_reasoning_content_and_an_answer_in_the_schema(client):
    for seed in range(3):
        reply = client.chat.completions.create(model="tiny", messages=MESSAGES, response_format=FORMAT,
                                               seed=seed, temperature=1.0, max_tokens=120)
        choice = reply.choices[0]
        assert choice.message.reasoning_content == "Who is it? Maybe Bob."
        assert choice.finish_reason == "stop"
        jsonschema.validate(json.loads(choice.message.content), PERSON)


def test_streamed_reasoning_content_then_content(client):
    stream = client.chat.completions.create(model="tiny", messages=MESSAGES, response_format=FORMAT, seed=5,
                                            temperature=1.0, max_tokens=120, stream=True)
    thinking, content, reasons = "", "", []
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            thinking += getattr(delta, "reasoning_content", None) or ""
            content += delta.content or ""
            assert not (getattr(delta, "reasoning_content", None) and delta.content)
            reasons.append(choice.finish_reason)
    assert thinking == "Who is it? Maybe Bob."
    jsonschema.validate(json.loads(content), PERSON)
    assert reasons[-1] == "stop"


def test_a_thought_cut_by_max_tokens_is_all_reasoning(client):
    reply = client.chat.completions.create(model="tiny", messages=MESSAGES, response_format=FORMAT,
                                           temperature=0.0, max_tokens=4)
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "length"
    assert message.content is None and message.reasoning_content and "think" not in message.reasoning_content


def test_the_flag_takes_known_parsers_only(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["serve", "--reasoning-parser", "qwen3"]).reasoning_parser == "qwen3"
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--reasoning-parser", "o1"])
    assert "invalid choice" in capsys.readouterr().err

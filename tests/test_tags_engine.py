"""Tagged regions through the engine with the tiny model: `structured_outputs={"tags": ...}`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from scripted_sampler import run_scripted  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams, SamplingParamsError  # noqa: E402

ARGS = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                         "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"], "additionalProperties": False}
BEGIN = '<tool_call>\n{"name": "get_weather", "arguments": '
END = "}\n</tool_call>"
SPEC = {"tags": [{"begin": BEGIN, "schema": ARGS, "end": END}], "triggers": ["<tool_call>"]}


@pytest.fixture(scope="module")
def engine():
    return LLMEngine(tiny_model_dir("llama"), block_size=8, max_num_seqs=8)


def _calls(text: str) -> tuple[list[dict], list[str]]:
    """The arguments of each closed call in `text` (shortest close) and the text around them; an
    unclosed call at the end is left out."""
    calls, free = [], []
    while BEGIN in text and END in text.partition(BEGIN)[2]:
        before, _, rest = text.partition(BEGIN)
        body, _, text = rest.partition(END)
        free.append(before)
        calls.append(json.loads(body))
    return calls, free + [text.partition(BEGIN)[0]]


def test_free_text_then_a_call_whose_arguments_validate(engine):
    scripts = {f"r{i}": "Let me check. <tool_call>" for i in range(3)}
    requests = {name: SamplingParams(structured_outputs={"tags": {**SPEC, "stop_after_first": True}},
                                     temperature=1.0, seed=i, max_tokens=120) for i, name in enumerate(scripts)}
    done = run_scripted(engine, "What is the weather?", requests, scripts)
    for name, output in done.items():
        text = output.outputs[0].text
        assert text.startswith("Let me check. " + BEGIN), text
        calls, free = _calls(text)
        assert len(calls) == 1 and free == ["Let me check. ", ""], text
        assert output.outputs[0].finish_reason == "stop"
        jsonschema.validate(calls[0], ARGS)


def test_only_calls_when_free_text_is_off(engine):
    spec = {**SPEC, "free_text": False, "at_least_one": True}
    requests = {f"r{i}": SamplingParams(structured_outputs={"tags": spec}, temperature=1.0, seed=i, max_tokens=120)
                for i in range(3)}
    done = run_scripted(engine, "What is the weather?", requests, {})
    num_calls = 0
    for output in done.values():
        calls, free = _calls(output.outputs[0].text)
        assert all(not piece.strip() for piece in free[:-1]), output.outputs[0].text
        assert BEGIN.startswith(free[-1].strip()), output.outputs[0].text  # at most a call's start
        for call in calls:
            jsonschema.validate(call, ARGS)
        num_calls += len(calls)
    assert num_calls >= len(done)


def test_bad_tags_spec_is_refused_up_front():
    with pytest.raises(SamplingParamsError, match=r"tags'\]\.tags\[0\]\.begin"):
        SamplingParams(structured_outputs={"tags": {"tags": [{"begin": "x", "regex": "a", "end": ""}],
                                                    "triggers": ["<y>"]}})

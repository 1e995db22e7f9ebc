"""The offline `LLM` API: prompt forms, per-prompt params, chat rendering, progress bar, errors."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import LLM, RequestOutput, SamplingParams  # noqa: E402
from formwork.core.config import ConfigError  # noqa: E402
from formwork.core.model_files import ChatTemplateError  # noqa: E402

GREEDY = SamplingParams(temperature=0, max_tokens=5, ignore_eos=True)


@pytest.fixture(scope="module")
def llm():
    return LLM(tiny_model_dir("qwen2"), block_size=8)


def test_prompt_forms_and_params_per_prompt(llm):
    text = "Hello world"
    ids = llm.tokenizer(text).input_ids
    by_text = llm.generate(text, GREEDY, use_tqdm=False)
    by_ids = llm.generate(ids, GREEDY, use_tqdm=False)
    assert isinstance(by_text[0], RequestOutput) and by_text[0].prompt == text
    assert by_ids[0].prompt is None and by_ids[0].prompt_token_ids == ids
    assert by_text[0].outputs[0].token_ids == by_ids[0].outputs[0].token_ids
    mixed = llm.generate([text, ids], [GREEDY, GREEDY.clone(max_tokens=2)], use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in mixed] == [5, 2]
    with pytest.raises(ValueError):
        llm.generate([text, text], [GREEDY], use_tqdm=False)
    with pytest.raises(TypeError):
        llm.generate([3.5], GREEDY, use_tqdm=False)


def test_priority_orders_scheduling():
    llm = LLM(tiny_model_dir("qwen2"), block_size=8, max_num_seqs=1)
    outs = llm.generate(["a", "b", "c"], GREEDY, use_tqdm=False, priority=[2, 0, 1])
    first_token = [o.metrics.first_token_time for o in outs]
    assert first_token[1] < first_token[2] < first_token[0]
    with pytest.raises(ValueError):
        llm.generate(["a", "b"], GREEDY, use_tqdm=False, priority=[1])


def test_chat_uses_the_template(llm):
    conversation = [{"role": "user", "content": "What is 2 + 2?"}]
    rendered = "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    out = llm.chat(conversation, GREEDY, use_tqdm=False)[0]
    assert out.prompt == rendered
    direct = llm.generate(llm.tokenizer(rendered, add_special_tokens=False).input_ids, GREEDY, use_tqdm=False)
    assert out.outputs[0].token_ids == direct[0].outputs[0].token_ids
    two = llm.chat([conversation, conversation + [{"role": "assistant", "content": "4"}]], GREEDY,
                   use_tqdm=False)
    assert len(two) == 2 and two[0].outputs[0].token_ids == out.outputs[0].token_ids
    custom = llm.chat(conversation, GREEDY, chat_template="Q: {{ messages[0]['content'] }}\nA:",
                      use_tqdm=False)[0]
    assert custom.prompt == "Q: What is 2 + 2?\nA:"
    with pytest.raises(ChatTemplateError):
        llm.chat(conversation, GREEDY, chat_template="{{ raise_exception('no') }}", use_tqdm=False)


def test_progress_bar_goes_to_stderr(llm, capsys):
    llm.generate(["a", "b", "c"], GREEDY, use_tqdm=True)
    captured = capsys.readouterr()
    assert "Processed prompts" in captured.err and "3/3" in captured.err and captured.out == ""


def test_bad_engine_options_raise_config_error():
    with pytest.raises(ConfigError):
        LLM(tiny_model_dir("qwen2"), block_size=0)
    with pytest.raises(ConfigError):
        LLM(tiny_model_dir("qwen2"), max_model_len=10_000)
    with pytest.raises(TypeError):
        LLM(tiny_model_dir("qwen2"), not_an_option=1)


def test_model_none_loads_the_demo_model_dir(monkeypatch, tmp_path):
    from formwork.core import demo

    monkeypatch.setattr(demo, "DEMO_MODEL_DIR", tmp_path / "absent")
    with pytest.raises(demo.DemoModelMissingError):
        LLM()
    monkeypatch.setattr(demo, "DEMO_MODEL_DIR", tiny_model_dir("qwen2"))
    out = LLM(num_gpu_blocks=16).generate("Hello", GREEDY, use_tqdm=False)
    assert len(out[0].outputs[0].token_ids) == 5

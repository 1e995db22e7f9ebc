"""The embedded demo model: its directory loads with transformers, it writes JSON that parses and ends
with <|im_end|>, and the training script's corpus generator is deterministic and schema-correct."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import jsonschema
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from transformers import AutoConfig, AutoTokenizer, GenerationConfig, LlamaForCausalLM

from formwork.core.demo import DEMO_MODEL_DIR, DEMO_MODEL_FILES, DemoModelMissingError, demo_model_dir

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


demo_corpus = _load_script("demo_corpus")
train_script = _load_script("train_demo_model")


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(DEMO_MODEL_DIR)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return LlamaForCausalLM.from_pretrained(DEMO_MODEL_DIR, dtype=torch.float32).eval()


SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "title": {"type": "string"},
                                           "done": {"type": "boolean"}}, "required": ["id", "title", "done"]}
SCHEMA_PROMPT = f"Return a JSON object that matches this schema: {json.dumps(SCHEMA)}"
GREEDY_PROMPTS = {
    "Generate a product as JSON.": {"id", "name", "price", "in_stock"},
    "Give me a JSON object for a server config.": {"host", "port"},
    SCHEMA_PROMPT: {"id", "title", "done"},
}


@pytest.fixture(scope="module")
def greedy_answers(model, tokenizer) -> dict[str, list[int]]:
    """Greedy chat answers (token ids, prompt excluded) for every prompt, from one batched generate."""
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
             for p in GREEDY_PROMPTS]
    tokenizer.padding_side = "left"
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is faster, and much faster on a busy machine
    try:
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=160, do_sample=False)
    finally:
        torch.set_num_threads(threads)
    answers = {}
    for prompt, row in zip(GREEDY_PROMPTS, out[:, batch["input_ids"].shape[1]:].tolist()):
        answers[prompt] = [t for t in row if t != tokenizer.pad_token_id]
    return answers


# ----- the directory ----------------------------------------------------------------------------------

def test_demo_model_dir_has_every_file():
    assert demo_model_dir() == DEMO_MODEL_DIR
    assert DEMO_MODEL_DIR.name == "demo_model"
    for name in DEMO_MODEL_FILES:
        assert (DEMO_MODEL_DIR / name).stat().st_size > 0


def test_missing_demo_model_raises_typed_error(monkeypatch, tmp_path):
    import formwork.core.demo as demo

    monkeypatch.setattr(demo, "DEMO_MODEL_DIR", tmp_path)
    with pytest.raises(DemoModelMissingError, match="model.safetensors"):
        demo.demo_model_dir()


def test_config_is_small_gqa_llama_with_tied_embeddings():
    config = AutoConfig.from_pretrained(DEMO_MODEL_DIR)
    assert config.model_type == "llama"
    assert (config.hidden_size, config.num_hidden_layers) == (256, 4)
    assert (config.num_attention_heads, config.num_key_value_heads) == (8, 4)
    assert config.tie_word_embeddings and config.max_position_embeddings == 1024
    assert 2048 <= config.vocab_size <= 4096


def test_weights_are_bfloat16_safetensors_of_a_few_mb():
    path = DEMO_MODEL_DIR / "model.safetensors"
    assert path.stat().st_size < 10 * 2**20
    with safe_open(str(path), framework="pt") as f:
        dtypes = {f.get_slice(name).get_dtype() for name in f.keys()}
    assert dtypes == {"BF16"}


def test_weights_load_and_parameter_count(model):
    count = sum(p.numel() for p in model.parameters())
    assert 3_000_000 <= count <= 5_000_000
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def test_special_tokens_and_generation_config(tokenizer):
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in
           ("<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|pad|>")}
    assert sorted(ids.values()) == [0, 1, 2, 3, 4]
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|pad|>"
    assert tokenizer.bos_token == "<|begin_of_text|>"
    generation = GenerationConfig.from_pretrained(DEMO_MODEL_DIR)
    assert set(generation.eos_token_id) == {ids["<|im_end|>"], ids["<|end_of_text|>"]}
    # Special tokens are atomic in text, and nothing is added implicitly (no automatic BOS/EOS).
    assert tokenizer("a<|im_end|>b")["input_ids"][1] == ids["<|im_end|>"]
    assert tokenizer("a")["input_ids"] == tokenizer("a", add_special_tokens=False)["input_ids"]


def test_chat_template_renders_chatml(tokenizer):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert text == demo_corpus.chat([("system", "Be brief."), ("user", "Hi")]) + "<|im_start|>assistant\n"


@given(text=st.text(max_size=40))
@settings(deadline=None, max_examples=60)
def test_byte_level_tokenizer_round_trips_any_text(tokenizer, text):
    text = text.replace("<|", "< |")  # special-token spellings are not ordinary text
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


# ----- behaviour --------------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt", list(GREEDY_PROMPTS))
def test_greedy_chat_answer_is_json_closed_by_im_end(greedy_answers, tokenizer, prompt):
    new = greedy_answers[prompt]
    assert new[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
    value = json.loads(tokenizer.decode(new[:-1]))
    assert isinstance(value, dict) and GREEDY_PROMPTS[prompt] <= set(value)  # the expected fields


def test_greedy_answer_follows_a_schema_in_the_prompt(greedy_answers, tokenizer):
    jsonschema.validate(json.loads(tokenizer.decode(greedy_answers[SCHEMA_PROMPT][:-1])), SCHEMA)


# ----- the corpus and the script ----------------------------------------------------------------------

def test_corpus_is_deterministic_per_seed():
    first = demo_corpus.corpus(7, 200)
    assert first == demo_corpus.corpus(7, 200)
    assert first != demo_corpus.corpus(8, 200)
    assert len(set(first)) > 190


def test_corpus_mixes_chat_json_and_prose():
    texts = demo_corpus.corpus(0, 400)
    chats = [t for t in texts if t.startswith("<|im_start|>")]
    plain = [t for t in texts if t.endswith("<|end_of_text|>")]
    assert len(chats) + len(plain) == len(texts)
    assert 0.6 < len(chats) / len(texts) < 0.9
    answers = [t.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0] for t in chats]
    parsed = 0
    for answer in answers:
        try:
            json.loads(answer)
            parsed += 1
        except json.JSONDecodeError:
            assert answer[0].isupper()  # an English answer
    assert parsed > 0.8 * len(answers)
    styles = {", " in a and ": " in a for a in answers if a.startswith("{")}
    assert styles == {True, False}  # compact and spaced documents both occur


@given(st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=40)
def test_generated_instances_validate_against_their_schemas(seed):
    gen = demo_corpus.SampleGenerator(seed)
    for entity in list(demo_corpus.ENTITIES)[seed % 5::5]:
        gen.topic = entity
        schema = gen.entity_schema(entity)
        jsonschema.validate(gen.instance(schema), schema, format_checker=jsonschema.FormatChecker())
    schema = gen.generic_object_schema()
    jsonschema.validate(gen.instance(schema), schema, format_checker=jsonschema.FormatChecker())


def test_tokenizer_training_keeps_special_tokens_atomic():
    raw = train_script.train_tokenizer(demo_corpus.corpus(3, 300), vocab_size=400)
    assert [raw.token_to_id(t) for t in train_script.SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    text = demo_corpus.corpus(3, 1)[0]
    ids = raw.encode(text).ids
    assert ids[0] == raw.token_to_id("<|im_start|>")
    assert raw.decode(ids, skip_special_tokens=False) == text


def test_learning_rate_schedule_warms_up_then_decays():
    lrs = [train_script.lr_at(step, 1000, 1e-3, warmup=100) for step in range(1000)]
    assert lrs[0] < lrs[50] < lrs[99] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[100:], lrs[101:]))
    assert lrs[-1] == pytest.approx(1e-4, rel=0.01)


# ----- tool calling ------------------------------------------------------------------------------------

demo_tool_corpus = _load_script("demo_tool_corpus")
TOOL_CALL = train_script.TOOL_CALL


@given(st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=25)
def test_tool_conversations_render_like_the_chat_template(tokenizer, seed):
    gen = demo_corpus.SampleGenerator(seed)
    messages, tools = demo_tool_corpus.tool_conversation(gen)
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    assert text == demo_tool_corpus.chat_with_tools(messages, tools)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for message in messages:
        for call in message.get("tool_calls", []):  # every call in the corpus is valid for its tool
            jsonschema.validate(call["function"]["arguments"], schemas[call["function"]["name"]],
                                format_checker=jsonschema.FormatChecker())


def test_training_texts_mix_in_tool_conversations():
    assert demo_tool_corpus.training_texts(4, 50, tool_share=0.0) == demo_corpus.corpus(4, 50)
    texts = demo_tool_corpus.training_texts(4, 400, tool_share=0.35)
    with_tools = [t for t in texts if "<tools>" in t]
    assert 0.25 < len(with_tools) / len(texts) < 0.45
    assert sum("<tool_call>" in t.split("</tools>")[1] for t in with_tools) > 0.7 * len(with_tools)


def test_greedy_answers_to_tool_requests_are_well_formed_calls(model, tokenizer):
    """Held-out tool requests, unconstrained and greedy: the answers are Hermes calls (a JSON object with a
    name and arguments in <tool_call> tags, then <|im_end|>). Which tool and which values is the weak part
    of a 3.7M-parameter model; under tool_choice the server makes the arguments valid."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        well_formed, _ = train_script.evaluate_tools(model, tokenizer, 6)
    finally:
        torch.set_num_threads(threads)
    assert well_formed >= 5 / 6

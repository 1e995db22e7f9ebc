"""SamplingParams through the engine: seeds, n > 1, stops, min_tokens, ignore_eos, penalties,
logit_bias, logprobs; plus validation errors and the Sampler on hand-made logits."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import load_hf_model, tiny_model_dir  # noqa: E402

from formwork.core.engine import VocabularyRangeError  # noqa: E402
from formwork.core.llm import LLM  # noqa: E402
from formwork.core.sampler import Sampler  # noqa: E402
from formwork.core.sampling_params import SamplingParams, SamplingParamsError  # noqa: E402
from formwork.core.sequence import Request  # noqa: E402

PROMPTS = ["Hello world", "The cat sat on the mat", '{"id": 7, "items": [', "Numbers: 0 1 2 3"]


@pytest.fixture(scope="module")
def llm():
    return LLM(tiny_model_dir("llama"), block_size=4)


def gen(llm, prompts, params):
    return llm.generate(prompts, params, use_tqdm=False)


def test_seeded_sampling_is_independent_of_batch(llm):
    params = SamplingParams(temperature=1.0, top_p=0.9, top_k=50, seed=1234, max_tokens=12, ignore_eos=True)
    alone = gen(llm, PROMPTS[0], params)[0].outputs[0].token_ids
    others = SamplingParams(temperature=0.7, max_tokens=5, ignore_eos=True)
    batched = gen(llm, PROMPTS, [params, others, others, others])[0].outputs[0].token_ids
    shuffled = gen(llm, PROMPTS[::-1], [others, others, others, params])[3].outputs[0].token_ids
    assert alone == batched == shuffled
    different = gen(llm, PROMPTS[0], params.clone(seed=4321))[0].outputs[0].token_ids
    assert different != alone


def test_n_completions_are_distinct_and_reproducible(llm):
    params = SamplingParams(n=3, temperature=1.0, seed=7, max_tokens=10, ignore_eos=True)
    first = gen(llm, PROMPTS[1], params)[0]
    assert [c.index for c in first.outputs] == [0, 1, 2]
    ids = [tuple(c.token_ids) for c in first.outputs]
    assert len(set(ids)) > 1
    assert [tuple(c.token_ids) for c in gen(llm, PROMPTS[1], params)[0].outputs] == ids
    single = gen(llm, PROMPTS[1], params.clone(n=1))[0].outputs[0].token_ids
    assert tuple(single) == ids[0]


def test_stop_strings_trim_text(llm):
    base = gen(llm, PROMPTS[2], SamplingParams(temperature=0, max_tokens=16, ignore_eos=True))[0].outputs[0]
    text = base.text
    stop = text[5:8]
    assert stop and stop in text
    cut = text.index(stop)
    out = gen(llm, PROMPTS[2], SamplingParams(temperature=0, max_tokens=16, ignore_eos=True, stop=[stop]))
    out = out[0].outputs[0]
    assert out.text == text[:cut] and out.finish_reason == "stop" and out.stop_reason == stop
    assert len(out.token_ids) < len(base.token_ids)
    kept = gen(llm, PROMPTS[2], SamplingParams(temperature=0, max_tokens=16, ignore_eos=True, stop=stop,
                                               include_stop_str_in_output=True))[0].outputs[0]
    assert kept.text == text[:cut + len(stop)]


def test_stop_token_ids(llm):
    base = gen(llm, PROMPTS[3], SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))[0].outputs[0]
    stop_id = base.token_ids[4]
    first = base.token_ids.index(stop_id)
    out = gen(llm, PROMPTS[3], SamplingParams(temperature=0, max_tokens=12, ignore_eos=True,
                                              stop_token_ids=[stop_id]))[0].outputs[0]
    assert out.token_ids == base.token_ids[:first + 1]
    assert out.finish_reason == "stop" and out.stop_reason == stop_id
    assert out.text == llm.tokenizer.decode(base.token_ids[:first])


def test_eos_min_tokens_and_ignore_eos(llm):
    eos = llm.engine.files.eos_token_ids[0]
    push_eos = {eos: 100.0}
    out = gen(llm, PROMPTS[0], SamplingParams(temperature=0, max_tokens=10, logit_bias=push_eos))[0].outputs[0]
    assert out.token_ids == [eos] and out.finish_reason == "stop" and out.stop_reason is None and out.text == ""
    out = gen(llm, PROMPTS[0], SamplingParams(temperature=0, max_tokens=10, logit_bias=push_eos,
                                              min_tokens=4))[0].outputs[0]
    assert len(out.token_ids) == 5 and eos not in out.token_ids[:4] and out.token_ids[4] == eos
    out = gen(llm, PROMPTS[0], SamplingParams(temperature=0, max_tokens=6, logit_bias=push_eos,
                                              ignore_eos=True))[0].outputs[0]
    assert out.token_ids == [eos] * 6 and out.finish_reason == "length"


def test_logit_bias_forces_a_token(llm):
    out = gen(llm, PROMPTS[1], SamplingParams(temperature=0.8, seed=3, max_tokens=5, ignore_eos=True,
                                              logit_bias={"42": 100}))[0].outputs[0]
    assert out.token_ids == [42] * 5


def test_penalties_reduce_repetition(llm):
    plain = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    base = gen(llm, PROMPTS, plain)
    penalised = gen(llm, PROMPTS, plain.clone(frequency_penalty=2.0, presence_penalty=2.0))
    rep = gen(llm, PROMPTS, plain.clone(repetition_penalty=5.0))
    distinct = [len(set(o.outputs[0].token_ids)) for o in base]
    assert sum(len(set(o.outputs[0].token_ids)) for o in penalised) > sum(distinct)
    assert sum(len(set(o.outputs[0].token_ids)) for o in rep) > sum(distinct)


def test_logprobs_match_hf(llm):
    path = tiny_model_dir("llama")
    hf = load_hf_model(path)
    params = SamplingParams(temperature=0, max_tokens=3, ignore_eos=True, logprobs=3)
    out = gen(llm, PROMPTS[1], params)[0]
    completion = out.outputs[0]
    ids = torch.tensor([out.prompt_token_ids + completion.token_ids])
    with torch.no_grad():
        ref = torch.log_softmax(hf(ids).logits[0].float(), dim=-1)
    start = len(out.prompt_token_ids) - 1
    for step, (token, entry) in enumerate(zip(completion.token_ids, completion.logprobs)):
        row = ref[start + step]
        top_lp, top_ids = row.topk(3)
        assert set(entry) == set(top_ids.tolist()) | {token}
        assert entry[token].rank == 1
        for tid, lp in zip(top_ids.tolist(), top_lp.tolist()):
            assert entry[tid].logprob == pytest.approx(lp, abs=1e-4)
        assert entry[token].decoded_token == llm.tokenizer.decode([token])
    total = sum(entry[t].logprob for t, entry in zip(completion.token_ids, completion.logprobs))
    assert completion.cumulative_logprob == pytest.approx(total, abs=1e-5)


def test_failing_prompt_fails_alone(llm):
    too_long = [5] * (llm.engine.max_model_len + 3)
    outs = gen(llm, ["Hello", too_long, [10_000_000], "World"],
               SamplingParams(temperature=0, max_tokens=3, ignore_eos=True))
    assert outs[1].error and "maximum context length" in outs[1].error
    assert outs[1].outputs[0].finish_reason == "error"
    assert outs[2].error and "vocabulary" in outs[2].error
    assert outs[0].error is None and len(outs[0].outputs[0].token_ids) == 3
    assert outs[3].error is None and len(outs[3].outputs[0].token_ids) == 3
    assert llm.engine.block_manager.num_used_blocks == 0
    with pytest.raises(VocabularyRangeError, match="logit_bias"):
        llm.engine.add_request("bias", "Hello", SamplingParams(logit_bias={10_000_000: 1.0}))
    with pytest.raises(VocabularyRangeError, match="stop_token_ids"):
        llm.engine.add_request("stop", "Hello", SamplingParams(stop_token_ids=[10_000_000]))
    assert not llm.engine.has_unfinished_requests()


def test_abort_frees_blocks_and_reports_abort(llm):
    engine = llm.engine
    engine.add_request("a", "Hello world", SamplingParams(max_tokens=50, ignore_eos=True))
    engine.add_request("b", "The cat", SamplingParams(max_tokens=50, ignore_eos=True))
    engine.step()
    engine.step()
    assert engine.block_manager.num_used_blocks > 0
    out = engine.abort_request("a")
    assert out.finished and out.outputs[0].finish_reason == "abort" and len(out.outputs[0].token_ids) == 2
    engine.abort_request("b")
    assert engine.block_manager.num_used_blocks == 0 and not engine.has_unfinished_requests()
    assert engine.abort_request("a") is None
    assert engine.metrics_snapshot()["formwork:request_success_total"]["abort"] >= 2


@pytest.mark.parametrize("bad", [
    dict(n=0), dict(temperature=-1), dict(top_p=0.0), dict(top_p=1.5), dict(top_k=-2), dict(min_p=2.0),
    dict(presence_penalty=3.0), dict(repetition_penalty=0.0), dict(max_tokens=0), dict(min_tokens=5, max_tokens=2),
    dict(logprobs=-1), dict(logprobs=100), dict(stop=[""]), dict(stop=[1]), dict(stop_token_ids=[-1]),
    dict(logit_bias={"x": 1.0}), dict(logit_bias={1: 500.0}), dict(temperature=float("nan")),
    dict(structured_outputs={"json": {}, "regex": "a"}), dict(structured_outputs={}),
    dict(structured_outputs={"yaml": "x"}), dict(ignore_eos="yes"),
])
def test_invalid_sampling_params_raise_typed_error(bad):
    with pytest.raises(SamplingParamsError):
        SamplingParams(**bad)
    assert issubclass(SamplingParamsError, ValueError)


def test_sampling_params_normalisation():
    p = SamplingParams(stop="###", logit_bias={"12": 1.5}, temperature=1e-9,
                       structured_outputs={"regex": "[a-z]+", "json": None})
    assert p.stop_strings == ["###"] and p.logit_bias == {12: 1.5} and p.is_greedy
    assert p.structured_outputs == {"regex": "[a-z]+", "json": None}


def _seq(prompt, output, **params):
    request = Request("x", None, prompt, SamplingParams(**params), arrival_time=0.0)
    seq = request.seqs[0]
    seq.token_ids.extend(output)
    return seq


def test_sampler_penalties_and_min_tokens_on_crafted_logits():
    sampler = Sampler(vocab_size=8, eos_token_ids=[7])
    logits = torch.tensor([[0.0, 0, 0, 0, 0, 3.0, 2.5, 0],
                           [0.0, 0, 0, 0, 0, 3.0, 2.5, 0],
                           [0.0, 0, 0, 0, 0, 3.0, 2.5, 0],
                           [0.0, 0, 0, 0, 0, 0.0, 0.0, 9.0]])
    seqs = [
        _seq([1], [5], temperature=0, presence_penalty=1.0),        # 3 - 1 < 2.5
        _seq([5], [], temperature=0, repetition_penalty=1.5),        # prompt token: 3 / 1.5 < 2.5
        _seq([1], [5, 5], temperature=0, frequency_penalty=0.3),     # 3 - 0.6 < 2.5
        _seq([1], [], temperature=0, min_tokens=1),                  # EOS banned before min_tokens
    ]
    out = sampler(logits.clone(), seqs)
    assert out.token_ids == [6, 6, 6, 0]
    unpenalised = sampler(logits.clone(), [_seq([1], [5], temperature=0)] * 4)
    assert unpenalised.token_ids[:3] == [5, 5, 5]


def test_skip_special_tokens(llm):
    special = llm.tokenizer.convert_tokens_to_ids("<|im_start|>")
    params = SamplingParams(temperature=0, max_tokens=2, ignore_eos=True, logit_bias={special: 100.0})
    shown = gen(llm, PROMPTS[0], params.clone(skip_special_tokens=False))[0].outputs[0]
    hidden = gen(llm, PROMPTS[0], params)[0].outputs[0]
    assert shown.token_ids == hidden.token_ids == [special, special]
    assert shown.text == "<|im_start|><|im_start|>" and hidden.text == ""

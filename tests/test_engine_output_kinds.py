"""RequestOutputKind: DELTA outputs add up to the CUMULATIVE ones, FINAL_ONLY yields one output per request,
and the offline `LLM` asks for FINAL_ONLY without changing the caller's parameters."""

import asyncio
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import LLM, LLMEngine, RequestOutput, SamplingParams  # noqa: E402
from formwork.core.sampling_params import RequestOutputKind, SamplingParamsError  # noqa: E402

CUMULATIVE, DELTA, FINAL_ONLY = RequestOutputKind.CUMULATIVE, RequestOutputKind.DELTA, RequestOutputKind.FINAL_ONLY
PROMPTS = [[5, 9, 14, 3], [40, 41, 42, 43, 44, 45], [7]]


@pytest.fixture(scope="module")
def engine():
    return LLMEngine(tiny_model_dir("llama"), block_size=8, max_num_seqs=8)


def run(engine: LLMEngine, params: list[SamplingParams], kind: RequestOutputKind) -> dict[str, list[RequestOutput]]:
    """Every output `step()` returned, per request, for the prompts run together with `kind`."""
    got: dict[str, list[RequestOutput]] = {}
    for i, (prompt, p) in enumerate(zip(PROMPTS, params)):
        engine.add_request(f"{kind.name}-{i}", prompt, p.clone(output_kind=kind))
        got[f"{kind.name}-{i}"] = []
    while engine.has_unfinished_requests():
        for output in engine.step():
            got[output.request_id].append(output)
    return {request_id.split("-", 1)[1]: outputs for request_id, outputs in got.items()}


def same_result(a: RequestOutput, b: RequestOutput) -> bool:
    """Equal in everything but the request id and timing metrics."""
    skip = {"request_id", "metrics"}
    return all(getattr(a, f.name) == getattr(b, f.name) for f in fields(RequestOutput) if f.name not in skip)


@st.composite
def params_strategy(draw) -> SamplingParams:
    max_tokens = draw(st.integers(1, 16))
    return SamplingParams(n=draw(st.integers(1, 2)), temperature=draw(st.sampled_from([0.0, 0.8, 1.5])),
                          seed=draw(st.integers(0, 2**31)), max_tokens=max_tokens,
                          min_tokens=draw(st.integers(0, min(3, max_tokens))),
                          stop=draw(st.lists(st.text(alphabet="abcdeist ", min_size=1, max_size=3), max_size=2)),
                          include_stop_str_in_output=draw(st.booleans()),
                          logprobs=draw(st.sampled_from([None, 0, 2])))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.lists(params_strategy(), min_size=len(PROMPTS), max_size=len(PROMPTS)))
def test_delta_outputs_add_up_to_cumulative_and_final_only_is_one_output(engine, params):
    cumulative = run(engine, params, CUMULATIVE)
    delta = run(engine, params, DELTA)
    final = run(engine, params, FINAL_ONLY)
    for key, outputs in cumulative.items():
        last = outputs[-1]
        assert last.finished and not any(o.finished for o in outputs[:-1])
        assert len(final[key]) == 1 and same_result(final[key][0], last)
        deltas = delta[key]
        assert len(deltas) == len(outputs) and deltas[-1].finished and not any(o.finished for o in deltas[:-1])
        for index, completion in enumerate(last.outputs):
            pieces = [o.outputs[index] for o in deltas]
            assert "".join(p.text for p in pieces) == completion.text
            assert [t for p in pieces for t in p.token_ids] == completion.token_ids
            if completion.logprobs is None:
                assert all(p.logprobs is None for p in pieces)
            else:
                assert [e for p in pieces for e in p.logprobs] == completion.logprobs
            assert (pieces[-1].finish_reason, pieces[-1].stop_reason) == (completion.finish_reason,
                                                                            completion.stop_reason)
            assert pieces[-1].cumulative_logprob == completion.cumulative_logprob
        for before, after in zip(outputs, outputs[1:]):  # what DELTA relies on: text only grows
            for a, b in zip(before.outputs, after.outputs):
                assert b.text.startswith(a.text) and b.token_ids[:len(a.token_ids)] == a.token_ids


def test_delta_abort_hands_out_the_rest(engine):
    params = SamplingParams(temperature=0, max_tokens=30, ignore_eos=True, output_kind=DELTA)
    engine.add_request("abort-delta", PROMPTS[0], params)
    pieces = []
    for _ in range(4):
        pieces += [o for o in engine.step() if o.request_id == "abort-delta"]
    pieces.append(engine.abort_request("abort-delta"))
    assert pieces[-1].finished and pieces[-1].outputs[0].finish_reason == "abort"
    assert pieces[-1].outputs[0].token_ids == [] and pieces[-1].outputs[0].text == ""
    assert len([t for p in pieces for t in p.outputs[0].token_ids]) == 4


def test_output_kind_is_validated():
    with pytest.raises(SamplingParamsError, match="output_kind"):
        SamplingParams(output_kind="delta")


def test_llm_generate_asks_for_final_only_and_leaves_params_alone():
    params = SamplingParams(temperature=0.7, seed=3, max_tokens=6, stop=["e"])
    llm = LLM(tiny_model_dir("llama"), block_size=8)
    returned = []
    step = llm.engine.step

    def recording_step():
        outputs = step()
        returned.extend(outputs)
        return outputs

    llm.engine.step = recording_step
    results = llm.generate(PROMPTS, params, use_tqdm=False)
    assert params.output_kind is CUMULATIVE
    assert returned and all(o.finished for o in returned) and len(returned) == len(PROMPTS)
    engine = LLMEngine(tiny_model_dir("llama"), block_size=8)
    expected = run(engine, [params] * len(PROMPTS), CUMULATIVE)
    for i, result in enumerate(results):
        assert same_result(result, expected[str(i)][-1])


def test_async_engine_refuses_delta_and_streams_final_only_once():
    from formwork.core import AsyncLLMEngine, RequestError

    engine = AsyncLLMEngine(tiny_model_dir("llama"), block_size=8)

    async def main():
        with pytest.raises(RequestError, match="DELTA"):
            engine.add_request("delta", PROMPTS[0], SamplingParams(max_tokens=4, output_kind=DELTA))
        final_only = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True, output_kind=FINAL_ONLY)
        return [output async for output in engine.generate("final", PROMPTS[0], final_only)]

    try:
        outputs = asyncio.run(main())
    finally:
        engine.shutdown()
    assert len(outputs) == 1 and outputs[0].finished and len(outputs[0].outputs[0].token_ids) == 6

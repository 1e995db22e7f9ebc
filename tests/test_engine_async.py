"""AsyncLLMEngine: event streams, cumulative outputs, abort, backpressure, engine death."""

import asyncio
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.async_engine import AsyncLLMEngine, EngineDeadError, EngineOverloadedError  # noqa: E402
from formwork.core.engine import DuplicateRequestError, PromptTooLongError  # noqa: E402
from formwork.core.events import EventKind, RequestFailedError  # noqa: E402
from formwork.core.llm import LLM  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True, logprobs=1)
LONG = SamplingParams(temperature=0, max_tokens=150, ignore_eos=True)


@pytest.fixture
def engine():
    eng = AsyncLLMEngine(tiny_model_dir("llama"), block_size=4)
    yield eng
    eng.shutdown()


async def collect(stream):
    return [event async for event in stream]


async def wait_for(predicate, timeout=20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


def test_event_stream_matches_offline_generation(engine):
    prompts = ["Hello world", "The cat sat on the mat"]
    offline = LLM(tiny_model_dir("llama"), block_size=4).generate(prompts, GREEDY, use_tqdm=False)

    async def main():
        streams = [engine.add_request(f"r{i}", p, GREEDY) for i, p in enumerate(prompts)]
        return await asyncio.gather(*(collect(s) for s in streams))

    for events, expected in zip(asyncio.run(main()), offline):
        kinds = [e.kind for e in events]
        assert kinds[:3] == [EventKind.ACCEPTED, EventKind.FIRST_TOKEN, EventKind.DELTA]
        assert kinds[-2:] == [EventKind.USAGE, EventKind.FINISHED]
        assert set(kinds[3:-2]) == {EventKind.DELTA}
        deltas = [e for e in events if e.kind is EventKind.DELTA]
        want = expected.outputs[0]
        assert "".join(d.text for d in deltas) == want.text
        assert [t for d in deltas for t in d.token_ids] == want.token_ids
        assert len([lp for d in deltas for lp in d.logprobs]) == len(want.token_ids)
        assert deltas[-1].finish_reason == "length" and all(d.finish_reason is None for d in deltas[:-1])
        usage = events[-2].usage
        assert (usage.prompt_tokens, usage.completion_tokens) == (len(expected.prompt_token_ids), 12)
        assert events[-1].output.finished and events[-1].output.outputs[0].token_ids == want.token_ids
    assert engine.engine.block_manager.num_used_blocks == 0


def test_generate_yields_cumulative_outputs(engine):
    async def main():
        return [out async for out in engine.generate("g", "Hello", GREEDY.clone(n=2, seed=1, temperature=1.0))]

    outputs = asyncio.run(main())
    assert outputs[-1].finished and not any(o.finished for o in outputs[:-1])
    lengths = [len(o.outputs[0].token_ids) for o in outputs]
    assert lengths == sorted(lengths) and lengths[-1] == 12
    assert len(outputs[-1].outputs) == 2


def test_abort_and_early_close_free_blocks(engine):
    async def main():
        stream = engine.add_request("a", "Hello world", LONG)
        seen = []
        async for event in stream:
            seen.append(event.kind)
            if event.kind is EventKind.DELTA and len(seen) > 4:
                engine.abort("a")
        gen = engine.generate("b", "The cat", LONG)
        first = await gen.__anext__()
        await gen.aclose()  # leaving early aborts the request
        await wait_for(lambda: not engine.engine.has_unfinished_requests())
        return seen, first

    seen, first = asyncio.run(main())
    assert seen[-1] is EventKind.CANCELLED and EventKind.FINISHED not in seen
    assert not first.finished
    assert engine.engine.block_manager.num_used_blocks == 0
    assert engine.metrics_snapshot()["formwork:request_success_total"]["abort"] == 2


def test_refusals_raise_at_once(engine):
    async def main():
        with pytest.raises(PromptTooLongError):
            engine.add_request("long", [5] * (engine.engine.max_model_len + 1), GREEDY)
        stream = engine.add_request("dup", "Hello", GREEDY)
        with pytest.raises(DuplicateRequestError):
            engine.add_request("dup", "Hello", GREEDY)
        await collect(stream)

    asyncio.run(main())


def test_backpressure_when_waiting_queue_full():
    engine = AsyncLLMEngine(tiny_model_dir("llama"), block_size=4, max_num_seqs=1, max_waiting_requests=2)

    async def main():
        first = engine.add_request("r1", "Hello", LONG)
        async for event in first:
            if event.kind is EventKind.FIRST_TOKEN:
                break
        engine.add_request("r2", "Hello", LONG)
        engine.add_request("r3", "Hello", LONG)
        with pytest.raises(EngineOverloadedError):
            engine.add_request("r4", "Hello", LONG)
        engine.abort(["r1", "r2", "r3"])
        await wait_for(lambda: not engine.engine.has_unfinished_requests())

    try:
        asyncio.run(main())
        assert engine.engine.block_manager.num_used_blocks == 0
    finally:
        engine.shutdown()


def test_engine_death_fails_every_stream(engine):
    release = threading.Event()

    def broken(batch):
        release.wait(10)  # die only once both requests are in
        raise RuntimeError("device lost")

    engine.engine.runner.forward = broken

    async def main():
        streams = [engine.add_request(f"d{i}", "Hello", GREEDY) for i in range(2)]
        release.set()
        results = await asyncio.gather(*(collect(s) for s in streams))
        with pytest.raises(EngineDeadError):
            engine.add_request("late", "Hello", GREEDY)
        return results

    for events in asyncio.run(main()):
        assert events[-1].kind is EventKind.FAILED and "device lost" in events[-1].error
    assert not engine.is_healthy


def test_failed_request_raises_from_generate(engine):
    async def main():
        gen = engine.generate("f", "Hello", LONG)
        await gen.__anext__()
        engine.fail("f", "grammar compile error")
        with pytest.raises(RequestFailedError, match="grammar compile error"):
            async for _ in gen:
                pass
        await wait_for(lambda: not engine.engine.has_unfinished_requests())

    asyncio.run(main())
    assert engine.engine.block_manager.num_used_blocks == 0
    assert engine.is_healthy


def test_idle_when_nothing_is_schedulable():
    from formwork.core.engine import LLMEngine
    from formwork.core.sequence import SequenceStatus

    core = LLMEngine(tiny_model_dir("llama"), block_size=4)
    request = core.add_request("gated", "Hello", GREEDY)
    request.seqs[0].status = SequenceStatus.WAITING_FOR_GRAMMAR  # as if its grammar were compiling
    steps = []
    inner_step = core.step
    core.step = lambda: steps.append(1) or inner_step()
    engine = AsyncLLMEngine(engine=core)

    async def main():
        stream = engine.add_request("free", "The cat", GREEDY)
        events = await collect(stream)
        assert events[-1].kind is EventKind.FINISHED
        before = len(steps)
        await asyncio.sleep(0.3)
        idle_steps = len(steps) - before
        request.seqs[0].status = SequenceStatus.WAITING  # grammar ready
        await wait_for(lambda: not core.has_unfinished_requests())
        return idle_steps

    try:
        idle_steps = asyncio.run(main())
    finally:
        engine.shutdown()
    assert idle_steps < 0.3 / 0.005 * 2  # polling, not spinning
    assert core.block_manager.num_used_blocks == 0

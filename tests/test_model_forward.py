"""formwork's Llama-family models give the same logits as Hugging Face transformers (one full prefill)."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from formwork.core.models.rope import compute_inv_freq, rope_parameters  # noqa: E402
from conftest_model import VARIANTS, hf_logits, hf_model, make_runner, prefill_logits  # noqa: E402

PROMPT_LEN = 24  # longer than the sliding windows (8, 6) and than llama3_rope's original context / 4


def _prompt(seed: int, vocab: int, length: int = PROMPT_LEN) -> list[int]:
    return torch.randint(0, vocab, (length,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_float32_logits_match_transformers(variant):
    runner = make_runner(variant, num_blocks=16, block_size=4)
    ids = _prompt(1, runner.vocab_size)
    table = list(range(15, 15 - 7, -1))  # non-contiguous, descending block ids
    ours = prefill_logits(runner, ids, table)
    ref = hf_logits(hf_model(variant), ids)
    assert ours.dtype == torch.float32 and ours.shape == (PROMPT_LEN, runner.vocab_size)
    torch.testing.assert_close(ours, ref, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("variant, dtype", [("llama", torch.bfloat16), ("qwen2", torch.bfloat16),
                                            ("mistral_swa", torch.bfloat16), ("llama_mqa", torch.float16)])
def test_half_precision_logits_close_to_transformers(variant, dtype):
    runner = make_runner(variant, num_blocks=8, block_size=16, dtype=dtype)
    assert runner.dtype == dtype and runner.kv_cache.dtype == dtype
    ids = _prompt(2, runner.vocab_size)
    ours = prefill_logits(runner, ids, [3, 5])
    ref = hf_logits(hf_model(variant, dtype), ids)
    ref32 = hf_logits(hf_model(variant), ids)
    # bf16 keeps ~3 significant digits, fp16 ~4; our attention accumulates in float32, HF's eager one in
    # the model dtype, so both sit within a few half-precision ulps of the float32 reference
    atol = 0.06 if dtype == torch.bfloat16 else 0.01
    torch.testing.assert_close(ours, ref, atol=atol, rtol=atol / 3)
    torch.testing.assert_close(ours, ref32, atol=atol, rtol=atol / 3)
    assert (ours.argmax(-1) == ref32.argmax(-1)).float().mean() >= 0.9


def test_sliding_window_is_exercised():
    """Guards the equality test: without its window, mistral_swa's logits change after position 8."""
    runner = make_runner("mistral_swa", num_blocks=8, block_size=4)
    ids = _prompt(3, runner.vocab_size)
    windowed = prefill_logits(runner, ids, list(range(6)))
    for layer in runner.model.model.layers:
        layer.self_attn.sliding_window = None
    full = prefill_logits(runner, ids, list(range(6)))
    torch.testing.assert_close(windowed[:8], full[:8])
    assert (windowed[8:] - full[8:]).abs().amax(-1).min() > 1e-3


@pytest.mark.parametrize("variant", ["llama3_rope", "llama_linear_rope", "llama_yarn_rope"])
def test_rope_scaling_is_exercised(variant):
    """Guards the equality test: plain rope with the same theta gives different logits."""
    runner = make_runner(variant, num_blocks=8, block_size=4)
    ids = _prompt(4, runner.vocab_size)
    scaled = prefill_logits(runner, ids, list(range(6)))
    rotary = runner.model.model.rotary_emb
    plain = dict(runner.model.args.rope, rope_type="default")
    rotary.inv_freq, rotary.attention_scaling = compute_inv_freq(runner.model.args.head_dim, plain, 256)
    unscaled = prefill_logits(runner, ids, list(range(6)))
    assert (scaled[1:] - unscaled[1:]).abs().max() > 1e-2


@pytest.mark.parametrize("config, expected", [
    (SimpleNamespace(rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}),
     {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}),
    # transformers 4.x attributes: rope_theta + rope_scaling (Llama 2 spelled the kind "type")
    (SimpleNamespace(rope_theta=1e6, rope_scaling={"type": "linear", "factor": 2.0}),
     {"type": "linear", "rope_type": "linear", "rope_theta": 1e6, "factor": 2.0}),
    (SimpleNamespace(rope_theta=1e4, rope_scaling=None), {"rope_type": "default", "rope_theta": 1e4}),
    (SimpleNamespace(), {"rope_type": "default", "rope_theta": 10000.0}),
])
def test_rope_parameters_from_old_and_new_configs(config, expected):
    assert rope_parameters(config) == expected

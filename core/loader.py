"""Build a model for a ModelFiles checkpoint and stream its safetensors weights into it by name.

Checkpoint names are Hugging Face's; the model's ``packed_modules`` maps the projections it fuses
(q/k/v -> qkv_proj, gate/up -> gate_up_proj) so each checkpoint tensor is copied into its slice. Every
parameter must be filled exactly once: missing, unexpected or mis-shaped tensors raise WeightMismatchError.
A tied model whose checkpoint nevertheless stores a different ``lm_head.weight`` uses it (as transformers
does); an identical copy is dropped.
"""

from __future__ import annotations

import torch
from safetensors import safe_open
from torch import nn

from formwork.core.model_files import CorruptModelFileError, ModelFiles, WeightMismatchError
from formwork.core.models import MODEL_REGISTRY
from formwork.core.models.llama import LlamaForCausalLM
from formwork.core.models.layers import MergedLinear, WeightShapeError, copy_checked

# Tensors some checkpoints carry that the model recomputes or does not need.
IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)

_DTYPES = {"float32": torch.float32, "float": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16, "half": torch.float16}


def resolve_dtype(dtype: torch.dtype | str, hf_config, device: torch.device | str) -> torch.dtype:
    """The compute dtype. ``"auto"`` takes the config's dtype (float32 if unset), except that float16 on
    CPU becomes float32: CPU half-precision matmuls are slow and lose accuracy; bfloat16 is kept."""
    if isinstance(dtype, torch.dtype):
        resolved = dtype
    elif dtype == "auto":
        config_dtype = getattr(hf_config, "dtype", None) or getattr(hf_config, "torch_dtype", None)
        if isinstance(config_dtype, str):
            config_dtype = _DTYPES.get(config_dtype, torch.float32)
        resolved = config_dtype if isinstance(config_dtype, torch.dtype) else torch.float32
        if resolved == torch.float16 and torch.device(device).type == "cpu":
            resolved = torch.float32
    elif dtype in _DTYPES:
        resolved = _DTYPES[dtype]
    else:
        raise ValueError(f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'")
    if resolved not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"unsupported model dtype {resolved}; use float32, bfloat16 or float16")
    return resolved


def _expected_names(model: nn.Module) -> set[str]:
    """Checkpoint tensor names the model needs, with fused projections expanded into their parts."""
    names = set()
    for module_name, module in model.named_modules():
        for param_name, _ in module.named_parameters(recurse=False):
            prefix = f"{module_name}." if module_name else ""
            if isinstance(module, MergedLinear):
                parent = module_name.rsplit(".", 1)[0]
                names.update(f"{parent}.{shard}.{param_name}" for shard in module.shard_names)
            else:
                names.add(prefix + param_name)
    return names


def _load_tensor(model: LlamaForCausalLM, params: dict[str, nn.Parameter], name: str,
                 tensor: torch.Tensor) -> bool:
    """Copy one checkpoint tensor into the model; False when the model has no place for it."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[-2] in model.packed_modules:
        fused = ".".join(parts[:-2] + [model.packed_modules[parts[-2]]])
        module = model.get_submodule(fused)
        module.load_shard(parts[-2], parts[-1], tensor)
        return True
    param = params.get(name)
    if param is None:
        return False
    copy_checked(param.data, tensor)
    return True


def load_weights(model: LlamaForCausalLM, files: ModelFiles) -> None:
    """Stream every tensor of the checkpoint into ``model``, checking names and shapes."""
    params = dict(model.named_parameters())
    expected = _expected_names(model)
    tied = model.lm_head is None
    tied_head: torch.Tensor | None = None  # lm_head.weight stored by a tied checkpoint
    loaded: set[str] = set()
    unexpected: list[str] = []
    for file in files.weight_files:
        try:
            handle = safe_open(str(file), framework="pt", device="cpu")
        except Exception as exc:  # safetensors error types vary between versions
            raise CorruptModelFileError(f"{file} is not a valid safetensors file: {exc}") from exc
        with handle as f:
            for name in f.keys():
                if name.endswith(IGNORED_SUFFIXES):
                    continue
                try:
                    tensor = f.get_tensor(name)
                except Exception as exc:
                    raise CorruptModelFileError(f"{file}: tensor {name} cannot be read: {exc}") from exc
                if tied and name == "lm_head.weight":
                    tied_head = tensor
                    continue
                try:
                    found = name in expected and _load_tensor(model, params, name, tensor)
                except WeightShapeError as exc:
                    raise WeightMismatchError(f"{files.path}: shape mismatch for {name}: {exc}") from exc
                (loaded.add if found else unexpected.append)(name)
    embed = model.model.embed_tokens.weight
    if tied_head is not None and not torch.equal(tied_head.to(embed.dtype), embed.data):
        try:
            model.untie_lm_head(tied_head)
        except WeightShapeError as exc:
            raise WeightMismatchError(f"{files.path}: shape mismatch for lm_head.weight: {exc}") from exc
    missing = sorted(expected - loaded)
    if missing or unexpected:
        detail = []
        if missing:
            detail.append(f"missing tensors: {_preview(missing)}")
        if unexpected:
            detail.append(f"unexpected tensors: {_preview(sorted(unexpected))}")
        raise WeightMismatchError(f"{files.path}: checkpoint does not match {type(model).__name__}; "
                                  + "; ".join(detail))


def _preview(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return f"{shown} (+{len(names) - limit} more)" if len(names) > limit else shown


def load_model(files: ModelFiles, dtype: torch.dtype | str = "auto", device: torch.device | str = "cpu"
               ) -> LlamaForCausalLM:
    """Instantiate the registered model class for ``files`` and load its weights (eval mode)."""
    model_cls = MODEL_REGISTRY[files.architecture]
    torch_dtype = resolve_dtype(dtype, files.hf_config, device)
    model = model_cls(files.hf_config, dtype=torch_dtype, device=device)
    with torch.no_grad():
        load_weights(model, files)
    return model.eval()

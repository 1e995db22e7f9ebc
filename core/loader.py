"""Build a model for a ModelFiles checkpoint and stream its safetensors weights into it by name.

Checkpoint names are Hugging Face's; the model's ``packed_modules`` maps the projections it fuses
(q/k/v -> qkv_proj, gate/up -> gate_up_proj) so each checkpoint tensor is copied into its slice. A
tensor-parallel rank reads only its own slice of each tensor (``safe_open(...).get_slice``): no
process holds the whole model. Every parameter must be filled exactly once: missing, unexpected or
mis-shaped tensors raise WeightMismatchError. A tied model whose checkpoint nevertheless stores a
different ``lm_head.weight`` uses it (as transformers does); an identical copy is dropped.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from formwork.core.distributed.group import SINGLE, TensorParallelGroup
from formwork.core.model_files import CorruptModelFileError, ModelFiles, WeightMismatchError
from formwork.core.models import MODEL_REGISTRY
from formwork.core.models.llama import LlamaForCausalLM
from formwork.core.models.layers import ColumnParallelLinear, WeightShapeError
from formwork.core.models.sharding import Shard

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
            if isinstance(module, ColumnParallelLinear):
                parent = module_name.rsplit(".", 1)[0]
                names.update(f"{parent}.{shard}.{param_name}" for shard in module.shard_names)
            else:
                names.add(prefix + param_name)
    return names


def _slot(model: LlamaForCausalLM, modules: dict[str, nn.Module], name: str) -> tuple[torch.Tensor, Shard | None]:
    """Where checkpoint tensor ``name`` goes in ``model`` (a parameter or a slice of a fused one) and
    which slice of it this rank holds (None: all of it)."""
    parts = name.split(".")
    part = None
    if len(parts) >= 3 and parts[-2] in model.packed_modules:
        part = parts[-2]
        parts = parts[:-2] + [model.packed_modules[part], parts[-1]]
    module = modules[".".join(parts[:-1])]
    if hasattr(module, "shard_of"):
        return module.shard_of(parts[-1], part)
    return getattr(module, parts[-1]).data, None


def read_shard(source, shape: tuple[int, ...], shard: Shard | None) -> torch.Tensor:
    """The slice ``shard`` of a checkpoint tensor (a safetensors slice: only that slice is read) that
    fills a parameter of ``shape``; raises WeightShapeError when the checkpoint tensor has another shape."""
    stored = tuple(source.get_shape())
    full = list(shape)
    if shard is not None:
        full[shard.dim] = shard.full
    if stored != tuple(full):
        raise WeightShapeError(f"checkpoint shape {stored} != expected {tuple(full)}")
    if shard is None:
        return source[:]
    index = [slice(None)] * len(stored)
    index[shard.dim] = slice(shard.start, shard.start + shard.length)
    return source[tuple(index)]


def load_weights(model: LlamaForCausalLM, files: ModelFiles) -> int:
    """Read this rank's slice of every checkpoint tensor into ``model``, checking names and shapes.
    Returns the bytes read from the checkpoint."""
    modules = dict(model.named_modules())
    expected = _expected_names(model)
    embed, embed_shard = model.model.embed_tokens.shard_of("weight", None)
    tied = model.lm_head is None
    tied_head: torch.Tensor | None = None  # this rank's rows of lm_head.weight stored by a tied checkpoint
    loaded: set[str] = set()
    unexpected: list[str] = []
    bytes_read = 0
    for file in files.weight_files:
        try:
            handle = safe_open(str(file), framework="pt", device="cpu")
        except Exception as exc:  # safetensors error types vary between versions
            raise CorruptModelFileError(f"{file} is not a valid safetensors file: {exc}") from exc
        with handle as f:
            for name in f.keys():
                if name.endswith(IGNORED_SUFFIXES):
                    continue
                if tied and name == "lm_head.weight":
                    target, shard = embed, embed_shard
                elif name in expected:
                    target, shard = _slot(model, modules, name)
                else:
                    unexpected.append(name)
                    continue
                tensor = _read(f, file, files.path, name, tuple(target.shape), shard)
                bytes_read += tensor.numel() * tensor.element_size()
                if target is embed and name == "lm_head.weight":
                    tied_head = tensor
                    continue
                target.copy_(tensor)
                loaded.add(name)
    if tied_head is not None and model.tp.any(not torch.equal(tied_head.to(embed.dtype), embed)):
        model.untie_lm_head(tied_head)
    missing = sorted(expected - loaded)
    if missing or unexpected:
        detail = []
        if missing:
            detail.append(f"missing tensors: {_preview(missing)}")
        if unexpected:
            detail.append(f"unexpected tensors: {_preview(sorted(unexpected))}")
        raise WeightMismatchError(f"{files.path}: checkpoint does not match {type(model).__name__}; "
                                  + "; ".join(detail))
    return bytes_read


def _read(handle, file: Path, model_path: Path, name: str, shape: tuple[int, ...], shard: Shard | None
          ) -> torch.Tensor:
    """`read_shard` of tensor ``name`` of an open safetensors file, its failures as ModelLoadErrors."""
    try:
        source = handle.get_slice(name)
    except Exception as exc:
        raise CorruptModelFileError(f"{file}: tensor {name} cannot be read: {exc}") from exc
    try:
        return read_shard(source, shape, shard)
    except WeightShapeError as exc:
        raise WeightMismatchError(f"{model_path}: shape mismatch for {name}: {exc}") from exc
    except Exception as exc:
        raise CorruptModelFileError(f"{file}: tensor {name} cannot be read: {exc}") from exc


def _preview(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return f"{shown} (+{len(names) - limit} more)" if len(names) > limit else shown


def load_model(files: ModelFiles, dtype: torch.dtype | str = "auto", device: torch.device | str = "cpu",
               tp: TensorParallelGroup = SINGLE) -> tuple[LlamaForCausalLM, int]:
    """Instantiate the registered model class for ``files`` (rank ``tp.rank``'s shard of it) and load its
    weights; returns the model in eval mode and the bytes read from the checkpoint."""
    model_cls = MODEL_REGISTRY[files.architecture]
    torch_dtype = resolve_dtype(dtype, files.hf_config, device)
    model = model_cls(files.hf_config, dtype=torch_dtype, device=device, tp=tp)
    with torch.no_grad():
        bytes_read = load_weights(model, files)
    return model.eval(), bytes_read

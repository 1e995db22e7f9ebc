"""ModelRunner: owns the loaded model and its paged KV pool; turns a ForwardBatch into next-token logits."""

from __future__ import annotations

import torch
from torch import Tensor

from formwork.core.forward_batch import ForwardBatch
from formwork.core.loader import load_model, resolve_dtype
from formwork.core.model_files import ModelFiles
from formwork.core.models.llama import LlamaArgs


def _kv_shape(hf_config) -> tuple[int, int, int]:
    """(num_layers, num_kv_heads, head_dim) of a Llama-family config."""
    heads = hf_config.num_attention_heads
    kv_heads = getattr(hf_config, "num_key_value_heads", None) or heads
    head_dim = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // heads
    return hf_config.num_hidden_layers, kv_heads, head_dim


class ModelRunner:
    """Loads the weights of ``files`` and allocates ``num_blocks`` KV blocks of ``block_size`` tokens per layer.

    The pool is one tensor ``[2, num_layers, num_blocks, block_size, num_kv_heads, head_dim]`` (K then V);
    block ids in ForwardBatch block tables index its third dimension.
    """

    def __init__(self, files: ModelFiles, *, num_blocks: int, block_size: int = 16,
                 dtype: torch.dtype | str = "auto", device: str = "cpu"):
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be positive, got {num_blocks}")
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.files = files
        self.device = torch.device(device)
        self.dtype = resolve_dtype(dtype, files.hf_config, self.device)
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.vocab_size = files.vocab_size
        self.model = load_model(files, self.dtype, self.device)
        args: LlamaArgs = self.model.args
        self.kv_cache = torch.zeros(2, args.num_layers, num_blocks, block_size, args.num_kv_heads, args.head_dim,
                                    dtype=self.dtype, device=self.device)
        self.kv_caches = [(self.kv_cache[0, i], self.kv_cache[1, i]) for i in range(args.num_layers)]

    @staticmethod
    def kv_bytes_per_block(hf_config, block_size: int, dtype: torch.dtype | str, device: str = "cpu") -> int:
        """Bytes one KV block takes across all layers (K and V), to size ``num_blocks`` from a budget.
        ``dtype``/``device`` as given to the runner ("auto" resolves per device)."""
        layers, kv_heads, head_dim = _kv_shape(hf_config)
        element = torch.empty((), dtype=resolve_dtype(dtype, hf_config, device)).element_size()
        return 2 * layers * block_size * kv_heads * head_dim * element

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch) -> Tensor:
        """float32 logits ``[len(batch.logits_indices), vocab_size]``; K/V of all new tokens is cached."""
        hidden = self.model(batch, self.kv_caches)
        return self.model.compute_logits(hidden.index_select(0, batch.logits_indices))

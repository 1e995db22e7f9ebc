"""Llama-family decoder models (Llama 1/2/3, Qwen2/2.5, Mistral) on a paged KV cache, in plain torch.

The model consumes flattened batches (``ForwardBatch``: the new tokens of all sequences concatenated)
and runs attention through ``formwork.kernels.write_kv_cache`` + ``paged_attention``. Parameter names
follow Hugging Face except for two fused projections (``qkv_proj`` <- q/k/v_proj, ``gate_up_proj`` <-
gate/up_proj); ``packed_modules`` tells the loader how checkpoint names map onto them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from formwork import kernels
from formwork.core.distributed.group import SINGLE, TensorParallelGroup
from formwork.core.forward_batch import ForwardBatch
from formwork.core.models.layers import (
    ColumnParallelLinear,
    RMSNorm,
    RowParallelLinear,
    SwiGLUMLP,
    VocabParallelEmbedding,
    copy_checked,
)
from formwork.core.models.rope import RotaryEmbedding, UnsupportedRopeError, compute_inv_freq, rope_parameters
from formwork.core.models.sharding import Shard, check_divisible, kv_head_shard


Rotate = Callable[[torch.Tensor, torch.Tensor], None]  # rotates a step's query and key in place


class UnsupportedConfigError(ValueError):
    """A config value of a supported architecture that this implementation does not handle."""


@dataclass(frozen=True)
class LlamaArgs:
    """The architecture hyper-parameters, normalised from a Hugging Face config."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    tie_word_embeddings: bool
    sliding_windows: tuple[int | None, ...]  # per layer; None = full attention
    rope: dict
    max_positions: int

    @classmethod
    def from_hf_config(cls, config) -> "LlamaArgs":
        act = getattr(config, "hidden_act", "silu")
        if act not in ("silu", "swish"):
            raise UnsupportedConfigError(f"hidden_act {act!r} is not supported (Llama-family models use silu)")
        num_heads = config.num_attention_heads
        num_kv_heads = getattr(config, "num_key_value_heads", None) or num_heads
        if num_heads % num_kv_heads:
            raise UnsupportedConfigError(
                f"num_attention_heads ({num_heads}) is not a multiple of num_key_value_heads ({num_kv_heads})")
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // num_heads
        attention_bias = bool(getattr(config, "attention_bias", False))
        rope = rope_parameters(config)
        try:
            compute_inv_freq(head_dim, rope, config.max_position_embeddings)
        except (UnsupportedRopeError, KeyError) as exc:
            raise UnsupportedConfigError(f"rope scaling {rope}: {exc!r}") from exc
        return cls(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            num_layers=config.num_hidden_layers,
            num_heads=num_heads,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            rms_norm_eps=config.rms_norm_eps,
            qkv_bias=attention_bias,
            o_bias=attention_bias,
            mlp_bias=bool(getattr(config, "mlp_bias", False)),
            tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            sliding_windows=sliding_windows(config),
            rope=rope,
            max_positions=config.max_position_embeddings,
        )


def sliding_windows(config) -> tuple[int | None, ...]:
    """Per-layer sliding window (None = full attention).

    transformers >= 5 lists ``layer_types`` (Qwen2); older Qwen2 configs say ``use_sliding_window`` and
    window the layers from ``max_window_layers`` on; Mistral windows every layer when ``sliding_window`` is
    set; Llama has no window.
    """
    num_layers = config.num_hidden_layers
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types:
        return tuple(window if t == "sliding_attention" else None for t in layer_types)
    if window is None or getattr(config, "use_sliding_window", True) is False:
        return (None,) * num_layers
    first = getattr(config, "max_window_layers", 0) if hasattr(config, "use_sliding_window") else 0
    return tuple(window if i >= first else None for i in range(num_layers))


class LlamaAttention(nn.Module):
    """Self-attention over this rank's query heads and the KV heads they read (all of them on one rank):
    q/k/v column-parallel by heads, o_proj row-parallel."""

    def __init__(self, args: LlamaArgs, layer_idx: int, tp: TensorParallelGroup, *, dtype: torch.dtype, device):
        super().__init__()
        d = self.head_dim = args.head_dim
        q_heads = Shard.even(0, args.num_heads, tp)
        kv_start, self.num_kv_heads = kv_head_shard(args.num_kv_heads, tp)
        self.num_heads = q_heads.length
        kv = Shard(0, kv_start * d, self.num_kv_heads * d, args.num_kv_heads * d)
        shards = {"q_proj": Shard(0, q_heads.start * d, q_heads.length * d, args.num_heads * d),
                  "k_proj": kv, "v_proj": kv}
        self.qkv_proj = ColumnParallelLinear(args.hidden_size, shards, args.qkv_bias, dtype=dtype, device=device)
        self.o_proj = RowParallelLinear(args.num_heads * d, args.hidden_size, args.o_bias, tp, dtype=dtype,
                                        device=device)
        self.scale = self.head_dim ** -0.5
        self.sliding_window = args.sliding_windows[layer_idx]

    def forward(self, hidden: torch.Tensor, rotate: Rotate, batch: ForwardBatch,
                k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        num_tokens = hidden.shape[0]
        q, k, v = self.qkv_proj.split(self.qkv_proj(hidden))
        q = q.view(num_tokens, self.num_heads, self.head_dim)
        k = k.view(num_tokens, self.num_kv_heads, self.head_dim)
        v = v.view(num_tokens, self.num_kv_heads, self.head_dim)
        rotate(q, k)
        kernels.write_kv_cache(k, v, k_cache, v_cache, batch.slot_mapping)
        out = kernels.paged_attention(q, k_cache, v_cache, batch.block_tables, batch.seq_lens,
                                      batch.query_start_loc, self.scale, self.sliding_window)
        return self.o_proj(out.reshape(num_tokens, self.num_heads * self.head_dim))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, args: LlamaArgs, layer_idx: int, tp: TensorParallelGroup, *, dtype: torch.dtype, device):
        super().__init__()
        self.input_layernorm = RMSNorm(args.hidden_size, args.rms_norm_eps, dtype=dtype, device=device)
        self.self_attn = LlamaAttention(args, layer_idx, tp, dtype=dtype, device=device)
        self.post_attention_layernorm = RMSNorm(args.hidden_size, args.rms_norm_eps, dtype=dtype, device=device)
        self.mlp = SwiGLUMLP(args.hidden_size, args.intermediate_size, args.mlp_bias, tp, dtype=dtype, device=device)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor | None, rotate: Rotate,
                batch: ForwardBatch, k_cache: torch.Tensor, v_cache: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(this layer's MLP output, residual stream before it): the next norm adds the two (fused), so
        the sum ``residual + mlp`` is the layer's output. ``residual`` None (first layer): ``hidden`` is it."""
        if residual is None:
            residual, hidden = hidden, self.input_layernorm(hidden)
        else:
            hidden = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(hidden, rotate, batch, k_cache, v_cache)
        return self.mlp(self.post_attention_layernorm(hidden, residual)), residual


class LlamaModel(nn.Module):
    def __init__(self, args: LlamaArgs, tp: TensorParallelGroup, *, dtype: torch.dtype, device):
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(args.vocab_size, args.hidden_size, tp, dtype=dtype, device=device)
        self.layers = nn.ModuleList(LlamaDecoderLayer(args, i, tp, dtype=dtype, device=device)
                                    for i in range(args.num_layers))
        self.norm = RMSNorm(args.hidden_size, args.rms_norm_eps, dtype=dtype, device=device)
        self.rotary_emb = RotaryEmbedding(args.head_dim, args.rope, args.max_positions, device=device)

    def forward(self, batch: ForwardBatch, kv_caches: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        hidden, residual = self.embed_tokens(batch.input_ids), None
        rotate = self.rotary_emb.step(batch.positions, hidden.dtype)
        for layer, (k_cache, v_cache) in zip(self.layers, kv_caches):
            hidden, residual = layer(hidden, residual, rotate, batch, k_cache, v_cache)
        return self.norm(hidden, residual)


class LlamaForCausalLM(nn.Module):
    """Llama 1/2/3 (incl. Llama 3.1 rope scaling); the base of the Qwen2 and Mistral variants. Built for
    one rank of `tp` it holds that rank's shard (`sharding`) and its KV cache holds `num_kv_heads` heads."""

    packed_modules = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
                      "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}

    def __init__(self, hf_config, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                 tp: TensorParallelGroup = SINGLE):
        super().__init__()
        self.args = self.make_args(hf_config)
        check_divisible(self.args.num_heads, self.args.num_kv_heads, self.args.intermediate_size, tp.size)
        self.tp = tp
        self.num_kv_heads = kv_head_shard(self.args.num_kv_heads, tp)[1]
        self.model = LlamaModel(self.args, tp, dtype=dtype, device=device)
        self.lm_head = None if self.args.tie_word_embeddings else VocabParallelEmbedding(
            self.args.vocab_size, self.args.hidden_size, tp, dtype=dtype, device=device)

    @classmethod
    def make_args(cls, hf_config) -> LlamaArgs:
        return LlamaArgs.from_hf_config(hf_config)

    def untie_lm_head(self, weight: torch.Tensor) -> None:
        """Give a tied model its own lm_head (a checkpoint that stores a different ``lm_head.weight`` despite
        ``tie_word_embeddings``; transformers then uses the stored one too). ``weight`` is this rank's rows."""
        embed = self.model.embed_tokens.weight
        self.lm_head = VocabParallelEmbedding(self.args.vocab_size, self.args.hidden_size, self.tp,
                                              dtype=embed.dtype, device=embed.device)
        copy_checked(self.lm_head.shard_of("weight", None)[0], weight)

    def forward(self, batch: ForwardBatch, kv_caches: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Final hidden states [num_tokens, hidden_size] of every new token in the batch."""
        return self.model(batch, kv_caches)

    def compute_logits(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor | None:
        """float32 logits [rows, vocab_size] for the given hidden-state rows, on rank 0 (None on the others);
        into ``out`` when given (a single rank)."""
        head = self.model.embed_tokens if self.lm_head is None else self.lm_head
        return head.logits(hidden, out)


class Qwen2ForCausalLM(LlamaForCausalLM):
    """Qwen2 / Qwen2.5: Llama with biases on q/k/v (not on o_proj) and optional per-layer sliding window."""

    @classmethod
    def make_args(cls, hf_config) -> LlamaArgs:
        return replace(LlamaArgs.from_hf_config(hf_config), qkv_bias=True, o_bias=False)


class MistralForCausalLM(LlamaForCausalLM):
    """Mistral: Llama with a sliding attention window (``sliding_window``) on every layer."""

"""ModelRunner: owns the loaded model and its paged KV pool; turns a ForwardBatch into next-token logits."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from formwork import kernels
from formwork.core.config import EngineConfig
from formwork.core.cuda_graphs import DecodeGraphs
from formwork.core.distributed.group import SINGLE, TensorParallelGroup
from formwork.core.forward_batch import ForwardBatch
from formwork.core.input_buffers import InputBuffers
from formwork.core.loader import load_model, resolve_dtype
from formwork.core.memory import DEFAULT_GPU_MEMORY_UTILIZATION, kv_cache_budget, profile_cuda_memory
from formwork.core.model_files import ModelFiles
from formwork.core.models.llama import LlamaArgs
from formwork.core.models.sharding import kv_heads_per_rank

if TYPE_CHECKING:
    from formwork.core.input_batch import InputBatch
    from formwork.core.scheduler import ScheduledSequence


def _kv_shape(hf_config, tensor_parallel_size: int) -> tuple[int, int, int]:
    """(num_layers, KV heads per rank, head_dim) of a Llama-family config."""
    heads = hf_config.num_attention_heads
    kv_heads = getattr(hf_config, "num_key_value_heads", None) or heads
    head_dim = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // heads
    return hf_config.num_hidden_layers, kv_heads_per_rank(kv_heads, tensor_parallel_size), head_dim


class ModelRunner:
    """Loads the weights of ``files`` and allocates ``num_blocks`` KV blocks of ``block_size`` tokens per layer.

    The pool is one tensor ``[2, num_layers, num_blocks, block_size, num_kv_heads, head_dim]`` (K then V);
    block ids in ForwardBatch block tables index its third dimension. `for_engine` also sizes the pool
    from GPU memory, and gives the runner persistent input buffers (`prepare`) and decode CUDA graphs.

    Given a tensor-parallel group ``tp`` the runner holds rank ``tp.rank``'s shard (its KV pool only that
    rank's KV heads); every rank runs the same calls in lockstep and `forward` returns the logits on
    rank 0 only (see `formwork.core.distributed.runner`).
    """

    def __init__(self, files: ModelFiles, *, num_blocks: int, block_size: int = 16,
                 dtype: torch.dtype | str = "auto", device: str = "cpu", tp: TensorParallelGroup = SINGLE):
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self._load(files, dtype, device, block_size, tp)
        self._allocate_kv(num_blocks)

    def _load(self, files: ModelFiles, dtype: torch.dtype | str, device: str, block_size: int,
              tp: TensorParallelGroup) -> None:
        self.files = files
        self.device = torch.device(device)
        self.dtype = resolve_dtype(dtype, files.hf_config, self.device)
        self.block_size = block_size
        self.vocab_size = files.vocab_size
        self.tp = tp
        self.model, self.checkpoint_bytes_read = load_model(files, self.dtype, self.device, tp)
        self.buffers: InputBuffers | None = None
        self.graphs: DecodeGraphs | None = None

    def _allocate_kv(self, num_blocks: int) -> None:
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be positive, got {num_blocks}")
        args: LlamaArgs = self.model.args
        self.num_blocks = num_blocks
        self.kv_cache = torch.zeros(2, args.num_layers, num_blocks, self.block_size, self.model.num_kv_heads,
                                    args.head_dim, dtype=self.dtype, device=self.device)
        self.kv_caches = [(self.kv_cache[0, i], self.kv_cache[1, i]) for i in range(args.num_layers)]

    @classmethod
    def for_engine(cls, files: ModelFiles, config: EngineConfig, max_model_len: int,
                   tp: TensorParallelGroup = SINGLE) -> "ModelRunner":
        """The engine's runner: the model on `config.device` (rank r of a tensor-parallel group on CUDA:
        cuda:r), a KV pool sized by `config` (on CUDA without an explicit size: `gpu_memory_utilization`
        of the GPU after a profiled worst-case step; the smallest over the ranks) and input buffers for
        the scheduler's largest step. CUDA graphs are captured later (`capture_cuda_graphs`)."""
        runner = cls.__new__(cls)
        runner._load(files, config.dtype, config.rank_device(tp.rank), config.block_size, tp)
        token_budget = config.resolve_token_budget(max_model_len)
        gpu_budget = None
        if config.sizes_kv_from_gpu_memory:
            profile = profile_cuda_memory(runner.device, lambda: runner.profile_step(token_budget, config.max_num_seqs))
            utilization = config.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
            gpu_budget = kv_cache_budget(profile, utilization)
        bytes_per_block = cls.kv_bytes_per_block(files.hf_config, config.block_size, runner.dtype, config.device,
                                                 tp.size)
        runner._allocate_kv(tp.min(config.resolve_num_blocks(bytes_per_block, max_model_len, gpu_budget)))
        width = min(math.ceil(max_model_len / config.block_size), runner.num_blocks)
        runner.buffers = InputBuffers(max_tokens=max(token_budget, config.max_num_seqs), max_seqs=config.max_num_seqs,
                                      max_blocks_per_seq=width, block_size=config.block_size, device=runner.device)
        return runner

    @staticmethod
    def kv_bytes_per_block(hf_config, block_size: int, dtype: torch.dtype | str, device: str = "cpu",
                           tensor_parallel_size: int = 1) -> int:
        """Bytes one KV block takes across all layers (K and V) on one rank, to size ``num_blocks`` from a
        budget. ``dtype``/``device`` as given to the runner ("auto" resolves per device)."""
        layers, kv_heads, head_dim = _kv_shape(hf_config, tensor_parallel_size)
        element = torch.empty((), dtype=resolve_dtype(dtype, hf_config, device)).element_size()
        return 2 * layers * block_size * kv_heads * head_dim * element

    @torch.inference_mode()
    def profile_step(self, num_tokens: int, max_seqs: int) -> None:
        """The largest step the scheduler can form (`num_tokens` prompt tokens over up to `max_seqs`
        sequences, all wanting logits, then sampled), on a scratch KV pool just big enough."""
        num_seqs = max(1, min(max_seqs, num_tokens))
        lengths = [num_tokens // num_seqs + (s < num_tokens % num_seqs) for s in range(num_seqs)]
        items, next_block = [], 0
        for length in lengths:
            blocks = math.ceil(length / self.block_size)
            items.append(([0] * length, 0, list(range(next_block, next_block + blocks))))
            next_block += blocks
        if hasattr(self, "kv_cache"):
            raise RuntimeError("profile_step runs before the KV pool is allocated")
        self._allocate_kv(next_block)
        try:
            logits = self.forward(ForwardBatch.build(items, self.block_size, [True] * num_seqs, self.device))
            params = kernels.SamplingTensors.from_lists(
                [1.0] * num_seqs, [50] * num_seqs, [0.9] * num_seqs, [0.0] * num_seqs, [0] * num_seqs,
                [0] * num_seqs, device=self.device)
            if logits is not None:  # rank 0 samples; the other ranks have no logits
                kernels.sample(logits, params)
        finally:
            del self.kv_cache, self.kv_caches

    def shard_report(self) -> dict:
        """What this rank holds: its rank, the bytes it read from the checkpoint, its parameter shapes and
        its KV pool's shape."""
        return {"rank": self.tp.rank, "checkpoint_bytes_read": self.checkpoint_bytes_read,
                "parameters": {name: tuple(p.shape) for name, p in self.model.named_parameters()},
                "kv_cache": tuple(self.kv_cache.shape)}

    def prepare(self, items: list[tuple[list[int], int, list[int]]], logits_for: list[bool]) -> ForwardBatch:
        """The batch of `ForwardBatch.build`, through the persistent buffers (one host-to-device copy); a
        decode batch that a captured CUDA graph can run is padded to the graph's size."""
        if self.buffers is None:
            return ForwardBatch.build(items, self.block_size, logits_for, device=self.device)
        bucket = None
        if self.graphs is not None and all(len(new) == 1 for new, _, _ in items) and all(logits_for):
            bucket = self.graphs.bucket_for(len(items))
        return self.buffers.pack(items, logits_for, pad_to=bucket)

    def prepare_step(self, input_batch: InputBatch, scheduled: list[ScheduledSequence]) -> ForwardBatch:
        """`prepare` for the scheduled sequences of a step, their block tables read from `input_batch` (as wide
        as the input buffers). A decode graph runs the step only when every sequence wants its logits (a graph's
        logits are its first rows; a one-token chunk in mid-prompt runs eagerly)."""
        if self.buffers is None:
            raise RuntimeError("prepare_step needs the engine's input buffers (ModelRunner.for_engine)")
        bucket_for = None
        if self.graphs is not None and all(item.wants_logits for item in scheduled):
            bucket_for = self.graphs.bucket_for
        return input_batch.pack_step(scheduled, self.buffers, bucket_for)

    def capture_cuda_graphs(self, max_num_seqs: int) -> None:
        """Capture one decode graph per padded batch size (largest first, sharing one memory pool). Run at
        start-up: the capture batch writes one token's K/V into block 0."""
        if self.buffers is None:
            raise RuntimeError("CUDA graphs need the engine's input buffers (ModelRunner.for_engine)")
        if self.device.type == "cuda" and kernels.select_backend(self.kv_cache) != "triton":
            raise RuntimeError("CUDA graphs need the Triton kernels; the torch reference syncs with the host "
                               f"({kernels.dispatch.BACKEND_ENV} forces it): use --no-cuda-graphs")
        graphs = DecodeGraphs(DecodeGraphs.buckets_for(max_num_seqs), self.vocab_size, self.device)
        graphs.capture(lambda size: self.buffers.pack(*_padding_batch(size)),
                       lambda batch, out: self.model.compute_logits(self.model(batch, self.kv_caches), out))
        self.graphs = graphs

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch) -> Tensor | None:
        """float32 logits ``[len(batch.logits_indices), vocab_size]`` (on rank 0; None on other ranks); K/V
        of all new tokens is cached. A decode graph's logits are the first rows of `graphs.logits` (every
        row of a graph batch wants its logits: see `prepare_step`)."""
        if batch.decode_bucket is not None and self.graphs is not None:
            return self.graphs.replay(batch.decode_bucket)[:batch.logits_indices.shape[0]]
        hidden = self.model(batch, self.kv_caches)
        return self.model.compute_logits(hidden.index_select(0, batch.logits_indices))


def _padding_batch(size: int) -> tuple[list[tuple[list[int], int, list[int]]], list[bool], int]:
    """A one-sequence decode batch padded to `size` rows: what a graph of that size is captured on."""
    return [([0], 0, [0])], [True], size

"""Paged KV cache bookkeeping: a fixed pool of blocks, reference counts, and a prefix cache.

Prefix caching: every full block of a sequence gets a chained hash, sha256(parent hash || token ids),
so equal hashes mean equal whole prefixes. Hits are also checked token by token against the tokens
stored with the cached block, so even a hash collision cannot serve wrong K/V. Freed blocks keep their
contents and hash and wait in an LRU free queue (an OrderedDict: O(1) pop of the oldest, O(1) removal
on a hit); a cached block is evicted only when the pool hands it out again.
"""

from __future__ import annotations

import array
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Sequence as SequenceABC

from formwork.core.sequence import Sequence


class BlockManagerError(RuntimeError):
    """The block manager was used inconsistently (a bug in the caller)."""


class KVBlock:
    """One block of the pool: `block_size` token slots of K/V in every layer."""

    __slots__ = ("block_id", "ref_count", "block_hash", "token_ids")

    def __init__(self, block_id: int):
        self.block_id = block_id
        self.ref_count = 0
        self.block_hash: bytes | None = None
        self.token_ids: tuple[int, ...] | None = None


def hash_block(parent_hash: bytes | None, token_ids: SequenceABC[int]) -> bytes:
    """Chained block hash: sha256 over the parent's hash and the block's token ids (int64 bytes)."""
    digest = hashlib.sha256(parent_hash or b"")
    digest.update(array.array("q", token_ids).tobytes())
    return digest.digest()


class BlockManager:
    """Allocates KV blocks to sequences and shares full blocks through the prefix cache."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [KVBlock(i) for i in range(num_blocks)]
        self._free: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self._cached: dict[bytes, int] = {}
        # told of every sequence whose block table changed (blocks appended, or all freed)
        self.on_table_change: Callable[[Sequence], None] | None = None

    @property
    def num_free_blocks(self) -> int:
        return len(self._free)

    @property
    def num_used_blocks(self) -> int:
        return self.num_blocks - len(self._free)

    @property
    def usage(self) -> float:
        """Fraction of the pool referenced by live sequences (free cached blocks count as free)."""
        return self.num_used_blocks / self.num_blocks

    @property
    def num_cached_blocks(self) -> int:
        return len(self._cached)

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def get_computed_blocks(self, seq: Sequence) -> list[int]:
        """Leading blocks of `seq` already in the prefix cache (at most num_tokens - 1 tokens' worth,
        so at least one token is left to compute and produce logits). Does not take references."""
        if not self.enable_prefix_caching or seq.num_computed_tokens or seq.block_table:
            return []
        self._extend_hashes(seq)
        bs = self.block_size
        hits: list[int] = []
        for i in range((seq.num_tokens - 1) // bs):
            block_id = self._cached.get(seq.block_hashes[i])
            if block_id is None or self.blocks[block_id].token_ids != tuple(seq.token_ids[i * bs:(i + 1) * bs]):
                break
            hits.append(block_id)
        return hits

    def allocate_slots(self, seq: Sequence, num_new_tokens: int, computed_blocks: SequenceABC[int] = ()) -> bool:
        """Give `seq` blocks for `num_new_tokens` more tokens after its computed ones (plus the
        prefix-cache `computed_blocks`, which must come first). All or nothing: False if the pool is short."""
        if not computed_blocks:  # a running sequence's next tokens
            num_new_blocks = -(-(seq.num_computed_tokens + num_new_tokens) // self.block_size) - len(seq.block_table)
            if num_new_blocks > len(self._free):
                return False
            if num_new_blocks > 0:
                for _ in range(num_new_blocks):
                    seq.block_table.append(self._take_free_block())
                if self.on_table_change is not None:
                    self.on_table_change(seq)
            return True
        if seq.block_table:
            raise BlockManagerError(f"{seq}: computed blocks can only start an empty block table")
        num_computed = seq.num_computed_tokens + len(computed_blocks) * self.block_size
        total = self.blocks_needed(num_computed + num_new_tokens)
        num_new_blocks = total - len(seq.block_table) - len(computed_blocks)
        num_revived = sum(1 for b in computed_blocks if self.blocks[b].ref_count == 0)
        if max(num_new_blocks, 0) + num_revived > len(self._free):
            return False
        for block_id in computed_blocks:
            block = self.blocks[block_id]
            if block.ref_count == 0:
                del self._free[block_id]
            block.ref_count += 1
            seq.block_table.append(block_id)
        seq.num_hashed_blocks = max(seq.num_hashed_blocks, len(computed_blocks))
        for _ in range(num_new_blocks):
            seq.block_table.append(self._take_free_block())
        if self.on_table_change is not None:
            self.on_table_change(seq)
        return True

    def cache_full_blocks(self, seq: Sequence) -> None:
        """Register the blocks of `seq` that are full of computed tokens in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        num_full = min(seq.num_computed_tokens // self.block_size, len(seq.block_table))
        if num_full <= seq.num_hashed_blocks:
            return
        self._extend_hashes(seq)
        bs = self.block_size
        for i in range(seq.num_hashed_blocks, num_full):
            block = self.blocks[seq.block_table[i]]
            block_hash = seq.block_hashes[i]
            if block.block_hash is None and block_hash not in self._cached:
                block.block_hash = block_hash
                block.token_ids = tuple(seq.token_ids[i * bs:(i + 1) * bs])
                self._cached[block_hash] = block.block_id
        seq.num_hashed_blocks = num_full

    def free(self, seq: Sequence) -> None:
        """Drop `seq`'s references. Blocks reaching zero join the free queue: cached ones at the tail
        (tail of the chain first, so it is evicted before its parents), uncached ones at the head."""
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            if block.ref_count <= 0:
                raise BlockManagerError(f"{seq} frees block {block_id} that has no references")
            block.ref_count -= 1
            if block.ref_count == 0:
                self._free[block_id] = None
                if block.block_hash is None:
                    self._free.move_to_end(block_id, last=False)
        seq.block_table = []
        seq.num_hashed_blocks = 0
        if self.on_table_change is not None:
            self.on_table_change(seq)

    def reset_prefix_cache(self) -> None:
        """Forget all cached prefixes (blocks in use keep their contents but are no longer shareable)."""
        for block in self.blocks:
            block.block_hash = None
            block.token_ids = None
        self._cached.clear()

    def _take_free_block(self) -> int:
        block_id, _ = self._free.popitem(last=False)
        block = self.blocks[block_id]
        if block.block_hash is not None:
            del self._cached[block.block_hash]
            block.block_hash = None
            block.token_ids = None
        block.ref_count = 1
        return block_id

    def _extend_hashes(self, seq: Sequence) -> None:
        bs = self.block_size
        hashes = seq.block_hashes
        for i in range(len(hashes), seq.num_tokens // bs):
            hashes.append(hash_block(hashes[-1] if hashes else None, seq.token_ids[i * bs:(i + 1) * bs]))

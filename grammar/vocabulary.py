"""Tokenizer vocabularies as exact byte strings, with stop tokens and the logit width.

Decoding rules, chosen from the tokenizer's decoder/model:
- byte-level BPE (GPT-2, Llama-3, Qwen, DeepSeek): the GPT-2 bytes-to-unicode table is inverted;
- SentencePiece style (Metaspace or `Replace("▁", " ")` decoders, byte fallback): `▁` is a
  space and `<0xHH>` is the byte HH;
- anything else (WordLevel, plain BPE...): the token string's UTF-8 bytes.
Added tokens (special or not: `<｜User｜>`, `<s>`...) and tokens decoding to nothing are kept
out of text: they never match any grammar.  Stop tokens may still be sampled where a grammar
can end.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from formwork.grammar.errors import VocabularyError
from formwork.grammar.token_trie import TokenTrie

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_UNICODE_TO_BYTE = {ord(ch): chr(b) for b, ch in bytes_to_unicode().items()}


class Vocabulary:
    """Token id -> bytes for every id below `vocab_size` (the logit width).

    `token_bytes[i]` is None for ids that never produce text (special/added tokens,
    empty tokens, padding ids past the tokenizer).  `stop_token_ids` end generation.
    """

    def __init__(self, token_bytes: Sequence[bytes | None], stop_token_ids: Iterable[int] = (),
                 vocab_size: int | None = None):
        size = len(token_bytes)
        if vocab_size is None:
            vocab_size = size
        if vocab_size < size:
            raise VocabularyError(
                f"vocab_size {vocab_size} is smaller than the tokenizer's {size} token ids")
        self.vocab_size = int(vocab_size)
        self.tokenizer_size = size
        self.token_bytes: list[bytes | None] = [b if b else None for b in token_bytes]
        self.token_bytes.extend([None] * (vocab_size - size))
        stops = sorted(set(int(t) for t in stop_token_ids))
        for t in stops:
            if not 0 <= t < self.vocab_size:
                raise VocabularyError(f"stop token id {t} is outside the vocabulary (size {self.vocab_size})")
            self.token_bytes[t] = None
        self.stop_token_ids: tuple[int, ...] = tuple(stops)

    # ------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(cls, tokenizer_or_path: Any, vocab_size: int | None = None,
                        stop_token_ids: Iterable[int] | None = None) -> "Vocabulary":
        """Build from a transformers tokenizer, a `tokenizers.Tokenizer`, a model/tokenizer
        directory, or a path to a `tokenizer.json`.  Stop tokens: the tokenizer's eos plus
        `generation_config.json`'s `eos_token_id` (int or list), unless given explicitly."""
        from tokenizers import Tokenizer

        directory: Path | None = None
        stops: set[int] = set()
        if isinstance(tokenizer_or_path, (str, os.PathLike)):
            path = Path(tokenizer_or_path)
            file = path / "tokenizer.json" if path.is_dir() else path
            if not file.is_file():
                raise VocabularyError(f"no tokenizer.json at {path}")
            directory = file.parent
            spec = _spec_from_json(json.loads(file.read_text(encoding="utf-8")))
        elif isinstance(tokenizer_or_path, Tokenizer):
            spec = _spec_from_backend(tokenizer_or_path)
        elif hasattr(tokenizer_or_path, "backend_tokenizer"):
            spec = _spec_from_backend(tokenizer_or_path.backend_tokenizer)
            eos = getattr(tokenizer_or_path, "eos_token_id", None)
            stops.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
            name = getattr(tokenizer_or_path, "name_or_path", "")
            if name and Path(name).is_dir():
                directory = Path(name)
        else:
            raise VocabularyError(
                f"cannot read a vocabulary from {type(tokenizer_or_path).__name__}: pass a transformers "
                "fast tokenizer, a tokenizers.Tokenizer or a tokenizer directory")
        if directory is not None:
            stops.update(_stops_from_directory(directory, spec))
        if stop_token_ids is not None:
            stops = set(stop_token_ids)
        return cls(spec.token_bytes(), stops, vocab_size)

    # ------------------------------------------------------------ queries
    @cached_property
    def trie(self) -> TokenTrie:
        return TokenTrie(self.token_bytes, self.vocab_size)

    def decode(self, token_ids: Iterable[int]) -> bytes:
        """Concatenated bytes of text tokens (special tokens contribute nothing)."""
        return b"".join(self.token_bytes[i] or b"" for i in token_ids)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return (f"Vocabulary(vocab_size={self.vocab_size}, tokenizer_size={self.tokenizer_size}, "
                f"stop_token_ids={list(self.stop_token_ids)})")


class _TokenizerSpec:
    """What vocabulary extraction needs from a tokenizer: pieces, added tokens, decoder kind."""

    def __init__(self, vocab: dict[str, int], added: dict[int, str], kind: str):
        self.vocab = vocab
        self.added = added
        self.kind = kind

    def token_to_id(self, text: str) -> int | None:
        for i, content in self.added.items():
            if content == text:
                return i
        return self.vocab.get(text)

    def token_bytes(self) -> list[bytes | None]:
        """Bytes of every id; None for added tokens."""
        size = max([i + 1 for i in self.vocab.values()] + [i + 1 for i in self.added] + [0])
        out: list[bytes | None] = [None] * size
        pieces = [(t, i) for t, i in self.vocab.items() if i not in self.added]
        if self.kind == "byte_level":
            texts = [t for t, _ in pieces]
            try:
                data = "".join(texts).translate(_UNICODE_TO_BYTE).encode("latin-1")
            except UnicodeEncodeError:
                bad = next(t for t in texts if not _is_byte_level(t))
                raise VocabularyError(f"token {bad!r} is not in the byte-level alphabet") from None
            pos = 0
            for t, i in pieces:  # one character per byte in this alphabet
                out[i] = data[pos:pos + len(t)]
                pos += len(t)
        else:
            for t, i in pieces:
                out[i] = _decode_piece(t, self.kind)
        return out


def _is_byte_level(text: str) -> bool:
    return all(ord(c) in _UNICODE_TO_BYTE for c in text)


def _kind(decoder_spec: str, byte_fallback: bool) -> str:
    """'byte_level', 'sentencepiece' or 'plain', from the decoder's JSON and the model."""
    if '"ByteLevel"' in decoder_spec:
        return "byte_level"
    if '"Metaspace"' in decoder_spec or '"ByteFallback"' in decoder_spec or "\u2581" in decoder_spec \
            or "\\u2581" in decoder_spec or byte_fallback:
        return "sentencepiece"
    return "plain"


def _spec_from_json(data: dict) -> _TokenizerSpec:
    model = data.get("model") or {}
    vocab = model.get("vocab")
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        vocab = {piece: i for i, (piece, _) in enumerate(vocab)}
    if not isinstance(vocab, dict):
        raise VocabularyError("tokenizer.json has no model vocabulary")
    added = {int(t["id"]): t["content"] for t in data.get("added_tokens") or []}
    decoder = json.dumps(data.get("decoder"), ensure_ascii=False)
    return _TokenizerSpec(vocab, added, _kind(decoder, bool(model.get("byte_fallback"))))


def _spec_from_backend(backend: Any) -> _TokenizerSpec:
    decoder = backend.decoder
    decoder_spec = decoder.__getstate__().decode("utf-8", "replace") if decoder is not None else ""
    added = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
    kind = _kind(decoder_spec, bool(getattr(backend.model, "byte_fallback", False)))
    return _TokenizerSpec(backend.get_vocab(with_added_tokens=False), added, kind)


def _decode_piece(text: str, kind: str) -> bytes:
    if kind == "sentencepiece":
        m = _BYTE_FALLBACK.match(text)
        if m:
            return bytes([int(m.group(1), 16)])
        return text.replace("\u2581", " ").encode("utf-8")
    return text.encode("utf-8")


def _stops_from_directory(directory: Path, spec: _TokenizerSpec) -> set[int]:
    """eos from tokenizer_config.json plus eos_token_id from generation_config.json / config.json."""
    stops: set[int] = set()
    config = directory / "tokenizer_config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        tok = data.get("eos_token")
        content = tok.get("content") if isinstance(tok, dict) else tok
        if isinstance(content, str):
            tid = spec.token_to_id(content)
            if tid is not None:
                stops.add(tid)
    for name in ("generation_config.json", "config.json"):
        file = directory / name
        if file.is_file():
            eos = json.loads(file.read_text(encoding="utf-8")).get("eos_token_id")
            if isinstance(eos, int):
                stops.add(eos)
            elif isinstance(eos, list):
                stops.update(int(x) for x in eos)
    return stops

"""Incremental text of byte-level BPE tokens from a per-token byte table, without the tokenizer per token.

A fast tokenizer whose decoder is `ByteLevel` (GPT-2, Llama 3, Qwen...) decodes ids as follows: each kept
id's token string (an added token's content; special tokens dropped when skipped, unknown ids dropped) is
mapped character by character through the byte-level alphabet to bytes (a token with a character outside
the alphabet keeps its UTF-8 bytes), and the concatenated bytes are decoded as UTF-8 with each invalid
sequence replaced by U+FFFD. `DecodeStream` emits a token's text once the decoded text grows and does not
end in U+FFFD; the text it emits is then exactly the replacing decode of the bytes since its previous
emission (that emission ended on a complete character, so the decoder state starts afresh after it).

`ByteLevelTable.of(tokenizer)` holds each id's bytes, and its text when the bytes alone are already a
complete emission; `ByteLevelDecoder` keeps only the bytes of tokens not yet emitted and gives the same
chunks as `detokenizer._StreamDecoder` (checked against it in tests/test_byte_level.py). The table is built
only for a `ByteLevel` decoder and only if every token's text alone agrees with the tokenizer's decode.
"""

from __future__ import annotations

from typing import Any

from formwork.grammar.vocabulary import bytes_to_unicode

REPLACEMENT = "\ufffd"


def _translation() -> dict[int, str]:
    """`str.translate` table: a byte-level alphabet character (`vocabulary.bytes_to_unicode`) to the
    Latin-1 character of its byte, any other character below U+0100 to U+FFFF (then the token, holding a
    character outside the alphabet, fails to encode as Latin-1 and keeps its UTF-8)."""
    table = {ord(c): "\uffff" for c in map(chr, range(256))}
    table.update({ord(c): chr(b) for b, c in bytes_to_unicode().items()})
    return table


def _token_bytes(token: str, translation: dict[int, str]) -> bytes:
    """A token string's bytes: through the alphabet, or its UTF-8 when a character is outside it."""
    try:
        return token.translate(translation).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode()


def _alone(chunk: bytes) -> str | None:
    """The text a token with these bytes emits when nothing is pending, None if it emits nothing yet."""
    text = chunk.decode("utf-8", "replace")
    return text if text and not text.endswith(REPLACEMENT) else None


class ByteLevelTable:
    """Per token id: its bytes and the text it emits alone (see `_alone`), with and without special tokens."""

    def __init__(self, kept: list[bytes], special: set[int]):
        skipped = [b"" if i in special else chunk for i, chunk in enumerate(kept)]
        self.bytes = {False: kept, True: skipped}  # skip_special_tokens -> per-id bytes
        alone = [_alone(chunk) for chunk in kept]
        self.alone = {False: alone, True: [None if i in special else text for i, text in enumerate(alone)]}

    @classmethod
    def of(cls, tokenizer: Any) -> ByteLevelTable | None:
        """The table of a Hugging Face fast tokenizer with a `ByteLevel` decoder, else None."""
        from tokenizers import decoders

        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or type(backend.decoder) is not decoders.ByteLevel:
            return None
        translation = _translation()
        size = backend.get_vocab_size(with_added_tokens=True)
        special = {i for i, token in backend.get_added_tokens_decoder().items() if token.special}
        kept = []
        for i in range(size):
            token = backend.id_to_token(i)
            kept.append(b"" if token is None else _token_bytes(token, translation))
        table = cls(kept, special)
        return table if table.agrees_with(backend) else None

    def agrees_with(self, backend: Any) -> bool:
        """Whether the bytes of every id in order decode to the backend's text of them: a guard against a
        tokenizer this table misreads (one decode of the whole vocabulary)."""
        kept = self.bytes[False]
        return b"".join(kept).decode("utf-8", "replace") == backend.decode(list(range(len(kept))),
                                                                           skip_special_tokens=False)


class ByteLevelDecoder:
    """The text of generated tokens, chunk by chunk as `DecodeStream` emits it (see the module docstring)."""

    __slots__ = ("_bytes", "_alone", "_pending")

    def __init__(self, table: ByteLevelTable, skip_special_tokens: bool):
        self._bytes = table.bytes[skip_special_tokens]
        self._alone = table.alone[skip_special_tokens]
        self._pending = b""  # bytes of the tokens since the last emitted chunk

    def append(self, token_id: int) -> str:
        pending = self._pending
        if 0 <= token_id < len(self._bytes):
            if not pending:
                text = self._alone[token_id]
                if text is not None:
                    return text
            pending += self._bytes[token_id]
        text = pending.decode("utf-8", "replace")
        if text and not text.endswith(REPLACEMENT):
            self._pending = b""
            return text
        self._pending = pending
        return ""

    def flush(self) -> str:
        text = self._pending.decode("utf-8", "replace")
        self._pending = b""
        return text

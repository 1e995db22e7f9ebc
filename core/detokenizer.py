"""Incremental detokenization and stop-string matching for one completion.

Fast (Rust-backed) tokenizers decode through `tokenizers.decoders.DecodeStream`, about 1 µs a token: it
keeps the bytes of an incomplete UTF-8 character until a later token completes it. Other tokenizers
decode over a sliding window of tokens: the window's text before and after the new token is compared
and only the difference is appended, and nothing is appended while the window ends in an incomplete
UTF-8 sequence (U+FFFD). Both start from the last prompt tokens so word-initial spaces of the first
generated token are kept (SentencePiece tokenizers drop them at a text start). With the tokenizer's
`ByteLevelTable` (byte-level BPE), tokens go through `byte_level.ByteLevelDecoder` instead: the same chunks
as `DecodeStream` from a per-token byte table, without a tokenizer call per token.
"""

from __future__ import annotations

from typing import Any

from tokenizers.decoders import DecodeStream

from formwork.core.byte_level import ByteLevelDecoder, ByteLevelTable

INITIAL_WINDOW = 5  # prompt tokens used as decoding context for the first generated tokens


class _StreamDecoder:
    """Text of generated tokens through the fast tokenizer's own `DecodeStream`."""

    def __init__(self, backend: Any, context: list[int], skip_special_tokens: bool):
        self._backend = backend
        self._skip = skip_special_tokens
        self._stream = self._primed(context)
        self._pending: list[int] = []  # tokens whose text the stream still holds back

    def _primed(self, context: list[int]) -> DecodeStream:
        """A stream that has read the prompt's tail, cut before a trailing incomplete character (its
        bytes belong to the prompt; generated text starts after them)."""
        stream = DecodeStream(skip_special_tokens=self._skip)
        complete = 0
        for i, token_id in enumerate(context):
            if stream.step(self._backend, token_id) is not None:
                complete = i + 1
        if complete == len(context):
            return stream
        return self._primed(context[:complete]) if complete else DecodeStream(skip_special_tokens=self._skip)

    def append(self, token_id: int) -> str:
        chunk = self._stream.step(self._backend, token_id)
        if chunk is None:
            self._pending.append(token_id)
            return ""
        self._pending.clear()
        return chunk

    def flush(self) -> str:
        text = self._backend.decode(self._pending, skip_special_tokens=self._skip) if self._pending else ""
        self._pending.clear()
        return text


class _WindowDecoder:
    """Text of generated tokens by decoding a short window before and after each new token."""

    def __init__(self, tokenizer: Any, context: list[int], skip_special_tokens: bool):
        self._decode = tokenizer.decode
        self._skip = skip_special_tokens
        self._window = list(context)
        self._prefix_offset = 0
        self._read_offset = len(self._window)

    def _new_text(self) -> str:
        prefix_text = self._decode(self._window[self._prefix_offset:self._read_offset], skip_special_tokens=self._skip)
        full_text = self._decode(self._window[self._prefix_offset:], skip_special_tokens=self._skip)
        return full_text[len(prefix_text):] if len(full_text) > len(prefix_text) else ""

    def append(self, token_id: int) -> str:
        self._window.append(token_id)
        new_text = self._new_text()
        if not new_text or new_text.endswith("\ufffd"):
            return ""
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._window)
        if self._prefix_offset > 0:  # keep the window short: drop what no longer affects decoding
            del self._window[:self._prefix_offset]
            self._read_offset -= self._prefix_offset
            self._prefix_offset = 0
        return new_text

    def flush(self) -> str:
        if self._read_offset >= len(self._window):
            return ""
        new_text = self._new_text()
        self._read_offset = len(self._window)
        return new_text


class IncrementalDetokenizer:
    """Turns generated token ids into text step by step and finds stop strings in it."""

    def __init__(self, tokenizer: Any, prompt_token_ids: list[int], *, skip_special_tokens: bool = True,
                 stop: list[str] | None = None, include_stop_str_in_output: bool = False,
                 byte_table: ByteLevelTable | None = None):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.stop = list(stop or [])
        self.include_stop_str_in_output = include_stop_str_in_output
        context = list(prompt_token_ids[-INITIAL_WINDOW:])
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._decoder: ByteLevelDecoder | _StreamDecoder | _WindowDecoder
        if byte_table is not None:  # byte-level text does not depend on the prompt's (see byte_level.py)
            self._decoder = ByteLevelDecoder(byte_table, skip_special_tokens)
        elif backend is not None:
            self._decoder = _StreamDecoder(backend, context, skip_special_tokens)
        else:
            self._decoder = _WindowDecoder(tokenizer, context, skip_special_tokens)
        self.output_text = ""
        self._holdback = 0 if include_stop_str_in_output or not self.stop else max(map(len, self.stop)) - 1

    def decode_token(self, token_id: int) -> str:
        """Text of one token on its own (for logprob entries)."""
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def append(self, token_id: int) -> str:
        """Add a generated token; returns the text it completed (possibly empty)."""
        new_text = self._decoder.append(token_id)
        self.output_text += new_text
        return new_text

    def extend(self, token_ids: list[int]) -> None:
        """`append` each of `token_ids` (deferred tokens decoded at once: the same text)."""
        append = self._decoder.append
        self.output_text += "".join([append(token_id) for token_id in token_ids])

    def flush(self) -> str:
        """At the end of generation, append text still held back for an incomplete character."""
        new_text = self._decoder.flush()
        self.output_text += new_text
        return new_text

    def check_stop(self, num_new_chars: int) -> str | None:
        """Look for a stop string overlapping the last `num_new_chars` characters. On a match, trim
        the text after it (or at its start unless stop strings are included) and return it."""
        if not self.stop or num_new_chars <= 0:
            return None
        text = self.output_text
        best: tuple[int, str] | None = None
        for stop in self.stop:
            start = max(0, len(text) - num_new_chars - len(stop) + 1)
            idx = text.find(stop, start)
            if idx != -1 and (best is None or idx < best[0]):
                best = (idx, stop)
        if best is None:
            return None
        idx, stop = best
        self.output_text = text[:idx + len(stop)] if self.include_stop_str_in_output else text[:idx]
        return stop

    def visible_text(self, finished: bool) -> str:
        """Text safe to show: while unfinished, hold back a tail that might start a stop string."""
        if finished or not self._holdback:
            return self.output_text
        return self.output_text[:max(0, len(self.output_text) - self._holdback)]

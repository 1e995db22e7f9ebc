"""Incremental detokenization and stop-string matching for one completion.

Text is decoded over a sliding window of tokens: the window's text before and after the new token is
compared and only the difference is appended, and nothing is appended while the window ends in an
incomplete UTF-8 sequence (U+FFFD). The window starts on the last prompt tokens so word-initial
spaces of the first generated token are kept (SentencePiece tokenizers drop them at a text start).
"""

from __future__ import annotations

from typing import Any

INITIAL_WINDOW = 5  # prompt tokens used as decoding context for the first generated tokens


class IncrementalDetokenizer:
    """Turns generated token ids into text step by step and finds stop strings in it."""

    def __init__(self, tokenizer: Any, prompt_token_ids: list[int], *, skip_special_tokens: bool = True,
                 stop: list[str] | None = None, include_stop_str_in_output: bool = False):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.stop = list(stop or [])
        self.include_stop_str_in_output = include_stop_str_in_output
        self._window: list[int] = list(prompt_token_ids[-INITIAL_WINDOW:])
        self._prefix_offset = 0
        self._read_offset = len(self._window)
        self.output_text = ""
        self._holdback = 0 if include_stop_str_in_output or not self.stop else max(map(len, self.stop)) - 1

    def decode_token(self, token_id: int) -> str:
        """Text of one token on its own (for logprob entries)."""
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def append(self, token_id: int) -> str:
        """Add a generated token; returns the text it completed (possibly empty)."""
        self._window.append(token_id)
        decode = self.tokenizer.decode
        prefix_text = decode(self._window[self._prefix_offset:self._read_offset],
                             skip_special_tokens=self.skip_special_tokens)
        full_text = decode(self._window[self._prefix_offset:], skip_special_tokens=self.skip_special_tokens)
        if len(full_text) <= len(prefix_text) or full_text.endswith("\ufffd"):
            return ""
        new_text = full_text[len(prefix_text):]
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._window)
        if self._prefix_offset > 0:  # keep the window short: drop what no longer affects decoding
            del self._window[:self._prefix_offset]
            self._read_offset -= self._prefix_offset
            self._prefix_offset = 0
        self.output_text += new_text
        return new_text

    def flush(self) -> str:
        """At the end of generation, append text still held back for an incomplete character."""
        if self._read_offset >= len(self._window):
            return ""
        decode = self.tokenizer.decode
        prefix_text = decode(self._window[self._prefix_offset:self._read_offset],
                             skip_special_tokens=self.skip_special_tokens)
        full_text = decode(self._window[self._prefix_offset:], skip_special_tokens=self.skip_special_tokens)
        new_text = full_text[len(prefix_text):]
        self._read_offset = len(self._window)
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

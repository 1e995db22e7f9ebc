"""Jump-forward: turn the string a grammar forces next into tokens that are safe to append unsampled.

When only one continuation is possible (`Matcher.find_jump_forward_string`), the engine appends its
tokens without sampling. Tokenizing a forced string out of context can give token boundaries the model
never sees in training: forcing `"name` and letting the model sample `":` next is fine, but forcing
`"name":` as `"`, `name`, `":` when the model would write `":"` (one token) after it skews the
distribution (the SGLang/llguidance notes on canonical tokenization). So only a safe prefix of the
tokenization is forced:

1. the tokenizer's own tokenization of the forced text is used, and only if its tokens' bytes spell
   exactly the forced bytes;
2. trailing tokens are dropped while some vocabulary token that starts with the bytes from that
   token's start to the end of the forced text, and is longer, could still follow under the grammar
   (the model could want that longer token, crossing the end of the forced text);
3. every kept token must be accepted by the matcher one at a time (checked by accepting them; on a
   refusal the matcher is rolled back and nothing is forced).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from formwork.grammar import Matcher, Vocabulary


class ForcedTokenizer:
    """Safe token ids for forced strings, for one vocabulary and its tokenizer's `encode`."""

    def __init__(self, vocab: Vocabulary, encode: Callable[[str], list[int]]):
        self.vocab = vocab
        self.encode = encode
        self._keys = sorted(data for data in vocab.token_bytes if data)  # token byte strings, sorted

    def forced_tokens(self, matcher: Matcher, max_tokens: int) -> list[int]:
        """Accept and return the safe tokens of the string `matcher` forces now (at most
        `max_tokens`); [] when nothing is forced or nothing is safe (the matcher is then unchanged)."""
        if max_tokens <= 0:
            return []
        forced = matcher.find_jump_forward_string()
        if not forced:
            return []
        data = forced.encode("utf-8")
        ids = self.encode(forced)
        pieces = [self.vocab.token_bytes[t] if 0 <= t < self.vocab.vocab_size else None for t in ids]
        if not ids or any(p is None for p in pieces) or b"".join(pieces) != data:
            return []
        starts = [0]
        for piece in pieces[:-1]:
            starts.append(starts[-1] + len(piece))
        keep = len(ids)
        while keep and self._extendable(matcher, data, data[starts[keep - 1]:]):
            keep -= 1
        keep = min(keep, max_tokens)
        for accepted, token_id in enumerate(ids[:keep]):
            if not matcher.accept_token(token_id):
                matcher.rollback(accepted)
                return []
        return ids[:keep]

    def _extendable(self, matcher: Matcher, forced: bytes, tail: bytes) -> bool:
        """True if a token strictly longer than `tail` starts with it and its extra bytes may follow
        `forced` under the grammar (checked from the matcher's current state, left unchanged)."""
        keys = self._keys
        lo = bisect.bisect_right(keys, tail)  # skip the token equal to `tail` itself
        hi = bisect.bisect_left(keys, _prefix_end(tail)) if _prefix_end(tail) else len(keys)
        if lo >= hi:
            return False
        if not matcher.accept_string(forced):
            return True  # cannot happen for a forced string; be conservative
        try:
            n = len(tail)
            i = lo
            while i < hi:
                first = keys[i][n]
                group_end = bisect.bisect_left(keys, tail + bytes([first + 1]), i, hi) if first < 255 else hi
                if matcher.accept_string(bytes([first])):
                    try:
                        for key in keys[i:group_end]:
                            rest = key[n + 1:]
                            if not rest:
                                return True
                            if matcher.accept_string(rest):
                                matcher.rollback(1)
                                return True
                    finally:
                        matcher.rollback(1)
                i = group_end
            return False
        finally:
            matcher.rollback(1)


def _prefix_end(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string starting with `prefix` (b"" if none)."""
    data = bytearray(prefix)
    while data and data[-1] == 255:
        data.pop()
    if not data:
        return b""
    data[-1] += 1
    return bytes(data)

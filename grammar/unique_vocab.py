"""Per-vocabulary tables for `uniqueItems` masks: which tokens can end or open an item.

`signature[i]` (bits below) says what token i holds that can end an item of a unique array or open
one, so a mask tests only those tokens (`unique_tracker`).  For a string item, `closing[s]` lists
the tokens whose bytes before their first (unescaped) quote spell the characters `s`: a token
ends the item with the value seen so far plus `s`, so only the tokens of the rests of earlier
items' values can end a duplicate; `structured` marks the tokens that hold more than a separator
after that quote (another whole item, or a bracket).  Built once per vocabulary, with numpy.
"""
from __future__ import annotations

import json
import weakref
from typing import Any, Optional

import numpy as np

from formwork.grammar.unique_open import LooseEnds

QUOTE, TWO_QUOTES, CLOSE, OPEN, COMMA, SPACE, LITERAL, NUMBER_END, BACKSLASH = 1, 2, 4, 8, 16, 32, 64, 128, 256
ANY = 0x1FF
_SPACES = b" \t\n\r"
_BIG = np.iinfo(np.int64).max


def _byte_flags() -> np.ndarray:
    flags = np.zeros(256, dtype=np.uint16)
    flags[ord('"')] = QUOTE
    flags[[ord("]"), ord("}")]] = CLOSE
    flags[ord("[")] = OPEN
    flags[ord(",")] = COMMA
    flags[list(_SPACES)] = SPACE
    flags[ord("\\")] = BACKSLASH
    return flags


_FLAGS = _byte_flags()
_IS_SPACE = np.isin(np.arange(256), list(_SPACES))
_IS_DIGIT = np.isin(np.arange(256), list(b"0123456789"))
_ENDS_NUMBER = np.isin(np.arange(256), list(b" \t\n\r,]}"))
_STARTS_LITERAL = np.isin(np.arange(256), list(b"tfn"))


def signatures(token_bytes: list[Optional[bytes]]) -> np.ndarray:
    """The signature of every token (0 for ids without bytes): a quote, two quotes (a whole
    string), a closing or opening bracket, a comma, a space, a literal's first letter first, a
    digit followed by what ends a number, or a backslash."""
    lengths = np.array([len(b) if b else 0 for b in token_bytes], dtype=np.int64)
    present = np.flatnonzero(lengths)
    out = np.zeros(len(token_bytes), dtype=np.uint16)
    if not len(present):
        return out
    flat = np.frombuffer(b"".join(b for b in token_bytes if b), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths[present])[:-1]))
    ends = starts + lengths[present]
    where = np.arange(len(flat), dtype=np.int64)
    bits = np.bitwise_or.reduceat(_FLAGS[flat], starts)
    quotes = np.add.reduceat((flat == ord('"')).astype(np.int64), starts)
    bits |= np.where(quotes > 1, TWO_QUOTES, 0).astype(np.uint16)
    first_word = np.minimum.reduceat(np.where(_IS_SPACE[flat], _BIG, where), starts)
    literal = (first_word < ends) & _STARTS_LITERAL[flat[np.minimum(first_word, len(flat) - 1)]]
    bits |= np.where(literal, LITERAL, 0).astype(np.uint16)
    first_digit = np.minimum.reduceat(np.where(_IS_DIGIT[flat], where, _BIG), starts)
    last_end = np.maximum.reduceat(np.where(_ENDS_NUMBER[flat], where, -1), starts)
    bits |= np.where(last_end > first_digit, NUMBER_END, 0).astype(np.uint16)
    out[present] = bits
    return out


def _first_quote(data: bytes) -> int:
    """The index of the first quote of `data` not escaped by a backslash (read from the start of
    a string's characters), or -1."""
    escaped = False
    for i, b in enumerate(data):
        if escaped:
            escaped = False
        elif b == 0x5C:
            escaped = True
        elif b == 0x22:
            return i
    return -1


class VocabTables:
    """The tables of one vocabulary (see the module docstring)."""

    def __init__(self, token_bytes: list[Optional[bytes]]):
        self.signature = signatures(token_bytes)
        ids: dict[bytes, list[int]] = {}
        closing: dict[str, list[int]] = {}
        self.structured = np.zeros(len(token_bytes), dtype=bool)
        self.loose_ends = LooseEnds(token_bytes)  # for unique arrays of open values (`unique_open`)
        after_bits = TWO_QUOTES | QUOTE | OPEN | LITERAL | NUMBER_END
        for i, data in enumerate(token_bytes):
            if data is None:
                continue
            ids.setdefault(data, []).append(i)
            if not self.signature[i] & QUOTE:
                continue
            at = _first_quote(data)
            if at < 0:
                continue
            try:
                chars = json.loads(b'"' + data[:at] + b'"')
            except ValueError:  # not whole characters (a UTF-8 tail, a split escape)
                self.structured[i] = True
                continue
            closing.setdefault(chars, []).append(i)
            rest = data[at + 1:]
            self.structured[i] = bool(signatures([rest])[0] & after_bits) if rest else False
        # tuples of ints: the cycle collector stops tracking them (and then the dicts) at its next pass,
        # where ~128k lists would each cost every later full collection (~30 ms for a 129k vocabulary)
        self.ids: dict[bytes, tuple[int, ...]] = {data: tuple(found) for data, found in ids.items()}
        self.closing: dict[str, tuple[int, ...]] = {chars: tuple(found) for chars, found in closing.items()}


_TABLES: "weakref.WeakKeyDictionary[Any, VocabTables]" = weakref.WeakKeyDictionary()


def vocab_tables(vocab: Any) -> VocabTables:
    """The tables of `vocab` (made on first use)."""
    got = _TABLES.get(vocab)
    if got is None:
        got = _TABLES[vocab] = VocabTables(vocab.token_bytes)
    return got

"""JSON string literals as byte-level IR: the character model, escapes and length bounds.

Two spellings of a string value are used:

* the **general** spelling (strings with no other constraint): any character may be written raw (except
  ``"``, ``\\`` and control characters) or as any JSON escape, including ``\\uXXXX`` and UTF-16
  surrogate pairs for characters beyond the BMP (a pair counts as ONE character, as it decodes to one
  code point; lone surrogates are rejected because they are not Unicode scalar values);
* the **canonical** spelling (keys, ``pattern``, ``format``, ``const``/``enum``, strings with
  ``minLength``/``maxLength``): what
  ``json.dumps(value, ensure_ascii=False)`` writes -- raw characters, ``\\"``, ``\\\\``, ``\\b \\f
  \\n \\r \\t`` and ``\\u00xx`` (lower-case hex) for the other control characters.

Every language here accepts the canonical spelling of each value it accepts, so two string languages
share a value exactly when they share a spelling (this keeps ``oneOf`` disjointness checks sound).
``pattern`` is matched on the decoded value: the pattern's IR (over decoded characters) is rewritten
character by character into canonical spellings (:func:`encode_decoded`).
"""
from __future__ import annotations

import functools
import json
import re
from operator import is_ as _is
from typing import Optional

from formwork.grammar.ir import (EMPTY, NOTHING, Alt, And, ByteSet, Bytes, Empty, Node, Not, Nothing, Repeat,
                                 Seq, alt, lit, map_children, repeat, seq)
from formwork.grammar.ir_chars import chars
from formwork.grammar.ir_untrack import untracked_ir
from formwork.grammar.lexemes import lexeme

QUOTE = lit('"')

# Characters that may appear raw inside a JSON string: everything but '"', '\\' and C0 controls.
RAW_CHAR = chars([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)])


def _hex_class(lo: int, hi: int) -> Node:
    """One hex digit with value in [lo, hi], either case."""
    ranges = []
    for v in range(lo, hi + 1):
        ranges.append(ord("0123456789abcdef"[v]))
        if v >= 10:
            ranges.append(ord("ABCDEF"[v - 10]))
    return ByteSet(tuple((b, b) for b in ranges))


_ANY_HEX = _hex_class(0, 15)
_NON_SURROGATE_U = seq(lit("\\u"), alt(seq(alt(_hex_class(0, 12), _hex_class(14, 15)),
                                           _ANY_HEX, _ANY_HEX, _ANY_HEX),
                                       seq(_hex_class(13, 13), _hex_class(0, 7), _ANY_HEX, _ANY_HEX)))
_HIGH_SURROGATE_U = seq(lit("\\u"), _hex_class(13, 13), _hex_class(8, 11), _ANY_HEX, _ANY_HEX)
_LOW_SURROGATE_U = seq(lit("\\u"), _hex_class(13, 13), _hex_class(12, 15), _ANY_HEX, _ANY_HEX)
_SHORT_ESCAPE = seq(lit("\\"), ByteSet(tuple((ord(c), ord(c)) for c in '"\\/bfnrt')))

#: One character of a JSON string in the general spelling (one code point of the value).
GENERAL_CHAR = alt(RAW_CHAR, _SHORT_ESCAPE, _NON_SURROGATE_U, seq(_HIGH_SURROGATE_U, _LOW_SURROGATE_U))


def canonical_ascii(byte: int) -> str:
    """The canonical spelling inside a JSON string of the ASCII character `byte`."""
    return json.dumps(chr(byte), ensure_ascii=False)[1:-1]


def _byteset(chars_: str) -> ByteSet:
    return ByteSet(tuple((ord(c), ord(c)) for c in chars_))


#: The canonical escapes: ``\"``, ``\\``, the short forms ``\b \f \n \r \t`` and ``\u00xx``
#: (lower-case hex) for the other control characters (factored: few NFA states).
CANONICAL_ESCAPE = seq(lit("\\"), alt(
    _byteset('"\\bfnrt'),
    seq(lit("u00"), alt(seq(lit("0"), _byteset("01234567bef")), seq(lit("1"), _byteset("0123456789abcdef"))))))

#: One character of a JSON string in the canonical spelling: raw or a canonical escape.
CANONICAL_CHAR = alt(RAW_CHAR, CANONICAL_ESCAPE)


def string_content(min_length: int = 0, max_length: Optional[int] = None,
                   canonical: bool = False) -> Node:
    """The text between the quotes of a string whose value has min..max code points: a
    repetition even for exactly one character (which `repeat` would simplify to the character),
    since the lowering marks it as a lexeme.  Any canonical content is `ANY_CONTENT` itself:
    the tables that hold it (lexemes, automata) then find it by identity, without comparing an
    equal copy node by node."""
    if canonical and min_length == 0 and max_length is None:
        return ANY_CONTENT
    char = CANONICAL_CHAR if canonical else GENERAL_CHAR
    return Repeat(char, 1, 1) if (min_length, max_length) == (1, 1) else repeat(char, min_length, max_length)


def quoted(content: Node) -> Node:
    return seq(QUOTE, content, QUOTE)


def literal_content(value: str) -> Node:
    """The canonical spelling of `value` between the quotes."""
    if _ESCAPED_CHAR.search(value) is None:  # json.dumps would write it as it is
        return lit(value)
    return lit(json.dumps(value, ensure_ascii=False)[1:-1])


#: The characters ``json.dumps(ensure_ascii=False)`` escapes.
_ESCAPED_CHAR = re.compile(r'[\x00-\x1f"\\]')


#: Raw ASCII characters of a canonical spelling, as byte ranges (no ``"``, ``\`` or controls).
_RAW_ASCII = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7F))
_NON_ASCII = chars([(0x80, 0x10FFFF)])
ANY_CONTENT = lexeme(repeat(CANONICAL_CHAR, 0, None), open_ended=True, pinned=True)


def _raw_ascii_except(excluded: frozenset[int]) -> tuple[tuple[int, int], ...]:
    """The raw ASCII characters other than the bytes `excluded`, as sorted, merged ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in _RAW_ASCII:
        for b in sorted(x for x in excluded if lo <= x <= hi):
            if lo < b:
                out.append((lo, b - 1))
            lo = b + 1
        if lo <= hi:
            out.append((lo, hi))
    return tuple(out)


#: Names of printable ASCII without ``"`` or ``\\`` (each character is: so one match of the names
#: joined checks them all), which `canonical_content_except` spells with a trie.
_PLAIN_NAMES = re.compile(r'[\x20\x21\x23-\x5b\x5d-\x7e]*')

#: A canonical character no name spells (names here are printable ASCII without escapes).
_NOT_IN_NAMES = alt(_NON_ASCII, CANONICAL_ESCAPE)


@functools.lru_cache(maxsize=4096)
def _leave_ascii(continuations: frozenset[int]) -> Node:
    """One raw ASCII character that leaves a trie of names where `continuations` are the next
    bytes of names."""
    raw = _raw_ascii_except(continuations)
    return ByteSet(raw) if raw else NOTHING


def canonical_content_except(names: list[str]) -> Node:
    """Canonical string contents spelling none of `names`.

    Names of printable ASCII without ``"`` or ``\\`` (the usual case) get a trie walk with no
    complement: a proper prefix of the names; or a prefix and one character that leaves the trie
    (a raw ASCII byte no name continues with there, or any character no name has), then any
    contents.  The characters no name has and the "any contents" each occur once, after the
    whole trie: a copy per trie node would multiply the automaton states a mask walk builds.
    The whole key is an open-ended lexeme, and so are the contents after it (see
    `formwork.grammar.lexemes`).  Other names fall back to an
    intersection with a complement.
    """
    if not _PLAIN_NAMES.fullmatch("".join(names)):
        return And(string_content(canonical=True), Not(alt(*(literal_content(n) for n in names))))
    # open-ended: after any prefix, a character that continues no name leads on to any contents
    return lexeme(_other_keys(tuple(sorted(set(names)))), open_ended=True, twin=ANY_CONTENT)


@functools.lru_cache(maxsize=4096)
def _other_keys(names: tuple[str, ...]) -> Node:
    """The key language of `canonical_content_except` for `names` (sorted, distinct), before it
    is marked as a lexeme.  Built once per process, like the trie it walks, and untracked whole
    (`ir_untrack`: its sub-tries are untracked with it)."""
    prefixes, stopping, leave_ascii = _names_trie(names)
    leaving = alt(leave_ascii, seq(prefixes, _NOT_IN_NAMES))
    return untracked_ir(Repeat(alt(seq(leaving, ANY_CONTENT), stopping), 1, 1))


@functools.lru_cache(maxsize=4096)
def _names_trie(suffixes: tuple[str, ...]) -> tuple[Node, Node, Node]:
    """Three languages over a trie of `suffixes` (sorted, distinct; after the prefix spelled so
    far): every prefix, names included; the proper prefixes that are no name; and a prefix and one
    raw ASCII byte that no name continues with.  Built once per process: property names recur
    across schemas.  The branch of a single name is `_name_chain`'s."""
    groups: dict[str, list[str]] = {}
    for suffix in suffixes:
        if suffix:
            groups.setdefault(suffix[0], []).append(suffix[1:])
    prefixes = [EMPTY]
    stopping = [] if suffixes and not suffixes[0] else [EMPTY]  # "" first: a name ends here
    leave_ascii = [_leave_ascii(frozenset(map(ord, groups)))]
    for c, rest in groups.items():
        below_prefixes, below_stopping, below_leave = \
            _name_chain(rest[0]) if len(rest) == 1 else _names_trie(tuple(rest))
        head = lit(c)
        prefixes.append(seq(head, below_prefixes))
        stopping.append(seq(head, below_stopping))
        leave_ascii.append(seq(head, below_leave))
    return alt(*prefixes), alt(*stopping), alt(*leave_ascii)


@functools.lru_cache(maxsize=16384)
def _name_chain(suffix: str) -> tuple[Node, Node, Node]:
    """`_names_trie((suffix,))`, the trie of one name's rest: a chain, keyed by the string alone
    (the deep end of most names: cheaper to key than a tuple, and shared by every name ending so)."""
    if not suffix:
        return EMPTY, NOTHING, _leave_ascii(frozenset())
    below_prefixes, below_stopping, below_leave = _name_chain(suffix[1:])
    c = suffix[0]
    head = lit(c)
    return (alt(EMPTY, seq(head, below_prefixes)), alt(EMPTY, seq(head, below_stopping)),
            alt(_leave_ascii(frozenset((ord(c),))), seq(head, below_leave)))


#: The ASCII characters a canonical spelling escapes, and their escapes.
_MUST_ESCAPE = (*range(0x20), 0x22, 0x5C)
_ESCAPE_NODES = {b: lit(canonical_ascii(b)) for b in _MUST_ESCAPE}
_ESCAPE_BYTES = {b: canonical_ascii(b).encode("ascii") for b in _MUST_ESCAPE}
_NEEDS_ESCAPE = re.compile(rb'[\x00-\x1f"\\]')


def _spelled_raw(node: ByteSet) -> bool:
    """Whether every byte of `node` is written raw (no control, '"' or '\\'): the class is its
    own spelling (the usual one: the bytes of multi-byte characters, most ASCII classes)."""
    for lo, hi in node.ranges:
        if lo < 0x20 or lo <= 0x22 <= hi or lo <= 0x5C <= hi:
            return False
    return True


def _encode_byteset(node: ByteSet) -> Node:
    """Rewrite the ASCII members of a decoded-character byte class into canonical spellings.

    Non-ASCII bytes are parts of multi-byte UTF-8 characters and are written raw.
    """
    if _spelled_raw(node):
        return node
    raw: list[tuple[int, int]] = []
    escaped: list[Node] = []
    for lo, hi in node.ranges:
        escaped.extend(_ESCAPE_NODES[b] for b in _MUST_ESCAPE if lo <= b <= hi)
        start = max(lo, 0x20)  # the rest is raw, but for '"' and '\\'
        for cut in (0x22, 0x5C):
            if start <= cut <= hi:
                if start < cut:
                    raw.append((start, cut - 1))
                start = cut + 1
        if start <= hi:
            raw.append((start, hi))
    parts: list[Node] = [ByteSet(tuple(raw))] if raw else []
    return alt(*parts, *escaped)


def _encode_bytes(node: Bytes) -> Bytes:
    """The canonical spelling of a literal of decoded text (escaping bytes only ever ASCII)."""
    if _NEEDS_ESCAPE.search(node.value) is None:
        return node
    return Bytes(_NEEDS_ESCAPE.sub(lambda m: _ESCAPE_BYTES[m.group()[0]], node.value))


def encode_decoded(node: Node) -> Node:
    """Map a language of decoded string values to the language of their canonical spellings.

    Works on the IR produced by the regex parser (or any IR over UTF-8 text): each ASCII byte is a
    whole character, so rewriting ASCII bytes (``"``, ``\\``, controls) into their escapes is exact.
    """
    return _Encoder().go(node)


class _Encoder:
    """`encode_decoded` with a memo per call (a class rather than a recursive closure, which
    is a reference cycle left for the garbage collector)."""

    def __init__(self) -> None:
        self.memo: dict[Node, Node] = {}

    def go(self, n: Node) -> Node:
        if isinstance(n, ByteSet) and _spelled_raw(n):
            return n  # the usual leaf, looked up in no memo
        if isinstance(n, Seq) and all(isinstance(x, ByteSet) and _spelled_raw(x) for x in n.items):
            return n  # a multi-byte character's bytes: no memo either
        got = self.memo.get(n)
        if got is not None:
            return got
        if isinstance(n, ByteSet):
            out = _encode_byteset(n)
        elif isinstance(n, Bytes):
            out = _encode_bytes(n)
        elif isinstance(n, Not):
            # complement of the decoded language, then re-encoded: canonical spellings of all
            # strings minus the encoded language
            out = And(string_content(canonical=True), Not(self.go(n.a)))
        elif isinstance(n, (Seq, Alt)):
            items = [self.go(x) for x in n.items]
            # a node whose parts spell themselves is its own spelling (built by `seq`/`alt`, it
            # is in the normal form they would give it again)
            out = n if all(map(_is, items, n.items)) else (seq if isinstance(n, Seq) else alt)(*items)
        elif isinstance(n, Repeat):
            item = self.go(n.item)
            out = n if item is n.item else repeat(item, n.min, n.max)
        elif isinstance(n, (And, Empty, Nothing)):
            out = map_children(n, self.go)
        else:
            raise TypeError(f"cannot encode IR node {type(n).__name__}")
        self.memo[n] = out
        return out

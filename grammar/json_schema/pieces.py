"""String languages built once per process and spliced into every schema that uses them.

`format` languages and regex `pattern`s recur across schemas; their IR (and its canonical
encoding, see `strings.encode_decoded`) is kept here, so a later schema reuses the same nodes and
the automaton builder's memo finds them by identity.  Only these pieces are kept, never a
schema's whole IR.
"""
from __future__ import annotations

import functools

from formwork.grammar.ir import Node
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema import formats
from formwork.grammar.json_schema.strings import encode_decoded
from formwork.grammar.json_schema.values import freeze

_FORMATS: dict[str, Node] = {}


def encoded_format(name: str) -> Node:
    """The canonical spellings of a supported format's strings, frozen (compiled once and
    spliced in by the automaton builder)."""
    node = _FORMATS.get(name)
    if node is None:
        node = _FORMATS[name] = freeze(encode_decoded(formats.format_node(name)))
    return node


@functools.lru_cache(maxsize=1024)
def pattern_language(pattern: str) -> Node:
    """The decoded-value language of a regex with search semantics; an unsupported regex raises
    `GrammarError` (each time: failures are not kept)."""
    return regex(pattern, search=True)


@functools.lru_cache(maxsize=1024)
def encoded_pattern(pattern: str) -> Node:
    """The canonical spellings of the strings `pattern` matches."""
    return encode_decoded(pattern_language(pattern))

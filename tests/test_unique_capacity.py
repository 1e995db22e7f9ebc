"""Unique arrays of bounded items (`grammar/unique_capacity.py`): a node whose item can still take
`capacity` distinct values counts as good while at most `capacity // 2` items were seen.  Checked
with small capacities, where the counts matter: every claim of a good node holds against an
exhaustive search for a completion with every item new, and the masks equal `accept_token` on
every token along random walks that never dead-end and finish valid documents."""
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from mask_probe import compile_unless_empty, mask_of  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402
from test_json_unique_unbounded import STOP, VOCAB  # noqa: E402

from formwork.grammar import unique_regions, unique_search  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.unique_capacity import multiplicities  # noqa: E402
from formwork.grammar.unique_prepare import ROOT_STATE, prepare_regions, region_roots  # noqa: E402
from formwork.grammar.unique_regions import _EXIT, Regions
from formwork.grammar.unique_search import follow as _follow, search as _search  # noqa: E402

#: bounded items that the matcher compares (no finite-domain automaton: `unique_items`)
BOUNDED = st.sampled_from([
    {"type": "string", "pattern": "^[ab]{0,2}$"},
    {"type": "string", "pattern": "^[a-c]?$"},
    {"type": "string", "maxLength": 1},
    {"type": "integer", "minimum": 0, "maximum": 100},
    {"type": "integer", "minimum": -70, "maximum": 5},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": ["string", "integer"], "pattern": "^a?$", "minimum": 0, "maximum": 80},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[ab]$"}, "b": {"type": "boolean"}},
     "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "pattern": "^[ab]$"}, "maxItems": 2},
])
#: (unique arrays of unique arrays: `test_unique_nested`)
#: bytes a region walk prefers, so that items are short and repeat
_PREFERRED = b'ab01"],[{}:-tfx'


@st.composite
def arrays(draw):
    array = {"type": "array", "items": draw(BOUNDED), "uniqueItems": True}
    if draw(st.booleans()):
        array["minItems"] = draw(st.integers(0, 5))
    if draw(st.booleans()):
        array["maxItems"] = draw(st.integers(2, 6))
    return array


def _compiled(schema, vocab, capacity):
    grammar = compile_unless_empty(schema, vocab)
    if grammar is None:  # the language may be empty (minItems over a small domain)
        return None
    assert grammar.unique is not None, schema  # compared by the matcher
    grammar.unique.regions = Regions(grammar.unique.moves, capacity=capacity)
    return grammar


_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(arrays(), st.integers(2, 12), st.data())
def test_every_good_node_has_a_completion_with_every_item_new(schema, capacity, data):
    grammar = _compiled(schema, byte_vocab(), capacity)
    if grammar is None:
        return
    steps = unique_search.SEARCH_STEPS
    unique_search.SEARCH_STEPS = 1_000_000  # exhaustive over these small regions
    try:
        _walk_checking_good_nodes(grammar.unique.regions, _top_root(grammar), schema, capacity, data)
    finally:
        unique_search.SEARCH_STEPS = steps


def _top_root(grammar):
    """The node right after the document's own `[` (a unique array)."""
    dfa = grammar.unique.moves.dfa
    class_of_byte = dfa.byte_classes()[0]
    tagged = int(dfa.class_row(START)[class_of_byte[0xFC]])
    return int(dfa.class_row(tagged)[class_of_byte[0x5B]]), ROOT_STATE


def _walk_checking_good_nodes(regions, root, schema, capacity, data):
    """A random walk over the region from `root`; at each node `Regions.good` claims a new
    completion, the search finds one."""
    node, text, keys = root, None, frozenset()
    for _ in range(80):
        if regions.good(node, text is None) and len(keys) <= regions.items_limit:
            assert _search(regions, node, text, tuple(keys)), (schema, capacity, node, text, sorted(keys))
        steps = []
        for b, nxt, kinds, _ in regions.edges(node):
            got = _follow(text, keys, b, kinds)
            if got is not None:
                steps.append((b in _PREFERRED, nxt, got))
        if not steps:
            break
        preferred = [s for s in steps if s[0]] or steps
        _, node, (text, keys, _) = preferred[data.draw(st.integers(0, len(preferred) - 1))]
        if node is _EXIT:
            break



@_SETTINGS
@given(arrays(), st.integers(2, 12), st.data())
def test_masks_equal_accept_token_and_walks_finish_valid_documents(schema, capacity, data):
    grammar = _compiled(schema, VOCAB, capacity)
    if grammar is None:
        return
    matcher = grammar.matcher(max_step_seconds=None)
    text = b""
    for _ in range(40):
        mask = mask_of(matcher, VOCAB.vocab_size)
        accepted = np.zeros(VOCAB.vocab_size, dtype=bool)
        for token in range(VOCAB.vocab_size):
            if matcher.accept_token(token):
                accepted[token] = True
                matcher.rollback(1)
        assert (mask == accepted).all(), (schema, capacity, text)
        tokens = [int(t) for t in np.flatnonzero(accepted) if t != STOP]
        # an empty mask at the start: no array of distinct items is long enough (minItems)
        assert tokens or matcher.can_terminate() or not text, f"dead end after {text!r}"
        if not tokens or (accepted[STOP] and data.draw(st.integers(0, 4)) == 0):
            break
        preferred = [t for t in tokens if all(b in _PREFERRED for b in VOCAB.token_bytes[t])] or tokens
        token = preferred[data.draw(st.integers(0, len(preferred) - 1))]
        assert matcher.accept_token(token)
        text += VOCAB.token_bytes[token]
    if matcher.can_terminate():
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)), (schema, text)


def test_a_bounded_string_item_is_good_by_its_count_of_values():
    """maxLength 1 over bytes: no inexhaustible cycle, but about 1.1 million values (one code
    point), more than a capacity of 2**16 asks for, so a new item is known possible without a
    search; with a capacity of 2**24 (the default) it is not."""
    schema = {"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True}
    for capacity, good in ((1 << 16, True), (1 << 24, False)):
        grammar = _compiled(schema, byte_vocab(), capacity)
        regions = grammar.unique.regions
        node = _top_root(grammar)
        for b in b'"a",':
            node = next(nxt for byte, nxt, _, _ in regions.edges(node) if byte == b)
        assert regions.good(node, True) is good
        assert not regions._unbounded[(node, True)]


def test_regular_schemas_analyse_their_regions_at_compile_time():
    schema = {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True},
        "b": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
        "additionalProperties": False}
    grammar = compile_json_schema(schema, byte_vocab(), compiler=GrammarCompiler(byte_vocab()))
    roots = region_roots(grammar.unique.moves.dfa)
    assert len(roots) == 2
    assert all((t, ROOT_STATE) in grammar.unique.regions._canonical for t in roots)  # analysed
    assert region_roots(grammar.unique.moves.dfa, max_states=3) is None
    assert prepare_regions(grammar.unique, max_states=3) == 0


def test_multiplicities_count_each_byte_once_per_class():
    classes = np.array([b % 3 for b in range(256)])
    mult = multiplicities(classes)
    keys = {(b % 3, bytes(unique_regions.BYTE_CLASS)[b]): mult[b] for b in range(256) if b != 0xFC}
    assert sum(keys.values()) == 255


def _good_inside(schema, text, capacity):
    """`Regions.good` at the node `text` (after the array's `[`) leads to, an item in progress."""
    grammar = _compiled(schema, byte_vocab(), capacity)
    regions = grammar.unique.regions
    node = _top_root(grammar)
    for b in text:
        node = next(nxt for byte, nxt, _, _ in regions.edges(node) if byte == b)
    return regions.good(node, False)


def test_counts_leave_out_second_spellings():
    """The values an item in progress can still take, counted exactly where only one spelling
    each is counted: escapes ("\\u0061" is "a"), member order and -0 are left out."""
    strings = {"type": "array", "items": {"type": "string", "pattern": "^[ab]?$"}, "uniqueItems": True}
    assert _good_inside(strings, b'"', 3) and not _good_inside(strings, b'"', 4)  # "", "a", "b"
    one = {"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True}
    code_points = 0x110000 - 0x800 - 0x20 - 2  # no surrogate, control, quote or backslash
    assert _good_inside(one, b'"', code_points + 1) and not _good_inside(one, b'"', code_points + 2)
    negative = {"type": "array", "items": {"type": "integer", "minimum": -70, "maximum": 5}, "uniqueItems": True}
    assert _good_inside(negative, b'-', 70) and not _good_inside(negative, b'-', 71)  # -1 .. -70, not -0
    members = {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}},
        "additionalProperties": False}}
    # {} and one member of four values: a second member may come in either order, so is not counted
    assert _good_inside(members, b'{', 5) and not _good_inside(members, b'{', 6)

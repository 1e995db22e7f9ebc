"""Token-level soundness of JSON Schema grammars over the real 129k DeepSeek vocabulary.

Hypothesis walks pick any token the mask allows: `accept_token` must agree with the mask (for the
chosen token and for a sample of masked-out ones), the walk must always be completable, and the
finished document (the walk's text, completed by the shortest continuation when the walk is cut
short) must be JSON that `jsonschema` validates against the schema.
"""
import collections
from decimal import Decimal, InvalidOperation
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import unpack_mask  # noqa: E402

from formwork.grammar import allocate_token_bitmask  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.dfa import DEAD  # noqa: E402
from formwork.grammar.json_schema import IndentSpec, compile_json_schema  # noqa: E402

SCHEMAS = {
    "user": ({"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 99999},
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "email": {"type": "string", "format": "email"},
        "active": {"type": "boolean"}}, "required": ["id", "name"],
        "additionalProperties": False}, {}),
    "enum_and_const": ({"type": "object", "properties": {
        "status": {"enum": ["open", "closed", None, 3]}, "v": {"const": {"a": [1, 2]}}},
        "required": ["status", "v"]}, {}),
    "numbers": ({"type": "array", "items": {"type": "number", "exclusiveMinimum": -2.5,
                                            "maximum": 10.25}, "minItems": 1, "maxItems": 4},
                {"whitespace": "compact"}),
    "multiple_of": ({"type": "integer", "multipleOf": 15, "minimum": -1000}, {}),
    "pattern": ({"type": "string", "pattern": "^[a-z]{2}-[0-9]+$", "maxLength": 8}, {}),
    "formats": ({"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"},
        "id": {"type": "string", "format": "uuid"}}, "required": ["when", "id"],
        "additionalProperties": False}, {"whitespace": "free", "max_whitespace": 2}),
    "one_of": ({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]}, {}),
    "tuple": ({"type": "array", "prefixItems": [{"type": "string", "maxLength": 3},
                                                {"type": "boolean"}],
               "items": False, "minItems": 1}, {"whitespace": IndentSpec(2)}),
    "pattern_props": ({"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
                       "properties": {"kind": {"enum": ["a", "b"]}},
                       "additionalProperties": False, "maxProperties": 3}, {}),
    "any_of_free_object": ({"anyOf": [{"type": "null"}, {"type": "object",
                                                         "required": ["k"]}]}, {"max_nesting_depth": 1}),
}
MAX_STEPS = 24


@pytest.fixture(scope="module")
def grammars(vocab):
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    return {name: compile_json_schema(schema, vocab, compiler=compiler, **opts)
            for name, (schema, opts) in SCHEMAS.items()}


def shortest_completion(dfa, state: int) -> bytes:
    """The shortest byte string leading from `state` to an accepting state (BFS)."""
    parent = {state: None}
    queue = collections.deque([state])
    while queue:
        q = queue.popleft()
        if dfa.accepting[q]:
            out = bytearray()
            while parent[q] is not None:
                q, b = parent[q]
                out.append(b)
            return bytes(reversed(out))
        row = dfa.table[q]
        for b in range(256):
            nxt = int(row[b])
            if nxt != DEAD and nxt not in parent:
                parent[nxt] = (q, b)
                queue.append(nxt)
    raise AssertionError("no completion: the walk left the language")


def exact_number(text: str) -> Decimal | float:
    """A Decimal, or a float (0 or inf) for exponents beyond Decimal's range ("-0E1202000000020201120"
    is valid JSON)."""
    try:
        return Decimal(text)
    except InvalidOperation:
        return float(text)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_walks_stay_valid(name, data, vocab, grammars):
    grammar = grammars[name]
    schema = SCHEMAS[name][0]
    matcher = grammar.matcher()
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    text = b""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    for _ in range(MAX_STEPS):
        matcher.fill_next_token_bitmask(bitmask, 0)
        allowed = np.flatnonzero(unpack_mask(bitmask[0], vocab.vocab_size))
        assert allowed.size, "a live state must allow some token"
        stops = [t for t in allowed if t in vocab.stop_token_ids]
        if stops and data.draw(st.booleans()):
            assert matcher.accept_token(int(stops[0]))
            assert matcher.is_terminated()
            break
        token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        # masked-out tokens are refused and leave the state alone
        for other in rng.integers(0, vocab.vocab_size, 8):
            if not bitmask[0, other // 32] >> (other % 32) & 1:
                assert not matcher.accept_token(int(other))
        assert matcher.accept_token(token)
        if token in vocab.stop_token_ids:
            break
        text += vocab.token_bytes[token]
    if not matcher.is_terminated():
        state = grammar.dfa.walk(1, text)
        assert state != DEAD
        text += shortest_completion(grammar.dfa, state)
    # exact decimals: "2.0000000000000001" is not the integer 2, whatever a float says
    document = json.loads(text.decode("utf-8"), parse_float=exact_number)
    jsonschema.validate(document, schema)

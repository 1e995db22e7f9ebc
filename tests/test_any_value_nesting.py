"""Open values (``{}``, ``true``, untyped members, extra members, open items) inside constrained
schemas, against `jsonschema` on random schemas and random, deeply nested documents: the "auto"
default accepts exactly the valid documents whose open values nest at most
`BOUNDED_NESTING_DEPTH` containers deep (`SHALLOW_NESTING_DEPTH` where they lie inside a
complement), ``max_nesting_depth=None`` exactly the valid ones, and documents generated token by
token from the masks are always valid."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.options import BOUNDED_NESTING_DEPTH, SHALLOW_NESTING_DEPTH  # noqa: E402

OPEN = [{}, True, {"description": "anything"}]
CLOSED = [{"type": "integer"}, {"type": "string", "maxLength": 3}, {"type": "boolean"}]
NAMES = ["a", "b", "c"]
EXTRA = "zz"


@st.composite
def open_schemas(draw) -> dict:
    """An object schema whose members are open, typed, or arrays of open items, with extra
    members closed, open or left to the default (open)."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    properties = {}
    for name in names:
        kind = draw(st.sampled_from(["open", "closed", "items"]))
        if kind == "items":
            properties[name] = {"type": "array", "items": draw(st.sampled_from(OPEN))}
        else:
            properties[name] = draw(st.sampled_from(OPEN if kind == "open" else CLOSED))
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "required": draw(st.lists(st.sampled_from(names), unique=True))}
    extra = draw(st.sampled_from(["absent", False, True, {}]))
    if extra != "absent":
        schema["additionalProperties"] = extra
    return schema


def nested(depth: int, leaf: Any) -> Any:
    """`leaf` inside `depth` containers, alternating arrays and objects."""
    for i in range(depth):
        leaf = [leaf, i] if i % 2 else {"k": leaf}
    return leaf


scalars = st.one_of(st.none(), st.booleans(), st.integers(-99, 99), st.text("xy\"\\é", max_size=3))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text("pq", max_size=2), inner, max_size=3)), max_leaves=8)
deep_values = st.one_of(json_values, st.builds(nested, st.integers(0, 12), json_values))


@st.composite
def documents(draw) -> dict:
    """An object with some of the declared members and maybe an extra one, values of any shape."""
    keys = draw(st.lists(st.sampled_from(NAMES + [EXTRA]), max_size=4, unique=True))
    return {k: draw(st.one_of(deep_values, st.lists(deep_values, max_size=2))) for k in keys}


def container_depth(value: Any) -> int:
    """Nesting of containers: 0 for a scalar, 1 for ``[1]``, 2 for ``[[1]]``."""
    if isinstance(value, dict):
        return 1 + max(map(container_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(container_depth, value), default=0)
    return 0


def open_values(schema: dict, document: dict) -> list[Any]:
    """The values of `document` that lie at open positions of `schema`."""
    out = []
    properties = schema["properties"]
    for key, value in document.items():
        sub = properties.get(key, schema.get("additionalProperties", True))
        if sub is False:
            continue
        if isinstance(sub, dict) and sub.get("type") == "array":
            out += value if isinstance(value, list) else []
        elif sub in OPEN:
            out.append(value)
    return out


def matcher_accepts(grammar, schema: dict, document: dict) -> bool:
    """Whether the matcher accepts `document` spelled as the grammar orders members (declared
    properties in schema order, then the others), with non-ASCII text escaped or not."""
    order = {name: i for i, name in enumerate(schema["properties"])}
    members = sorted(document.items(), key=lambda kv: order.get(kv[0], len(order)))
    for ascii_ in (False, True):
        m = grammar.matcher()
        if m.accept_string(json.dumps(dict(members), ensure_ascii=ascii_)) and m.can_terminate():
            return True
    return False


def is_valid(schema: dict, document: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(document)


COMPILER = GrammarCompiler(byte_vocab(), cache_enabled=False)
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(open_schemas(), st.lists(documents(), min_size=1, max_size=4))
def test_auto_bound_is_exact_up_to_the_bound(schema, docs):
    grammar = compile_json_schema(schema, byte_vocab(), compiler=COMPILER)
    for doc in docs:
        shallow = all(container_depth(v) <= BOUNDED_NESTING_DEPTH for v in open_values(schema, doc))
        assert matcher_accepts(grammar, schema, doc) == (is_valid(schema, doc) and shallow), (schema, doc)


@SETTINGS
@given(open_schemas(), st.lists(documents(), min_size=1, max_size=4))
def test_unbounded_nesting_is_exact(schema, docs):
    grammar = compile_json_schema(schema, byte_vocab(), compiler=COMPILER, max_nesting_depth=None)
    for doc in docs:
        assert matcher_accepts(grammar, schema, doc) == is_valid(schema, doc), (schema, doc)


def test_auto_bound_reaches_its_depth():
    """The fixed points of the property: depth `BOUNDED_NESTING_DEPTH` accepted, one more not."""
    schema = {"type": "object", "properties": {"a": {}, "n": {"type": "integer"}}, "required": ["n"]}
    grammar = compile_json_schema(schema, byte_vocab(), compiler=COMPILER)
    assert matcher_accepts(grammar, schema, {"a": nested(BOUNDED_NESTING_DEPTH, 1), "n": 1})
    assert not matcher_accepts(grammar, schema, {"a": nested(BOUNDED_NESTING_DEPTH + 1, 1), "n": 1})
    assert not matcher_accepts(grammar, schema, {"a": nested(3, 1)})
    assert not matcher_accepts(grammar, schema, {"n": 1.5})


def test_open_values_in_a_complement_keep_the_shallow_bound():
    """Open values inside ``not`` are built as complete automata: "auto" lowers the schema with
    `SHALLOW_NESTING_DEPTH` then (the same bound inside and outside the complement keeps it exact)."""
    schema = {"type": "array", "items": {}, "not": {"items": {"const": [1, "a"]}}}
    grammar = compile_json_schema(schema, byte_vocab(), compiler=COMPILER)
    shallow = nested(SHALLOW_NESTING_DEPTH - 1, 1)
    for doc in ([[1, "a"], shallow], [[1, "a"]], [], [shallow, [1, "a"]], [nested(SHALLOW_NESTING_DEPTH, 1)]):
        depth_ok = all(container_depth(v) <= SHALLOW_NESTING_DEPTH for v in doc)
        m = grammar.matcher()
        got = m.accept_string(json.dumps(doc)) and m.can_terminate()
        assert got == (is_valid(schema, doc) and depth_ok), doc
    deeper = compile_json_schema(schema, byte_vocab(), compiler=COMPILER, max_nesting_depth=3)
    m = deeper.matcher()
    assert m.accept_string(json.dumps([nested(3, 1)])) and m.can_terminate()


_PREFERRED = b'"]},:0123456789[{ntfrue'


def generate(grammar, rng: random.Random, max_steps: int = 400) -> bytes | None:
    """A document sampled token by token from the masks (biased to short values), or None if it
    did not end within `max_steps`."""
    m = grammar.matcher()
    stop = byte_vocab().stop_token_ids[0]
    out = bytearray()
    for _ in range(max_steps):
        words = m.next_token_mask()
        allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[:stop + 1])
        assert len(allowed), bytes(out)
        if stop in allowed and (rng.random() < 0.5 or len(allowed) == 1):
            return bytes(out)
        choices = [int(t) for t in allowed if t != stop]
        preferred = [t for t in choices if t in _PREFERRED]
        token = rng.choice(preferred if preferred and rng.random() < 0.9 else choices)
        assert m.accept_token(token)
        out.append(token)
    return None


@SETTINGS
@given(open_schemas(), st.integers(0, 2 ** 32 - 1), st.sampled_from(["auto", None]))
def test_documents_generated_from_masks_are_valid(schema, seed, nesting):
    grammar = compile_json_schema(schema, byte_vocab(), compiler=COMPILER, max_nesting_depth=nesting)
    rng = random.Random(seed)
    texts = [text for text in (generate(grammar, rng) for _ in range(3)) if text is not None]
    assert texts, "no document ended within the step limit"
    for text in texts:
        assert is_valid(schema, json.loads(text)), (schema, text)

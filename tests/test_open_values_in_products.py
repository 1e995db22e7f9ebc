"""The lowering's recorded products decide the nesting bound as the walk of the whole IR did.

Under ``max_nesting_depth="auto"`` a schema whose open values lie inside an intersection or a
complement is lowered again with the shallow bound.  `_open_value_in_product` searches only the
products the lowering recorded (`Lowerer.value_product`) and confirms a hit with the walk
(`AnyValue.in_product`); a product site that forgot to record would make it miss what the walk
finds.  Checked on the 139 benchmark schemas, Iglu schemas with open values under
allOf/anyOf/oneOf, hand-made product cases and random schemas.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formwork.grammar.errors import GrammarError
from formwork.grammar.json_schema import _load, _open_value_in_product
from formwork.grammar.json_schema.lowering import Lowerer
from formwork.grammar.json_schema.shared_leaves import SHARED_LEAVES
from formwork.grammar.json_schema.options import (
    SHALLOW_NESTING_DEPTH, JsonSchemaOptions, resolve_nesting_depth,
)

REPO = Path(__file__).resolve().parents[1]
BENCHMARK_SCHEMAS = sorted((REPO / "benchmarks" / "schemas").glob("*.json"))
IGLU = REPO / "tests" / "data" / "iglu-central" / "schemas"
#: Iglu schemas whose open values lie under allOf, anyOf or oneOf
IGLU_COMBINED = [
    "com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0",
    "com.snowplowanalytics.snowplow/pii_transformation/jsonschema/1-0-0",
    "com.snowplowanalytics.snowplow.enrichments/sql_query_enrichment_config/jsonschema/1-0-0",
    "com.snowplowanalytics.snowplow.storage/postgresql_config/jsonschema/2-0-0",
]
#: open values inside products (contains' element classes, a complement of items, the scalar
#: overlap a oneOf branch excludes), and whether the lowered IR keeps the product (an array
#: language that turns out empty drops the element classes it built)
IN_PRODUCTS = [
    ({"type": "array", "items": {}, "not": {"items": {"const": [1, "a"]}}}, True),
    ({"type": "array", "contains": {"type": "object", "properties": {"a": {}}}}, True),
    ({"oneOf": [{"type": ["object", "string"]}, {"type": "string", "maxLength": 3}]}, True),
    ({"type": "object", "properties": {"a": {"oneOf": [{}, {"type": "string", "maxLength": 3}]}}},
     True),
    ({"type": "array", "items": {"type": "object"}, "contains": False}, False),
    ({"type": "array", "items": {}, "contains": {"const": 1}, "minContains": 3, "maxContains": 1},
     False),
]


def decisions(schema: Any) -> tuple[bool, bool] | None:
    """(the recorded products' answer, the walk's) for `schema` under "auto", or None where the
    bound is not above the shallow one, no open value was asked for, or the schema is refused."""
    doc = _load(schema, None, None)
    options = JsonSchemaOptions(max_nesting_depth=resolve_nesting_depth("auto", doc.schema,
                                                                        "default"))
    levels = options.max_nesting_depth
    if levels is None or levels <= SHALLOW_NESTING_DEPTH:
        return None
    # a leaf such as {"type": "object"} lowered earlier in the process (by any test) comes from the
    # shared leaves without asking for its open value again: start from none
    SHARED_LEAVES.clear()
    lowerer = Lowerer(doc, options)
    calls = lowerer.any_value.calls
    try:
        node = lowerer.lower_root()
    except GrammarError:
        return None
    if lowerer.any_value.calls == calls:
        return None
    return _open_value_in_product(lowerer, node, levels), lowerer.any_value.in_product(node, levels)


def test_benchmark_schemas_decide_as_the_walk():
    decided = [decisions(json.loads(p.read_text())["schema"]) for p in BENCHMARK_SCHEMAS]
    checked = [d for d in decided if d is not None]
    assert len(checked) >= 60  # the schemas with open values (64 when written)
    assert all(recorded == walk for recorded, walk in checked)


def test_iglu_schemas_with_combined_open_values_decide_as_the_walk():
    for name in IGLU_COMBINED:
        got = decisions(json.loads((IGLU / name).read_text()))
        assert got is not None, name
        assert got[0] == got[1], name


def test_open_values_in_products_are_found():
    for schema, kept in IN_PRODUCTS:
        assert decisions(schema) == (kept, kept), schema


OPEN = [{}, True, {"type": "object"}, {"type": "array"}, {"description": "anything"}]
CLOSED = [{"type": "integer"}, {"type": "string", "maxLength": 3}, {"const": [1, "a"]},
          {"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False}]


@st.composite
def product_schemas(draw) -> dict:
    """An object whose members are open or closed, some wrapped in contains, not, oneOf or
    allOf."""
    def member(depth: int) -> Any:
        if depth >= 2 or draw(st.booleans()):
            return draw(st.sampled_from(OPEN + CLOSED))
        kind = draw(st.sampled_from(["contains", "not", "items", "oneOf", "allOf", "anyOf"]))
        if kind == "contains":
            return {"type": "array", "items": member(depth + 1), "contains": member(depth + 1)}
        if kind == "not":
            return {"type": "array", "items": member(depth + 1), "not": {"items": member(depth + 1)}}
        if kind == "items":
            return {"type": "array", "items": member(depth + 1)}
        return {kind: [member(depth + 1), member(depth + 1)]}
    names = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
    return {"type": "object", "properties": {n: member(0) for n in names}}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(product_schemas())
def test_random_product_schemas_decide_as_the_walk(schema):
    got = decisions(schema)
    if got is not None:
        assert got[0] == got[1], schema

"""`SchemaRegistry` adds its documents to the meta-schemas' registry crawled once; a document
under a meta-schema's URI replaces that meta-schema, anchors and all."""
from __future__ import annotations

import pytest

from formwork.schemas import SchemaRegistry, UnresolvableRefError
from formwork.schemas.drafts import DRAFT_2020_12_SPEC
from formwork.schemas.refs import RefIndex

META = "https://json-schema.org/draft/2020-12/schema"
DOC = "https://example.com/doc.json"


def test_documents_and_meta_schemas_resolve() -> None:
    registry = SchemaRegistry({DOC: {"$defs": {"x": {"$anchor": "ex", "type": "string"}}}})
    index = RefIndex({"$ref": DOC + "#/$defs/x"}, DRAFT_2020_12_SPEC, registry)
    assert index.resolve(DOC + "#/$defs/x")[0] == {"$anchor": "ex", "type": "string"}
    assert index.resolve(DOC + "#ex")[0]["type"] == "string"
    meta = index.resolve(META)[0]
    assert meta["$dynamicAnchor"] == "meta" and index.resolve(META + "#meta")[0] is meta
    # a second registry does not see the first one's documents
    other = RefIndex({}, DRAFT_2020_12_SPEC, SchemaRegistry({}))
    with pytest.raises(UnresolvableRefError):
        other.resolve(DOC + "#/$defs/x")


def test_a_replaced_meta_schema_keeps_none_of_its_anchors() -> None:
    registry = SchemaRegistry({META: {"type": "string"}})
    index = RefIndex({}, DRAFT_2020_12_SPEC, registry)
    assert index.resolve(META)[0] == {"type": "string"}
    with pytest.raises(UnresolvableRefError):
        index.resolve(META + "#meta")

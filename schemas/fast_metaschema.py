"""A faster, equivalent form of the 2020-12 meta-schema for the common (valid) case.

The official 2020-12 meta-schema is seven vocabulary documents joined by `$ref` and recursing
through `$dynamicRef: "#meta"`; jsonschema resolves those references at every level of the
checked schema, which costs ~4x the validation itself. For the standard dialect, `#meta` always
resolves to the top meta-schema, so the same constraints can be written as one self-contained
document: each vocabulary inlined into the top `allOf`, their `$defs` merged (the names are
distinct), `$dynamicRef: "#meta"` as `$ref: "#"`; and since every part is just `type` plus
`properties` over distinct keywords, the `allOf` collapses into one `properties` (another 2x).
Built at first use from the installed `jsonschema-specifications`; `tests/test_schemas_load.py`
checks it agrees with the official meta-schema. Only validity is decided with it: errors are
reported by the official one.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin

from jsonschema_specifications import REGISTRY as SPECIFICATIONS

TOP = "https://json-schema.org/draft/2020-12/schema"
_DEFS = "/$defs/"
# Keys of a vocabulary document's root that carry no constraint.
_HEADER = frozenset({"$schema", "$id", "$vocabulary", "$dynamicAnchor", "$comment", "title",
                     "$defs"})


class _Inliner:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def document(self, uri: str) -> dict[str, Any]:
        """The document's constraints, with its `$defs` moved to the shared table."""
        contents = SPECIFICATIONS[uri].contents
        for name, definition in contents.get("$defs", {}).items():
            rewritten = self.rewrite(definition, uri)
            if self.defs.setdefault(name, rewritten) != rewritten:
                raise ValueError(f"meta-schema definition {name!r} defined twice differently")
        return {key: self.rewrite(value, uri) for key, value in contents.items()
                if key not in _HEADER}

    def rewrite(self, node: Any, base: str) -> Any:
        if isinstance(node, list):
            return [self.rewrite(value, base) for value in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$dynamicRef" and value == "#meta":
                out["$ref"] = "#"
            elif key == "$ref" and isinstance(value, str):
                out["$ref"] = self.reference(value, base)
            else:
                out[key] = self.rewrite(value, base)
        return out

    def reference(self, ref: str, base: str) -> str:
        uri, fragment = urldefrag(urljoin(base, ref))
        if fragment.startswith(_DEFS) and "/" not in fragment[len(_DEFS):]:
            return "#" + fragment
        if uri == TOP and not fragment:
            return "#"
        raise ValueError(f"unexpected reference {ref!r} in the meta-schema {base}")


@lru_cache(maxsize=1)
def inlined_2020_12_metaschema() -> dict[str, Any]:
    """The 2020-12 meta-schema as one document without `$dynamicRef` or external `$ref`."""
    inliner = _Inliner()
    top = SPECIFICATIONS[TOP].contents
    schema: dict[str, Any] = {}
    for key, value in top.items():
        if key in _HEADER:
            continue
        if key == "allOf":
            schema["allOf"] = [inliner.document(urljoin(TOP, part["$ref"])) for part in value]
        else:
            schema[key] = inliner.rewrite(value, TOP)
    schema["$defs"] = inliner.defs
    return _merge_parts(schema)


def _merge_parts(schema: dict[str, Any]) -> dict[str, Any]:
    """`{type: T, properties: P0, allOf: [{type: T, properties: Pi}...]}` with distinct keys in
    the P's is `{type: T, properties: P0 | P1 | ...}`; anything else is left as it is."""
    parts = [{k: v for k, v in schema.items() if k not in ("allOf", "$defs")},
             *schema.get("allOf", [])]
    if any(set(part) - {"type", "properties"} or part.get("type") != parts[0].get("type")
           for part in parts):
        return schema
    properties: dict[str, Any] = {}
    for part in parts:
        if set(properties) & set(part.get("properties", {})):
            return schema
        properties.update(part.get("properties", {}))
    return {"type": parts[0]["type"], "properties": properties, "$defs": schema["$defs"]}

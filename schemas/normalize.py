"""The normalised form of a schema: what the grammar compiler consumes.

`normalize(...)` returns a `NormalizedSchema`: a self-contained draft 2020-12 schema, equivalent
(for validation) to the input, in which

- every `$ref` is an object `{"$ref": "#/$defs/<name>"}` with no other keys, naming an entry of
  `definitions`: one entry per reference target (local pointer, `$defs`/`definitions`,
  `$anchor`, `$id`-relative or registry document), so no resolver is needed any more; a
  reference to a boolean schema is replaced by the boolean;
- a 2020-12 `$ref` with sibling keywords becomes `allOf: [{"$ref": ...}, ...]` next to them;
  draft-07 siblings of `$ref` (ignored by that draft) are dropped;
- draft-07 `items: [...]` / `additionalItems` become `prefixItems` / `items` (`additionalItems`
  without an array `items` has no effect and is dropped); `dependencies` becomes
  `dependentRequired` / `dependentSchemas`;
- `type` is always a non-empty list in the order null, boolean, object, array, number, integer,
  string, without duplicates, and without "integer" when "number" is present;
- `enum` has no duplicates (JSON equality: 1 == 1.0, true != 1); a one-value `enum` is a
  `const`; `const` and `enum` together keep `const` when the enum contains it, otherwise the
  schema is `false`;
- annotations (title, description, default, examples, ...), `$comment`, `$id`, `$anchor`,
  `$dynamicAnchor`, `$schema`, `$vocabulary`, the original `$defs`/`definitions` and keywords the
  draft does not define are removed;
- boolean schemas stay booleans; unsupported keywords are kept (normalised) so the result stays
  equivalent — `doc.unsupported()` reports them; a `$dynamicRef` whose target is static (see
  `RefIndex.resolve_dynamic`) is a `$ref` like the others.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from formwork.schemas.analysis import Analysis
from formwork.schemas.drafts import DRAFT_2020_12_SPEC, Draft, draft_of
from formwork.schemas.keywords import (ANNOTATION_KEYWORDS, DRAFT_07, DRAFT_KEYWORDS,
                                       SUBSCHEMA_KEYWORDS, Shape)
from formwork.schemas.pointer import split_pointer
from formwork.schemas.refs import Location, RefIndex

DEFS_PREFIX = "#/$defs/"
TYPE_ORDER = ("null", "boolean", "object", "array", "number", "integer", "string")
_DROPPED = ANNOTATION_KEYWORDS | {"$schema", "$id", "$anchor", "$dynamicAnchor", "$defs",
                                  "definitions"}
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class NormalizedSchema:
    """A normalised schema: `root` plus the reference targets it uses, by name."""

    root: Any
    definitions: dict[str, Any] = field(default_factory=dict)

    def target(self, ref: str) -> Any:
        """The definition a normalised `$ref` ("#/$defs/<name>") names."""
        if not ref.startswith(DEFS_PREFIX) or ref[len(DEFS_PREFIX):] not in self.definitions:
            raise KeyError(f"{ref!r} is not a reference of this normalised schema")
        return self.definitions[ref[len(DEFS_PREFIX):]]

    def as_schema(self) -> Any:
        """One draft 2020-12 document: `root` with the definitions under `$defs`."""
        if isinstance(self.root, bool):
            return self.root
        document = {"$schema": DRAFT_2020_12_SPEC.uri, **self.root}
        if self.definitions:
            document["$defs"] = dict(self.definitions)
        return document


def json_equal(a: Any, b: Any) -> bool:
    """JSON Schema equality: numbers by value (1 == 1.0), booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _unique(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not any(json_equal(value, seen) for seen in out):
            out.append(value)
    return out


def _target_names(analysis: Analysis, index: RefIndex) -> dict[Location, str]:
    """A readable, unique, pointer-safe name for every referenced (non-boolean) target."""
    names: dict[Location, str] = {}
    used: set[str] = set()
    referenced = {site.target for site in analysis.sites.values()}
    for location in sorted(referenced):
        if isinstance(analysis.targets.get(location), bool):
            continue
        tokens = split_pointer(location.pointer)
        if len(tokens) >= 2 and tokens[-2] in ("$defs", "definitions"):
            base = tokens[-1]
        else:
            base = ".".join(tokens) or "root"
        if location.uri != index.root_uri:
            stem = location.uri.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
            base = f"{stem}.{base}" if tokens else stem
        base = _NAME_UNSAFE.sub("_", base).strip("_") or "def"
        name, counter = base, 2
        while name in used:
            name, counter = f"{base}_{counter}", counter + 1
        used.add(name)
        names[location] = name
    return names


class _Normalizer:
    def __init__(self, analysis: Analysis, index: RefIndex) -> None:
        self.analysis = analysis
        self.index = index
        self.names = _target_names(analysis, index)

    def reference(self, schema: dict[str, Any]) -> Any:
        location = self.index.location_of(schema)
        site = self.analysis.sites[location] if location is not None else None
        if site is None:  # pragma: no cover - every reached $ref was resolved by the analysis
            raise KeyError("unanalysed $ref")
        target = self.analysis.targets[site.target]
        if isinstance(target, bool):
            return target
        return {"$ref": DEFS_PREFIX + self.names[site.target]}

    def schema(self, schema: Any, draft: Draft) -> Any:
        if isinstance(schema, bool):
            return schema
        draft = draft_of(schema, draft)
        if draft.name == DRAFT_07 and "$ref" in schema:
            return self.reference(schema)
        known = DRAFT_KEYWORDS[draft.name]
        layout = SUBSCHEMA_KEYWORDS[draft.name]
        out: dict[str, Any] = {}
        ref = "$ref" if "$ref" in schema else "$dynamicRef" if "$dynamicRef" in schema else None
        for keyword, value in schema.items():
            if keyword in _DROPPED or keyword not in known or keyword == ref:
                continue
            shape = layout.get(keyword)
            if shape is not None:
                self._subschemas(out, keyword, shape, value, draft, schema)
            elif keyword == "type":
                out["type"] = _normalize_type(value)
            else:
                out[keyword] = copy.deepcopy(value)
        if ref is not None:
            ref = self.reference(schema)
            if not out:
                return ref
            out["allOf"] = [ref, *out.get("allOf", [])]
        return _normalize_values(out)

    def _subschemas(self, out: dict[str, Any], keyword: str, shape: Shape, value: Any,
                    draft: Draft, parent: dict[str, Any]) -> None:
        def norm(sub: Any) -> Any:
            return self.schema(sub, draft)

        if keyword == "items" and isinstance(value, list):  # draft-07 tuple form
            out["prefixItems"] = [norm(sub) for sub in value]
        elif keyword == "additionalItems":
            if isinstance(parent.get("items"), list):
                out["items"] = norm(value)
        elif keyword == "dependencies":
            for name, dependency in value.items():
                if isinstance(dependency, list):
                    out.setdefault("dependentRequired", {})[name] = list(dependency)
                else:
                    out.setdefault("dependentSchemas", {})[name] = norm(dependency)
        elif shape in (Shape.SCHEMA, Shape.SCHEMA_OR_LIST):
            out[keyword] = norm(value)
        elif shape is Shape.SCHEMA_LIST:
            out[keyword] = [norm(sub) for sub in value]
        else:
            out[keyword] = {name: norm(sub) for name, sub in value.items()}

    def run(self, root: Any, draft: Draft) -> NormalizedSchema:
        definitions = {}
        for location, name in sorted(self.names.items(), key=lambda item: item[1]):
            target = self.analysis.targets[location]
            definitions[name] = self.schema(target, self.analysis.target_drafts[location])
        root_name = self.names.get(self.analysis.root)
        if root_name is not None:
            return NormalizedSchema({"$ref": DEFS_PREFIX + root_name}, definitions)
        return NormalizedSchema(self.schema(root, draft), definitions)


def _normalize_type(value: Any) -> list[str]:
    names = {value} if isinstance(value, str) else set(value)
    if "number" in names:
        names.discard("integer")
    return [name for name in TYPE_ORDER if name in names]


def _normalize_values(out: dict[str, Any]) -> Any:
    if "enum" in out:
        out["enum"] = _unique(out["enum"])
        if "const" in out:
            if not any(json_equal(out["const"], value) for value in out["enum"]):
                return False
            del out["enum"]
        elif len(out["enum"]) == 1:
            out["const"] = out.pop("enum")[0]
    return out


def normalize(analysis: Analysis, index: RefIndex, root: Any, draft: Draft) -> NormalizedSchema:
    """Normalise an analysed schema; see the module docstring for the rules."""
    return _Normalizer(analysis, index).run(root, draft)

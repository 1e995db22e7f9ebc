"""Older dialects in terms of the ones formwork compiles, and a draft for an unknown `$schema`.

`declared_draft` says which dialect a schema declares: a known `$schema` URI, the default when
there is none, or, for a URI formwork does not know (a custom meta-schema such as Iglu's
self-describing one; nothing is fetched), the closest draft its keywords imply, with a warning.

`translate` rewrites a schema of draft-04, draft-06 or 2019-09 into an equivalent one of draft-07
(for draft-04/06) or 2020-12 (for 2019-09), which the analysis and the grammar compiler take; JSON
pointers stay those of the original, keyword names aside:

- draft-04: `id` becomes `$id`; boolean `exclusiveMinimum`/`exclusiveMaximum` fold into the bound
  they qualify (`{"minimum": 5, "exclusiveMinimum": true}` is `{"exclusiveMinimum": 5}`);
- 2019-09: `items: [...]` becomes `prefixItems` and `additionalItems` beside it `items`
  (`additionalItems` has no effect beside a single `items` schema and is dropped); `$recursiveRef`
  becomes a `$ref` where its target does not depend on the dynamic scope (the resource it sits in
  has no `$recursiveAnchor: true`, or is the document root); otherwise it is kept, and refused;
- keywords the target draft defines but the source draft does not (draft-04 `const`, draft-06
  `if`, 2019-09 `prefixItems`, ...) are ignored by the source draft, so they are dropped with a
  warning; every `$schema` names the target draft.

Schema objects are reached through the source draft's subschema keywords, so a property named
`id` or `const` is never taken for a keyword.
"""
from __future__ import annotations

from typing import Any

from formwork.schemas.drafts import (ALL_DRAFTS, DRAFT_04, DRAFT_04_SPEC, DRAFT_06, DRAFT_2019_09,
                                     Draft, draft_of, is_obsolete, known_draft)
from formwork.schemas.keywords import SUBSCHEMA_KEYWORDS, Shape
from formwork.schemas.pointer import child
from formwork.schemas.problems import Problem, Severity

_D07, _D2020 = SUBSCHEMA_KEYWORDS["draft-07"], SUBSCHEMA_KEYWORDS["2020-12"]

#: Subschema keywords of the translated dialects, with their shape.
SOURCE_LAYOUTS: dict[str, dict[str, Shape]] = {
    DRAFT_04: {k: v for k, v in _D07.items() if k not in ("contains", "propertyNames", "if",
                                                          "then", "else")},
    DRAFT_06: {k: v for k, v in _D07.items() if k not in ("if", "then", "else")},
    DRAFT_2019_09: {**{k: v for k, v in _D2020.items() if k != "prefixItems"},
                    "items": Shape.SCHEMA_OR_LIST, "additionalItems": Shape.SCHEMA},
}

#: Keywords of the target draft that the source draft does not define (it ignores them).
_NOT_IN_SOURCE: dict[str, frozenset[str]] = {
    DRAFT_04: frozenset({"$id", "const", "contains", "propertyNames", "if", "then", "else"}),
    DRAFT_06: frozenset({"if", "then", "else"}),
    DRAFT_2019_09: frozenset({"prefixItems", "$dynamicRef", "$dynamicAnchor"}),
}

#: Draft-04 boolean exclusive bounds and the bound each qualifies, both ways.
_EXCLUSIVE = {"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}
_QUALIFIED = {bound: exclusive for exclusive, bound in _EXCLUSIVE.items()}
#: Per translated draft, the keywords `_Translator._keyword` may rewrite or drop; any other is
#: kept as it is (a draft-04 object with `"": true` is the exception: see `_keyword`).
_REWRITTEN: dict[str, frozenset[str]] = {
    DRAFT_04: _NOT_IN_SOURCE[DRAFT_04] | {"id"} | _EXCLUSIVE.keys() | _QUALIFIED.keys(),
    DRAFT_06: _NOT_IN_SOURCE[DRAFT_06],
    DRAFT_2019_09: _NOT_IN_SOURCE[DRAFT_2019_09] | {"items", "additionalItems", "$ref", "$recursiveRef",
                                                    "$recursiveAnchor"},
}

# ---------------------------------------------------------------------- which draft


def declared_draft(schema: Any, default: Draft, *, pointer: str = "") -> tuple[Draft, list[Problem]]:
    """The dialect `schema` declares (`default` without `$schema`), and a warning when its
    `$schema` is unknown and the draft was inferred from its keywords."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema"), str):
        return draft_of(schema, default, pointer=pointer), []  # raises for a non-string $schema
    uri = schema["$schema"]
    draft = known_draft(uri)
    if draft is not None:
        return draft, []
    if is_obsolete(uri):
        draft_of(schema, default, pointer=pointer)  # raises UnknownDraftError with the reason
    draft = infer_draft(schema)
    return draft, [Problem(child(pointer, "$schema"), "$schema",
                           f"$schema {uri!r} is not a meta-schema formwork knows (none is "
                           f"fetched); compiled as {draft.name}, the closest draft its keywords "
                           "imply", Severity.WARNING)]


def _bounds(keyword: str, value: Any, schema: dict[str, Any]) -> tuple[int, int] | None:
    """The range of `ALL_DRAFTS` indices in which `keyword: value` means what it says."""
    newest = len(ALL_DRAFTS) - 1
    if keyword == "$ref" and isinstance(value, str):
        draft = known_draft(value.split("#")[0])  # a reference to a draft's meta-schema
        return (ALL_DRAFTS.index(draft),) * 2 if draft is not None else None
    if keyword == "id":
        return (0, 0) if isinstance(value, str) and "$id" not in schema else None
    if keyword in _EXCLUSIVE:
        return (0, 0) if isinstance(value, bool) else (1, newest)
    if keyword in ("$id", "const", "contains", "propertyNames", "examples") or (keyword == "required" and value == []):
        return 1, newest  # (draft-04's `required` must list a name)
    if keyword in ("if", "then", "else", "$comment"):
        return 2, newest
    if keyword in ("$recursiveRef", "$recursiveAnchor"):
        return 3, 3
    if keyword in ("$defs", "$anchor", "dependentRequired", "dependentSchemas",
                   "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains"):
        return 3, newest
    if keyword in ("prefixItems", "$dynamicRef", "$dynamicAnchor"):
        return 4, newest
    if keyword == "additionalItems" or (keyword == "items" and isinstance(value, list)):
        return 0, 3
    if keyword == "dependencies":
        return 0, 2
    return None


_ANY_LAYOUT = {**_D07, **_D2020, **SOURCE_LAYOUTS[DRAFT_2019_09], "dependentSchemas": Shape.SCHEMA_MAP}


def infer_draft(schema: Any) -> Draft:
    """The draft whose keywords fit `schema` best: the newest draft every keyword means what it
    says in; with conflicting keywords, the draft most of them fit (the newest of a tie)."""
    votes: list[tuple[int, int]] = []
    for node in _schema_objects(schema, _ANY_LAYOUT):
        for keyword, value in node.items():
            bounds = _bounds(keyword, value, node)
            if bounds is not None:
                votes.append(bounds)
    lo = max((low for low, _ in votes), default=0)
    hi = min((high for _, high in votes), default=len(ALL_DRAFTS) - 1)
    if lo <= hi:
        return ALL_DRAFTS[hi]
    fits = [sum(low <= i <= high for low, high in votes) for i in range(len(ALL_DRAFTS))]
    return ALL_DRAFTS[max(range(len(ALL_DRAFTS)), key=lambda i: (fits[i], i))]


def _schema_objects(schema: Any, layout: dict[str, Shape]) -> list[dict[str, Any]]:
    """Every schema object reached from `schema` through `layout`'s subschema keywords."""
    found, stack = [], [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append(node)
        for keyword, value in node.items():
            shape = layout.get(keyword)
            if shape is None:
                continue
            if isinstance(value, list) and shape in (Shape.SCHEMA_LIST, Shape.SCHEMA_OR_LIST):
                stack.extend(value)
            elif isinstance(value, dict) and shape in (Shape.SCHEMA_MAP,
                                                        Shape.MAP_OF_SCHEMA_OR_STRINGS):
                stack.extend(value.values())
            else:
                stack.append(value)
    return found

# ---------------------------------------------------------------------- translation


class _Translator:
    def __init__(self, root: Any, entry: bool) -> None:
        self.root = root
        self.entry = entry  # whether validation starts at `root` (not a registry document)
        self.problems: list[Problem] = []

    def schema(self, node: Any, draft: Draft, pointer: str, resource: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if "$schema" in node and node is not self.root:  # the root's was read by the caller
            draft, problems = declared_draft(node, draft, pointer=pointer)
            self.problems.extend(problems)
        if draft.translated_to is None:
            layout = SUBSCHEMA_KEYWORDS[draft.name]
            rewritten: frozenset[str] | None = frozenset()
        else:
            layout = SOURCE_LAYOUTS[draft.name]
            # draft-04 reads `node.get("")` for every keyword not rewritten before (see `_keyword`)
            rewritten = None if draft is DRAFT_04_SPEC and node.get("") is True else _REWRITTEN[draft.name]
        if isinstance(node.get("id" if draft is DRAFT_04_SPEC else "$id"), str) and "$ref" not in node:
            resource = node
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            shape = layout.get(keyword)
            if shape is not None:
                value = self._subschemas(keyword, shape, value, draft, pointer, resource)
            elif keyword == "$schema":
                value = draft.target.uri
            if rewritten is not None and keyword not in rewritten:
                out[keyword] = value  # what `_keyword` does with it
            else:
                self._keyword(out, keyword, value, node, draft, pointer, resource)
        if draft.name == DRAFT_2019_09 and "$recursiveRef" in node:
            self._recursive_ref(out, node["$recursiveRef"], resource)
        return out

    def _subschemas(self, keyword: str, shape: Shape, value: Any, draft: Draft, pointer: str,
                    resource: Any) -> Any:
        here = child(pointer, keyword)
        if isinstance(value, list) and shape in (Shape.SCHEMA_LIST, Shape.SCHEMA_OR_LIST):
            return [self.schema(sub, draft, child(here, i), resource) for i, sub in enumerate(value)]
        if isinstance(value, dict) and shape in (Shape.SCHEMA_MAP, Shape.MAP_OF_SCHEMA_OR_STRINGS):
            return {name: self.schema(sub, draft, child(here, name), resource)
                    for name, sub in value.items()}
        return self.schema(value, draft, here, resource)

    def _keyword(self, out: dict[str, Any], keyword: str, value: Any, node: dict[str, Any],
                 draft: Draft, pointer: str, resource: Any) -> None:
        """Put `keyword: value` (subschemas already translated) into `out` as the target says it."""
        name = draft.name
        if draft.translated_to is None:
            out[keyword] = value
        elif keyword in _NOT_IN_SOURCE[name]:
            self.problems.append(Problem(child(pointer, keyword), keyword,
                                         f"{keyword!r} is not a {name} keyword; JSON Schema "
                                         "ignores it (the schema declares " f"{name})",
                                         Severity.WARNING))
        elif name == DRAFT_04 and keyword == "id" and isinstance(value, str):
            out["$id"] = value
        elif name == DRAFT_04 and keyword in _EXCLUSIVE and isinstance(value, bool):
            bound = node.get(_EXCLUSIVE[keyword])
            if value and isinstance(bound, (int, float)) and not isinstance(bound, bool):
                out[keyword] = bound
                out.pop(_EXCLUSIVE[keyword], None)
        elif name == DRAFT_04 and node.get(_QUALIFIED.get(keyword, "")) is True:
            pass  # folded into the exclusive bound
        elif name == DRAFT_2019_09 and keyword == "items" and isinstance(value, list):
            out["prefixItems"] = value
        elif name == DRAFT_2019_09 and keyword == "additionalItems":
            if isinstance(node.get("items"), list):
                out["items"] = value
        elif name == DRAFT_2019_09 and keyword == "$ref" and isinstance(value, str) \
                and value.startswith("#/"):
            out[keyword] = "#" + _renamed_pointer(resource, value[1:])
        elif name == DRAFT_2019_09 and keyword in ("$recursiveRef", "$recursiveAnchor"):
            pass  # `$recursiveRef` is placed after the loop; only it reads `$recursiveAnchor`
        else:
            out[keyword] = value

    def _recursive_ref(self, out: dict[str, Any], value: Any, resource: Any) -> None:
        """`$recursiveRef: "#"` as a `$ref` where its target does not depend on the dynamic
        scope (its resource has no `$recursiveAnchor: true`, or is where validation starts);
        otherwise kept as it is (the analysis refuses it)."""
        anchored = isinstance(resource, dict) and resource.get("$recursiveAnchor") is True
        if value != "#" or (anchored and not (self.entry and resource is self.root)):
            out["$recursiveRef"] = value
        elif "$ref" in out or "allOf" in out:
            out.setdefault("allOf", []).append({"$ref": "#"})
        else:
            out["$ref"] = "#"


def _renamed_pointer(resource: Any, pointer: str) -> str:
    """A 2019-09 JSON pointer into `resource` as it reads after the translation renamed tuple
    `items` to `prefixItems` and `additionalItems` beside them to `items`."""
    tokens, node = pointer.split("/")[1:], resource
    for i, token in enumerate(tokens):
        if isinstance(node, dict) and isinstance(node.get("items"), list):
            tokens[i] = {"items": "prefixItems", "additionalItems": "items"}.get(token, token)
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            node = None
    return "".join("/" + token for token in tokens)


def translate(schema: Any, draft: Draft, *, entry: bool = True,
              pointer: str = "") -> tuple[Any, list[Problem]]:
    """`schema` (of `draft`) as a schema of `draft.target`, with warnings for the keywords the
    translation dropped; schemas of 2020-12 and draft-07 come back as they are (a subschema of
    theirs declaring an older draft is refused by the analysis). `entry`: validation starts at
    `schema` (False for a document that is only a `$ref` target)."""
    if draft.translated_to is None:
        if isinstance(schema, dict) and "$schema" in schema and known_draft(schema["$schema"]) is not draft:
            return {**schema, "$schema": draft.uri}, []  # a draft inferred for an unknown URI
        return schema, []
    translator = _Translator(schema, entry)
    return translator.schema(schema, draft, pointer, schema), translator.problems


#: Per compiled draft, the keywords a document of it may not use inside a schema of the other one
#: (they mean something else there, or nothing): draft-07 tuple `items`, `additionalItems`,
#: `dependencies` and `$ref` siblings; 2020-12's keywords draft-07 lacks.
_FOREIGN = {
    "draft-07": frozenset({"additionalItems", "dependencies"}),
    "2020-12": frozenset({"prefixItems", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
                          "unevaluatedItems", "minContains", "maxContains", "$dynamicRef", "$anchor"}),
}


def foreign_keyword(document: Any, draft: Draft) -> str | None:
    """A keyword of `document` (a schema of `draft`, draft-07 or 2020-12) that the other compiled
    draft reads differently, or None when the document means the same under both."""
    for node in _schema_objects(document, SUBSCHEMA_KEYWORDS[draft.name]):
        found = _FOREIGN[draft.name].intersection(node)
        if found:
            return min(found)
        if draft.name == "draft-07" and isinstance(node.get("items"), list):
            return "items"
        if "$ref" in node and len(node.keys() - {"$ref", "$comment", "title", "description",
                                                  "definitions", "$defs", "$id", "$schema"}) > 0:
            return "$ref"
    return None


"""A meta-schema compiled into plain Python predicates, for the common case of a valid schema.

jsonschema validates a schema against its meta-schema by walking both with a validator object per
level (~0.4 ms for a typical tool-call schema, a third of loading it).  A meta-schema only uses a
handful of keywords, so it can be compiled once into nested closures that answer one question:
"is this instance *certainly* valid?".  `True` is exact (each keyword follows jsonschema's
semantics, with the validator's own type and format checkers); `False` means "invalid or not
sure" (e.g. `uniqueItems` over non-strings, `enum` of non-strings), and the caller falls back to
jsonschema, which also reports the errors.  A meta-schema using any other keyword is not compiled.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jsonschema import FormatChecker

Predicate = Callable[[Any], bool]

#: Keywords that never constrain an instance.
_ANNOTATIONS = frozenset({"$schema", "$id", "id", "$comment", "title", "description", "default",
                          "deprecated", "readOnly", "writeOnly", "examples", "$defs",
                          "definitions"})
_SIMPLE_TYPES: dict[str, Predicate] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


_SCALARS = (str, int, float, type(None))  # bool is an int


class UnsupportedMetaSchemaError(ValueError):
    """The meta-schema uses a keyword (or a form of one) this compiler does not handle."""


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


class _Compiler:
    """Compiles the subschemas of one meta-schema document (references resolved inside it)."""

    def __init__(self, root: Any, type_checker: Any, format_checker: FormatChecker, draft07: bool):
        self.root = root
        self.type_checker = type_checker
        self.format_checker = format_checker
        self.draft07 = draft07
        self.compiled: dict[int, Predicate] = {}

    def is_type(self, name: str) -> Predicate:
        simple = _SIMPLE_TYPES.get(name)
        if simple is not None:
            return simple
        checker = self.type_checker
        return lambda x: checker.is_type(x, name)

    def resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        for container in ("$defs", "definitions"):
            prefix = f"#/{container}/"
            if ref.startswith(prefix) and "/" not in ref[len(prefix):]:
                return self.root[container][ref[len(prefix):]]
        raise UnsupportedMetaSchemaError(f"reference {ref!r}")

    def schema(self, node: Any) -> Predicate:
        """The predicate of a subschema; recursive references go through a late-bound cell."""
        if node is True:
            return _always
        if node is False:
            return _never
        if not isinstance(node, dict):
            raise UnsupportedMetaSchemaError(f"subschema {node!r}")
        got = self.compiled.get(id(node))
        if got is not None:
            return got
        cell: list[Predicate] = []
        self.compiled[id(node)] = lambda x: cell[0](x)
        checks = self.keywords(node)
        if not checks:
            pred = _always
        elif len(checks) == 1:
            pred = checks[0]
        else:
            pred = _every(checks)
        cell.append(pred)
        self.compiled[id(node)] = pred
        return pred

    def keywords(self, node: dict[str, Any]) -> list[Predicate]:
        checks: list[Predicate] = []
        if self.draft07 and "$ref" in node and set(node) - _ANNOTATIONS - {"$ref"}:
            raise UnsupportedMetaSchemaError("draft-07 $ref beside other keywords (ignored there)")
        for key, value in node.items():
            if key in _ANNOTATIONS or key in ("additionalProperties", "items"):
                continue
            build = self.kw_ref if key == "$ref" else getattr(self, "kw_" + key, None)
            if build is None or key.startswith("$") and key != "$ref":
                raise UnsupportedMetaSchemaError(f"keyword {key!r}")
            checks.append(build(value, node))
        if "properties" not in node and "additionalProperties" in node:
            checks.append(self.kw_properties({}, node))
        if "items" in node:
            checks.append(self.items(node["items"], node))
        return checks

    # ---- keywords (each ignores instances of other types, as JSON Schema does)
    def kw_ref(self, ref: str, _: dict) -> Predicate:
        return self.schema(self.resolve(ref))

    def kw_type(self, value: str | list[str], _: dict) -> Predicate:
        names = [value] if isinstance(value, str) else list(value)
        tests = [self.is_type(name) for name in names]
        if len(tests) == 1:
            return tests[0]
        return _some(tests)

    def kw_properties(self, properties: dict[str, Any], node: dict) -> Predicate:
        if "patternProperties" in node:
            raise UnsupportedMetaSchemaError("patternProperties")
        by_name = {name: self.schema(sub) for name, sub in properties.items()}
        other = self.schema(node["additionalProperties"]) if "additionalProperties" in node else None

        def check(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for key, value in x.items():
                pred = by_name.get(key, other)
                if pred is not None and not pred(value):
                    return False
            return True

        return check

    def items(self, items: Any, node: dict) -> Predicate:
        if "prefixItems" in node or "additionalItems" in node or isinstance(items, list):
            raise UnsupportedMetaSchemaError("positional items")
        each = self.schema(items)

        def check(x: Any) -> bool:
            if isinstance(x, list):
                for item in x:
                    if not each(item):
                        return False
            return True

        return check

    def kw_propertyNames(self, sub: Any, _: dict) -> Predicate:  # noqa: N802 - keyword name
        each = self.schema(sub)
        return lambda x: not isinstance(x, dict) or all(each(key) for key in x)

    def kw_anyOf(self, subs: list[Any], _: dict) -> Predicate:  # noqa: N802
        return _some([self.schema(sub) for sub in subs])

    def kw_allOf(self, subs: list[Any], _: dict) -> Predicate:  # noqa: N802
        return _every([self.schema(sub) for sub in subs])

    def kw_enum(self, values: list[Any], _: dict) -> Predicate:
        if not all(isinstance(v, str) for v in values):
            raise UnsupportedMetaSchemaError("enum of non-strings")
        allowed = frozenset(values)
        return lambda x: isinstance(x, str) and x in allowed

    def kw_minItems(self, n: int, _: dict) -> Predicate:  # noqa: N802
        return lambda x: not isinstance(x, list) or len(x) >= n

    def kw_uniqueItems(self, unique: bool, _: dict) -> Predicate:  # noqa: N802
        if not unique:
            return _always
        # scalars only: Python's == equates every pair JSON Schema does (1 and 1.0; also True
        # and 1, which it does not), so items distinct here are distinct there; containers are
        # left to jsonschema
        return lambda x: not isinstance(x, list) or (
            all(isinstance(item, _SCALARS) for item in x) and len(set(x)) == len(x))

    def kw_minimum(self, bound: float, node: dict) -> Predicate:
        number = self.is_type("number")
        if node.get("exclusiveMinimum") is True:  # draft-04: the boolean makes `minimum` strict
            return lambda x: not number(x) or x > bound
        return lambda x: not number(x) or x >= bound

    def kw_exclusiveMinimum(self, bound: float | bool, _: dict) -> Predicate:  # noqa: N802
        if isinstance(bound, bool):  # draft-04's flag on `minimum` (see kw_minimum)
            return _always
        number = self.is_type("number")
        return lambda x: not number(x) or x > bound

    def kw_dependencies(self, dependencies: dict[str, Any], _: dict) -> Predicate:
        """draft-04/06/07 `dependencies`: a present key needs the listed keys (array form) or
        the object to match the subschema."""
        needs = []
        for key, dependency in dependencies.items():
            if isinstance(dependency, list):
                needs.append((key, lambda x, names=tuple(dependency): all(n in x for n in names)))
            else:
                needs.append((key, self.schema(dependency)))

        def check(x: Any) -> bool:
            if isinstance(x, dict):
                for key, pred in needs:
                    if key in x and not pred(x):
                        return False
            return True

        return check

    def kw_pattern(self, pattern: str, _: dict) -> Predicate:
        compiled = re.compile(pattern)
        return lambda x: not isinstance(x, str) or compiled.search(x) is not None

    def kw_format(self, name: str, _: dict) -> Predicate:
        conforms = self.format_checker.conforms
        return lambda x: conforms(x, name)


def _every(preds: list[Predicate]) -> Predicate:
    """The conjunction of `preds` (a loop: no generator per instance checked)."""
    def check(x: Any) -> bool:
        for pred in preds:
            if not pred(x):
                return False
        return True

    return check


def _some(preds: list[Predicate]) -> Predicate:
    """The disjunction of `preds` (a loop, as `_every`)."""
    def check(x: Any) -> bool:
        for pred in preds:
            if pred(x):
                return True
        return False

    return check


def compile_meta_schema(meta_schema: Any, validator_class: Any, format_checker: FormatChecker,
                        *, draft07: bool = False) -> Predicate:
    """A predicate that is True only for instances `meta_schema` accepts (as `validator_class`
    with `format_checker` would decide).  Raises `UnsupportedMetaSchemaError` for a meta-schema
    using keywords outside the compiled subset."""
    return _Compiler(meta_schema, validator_class.TYPE_CHECKER, format_checker,
                     draft07).schema(meta_schema)

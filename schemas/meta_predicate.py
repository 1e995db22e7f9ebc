"""A meta-schema compiled into a program of checks run in C, for the common case of a valid schema.

jsonschema validates a schema against its meta-schema by walking both with a validator object per
level (~0.4 ms for a typical tool-call schema, a third of loading it).  A meta-schema only uses a
handful of keywords, so it can be compiled once into a program (`schemas/native/_meta_check.c`:
one node of checks per subschema) that answers one question: "is this instance *certainly*
valid?".  `True` is exact (each keyword follows jsonschema's semantics, with the validator's own
type and format checkers); `False` means "invalid or not sure" (e.g. `uniqueItems` over
non-strings, `enum` of non-strings), and the caller falls back to jsonschema, which also reports
the errors.  A meta-schema using any other keyword is not compiled.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jsonschema import FormatChecker

from formwork.schemas import _meta_check as op

Predicate = Callable[[Any], bool]
Check = tuple[Any, ...]

#: Keywords that never constrain an instance.
_ANNOTATIONS = frozenset({"$schema", "$id", "id", "$comment", "title", "description", "default",
                          "deprecated", "readOnly", "writeOnly", "examples", "$defs",
                          "definitions"})
#: Type names and their codes in the program; any other name is asked of the type checker.
_TYPE_CODES = {"object": op.T_OBJECT, "array": op.T_ARRAY, "string": op.T_STRING,
               "boolean": op.T_BOOLEAN, "null": op.T_NULL, "integer": op.T_INTEGER,
               "number": op.T_NUMBER}


class UnsupportedMetaSchemaError(ValueError):
    """The meta-schema uses a keyword (or a form of one) this compiler does not handle."""


class _Compiler:
    """Compiles the subschemas of one meta-schema document (references resolved inside it) into
    the nodes of a `_meta_check.Program`: a tuple of checks each, referring to others by number."""

    def __init__(self, root: Any, format_checker: FormatChecker, draft07: bool):
        self.root = root
        self.format_checker = format_checker
        self.draft07 = draft07
        self.nodes: list[tuple[Check, ...]] = []
        self.numbers: dict[int, int] = {}  # id of a subschema -> its node
        self._always: int | None = None
        self._never: int | None = None

    def resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        for container in ("$defs", "definitions"):
            prefix = f"#/{container}/"
            if ref.startswith(prefix) and "/" not in ref[len(prefix):]:
                return self.root[container][ref[len(prefix):]]
        raise UnsupportedMetaSchemaError(f"reference {ref!r}")

    def _node(self, checks: tuple[Check, ...]) -> int:
        self.nodes.append(checks)
        return len(self.nodes) - 1

    def schema(self, node: Any) -> int:
        """The node number of a subschema; numbered before its keywords, so recursion finds it."""
        if node is True:
            if self._always is None:
                self._always = self._node(())
            return self._always
        if node is False:
            if self._never is None:
                self._never = self._node(((op.NEVER,),))
            return self._never
        if not isinstance(node, dict):
            raise UnsupportedMetaSchemaError(f"subschema {node!r}")
        number = self.numbers.get(id(node))
        if number is not None:
            return number
        number = self.numbers[id(node)] = self._node(())
        self.nodes[number] = tuple(check for check in self.keywords(node) if check is not None)
        return number

    def keywords(self, node: dict[str, Any]) -> list[Check | None]:
        """The checks of a subschema's keywords, in its order; None for one that always passes."""
        checks: list[Check | None] = []
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
    def kw_ref(self, ref: str, _: dict) -> Check:
        return (op.ALL_OF, (self.schema(self.resolve(ref)),))

    def kw_type(self, value: str | list[str], _: dict) -> Check:
        names = (value,) if isinstance(value, str) else tuple(value)
        return (op.TYPE, tuple(_TYPE_CODES.get(name, op.T_OTHER) for name in names), names)

    def kw_properties(self, properties: dict[str, Any], node: dict) -> Check:
        if "patternProperties" in node:
            raise UnsupportedMetaSchemaError("patternProperties")
        by_name = {name: self.schema(sub) for name, sub in properties.items()}
        other = self.schema(node["additionalProperties"]) if "additionalProperties" in node else None
        return (op.PROPERTIES, by_name, other)

    def items(self, items: Any, node: dict) -> Check:
        if "prefixItems" in node or "additionalItems" in node or isinstance(items, list):
            raise UnsupportedMetaSchemaError("positional items")
        return (op.ITEMS, self.schema(items))

    def kw_propertyNames(self, sub: Any, _: dict) -> Check:  # noqa: N802 - keyword name
        return (op.PROPERTY_NAMES, self.schema(sub))

    def kw_anyOf(self, subs: list[Any], _: dict) -> Check:  # noqa: N802
        return (op.ANY_OF, tuple(self.schema(sub) for sub in subs))

    def kw_allOf(self, subs: list[Any], _: dict) -> Check:  # noqa: N802
        return (op.ALL_OF, tuple(self.schema(sub) for sub in subs))

    def kw_enum(self, values: list[Any], _: dict) -> Check:
        if not all(isinstance(v, str) for v in values):
            raise UnsupportedMetaSchemaError("enum of non-strings")
        return (op.ENUM, frozenset(values))

    def kw_minItems(self, n: int, _: dict) -> Check:  # noqa: N802
        if type(n) is not int:
            raise UnsupportedMetaSchemaError(f"minItems {n!r}")
        return (op.MIN_ITEMS, n)

    def kw_uniqueItems(self, unique: bool, _: dict) -> Check | None:  # noqa: N802
        # scalars only: Python's == equates every pair JSON Schema does (1 and 1.0; also True
        # and 1, which it does not), so items distinct here are distinct there; containers are
        # left to jsonschema
        return (op.UNIQUE_ITEMS,) if unique else None

    def kw_minimum(self, bound: float, node: dict) -> Check:
        # draft-04: `exclusiveMinimum: true` makes `minimum` strict
        return (op.MINIMUM, bound, "number", node.get("exclusiveMinimum") is True)

    def kw_exclusiveMinimum(self, bound: float | bool, _: dict) -> Check | None:  # noqa: N802
        if isinstance(bound, bool):  # draft-04's flag on `minimum` (see kw_minimum)
            return None
        return (op.MINIMUM, bound, "number", True)

    def kw_dependencies(self, dependencies: dict[str, Any], _: dict) -> Check:
        """draft-04/06/07 `dependencies`: a present key needs the listed keys (array form) or
        the object to match the subschema."""
        return (op.DEPENDENCIES, tuple(
            (key, tuple(dependency), None) if isinstance(dependency, list)
            else (key, None, self.schema(dependency))
            for key, dependency in dependencies.items()))

    def kw_pattern(self, pattern: str, _: dict) -> Check:
        return (op.PATTERN, re.compile(pattern).search)

    def kw_format(self, name: str, _: dict) -> Check:
        return (op.FORMAT, self.format_checker.conforms, name)


def compile_meta_schema(meta_schema: Any, validator_class: Any, format_checker: FormatChecker,
                        *, draft07: bool = False) -> Predicate:
    """A predicate that is True only for instances `meta_schema` accepts (as `validator_class`
    with `format_checker` would decide).  Raises `UnsupportedMetaSchemaError` for a meta-schema
    using keywords outside the compiled subset."""
    compiler = _Compiler(meta_schema, format_checker, draft07)
    compiler.schema(meta_schema)  # the root: node 0
    return op.Program(compiler.nodes, validator_class.TYPE_CHECKER.is_type)

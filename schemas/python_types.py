"""Python types to JSON Schema: `json_schema_of(tp)`.

Supported: `str`, `int`, `float`, `bool`, `None`, `Any`, `datetime`/`date`/`time` and `UUID` (string
formats), `Literal[...]`, `Enum` subclasses with JSON scalar values, `list[T]` (and `Sequence[T]`),
`tuple[A, B]` / `tuple[T, ...]`, `dict[str, T]` (and `Mapping[str, T]`), unions and `Optional[T]`,
dataclasses, `TypedDict`s and pydantic v2 models (described by pydantic's own `model_json_schema`,
closed unless the model allows extra keys; see `pydantic_schema_of`). `Annotated[T, ...]` is treated as `T`.

Named types (dataclasses, TypedDicts, enums, pydantic models) nested in the root go to `$defs` and are
referenced with `$ref`; the root type itself is inlined (a self-reference is `{"$ref": "#"}`).
Dataclasses and TypedDicts are closed objects (`additionalProperties: false`), since extra keys could
not be passed back to them. Anything else raises `UnsupportedTypeError` naming the field.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import types
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["UnsupportedTypeError", "is_pydantic_model", "json_schema_of", "member_path", "pydantic_schema_of",
           "type_name", "unwrap_annotated"]

JSON_SCALARS = (str, int, float, bool, type(None))

#: Plain types with a fixed schema.
SCALAR_SCHEMAS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
}

SEQUENCE_ORIGINS = (list, Sequence, typing.Sequence)
MAPPING_ORIGINS = (dict, Mapping, typing.Mapping)
SET_ORIGINS = (set, frozenset, typing.AbstractSet)


class UnsupportedTypeError(TypeError):
    """A Python type that has no JSON Schema formwork can generate; `path` names the field
    (e.g. `Order.items[].tags`)."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


def json_schema_of(tp: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) whose instances are the JSON forms of values of `tp`."""
    if is_pydantic_model(tp):
        return pydantic_schema_of(tp)
    return _SchemaBuilder(tp).build()


def pydantic_schema_of(model: type, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """pydantic's own `model_json_schema`, except that models ignoring extra keys (pydantic's default)
    are closed (`additionalProperties: false`): members the model would drop are not worth generating.
    `extra="allow"` models stay open, `extra="forbid"` ones are closed by pydantic itself."""
    return model.model_json_schema(ref_template=ref_template, schema_generator=_closed_models_generator())


@functools.cache
def _closed_models_generator() -> type:
    from pydantic.json_schema import GenerateJsonSchema

    class ClosedModels(GenerateJsonSchema):
        def model_schema(self, schema: Any) -> dict[str, Any]:
            json_schema = super().model_schema(schema)
            if schema["cls"].model_config.get("extra") != "allow" and json_schema.get("type") == "object":
                json_schema.setdefault("additionalProperties", False)
            return json_schema

    return ClosedModels


def type_name(tp: Any) -> str:
    """A readable name: `Order`, `list[int]`, `Literal['a', 'b']`, `int | None`."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def unwrap_annotated(tp: Any) -> Any:
    """`T` for `Annotated[T, ...]` (nested ones too), else `tp`."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def is_pydantic_model(tp: Any) -> bool:
    """True for a pydantic v2 `BaseModel` subclass (without importing pydantic when unused)."""
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def resolved_hints(cls: type, path: str) -> dict[str, Any]:
    """`typing.get_type_hints(cls)`, with unresolvable annotations reported as unsupported."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError for an undefined forward reference, TypeError for junk
        raise UnsupportedTypeError(f"cannot resolve the annotations of {cls.__name__}: {exc}", path) from None


def member_path(path: str, key: str) -> str:
    """The path of object member `key` under `path` ("" is the root value)."""
    return f"{path}.{key}" if path else key


def typeddict_members(tp: type, path: str) -> dict[str, tuple[Any, bool]]:
    """Key -> (type, required) of a TypedDict. `Required[...]`/`NotRequired[...]` are read from the
    hints too, since under `from __future__ import annotations` the class cannot see them."""
    members = {}
    for key, hint in resolved_hints(tp, path).items():
        required = key in tp.__required_keys__
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired, typing.Annotated):
            required = {typing.Required: True, typing.NotRequired: False}.get(typing.get_origin(hint), required)
            hint = typing.get_args(hint)[0]
        members[key] = (hint, required)
    return members


def literal_values(tp: Any, path: str) -> list[Any]:
    """The JSON values of `Literal[...]` (enum members become their values)."""
    values = []
    for arg in typing.get_args(tp):
        value = arg.value if isinstance(arg, enum.Enum) else arg
        if not isinstance(value, JSON_SCALARS):
            raise UnsupportedTypeError(f"Literal value {arg!r} is not a JSON scalar", path)
        values.append(value)
    return values


class _SchemaBuilder:
    """Walks a type, collecting named types into `$defs`."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.defs: dict[str, Any] = {}
        self.refs: dict[Any, str] = {}  # named type -> its $ref

    def build(self) -> dict[str, Any]:
        schema = self.schema(self.root, "")
        if self.defs:
            schema = {**schema, "$defs": self.defs}
        return schema

    def schema(self, tp: Any, path: str) -> dict[str, Any]:
        tp = unwrap_annotated(tp)
        if tp is Any or tp is object:
            return {}
        if tp is None or tp is type(None):
            return dict(SCALAR_SCHEMAS[type(None)])
        if tp in SCALAR_SCHEMAS:
            return dict(SCALAR_SCHEMAS[tp])
        origin = typing.get_origin(tp)
        if origin is typing.Literal:
            values = literal_values(tp, path)
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if origin is typing.Union or origin is types.UnionType:
            return {"anyOf": [self.schema(arm, path) for arm in typing.get_args(tp)]}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self.named(tp, path, self.enum_schema)
        if is_pydantic_model(tp):
            return self.named(tp, path, self.pydantic_schema)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return self.named(tp, path, self.dataclass_schema)
        if is_typeddict(tp):
            return self.named(tp, path, self.typeddict_schema)
        return self.generic(tp, origin, path)

    def generic(self, tp: Any, origin: Any, path: str) -> dict[str, Any]:
        args = typing.get_args(tp)
        if tp in SEQUENCE_ORIGINS or origin in SEQUENCE_ORIGINS:
            item = args[0] if args else Any
            return {"type": "array", "items": self.schema(item, path + "[]")}
        if tp is tuple or origin is tuple:
            if not args or (len(args) == 2 and args[1] is Ellipsis):
                item = args[0] if args else Any
                return {"type": "array", "items": self.schema(item, path + "[]")}
            if args == ((),):  # tuple[()]
                return {"type": "array", "maxItems": 0}
            items = [self.schema(arg, f"{path}[{i}]") for i, arg in enumerate(args)]
            return {"type": "array", "prefixItems": items, "items": False,
                    "minItems": len(items), "maxItems": len(items)}
        if tp in MAPPING_ORIGINS or origin in MAPPING_ORIGINS:
            key, value = args if args else (str, Any)
            if unwrap_annotated(key) is not str:
                raise UnsupportedTypeError(f"JSON object keys are strings; {type_name(tp)} has "
                                           f"{type_name(key)} keys", path)
            return {"type": "object", "additionalProperties": self.schema(value, path + "[*]")}
        if tp in SET_ORIGINS or origin in SET_ORIGINS:
            raise UnsupportedTypeError(f"{type_name(tp)} needs unique items (uniqueItems), which constrained "
                                       "decoding cannot enforce; use list[...]", path)
        raise UnsupportedTypeError(f"{type_name(tp)} has no JSON Schema (supported: str, int, float, bool, "
                                   "None, Literal, Enum, list, tuple, dict[str, T], unions, dataclasses, "
                                   "TypedDicts and pydantic models)", path)

    def named(self, tp: type, path: str, build: Callable[[type, str], dict[str, Any]]) -> dict[str, Any]:
        """A named type: inlined at the root, else a `$defs` entry; every repeat is a `$ref`."""
        ref = self.refs.get(tp)
        if ref is not None:
            return {"$ref": ref}
        if tp is self.root:
            self.refs[tp] = "#"
            return build(tp, path)
        name = self.def_name(tp.__name__)
        self.refs[tp] = f"#/$defs/{name}"
        self.defs[name] = {}  # reserve the name while building (recursion)
        self.defs[name] = build(tp, name)
        return {"$ref": self.refs[tp]}

    def def_name(self, name: str, taken: set[str] = frozenset()) -> str:
        candidate, n = name, 2
        while candidate in self.defs or candidate in taken:
            candidate, n = f"{name}{n}", n + 1
        return candidate

    def enum_schema(self, tp: type[enum.Enum], path: str) -> dict[str, Any]:
        values = [member.value for member in tp]
        for member in tp:
            if not isinstance(member.value, JSON_SCALARS):
                raise UnsupportedTypeError(f"enum member {member!r} has a value that is not a JSON scalar", path)
        return {"title": tp.__name__, "enum": values}

    def dataclass_schema(self, tp: type, path: str) -> dict[str, Any]:
        hints = resolved_hints(tp, path)
        properties, required = {}, []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            properties[f.name] = self.schema(hints.get(f.name, Any), member_path(path, f.name))
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        return _object(tp.__name__, properties, required)

    def typeddict_schema(self, tp: type, path: str) -> dict[str, Any]:
        members = typeddict_members(tp, path)
        properties = {key: self.schema(hint, member_path(path, key)) for key, (hint, _) in members.items()}
        return _object(tp.__name__, properties, [key for key, (_, required) in members.items() if required])

    def pydantic_schema(self, tp: type, path: str) -> dict[str, Any]:
        """pydantic's schema of the model, its `$defs` merged into ours (renamed on a clash)."""
        schema = pydantic_schema_of(tp)
        inner = schema.pop("$defs", {})
        renames = {}
        for name, definition in inner.items():
            if name in self.defs and self.defs[name] != definition:
                renames[name] = self.def_name(name, taken=set(inner) | set(renames.values()))
        if renames:
            schema, inner = _rename_refs(schema, renames), _rename_refs(inner, renames)
        for name, definition in inner.items():
            self.defs[renames.get(name, name)] = definition
        return schema


def _rename_refs(node: Any, renames: dict[str, str]) -> Any:
    """A copy of `node` whose `$ref`s to renamed `$defs` entries use the new names."""
    if isinstance(node, list):
        return [_rename_refs(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _rename_refs(value, renames) for key, value in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in renames:
        out["$ref"] = "#/$defs/" + renames[ref[len("#/$defs/"):]]
    return out


def _object(title: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"title": title, "type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema

"""jsonschema validators that read regexes the way formwork compiles them (ECMA-262, JSON Schema's
dialect; see `regex_parser` for the reading), matched by formwork's own automata.

jsonschema hands `pattern`, the keys of `patternProperties` and the keys `additionalProperties`
leaves out to Python's `re`, which has no `\\p{..}` nor `(?<name>...)` (it raises on them) and reads
`$`, `\\d`, `\\w` and `\\s` differently.  The lowering (which asks jsonschema about `enum` / `const`
values and `propertyNames`) and the SDK's output check use these validators instead, so that a
schema is checked the way it is compiled.  A regex outside formwork's syntax (a backreference: only
a lenient compile gets past one) is left to `re`.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

from formwork.grammar.errors import GrammarError
from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.json_schema.pieces import pattern_language


@functools.lru_cache(maxsize=1024)
def _matcher(pattern: str) -> Callable[[str], bool]:
    try:
        dfa = SHARED.compile(pattern_language(pattern))
    except GrammarError:
        compiled = re.compile(pattern)
        return lambda text: compiled.search(text) is not None
    return lambda text: accepts(dfa, text.encode("utf-8", "surrogatepass"))


def search(pattern: str, text: str) -> bool:
    """Whether the ECMA-262 regex `pattern` matches somewhere in `text` (JSON Schema's reading)."""
    return _matcher(pattern)(text)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
                        ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any
                           ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [key for key in instance
              if key not in declared and not any(search(pattern, key) for pattern in patterns)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        listed = ", ".join(map(repr, sorted(extras)))
        yield ValidationError(f"Additional properties are not allowed ({listed} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


@functools.lru_cache(maxsize=None)
def ecma_validator(cls: type) -> type:
    """`cls` (a jsonschema validator class) with `pattern`, `patternProperties` and
    `additionalProperties` read as ECMA-262 regexes (one class per draft, kept)."""
    return extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties,
                        "additionalProperties": _additional_properties})

"""Checking compiled JSON Schema grammars on generated instances, for real-world schema corpora
(shared by `benchmarks/corpus.py` and `tests/test_real_world_corpus.py`).

* valid instances come from hypothesis-jsonschema (drafts 4-7: a 2019-09/2020-12 schema is
  rewritten into draft-07 terms for generation only) and are kept only if `jsonschema` (the
  validator of the schema's draft, format checking on) says valid;
* invalid instances are one-place mutations of valid ones (a member dropped or added, a type
  changed, a string, number or array pushed past a bound), kept only if `jsonschema` says invalid;
* whether the grammar accepts an instance in some spelling is `json_spelling_search`'s job.
"""
from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import random
import re
import signal
import threading
from contextlib import contextmanager, suppress
from decimal import Decimal, localcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

from jsonschema import Draft4Validator, Draft201909Validator, Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend, validator_for
from referencing import Registry, Resource
from referencing.jsonschema import specification_with

IGLU_PREFIX = "http://iglucentral.com/schemas/"
DRAFT4_URI = "http://json-schema.org/draft-04/schema#"
MAX_PLACES = 200  # instance nodes a mutation may touch
_SWAPS: list[Any] = [None, True, 0, 2.5, "", "formwork", [], {}]


# ---------------------------------------------------------------------- Iglu registry
def iglu_documents(root: Path) -> dict[str, Any]:
    """The JSON Schemas of an Iglu tree (`<vendor>/<name>/jsonschema/<version>`) by their
    `http://iglucentral.com/schemas/...` and `iglu:...` URIs."""
    docs: dict[str, Any] = {}
    for path in sorted(root.glob("*/*/jsonschema/*")):
        rel = path.relative_to(root).as_posix()
        docs[IGLU_PREFIX + rel] = docs["iglu:" + rel] = json.loads(path.read_text())
    return docs


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def referenced(schema: Any, documents: dict[str, Any]) -> dict[str, Any]:
    """The documents that `schema` reaches through `$ref`, transitively, by URI."""
    out: dict[str, Any] = {}
    todo = [schema]
    while todo:
        for ref in _refs(todo.pop()):
            uri = ref.split("#")[0]
            if uri in documents and uri not in out:
                out[uri] = documents[uri]
                todo.append(documents[uri])
    return out


# ---------------------------------------------------------------------- jsonschema
def _exact_multiple_of(validator: Any, factor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """`multipleOf` over the numbers the JSON texts denote (`0.1` is a multiple of `0.01`),
    as formwork reads them, rather than over binary floats."""
    if not validator.is_type(instance, "number"):
        return
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 1000, 10 ** 6, -10 ** 6
        if Decimal(repr(instance)) % Decimal(repr(factor)) != 0:
            yield ValidationError(f"{instance!r} is not a multiple of {factor!r}")


_ASCII_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_"}


def ecma_pattern(pattern: str) -> str:
    """`pattern` with ECMA-262's ASCII `\\d` and `\\w` (Python's match any Unicode digit or
    letter): `\\d` -> `[0-9]`, `\\D` -> `[^0-9]`, and inside a class `\\d` -> `0-9`; and ECMA's
    `$` (the end of the input only; Python's also matches before a final newline) -> `\\Z`."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e.lower() in _ASCII_CLASSES and not (in_class and e.isupper()):
                chars = _ASCII_CLASSES[e.lower()]
                out.append(chars if in_class else f"[{'^' if e.isupper() else ''}{chars}]")
            else:
                out.append(c + e)
            i += 2
            continue
        in_class = (in_class and c != "]") or (not in_class and c == "[")
        out.append("\\Z" if c == "$" and not in_class else c)
        i += 1
    return "".join(out)


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not re.search(ecma_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _ecma_pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = re.compile(ecma_pattern(pattern))
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _ecma_additional_properties(validator: Any, extra_schema: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [re.compile(ecma_pattern(p)) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in declared and not any(p.search(k) for p in patterns)]
    if validator.is_type(extra_schema, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra_schema, path=key)
    elif extra_schema is False and extras:
        yield ValidationError(f"additional properties {sorted(extras)!r} are not allowed")


@functools.lru_cache(maxsize=None)
def _ecma_validator(cls: type) -> type:
    return extend(cls, {"multipleOf": _exact_multiple_of, "pattern": _ecma_pattern,
                        "patternProperties": _ecma_pattern_properties,
                        "additionalProperties": _ecma_additional_properties})


_INTEGER_WIDTHS = {"int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1),
                   "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}


def openapi_format_checker() -> FormatChecker:
    """`jsonschema`'s format checker plus the OpenAPI formats formwork asserts (issue 21):
    `int32`/`int64`/`uint32`/`uint64` as integer ranges (a non-integral number fails) and `byte`
    as padded base64; checked here with the standard library, independently of the grammar."""
    checker = FormatChecker()
    for name, (low, high) in _INTEGER_WIDTHS.items():
        def in_range(instance: Any, low: int = low, high: int = high) -> bool:
            if isinstance(instance, bool) or not isinstance(instance, (int, float)):
                return True
            return (isinstance(instance, int) or instance.is_integer()) and low <= instance <= high
        checker.checks(name)(in_range)

    @checker.checks("byte")
    def base64_text(instance: Any) -> bool:
        if not isinstance(instance, str):
            return True
        try:
            base64.b64decode(instance.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            return False
        return len(instance) % 4 == 0
    return checker


def make_validator(schema: Any, registry: dict[str, Any], default: type) -> Any:
    """`jsonschema`'s validator of the schema's draft (`default` when `$schema` is missing or
    unknown) with `registry`'s documents resolvable, checking every format `jsonschema` can
    (`uuid`, `date`, `time` also in older drafts: formwork asserts them in every draft),
    `multipleOf` over decimals, `pattern` and `patternProperties` (so `additionalProperties`) with
    ECMA-262's ASCII digit and word classes, and the
    OpenAPI formats formwork asserts (`openapi_format_checker`)."""
    cls = validator_for(schema, default=default)
    spec = specification_with(cls.META_SCHEMA["$schema"])
    resources = Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=spec)) for uri, doc in registry.items())
    return _ecma_validator(cls)(schema, registry=resources, format_checker=openapi_format_checker())


def integral_floats(validator: Any) -> bool:
    """Whether `1.0` is an integer for the validator's draft (not in draft-04)."""
    return validator.META_SCHEMA["$schema"] != Draft4Validator.META_SCHEMA["$schema"]


def is_valid(validator: Any, value: Any) -> bool | None:
    """`jsonschema`'s verdict; None when it cannot judge (a bad pattern, a missing reference)."""
    try:
        return validator.is_valid(value)
    except Exception:  # noqa: BLE001 - any validator failure means "no verdict"
        return None


# ---------------------------------------------------------------------- valid instances
class TimeUp(BaseException):
    """The generation time limit passed (a BaseException, so hypothesis does not catch it)."""


class _Enough(BaseException):
    """Generation has found all the instances it wants."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `TimeUp` after `seconds`, and again every 50 ms until the block ends (a raise inside
    a garbage-collector callback is swallowed). SIGALRM: no limit off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(*_: Any) -> None:
        raise TimeUp

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _inline(node: Any, registry: dict[str, Any], depth: int = 0) -> Any:
    """`node` with `$ref`s into `registry` replaced by the documents (hypothesis-jsonschema
    resolves only local references)."""
    if isinstance(node, list):
        return [_inline(v, registry, depth) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline(v, registry, depth) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    uri = ref.split("#")[0] if isinstance(ref, str) else None
    if uri in registry and depth < 4 and isinstance(registry[uri], dict):
        doc = {k: v for k, v in registry[uri].items() if k not in ("$schema", "id", "$id", "self")}
        return {"allOf": [out, _inline(doc, registry, depth + 1)]} if out else \
            _inline(doc, registry, depth + 1)
    if ref is not None:
        out["$ref"] = ref
    return out


def _draft7_terms(node: Any) -> Any:
    """2019-09/2020-12 keywords rewritten as draft-07 ones (`prefixItems`, `dependent*`)."""
    if isinstance(node, list):
        return [_draft7_terms(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _draft7_terms(v) for k, v in node.items() if k != "$schema"}
    if "prefixItems" in out:
        prefix = out.pop("prefixItems")
        if "items" in out:
            out["additionalItems"] = out.pop("items")
        out["items"] = prefix
    deps = {**out.pop("dependentRequired", {}), **out.pop("dependentSchemas", {})}
    if deps:
        out["dependencies"] = {**out.get("dependencies", {}), **deps}
    return out


def generation_schema(schema: Any, registry: dict[str, Any], validator: Any) -> Any:
    """The copy of `schema` that hypothesis-jsonschema reads."""
    out = _inline(copy.deepcopy(schema), registry)
    if not isinstance(out, dict):
        return out
    if validator.META_SCHEMA["$schema"] in (Draft201909Validator.META_SCHEMA["$schema"],
                                            Draft202012Validator.META_SCHEMA["$schema"]):
        return _draft7_terms(out)
    out["$schema"] = validator.META_SCHEMA["$schema"]
    return out


class _More:
    """hypothesis-jsonschema 0.23 drives `conjecture.utils.many` through `more()`, which newer
    hypothesis releases replaced by `with many(...) as e: for _ in e:`; this adapter offers
    `more()` over the new protocol."""

    def __init__(self, *args: Any, **kwargs: Any):
        from hypothesis.internal.conjecture.utils import many
        self._many = many(*args, **kwargs).__enter__()
        self._steps = iter(self._many)

    def more(self) -> bool:
        if next(self._steps, self) is self:
            self._many.__exit__(None)
            return False
        return True

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


def _from_schema() -> Any:
    """hypothesis-jsonschema's `from_schema`, with `_More` where its object strategy needs it."""
    from hypothesis.internal.conjecture import utils
    from hypothesis_jsonschema import _from_schema, from_schema
    if not hasattr(utils.many, "more"):
        _from_schema.cu = SimpleNamespace(many=_More)
    return from_schema


_GENERATION_READY = False


def _prepare_generation(from_schema: Any) -> None:
    """Draw one string untimed first: a process's first generation builds hypothesis's table of
    the characters UTF-8 can encode (~10 s of CPU, kept in memory only) and scans the loaded local
    modules for constants; under the time limit that work would be cut in every process, so no
    instance would ever be made."""
    global _GENERATION_READY
    if not _GENERATION_READY:
        from hypothesis import find
        find(from_schema({"type": "string"}), lambda _: True)
        _GENERATION_READY = True


def valid_instances(schema: Any, validator: Any, registry: dict[str, Any], count: int, *,
                    seed: int | None, seconds: float) -> tuple[list[Any], str]:
    """Up to `count` distinct instances that `validator` accepts, and why there are none (or
    fewer) when generation failed. `seed=None` derandomises hypothesis."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis import seed as hypothesis_seed
    from_schema = _from_schema()

    found: dict[str, Any] = {}
    why = ""
    _prepare_generation(from_schema)

    @settings(max_examples=count * 3, database=None, deadline=None, derandomize=seed is None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    def collect(value: Any) -> None:
        if is_valid(validator, value):
            found.setdefault(json.dumps(value, sort_keys=True), value)
        if len(found) >= count:
            raise _Enough

    try:
        with time_limit(seconds), suppress(_Enough):  # _Enough: the instances wanted are found
            strategy = from_schema(generation_schema(schema, registry, validator),
                                   custom_formats={"uuid": st.uuids().map(str)})
            test = given(strategy)(collect)
            if seed is not None:
                test = hypothesis_seed(seed)(test)
            test()
    except TimeUp:
        why = f"time limit ({seconds:g} s)"
    except Exception as exc:  # noqa: BLE001 - hypothesis-jsonschema refuses many schemas
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]
    if not found and not why:
        why = "no generated instance is valid"
    return list(found.values()), why


# ---------------------------------------------------------------------- invalid instances
def _places(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _places(item, path + (i,))


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return value[:head] + [_replaced(value[head], rest, new)] + value[head + 1:]


def _json_type(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _variants(node: Any) -> list[Any]:
    """One-place changes of `node`: another type, a bound broken, a member dropped or added."""
    out = [s for s in _SWAPS if _json_type(s) != _json_type(node)]
    if isinstance(node, str):
        out += [node + "!", "", node[:-1], "Z" + node, node + "x" * 300]
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out += [node + 1, node - 1, -node - 1, node + 0.5, node * 1000 + 7, 10 ** 15, -10 ** 15]
    elif isinstance(node, list):
        out += [node[:-1], node[1:], node + node[:1], node + [None]]
    elif isinstance(node, dict):
        out += [{k: v for k, v in node.items() if k != key} for key in node]
        out.append({**node, "formwork_extra": 1})
    return out


def invalid_instances(valid: list[Any], validator: Any, rng: random.Random, per_instance: int,
                      tries: int = 80) -> list[Any]:
    """Up to `per_instance` mutants of each valid instance that `validator` rejects."""
    found: dict[str, Any] = {}
    for value in valid:
        places = list(_places(value))[:MAX_PLACES]
        candidates = [(path, new) for path, node in places for new in _variants(node)]
        rng.shuffle(candidates)
        kept = 0
        for path, new in candidates[:tries]:
            mutant = _replaced(value, path, new)
            key = json.dumps(mutant, sort_keys=True)
            if key not in found and is_valid(validator, mutant) is False:
                found[key] = mutant
                kept += 1
                if kept == per_instance:
                    break
    return list(found.values())

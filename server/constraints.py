"""Output constraints from `response_format` / `structured_outputs`, checked before admission.

The request's constraint becomes `SamplingParams.structured_outputs` (one of `json`, `regex`,
`choice`, `grammar`, `json_object`, as vLLM names them, or formwork's `tags`). `ConstraintValidator` compiles it once up
front with the engine's grammar backend, so an invalid or unsupported schema/regex/grammar is a
synchronous 400 that names the keyword and JSON pointer, and the compiled grammar is cached for the
engine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from formwork.core.metrics import LATENCY_BUCKETS, Histogram
from formwork.core.sampling_params import STRUCTURED_OUTPUT_CONSTRAINTS, STRUCTURED_OUTPUT_OPTIONS
from formwork.grammar import GrammarError
from formwork.grammar.budget import CompileBudget
from formwork.grammar.json_schema import SchemaLoweringError
from formwork.grammar.tags import TagSpecError
from formwork.server.errors import InvalidConstraintError, InvalidRequestError, InvalidTypeError
from formwork.server.fields import Fields

RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema")


def parse_constraint(f: Fields, max_schema_bytes: int) -> dict[str, Any] | None:
    """The request's structured-output spec, or None; at most one constraint may be given."""
    from_format = _from_response_format(f.nested("response_format"))
    from_extension = _from_structured_outputs(f.object("structured_outputs"))
    if from_format is not None and from_extension is not None:
        raise InvalidRequestError("give at most one constraint: 'response_format' or 'structured_outputs', "
                                  "not both", param="structured_outputs", code="multiple_constraints")
    spec = from_format if from_format is not None else from_extension
    if spec is not None:
        _check_size(spec, max_schema_bytes)
    return spec


def _from_response_format(fmt: Fields | None) -> dict[str, Any] | None:
    if fmt is None:
        return None
    kind = fmt.choice("type", RESPONSE_FORMAT_TYPES)
    if kind is None:
        raise InvalidRequestError("'response_format.type' is required", param="response_format.type",
                                  code="missing_required_parameter")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"json_object": True}
    spec = fmt.nested("json_schema")
    if spec is None:
        raise InvalidRequestError("'response_format.json_schema' is required when type is 'json_schema'",
                                  param="response_format.json_schema", code="missing_required_parameter")
    spec.str("name")
    spec.bool("strict")
    schema = spec.required("schema")
    if not isinstance(schema, (dict, bool)):
        raise InvalidTypeError("'response_format.json_schema.schema' must be an object or a boolean",
                               param="response_format.json_schema.schema")
    return {"json": schema}


def _from_structured_outputs(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    unknown = sorted(set(spec) - set(STRUCTURED_OUTPUT_CONSTRAINTS) - set(STRUCTURED_OUTPUT_OPTIONS))
    if unknown:
        raise InvalidRequestError(f"'structured_outputs' has unknown keys {unknown}; constraints are "
                                  f"{list(STRUCTURED_OUTPUT_CONSTRAINTS)}", param=f"structured_outputs.{unknown[0]}")
    given = [k for k in STRUCTURED_OUTPUT_CONSTRAINTS if spec.get(k) not in (None, False)]
    if len(given) != 1:
        raise InvalidRequestError(f"'structured_outputs' needs exactly one of {list(STRUCTURED_OUTPUT_CONSTRAINTS)}, "
                                  f"got {given or 'none'}", param="structured_outputs",
                                  code="multiple_constraints" if given else "missing_required_parameter")
    kind, value = given[0], spec[given[0]]
    expected = {"json": (dict, bool, str), "regex": str, "grammar": str, "choice": list, "json_object": bool,
                "tags": dict}[kind]
    if not isinstance(value, expected) or (kind == "choice" and not all(isinstance(c, str) for c in value)):
        raise InvalidTypeError(f"'structured_outputs.{kind}' has the wrong type ({type(value).__name__})",
                               param=f"structured_outputs.{kind}")
    if kind == "json" and isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidConstraintError(f"'structured_outputs.json' is not valid JSON: {exc}",
                                         param="structured_outputs.json") from None
    if kind == "choice" and not value:
        raise InvalidConstraintError("'structured_outputs.choice' must not be empty", param="structured_outputs.choice")
    return {**{k: v for k, v in spec.items() if k in STRUCTURED_OUTPUT_OPTIONS}, kind: value}


def _check_size(spec: dict[str, Any], max_schema_bytes: int) -> None:
    size = len(json.dumps(spec, separators=(",", ":")).encode())
    if size > max_schema_bytes:
        raise InvalidConstraintError(f"the constraint is {size} bytes; the limit is {max_schema_bytes} bytes",
                                     param=_constraint_param(spec), code="schema_too_large")


def _constraint_param(spec: dict[str, Any]) -> str:
    kind = next(k for k in STRUCTURED_OUTPUT_CONSTRAINTS if k in spec)
    return f"structured_outputs.{kind}"


class ConstraintValidator:
    """Rejects constraints that cannot be enforced before admission.

    `compile` is the engine's own compile function (its grammar backend), so the check warms the
    compiled-grammar cache and the engine's compile of the admitted request is a cache hit."""

    def __init__(self, compile: Callable[[dict[str, Any], CompileBudget], object]):
        self.compile = compile
        self.check_seconds = Histogram(LATENCY_BUCKETS)  # wall time of each check, compile included
        self._lock = threading.Lock()

    def check(self, spec: dict[str, Any], param: str, budget: CompileBudget) -> list[str]:
        """Raise `InvalidConstraintError` (param = the request field) if `spec` cannot be enforced
        within `budget`; else return the compiled grammar's warnings (unknown formats, ignored
        keywords)."""
        start = time.perf_counter()
        try:
            return list(getattr(self.compile(spec, budget), "warnings", None) or [])
        except SchemaLoweringError as exc:
            where = exc.pointer or "#"
            reason = exc.reason.removeprefix(f"at {where}: ")
            raise InvalidConstraintError(f"{param}: {exc.keyword} at {where}: {reason}", param=param) from None
        except TagSpecError as exc:
            raise InvalidConstraintError(f"{param}.{exc}", param=f"{param}.{exc.field}") from None
        except GrammarError as exc:
            raise InvalidConstraintError(f"{param}: {exc}", param=param) from None
        finally:
            with self._lock:
                self.check_seconds.observe(time.perf_counter() - start)

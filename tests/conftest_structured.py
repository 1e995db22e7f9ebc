"""Helpers for the structured-output engine tests: a deterministic set of JSON Schemas, a request mix
to run through an engine, and checks that an engine output is valid (finished with `stop`) or a valid
prefix (cut by `length`)."""

from __future__ import annotations

import json
import random
from concurrent.futures import wait
import re

import jsonschema
import lark

from formwork.core.engine import LLMEngine
from formwork.core.outputs import CompletionOutput
from formwork.core.sampling_params import SamplingParams
from formwork.grammar import CompiledGrammar

_NAMES = ["id", "name", "ok", "kind", "count", "tags", "score", "city", "level", "note", "user", "when"]


def _leaf(rng: random.Random) -> dict:
    choice = rng.randrange(9)
    if choice == 0:
        return {"type": "boolean"}
    if choice == 1:
        return {"type": "integer", "minimum": rng.randrange(-5, 5), "maximum": rng.randrange(10, 999)}
    if choice == 2:
        return {"enum": rng.sample(["red", "green", "blue", "cyan", "black", 1, 2, None, True], rng.randrange(2, 5))}
    if choice == 3:
        return {"type": "string", "maxLength": rng.randrange(1, 8)}
    if choice == 4:
        return {"type": "string", "pattern": rng.choice([r"^[a-z]{2,4}$", r"^\d{3}-\d{2}$", r"^(ab|cd)+$"])}
    if choice == 5:
        return {"const": rng.choice(["v1", 7, False, "fixed value"])}
    if choice == 6:
        return {"type": "number", "minimum": 0, "maximum": 100}
    if choice == 7:
        return {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                "minItems": rng.randrange(0, 2), "maxItems": rng.randrange(2, 4)}
    return {"type": "string", "format": rng.choice(["date", "uuid", "email"])}


def _object(rng: random.Random, depth: int) -> dict:
    names = rng.sample(_NAMES, rng.randrange(1, 4))
    props = {}
    for name in names:
        props[name] = _object(rng, depth - 1) if depth > 0 and rng.random() < 0.25 else _leaf(rng)
    required = [n for n in names if rng.random() < 0.7]
    schema = {"type": "object", "properties": props, "required": required}
    if rng.random() < 0.8:
        schema["additionalProperties"] = False
    return schema


def make_schemas(count: int = 50, seed: int = 7) -> list[dict]:
    """`count` distinct small JSON Schemas: objects (nested, optional members), arrays, enums, consts,
    patterns, formats, numeric ranges, and a few non-object roots."""
    rng = random.Random(seed)
    schemas: list[dict] = []
    seen: set[str] = set()
    while len(schemas) < count:
        k = len(schemas)
        if k % 10 == 9:
            schema = {"type": "array", "items": _leaf(rng), "maxItems": 3}
        elif k % 10 == 4:
            schema = _leaf(rng)
        else:
            schema = _object(rng, depth=1)
        text = json.dumps(schema, sort_keys=True)
        if text not in seen:
            seen.add(text)
            schemas.append(schema)
    return schemas


REGEXES = [r"\d{3}-\d{4}", r"(yes|no)!", r"[a-z]{3,6}@[a-z]{2,5}\.(com|org)", r"#[0-9a-f]{6}", r"-?\d+(\.\d{1,2})?"]
CHOICES = [["alpha", "beta", "gamma"], ["yes", "no"], ["Paris", "London", "Berlin", "Rome"]]
EBNF = r"""
start: list
list: "[" item ("," item)* "]"
item: NUMBER | WORD | list
NUMBER: /[0-9]{1,3}/
WORD: /"[a-z]{1,6}"/
"""


def check_json_output(completion: CompletionOutput, text: bytes, schema: dict, grammar: CompiledGrammar) -> None:
    """A `stop` output validates against `schema`; a `length` output is a prefix the grammar accepts."""
    if completion.finish_reason == "stop":
        jsonschema.validate(json.loads(text.decode("utf-8")), schema)
    else:
        assert completion.finish_reason == "length", completion
        assert grammar.matcher().accept_string(text), f"not a valid prefix: {text!r}"


def check_regex_output(completion: CompletionOutput, text: bytes, pattern: str, grammar: CompiledGrammar) -> None:
    if completion.finish_reason == "stop":
        assert re.fullmatch(pattern, text.decode("utf-8")), (pattern, text)
    else:
        assert completion.finish_reason == "length", completion
        assert grammar.matcher().accept_string(text), f"not a valid prefix of /{pattern}/: {text!r}"


def run_requests(engine: LLMEngine, requests: dict[str, tuple[str, SamplingParams]],
                 compiled_first: bool = False) -> dict:
    """Run `requests` to the end; with `compiled_first`, step only once every grammar has compiled, so all
    requests compete for the KV pool at once (else when each starts depends on its compile's speed)."""
    for request_id, (prompt, params) in requests.items():
        engine.add_request(request_id, prompt, params)
    if compiled_first:
        wait([r.structured_output.future for r in engine.requests.values() if r.structured_output is not None])
    done = {}
    while engine.has_unfinished_requests():
        for output in engine.step():
            if output.finished:
                done[output.request_id] = output
    return done


def make_requests(temperature: float | None, max_tokens: int, schemas: list[dict] | None = None, seed: int = 0) -> dict:
    """50 schemas (with an unconstrained neighbour every 8), the regexes, an EBNF grammar and the choices;
    temperature None alternates 1.0 and greedy."""
    reqs = {}
    for i, schema in enumerate(schemas if schemas is not None else make_schemas(50)):
        t = temperature if temperature is not None else (0.0 if i % 2 else 1.0)
        reqs[f"json-{i}"] = ("Give me JSON:", SamplingParams(temperature=t, seed=seed + i, max_tokens=max_tokens,
                                                             structured_outputs={"json": schema}))
        if i % 8 == 0:  # unconstrained neighbours in the same batches
            reqs[f"free-{i}"] = ("Hello", SamplingParams(temperature=t, seed=i, max_tokens=max_tokens))
    for i, pattern in enumerate(REGEXES):
        reqs[f"regex-{i}"] = ("Code:", SamplingParams(temperature=temperature or 0.0, seed=seed + i,
                                                      max_tokens=max_tokens, structured_outputs={"regex": pattern}))
    reqs["ebnf"] = ("List:", SamplingParams(temperature=temperature or 0.0, seed=seed, max_tokens=max_tokens,
                                            structured_outputs={"grammar": EBNF}))
    for i, options in enumerate(CHOICES):
        reqs[f"choice-{i}"] = ("Pick:", SamplingParams(temperature=temperature or 0.0, seed=seed + i,
                                                       max_tokens=max_tokens, structured_outputs={"choice": options}))
    return reqs


def check_outputs(engine: LLMEngine, done: dict, requests: dict) -> dict[str, int]:
    """Validate every output; returns counts of finish reasons of the constrained ones."""
    backend = engine.structured_output.backend
    vocab, compiler = backend.vocab, backend.compiler
    reasons: dict[str, int] = {}
    for request_id, (_, params) in requests.items():
        out = done[request_id]
        assert out.error is None, (request_id, out.error)
        completion = out.outputs[0]
        assert completion.finish_reason in ("stop", "length")
        spec = params.structured_outputs
        if spec is None:
            continue
        reasons[completion.finish_reason] = reasons.get(completion.finish_reason, 0) + 1
        text = vocab.decode(completion.token_ids)
        if "json" in spec:
            grammar = backend.compile(spec, 60.0)
            check_json_output(completion, text, spec["json"], grammar)
        elif "regex" in spec:
            check_regex_output(completion, text, spec["regex"], compiler.compile_regex(spec["regex"]))
        elif "grammar" in spec:
            if completion.finish_reason == "stop":
                lark.Lark(spec["grammar"], start="start").parse(text.decode("utf-8"))
            else:
                assert compiler.compile_ebnf(spec["grammar"]).matcher().accept_string(text)
        else:
            if completion.finish_reason == "stop":
                assert text.decode() in spec["choice"]
            else:
                assert compiler.compile_choice(spec["choice"]).matcher().accept_string(text)
    return reasons

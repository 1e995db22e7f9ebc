"""Real schemas whose grammar nests past Python's default recursion limit compile exactly under the
default budgets (issue 21; vendored in `data/npm/`, see its SOURCE.md).  Both were refused with
"the schema's grammar nests too deeply to compile":

- ajv's json-schema-secure.json: its `$ref` cycles lower to a context-free grammar, whose
  productions were made by a walk recursing through rules, helpers and shared marks;
- Biome's configuration schema: its lowered IR nests ~1,850 deep (long member lists), and the C
  NFA builder counted its depth against Python's recursion limit."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import matcher_accepts  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

NPM = Path(__file__).parent / "data" / "npm"

AJV_VALID = [{}, True, {"type": "string", "maxLength": 5, "pattern": "a"}, {"items": [{"type": "integer"}]},
             {"patternProperties": {"^a": {}}, "propertyNames": {"maxLength": 3}},
             {"properties": {"a": {"format": "email", "maxLength": 9}}}, {"items": [{"pattern": "x"}]}]
AJV_INVALID = [{"pattern": "a"}, {"format": "email"}, {"patternProperties": {"a": {}}},
               {"uniqueItems": True, "items": {"type": "object"}}, {"properties": {"a": {"pattern": "x"}}}]
BIOME_VALID = [{}, {"formatter": {"enabled": True, "indentWidth": 2}}, {"linter": {"rules": {"recommended": True}}},
               {"files": {"includes": ["src/**"]}}, {"linter": {"rules": {"style": {"noNonNullAssertion": "off"}}}},
               {"javascript": {"formatter": {"quoteStyle": "single"}}}]
BIOME_INVALID = [{"formatter": {"indentWidth": "two"}}, {"unknownKey": 1}, {"linter": {"enabled": "yes"}},
                 {"javascript": {"formatter": {"quoteStyle": "backtick"}}},
                 {"linter": {"rules": {"style": {"noNonNullAssertion": "loud"}}}}]
CASES = {
    "ajv json-schema-secure": ("json-schema-secure.json", jsonschema.Draft7Validator, AJV_VALID, AJV_INVALID),
    "biome configuration": ("biome.configuration_schema.json", jsonschema.Draft202012Validator, BIOME_VALID,
                            BIOME_INVALID),
}


def sampled_document(grammar, rng: random.Random, max_steps: int = 300) -> bytes | None:
    """A document drawn byte by byte from the masks (stopping as soon as it may, half the time),
    or None if it did not end within `max_steps`."""
    m = grammar.matcher()
    stop = byte_vocab().stop_token_ids[0]
    out = bytearray()
    for _ in range(max_steps):
        bits = np.unpackbits(m.next_token_mask().view(np.uint8), bitorder="little")[:stop + 1]
        allowed = [int(t) for t in np.flatnonzero(bits)]
        assert allowed, f"dead end after {bytes(out)!r}"
        if stop in allowed and (rng.random() < 0.5 or len(allowed) == 1):
            return bytes(out)
        token = rng.choice([t for t in allowed if t != stop])
        assert m.accept_token(token)
        out.append(token)
    return None


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_deeply_nesting_real_schema_compiles_exactly(case: str) -> None:
    name, validator_class, valid, invalid = CASES[case]
    schema = json.loads((NPM / name).read_text())
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    assert sys.getrecursionlimit() <= 1100  # Python's default (pytest leaves it): no raised limit helps
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())  # the defaults
    grammar = compile_json_schema(schema, byte_vocab(), compiler=compiler)
    assert [validator.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    assert [matcher_accepts(grammar, x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    rng = random.Random(21)
    documents = [d for d in (sampled_document(grammar, rng) for _ in range(12)) if d is not None]
    assert documents
    for document in documents:  # whatever the masks let through is valid
        assert validator.is_valid(json.loads(document)), document

"""The JSON Schema benchmark set (benchmarks/schemas): at least 100 distinct schemas, valid instances."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).resolve().parent.parent / "benchmarks" / "schemas"


def _cases() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(SCHEMAS.glob("*.json"))]


def test_at_least_100_distinct_schemas():
    distinct = {json.dumps(case["schema"], sort_keys=True) for case in _cases()}
    assert len(distinct) >= 100
    assert len(distinct) == len(_cases())  # no case repeats another's schema


def test_every_instance_is_valid():
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for case in _cases():
        assert case["instances"]
        for instance in case["instances"]:
            jsonschema.validate(instance, case["schema"], format_checker=checker)

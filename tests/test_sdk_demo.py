"""The typed SDK on the embedded demo model: `formwork generate` with no --model and a shipped schema."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from formwork.cli import main

PERSON_SCHEMA = Path(__file__).resolve().parent.parent / "examples" / "person.json"


def test_generate_with_the_demo_model_prints_a_valid_document(capsys):
    code = main(["generate", "--schema", str(PERSON_SCHEMA), "--temperature", "0", "--max-tokens", "200",
                 "Give me a JSON object for a person."])
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    jsonschema.validate(document, json.loads(PERSON_SCHEMA.read_text()))
    assert list(document)[:3] == ["id", "name", "email"]  # the schema's property order

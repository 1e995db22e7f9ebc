"""Rebuild the vendored function-calling parameter schemas from the `bfcl-eval` wheel.

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/dl
    .venv/bin/python benchmarks/corpora/bfcl/build.py /tmp/dl/bfcl_eval-2026.3.23-py3-none-any.whl

The Berkeley Function Calling Leaderboard's data files (`bfcl_eval/data/BFCL_v4_<set>.json`, JSON
lines) give each question's functions as `{name, description, parameters}`, the parameters in
Gorilla's type names. Each `parameters` is converted to the JSON Schema that BFCL sends to
OpenAI-style tool APIs (`type_mappings.GORILLA_TO_OPENAPI` and `convert_to_tool` in the wheel,
rewritten here): `dict` -> `object`, `float` -> `number` with `format: float` and a sentence added
to its description, `tuple`/`list` -> `array`, `any` -> `string`, a missing or unknown type ->
`string`. BFCL converts the first levels of `items` only; here every nested `properties`, `items`
and `additionalProperties` is converted, so no Gorilla name is left. Distinct schemas (canonical
JSON) of the chosen sets are kept, at most `--sample` of them, drawn with a fixed seed.
"""
from __future__ import annotations

import argparse
import json
import random
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SETS = ["live_simple", "live_multiple", "simple_python", "multiple", "parallel"]
JSON_TYPES = {  # Gorilla's type names (Python, Java, JavaScript) -> JSON Schema's
    "integer": "integer", "byte": "integer", "short": "integer", "long": "integer",
    "Bigint": "integer", "number": "number", "float": "number", "double": "number",
    "string": "string", "String": "string", "char": "string", "any": "string", "Any": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "tuple": "array",
    "ArrayList": "array", "Array": "array", "Queue": "array", "Stack": "array", "dict": "object",
    "object": "object", "HashMap": "object", "Hashtable": "object",
}


def converted(schema: dict[str, Any]) -> dict[str, Any]:
    """One Gorilla parameter schema in JSON Schema's type names, its nested schemas too."""
    out = dict(schema)
    gorilla = schema.get("type")
    out["type"] = JSON_TYPES.get(gorilla, "string") if isinstance(gorilla, str) else "string"
    if gorilla == "float":  # BFCL marks floats for OpenAPI-style APIs
        out["format"] = "float"
        if isinstance(out.get("description"), str):
            out["description"] += " This is a float type value."
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: converted(v) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = converted(schema[key])
    return out


def distinct_schemas(wheel: zipfile.ZipFile) -> dict[str, tuple[str, dict[str, Any]]]:
    """Canonical JSON -> (first `<entry id>/<function name>` using it, the converted schema)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in SETS:
        for line in wheel.read(f"bfcl_eval/data/BFCL_v4_{name}.json").decode().splitlines():
            entry = json.loads(line)
            for function in entry["function"]:
                schema = converted(function["parameters"])
                schema["type"] = "object"  # as `convert_to_tool` sets the top level
                key = json.dumps(schema, sort_keys=True, ensure_ascii=False)
                found.setdefault(key, (f"{entry['id']}/{function['name']}", schema))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="bfcl_eval-2026.3.23-py3-none-any.whl")
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "schemas.jsonl")
    args = parser.parse_args(argv)
    with zipfile.ZipFile(args.wheel) as wheel:
        found = distinct_schemas(wheel)
    keys = sorted(found)
    chosen = sorted(random.Random(args.seed).sample(keys, min(args.sample, len(keys))),
                    key=lambda k: found[k][0])
    lines = [json.dumps({"name": found[k][0], "schema": found[k][1]}, ensure_ascii=False)
             for k in chosen]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(found)} distinct parameter schemas in {', '.join(SETS)}; wrote {len(lines)} to {args.out}")


if __name__ == "__main__":
    main()

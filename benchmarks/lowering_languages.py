"""The language of each generated schema's lowering, as a digest of its minimal byte DFA.

`dfa.minimize` numbers states canonically (equal languages give equal tables), so the digest of the
materialized minimal DFA's table and accepting states names the language, whatever the IR's shape
(share marks, factoring).  Run it under two builds and compare: an IR change that keeps every
language (issue 21's plain member lists, say) prints the same digests.

    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/lowering_languages.py --out /tmp/a.json
    .venv/bin/python benchmarks/lowering_languages.py --out /tmp/b.json --compare /tmp/a.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def language_digest(schema: object) -> str:
    """sha256 of the minimal DFA of `schema`'s lowering (its table and accepting states)."""
    from formwork.grammar.automaton import compile_dfa
    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.json_schema import lower_json_schema

    budget = CompileBudget(max_seconds=600.0).start()
    dfa = compile_dfa(lower_json_schema(schema).node, budget)
    dfa = dfa.materialize(budget) if dfa.lazy else dfa
    digest = hashlib.sha256(dfa.table.astype("int32").tobytes())
    digest.update(dfa.accepting.astype(bool).tobytes())
    return f"{dfa.num_states}:{digest.hexdigest()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="write {schema: digest} here")
    parser.add_argument("--compare", default=None, help="another build's --out to compare with")
    args = parser.parse_args()
    out = {}
    for path in sorted((HERE / "schemas").glob("*.json")):
        try:
            out[path.stem] = language_digest(json.loads(path.read_text())["schema"])
        except Exception as exc:  # noqa: BLE001 - a schema that does not compile is named, not hidden
            out[path.stem] = f"error: {type(exc).__name__}: {exc}"
    Path(args.out).write_text(json.dumps(out, indent=1))
    errors = sum(v.startswith("error") for v in out.values())
    print(f"{len(out)} schemas, {errors} errors")
    if args.compare:
        other = json.loads(Path(args.compare).read_text())
        differ = sorted(k for k in out.keys() | other.keys() if out.get(k) != other.get(k))
        print(f"same language: {len(out) - len(differ)}, differ: {len(differ)} {differ[:10]}")


if __name__ == "__main__":
    main()

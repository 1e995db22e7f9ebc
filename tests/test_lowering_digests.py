"""Lowering the 139 benchmark schemas gives the same IR as recorded (`data/lowering_digests.json`).

The digest covers each node's type and fields and whether it is marked as a lexeme (open-ended or
not), so a faster lowering that changed the language, or the lexemes the automaton shares, fails.
Node sharing (identity) is not part of it.  The digests are taken in a fresh interpreter: lexeme
marks are process-wide, and other tests mark nodes of their own.  Regenerate with
``python -m tests.test_lowering_digests --write`` only for an intended change of the language.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from formwork.grammar.ir import Grammar, Node, children
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.lexemes import is_lexeme, is_open_ended

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"
DIGESTS = Path(__file__).resolve().parent / "data" / "lowering_digests.json"
_FIELDS = ("value", "ranges", "min", "max", "name")


def ir_text(root: Node | Grammar) -> str:
    """A canonical text of `root`: one line per distinct node (children by line number, each node
    after its children, in depth-first order; an explicit stack, as IRs may nest past Python's)."""
    lines: list[str] = []
    index: dict[Node, int] = {}

    def visit(top: Node) -> int:
        stack = [top]
        while stack:
            node = stack[-1]
            if node in index:
                stack.pop()
                continue
            pending = [c for c in children(node) if c not in index]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            fields = [repr(getattr(node, f)) for f in _FIELDS if hasattr(node, f)]
            mark = "L+" if is_open_ended(node) else "L" if is_lexeme(node) else ""
            kids = [index[c] for c in children(node)]
            lines.append(f"{type(node).__name__}{mark} {' '.join(fields)} {kids}")
            index[node] = len(lines) - 1
        return index[top]

    if isinstance(root, Grammar):
        for name in sorted(root.rules):
            lines.append(f"rule {name!r} -> {visit(root.rules[name])} start={root.start!r}")
    else:
        visit(root)
    return "\n".join(lines)


def digests() -> dict[str, str]:
    out = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text())["schema"]
        text = ir_text(lower_json_schema(schema).node)
        out[path.stem] = hashlib.sha256(text.encode()).hexdigest()
    return out


def test_benchmark_schemas_lower_to_the_recorded_ir():
    recorded = json.loads(DIGESTS.read_text())
    out = subprocess.run([sys.executable, "-m", "tests.test_lowering_digests"], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    got = json.loads(out.stdout)
    assert len(recorded) == len(got) == 139
    assert {k for k in got if got[k] != recorded[k]} == set()


def test_the_digest_sees_a_changed_node():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 9}}}
    other = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 8}}}
    assert ir_text(lower_json_schema(schema).node) != ir_text(lower_json_schema(other).node)


if __name__ == "__main__":
    text = json.dumps(digests(), indent=1, sort_keys=True) + "\n"
    if sys.argv[1:] == ["--write"]:
        DIGESTS.write_text(text)
    else:
        print(text, end="")

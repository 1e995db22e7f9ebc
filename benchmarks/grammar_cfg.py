"""Context-free benchmark: formwork vs xgrammar and llguidance on grammars and a recursive schema.

Cases: the ECMA-404 JSON grammar (Lark for formwork and llguidance, the same language in GBNF for
xgrammar, which has no Lark front end), a recursive JSON Schema (a tree through `$ref`), and a SQL
SELECT subset (Lark / GBNF).  Per case: time to first mask (compile + first fill, compiled-grammar
caches off) and the per-token mask time while replaying instances tokenized with the DeepSeek 129k
tokenizer, then the stop token.

    .venv/bin/python benchmarks/grammar_cfg.py [--engines formwork,xgrammar,llguidance] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grammar import LLGuidanceSpaced  # noqa: E402 - llguidance with json.dumps separators
from grammar_harness import (  # noqa: E402
    Case, FormworkEngine, Tokenized, XGrammarEngine, report, run_cases, summary_rows,
)

JSON_LARK = r"""
start: value
value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" [member ("," member)*] "}"
member: STRING ":" value
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
WS: /[ \t\n\r]+/
%ignore WS
"""
JSON_GBNF = r"""
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
"""
SQL_LARK = r"""
start: "SELECT " columns " FROM " NAME where? order? ";"
columns: "*" | column (", " column)*
column: expr (" AS " NAME)?
where: " WHERE " condition
condition: condition " OR " conj | conj
conj: conj " AND " comparison | comparison
comparison: expr OP expr | "(" condition ")" | "NOT " comparison
expr: expr " + " term | term
term: NAME | NUMBER | STRING | NAME "(" expr ")"
order: " ORDER BY " expr
OP: " = " | " < " | " > " | " <> "
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
STRING: /'[^']*'/
"""
SQL_GBNF = r"""
root       ::= "SELECT " columns " FROM " name wherepart? orderpart? ";"
columns    ::= "*" | column (", " column)*
column     ::= expr (" AS " name)?
wherepart  ::= " WHERE " condition
orderpart  ::= " ORDER BY " expr
condition  ::= condition " OR " conj | conj
conj       ::= conj " AND " comparison | comparison
comparison ::= expr op expr | "(" condition ")" | "NOT " comparison
expr       ::= expr " + " term | term
term       ::= name | number | string | name "(" expr ")"
op         ::= " = " | " < " | " > " | " <> "
name       ::= [a-z_] [a-z0-9_]*
number     ::= [0-9]+
string     ::= "'" [^']* "'"
"""
TREE_SCHEMA = {"$defs": {"node": {"type": "object", "properties": {
    "name": {"type": "string"}, "size": {"type": "integer"},
    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["name", "children"], "additionalProperties": False}}, "$ref": "#/$defs/node"}


def _tree(depth: int, width: int, prefix: str = "n") -> dict:
    return {"name": f"{prefix}{depth}", "size": depth * 7,
            "children": [_tree(depth - 1, width, f"{prefix}{i}") for i in range(width)] if depth else []}


JSON_DOCS = [
    json.dumps({"id": 12, "user": {"name": "Ada", "roles": ["admin", "dev"], "active": True},
                "scores": [1.5, -2, 3e4], "meta": None}),
    json.dumps([{"k": i, "v": [i, {"deep": [[i]]}]} for i in range(6)], indent=2),
    json.dumps({"title": "Structured generation", "tags": ["cfg", "earley", "masks"],
                "nested": {"a": {"b": {"c": {"d": [1, 2, 3]}}}}}),
]
SQL_QUERIES = [
    "SELECT * FROM users;",
    "SELECT name, count(id) AS n FROM orders WHERE total > 100 AND (status = 'open' OR NOT flag = 1) ORDER BY n;",
    "SELECT a + b AS s, c FROM t WHERE a < 3 OR b <> 'x' AND c > 2;",
]
CASES = [
    Case("json-grammar", "cfg", {"lark": JSON_LARK, "gbnf": JSON_GBNF}, JSON_DOCS),
    Case("recursive-schema", "json_schema", TREE_SCHEMA,
         [json.dumps(_tree(2, 2)), json.dumps(_tree(3, 1)), json.dumps(_tree(1, 3))]),
    Case("sql-grammar", "cfg", {"lark": SQL_LARK, "gbnf": SQL_GBNF}, SQL_QUERIES),
]


class FormworkCfg(FormworkEngine):
    def __init__(self, tok: Tokenized):
        super().__init__(tok)
        # imports lark and the JSON Schema front end outside the timings, as in a running server
        self.compiler.compile_ebnf('start: "warm-up"')
        from formwork.grammar import compile_json_schema

        compile_json_schema({"type": "boolean"}, self.vocab, compiler=self.compiler)

    def compile(self, case: Case) -> Any:
        if case.kind == "cfg":
            return self.compiler.compile_ebnf(case.spec["lark"])
        if case.kind == "json_schema":  # exact any-JSON where a schema leaves values open
            from formwork.grammar import compile_json_schema

            return compile_json_schema(case.spec, self.vocab, compiler=self.compiler)
        return super().compile(case)


class XGrammarCfg(XGrammarEngine):
    def compile(self, case: Case) -> Any:
        if case.kind == "cfg":
            return self.compiler.compile_grammar(self.xgr.Grammar.from_ebnf(case.spec["gbnf"]))
        return super().compile(case)


class LLGuidanceCfg(LLGuidanceSpaced):
    def compile(self, case: Case) -> Any:
        if case.kind == "cfg":
            return super().compile(Case(case.name, "lark", case.spec["lark"], case.instances))
        return super().compile(case)


ENGINES = {"formwork": FormworkCfg, "xgrammar": XGrammarCfg, "llguidance": LLGuidanceCfg}


def targets(results) -> list[str]:
    rows = {r["engine"]: r for r in summary_rows(results)}
    fw, llg, xg = rows.get("formwork"), rows.get("llguidance"), rows.get("xgrammar")
    if not (fw and llg and xg):
        return []
    faster = min(llg["mask_us"]["p50"], xg["mask_us"]["p50"])
    return ["", "## Targets", "",
            f"- mask p50 within 2x of the faster peer ({faster:.1f} µs): formwork {fw['mask_us']['p50']:.1f} µs "
            f"({fw['mask_us']['p50'] / faster:.2f}x)",
            f"- mask p99 <= llguidance's ({llg['mask_us']['p99']:.1f} µs): formwork {fw['mask_us']['p99']:.1f} µs",
            f"- compile (TTFM) p50 < 20 ms: formwork {fw['ttfm_ms']['p50']:.2f} ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="formwork,xgrammar,llguidance")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "grammar_cfg.md"))
    args = parser.parse_args()
    tok = Tokenized()
    engines = []
    for name in args.engines.split(","):
        try:
            engines.append(ENGINES[name](tok))
        except ImportError as exc:
            print(f"[grammar_cfg] {name} not available: {exc}")
    results = run_cases(engines, CASES, tok)
    notes = ("Context-free cases over the DeepSeek 129k tokenizer. formwork and llguidance read the Lark grammars, "
             "xgrammar the same languages in GBNF (it has no Lark front end); the recursive schema goes through "
             "each engine's JSON Schema compiler. TTFM = compile + first mask, compiled-grammar caches off. "
             "formwork's CFG masks are cached per parser configuration of one compiled grammar; below them, "
             "the per-terminal-state tables (inside mask + exits) and the continuations from exits into a next "
             "terminal are keyed by the terminal's language and shared across grammars and compilations, but each "
             "case here meets its terminals for the first time, in a fresh process. The machine is shared with "
             "other jobs, so times are noisy; ratios matter.")
    text = report(results, "Grammar benchmark: context-free grammars and recursive schemas", notes)
    text += "\n".join(targets(results)) + "\n"
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()

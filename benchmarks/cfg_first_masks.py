"""First masks of recursive (context-free) schemas: compile and every mask along a document, thread CPU.

    PYTHONPATH=<tree's parent> .venv/bin/python benchmarks/cfg_first_masks.py > run.jsonl   # one run
    .venv/bin/python benchmarks/cfg_first_masks.py --table A=a1.jsonl,a2.jsonl B=b1.jsonl,b2.jsonl

A run compiles each schema of `unique_recursive.py` without its `uniqueItems: true` keywords (the
plain CFG grammar), on the byte and DeepSeek vocabularies, with a fresh uncached compiler, in one
process in that order (terminal tables are shared by language, so later schemas find some built),
and prints one JSON line per schema and vocabulary: compile ms and each step's mask ms.  `--table`
prints, per side, the medians over its runs: compile, first mask, max mask, masks over 5 ms (issue
22's target) and compile + first mask.  Alternate the sides' runs on a loaded box.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def run() -> None:
    from grammar_harness import Tokenized
    from unique_recursive import cases, measure, plain, spelling

    from formwork.grammar.compiler import GrammarCompiler
    from formwork.grammar.vocabulary import Vocabulary

    tok = Tokenized()
    vocabs = {"bytes": (Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256]),
                        lambda text: list(text.encode())),
              "DeepSeek": (Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size), tok.encode)}
    for name, (schema, registry, doc) in cases().items():
        for vocab_name, (vocab, encode) in vocabs.items():
            compiler = GrammarCompiler(vocab, cache_enabled=False)
            compiler.prepare()
            tokens = encode(spelling(schema, registry, doc, vocab))
            compile_ms, mask_us = measure(plain(schema), registry, tokens, vocab, compiler)
            times = [us / 1e3 for us in mask_us]
            print(json.dumps({"schema": name, "vocab": vocab_name, "compile": compile_ms, "times": times}), flush=True)


def table(sides: list[str]) -> None:
    """Medians over each side's runs (`NAME=run1.jsonl,run2.jsonl`), the sides beside each other."""
    runs: dict[str, list[dict]] = {}
    for side in sides:
        name, files = side.split("=", 1)
        runs[name] = [{(r["schema"], r["vocab"]): r for r in map(json.loads, open(f))} for f in files.split(",")]
    names = list(runs)
    columns = {"compile ms": lambda r: r["compile"], "first mask ms": lambda r: r["times"][0],
               "max mask ms": lambda r: max(r["times"]), "masks > 5 ms": lambda r: sum(t > 5 for t in r["times"]),
               "compile + first ms": lambda r: r["compile"] + r["times"][0]}
    print(f"medians over {', '.join(f'{n}: {len(runs[n])} runs' for n in names)}; cells {' / '.join(names)}\n")
    print("| schema | vocabulary | " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * len(columns))
    for key in runs[names[0]][0]:
        cells = [" / ".join(f"{statistics.median(get(r[key]) for r in runs[n]):.2f}" for n in names)
                 for get in columns.values()]
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", nargs="+", metavar="SIDE=RUNS", help="summarise runs instead of running")
    args = parser.parse_args()
    table(args.table) if args.table else run()

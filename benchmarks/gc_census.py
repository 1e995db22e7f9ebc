"""What a full collection walks after N compiles, and what cyclic garbage they leave (issue 22).

One process compiles the iglu-central schemas in order and replays each one's cached instances
(as `gc_pauses.py` does: DeepSeek vocabulary, compiled-grammar cache off, start-up heap frozen,
`StepCollector` installed).  At each `--at` count it runs a full collection and records its thread
CPU, how many objects stay tracked (`len(gc.get_objects())`) and the commonest types among them.
With `--garbage`, a collection after each schema (`gc.DEBUG_SAVEALL`) counts what that schema's
compile and replay left in reference cycles, by type.

    .venv/bin/python benchmarks/gc_census.py [--at 50,100,200,660] [--garbage] [--build DIR]

`--build DIR` puts DIR (holding a built `formwork` tree) first on the path, for an A/B.
Prints JSON per checkpoint and a table at the end.
"""
from __future__ import annotations

import argparse
import collections
import gc
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def census(at: list[int], garbage: bool, depth: int, top: int) -> list[dict]:
    """Compile and replay up to max(at) schemas; one dict per checkpoint."""
    sys.path.insert(0, str(HERE))
    from grammar_harness import Tokenized
    from realworld_cases import load_corpus

    from formwork.core.gc_policy import StepCollector
    from formwork.grammar import GrammarCompiler, Vocabulary, allocate_token_bitmask, compile_json_schema
    from formwork.grammar.errors import GrammarError
    from formwork.server.serve_cmd import freeze_startup_heap

    tok = Tokenized()
    vocab = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()
    cases = load_corpus("iglu-central", max(at))
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    freeze_startup_heap()
    collector = StepCollector()
    collector.install()
    rows: list[dict] = []
    cyclic: collections.Counter[str] = collections.Counter()
    cyclic_schemas = 0
    if garbage:
        gc.set_debug(gc.DEBUG_SAVEALL)
    for count, case in enumerate(cases, 1):
        try:
            grammar = compile_json_schema(case.spec, vocab, compiler=compiler, max_nesting_depth=depth, **case.options)
        except GrammarError:
            grammar = None
        if grammar is not None:
            for text in case.instances or [""]:
                matcher = grammar.matcher()
                for token in tok.encode(text) + [tok.eos]:
                    matcher.fill_next_token_bitmask(bitmask)
                    if not matcher.accept_token(token):
                        break
            del matcher
        del grammar
        if garbage:
            gc.collect()
            cyclic_schemas += bool(gc.garbage)
            cyclic.update(type(o).__qualname__ for o in gc.garbage)
            gc.garbage.clear()
        if count in at:
            gc.set_debug(0)
            gc.collect()
            start = time.thread_time()
            gc.collect()
            took = time.thread_time() - start
            objects = gc.get_objects()
            types = collections.Counter(type(o).__qualname__ for o in objects)
            rows.append({"compiles": count, "tracked": len(objects), "full_ms": took * 1e3,
                         "types": types.most_common(top), "cyclic_objects": sum(cyclic.values()),
                         "cyclic_schemas": cyclic_schemas, "cyclic_types": cyclic.most_common(top)})
            del objects
            print(json.dumps(rows[-1]), flush=True)
            if garbage:
                gc.set_debug(gc.DEBUG_SAVEALL)
    gc.set_debug(0)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", default="50,100,200,660", help="compile counts to take the census at")
    parser.add_argument("--garbage", action="store_true", help="count cyclic garbage per schema")
    parser.add_argument("--depth", type=int, default=6, help="max_nesting_depth of open values")
    parser.add_argument("--top", type=int, default=10, help="types listed per checkpoint")
    parser.add_argument("--build", help="a directory holding a built formwork tree, put first on the path")
    args = parser.parse_args()
    if args.build:
        sys.path.insert(0, args.build)
    rows = census(sorted(int(n) for n in args.at.split(",")), args.garbage, args.depth, args.top)
    print("\n| compiles | tracked | full collection ms | cyclic garbage (objects / schemas) |")
    print("|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['compiles']} | {row['tracked']:,} | {row['full_ms']:.1f} "
              f"| {row['cyclic_objects']:,} / {row['cyclic_schemas']} |")


if __name__ == "__main__":
    main()

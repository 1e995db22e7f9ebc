"""Regex and choice benchmark: formwork vs xgrammar, llguidance and outlines-core.

Per case: time to first mask (compile + first fill, compiled-grammar caches off) and the
per-token mask time while replaying instances tokenized with the DeepSeek 129k tokenizer.

    .venv/bin/python benchmarks/grammar_regex.py [--engines formwork,xgrammar] [--out PATH]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grammar_harness import Case, Tokenized, load_engines, report, run_cases  # noqa: E402

CASES = [
    Case("phone", "regex", r"\(\d{3}\) \d{3}-\d{4}", ["(555) 123-4567", "(020) 000-9999"]),
    Case("email", "regex", r"[a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9.-]{1,63}\.[a-zA-Z]{2,10}",
         ["jane.doe+news@example.com", "x@y.io"]),
    Case("iso-date-time", "regex", r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})",
         ["2024-02-29T13:45:00Z", "1999-12-31T23:59:59.123+05:30"]),
    Case("ipv4", "regex", r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
         ["192.168.0.1", "8.8.4.4"]),
    Case("uuid", "regex", r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
         ["123e4567-e89b-42d3-a456-426614174000"]),
    Case("json-object-flat", "regex",
         r'\{"name": "[^"\\\x00-\x1f]{1,40}", "age": (0|[1-9]\d{0,2}), "email": "[a-z0-9.]+@[a-z0-9.]+", "active": (true|false)\}',
         ['{"name": "Ada Lovelace", "age": 36, "email": "ada@math.org", "active": true}']),
    Case("free-text-bounded", "regex", r"[^\n]{0,200}\n",
         ["The quick brown fox jumps over the lazy dog, then rests under a tree.\n"]),
    Case("sentence-words", "regex", r"([A-Z][a-z]{0,12})( [a-z]{1,12}){2,30}\.",
         ["The model writes short sentences with simple words only."]),
    Case("number-list", "regex", r"\[(-?\d{1,6}(\.\d{1,4})?(, -?\d{1,6}(\.\d{1,4})?){0,30})?\]",
         ["[1, -2.5, 300, 4.25, 5, 60000, -7.125]"]),
    Case("code-identifier", "regex", r"(def|class) [a-zA-Z_][a-zA-Z0-9_]{0,30}\((self(, [a-z_]{1,12}){0,5})?\):",
         ["def compute_mask(self, state, vocab):"]),
    Case("choice-sentiment", "choice", ["positive", "negative", "neutral", "mixed"], ["negative", "mixed"]),
    Case("choice-cities", "choice", ["New York", "New Delhi", "Newcastle", "Los Angeles", "Lagos", "London"],
         ["New Delhi", "London"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="", help="comma-separated subset of engines")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "grammar_regex.md"))
    args = parser.parse_args()
    tok = Tokenized()
    engines = load_engines(tok, [e for e in args.engines.split(",") if e] or None)
    results = run_cases(engines, CASES, tok)
    notes = ("Regex and choice cases over the DeepSeek 129k tokenizer (logit width 129,280). TTFM = compile + "
             "first mask with compiled-grammar caches off; mask = every later `fill_next_token_bitmask` while "
             "replaying the instances' tokens, then the stop token. State-level caches that stay on: formwork's "
             "token-mask cache (packed masks keyed by the state's language: IR root + NFA state set) and its "
             "per-vocabulary trie and JSON-string token slice (built before timing). The machine is shared with "
             "other jobs (load average often 5-10 on 2 cores), so absolute times are inflated and noisy; engines "
             "run interleaved case by case, so their ratios are the meaningful part.")
    text = report(results, "Grammar benchmark: regex and choice", notes)
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()

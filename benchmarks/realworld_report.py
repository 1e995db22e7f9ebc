"""Markdown for the real-world grammar benchmark: per corpus, what each engine compiles, then
compile and mask percentiles on the schemas every engine compiles, and the worst masks."""
from __future__ import annotations

from typing import Any

from grammar_harness import Case, CaseResult, Tokenized, percentiles

WORST = 5


def common_cases(results: list[CaseResult]) -> set[str]:
    """The cases that every engine compiled without an error."""
    engines = set(r.engine for r in results)
    ok: dict[str, set[str]] = {}
    for r in results:
        if r.error is None:
            ok.setdefault(r.case, set()).add(r.engine)
    return {case for case, names in ok.items() if names == engines}


def _where(case: Case, instance: int, token: int, tok: Tokenized) -> str:
    """The text replayed before the mask at `token` of `instance` (its last 40 characters)."""
    ids = tok.encode(case.instances[instance])[:token]
    text = tok.tokenizer.decode(ids) if ids else ""
    return ("…" if len(text) > 40 else "") + text[-40:]


def worst_masks(results: list[CaseResult], cases: dict[str, Case], tok: Tokenized,
                only: set[str] | None) -> list[str]:
    """The `WORST` slowest masks of each engine (within `only` when given)."""
    out = []
    for engine in dict.fromkeys(r.engine for r in results):
        masks = [(us, r.case, at) for r in results if r.engine == engine and r.error is None
                 and (only is None or r.case in only) for us, at in zip(r.mask_us, r.mask_at)]
        masks.sort(reverse=True)
        for us, case, (k, j) in masks[:WORST]:
            where = _where(cases[case], k, j, tok).replace("|", "\\|").replace("`", "'")
            out.append(f"| {engine} | `{case.split(':', 1)[1]}` | {k} | {j} | `{where}` | {us:,.0f} |")
    return ["| engine | schema | instance | token | after | mask µs |", "|---|---|---:|---:|---|---:|"] + out


def _row(engine: str, mine: list[CaseResult]) -> dict[str, Any]:
    return {"engine": engine, "ttfm": percentiles([r.ttfm_ms for r in mine]),
            "mask": percentiles([x for r in mine for x in r.mask_us]),
            "masks": sum(len(r.mask_us) for r in mine),
            "accepted": f"{sum(r.accepted for r in mine)}/{sum(r.instances for r in mine)}"}


def corpus_section(name: str, results: list[CaseResult], cases: dict[str, Case], tok: Tokenized) -> list[str]:
    """The tables of one corpus (or of all of them together)."""
    engines = list(dict.fromkeys(r.engine for r in results))
    common = common_cases(results)
    n_cases = len(set(r.case for r in results))
    lines = [f"## {name}", "", f"{n_cases} schemas; compiled by every engine: {len(common)} "
             f"({sum(len(cases[c].instances) > 0 for c in common)} with instances).", "",
             "| engine | compiled | instances accepted (all compiled) |", "|---|---:|---:|"]
    for engine in engines:
        mine = [r for r in results if r.engine == engine]
        ok = [r for r in mine if r.error is None]
        lines.append(f"| {engine} | {len(ok)}/{len(mine)} | {_row(engine, ok)['accepted']} |")
    lines += ["", "On the schemas every engine compiles (compile = compile + first mask, ms; mask µs):", "",
              "| engine | compile p50 | p99 | max | mask p50 | p90 | p99 | max | masks | instances accepted |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for engine in engines:
        row = _row(engine, [r for r in results if r.engine == engine and r.case in common])
        t, m = row["ttfm"], row["mask"]
        lines.append(f"| {engine} | {t['p50']:.2f} | {t['p99']:.1f} | {t['max']:.1f} | {m['p50']:.1f} | "
                     f"{m['p90']:.1f} | {m['p99']:.1f} | {m['max']:,.0f} | {row['masks']} | {row['accepted']} |")
    lines += ["", f"The {WORST} slowest masks per engine on those schemas:", ""]
    lines += worst_masks(results, cases, tok, common)
    fw = [r for r in results if r.engine == "formwork"]
    if fw:
        lines += ["", f"formwork's {WORST} slowest masks on every schema it compiles:", ""]
        lines += worst_masks(fw, cases, tok, None)
    return lines + [""]


def refusals(results: list[CaseResult], limit: int = 12) -> list[str]:
    """The most common errors per engine (first words), to see what each one refuses."""
    lines = ["## Errors by engine (most common first)", ""]
    for engine in dict.fromkeys(r.engine for r in results):
        counts: dict[str, int] = {}
        for r in results:
            if r.engine == engine and r.error:
                key = r.error[:70]
                counts[key] = counts.get(key, 0) + 1
        lines.append(f"- {engine}: {sum(counts.values())} errors")
        lines += [f"  - {n} x `{e}`" for e, n in sorted(counts.items(), key=lambda x: -x[1])[:limit]]
    return lines + [""]

"""The package's layout: the grammar pipeline's modules import only what lies below them (no import
cycle among them, counting imports made inside functions and under TYPE_CHECKING), and the SDK and
the C sources live in their own folders."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The top of the grammar layer: the compiler hands out matchers, and both sit above the pipeline.
ABOVE_PIPELINE = {"compiler", "matcher"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("formwork."):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("formwork."))
    return found


def _pipeline_graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in (ROOT / "grammar").glob("*.py") if p.stem != "__init__"}
    pipeline = {name for name in modules if name not in ABOVE_PIPELINE}
    prefix = "formwork.grammar."
    return {name: {m[len(prefix):] for m in _imports(modules[name]) if m.startswith(prefix)} & pipeline
            for name in pipeline}


def _cycle_from(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path start -> ... -> start through the graph, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in graph[node]:
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_grammar_pipeline_has_no_import_cycle() -> None:
    graph = _pipeline_graph()
    assert {"automaton", "lazy_dfa", "lexemes", "nfa", "slices", "subset_builder", "token_mask"} <= set(graph)
    cycles = {name: cycle for name in graph if (cycle := _cycle_from(graph, name))}
    assert not cycles, f"import cycles in grammar/: {sorted(cycles.values())}"


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle_from({"a": {"b"}, "b": {"c"}, "c": {"a"}}, "a") == ["a", "b", "c", "a"]
    assert _cycle_from({"a": {"b"}, "b": set()}, "a") is None


def test_sdk_and_native_sources_have_their_own_folders() -> None:
    assert not list(ROOT.glob("sdk*.py")) and not (ROOT / "cli_args.py").exists()
    assert (ROOT / "sdk" / "__init__.py").exists() and (ROOT / "cli" / "__init__.py").exists()
    assert not list((ROOT / "grammar").glob("*.[ch]"))
    assert len(list((ROOT / "grammar" / "native").rglob("*.c"))) >= 8

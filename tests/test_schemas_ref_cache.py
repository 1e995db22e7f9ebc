"""`RefIndex.resolve` and `enter` keep their answers per argument (`refs._scope`): a walk of
`$ref`s, each resolved with the resolver the one before handed on, must give what uncached lookups
give step by step, the dynamic scope of every resolver handed on included (`$dynamicRef` reads it),
and the same bundle reached along different paths must not share answers across scopes."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from formwork.schemas.drafts import DRAFT_2020_12_SPEC
from formwork.schemas.refs import RefIndex

SPEC = DRAFT_2020_12_SPEC.specification
N = 4


def _document() -> dict[str, Any]:
    """Embedded resources naming each other by relative URI, anchor and pointer."""
    return {"$id": "https://example.com/bundle.json",
            "$defs": {f"d{i}": {"$id": f"parts/p{i}.json", "$anchor": f"a{i}", "type": "object",
                                "properties": {"next": {"$ref": f"p{(i + 1) % N}.json"}},
                                "$defs": {"inner": {"$id": f"in{i}.json", "minimum": i}}}
                      for i in range(N)}}


DOCUMENT = _document()
# refs relative to the bundle, a part or an inner resource: some resolve only in some scopes
REFS = [f"parts/p{i}.json" for i in range(N)] + [f"p{i}.json" for i in range(N)] + \
    [f"in{i}.json" for i in range(N)] + [f"parts/p{i}.json#a{i}" for i in range(N)] + \
    ["#/$defs/inner", "#", "#/properties/next", "#/$defs/d1", "https://example.com/bundle.json"]


def _state(resolved: tuple[Any, Any, Any]) -> tuple[int, Any, str, tuple[str, ...]]:
    contents, resolver, location = resolved
    return id(contents), location, resolver._base_uri, tuple(uri for uri, _ in resolver.dynamic_scope())


def _walk(index: RefIndex, refs: list[str], cached: bool) -> list[Any]:
    """Resolve `refs` in turn, each with the resolver the last one that resolved handed on
    (entering its target, as the analysis and the lowering do); a failure is recorded as such."""
    resolver = None
    out: list[Any] = []
    for ref in refs:
        try:
            if cached:
                found = index.resolve(ref, resolver)
            else:
                found = index._resolve(ref, resolver or index.resolver, None)
        except Exception as error:  # noqa: BLE001 - a refusal is part of the answer compared
            out.append(type(error).__name__)
            continue
        inner = index.enter(found[0], found[1], SPEC) if cached else _fresh_enter(index, found)
        out.append((_state(found), inner._base_uri, tuple(inner._previous)))
        resolver = inner
    return out


def _fresh_enter(index: RefIndex, found: tuple[Any, Any, Any]) -> Any:
    """`enter` on an index that has kept nothing."""
    return RefIndex(DOCUMENT, DRAFT_2020_12_SPEC).enter(found[0], found[1], SPEC)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(REFS), min_size=1, max_size=6), min_size=1, max_size=6))
def test_kept_answers_match_uncached_lookups(walks: list[list[str]]) -> None:
    kept = RefIndex(DOCUMENT, DRAFT_2020_12_SPEC)
    for refs in walks:  # the walks share one index, so later ones meet what earlier ones kept
        assert _walk(kept, refs, cached=True) == _walk(RefIndex(DOCUMENT, DRAFT_2020_12_SPEC), refs, cached=False)


def test_one_ref_in_two_dynamic_scopes() -> None:
    """`#/$defs/inner` from part 1 reached directly, then through part 0: same base URI, other
    dynamic scopes, so the second must not be answered with the first's resolver."""
    index = RefIndex(DOCUMENT, DRAFT_2020_12_SPEC)
    direct = _walk(index, ["parts/p1.json", "#/$defs/inner"], cached=True)
    through = _walk(index, ["parts/p0.json", "p1.json", "#/$defs/inner"], cached=True)
    assert direct[-1][0][2] == through[-1][0][2] == "https://example.com/parts/in1.json"
    assert direct[-1][0][3] != through[-1][0][3]
    assert through == _walk(RefIndex(DOCUMENT, DRAFT_2020_12_SPEC),
                            ["parts/p0.json", "p1.json", "#/$defs/inner"], cached=False)

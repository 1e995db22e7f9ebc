"""A root with embedded resources (`$id` subschemas) is crawled once per `RefIndex`: lookups that
miss the registry used to crawl the whole root each time.  Resolving through the kept crawl must
give what a fresh index gives for each reference alone."""
from __future__ import annotations

from typing import Any

import pytest
from referencing import Registry

from formwork.schemas.drafts import DRAFT_2020_12_SPEC
from formwork.schemas.refs import RefIndex

SPEC = DRAFT_2020_12_SPEC.specification


def _document(n: int) -> dict[str, Any]:
    """A bundle of `n` embedded resources that name each other by relative URI and anchor."""
    return {"$id": "https://example.com/bundle.json",
            "$defs": {f"d{i}": {"$id": f"parts/p{i}.json", "$anchor": f"a{i}", "type": "object",
                                "properties": {"next": {"$ref": f"p{(i + 1) % n}.json"}},
                                "$defs": {"inner": {"type": "integer", "minimum": i}}}
                      for i in range(n)}}


REFS = ["parts/p0.json", "parts/p3.json#/$defs/inner", "#/$defs/d2", "parts/p1.json#a1",
        "https://example.com/parts/p4.json", "parts/p2.json#/properties/next"]


def _resolved(index: RefIndex, ref: str, inside: str | None = None) -> tuple[Any, Any]:
    resolver = None
    if inside is not None:
        sub = index.documents[index.root_uri]["$defs"][inside]
        resolver = index.enter(sub, None, SPEC)
    contents, _, location = index.resolve(ref, resolver)
    return contents, location


@pytest.mark.parametrize("inside", [None, "d1"])
def test_kept_crawl_resolves_like_fresh_indexes(inside: str | None) -> None:
    document = _document(5)
    kept = RefIndex(document, DRAFT_2020_12_SPEC)
    refs = REFS if inside is None else ["p3.json", "#/$defs/inner", "#a1", "p0.json#/$defs/inner"]
    for ref in refs * 2:
        got = _resolved(kept, ref, inside)
        expected = _resolved(RefIndex(document, DRAFT_2020_12_SPEC), ref, inside)
        assert got[0] is expected[0] and got[1] == expected[1], ref


def test_the_root_is_crawled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    document = _document(6)
    index = RefIndex(document, DRAFT_2020_12_SPEC)
    index.resolver  # made before counting: the registry's own crawl is not the root's
    crawls = []
    original = Registry.crawl

    def counted(self: Registry) -> Registry:
        crawls.append(self)
        return original(self)

    monkeypatch.setattr(Registry, "crawl", counted)
    for i in range(6):
        _resolved(index, f"parts/p{i}.json#/$defs/inner")
        _resolved(index, "#/$defs/inner", f"d{i}")
    assert len(crawls) == 1

"""Shared helpers for tests/test_schemas_*.py and tests/test_cli_validate.py (imported explicitly,
not a pytest conftest): the vendored JSON Schema Test Suite and its `remotes/` as a registry.

Usage::

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest_schemas import SUITE_DIR, suite_groups, suite_registry
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from formwork.schemas import SchemaError, SchemaRegistry, load_schema
from formwork.schemas.drafts import draft_named

SUITE_DIR = Path(__file__).parent / "data" / "json-schema-test-suite"
REMOTES_BASE = "http://localhost:1234/"
DRAFT_FOLDERS = {"2020-12": "draft2020-12", "2019-09": "draft2019-09", "draft-07": "draft7",
                 "draft-06": "draft6", "draft-04": "draft4"}


@functools.lru_cache(maxsize=None)
def remote_documents() -> dict[str, Any]:
    """Every file under remotes/, keyed by the URL the suite's tests use for it."""
    remotes = SUITE_DIR / "remotes"
    return {REMOTES_BASE + path.relative_to(remotes).as_posix(): json.loads(path.read_text())
            for path in sorted(remotes.rglob("*.json"))}


@functools.lru_cache(maxsize=None)
def suite_registry(draft: str) -> SchemaRegistry:
    """The remotes as a registry whose documents default to `draft`."""
    return SchemaRegistry(remote_documents(), default_draft=draft_named(draft))


def suite_files(draft: str, *, optional: bool = True) -> list[Path]:
    folder = SUITE_DIR / "tests" / DRAFT_FOLDERS[draft]
    files = sorted(folder.rglob("*.json"))
    return [f for f in files if optional or "optional" not in f.relative_to(folder).parts]


@functools.lru_cache(maxsize=None)
def suite_groups(draft: str) -> list[tuple[str, dict[str, Any]]]:
    """(file-relative name, test group) for every group of the draft, optional ones included."""
    folder = SUITE_DIR / "tests" / DRAFT_FOLDERS[draft]
    return [(path.relative_to(folder).as_posix(), group)
            for path in suite_files(draft) for group in json.loads(path.read_text())]


def suite_group(draft: str, file: str, description: str) -> dict[str, Any]:
    """One group by file name and description."""
    for name, group in suite_groups(draft):
        if name == file and group["description"] == description:
            return group
    raise KeyError((draft, file, description))


@functools.lru_cache(maxsize=None)
def loaded_suite(draft: str) -> list[tuple[str, dict[str, Any], Any]]:
    """(file name, group, SchemaDocument or the SchemaError loading raised) for every group."""
    loaded = []
    for name, group in suite_groups(draft):
        try:
            doc: Any = load_schema(group["schema"], registry=suite_registry(draft), draft=draft)
        except SchemaError as error:
            doc = error
        loaded.append((name, group, doc))
    return loaded


def schema_like(strings: list[str], keywords: list[str]) -> st.SearchStrategy:
    """Random JSON values shaped like schemas: objects keyed by `keywords` (and arrays) over
    small scalars and the given `strings`."""
    scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(strings)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(keywords), inner, max_size=4),
        max_leaves=12)

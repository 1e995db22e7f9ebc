"""`GrammarCompiler.prepare` builds the schema front end's process-wide tables (the registry of
meta-schemas, each draft's meta-schema check), so the process's first schema does not pay them
(~70 ms of its compile before)."""
from __future__ import annotations

import pytest

from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.vocabulary import Vocabulary
from formwork.schemas import metaschema, refs
from formwork.schemas.drafts import ALL_DRAFTS


def test_prepare_builds_the_registry_and_the_meta_schema_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real_registry, real_predicate = refs.SchemaRegistry, metaschema.compile_meta_schema

    def counting_registry(*args, **kwargs):
        built.append("registry")
        return real_registry(*args, **kwargs)

    def counting_predicate(*args, **kwargs):
        built.append("predicate")
        return real_predicate(*args, **kwargs)

    monkeypatch.setattr(refs, "SchemaRegistry", counting_registry)
    monkeypatch.setattr(metaschema, "compile_meta_schema", counting_predicate)
    refs.empty_registry.cache_clear()
    metaschema._predicate.cache_clear()
    try:
        GrammarCompiler(Vocabulary([bytes([b]) for b in range(256)])).prepare()
        assert built.count("registry") == 1
        assert built.count("predicate") >= 4  # draft-04, -06, -07 and 2020-12 (2019-09: jsonschema's)
        made = len(built)
        for draft in ALL_DRAFTS:  # a schema of any draft now finds them built
            lower_json_schema({"$schema": draft.uri, "type": "object", "properties": {"a": {}}})
        assert len(built) == made
    finally:
        refs.empty_registry.cache_clear()
        metaschema._predicate.cache_clear()

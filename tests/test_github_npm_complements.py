"""Schemas of the vendored github-npm corpus (`benchmarks/corpora/github-npm`, licences there) that
issue 21's idn formats and factored / discriminated complements reach: AsyncAPI 2.6.0 compiles
and agrees with jsonschema on security schemes of every kind; Swagger 1.2's modelsObject no
longer splits past the alternatives budget; CycloneDX bom-1.4 enforces idn-email with warnings."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
import corpus  # noqa: E402
from json_spelling_search import accepted_text, property_rank  # noqa: E402
from real_world_corpus import integral_floats, make_validator  # noqa: E402

from formwork.grammar import GrammarBudgetError, GrammarError  # noqa: E402

ENTRIES = {e.name: e for e in corpus.github_npm_entries()}
SCHEMES = [{"type": "userPassword"}, {"type": "apiKey", "in": "user"}, {"type": "apiKey"},
           {"type": "X509", "description": "d"}, {"type": "http", "scheme": "basic"},
           {"type": "httpApiKey", "name": "n", "in": "header"}, {"type": "httpApiKey", "name": "n"},
           {"type": "oauth2", "flows": {}},
           {"type": "openIdConnect", "openIdConnectUrl": "https://x.test"},
           {"type": "plain"}, {"type": "gssapi"}, {"type": "nope"}, {}, {"type": "X509", "extra": 1},
           {"type": "symmetricEncryption", "x-a": 1}, {"type": "http"}, {"$ref": "#/x"}]


def test_asyncapi_2_6_security_schemes_are_exact():
    entry = ENTRIES["asyncapi__specs/schemas/2.6.0.json"]
    grammar = corpus._compile(entry)
    validator = make_validator(entry.schema, entry.registry, entry.default_validator)
    rank = property_rank(entry.schema, *entry.registry.values())
    base = {"asyncapi": "2.6.0", "info": {"title": "t", "version": "1"}, "channels": {}}
    verdicts = []
    for scheme in SCHEMES:
        doc = {**base, "components": {"securitySchemes": {"s": scheme}}}
        accepted = accepted_text(grammar, doc, rank, integral_floats(validator)) is not None
        assert accepted == validator.is_valid(doc), scheme
        verdicts.append(accepted)
    assert 0 < sum(verdicts) < len(verdicts)  # both sides of the complement are exercised


@pytest.mark.parametrize("name", ["apidevtools__openapi-schemas/schemas/v1.2/modelsObject.json",
                                  "apidevtools__openapi-schemas/schemas/v1.2/apiDeclaration.json"])
def test_swagger_1_2_model_properties_do_not_split_past_the_budget(name):
    try:
        corpus._compile(ENTRIES[name])
    except GrammarBudgetError as exc:
        assert "splits into more than" not in str(exc), exc
    except GrammarError as exc:  # the next refusal is typed and names the pointer
        assert "dataTypeBase.json#/properties/enum" in str(exc), exc


def test_cyclonedx_bom_1_4_enforces_idn_email_as_a_subset_with_warnings():
    bom = ENTRIES["cyclonedx__cyclonedx-library/res/schema/bom-1.4.SNAPSHOT.schema.json"]
    grammar = corpus._compile(bom, lenient=True)  # lenient: its recursive uniqueItems is refused
    subset = [w for w in grammar.warnings if "'idn-email' is enforced as a subset" in w]
    assert [w.split(":")[0] for w in subset] == [
        "format at /definitions/organizationalContact/properties/email/format",
        "format at /definitions/identifiableAction/properties/email/format"]

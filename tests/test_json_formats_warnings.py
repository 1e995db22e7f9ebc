"""Unknown `format` values are annotations (JSON Schema's rule): the schema compiles, the grammar
carries a warning naming the JSON pointer and the format, `formwork validate` prints it (exit 0),
and the server logs it and returns it in the `formwork-warnings` header. Formats formwork
enforces as a strict subset (idn-email, idn-hostname) compile with a warning naming the pointer."""
import json
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.cli import main  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema, lower_json_schema  # noqa: E402
from formwork.schemas import load_schema  # noqa: E402
from formwork.schemas.keywords import (  # noqa: E402
    DRAFT_2020_12, SUBSET_FORMATS, KeywordKind, classify,
)
from formwork.server.warnings_header import MAX_HEADER_CHARS, header_value  # noqa: E402

SCHEMA = {"type": "object", "properties": {"path": {"type": "string", "format": "path"},
                                          "n/m": {"type": "number", "format": "decimal128"}},
          "required": ["path"], "additionalProperties": False}
WARNINGS = ["format at /properties/path/format: format 'path' is unknown: an annotation, not enforced",
            "format at /properties/n~1m/format: format 'decimal128' is unknown: an annotation, "
            "not enforced"]


def test_an_unknown_format_is_an_annotation_with_a_warning():
    verdict = classify("format", "path", DRAFT_2020_12, {})
    assert verdict.kind is KeywordKind.IGNORED
    assert verdict.reason == "format 'path' is unknown: an annotation, not enforced"
    assert classify("format", "int32", DRAFT_2020_12, {}).kind is KeywordKind.SUPPORTED


def test_the_compiled_grammar_carries_the_warnings_with_their_pointers():
    assert lower_json_schema(SCHEMA).warnings == WARNINGS
    grammar = compile_json_schema(SCHEMA, byte_vocab())
    assert grammar.warnings == WARNINGS
    m = grammar.matcher()  # the format constrains nothing: any string, any number
    assert m.accept_string('{"path": "/a b/../c", "n/m": -1.5e3}') and m.can_terminate()


@pytest.mark.parametrize("fmt", ["idn-email", "idn-hostname"])
def test_formats_enforced_as_a_subset_compile_with_a_warning_naming_the_pointer(fmt):
    schema = {"properties": {"a": {"type": "string", "format": fmt}}}
    expected = [f"format at /properties/a/format: format {fmt!r} is enforced as a subset: "
                + SUBSET_FORMATS[fmt]]
    assert lower_json_schema(schema).warnings == expected
    assert compile_json_schema(schema, byte_vocab()).warnings == expected
    verdict = classify("format", fmt, DRAFT_2020_12, {})
    assert verdict.kind is KeywordKind.SUPPORTED and "enforced as a subset" in verdict.reason


def test_the_schema_front_end_reports_a_warning_not_an_error():
    problems = load_schema(SCHEMA).problems()
    assert [(p.pointer, p.keyword, p.severity.value) for p in problems] == [
        ("/properties/path/format", "format", "warning"),
        ("/properties/n~1m/format", "format", "warning")]


def test_formwork_validate_prints_the_warning_and_exits_0(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"{path}: OK (2 warning(s))",
        "  warning: /properties/path/format [format]: format 'path' is unknown: an annotation, "
        "not enforced",
        "  warning: /properties/n~1m/format [format]: format 'decimal128' is unknown: an "
        "annotation, not enforced"]
    assert main(["validate", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == 0 and report["schemas"][0]["status"] == "ok"
    assert report["schemas"][0]["problems"][0] == {
        "pointer": "/properties/path/format", "keyword": "format", "severity": "warning",
        "reason": "format 'path' is unknown: an annotation, not enforced"}


def test_the_header_value_is_short_and_header_safe():
    assert header_value(["a; b", "x\r\ny", "é"]) == "a, b; x  y; \\xe9"
    long = header_value([f"warning {i} " + "w" * 90 for i in range(100)])
    assert len(long) <= MAX_HEADER_CHARS and long.endswith("more)")
    assert all(" " <= c <= "~" for c in long)
    shown = long.count("; ")  # the separators of the warnings shown, plus the one before "..."
    assert long.endswith(f"... ({100 - shown} more)")


@pytest.fixture(scope="module")
def server():
    from conftest_server import tiny_server
    return tiny_server()


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_returns_the_warnings_in_a_header(server, stream):
    from conftest_server import AUTH, MODEL
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
            "stream": stream, "response_format": {"type": "json_schema", "json_schema": {
                "name": "s", "schema": SCHEMA}}}
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, headers=AUTH,
                      timeout=120) as response:
        response.read()
    assert response.status_code == 200
    assert response.headers["formwork-warnings"] == "; ".join(WARNINGS)
    plain = {**body, "response_format": {"type": "json_schema", "json_schema": {
        "name": "s", "schema": {"type": "string", "format": "date"}}}}
    response = httpx.post(f"{server.url}/v1/chat/completions", json={**plain, "stream": False},
                          headers=AUTH, timeout=120)
    assert response.status_code == 200 and "formwork-warnings" not in response.headers
    log = server.log_path.read_text()
    assert "format at /properties/path/format: format 'path' is unknown" in log

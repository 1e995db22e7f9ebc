"""`formwork validate`: output, exit codes, --json/--lenient/--draft/--registry, stdin, and
garbage inputs (clear messages, never a traceback), in-process and as a real subprocess."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from formwork.cli import main

REPO = Path(__file__).resolve().parents[1]
FORMWORK = Path(sys.executable).parent / "formwork"
EXAMPLES = sorted((REPO / "examples").glob("*.json"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A directory of good, bad and garbage schema files, by short name."""
    tmp_path = tmp_path_factory.mktemp("schemas")
    deep = '{"items": ' * 300 + "{}" + "}" * 300
    contents = {
        "ok.json": json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}),
        "unsupported.json": json.dumps({"properties": {"a/b": {"pattern": "(b)\\1"},
                                                       "c": {"pattern": "(a)\\1"}}}),
        "typo.json": json.dumps({"type": "string", "minLenght": 2}),
        "meta.json": json.dumps({"properties": {"a": {"minLength": -1}}}),
        "recursive.json": json.dumps({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
                                      "$ref": "#/$defs/n"}),
        "loop.json": json.dumps({"$ref": "#"}),
        "tuple7.json": json.dumps({"items": [{"type": "string"}], "additionalItems": False}),
        "remote.json": json.dumps({"$ref": "urn:example:name"}),
        "notjson.json": "type: string\n",
        "deep.json": deep,
        "draft3.json": json.dumps({"$schema": "http://json-schema.org/draft-03/schema#"}),
        "binary.bin": bytes(range(256)) * 4,
        "empty.json": "",
        "huge.json": '{"enum": [' + ",".join(['"' + "x" * 1000 + '"'] * 4300) + "]}",
    }
    for name, content in contents.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    (tmp_path / "name.json").write_text(json.dumps({"type": "string", "minLength": 1}))
    return tmp_path


def run(capsys, *args):
    code = main(["validate", *map(str, args)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def test_a_valid_schema_prints_ok_and_exits_0(capsys, files):
    code, out, _ = run(capsys, files / "ok.json")
    assert (code, out) == (0, f"{files / 'ok.json'}: OK\n")


def test_unsupported_keywords_are_listed_with_pointers_and_exit_1(capsys, files):
    code, out, _ = run(capsys, files / "unsupported.json")
    assert code == 1
    assert "INVALID (not enforceable)" in out
    assert "error: /properties/a~1b/pattern [pattern]:" in out
    assert "error: /properties/c/pattern [pattern]:" in out


def test_lenient_reports_warnings_and_exits_0(capsys, files):
    code, out, _ = run(capsys, "--lenient", files / "unsupported.json")
    assert code == 0 and "OK (2 warning(s))" in out
    assert "warning: /properties/a~1b/pattern" in out


def test_warnings_alone_do_not_fail(capsys, files):
    code, out, _ = run(capsys, files / "typo.json")
    assert code == 0 and "warning: /minLenght [minLenght]: 'minLenght' is not a 2020-12 keyword" in out


def test_meta_schema_errors_exit_1_with_the_pointer(capsys, files):
    code, out, _ = run(capsys, files / "meta.json")
    assert code == 1
    assert "INVALID (MetaSchemaError)" in out and "/properties/a/minLength [minLength]" in out


def test_recursion_is_info_but_a_loop_is_an_error(capsys, files):
    code, out, _ = run(capsys, files / "recursive.json")
    assert code == 0 and "info: /$defs/n/items/$ref [$ref]: recursive reference cycle" in out
    code, out, _ = run(capsys, files / "loop.json")
    assert code == 1 and "never descends into the instance" in out


def test_draft_option_and_registry_option(capsys, files):
    assert run(capsys, files / "tuple7.json")[0] == 1
    assert run(capsys, "--draft", "draft-07", files / "tuple7.json")[0] == 0
    code, out, _ = run(capsys, files / "remote.json")
    assert code == 1 and "UnresolvableRefError" in out and "registry" in out
    code, out, _ = run(capsys, "--registry", f"urn:example:name={files / 'name.json'}",
                       files / "remote.json")
    assert (code, out.strip()) == (0, f"{files / 'remote.json'}: OK")
    code, _, err = run(capsys, "--registry", "no-equals-sign", files / "ok.json")
    assert code == 2 and "URI=FILE" in err


@pytest.mark.parametrize("name, message", [
    ("notjson.json", "InvalidJSONError): invalid JSON at line 1 column 1"),
    ("deep.json", "nesting deeper than the limit of 256"),
    ("draft3.json", "draft-03 is not supported"),
    ("binary.bin", "binary data"),
    ("empty.json", "empty input"),
    ("huge.json", "SchemaTooLargeError)"),
])
def test_garbage_gets_one_clear_line_and_exit_1(capsys, files, name, message):
    code, out, _ = run(capsys, files / name)
    assert code == 1
    assert message in out
    assert len(out.strip().splitlines()) <= 2


def test_missing_files_and_directories_exit_2(capsys, files):
    code, out, _ = run(capsys, files / "ok.json", files / "absent.json", files)
    assert code == 2
    assert f"ERROR: {files / 'absent.json'}: no such file" in out
    assert "is a directory" in out and ": OK" in out


def test_json_report(capsys, files):
    code, out, _ = run(capsys, "--json", files / "ok.json", files / "unsupported.json",
                       files / "notjson.json")
    report = json.loads(out)
    assert code == report["exit_code"] == 1
    statuses = [(s["status"], s["error"]) for s in report["schemas"]]
    assert statuses == [("ok", None), ("invalid", None), ("invalid", "InvalidJSONError")]
    assert report["schemas"][1]["problems"][0] == {
        "pointer": "/properties/a~1b/pattern", "keyword": "pattern",
        "reason": report["schemas"][1]["problems"][0]["reason"], "severity": "error"}
    assert report["schemas"][0]["draft"] == "2020-12"


def test_stdin_dash(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"type": "integer"}')))
    code, out, _ = run(capsys, "-")
    assert (code, out) == (0, "<stdin>: OK\n")


def test_usage_errors_and_help_return_codes(capsys):
    assert main(["validate"]) == 2
    assert "required: FILE" in capsys.readouterr().err
    assert main(["validate", "--help"]) == 0
    assert "--lenient" in capsys.readouterr().out
    assert main([]) == 2


def test_the_shipped_examples_are_valid_and_enforceable(capsys):
    assert len(EXAMPLES) >= 5
    code, out, _ = run(capsys, *EXAMPLES)
    assert code == 0 and out.count(": OK") == len(EXAMPLES)


# ---- the installed console script --------------------------------------------------------------

def script(*args, stdin=b""):
    result = subprocess.run([str(FORMWORK), "validate", *map(str, args)], input=stdin,
                            capture_output=True, timeout=120)
    assert b"Traceback" not in result.stdout + result.stderr
    return result


def test_console_script_exit_codes_for_garbage_and_good_files(files):
    garbage = [files / n for n in ("notjson.json", "deep.json", "draft3.json", "binary.bin",
                                   "huge.json", "loop.json")]
    result = script(*garbage, "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert [s["status"] for s in report["schemas"]] == ["invalid"] * len(garbage)
    assert script(files / "ok.json", files / "recursive.json").returncode == 0
    assert script(files / "ok.json", files / "absent.json").returncode == 2
    piped = script("-", stdin=b'{"type": "string", "pattern": "(a)\\\\1"}')
    assert piped.returncode == 1 and b"/pattern" in piped.stdout
    assert script().returncode == 2

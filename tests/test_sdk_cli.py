"""`formwork generate`: output and exit codes, in process (--model) and against a live server (--url)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import API_KEY, free_port, tiny_server  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def model_dir():
    return str(tiny_model_dir("llama"))


@pytest.fixture(scope="module")
def server_url():
    return tiny_server().url


def write_schema(tmp_path: Path, schema) -> str:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["generate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_in_process_choice_and_truncation(capsys, tmp_path, model_dir):
    code, out, err = run(capsys, "--model", model_dir, "--choice", "red,green,blue", "--temperature", "0",
                         "Pick a colour")
    assert code == 0, err
    assert out.strip() in ("red", "green", "blue")
    schema = write_schema(tmp_path, {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    code, out, err = run(capsys, "--model", model_dir, "--schema", schema, "--max-tokens", "2", "Object:")
    assert code == 1 and out == ""
    assert "TruncatedOutputError" in err and "partial output: {" in err


def test_over_http_regex_schema_and_failures(capsys, tmp_path, server_url):
    code, out, err = run(capsys, "--url", server_url, "--api-key", API_KEY, "--regex", r"[a-c]{3}\d",
                         "--temperature", "0", "--max-tokens", "8", "--raw", "Code:")
    assert code == 0, err
    assert re.fullmatch(r"[a-c]{3}\d", out.strip())
    schema = write_schema(tmp_path, {"enum": [True, "maybe", 3]})
    code, out, err = run(capsys, "--url", server_url, "--api-key", API_KEY, "--schema", schema, "Answer")
    assert code == 0, err
    assert json.loads(out) in (True, "maybe", 3)
    code, out, err = run(capsys, "--url", server_url, "--api-key", "wrong", "--choice", "a,b", "x")
    assert code == 1 and "AuthenticationError" in err
    code, out, err = run(capsys, "--url", f"http://127.0.0.1:{free_port()}", "--choice", "a,b", "x")
    assert code == 1 and "APIConnectionError" in err


@pytest.mark.parametrize("argv, message", [
    (["--regex", "(a)\\1"], "backreference"),
    (["--regex", "[ab"], "unterminated"),
    (["--choice", "a,,b"], "non-empty"),
    (["--schema", "{missing}"], "bad constraint"),
    (["--schema", "{unenforceable}"], "'tags' uses 'pattern'"),
    (["--model", "{nowhere}", "--choice", "a,b"], "cannot load the model"),
])
def test_bad_input_exits_2_before_generating(capsys, tmp_path, argv, message):
    unenforceable = write_schema(tmp_path, {"properties": {"tags": {"type": "string", "pattern": "(a)\\1"}}})
    argv = [a.format(missing=tmp_path / "nope.json", unenforceable=unenforceable, nowhere=tmp_path / "no-model")
            for a in argv]
    code, out, err = run(capsys, *argv, "prompt")
    assert code == 2 and out == ""
    assert message in err


def test_usage_errors(capsys):
    assert main(["generate", "--regex", "a", "--choice", "a,b", "x"]) == 2  # two constraints
    assert main(["generate", "x"]) == 2  # no constraint
    assert main(["generate", "--regex", "a", "--max-tokens", "0", "x"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err

"""The README's Python code blocks and `examples/typed_output.py` run as written."""
from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "typed_output.py"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[str]:
    return PYTHON_BLOCK.findall((REPO_ROOT / "README.md").read_text(encoding="utf-8"))


def test_readme_block_pattern_finds_python_blocks():
    text = "intro\n```python\nx = 1\n```\n```sh\nmake\n```\n```python\ny = 2\n```\n"
    assert PYTHON_BLOCK.findall(text) == ["x = 1\n", "y = 2\n"]


def run_example(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)])  # as written: the embedded demo model
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    review_line, answer_line = capsys.readouterr().out.strip().splitlines()[-2:]
    assert review_line.startswith("title=") and "stars=" in review_line
    ticket, answer = answer_line.split()
    assert re.fullmatch(r"[A-Z]{3}-\d{4}", ticket) and answer in ("yes", "no")


# The example, then each Python block of the README (executed in a fresh namespace).
CASES = ["examples/typed_output.py"] + [f"README.md block {i}" for i in range(len(readme_blocks()))]


@pytest.mark.parametrize("case", CASES)
def test_documented_code_runs(case, monkeypatch, capsys, tmp_path):
    if case == CASES[0]:
        run_example(monkeypatch, capsys)
        return
    index = int(case.rsplit(" ", 1)[1])
    script = tmp_path / f"readme_block_{index}.py"  # run as a real script (dataclasses need a module)
    script.write_text(readme_blocks()[index], encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")

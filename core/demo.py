"""The embedded demo model: a small Llama with its own byte-level BPE tokenizer and ChatML template.

It ships as package data (``formwork/demo_model/``) and is what ``formwork serve`` and ``formwork.LLM()``
run when no model is given. ``scripts/train_demo_model.py`` reproduces it.
"""

from __future__ import annotations

from pathlib import Path

DEMO_MODEL_DIR: Path = Path(__file__).resolve().parent.parent / "demo_model"
DEMO_MODEL_NAME = "formwork-demo"
DEMO_MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                    "tokenizer_config.json")


class DemoModelMissingError(FileNotFoundError):
    """The demo model directory or one of its files is absent (e.g. a broken installation)."""


def demo_model_dir() -> Path:
    """The demo model directory, after checking that every file a loader needs is present."""
    missing = [name for name in DEMO_MODEL_FILES if not (DEMO_MODEL_DIR / name).is_file()]
    if missing:
        raise DemoModelMissingError(
            f"the embedded demo model at {DEMO_MODEL_DIR} lacks {', '.join(missing)}; reinstall formwork or "
            "regenerate it with `python scripts/train_demo_model.py --out demo_model`")
    return DEMO_MODEL_DIR

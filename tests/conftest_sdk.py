"""Helpers shared by the SDK tests."""
from __future__ import annotations

import dataclasses
import enum
from typing import Any


def to_json(value: Any) -> Any:
    """The JSON form of a value the SDK builds (dataclasses, pydantic models, enums, tuples, containers)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value

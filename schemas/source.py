"""Reading a schema from a dict, JSON text, bytes or a file, within size and depth limits."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from formwork.schemas._plain_copy import plain_copy
from formwork.schemas.errors import (InvalidJSONError, SchemaFileError, SchemaTooDeepError,
                                     SchemaTooLargeError)
from formwork.schemas.pointer import join_pointer

#: Largest schema source accepted, in bytes.
MAX_SOURCE_BYTES = 4 * 1024 * 1024
#: Deepest nesting of JSON objects/arrays accepted (the root container is depth 1).
MAX_DEPTH = 256

Source = dict[str, Any] | bool | str | bytes | os.PathLike[str]


def load_source(source: Source, *, max_bytes: int = MAX_SOURCE_BYTES,
                max_depth: int = MAX_DEPTH) -> tuple[Any, str]:
    """The schema value of `source` and a label for messages ("<dict>", "<text>" or the path).

    A `str` is JSON text when it starts (after whitespace) with `{`, `[` or `"`, or is `true` /
    `false`; any other `str` is a path. Dicts are copied (the document must not change later).
    """
    if isinstance(source, (dict, bool)):
        return checked_copy(source, max_depth), "<dict>"
    return _parsed_source(source, max_bytes, max_depth)


def load_source_with_depth(source: Source, *, max_bytes: int = MAX_SOURCE_BYTES,
                           max_depth: int = MAX_DEPTH) -> tuple[Any, str, int]:
    """`load_source` and the value's nesting depth (`check_depth`), found while copying a dict."""
    if isinstance(source, (dict, bool)):
        copy, depth = _checked_copy(source, max_depth)
        return copy, "<dict>", depth
    value, label = _parsed_source(source, max_bytes, max_depth)
    return value, label, check_depth(value, max_depth)


def _parsed_source(source: Source, max_bytes: int, max_depth: int) -> tuple[Any, str]:
    """The value and label of a source that is not a dict or bool (JSON text, bytes or a path)."""
    if isinstance(source, (bytes, bytearray)):
        return parse_json_bytes(bytes(source), max_bytes=max_bytes, max_depth=max_depth), "<bytes>"
    if isinstance(source, str) and _looks_like_json(source):
        if len(source) > max_bytes:
            raise SchemaTooLargeError(f"schema text is {len(source)} characters; the limit is "
                                      f"{max_bytes}")
        return parse_json_text(source, max_depth=max_depth), "<text>"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return parse_json_bytes(read_file(path, max_bytes=max_bytes), max_bytes=max_bytes,
                                max_depth=max_depth), str(path)
    raise TypeError(f"a schema source is a dict, bool, JSON text, bytes or a path, "
                    f"not {type(source).__name__}")


def _looks_like_json(text: str) -> bool:
    stripped = text.lstrip()
    return not stripped or stripped[:1] in ("{", "[", '"') or stripped.rstrip() in ("true", "false")


def read_file(path: Path, *, max_bytes: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a schema file, refusing directories, unreadable and oversized files."""
    try:
        if path.is_dir():
            raise SchemaFileError(f"{path} is a directory, not a schema file")
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise SchemaTooLargeError(f"{path} is {size} bytes; the limit is {max_bytes}")
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise SchemaFileError(f"{path}: no such file") from None
    except PermissionError:
        raise SchemaFileError(f"{path}: permission denied") from None
    except OSError as error:
        raise SchemaFileError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise SchemaTooLargeError(f"{path} is larger than the limit of {max_bytes} bytes")
    return data


def parse_json_bytes(data: bytes, *, max_bytes: int = MAX_SOURCE_BYTES,
                     max_depth: int = MAX_DEPTH) -> Any:
    """Decode UTF-8 (a BOM is allowed) and parse; binary data is an `InvalidJSONError`."""
    if len(data) > max_bytes:
        raise SchemaTooLargeError(f"schema is {len(data)} bytes; the limit is {max_bytes}")
    if b"\x00" in data:
        raise InvalidJSONError("binary data (NUL bytes), not JSON text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidJSONError(f"not UTF-8 text (byte {error.start}); a binary file?") from None
    return parse_json_text(text, max_depth=max_depth)


def _reject_constant(name: str) -> Any:
    raise InvalidJSONError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise InvalidJSONError(f"duplicate key {key!r} in an object")
        obj[key] = value
    return obj


def parse_json_text(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, nesting at most `max_depth`."""
    if not text.strip():
        raise InvalidJSONError("empty input, not JSON")
    try:
        value = json.loads(text, parse_constant=_reject_constant,
                           object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise InvalidJSONError(f"invalid JSON at line {error.lineno} column {error.colno}: "
                               f"{error.msg}") from None
    except RecursionError:
        raise SchemaTooDeepError(f"nesting deeper than the limit of {max_depth}") from None
    check_depth(value, max_depth)
    return value


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> int:
    """The nesting depth of a parsed JSON value; `SchemaTooDeepError` past `max_depth`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:  # containers only, no paths: the error's pointer is found by a second walk
        node, depth = stack.pop()
        if depth > max_depth:
            _raise_too_deep(value, max_depth)
        if depth > deepest:
            deepest = depth
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return deepest


def _raise_too_deep(value: Any, max_depth: int) -> None:
    """Raise `SchemaTooDeepError` with the pointer of the first container past `max_depth`, in the
    order `check_depth` visits them."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if depth > max_depth:
            raise SchemaTooDeepError(f"nesting deeper than the limit of {max_depth}",
                                     pointer=join_pointer(path))
        stack.extend((child, depth + 1, path + (key,)) for key, child in items)


def checked_copy(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """A deep copy of a Python JSON value, checking types, finite numbers and the depth limit
    (which also stops self-referencing dicts)."""
    return _checked_copy(value, max_depth)[0]


def _checked_copy(value: Any, max_depth: int) -> tuple[Any, int]:
    """`checked_copy` and the copy's nesting depth (as `check_depth` counts it): the C copy of
    plain JSON (`_plain_copy.c`), else the checking copy, which raises the error (or copies
    tuples and subclasses)."""
    plain = plain_copy(value, max_depth)
    return plain if plain is not None else _checking_copy(value, max_depth)


def _checking_copy(value: Any, max_depth: int) -> tuple[Any, int]:
    """`_checked_copy` of any value: the first invalid part raises with its JSON pointer."""
    def invalid(path: tuple[str | int, ...], why: str) -> InvalidJSONError:
        return InvalidJSONError(why, pointer=join_pointer(path))

    def scalar(node: Any, path: tuple[str | int, ...]) -> Any:
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if isinstance(node, float):
            if not math.isfinite(node):
                raise invalid(path, f"{node} is not a JSON number")
            return node
        raise invalid(path, f"a {type(node).__name__} is not a JSON value")

    if not isinstance(value, (dict, list, tuple)):
        return scalar(value, ()), 0
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any, int, tuple[str | int, ...]]] = [(value, root, 1, ())]
    deepest = 0
    while stack:
        src, dst, depth, path = stack.pop()
        if depth > max_depth:
            raise SchemaTooDeepError(f"nesting deeper than the limit of {max_depth}",
                                     pointer=join_pointer(path))
        if depth > deepest:
            deepest = depth
        pairs = src.items() if isinstance(src, dict) else enumerate(src)
        for key, item in pairs:
            if isinstance(src, dict) and not isinstance(key, str):
                raise invalid(path, f"object key {key!r} is not a string")
            if isinstance(item, (dict, list, tuple)):
                copy = {} if isinstance(item, dict) else []
                stack.append((item, copy, depth + 1, path + (key,)))
            elif item is None or isinstance(item, (bool, int, str)):
                copy = item  # the usual scalars, without building their path
            else:
                copy = scalar(item, path + (key,))
            if isinstance(dst, dict):
                dst[key] = copy
            else:
                dst.append(copy)
    return root, deepest

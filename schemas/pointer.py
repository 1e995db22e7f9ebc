"""JSON pointers (RFC 6901): escaping, joining, splitting, and URI fragments."""
from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, unquote


class InvalidPointerError(ValueError):
    """A string is not a JSON pointer."""


def escape_token(token: str | int) -> str:
    """Escape one reference token: `~` -> `~0`, `/` -> `~1`."""
    text = str(token)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def unescape_token(token: str) -> str:
    """Undo `escape_token`; a `~` not followed by 0 or 1 is an error."""
    if "~" not in token:
        return token
    out: list[str] = []
    i = 0
    while i < len(token):
        ch = token[i]
        if ch == "~":
            nxt = token[i + 1:i + 2]
            if nxt not in ("0", "1"):
                raise InvalidPointerError(f"invalid escape '~{nxt}' in JSON pointer token {token!r}")
            out.append("~" if nxt == "0" else "/")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def join_pointer(tokens: Iterable[str | int]) -> str:
    """The pointer for a path of object keys / array indices (`[]` is the root, "")."""
    return "".join("/" + escape_token(t) for t in tokens)


def split_pointer(pointer: str) -> list[str]:
    """The unescaped tokens of `pointer` ("" is the root)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise InvalidPointerError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    return [unescape_token(t) for t in pointer[1:].split("/")]


def child(pointer: str, *tokens: str | int) -> str:
    """`pointer` extended by `tokens`."""
    for token in tokens:
        text = token if type(token) is str else str(token)
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        pointer = pointer + "/" + text
    return pointer


def to_fragment(pointer: str) -> str:
    """The pointer as a URI fragment (percent-encoded), without the leading '#'."""
    return quote(pointer, safe="/~!$&'()*+,;=:@")


def from_fragment(fragment: str) -> str:
    """The pointer a URI fragment spells (percent-decoded)."""
    return unquote(fragment)


def display(pointer: str) -> str:
    """How a pointer is shown to users: the root is '/' rather than the empty string."""
    return pointer or "/"

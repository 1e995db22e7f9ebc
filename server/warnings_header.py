"""The `formwork-warnings` response header: the warnings of the request's compiled grammar (an
unknown `format` kept as an annotation, a keyword the draft ignores, ...), so that a client sees
what the constraint does not enforce."""
from __future__ import annotations

from starlette.responses import Response

HEADER = "formwork-warnings"
MAX_HEADER_CHARS = 2048


def header_value(warnings: list[str]) -> str:
    """The warnings `; `-joined, as header-safe text: printable ASCII (other characters as
    backslash escapes), cut to `MAX_HEADER_CHARS` with a count of what was left out."""
    safe = [w.encode("ascii", "backslashreplace").decode("ascii") for w in warnings]
    safe = ["".join(c if " " <= c <= "~" else " " for c in w).replace(";", ",") for w in safe]
    value = "; ".join(safe)
    if len(value) > MAX_HEADER_CHARS:
        shown = "; ".join(safe)[:MAX_HEADER_CHARS - 40].rsplit("; ", 1)[0]
        value = f"{shown}; ... ({len(safe) - shown.count('; ') - 1} more)"
    return value


def with_warnings(response: Response, warnings: list[str]) -> Response:
    """`response` with the `formwork-warnings` header set when there are warnings."""
    if warnings:
        response.headers[HEADER] = header_value(warnings)
    return response

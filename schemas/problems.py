"""Problems found in a schema: where (JSON pointer), which keyword, why, and how bad."""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

from formwork.schemas.pointer import display


class Severity(str, enum.Enum):
    """How a problem affects a schema: `error` makes it invalid or unenforceable."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Problem:
    """One finding. `pointer` is an RFC 6901 JSON pointer into the schema ("" is the root), or
    `uri#pointer` for a location in another document of the registry."""

    pointer: str
    keyword: str
    reason: str
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        keyword = f" [{self.keyword}]" if self.keyword else ""
        return f"{self.severity.value}: {display(self.pointer)}{keyword}: {self.reason}"

    def as_warning(self) -> Problem:
        """This problem downgraded to a warning (what lenient mode does to unsupported keywords)."""
        if self.severity is not Severity.ERROR:
            return self
        return Problem(self.pointer, self.keyword, self.reason, Severity.WARNING)

    def to_json(self) -> dict[str, str]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data

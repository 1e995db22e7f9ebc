"""`formwork validate FILE... [-]`: check JSON Schemas before they are sent to the engine.

Per schema: `OK`, or each problem with its JSON pointer. Exit status: 0 when every schema is
valid and enforceable, 1 when any is not, 2 for a usage or I/O error (missing file, directory,
unreadable input). `--lenient` turns unenforceable keywords into warnings; `--json` prints a
machine-readable report.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from formwork.schemas.document import load_schema
from formwork.schemas.drafts import DRAFT_NAMES
from formwork.schemas.errors import SchemaError, SchemaFileError, SchemaTooLargeError
from formwork.schemas.problems import Problem, Severity
from formwork.schemas.refs import SchemaRegistry
from formwork.schemas.source import MAX_SOURCE_BYTES, load_source

EXIT_OK, EXIT_INVALID, EXIT_IO = 0, 1, 2
STDIN = "-"


@dataclass
class Report:
    """The outcome for one schema source."""

    source: str
    status: str = "ok"                    # "ok" | "invalid" | "io-error"
    draft: str | None = None
    problems: list[Problem] = field(default_factory=list)
    error: str | None = None              # the load error's type, when loading failed
    message: str | None = None

    @property
    def exit_code(self) -> int:
        return {"ok": EXIT_OK, "invalid": EXIT_INVALID, "io-error": EXIT_IO}[self.status]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "status": self.status, "draft": self.draft,
                "error": self.error, "message": self.message,
                "problems": [problem.to_json() for problem in self.problems]}


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `validate` on the `formwork` command's subparsers."""
    parser = subparsers.add_parser(
        "validate", help="check JSON Schemas: valid for their draft and enforceable by formwork",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="schema files to check; '-' reads one schema from stdin")
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    parser.add_argument("--lenient", action="store_true",
                        help="report unenforceable keywords as warnings, not errors")
    parser.add_argument("--draft", choices=list(DRAFT_NAMES), default=None,
                        help="dialect of schemas without $schema (default 2020-12)")
    parser.add_argument("--registry", action="append", default=[], metavar="URI=FILE",
                        help="a document that $refs may name by URI (repeatable); never fetched")
    parser.set_defaults(func=run)
    return parser


def _read_stdin(stream: Any) -> bytes:
    data = stream.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise SchemaTooLargeError(f"stdin is larger than the limit of {MAX_SOURCE_BYTES} bytes")
    return data


def _load_registry(entries: list[str]) -> SchemaRegistry | None:
    if not entries:
        return None
    documents = {}
    for entry in entries:
        uri, sep, path = entry.partition("=")
        if not sep or not uri or not path:
            raise SchemaFileError(f"--registry {entry!r}: expected URI=FILE")
        documents[uri] = load_source(Path(path))[0]
    return SchemaRegistry(documents)


def check_one(source: str, *, lenient: bool, draft: str | None,
              registry: SchemaRegistry | None, stdin: Any) -> Report:
    """Load and check one schema source, never raising."""
    report = Report(source="<stdin>" if source == STDIN else source)
    try:
        # a command-line argument is always a path, even if it looks like JSON text
        data = _read_stdin(stdin) if source == STDIN else Path(source)
        document = load_schema(data, registry=registry, draft=draft)
    except SchemaFileError as error:
        report.status, report.error, report.message = "io-error", type(error).__name__, str(error)
        return report
    except OSError as error:
        report.status, report.error = "io-error", type(error).__name__
        report.message = f"cannot read: {error.strerror or error}"
        return report
    except SchemaError as error:
        report.status, report.error, report.message = "invalid", type(error).__name__, str(error)
        report.problems = list(error.problems)
        return report
    except (RecursionError, MemoryError) as error:
        report.status, report.error = "invalid", type(error).__name__
        report.message = "the schema is too large or too deeply nested to check"
        return report
    report.draft = document.declared.name
    report.problems = document.problems(lenient=lenient)
    if any(problem.severity is Severity.ERROR for problem in report.problems):
        report.status = "invalid"
    return report


def _print_text(reports: list[Report], out: TextIO) -> None:
    for report in reports:
        counts = {severity: sum(p.severity is severity for p in report.problems)
                  for severity in Severity}
        if report.status == "ok":
            extra = f" ({counts[Severity.WARNING]} warning(s))" if counts[Severity.WARNING] else ""
            print(f"{report.source}: OK{extra}", file=out)
        elif report.status == "io-error":
            print(f"ERROR: {report.message}", file=out)
        elif report.problems:
            print(f"{report.source}: INVALID ({report.error or 'not enforceable'})", file=out)
        else:
            print(f"{report.source}: INVALID ({report.error}): {report.message}", file=out)
        for problem in report.problems:
            print(f"  {problem}", file=out)


def run(args: argparse.Namespace, *, stdin: Any = None, out: TextIO | None = None) -> int:
    """Run `formwork validate` with parsed arguments; returns the exit status."""
    out = out or sys.stdout
    stdin = stdin if stdin is not None else sys.stdin.buffer
    try:
        registry = _load_registry(args.registry)
    except (SchemaError, OSError) as error:
        print(f"formwork validate: {error}", file=sys.stderr)
        return EXIT_IO
    reports = [check_one(source, lenient=args.lenient, draft=args.draft, registry=registry,
                         stdin=stdin) for source in args.files]
    status = max(report.exit_code for report in reports)
    try:
        if args.json:
            json.dump({"exit_code": status, "lenient": args.lenient,
                       "schemas": [report.to_json() for report in reports]}, out, indent=2)
            out.write("\n")
        else:
            _print_text(reports, out)
        out.flush()
    except BrokenPipeError:  # e.g. `formwork validate *.json | head -1`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # keep the interpreter's final flush quiet
    return status

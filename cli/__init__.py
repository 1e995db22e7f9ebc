"""The `formwork` command line: a thin dispatcher; each command lives with its subsystem and
registers itself through an `add_parser(subparsers)` function listed in `COMMANDS`."""
from __future__ import annotations

import argparse

from formwork.sdk import generate_cmd
from formwork.schemas import validate_cmd
from formwork.server import serve_cmd

#: Modules providing `add_parser(subparsers)`; each sets `func(args) -> int` as its default.
COMMANDS = [validate_cmd, serve_cmd, generate_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="formwork", description="Structured-generation engine.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2): return, don't raise
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    return args.func(args)


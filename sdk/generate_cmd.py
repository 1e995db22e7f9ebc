"""`formwork generate`: one constrained generation from the command line.

    formwork generate --schema person.json "A person"             # in-process, the demo model
    formwork generate --model DIR --regex '\\d{3}-\\d{4}' "A phone number"
    formwork generate --url http://127.0.0.1:8000 --choice yes,no "Is water wet?"

The prompt is sent as a user chat message (`--raw`: completed as plain text). The validated output is
printed on stdout: the JSON value for `--schema`, the text for `--regex` / `--choice`.
Exit codes: 0 printed; 1 generation failed (cut off by `--max-tokens`, invalid output, engine or server
error); 2 bad input (usage, unreadable or unenforceable schema, bad regex, model that cannot be loaded).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from formwork.cli.args import positive_int

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "generate", help="generate one output constrained by a JSON Schema, a regex or a choice list",
        description="Generate one constrained output, in process (--model, default: the demo model) or from "
                    "a server (--url), and print it. Exit 0 on success, 1 when generation fails (e.g. cut "
                    "off by --max-tokens), 2 on bad input.")
    backend = parser.add_mutually_exclusive_group()
    backend.add_argument("--model", default=None, help="model directory (default: the embedded demo model)")
    backend.add_argument("--url", default=None, help="base URL of an OpenAI-compatible server")
    constraint = parser.add_mutually_exclusive_group(required=True)
    constraint.add_argument("--schema", metavar="FILE", help="JSON Schema file the output must validate against")
    constraint.add_argument("--regex", metavar="R", help="regular expression the output must match in full")
    constraint.add_argument("--choice", metavar="A,B,...", help="comma-separated strings; the output is one")
    parser.add_argument("--max-tokens", type=positive_int, default=None,
                        help="token limit (default: the model's context)")
    parser.add_argument("--temperature", type=float, default=None, help="sampling temperature (0 = greedy)")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed")
    parser.add_argument("--api-key", default=os.environ.get("FORMWORK_API_KEY"),
                        help="bearer token for --url (default: $FORMWORK_API_KEY)")
    parser.add_argument("--served-model-name", default=None, help="model name for --url (default: the first listed)")
    parser.add_argument("--raw", action="store_true", help="complete PROMPT as plain text, not as a chat message")
    parser.add_argument("prompt", metavar="PROMPT", help="the prompt")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Build the output type, generate, print; returns the exit code."""
    from formwork.core.sampling_params import SamplingParamsError
    from formwork.schemas.errors import SchemaError
    from formwork.sdk.errors import FormworkError, UnsupportedOutputTypeError

    try:
        output_type = _output_type(args)
    except (SchemaError, UnsupportedOutputTypeError, TypeError) as exc:
        return _fail(f"bad constraint: {exc}", EXIT_BAD_INPUT)
    prompt: Any = args.prompt if args.raw else [{"role": "user", "content": args.prompt}]
    options = (("max_tokens", args.max_tokens), ("temperature", args.temperature), ("seed", args.seed))
    sampling = {name: value for name, value in options if value is not None}
    try:
        value = _generate(args, prompt, output_type, sampling)
    except (_BackendError, SamplingParamsError) as exc:
        return _fail(str(exc), EXIT_BAD_INPUT)
    except FormworkError as exc:
        partial = getattr(exc, "partial_text", None)
        return _fail(f"{type(exc).__name__}: {exc}" + (f"\npartial output: {partial}" if partial else ""),
                     EXIT_FAILED)
    print(json.dumps(value, ensure_ascii=False) if args.schema is not None else value)
    return EXIT_OK


class _BackendError(Exception):
    """The model could not be loaded."""


def _output_type(args: argparse.Namespace) -> Any:
    from formwork.schemas import load_schema
    from formwork.sdk.output_types import Choice, JsonSchema, Regex, output_format

    if args.schema is not None:
        doc = load_schema(args.schema)
        output_type: Any = JsonSchema(doc.schema, name=os.path.splitext(os.path.basename(args.schema))[0])
    elif args.regex is not None:
        output_type = Regex(args.regex)
    else:
        choices = args.choice.split(",")
        if not all(choices):
            raise TypeError(f"--choice needs non-empty comma-separated strings, got {args.choice!r}")
        output_type = Choice(choices)
    output_format(output_type)  # unenforceable constraints fail here, before any model is loaded
    return output_type


def _generate(args: argparse.Namespace, prompt: Any, output_type: Any, sampling: dict[str, Any]) -> Any:
    if args.url is not None:
        from formwork.sdk.client import Client

        with Client(args.url, args.api_key, model=args.served_model_name) as client:
            return client.generate(prompt, output_type, **sampling)
    from formwork.core.model_files import ModelLoadError
    from formwork.sdk import LLM

    try:
        llm = LLM(args.model)
    except (ModelLoadError, FileNotFoundError, ValueError) as exc:
        raise _BackendError(f"cannot load the model: {exc}") from exc
    return llm.generate(prompt, output_type=output_type, **sampling)


def _fail(message: str, code: int) -> int:
    print(f"formwork generate: {message}", file=sys.stderr)
    return code

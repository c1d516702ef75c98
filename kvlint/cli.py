"""The `kvlint` command line: `kvlint check [PATH ...]` and `kvlint rule CODE`.

Exit codes: 0 no findings, 1 findings, 2 usage error or nothing could be checked.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

from kvlint import __version__
from kvlint.commands.check import EXIT_CLEAN, EXIT_ERROR, FORMATS
from kvlint.commands.check import add_options as add_check_options


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 too, but we want one clear line
        raise UsageError(message)


def codes_list(text: str) -> List[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def per_file_pairs(text: str) -> List[Tuple[str, str]]:
    """`tests/*.py:KV2,model.py:KV101` -> [("tests/*.py", "KV2"), ("model.py", "KV101")]
    (ruff's `PATTERN:CODE` pairs)."""
    pairs = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        glob, sep, code = item.rpartition(":")
        if not sep or not glob.strip() or not code.strip():
            raise argparse.ArgumentTypeError(f"expected GLOB:CODE, got {item!r}")
        pairs.append((glob.strip(), code.strip().upper()))
    return pairs


def jobs_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvlint", description="Checks Ascend attention and KV-cache operator calls.")
    parser.add_argument("--version", action="version", version=f"kvlint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    check = sub.add_parser("check", help="check Python files (default: the current folder)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    # repeated --select/--ignore/--extend-select/--per-file-ignores accumulate, as in ruff
    check.add_argument("--select", type=codes_list, action="extend", default=None, metavar="CODES",
                       help="only these codes or prefixes (KV1, KV301); replaces the configured select")
    check.add_argument("--ignore", type=codes_list, action="extend", default=[], metavar="CODES",
                       help="drop these codes or prefixes (adds to the configured ignore)")
    check.add_argument("--extend-select", type=codes_list, action="extend", default=[], metavar="CODES",
                       help="add these to the selection (KV900: unused noqa)")
    check.add_argument("--per-file-ignores", type=per_file_pairs, action="extend", default=None,
                       metavar="GLOB:CODE,...", help="replaces the configured per-file-ignores")
    check.add_argument("--extend-per-file-ignores", type=per_file_pairs, action="extend", default=[],
                       metavar="GLOB:CODE,...", help="adds to the configured per-file-ignores")
    check.add_argument("--output-format", "--format", dest="format", choices=FORMATS, default="text",
                       metavar="FORMAT",
                       help="text (also: full), concise, json, json-lines, github, gitlab, sarif, junit")
    check.add_argument("--no-source", action="store_true", help="text format: no source line")
    add_check_options(check)  # kvlint/commands/check.py: config, formats, fixes
    check.add_argument("--jobs", "-j", type=jobs_count, default=None, metavar="N",
                       help="worker processes (default: the number of CPUs; 1: no workers)")
    check.add_argument("--no-cache", action="store_true",
                       help="do not read or write the result cache (also: KVLINT_NO_CACHE=1)")
    check.add_argument("--cache-dir", metavar="DIR", default=None,
                       help="where the result cache lives (default: $KVLINT_CACHE_DIR, else .kvlint_cache "
                            "in the current folder)")
    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="list every rule")
    return parser


def run_check(args) -> int:
    from kvlint.commands.check import run
    from kvlint.config import ConfigError

    try:
        return run(args)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def run_rule(args) -> int:
    from kvlint.catalog import load_catalog  # here: a check served from the cache never loads it
    from kvlint.rule_docs import render_rule, render_table

    catalog = load_catalog()
    if args.all or not args.code:
        sys.stdout.write(render_table(catalog))
        return EXIT_CLEAN
    code = args.code.upper()
    if code not in catalog.rules and any(c.startswith(code) for c in catalog.rules):
        sys.stdout.write(render_table(catalog, prefix=code))  # a prefix: `kvlint rule KV1`
        return EXIT_CLEAN
    if code not in catalog.rules:
        raise UsageError(f"unknown rule code: {args.code} (`kvlint rule --all` lists them)")
    sys.stdout.write(render_rule(catalog.rules[code]))
    return EXIT_CLEAN


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "check":
            return run_check(args)
        if args.command == "rule":
            return run_rule(args)
        parser.print_help()
        return EXIT_ERROR
    except UsageError as exc:
        print(f"kvlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


def console_main() -> None:
    """The `kvlint` command: `main()`, then the process ends without the interpreter's
    teardown. Freeing the trees and indexes kept for importers (and the rest of the heap)
    one object at a time took 0.3-0.5 s of CPU after a one-process check of cann-recipes-infer +
    vllm-ascend; the output is flushed first, and kvlint registers no exit handlers."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)

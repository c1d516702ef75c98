"""`kvlint check`: resolve settings per file, check, fix, report.

The steps, in order: settings (kvlint/config.py: `[tool.kvlint]` found per file, with the
command line on top) -> files (discovery, then `exclude`) -> findings (kvlint.runner's
`check_files` when present, else one Checker per configuration) -> `per-file-ignores` ->
fixes (kvlint/fix.py, with --fix / --diff) -> the report in the chosen format.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import OrderedDict
from typing import List, Tuple

from kvlint.analysis.findings import FileResult
from kvlint.config import ConfigError, Overrides, Resolver, check_codes, drop_ignored, is_excluded, show
from kvlint.discovery import iter_python_files
from kvlint.report import Report
from kvlint.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "concise", "json", "github", "sarif", "junit")


def add_options(check: argparse.ArgumentParser) -> None:
    """The issue-4 options of `kvlint check` (the others live in kvlint/cli.py)."""
    check.add_argument("--config", metavar="FILE", help="use this pyproject.toml (or kvlint TOML) for every path")
    check.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    check.add_argument("--show-settings", action="store_true",
                       help="print the resolved configuration for the first path and exit")
    check.add_argument("--exclude", type=_globs, default=None, metavar="GLOBS",
                       help="comma-separated globs; replaces the configured `exclude`")
    check.add_argument("--extend-exclude", type=_globs, default=[], metavar="GLOBS")
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report there instead of stdout")
    check.add_argument("--statistics", action="store_true", help="count the findings per code")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--quiet", "-q", action="store_true", help="print findings only; nothing when clean")
    check.add_argument("--fix", action="store_true", help="apply the safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: apply unsafe fixes too")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")


def _globs(text: str) -> List[str]:
    return [g.strip() for g in text.split(",") if g.strip()]


def _check_group(paths: List[str], settings: Settings, args=None) -> List[FileResult]:
    from kvlint.cache import DEFAULT_DIR, open_cache
    from kvlint.runner import check_files  # issue 5: scheduling, --jobs, cache

    use_cache = args is not None and not getattr(args, "no_cache", False) and not os.environ.get("KVLINT_NO_CACHE")
    directory = getattr(args, "cache_dir", None) or os.environ.get("KVLINT_CACHE_DIR") or DEFAULT_DIR
    cache = open_cache(directory, settings) if use_cache else None
    results = check_files(paths, settings, jobs=getattr(args, "jobs", None), cache=cache,
                          roots=getattr(args, "paths", None) or ())
    if cache is not None:
        problem = cache.save()
        if problem:
            print(f"kvlint: warning: {problem}", file=sys.stderr)
    return results


def run(args) -> int:
    select = getattr(args, "select", None)
    for group in (select or [], args.ignore, args.extend_select):
        check_codes(group, "command line")
    overrides = Overrides(select=tuple(select) if select is not None else None, ignore=tuple(args.ignore),
                          extend_select=tuple(args.extend_select),
                          exclude=tuple(args.exclude) if args.exclude is not None else None,
                          extend_exclude=tuple(args.extend_exclude))
    resolver = Resolver(args.config, args.isolated, overrides)
    if args.show_settings:
        path = args.paths[0]
        _write(show(resolver.settings_for(path), path), args)
        return EXIT_CLEAN
    files, missing = iter_python_files(args.paths)
    if missing:
        for m in missing:
            print(f"kvlint: error: {m}: no such file or directory", file=sys.stderr)
        return EXIT_ERROR

    groups: "OrderedDict[str, Tuple[Settings, List[str]]]" = OrderedDict()
    for path in files:
        settings = resolver.settings_for(path)
        if is_excluded(path, settings):
            continue
        groups.setdefault(settings.config_file, (settings, []))[1].append(path)

    report = Report(files=sum(len(g[1]) for g in groups.values()))
    diffs: List[str] = []
    checked = 0
    for settings, paths in groups.values():
        results = _check_group(paths, settings, args)
        checked += sum(1 for r in results if r.checked)
        fixing = args.fix or args.diff
        checker = None
        for result in results:
            result.findings = drop_ignored(result.findings, result.path, settings)
            if fixing and any(_wanted(f, args) for f in result.findings):
                if checker is None:
                    from kvlint.engine import Checker

                    checker = Checker(settings)
                result = _fix_file(checker, result, settings, args, report, diffs)
            report.findings.extend(result.findings)
            report.errors.extend(result.errors)
    report.findings.sort(key=lambda f: f.sort_key())

    if args.diff:
        _write("".join(diffs), args)
        if report.fixed and not args.quiet:
            print(f"Would fix {report.fixed} problem{'s' if report.fixed != 1 else ''}.", file=sys.stderr)
        return EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN
    _write(render(report, args), args)
    if report.files and not checked:
        return EXIT_ERROR  # nothing could be read or decoded (the KV000 lines say why)
    if args.fix and report.fixed and not args.quiet and args.format not in ("text", "concise"):
        print(f"Fixed {report.fixed} problem{'s' if report.fixed != 1 else ''}.", file=sys.stderr)
    return EXIT_FINDINGS if report.findings and not args.exit_zero else EXIT_CLEAN


def _wanted(finding, args) -> bool:
    from kvlint.fix import wanted

    return wanted(finding, args.unsafe_fixes)


def _fix_file(checker, result: FileResult, settings: Settings, args, report: Report, diffs: List[str]) -> FileResult:
    from kvlint.fix import fix_source, write_atomic
    from kvlint.source import ReadFailure, load

    source = load(result.path)
    if isinstance(source, ReadFailure):
        return result
    outcome = fix_source(checker, source, args.unsafe_fixes,
                         keep=lambda fs: drop_ignored(fs, result.path, settings), result=result)
    report.errors.extend(outcome.errors)
    if not outcome.changed:
        return outcome.result
    report.fixed += outcome.fixed
    if args.diff:
        diffs.append(outcome.diff())
        return result
    write_atomic(result.path, outcome.text, source.encoding)
    return outcome.result


def render(report: Report, args) -> str:
    if args.statistics:
        from kvlint.report.statistics import render as render_stats

        return render_stats(report)
    fmt = args.format
    if fmt == "text":
        from kvlint.report.text_format import render as render_text, use_color

        if args.quiet and not report.findings and not report.errors:
            return ""
        color = use_color(sys.stdout) and not args.output_file
        return render_text(report, color=color, show_source=not getattr(args, "no_source", False),
                           with_summary=not args.quiet)
    module = {"concise": "concise", "json": "json_format", "github": "github", "sarif": "sarif",
              "junit": "junit"}[fmt]
    import importlib

    text = importlib.import_module(f"kvlint.report.{module}").render(report)
    if fmt == "concise" and report.fixed and args.fix and not args.quiet:
        text += f"Fixed {report.fixed} problem{'s' if report.fixed != 1 else ''}.\n"
    return text


def _write(text: str, args) -> None:
    if args.output_file:
        folder = os.path.dirname(os.path.abspath(args.output_file))
        os.makedirs(folder, exist_ok=True)
        with open(args.output_file, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


__all__ = ["FORMATS", "ConfigError", "add_options", "run"]

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
from kvlint.config import ConfigError, Overrides, Resolver, check_codes, drop_ignored, exclusion, show
from kvlint.discovery import GitIgnore, explicit_files, missing_paths, walk
from kvlint.report import Report, plural, summary_lines
from kvlint.settings import Settings

# kvlint's exit codes (README "Exit codes"), for every command
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "full", "concise", "json", "json-lines", "github", "gitlab", "sarif", "junit")
TEXT_FORMATS = ("text", "concise")  # the ones that print ruff's summary lines
STATISTICS_FORMATS = ("text", "concise", "json")  # --statistics: a table, or JSON
MODULES = {"concise": "concise", "json": "json_format", "json-lines": "json_lines", "github": "github",
           "gitlab": "gitlab", "sarif": "sarif", "junit": "junit"}


def add_options(check: argparse.ArgumentParser) -> None:
    """The configuration, output and fix options of `kvlint check` (the others live in kvlint/cli.py)."""
    check.add_argument("--config", metavar="FILE", help="use this pyproject.toml (or kvlint TOML) for every path")
    check.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    check.add_argument("--show-settings", action="store_true",
                       help="print the settings for the first path (for a file: the rules in effect "
                            "after per-file-ignores) and exit")
    check.add_argument("--exclude", type=_globs, action="extend", default=None, metavar="GLOBS",
                       help="comma-separated globs; replaces the configured `exclude`")
    check.add_argument("--extend-exclude", type=_globs, action="extend", default=[], metavar="GLOBS")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude and .gitignore to files named on the command line too "
                            "(the pre-commit hook sets it)")
    check.add_argument("--respect-gitignore", dest="respect_gitignore", action="store_true", default=True,
                       help="skip what .gitignore ignores (the default)")
    check.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                       help="check files .gitignore ignores too")
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report there instead of stdout")
    check.add_argument("--statistics", action="store_true", help="count the findings per code")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--quiet", "-q", action="store_true", help="print findings only; nothing when clean")
    check.add_argument("--fix", action="store_true", help="apply the safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: apply unsafe fixes too")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    check.add_argument("--preview", action="store_true", default=None,
                       help="also run the preview rules and heuristic branches (see `kvlint rule`)")


def _globs(text: str) -> List[str]:
    return [g.strip() for g in text.split(",") if g.strip()]


def _cache_dir(args) -> "str | None":
    """The cache folder of this run, or None when caching is off."""
    from kvlint.cache import DEFAULT_DIR

    if args is None or getattr(args, "no_cache", False) or os.environ.get("KVLINT_NO_CACHE"):
        return None
    return getattr(args, "cache_dir", None) or os.environ.get("KVLINT_CACHE_DIR") or DEFAULT_DIR


def _cold_folders(args) -> bool:
    """Heuristic COLD_FOLDERS: a run given a folder, with no cache folder yet (or caching off),
    will likely check enough files for a process pool: its workers are started before the
    walk (kvlint.runner.prestart). A cached re-check (the folder exists) starts none early."""
    if getattr(args, "jobs", None) == 1 or not any(os.path.isdir(p) for p in args.paths):
        return False
    directory = _cache_dir(args)
    return directory is None or not os.path.isdir(directory)


def _check_group(paths: List[str], settings: Settings, args=None, stream=None) -> List[FileResult]:
    from kvlint.cache import open_cache
    from kvlint.runner import check_files  # scheduling, --jobs, cache

    directory = _cache_dir(args)
    cache = open_cache(directory, settings) if directory is not None else None
    results = check_files(paths, settings, jobs=getattr(args, "jobs", None), cache=cache,
                          roots=getattr(args, "paths", None) or (), stream=stream)
    if cache is not None:
        problem = cache.save()
        if problem:
            print(f"kvlint: warning: {problem}", file=sys.stderr)
    return results


def run(args) -> int:
    from kvlint import runner

    try:
        return _run(args)
    finally:
        runner.stop_prestarted()


def _run(args) -> int:
    select = getattr(args, "select", None)
    per_file = getattr(args, "per_file_ignores", None)
    extend_per_file = getattr(args, "extend_per_file_ignores", [])
    for group in (select or [], args.ignore, args.extend_select,
                  [c for _, c in (per_file or []) + extend_per_file]):
        check_codes(group, "command line")
    if args.format == "full":
        args.format = "text"
    if args.statistics and args.format not in STATISTICS_FORMATS:
        raise ConfigError(f"--statistics prints a table (text) or JSON (--format json), not {args.format}")
    overrides = Overrides(select=tuple(select) if select is not None else None, ignore=tuple(args.ignore),
                          extend_select=tuple(args.extend_select),
                          exclude=tuple(args.exclude) if args.exclude is not None else None,
                          extend_exclude=tuple(args.extend_exclude),
                          per_file_ignores=_pairs(per_file) if per_file is not None else None,
                          extend_per_file_ignores=_pairs(extend_per_file),
                          preview=getattr(args, "preview", None))
    resolver = Resolver(args.config, args.isolated, overrides)
    if args.show_settings:
        path = args.paths[0]
        _write(show(resolver.settings_for(path), path), args)
        return EXIT_CLEAN
    respect_gitignore = getattr(args, "respect_gitignore", True)
    missing = missing_paths(args.paths)
    if missing:
        for m in missing:
            print(f"kvlint: error: {m}: no such file or directory", file=sys.stderr)
        return EXIT_ERROR
    stream = None
    if _cold_folders(args):
        from kvlint import runner

        jobs = getattr(args, "jobs", None)
        # the workers build the checker for the first path's settings while the walk starts
        runner.prestart(jobs, resolver.settings_for(args.paths[0]), args.paths)
        # each file goes to the workers as the walk finds it (kvlint.runner.Stream)
        stream = runner.open_stream(jobs, hashed=_cache_dir(args) is not None, roots=args.paths)

    explicit_paths = explicit_files(args.paths)
    force = getattr(args, "force_exclude", False)
    gitignore = GitIgnore() if respect_gitignore and force else None
    groups: "OrderedDict[str, Tuple[Settings, List[str]]]" = OrderedDict()
    for path in walk(args.paths, respect_gitignore):
        explicit = path in explicit_paths
        settings = resolver.settings_for(path, None if explicit else os.path.dirname(path))
        if not explicit or force:
            why = _excluded_because(path, settings, overrides, gitignore if explicit else None)
            if why is not None:
                if explicit and not args.quiet:  # named by the user: say why it is skipped
                    print(f"kvlint: warning: {path} not checked: {why} (--force-exclude)", file=sys.stderr)
                continue
        groups.setdefault(settings.config_file, (settings, []))[1].append(path)
        if stream is not None:
            stream.add(path, settings)

    report = Report(files=sum(len(g[1]) for g in groups.values()), unsafe_fixes=args.unsafe_fixes)
    diffs: List[str] = []
    checked = 0
    for settings, paths in groups.values():
        results = _check_group(paths, settings, args, stream)
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
            print(f"Would fix {plural(report.fixed, 'error')}.", file=sys.stderr)
        return EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN
    _write(render(report, args), args)
    if report.files and not checked:
        return EXIT_ERROR  # nothing could be read or decoded (the KV000 lines say why)
    if args.fix and report.fixed and not args.quiet and (args.format not in TEXT_FORMATS or args.statistics):
        print(summary_lines(report)[0], file=sys.stderr)
    return EXIT_FINDINGS if report.findings and not args.exit_zero else EXIT_CLEAN


def _pairs(items) -> tuple:
    """[(glob, code), ...] from the command line -> ((glob, (codes...)), ...) in order."""
    out: "OrderedDict[str, List[str]]" = OrderedDict()
    for glob, code in items:
        out.setdefault(glob, []).append(code)
    return tuple((g, tuple(c)) for g, c in out.items())


def _excluded_because(path: str, settings: Settings, overrides: Overrides, gitignore) -> "str | None":
    """Why `path` is excluded, or None: an `exclude`/`extend-exclude` pattern (from the command
    line or the config file), or .gitignore (only asked for files named on the command line:
    the walk has already skipped the others)."""
    hit = exclusion(path, settings)
    if hit is not None:
        key, pattern = hit
        from_cli = pattern in ((overrides.exclude or ()) if key == "exclude" else overrides.extend_exclude)
        where = f"--{key}" if from_cli else f"`{key}` in {settings.config_file}"
        return f"excluded by {where} pattern \"{pattern}\""
    if gitignore is not None and gitignore.ignored(path, False, os.path.dirname(os.path.abspath(path))):
        return "ignored by .gitignore"
    return None


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
    fmt = args.format
    summary = not args.quiet
    if args.statistics:
        from kvlint.report import statistics

        if fmt == "json":
            return statistics.render_json(report)
        text = statistics.render(report)
        return text + ("".join(line + "\n" for line in summary_lines(report)) if summary and report.findings else "")
    if fmt == "text":
        from kvlint.report.text_format import render as render_text
        from kvlint.report.text_format import use_color

        if args.quiet and not report.findings and not report.errors:
            return ""
        color = use_color(sys.stdout) and not args.output_file
        return render_text(report, color=color, show_source=not getattr(args, "no_source", False),
                           with_summary=summary)
    import importlib

    module = importlib.import_module(f"kvlint.report.{MODULES[fmt]}")
    if fmt == "concise":
        return module.render(report, with_summary=summary)
    return module.render(report)


def _write(text: str, args) -> None:
    if args.output_file:
        folder = os.path.dirname(os.path.abspath(args.output_file))
        os.makedirs(folder, exist_ok=True)
        with open(args.output_file, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


__all__ = ["FORMATS", "ConfigError", "add_options", "run"]

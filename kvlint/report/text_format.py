"""`--format text`: `path:line:col: CODE message`, the source line with a caret, a summary.
Colour through rich, only on a terminal and never when NO_COLOR is set."""
from __future__ import annotations

import io
import os
from collections import Counter
from typing import IO

from rich.console import Console
from rich.markup import escape

from kvlint.report import Report, safe_fixable


def make_console(stream: IO[str], color: bool) -> Console:
    return Console(file=stream, force_terminal=color, no_color=not color, highlight=False,
                   soft_wrap=True, emoji=False)


def use_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def render(report: Report, color: bool = False, show_source: bool = True, with_summary: bool = True) -> str:
    buf = io.StringIO()
    console = make_console(buf, color)
    for f in report.findings:
        console.print(f"[bold]{escape(f.path)}:{f.line}:{f.column}:[/bold] "
                      f"[bold red]{f.code}[/bold red] {escape(f.message)}"
                      + (" [dim]\\[*][/dim]" if safe_fixable(f) else ""))
        if show_source and f.source_line:
            line = f.source_line.expandtabs(4) if "\t" not in f.source_line[: f.column] else f.source_line
            gutter = f"{f.line:>5} | "
            console.print(f"[blue]{gutter}[/blue]{escape(line.rstrip())}")
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(line.rstrip()) - f.column + 1)
            console.print(" " * (len(gutter) + f.column - 1) + "[red]" + "^" * width + "[/red]")
            console.print()
    for e in report.errors:
        console.print(f"[yellow]error:[/yellow] {escape(e)}")
    if with_summary:
        console.print(summary(report))
    return buf.getvalue()


def summary(report: Report) -> str:
    n = len(report.findings)
    fixed = f"Fixed {report.fixed} problem{'s' if report.fixed != 1 else ''}. " if report.fixed else ""
    if n == 0:
        return fixed + f"All checks passed ({report.files} file{'s' if report.files != 1 else ''} checked)."
    fixable = sum(1 for f in report.findings if safe_fixable(f))
    unsafe = sum(1 for f in report.findings if f.fix is not None) - fixable
    by_code = Counter(f.code for f in report.findings)
    codes = ", ".join(f"{c} x{k}" for c, k in sorted(by_code.items()))
    tail = ", ".join(([f"{fixable} fixable with --fix"] if fixable else [])
                     + ([f"{unsafe} more with --unsafe-fixes"] if unsafe else []))
    tail = f" ({tail})" if tail else ""
    return fixed + f"Found {n} problem{'s' if n != 1 else ''} in {report.files} files checked: {codes}{tail}."

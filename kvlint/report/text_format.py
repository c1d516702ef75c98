"""`--format text` (ruff's `full`): `path:line:col: CODE [*] reason`, the source line with a
caret, the remedy as its own `help:` line, then ruff's summary lines. Colour through rich,
only on a terminal and never when NO_COLOR is set."""
from __future__ import annotations

import io
import os
from typing import IO

from rich.console import Console
from rich.markup import escape

from kvlint.report import Report, marker, split_help, summary_lines


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
        reason, remedy = split_help(f)
        mark = marker(f, report.unsafe_fixes)
        console.print(f"[bold]{escape(f.path)}:{f.line}:{f.column}:[/bold] "
                      f"[bold red]{f.code}[/bold red]" + (" [cyan]\\[*][/cyan]" if mark else "")
                      + f" {escape(reason)}")
        gutter = f"{f.line:>5} | "
        if show_source and f.source_line:
            line = f.source_line.expandtabs(4) if "\t" not in f.source_line[: f.column] else f.source_line
            console.print(f"[blue]{gutter}[/blue]{escape(line.rstrip())}")
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(line.rstrip()) - f.column + 1)
            console.print(" " * (len(gutter) + f.column - 1) + "[red]" + "^" * width + "[/red]")
        if remedy:
            console.print(" " * (len(gutter) - 2) + f"[cyan]= help:[/cyan] {escape(remedy)}")
        if show_source or remedy:
            console.print()
    for e in report.errors:
        console.print(f"[yellow]error:[/yellow] {escape(e)}")
    if with_summary:
        for line in summary_lines(report):
            console.print(escape(line))
    return buf.getvalue()


def summary(report: Report) -> str:
    return "\n".join(summary_lines(report))

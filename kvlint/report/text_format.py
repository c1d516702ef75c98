"""`--format text` (ruff's `full`): `path:line:col: CODE [*] reason`, the source line with a
caret, the remedy as its own `help:` line, then ruff's summary lines. Colour through rich,
only on a terminal and never when NO_COLOR is set."""
from __future__ import annotations

import io
import os
from typing import IO

from kvlint.report import Report, marker, split_help, summary_lines


def make_console(stream: IO[str], color: bool):
    from rich.console import Console

    return Console(file=stream, force_terminal=color, no_color=not color, highlight=False,
                   soft_wrap=True, emoji=False)


def use_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def render(report: Report, color: bool = False, show_source: bool = True, with_summary: bool = True) -> str:
    lines = list(_lines(report, show_source, with_summary))
    if not color and all(_plain(text) for line in lines for text in line[1::2]):
        # what rich prints for these without colour, without importing it (~60 ms)
        return "".join("".join(line[1::2]) + "\n" for line in lines)
    from rich.markup import escape

    buf = io.StringIO()
    console = make_console(buf, color)
    for line in lines:
        console.print("".join(part if k % 2 == 0 else escape(part) for k, part in enumerate(line)))
    return buf.getvalue()


def _plain(text: str) -> bool:
    """Whether rich prints `text` (escaped, without colour) as it is: printable characters, no
    backslash (rich's markup escapes are backslashes)."""
    return text.isprintable() and "\\" not in text


def _lines(report: Report, show_source: bool, with_summary: bool):
    """Each printed line as (markup, text, markup, text, ...): the markup parts are rich tags
    only (dropped without colour), the text parts are printed as they are."""
    for f in report.findings:
        reason, remedy = split_help(f)
        mark = (" ", "[cyan]", "[*]", "[/cyan]") if marker(f, report.unsafe_fixes) else ()
        yield ("[bold]", f"{f.path}:{f.line}:{f.column}:", "[/bold]", " ", "[bold red]", f.code, "[/bold red]",
               *mark, f" {reason}")
        gutter = f"{f.line:>5} | "
        if show_source and f.source_line:
            line = f.source_line.expandtabs(4) if "\t" not in f.source_line[: f.column] else f.source_line
            yield ("[blue]", gutter, "[/blue]", line.rstrip())
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(line.rstrip()) - f.column + 1)
            yield ("", " " * (len(gutter) + f.column - 1), "[red]", "^" * width, "[/red]")
        if remedy:
            yield ("", " " * (len(gutter) - 2), "[cyan]", "= help:", "[/cyan]", f" {remedy}")
        if show_source or remedy:
            yield ("",)
    for e in report.errors:
        yield ("[yellow]", "error:", "[/yellow]", f" {e}")
    if with_summary:
        for line in summary_lines(report):
            yield ("", line)


def summary(report: Report) -> str:
    return "\n".join(summary_lines(report))

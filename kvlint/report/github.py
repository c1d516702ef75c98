"""`--format github`: GitHub Actions workflow commands, one annotation per finding:
`::error file=PATH,line=L,col=C,endLine=L2,endColumn=C2,title=CODE::message`.

Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message `%`,
CR and LF are percent-encoded; in property values also `:` and `,`.
"""
from kvlint.report import Report

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    out = []
    for f in report.findings:
        props = [("file", f.path), ("line", f.line), ("col", f.column), ("endLine", f.end_line),
                 ("endColumn", f.end_column), ("title", f"kvlint ({f.code})")]
        head = ",".join(f"{k}={escape_property(str(v))}" for k, v in props)
        level = LEVELS.get(f.severity, "error")
        out.append(f"::{level} {head}::{escape_data(f'{f.code} {f.message}')}\n")
    for e in report.errors:
        out.append(f"::error title=kvlint internal error::{escape_data(e)}\n")
    return "".join(out)

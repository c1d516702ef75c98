"""A rule's documentation as text, from the catalog (`kvlint rule`, docs/ generation)."""
from __future__ import annotations

from kvlint.catalog import Catalog, RuleInfo


def render_rule(info: RuleInfo) -> str:
    where = " and ".join(info.checked)
    fix = {"safe": "safe fix available", "unsafe": "unsafe fix available (--unsafe-fixes)"}.get(info.fix, "no fix")
    parts = [f"# {info.code} {info.name}", "", info.summary + ".", "",
             f"Severity: {info.severity}. Checked: {where}. {fix[0].upper() + fix[1:]}."]
    if not info.enabled_by_default:
        parts += ["", f"Disabled by default: {info.disabled_reason}"]
    parts += ["", "## What it detects", "", info.what, "", "## Why it is a bug", "", info.why]
    if info.example:
        parts += ["", "## Example", "", "```python", info.example, "```"]
    if info.use_instead:
        parts += ["", "## Fix", "", "```python", info.use_instead, "```"]
    if info.options:
        parts += ["", "## Options", "", info.options]
    return "\n".join(parts) + "\n"


def render_table(catalog: Catalog) -> str:
    rows = ["| code | name | checked | fix | summary |", "| --- | --- | --- | --- | --- |"]
    for code in sorted(catalog.rules):
        r = catalog.rules[code]
        rows.append(f"| {r.code} | {r.name} | {', '.join(r.checked)} | {r.fix} | {r.summary} |")
    return "\n".join(rows) + "\n"

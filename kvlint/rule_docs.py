"""A rule's documentation as text, from the catalog (`kvlint rule`, docs/ generation)."""
from __future__ import annotations

from typing import List

from kvlint.catalog import Catalog, RuleInfo


def render_rule(info: RuleInfo) -> str:
    where = " and ".join(info.checked)
    fix = {"safe": "safe fix available", "unsafe": "unsafe fix available (--unsafe-fixes)"}.get(info.fix, "no fix")
    parts = [f"# {info.code} {info.name}", "", info.summary + ".", "",
             f"Severity: {info.severity}. Checked: {where}. {fix[0].upper() + fix[1:]}."]
    parts += ["", status_line(info)]
    if not info.enabled_by_default:
        parts += ["", f"Disabled by default: {info.disabled_reason}"]
    parts += ["", "## What it detects", "", info.what, "", "## Why it is a bug", "", info.why]
    if info.branches:
        parts += ["", "## Heuristic branches", ""]
        parts += [f"- `{b.name}` ({b.severity}, {'preview' if b.preview else 'stable'}): {b.summary}"
                  for b in info.branches.values()]
    if info.example:
        parts += ["", "## Example", "", "```python", info.example, "```"]
    if info.use_instead:
        parts += ["", "## Fix", "", "```python", info.use_instead, "```"]
    heuristics = heuristic_options(info)
    parts += ["", "## Options", "", info.options or ("" if heuristics else "None.")]
    if heuristics:
        parts[-1:] = heuristics_section(heuristics)
    parts += ["", f"Select or ignore it with `--select {info.code}` / `--ignore {info.code}` or in "
              f"`[tool.kvlint]`; silence one line with `# noqa: {info.code}`."]
    return "\n".join(parts) + "\n"


def heuristic_options(info: RuleInfo) -> List[str]:
    """The `[tool.kvlint.heuristics]` keys a rule reads (`heuristic_options` in its TOML)."""
    return list(info.extra.get("heuristic_options", ()))


def heuristics_section(keys: List[str]) -> List[str]:
    """The Options text for heuristic words: where they go, with the built-in words."""
    from kvlint.settings import HeuristicNames

    defaults = HeuristicNames()
    lines = ["The words the heuristics read; the values you give are added to the built-in ones. They",
             "live in `pyproject.toml` under `[tool.kvlint.heuristics]` (not in `[tool.kvlint]`",
             "itself):", "", "```toml", "[tool.kvlint.heuristics]"]
    for key in keys:
        builtin = getattr(defaults, key.replace("-", "_"))
        lines.append(f'{key} = ["..."]  # built in: {", ".join(builtin)}')
    return lines + ["```"]


def status_line(info: RuleInfo) -> str:
    """Stable or preview, as measured on the ecosystem corpus (docs/precision.md)."""
    if info.preview:
        why = f" {info.preview_reason}" if info.preview_reason else ""
        return (f"Status: preview.{why} It runs only with `--preview` (or `preview = true` in "
                f"`[tool.kvlint]`), however it is selected.")
    branches = [b.name for b in info.branches.values() if b.preview]
    tail = (f" Its preview branch{'es' if len(branches) > 1 else ''} "
            f"{', '.join(f'`{b}`' for b in branches)} run{'' if len(branches) > 1 else 's'} only with `--preview`."
            if branches else "")
    return ("Status: stable (at least 90% of its findings on the ecosystem corpus are real or justified, "
            "see docs/precision.md; or none there yet)." + tail)


def render_table(catalog: Catalog, prefix: str = "", link: bool = False) -> str:
    """The catalog as a Markdown table; `prefix` keeps only matching codes, `link` links each
    code to its docs/rules page."""
    rows = ["| code | name | status | checked | fix | summary |", "| --- | --- | --- | --- | --- | --- |"]
    for code in sorted(c for c in catalog.rules if c.startswith(prefix)):
        r = catalog.rules[code]
        shown = f"[{r.code}]({r.code}.md)" if link else r.code
        status = "preview" if r.preview else "stable"
        rows.append(f"| {shown} | {r.name} | {status} | {', '.join(r.checked)} | {r.fix} | {r.summary} |")
    return "\n".join(rows) + "\n"

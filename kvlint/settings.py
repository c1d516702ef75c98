"""Resolved settings for one run: which codes are on, severities, heuristic names.

Built from the command line and `[tool.kvlint]` in pyproject.toml (kvlint/config.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Tuple

from kvlint.analysis.context import HeuristicNames


def code_matches(code: str, patterns: Iterable[str]) -> bool:
    """`KV1` matches KV101..KV199; `KV301` matches only itself; `ALL` matches everything."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ()  # empty: every rule enabled by default
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    severity: Dict[str, str] = field(default_factory=dict)
    names: HeuristicNames = HeuristicNames()
    # from [tool.kvlint] (kvlint/config.py): glob patterns, relative to `root`
    exclude: Tuple[str, ...] = ()
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    root: str = ""  # the folder holding the config file ("" = the current folder)
    config_file: str = ""  # "" = no config file (defaults or --isolated)
    preview: bool = False  # preview rules and heuristic branches on (`--preview`, `preview = true`)

    def enabled(self, code: str, default_on: bool = True, preview_rule: bool = False) -> bool:
        """Whether rule `code` runs. A preview rule runs only with `preview` on, however it is
        selected (as in ruff)."""
        if code_matches(code, self.ignore) or (preview_rule and not self.preview):
            return False
        if self.select:
            return code_matches(code, self.select) or code_matches(code, self.extend_select)
        return default_on or code_matches(code, self.extend_select)

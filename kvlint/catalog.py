"""The rule and operator catalog, loaded from the `rules/` data folder.

This is the one place that reads `rules/`: the analyzer, the runtime guard, the CLI's
`kvlint rule` and the docs generator all go through it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kvlint import toml_snapshot
from kvlint.data import data_dir  # noqa: F401 (kvlint.catalog.data_dir, as before)
from kvlint.facts import Facts, load_facts

_MISSING = object()


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    kind: str  # "positional" or "keyword"
    default: Any = _MISSING

    @property
    def required(self) -> bool:
        return self.default is _MISSING


@dataclass(frozen=True)
class Operator:
    namespace: str
    name: str
    overload: str  # "" or "out"
    params: Tuple[Param, ...]
    returns: int
    schema: str
    source: str

    @property
    def qualified(self) -> str:
        """`namespace::name[.overload]`, as torch.library names the operator."""
        suffix = f".{self.overload}" if self.overload else ""
        return f"{self.namespace}::{self.name}{suffix}"

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def keyword_names(self) -> frozenset:
        names = {p.name for p in self.params}
        if self.overload == "out":
            names |= {"out"}  # the Python binding of an out= overload
        return frozenset(names)

    @property
    def positional_params(self) -> Tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "positional")


@dataclass(frozen=True)
class Branch:
    """A named heuristic branch of a rule (`[branches.NAME]` in its TOML): its own severity
    and stable/preview status, measured separately on the ecosystem corpus."""
    name: str
    summary: str
    severity: str
    preview: bool = False


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: str
    summary: str
    fix: str  # "safe", "unsafe" or "none"
    checked: Tuple[str, ...]  # "static", "runtime"
    what: str
    why: str
    example: str
    use_instead: str
    options: str = ""
    enabled_by_default: bool = True
    disabled_reason: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)
    # preview: below 90% TRUE+JUSTIFIED on the ecosystem corpus (docs/precision.md), or new and
    # unmeasured; runs only with `--preview` / `preview = true`
    preview: bool = False
    preview_reason: str = ""
    branches: Dict[str, Branch] = field(default_factory=dict)

    @property
    def fixable(self) -> bool:
        return self.fix != "none"


class Catalog:
    def __init__(self, root: Optional[Path] = None):
        self.root = root or data_dir()
        raw = json.loads((self.root / "operators.json").read_text(encoding="utf-8"))
        self.generated_from: str = raw.get("generated_from", "")  # the wheel operators.json was read from
        self.operators: List[Operator] = [self._operator(o) for o in raw["operators"]]
        self._by_key = {(o.namespace, o.name, o.overload): o for o in self.operators}
        self._names = frozenset(o.name for o in self.operators)
        self.facts: Facts = load_facts(self.root)
        self.rules: Dict[str, RuleInfo] = {}
        for path, table in toml_snapshot.read_tables(self.root / "codes", "KV*.toml"):
            info = self._rule(path, table)
            self.rules[info.code] = info

    @staticmethod
    def _operator(o: dict) -> Operator:
        params = tuple(
            Param(p["name"], p["type"], p["kind"], p.get("default", _MISSING) if not p.get("required") else _MISSING)
            for p in o["params"]
        )
        return Operator(o["namespace"], o["name"], o.get("overload", ""), params, o["returns"],
                        o["schema"], o.get("source", ""))

    @staticmethod
    def _rule(path: Path, d: Dict[str, Any]) -> RuleInfo:
        if d.get("code") != path.stem:
            raise ValueError(f"{path}: code {d.get('code')!r} does not match the file name")
        known = {"code", "name", "severity", "summary", "fix", "checked", "what", "why", "example",
                 "use_instead", "options", "enabled_by_default", "disabled_reason", "preview",
                 "preview_reason", "branches"}
        severity = d.get("severity", "error")
        branches = {name: Branch(name, b.get("summary", "").strip(), b.get("severity", severity),
                                 bool(b.get("preview", False)))
                    for name, b in d.get("branches", {}).items()}
        return RuleInfo(
            code=d["code"], name=d["name"], severity=severity, summary=d["summary"],
            fix=d.get("fix", "none"), checked=tuple(d.get("checked", ["static"])),
            what=d["what"].strip(), why=d["why"].strip(), example=d.get("example", "").strip("\n"),
            use_instead=d.get("use_instead", "").strip("\n"), options=d.get("options", "").strip(),
            enabled_by_default=d.get("enabled_by_default", True),
            disabled_reason=d.get("disabled_reason", "").strip(),
            extra={k: v for k, v in d.items() if k not in known},
            preview=bool(d.get("preview", False)), preview_reason=d.get("preview_reason", "").strip(),
            branches=branches,
        )

    def operator(self, namespace: str, name: str, overload: str = "") -> Optional[Operator]:
        return self._by_key.get((namespace, name, overload))

    def operator_names(self) -> frozenset:
        """Every base operator name, for the byte pre-filter (one set, made with the catalog:
        each checked file's resolver asks for it)."""
        return self._names



@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    return Catalog()

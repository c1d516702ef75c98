"""Rule fixtures and their snapshots: `fixtures/rules/KVnnn/`.

- `bad.py`: code the rule must report;
- `bad.snap`: what the user sees, `LINE:COL CODE message` per finding, with only that rule
  selected;
- `bad.fixed.snap` / `bad.unsafe-fixed.snap`: the text of `bad.py` after `--fix` /
  `--fix --unsafe-fixes` with only that rule selected, for every rule the catalog says is
  fixable (rules/codes/KVnnn.toml `fix = "safe"` / `"unsafe"`);
- `good.py`: code no rule may report (all rules on).

Both runs include the preview rules and branches.

After a change, regenerate the snapshots and review the diff it prints:
`python scripts/update_snapshots.py` (all rules) or `python scripts/update_snapshots.py KV101`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from kvlint.catalog import load_catalog
from kvlint.engine import Checker
from kvlint.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
REGENERATE = "python scripts/update_snapshots.py"


def all_on_settings() -> Settings:
    return Settings(extend_select=("ALL",), preview=True)


def only(code: str) -> Settings:
    return Settings(select=(code,), preview=True)


def findings_lines(path: Path, settings: Optional[Settings] = None, messages: bool = False) -> List[str]:
    """`LINE:COL CODE` (or `LINE:COL CODE message`) per finding, in report order."""
    result = Checker(settings or all_on_settings()).check_path(str(path))
    if result.errors:
        raise AssertionError("internal errors: " + "; ".join(result.errors))
    return [f"{f.line}:{f.column} {f.code}" + (f" {f.message}" if messages else "") for f in result.findings]


def fixed_text(path: Path, settings: Settings, unsafe: bool) -> str:
    from kvlint.fix import fix_source
    from kvlint.source import ReadFailure, load

    source = load(str(path))
    if isinstance(source, ReadFailure):
        raise AssertionError(f"{path}: {source.reason}")
    outcome = fix_source(Checker(settings), source, unsafe=unsafe)
    if outcome.errors:
        raise AssertionError("; ".join(outcome.errors))
    return outcome.text


@dataclass(frozen=True)
class Snapshot:
    path: Path
    text: str  # what the file must hold


def snapshots(rule_dir: Path) -> List[Snapshot]:
    """The snapshots of one rule folder, as they must be now. The fixed-text ones follow the
    catalog: a rule with `fix = "safe"` has `bad.fixed.snap` (and `bad.unsafe-fixed.snap`
    when its unsafe fixes change more), one with `fix = "unsafe"` has `bad.unsafe-fixed.snap`."""
    code = rule_dir.name
    bad = rule_dir / "bad.py"
    header = f"# {code} alone on {bad.relative_to(FIXTURES.parent.parent).as_posix()}\n"
    # KV000 is no rule: a file is parsed (and a syntax error reported) when a rule wants it
    settings = all_on_settings() if code == "KV000" else only(code)
    if code == "KV000":
        header = f"# KV000 with all rules on, {bad.relative_to(FIXTURES.parent.parent).as_posix()}\n"
    lines = findings_lines(bad, settings, messages=True)
    out = [Snapshot(rule_dir / "bad.snap", header + "".join(f"{line}\n" for line in lines))]
    info = load_catalog().rules.get(code)
    if info is None or not info.fixable:
        return out
    unsafe = fixed_text(bad, only(code), unsafe=True)
    if info.fix == "safe":
        safe = fixed_text(bad, only(code), unsafe=False)
        out.append(Snapshot(rule_dir / "bad.fixed.snap", safe))
        if unsafe != safe:
            out.append(Snapshot(rule_dir / "bad.unsafe-fixed.snap", unsafe))
    else:
        out.append(Snapshot(rule_dir / "bad.unsafe-fixed.snap", unsafe))
    return out


def rule_dirs(codes: Optional[List[str]] = None) -> List[Path]:
    dirs = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and (p / "bad.py").is_file())
    if codes:
        wanted = {c.upper() for c in codes}
        dirs = [d for d in dirs if d.name in wanted]
    return dirs


def stale(rule_dir: Path) -> Dict[Path, str]:
    """Snapshot path -> its new text, for the snapshots that are missing or out of date."""
    out = {}
    for snap in snapshots(rule_dir):
        current = snap.path.read_text(encoding="utf-8") if snap.path.is_file() else None
        if current != snap.text:
            out[snap.path] = snap.text
    return out

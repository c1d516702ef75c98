"""Regenerate the rule snapshots (fixtures/rules/KVnnn/*.snap) and show what changed.

    python scripts/update_snapshots.py            # every rule
    python scripts/update_snapshots.py KV101 KV3  # some rules (a prefix selects a group)
    python scripts/update_snapshots.py --check    # change nothing; exit 1 if a snapshot is stale

Prints a unified diff per changed snapshot (ruff's `cargo insta review` habit): review it,
then commit the snapshots with the change that caused them.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvlint.testing import rule_dirs, stale  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("codes", nargs="*", help="rule codes or prefixes (default: all)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a snapshot is stale")
    args = parser.parse_args(argv)
    prefixes = [c.upper() for c in args.codes]
    dirs = [d for d in rule_dirs() if not prefixes or any(d.name.startswith(p) for p in prefixes)]
    changed = 0
    for rule_dir in dirs:
        for path, text in stale(rule_dir).items():
            changed += 1
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            rel = path.relative_to(ROOT).as_posix()
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=f"a/{rel}" if old else "/dev/null", tofile=f"b/{rel}"))
            if not args.check:
                path.write_text(text, encoding="utf-8")
    verb = "stale" if args.check else "updated"
    print(f"{changed} snapshot(s) {verb} in {len(dirs)} rule folder(s)", file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

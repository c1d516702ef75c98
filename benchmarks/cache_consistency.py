#!/usr/bin/env python3
"""The result cache, end to end: after each edit of a real code base, a cached run reports
exactly what a `--no-cache` run reports.

    python benchmarks/cache_consistency.py /tmp/eco/vllm-project+vllm-ascend [--per-kind 6]
    python benchmarks/cache_consistency.py BASE --kvlint /tmp/old-checkout

The code base's .py files (and pyproject.toml) are copied into a temporary folder (the code
base is never written) and checked once with a fresh cache. Then, one at a time, each edit of
mutations.py's sample (`mutations.sampled_sites`, `--per-kind` sites per kind: int64 block tables, float masks, dropped
masks, sparse_mode changes: the edits that change findings in the files that use a module) is
applied and then reverted; after each of the two, the whole copy is checked with the cache
(an incremental run: only the files whose bytes or dependencies changed are checked again)
and without, and the two reports are compared finding by finding. Prints each difference, and
how many of the states changed the findings at all (a state that changes nothing tests
little). Exits 1 when a difference is found. A check, not a timing: it prints no speed.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mutations  # noqa: E402 (benchmarks/ is no package)

FINDING = re.compile(r".+?:\d+:\d+: KV\d+")


def report(kvlint: Path, root: Path, *options: str) -> List[str]:
    """The sorted findings of `kvlint check .` in `root` (concise format), with the kvlint of
    the checkout `kvlint` (mutations.RUN_FROM: whatever is installed)."""
    proc = subprocess.run([sys.executable, "-c", mutations.RUN_FROM, str(kvlint), "check", "--exit-zero",
                           "--format", "concise", *options, "."], cwd=root, capture_output=True, text=True)
    return sorted(line for line in proc.stdout.splitlines() if FINDING.match(line))


def settle(path: Path, seconds: float) -> None:
    """Date the file `seconds` back, so that its stat is trusted (not a racy one)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("--per-kind", type=int, default=6)
    parser.add_argument("--kvlint", type=Path, default=HERE.parent, help="the checkout to run (default: this one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kvlint-cache-") as tmp:
        root, cache = Path(tmp) / "code", Path(tmp) / "cache"
        root.mkdir()
        texts = mutations.copy_base(args.base, root)
        for dirpath, _, names in os.walk(root):
            for name in names:
                settle(Path(dirpath) / name, 30)
        chosen = mutations.sampled_sites(root, texts, args.per_kind)
        original = report(args.kvlint, root, "--cache-dir", str(cache))
        differences = changed = 0
        for m in chosen:
            path = root / m.path
            old = texts[m.path]
            for state, text in (("edited", m.apply(old)), ("reverted", old)):
                path.write_text(text, encoding="utf-8")
                settle(path, 5)
                cached = report(args.kvlint, root, "--cache-dir", str(cache))
                fresh = report(args.kvlint, root, "--no-cache")
                changed += fresh != original
                if cached != fresh:
                    differences += 1
                    print(f"DIFFERENCE {state} {m.kind} {m.path}:{m.line}")
                    for line in sorted(set(cached) - set(fresh)):
                        print(f"  only cached: {line}")
                    for line in sorted(set(fresh) - set(cached)):
                        print(f"  only fresh:  {line}")
        print(f"{args.base.name}: {len(chosen)} edits, {2 * len(chosen)} states, {changed} with findings other "
              f"than the original's, {differences} where the cached run differs from --no-cache")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time two commits of kvlint against each other, and against ruff, in the same minutes.

    python benchmarks/ab_trees.py --base COMMIT [--new COMMIT] PATH... [--rounds 12] [--jobs N]

Each commit is checked out in a temporary git worktree (removed afterwards; `--new`
defaults to the working tree itself, uncommitted edits included) and its bytecode compiled
first, as bench_static.py does. Then, `--rounds` times, in rotation: `kvlint check
--no-source --no-cache PATH...` from the base tree, from the new tree, and `ruff check
--no-cache --isolated PATH...` when ruff is found. This machine's speed drifts by up to 2x
between minutes, so runs of different trees are only compared within one round: the
figures are the medians of the round-by-round ratios (new/base, base/ruff, new/ruff), with
each command's median and best wall time and median CPU seconds.

Used for the "against the starting tree in the same minutes" figures of docs/design.md
("Performance"), and to measure a tree against the one an issue was filed on.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from typing import Dict, Iterator, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_static import Run, compile_kvlint, kvlint_env, run_once  # noqa: E402


def summary(runs: Dict[str, List[Run]], pairs: Sequence[Sequence[str]]) -> List[str]:
    """The report's lines: per command its median and best wall time and median CPU time;
    then, for each (a, b) of `pairs` with runs of both, the median and range of the
    round-by-round ratios of a's wall time to b's."""
    lines = [f"{'command':<8} {'rounds':>6} {'wall median':>12} {'wall best':>10} {'CPU median':>11}"]
    for name, rs in runs.items():
        lines.append(f"{name:<8} {len(rs):>6} {statistics.median(r.wall for r in rs):>12.3f} "
                     f"{min(r.wall for r in rs):>10.3f} {statistics.median(r.cpu for r in rs):>11.3f}")
    for a, b in pairs:
        if runs.get(a) and runs.get(b):
            ratios = [x.wall / y.wall for x, y in zip(runs[a], runs[b])]
            lines.append(f"{a}/{b}: median {statistics.median(ratios):.3f}x "
                         f"(range {min(ratios):.3f}-{max(ratios):.3f}x, {len(ratios)} rounds)")
    return lines


@contextmanager
def worktree(commit: str) -> Iterator[str]:
    """A detached checkout of `commit` in a temporary folder, removed afterwards."""
    folder = tempfile.mkdtemp(prefix="kvlint-ab-")
    path = os.path.join(folder, "tree")
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", path, commit], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--base", required=True, metavar="COMMIT", help="the tree to compare against")
    parser.add_argument("--new", metavar="COMMIT", help="default: this working tree, as it is")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--jobs", type=int, help="kvlint's --jobs (default: its own)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="default: ruff on PATH; '' for none")
    args = parser.parse_args(argv)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    kvlint = [args.python, "-m", "kvlint", "check", *args.paths, "--no-source", "--no-cache"]
    if args.jobs is not None:
        kvlint += ["--jobs", str(args.jobs)]
    ruff = [args.ruff, "check", "--no-cache", "--isolated", *args.paths] if args.ruff else None
    with ExitStack() as trees:
        base_tree = trees.enter_context(worktree(args.base))
        new_tree = trees.enter_context(worktree(args.new)) if args.new else REPO
        commands = [("base", kvlint, kvlint_env(base_tree)), ("new", kvlint, kvlint_env(new_tree))]
        for tree, (_, _, env) in zip((base_tree, new_tree), commands):
            compile_kvlint(args.python, tree, env)
        if ruff is not None:
            commands.append(("ruff", ruff, None))
        runs: Dict[str, List[Run]] = {name: [] for name, _, _ in commands}
        for k in range(args.rounds):
            order = commands if k % 2 == 0 else commands[::-1]  # ABC CBA ...
            for name, argv_, env in order:
                runs[name].append(run_once(name, argv_, env))
    print(f"base {args.base}, new {args.new or 'the working tree'}; {' '.join(args.paths)}")
    for line in summary(runs, [("new", "base"), ("base", "ruff"), ("new", "ruff")]):
        print(line)
    failed = sorted({r.name for rs in runs.values() for r in rs if r.status not in (0, 1)})
    if failed:  # 0 clean, 1 findings; anything else did not check the code (a usage error...)
        print(f"not comparable: {', '.join(failed)} exited with another status than 0 or 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

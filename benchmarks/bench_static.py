#!/usr/bin/env python3
"""Time `kvlint check` against ruff and TorchFix on the same folders.

    python benchmarks/bench_static.py /tmp/cri /tmp/va [--repeat 3] [--torchfix PATH]

Runs, in this order and each `--repeat` times (the best wall time is kept, with that run's
CPU and memory):

- kvlint cold: `kvlint check --no-cache` (default rules, default --jobs = CPUs);
- kvlint cold serial: the same with `--jobs 1`;
- kvlint warm: `kvlint check --cache-dir <tmp>` after one priming run, nothing changed;
- ruff: `ruff check --no-cache --isolated` (its default rules), when `ruff` is found;
- TorchFix: `torchfix` (its default rules and jobs), when found (`--torchfix`, or on PATH);
  once, as it takes minutes.

Wall seconds come from the clock; CPU seconds (user + system) and peak memory (the largest
resident set of one process of the command's tree: ru_maxrss) from the rusage `wait4()`
returns for that command. The output ends with the ratios kvlint/ruff and kvlint/TorchFix.
Every command's output goes to /dev/null; its exit status is shown (1 = findings).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    max_rss_mb: float
    status: int


def measure(name: str, argv: List[str], repeat: int, env=None) -> Run:
    best: Optional[Run] = None
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        run = Run(name, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)
        if best is None or run.wall < best.wall:
            best = run
    assert best is not None
    return best


def corpus_size(paths: List[str]):
    """The files kvlint itself would look at (its discovery), and their lines."""
    sys.path.insert(0, REPO)
    from kvlint.discovery import iter_python_files

    files, _ = iter_python_files(paths)
    lines = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                lines += fh.read().count(b"\n")
        except OSError:
            pass
    return len(files), lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="corpus folders")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff executable (default: on PATH)")
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="torchfix executable (default: on PATH)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs kvlint")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    kvlint = [args.python, "-m", "kvlint", "check", *args.paths, "--no-source"]
    files, lines = corpus_size(args.paths)
    print(f"corpus: {', '.join(args.paths)}: {files} .py files, {lines:,} lines; {os.cpu_count()} CPUs; "
          f"best of {args.repeat}")

    runs = [measure("kvlint cold", kvlint + ["--no-cache"], args.repeat, env),
            measure("kvlint cold --jobs 1", kvlint + ["--no-cache", "--jobs", "1"], args.repeat, env)]
    with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as cache_dir:
        warm = kvlint + ["--cache-dir", cache_dir]
        subprocess.run(warm, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # prime it
        runs.append(measure("kvlint warm (cache)", warm, args.repeat, env))
    ruff = torchfix = None
    if args.ruff:
        ruff = measure("ruff (default rules)", [args.ruff, "check", "--no-cache", "--isolated", *args.paths], args.repeat)
        runs.append(ruff)
    else:
        print("ruff: not found (--ruff PATH)")
    if args.torchfix:
        # once: it takes minutes
        torchfix = measure("TorchFix (default rules)", [args.torchfix, *args.paths], 1)
        runs.append(torchfix)
    else:
        print("TorchFix: not found (pip install torchfix, or --torchfix PATH)")

    print(f"\n{'command':<26} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'exit':>5}")
    for r in runs:
        print(f"{r.name:<26} {r.wall:>8.2f} {r.cpu:>8.2f} {r.max_rss_mb:>8.0f} {r.status:>5}")
    cold, serial, warm_run = runs[0], runs[1], runs[2]
    print()
    for other in (ruff, torchfix):
        if other is None:
            continue
        label = other.name.split(" ")[0]
        print(f"kvlint cold / {label}: wall {cold.wall / other.wall:.3g}x, CPU {cold.cpu / other.cpu:.3g}x, "
              f"memory {cold.max_rss_mb / other.max_rss_mb:.3g}x"
              + (f" ({label} takes {other.wall / cold.wall:.0f}x kvlint's wall time)" if other.wall > cold.wall else ""))
        print(f"kvlint warm / {label}: wall {warm_run.wall / other.wall:.3g}x")
    print(f"kvlint cold: {serial.wall / cold.wall:.2f}x faster than --jobs 1; warm re-check {warm_run.wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

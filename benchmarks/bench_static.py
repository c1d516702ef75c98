#!/usr/bin/env python3
"""Time `kvlint check` against ruff and TorchFix on the same folders.

    python benchmarks/bench_static.py /tmp/cri /tmp/va [--repeat 3] [--torchfix PATH]
    python benchmarks/bench_static.py --targets /tmp/eco [--repeat 5]

Runs, in this order and each `--repeat` times (the best wall time is kept, with that run's
CPU and memory):

- kvlint cold: `kvlint check --no-cache` (default rules, default --jobs = CPUs), in turns
  with ruff: `ruff check --no-cache --isolated` (its default rules), when `ruff` is found
  (kvlint, ruff, ruff, kvlint, ...: this machine's speed drifts within a minute, so the two
  are compared on the same minutes; the median of the run-by-run ratios is printed too);
- kvlint cold serial: the same with `--jobs 1`;
- kvlint warm: `kvlint check --cache-dir <tmp>` after one priming run, nothing changed;
- TorchFix: `torchfix` (its default rules and jobs), when found (`--torchfix`, or on PATH);
  once, as it takes minutes.

`--targets ECO` runs the speed targets on the ecosystem folders under ECO (kvlint's
`benchmarks/ecosystem.py` extracts them): cann-recipes-infer + vllm-ascend cold, cold
serial, warm and ruff; sglang cold and ruff; the files a one-line edit of vllm-ascend's
`device_op.py` re-checks (benchmarks/recheck.py); then each target with its goal.

Wall seconds come from the clock; CPU seconds (user + system) and peak memory (the largest
resident set of one process of the command's tree: ru_maxrss) from the rusage `wait4()`
returns for that command. On a loaded machine the wall time of both tools grows with the
load; CPU seconds much less, so both are printed, with the load average before and after.
kvlint's bytecode is compiled first (`compileall`, as installing the package does), so no
run pays for compiling kvlint's own modules (PYTHONDONTWRITEBYTECODE would make every run
do it). The output ends with the ratios kvlint/ruff and kvlint/TorchFix. Every command's
output goes to /dev/null; its exit status is shown (1 = findings).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    max_rss_mb: float
    status: int


def kvlint_env(tree: str) -> Dict[str, str]:
    """This environment with `tree`'s kvlint first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def compile_kvlint(python: str, tree: str, env: Dict[str, str]) -> None:
    """`tree`'s kvlint bytecode and rules/ snapshots (kvlint.toml_snapshot), as an installed
    package has them after its first run (written next to the sources, in the git-ignored
    __pycache__ folders), so that no timed run compiles or writes them."""
    subprocess.run([python, "-m", "compileall", "-q", os.path.join(tree, "kvlint")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    writing = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-c", "import kvlint.catalog as c; c.load_catalog()"], cwd=tree,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=writing)


def run_once(name: str, argv: List[str], env=None) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return Run(name, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))


def measure(name: str, argv: List[str], repeat: int, env=None) -> Run:
    return min((run_once(name, argv, env) for _ in range(repeat)), key=lambda r: r.wall)


@dataclass
class Paired:
    """kvlint and a peer run in turns (ABBA...), so that both see the same machine: this
    machine's speed drifts by up to 2x within a minute, and a block of one tool's runs then
    a block of the other's compared different machines. `ratios`: kvlint's wall / the peer's
    in each adjacent pair."""
    kvlint: Run
    peer: Run
    ratios: List[float]

    @property
    def median_ratio(self) -> float:
        return statistics.median(self.ratios)


def measure_paired(a_name: str, a_argv: List[str], b_name: str, b_argv: List[str], repeat: int,
                   env=None, peer_env=None) -> Paired:
    a_runs, b_runs = [], []
    for k in range(repeat):
        if k % 2 == 0:
            a_runs.append(run_once(a_name, a_argv, env))
            b_runs.append(run_once(b_name, b_argv, peer_env))
        else:
            b_runs.append(run_once(b_name, b_argv, peer_env))
            a_runs.append(run_once(a_name, a_argv, env))
    return Paired(min(a_runs, key=lambda r: r.wall), min(b_runs, key=lambda r: r.wall),
                  [a.wall / b.wall for a, b in zip(a_runs, b_runs)])


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


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def bench(paths: List[str], args, env, serial: bool = True, warm: bool = True,
          torchfix: bool = True) -> Tuple[List[Run], Optional[Paired]]:
    """Measure one corpus and print its table and ratios; returns the runs (kvlint cold first)
    and the paired kvlint cold / ruff runs."""
    kvlint = [args.python, "-m", "kvlint", "check", *paths, "--no-source"]
    files, lines = corpus_size(paths)
    print(f"corpus: {', '.join(paths)}: {files} .py files, {lines:,} lines; {os.cpu_count()} CPUs; "
          f"best of {args.repeat}; {_load()}")

    paired = None
    if args.ruff:  # kvlint cold and ruff in turns (see Paired)
        paired = measure_paired("kvlint cold", kvlint + ["--no-cache"], "ruff (default rules)",
                                [args.ruff, "check", "--no-cache", "--isolated", *paths], args.repeat, env)
        runs = [paired.kvlint]
    else:
        runs = [measure("kvlint cold", kvlint + ["--no-cache"], args.repeat, env)]
    if serial:
        runs.append(measure("kvlint cold --jobs 1", kvlint + ["--no-cache", "--jobs", "1"], args.repeat, env))
    warm_run = None
    if warm:
        with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as cache_dir:
            cached = kvlint + ["--cache-dir", cache_dir]
            subprocess.run(cached, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # prime it
            warm_run = measure("kvlint warm (cache)", cached, args.repeat, env)
            runs.append(warm_run)
    ruff = tf = None
    if paired is not None:
        ruff = paired.peer
        runs.append(ruff)
    else:
        print("ruff: not found (--ruff PATH)")
    if args.torchfix and torchfix:
        # once: it takes minutes
        tf = measure("TorchFix (default rules)", [args.torchfix, *paths], 1)
        runs.append(tf)
    elif torchfix:
        print("TorchFix: not found (pip install torchfix, or --torchfix PATH)")

    print(f"\n{'command':<26} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'exit':>5}")
    for r in runs:
        print(f"{r.name:<26} {r.wall:>8.2f} {r.cpu:>8.2f} {r.max_rss_mb:>8.0f} {r.status:>5}")
    cold = runs[0]
    print()
    for other in (ruff, tf):
        if other is None:
            continue
        label = other.name.split(" ")[0]
        print(f"kvlint cold / {label}: wall {cold.wall / other.wall:.3g}x, CPU {cold.cpu / other.cpu:.3g}x, "
              f"memory {cold.max_rss_mb / other.max_rss_mb:.3g}x"
              + (f" ({label} takes {other.wall / cold.wall:.2g}x kvlint's wall time)" if other.wall > cold.wall else ""))
        if other is ruff and paired is not None:
            print(f"kvlint cold / ruff, run by run (in turns): median {paired.median_ratio:.3g}x, "
                  f"range {min(paired.ratios):.3g}-{max(paired.ratios):.3g}x")
        if warm_run is not None:
            print(f"kvlint warm / {label}: wall {warm_run.wall / other.wall:.3g}x")
    if serial:
        print(f"kvlint cold: {runs[1].wall / cold.wall:.2f}x faster than --jobs 1")
    if warm_run is not None:
        print(f"kvlint warm re-check {warm_run.wall:.2f} s wall, {warm_run.cpu:.2f} s CPU")
    print(_load(), "\n")
    return runs, paired


def targets(eco: str, args, env) -> int:
    """The speed targets (docs/design.md, "Performance"), measured in one run."""
    cri, va, sgl = (os.path.join(eco, d) for d in ("hicann+cann-recipes-infer", "vllm-project+vllm-ascend",
                                                     "Ascend+sglang"))
    missing = [p for p in (cri, va, sgl) if not os.path.isdir(p)]
    if missing:
        print(f"not found: {', '.join(missing)} (benchmarks/ecosystem.py extracts the code bases)")
        return 2
    if not args.ruff:
        print("--targets needs ruff (--ruff PATH)")
        return 2
    first, paired1 = bench([cri, va], args, env, torchfix=False)
    second, paired2 = bench([sgl], args, env, serial=False, warm=False, torchfix=False)
    sys.path.insert(0, HERE)
    import recheck

    n, total = recheck.recheck(va, "vllm_ascend/device/device_op.py", quiet=True)
    by = {r.name: r for r in first}
    ruff1, ruff2 = by["ruff (default rules)"], second[-1]
    rows = [
        ("cri+va cold / ruff (wall)", f"{first[0].wall / ruff1.wall:.2f}x", "<= 2x", first[0].wall <= 2 * ruff1.wall),
        ("cri+va cold / ruff (run by run)", f"median {paired1.median_ratio:.2f}x", "", None),
        ("cri+va cold / ruff (CPU)", f"{first[0].cpu / ruff1.cpu:.2f}x", "", None),
        ("sglang cold / ruff (wall)", f"{second[0].wall / ruff2.wall:.2f}x", "< 1x", second[0].wall < ruff2.wall),
        ("sglang cold / ruff (run by run)", f"median {paired2.median_ratio:.2f}x", "", None),
        ("sglang cold / ruff (CPU)", f"{second[0].cpu / ruff2.cpu:.2f}x", "", None),
        ("cri+va warm re-check", f"{by['kvlint warm (cache)'].wall:.2f} s", "< 0.3 s",
         by["kvlint warm (cache)"].wall < 0.3),
        ("edit device_op.py: re-checked", f"{n} of {total} files", "its dependents", None),
    ]
    print(f"{'target':<32} {'measured':>16} {'goal':>16}  met")
    for name, measured, goal, met in rows:
        print(f"{name:<32} {measured:>16} {goal:>16}  {'' if met is None else ('yes' if met else 'NO')}")
    print(_load())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="corpus folders")
    parser.add_argument("--targets", metavar="ECO", help="measure the speed targets on the ecosystem folders under ECO")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff executable (default: on PATH)")
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="torchfix executable (default: on PATH)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs kvlint")
    args = parser.parse_args(argv)
    if not args.paths and not args.targets:
        parser.error("give corpus folders, or --targets ECO")

    env = kvlint_env(REPO)
    compile_kvlint(args.python, REPO, env)
    if args.targets:
        return targets(args.targets, args, env)
    bench(args.paths, args, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())

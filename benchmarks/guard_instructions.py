"""Instructions per guarded call, by part of the guard (a script, not a test).

    python benchmarks/guard_instructions.py [--calls N]

Wall-clock figures on a shared machine move with the other processes' load; instruction counts
do not. This script runs itself under valgrind's callgrind (`apt-get install valgrind`) and
counts the instructions (Ir) of N calls of FA's `_get_max_workspace` twin (the dispatch-only
baseline of benchmarks/runtime_overhead.py) in phases: unguarded, guarded, then with the
per-call contracts a cache hit runs taken off one by one, without running contracts (the
verdict lookup and the view go), and without the entry (the call pattern's entry function,
kvlint.runtime.guard._entry_function: the key, the binding and the `Call` go; the wrapper and
finding the handle stay). Each phase is bracketed by `time.sleep(0)`, where callgrind dumps its counters
(`--dump-before=time_sleep`); the difference between consecutive phases is what the part
taken off costs. Slow (the torch import alone takes about a minute under valgrind).
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = "KVLINT_GUARD_INSTRUCTIONS_CHILD"


def child(calls: int) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import runtime_overhead as bench  # noqa: E402  (installs kvlint.emulate's torch_npu)
    import torch

    import kvlint
    from kvlint.runtime import guard

    fn, _ = bench.cases()["_npu_fused_infer_attention_score_get_max_workspace"]
    labels = []

    def phase(label):
        fn()
        fn()
        time.sleep(0)  # callgrind dumps here: the phase starts
        for _ in range(calls):
            fn()
        time.sleep(0)  # and ends
        labels.append(label)

    phase("unguarded")
    kvlint.patch(mode="raise", checks="meta")
    phase("guarded (meta)")
    spec = torch.ops.npu._npu_fused_infer_attention_score_get_max_workspace._op._spec
    plan = spec.plan
    rest, _ = plan.hit(plan.verdicts.last[1][2])  # what this call's cache hit runs
    for i in range(len(rest) - 1, -1, -1):
        plan.hits = {idle: (rest[:i], attach) for idle, (_, attach) in plan.hits.items()}
        phase(f"  without {rest[i].__name__}")
    guard.run = lambda plan, call, crashed, key: None
    phase("  without running contracts (cache lookup, view)")
    spec.entry = lambda args, kwargs, full: None
    type(spec).enter = lambda self, args, kwargs, full: None
    phase("  without the entry (key, binding, Call): wrapper")
    print("\n".join(labels))


def totals(prefix: str) -> list:
    def number(path):
        return int(path.rsplit(".", 1)[1])
    values = []
    for path in sorted(glob.glob(prefix + ".*"), key=number):
        with open(path) as handle:
            for line in handle:
                if line.startswith(("summary:", "totals:")):
                    values.append(int(line.split()[1]))
                    break
    return values


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per phase (default 300)")
    options = parser.parse_args(argv)
    if os.environ.get(CHILD):
        child(options.calls)
        return
    if not shutil.which("valgrind"):
        sys.exit("guard_instructions.py needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, **{CHILD: "1"})
        result = subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=time_sleep",
                                 f"--callgrind-out-file={prefix}", sys.executable, __file__,
                                 "--calls", str(options.calls)], env=env, capture_output=True, text=True)
        if result.returncode:
            sys.exit(result.stderr[-2000:])
        labels = result.stdout.strip().splitlines()
        dumps = totals(prefix)
    per_call = [dumps[i] / options.calls for i in range(1, 2 * len(labels), 2)]  # odd dumps: the phases
    base = per_call[0]
    print(f"instructions (Ir) per call, {options.calls} calls per phase; torch {__import__('torch').__version__}")
    previous = None
    for label, value in zip(labels, per_call):
        step = "" if previous is None else f"  ({value - previous:+,.0f})"
        print(f"{label:52} {value:10,.0f}  added {value - base:+10,.0f}{step}")
        previous = value


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Python examples of an operator documentation, as files the ecosystem check can read.

    python benchmarks/doc_examples.py MIRROR COMMIT OUT
    python benchmarks/doc_examples.py --run OUT        # the examples on CPU, emulated and guarded

MIRROR: a git directory (or a checkout) of the documentation's repository; COMMIT: the pinned
commit; OUT: the folder to write into (created, emptied of earlier examples first). Every
Markdown file under `docs/` at COMMIT is read, and each of its fenced code blocks (```python,
```py or an untagged fence) that calls `torch_npu.` becomes one file,
`<markdown file stem>__<block number>.py`. An interactive block (`>>> ` / `... ` prompts)
keeps only its prompted lines, without the prompts. A block that does not compile is left out
(pseudo-code, a signature written as a block, output pasted in).

These are the operator team's own calls of their operators, which the operators accept: the
ecosystem check runs kvlint on them like on any code base (benchmarks/ecosystem.py, the
snapshots with `examples="docs"`), and every finding on them is triaged like the others.

`--run OUT` runs each example that calls an operator of kvlint's catalog on the CPU, under
`kvlint.emulate` with the guard on (`kvlint.patch()`), each in its own interpreter, after
moving it off the NPU (`.npu()` dropped, `device="npu"` -> `"cpu"`, `.to("npu")` dropped), and
prints what became of it: ran, rejected by the guard (a ContractError: the finding), not
emulated (NotImplementedError: quantization, prefixes...), or needing the NPU runtime (graph
capture, `torch.npu`, torch_npu's testing helpers). A rejection is either a doc example that
the operator's tiling checks reject, or a guard contract stricter than the operator: read the
contract's cited check to tell. Needs torch (and numpy for some examples).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.S)
DOCS = "docs/"
REPO = Path(__file__).resolve().parent.parent


def _git(mirror: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, check=True).stdout


def markdown_files(mirror: str, commit: str) -> List[str]:
    names = _git(mirror, "ls-tree", "-r", "--name-only", commit).decode("utf-8", "replace").splitlines()
    return sorted(n for n in names if n.startswith(DOCS) and n.endswith(".md"))


def python_blocks(markdown: str) -> Iterator[Tuple[int, str]]:
    """(block number among the file's fences, code) of each block that calls torch_npu and
    compiles."""
    for number, block in enumerate(FENCE.findall(markdown)):
        if "torch_npu." not in block:
            continue
        if ">>>" in block:
            block = "\n".join(line[4:] for line in block.splitlines() if line.startswith((">>> ", "... ")))
        try:
            compile(block, "<example>", "exec")
        except (SyntaxError, ValueError):
            continue
        yield number, block


def file_name(markdown_path: str, number: int) -> str:
    stem = Path(markdown_path).stem
    return re.sub(r"[^A-Za-z0-9_]+", "_", stem)[:80] + f"__{number}.py"


def extract(mirror: str, commit: str, out: Path) -> int:
    """Write the examples of `commit`'s docs into `out`; the number written."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.py"):
        old.unlink()
    written = 0
    for path in markdown_files(mirror, commit):
        text = _git(mirror, "show", f"{commit}:{path}").decode("utf-8", "replace")
        if "torch_npu." not in text:
            continue
        for number, block in python_blocks(text):
            target = out / file_name(path, number)
            if target.exists():  # two Markdown files of one name in different folders
                target = out / file_name(path.replace("/", "_"), number)
            target.write_text(block, encoding="utf-8")
            written += 1
    return written


OFF_NPU = ((re.compile(r"\.npu\(\)"), ""),
           (re.compile(r"""device\s*=\s*["']npu(?::\d+)?["']"""), 'device="cpu"'),
           (re.compile(r"""\.to\(\s*["']npu(?::\d+)?["']\s*\)"""), ""))
RUNNER = ("import kvlint.emulate\nkvlint.emulate.install()\nimport kvlint\nkvlint.patch()\n"
          "import sys\nexec(compile(sys.stdin.read(), sys.argv[1], 'exec'))")


def off_npu(code: str) -> str:
    for pattern, replacement in OFF_NPU:
        code = pattern.sub(replacement, code)
    return code


def outcome(stderr: str, status: int) -> Tuple[str, str]:
    """(kind, last line of the error) of one example's run."""
    if status == 0:
        return "ran", ""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    error = next((line for line in reversed(lines) if "Error" in line.split(":")[0]), lines[-1] if lines else "")
    if "ContractError" in error or "EmulatedOperatorError" in error:
        return "rejected by the guard", error
    if "NotImplementedError" in error:
        return "not emulated", error
    return "needs the NPU runtime", error


def run_examples(folder: Path, python: str = sys.executable) -> List[Tuple[str, str, str]]:
    """(file, kind, error) of each example in `folder` that calls a catalog operator, run with
    this checkout's kvlint (as ecosystem.py runs it)."""
    sys.path.insert(0, str(REPO))
    from kvlint.catalog import load_catalog

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    names = load_catalog().operator_names()
    calls = re.compile(r"\b(?:%s)\s*\(" % "|".join(sorted(map(re.escape, names), key=len, reverse=True)))
    results = []
    for path in sorted(folder.glob("*.py")):
        code = path.read_text(encoding="utf-8")
        if not calls.search(code):
            continue
        try:
            proc = subprocess.run([python, "-c", RUNNER, path.name], input=off_npu(code), capture_output=True,
                                  text=True, timeout=300, env=env)
            kind, error = outcome(proc.stderr, proc.returncode)
        except subprocess.TimeoutExpired:
            kind, error = "timed out", ""
        results.append((path.name, kind, error))
    return results


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--run":
        results = run_examples(Path(argv[1]))
        for name, kind, error in results:
            print(f"{name}: {kind}" + (f": {error}" if error else ""))
        counts = Counter(kind for _, kind, _ in results)
        print(", ".join(f"{n} {kind}" for kind, n in counts.most_common()))
        return 1 if counts.get("rejected by the guard") else 0
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    mirror, commit, out = argv
    try:
        n = extract(mirror, commit, Path(out))
    except subprocess.CalledProcessError as exc:
        print(f"doc_examples: git failed: {exc.stderr.decode('utf-8', 'replace').strip()}", file=sys.stderr)
        return 2
    print(f"wrote {n} examples to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

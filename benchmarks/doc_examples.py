#!/usr/bin/env python3
"""The Python examples of an operator documentation, as files the ecosystem check can read.

    python benchmarks/doc_examples.py MIRROR COMMIT OUT

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
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.S)
DOCS = "docs/"


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
            (out / file_name(path, number)).write_text(block, encoding="utf-8")
            written += 1
    return written


def main(argv: Sequence[str]) -> int:
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
